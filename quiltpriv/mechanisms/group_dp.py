"""Group differential privacy baselines: every record of the dataset may change.

Attribute privacy protects a property of a whole column, which any of the n records may carry.
The naive way to get it from differential privacy is group privacy over all n records:
calibrate the noise to the largest change of F when *every* record changes. For an additive
query with per-record sensitivity Delta that change is at most n * Delta, giving

* Laplace: scale n * Delta / eps -- (eps, 0)-DP for groups of size n, hence any property of the
  dataset ([ZOC22, Ex. 2]: Lap(4/eps) for a count over 4 records; group privacy,
  [DR14, Thm. 2.2]);
* Gaussian: sigma = c_G * n * Delta / eps with c_G = sqrt(2 ln(1.25/delta)) (classical; for
  eps >= 1 only once the exact profile [BW18, Thm. 8] confirms it), or the analytic
  calibration -- (eps, delta) for groups of size n.

These are the baselines the Wasserstein and Markov quilt mechanisms are compared against, and
the GroupDP(L)/GroupDP(G) rows of [CO23, Table 2]
(:func:`quiltpriv.distribution.distribution_privacy.group_dp_gaussian` is this module's
:func:`group_gaussian` with an m-dimensional result). Scales come from
:mod:`quiltpriv.mechanisms.calibration`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from quiltpriv.mechanisms.calibration import (
    check_finite_noise,
    gaussian_budget,
    laplace_scale,
    mul_up,
)
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_delta, check_epsilon, check_positive, check_records

if TYPE_CHECKING:
    import os

    from quiltpriv.mechanisms.noise import Seed
    from quiltpriv.mechanisms.protocol import ReleaseRecord

__all__ = ["GroupPrivacyResult", "group_gaussian", "group_laplace"]


@dataclass(frozen=True)
class GroupPrivacyResult(JSONResult):
    """Noise plan of a group-privacy baseline.

    Attributes
    ----------
    mechanism
        "laplace" or "gaussian".
    scale
        Laplace scale b, or Gaussian standard deviation sigma.
    group_sensitivity
        n * Delta, the largest change of F when all n records change.
    epsilon, delta
        The guarantee ((eps, 0) for Laplace).
    notes
    """

    mechanism: str
    scale: float
    group_sensitivity: float
    epsilon: float
    delta: float
    notes: tuple[str, ...] = field(default=())

    def release(self, value: float, *, seed: Seed = None,
                ledger: str | os.PathLike[str] | None = None, budget: float | None = None,
                allow_unproved: bool = False) -> ReleaseRecord:
        """F(X) plus exact discrete Laplace/Gaussian noise from
        :mod:`quiltpriv.mechanisms.noise`, as a
        :class:`~quiltpriv.mechanisms.protocol.ReleaseRecord`.

        The low-level form: noise for a value you computed, with no data checks
        (:func:`quiltpriv.mechanisms.protocol.release_value`: the one release flow, ``ledger``
        and ``budget`` as there; the record's ``value`` is the noisy number, as the
        ``NoisyValue`` returned before);
        :func:`quiltpriv.mechanisms.registry.group_dp_mechanism` gives ``release(data)``.

        Examples
        --------
        >>> import warnings
        >>> from quiltpriv.mechanisms.group_dp import group_laplace
        >>> res = group_laplace(1.0, 10, 1.0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # seeded noise: for examples only
        ...     rec = res.release(4.0, seed=3)
        >>> rec.mechanism, rec.calibration.scale, rec.seed, rec.noise_scale_used >= res.scale
        ('group DP Laplace', 10.0, 3, True)
        """
        from quiltpriv.mechanisms.protocol import Calibration, Guarantee, release_value
        from quiltpriv.utils.format import fmt_number

        laplace = self.mechanism == "laplace"
        cal = Calibration(
            "laplace" if laplace else "gaussian", self.scale, self.group_sensitivity,
            f"[ZOC22, Ex. 2]: group privacy over all n records, "
            f"{'b' if laplace else 'sigma'} = {fmt_number(self.scale, rounding='up')} for "
            f"n Delta = {fmt_number(self.group_sensitivity, rounding='up')}")
        g = Guarantee("differential privacy (group)", self.epsilon, self.delta,
                      ("F changes by at most n Delta when every record changes",))
        return release_value(value, mechanism="group DP Laplace" if laplace
                             else "group DP Gaussian", guarantee=g, calibration=cal,
                             details=self.to_dict(), seed=seed, ledger=ledger, budget=budget,
                             allow_unproved=allow_unproved)


def _group_sensitivity(sensitivity: float, n_records: int) -> float:
    d = check_positive(sensitivity, "sensitivity", allow_zero=True)
    n = check_records(n_records, "records")
    return check_finite_noise(mul_up(d, n), "the group sensitivity n Delta")


@renamed_keywords(n_records="records")
def group_laplace(sensitivity: float, records: int, epsilon: float) -> GroupPrivacyResult:
    """Laplace mechanism with group privacy over all n records: scale = n * Delta / eps.

    Guarantee: (eps, 0)-DP for groups of n records, i.e. for any change of the whole dataset,
    hence (eps, 0) dataset and distributional attribute privacy for every secret, without any
    assumption on Theta. Assumes F changes by at most ``sensitivity`` per changed record (true
    for sums and counts; for F with known global range pass range / n).
    """
    eps = check_epsilon(epsilon)
    gs = _group_sensitivity(sensitivity, records)
    scale = laplace_scale(gs, eps)
    return GroupPrivacyResult("laplace", scale, gs, eps, 0.0,
                              ("group privacy over all records: Lap(n Delta / eps)",))


@renamed_keywords(n_records="records")
def group_gaussian(
    sensitivity: float, records: int, epsilon: float, delta: float,
    *, calibration: str = "classical",
) -> GroupPrivacyResult:
    """Gaussian mechanism with group privacy over all n records: sigma = c_G n Delta / eps.

    c_G = sqrt(2 ln(1.25/delta)) with the classical calibration [DR14, Thm. A.1] (for
    eps >= 1 only when the exact profile [BW18, Thm. 8] confirms it, else ParameterError), or
    the analytic calibration [BW18] for any eps; both by
    :func:`quiltpriv.mechanisms.calibration.gaussian_budget`. ``sensitivity`` is the per-record
    L2 sensitivity. Guarantee: (eps, delta) for any change of the whole dataset.
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    gs = _group_sensitivity(sensitivity, records)
    budget = gaussian_budget(eps, dl, calibration)
    sigma = budget.sigma(gs)
    return GroupPrivacyResult("gaussian", sigma, gs, eps, dl,
                              (f"group privacy over all records, {budget.calibration} "
                               f"calibration", budget.note))
