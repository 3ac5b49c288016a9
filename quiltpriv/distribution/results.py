"""What a distribution privacy mechanism returns: its noise plan, its release and its checks.

[CO23]. :class:`DistributionPrivacyResult` is the noise plan of every mechanism of
:mod:`quiltpriv.distribution.distribution_privacy` (Laplace per coordinate or along one
direction, Gaussian with a covariance, or none), with the guarantee it carries, the expected
errors of Table 2 (:func:`expected_l2_norm_gaussian`) and the release through the one noise
module; :class:`MechanismCheck` is the outcome of a privacy condition that releases nothing
(Theorem 4.4, Corollary A.1). Every scale is rounded up (:mod:`quiltpriv.mechanisms.calibration`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Literal, cast

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate, special

from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms.calibration import SAFETY_RTOL, mul_up, round_up, sqrt_up
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_covariance, check_records, check_vector

if TYPE_CHECKING:
    import os
    import random

    from quiltpriv.mechanisms.noise import Seed
    from quiltpriv.mechanisms.protocol import VectorRelease

__all__ = ["DistributionPrivacyResult", "MechanismCheck", "expected_l2_norm_gaussian"]

_SAFETY = SAFETY_RTOL


@dataclass(frozen=True)
class DistributionPrivacyResult(JSONResult):
    """Noise plan of a distribution privacy mechanism.

    Attributes
    ----------
    mechanism
        Name as in the paper ("ExpM(G)", "EigM(G)", "DauM(G)", ...).
    noise
        "laplace" (independent Lap(``laplace_scale``) per coordinate), "laplace-direction"
        (one Lap(``laplace_scale``) along ``direction``), "gaussian" (N(0, ``covariance``)) or
        "none".
    dimension
        m, the length of F.
    epsilon, delta
        The guarantee: (epsilon, delta)-distribution privacy w.r.t. Psi, under ``assumptions``.
    laplace_scale
        Laplace scale (0 for Gaussian/no noise).
    covariance
        Gaussian noise covariance, an m x m array (zeros for Laplace/no noise).
    direction
        Unit vector for directional mechanisms, else None.
    sensitivity
        The distance the noise is calibrated to (Delta_W, W, Delta_E,1, Delta_E,2, ...).
    assumptions
        What the guarantee relies on that could not be checked from the inputs.
    notes
        What was checked, bounds used, calibration.
    release_sigma
        Gaussian plans whose covariance relies on F's own variance (EigM(G), DauM(G)): the
        isotropic sigma that :meth:`release` adds, enough by the translation coupling alone
        (``sensitivity / r``); ``None`` when the covariance's largest variance is enough
        (ExpM(G), DirM(G), GroupDP(G)).
    """

    mechanism: str
    noise: str
    dimension: int
    epsilon: float
    delta: float
    laplace_scale: float = 0.0
    covariance: np.ndarray | None = None
    direction: np.ndarray | None = None
    sensitivity: float = 0.0
    assumptions: tuple[str, ...] = field(default=())
    notes: tuple[str, ...] = field(default=())
    release_sigma: float | None = None

    @property
    def guarantee(self) -> str:
        return (f"({_fmt(self.epsilon)}, {_fmt(self.delta)})-distribution privacy w.r.t. Psi "
                f"({self.mechanism})")

    def expected_l2_error(self) -> float:
        """E ||noise||_2 (the L2 error of Table 2), exact for Gaussian noise (1-d integral).

        For Laplace noise along a direction it is the scale b (E|Y| = b). For independent
        Laplace noise in m > 1 coordinates there is no closed form: it raises (simulate, or
        use :meth:`expected_l1_error`).
        """
        if self.noise == "none":
            return 0.0
        if self.noise == "gaussian":
            return expected_l2_norm_gaussian(cast(np.ndarray, self.covariance))
        if self.noise == "laplace-direction":
            return self.laplace_scale
        if self.dimension == 1:
            return self.laplace_scale
        raise ParameterError("no closed form for E||.||_2 of i.i.d. Laplace noise in m > 1 "
                             "dimensions; use expected_l1_error or simulate")

    def expected_l1_error(self) -> float:
        """E ||noise||_1 (exact for Laplace noise: m * b; Gaussian: sum sqrt(2/pi) sd_k)."""
        if self.noise == "none":
            return 0.0
        if self.noise == "laplace":
            return self.dimension * self.laplace_scale
        if self.noise == "laplace-direction":
            return self.laplace_scale * float(np.abs(cast(np.ndarray, self.direction)).sum())
        cov = cast(np.ndarray, self.covariance)  # set for Gaussian noise
        return float(np.sqrt(2 / np.pi) * np.sqrt(np.clip(np.diag(cov), 0, None)).sum())

    def sample_noise(self, size: int | None = None, *, seed: Seed = None) -> np.ndarray:
        """Noise vectors of the plan, for simulations (utility, Table 2); **not a release**.

        Exact discrete samples from :mod:`quiltpriv.mechanisms.noise` on a fine grid, then
        scaled (Gaussian: ``sum_k sqrt(lambda_k) Z_k u_k`` over the covariance's
        eigen-decomposition) in floating point. Adding such a vector to F in floats would leak
        F's low bits (Mironov 2012): release with :meth:`release`. Secure randomness by
        default; a seed (int or random.Random) is for experiments only. Shape (m,) or
        (size, m).
        """
        from quiltpriv.mechanisms import noise

        rng = noise.make_rng(seed)
        n = 1 if size is None else check_records(size, "size")
        m = self.dimension
        if self.noise == "none":
            out = np.zeros((n, m))
        elif self.noise == "laplace":
            out = np.asarray(noise.laplace(self.laplace_scale, (n, m), seed=rng), dtype=float)
        elif self.noise == "laplace-direction":
            y = np.asarray(noise.laplace(self.laplace_scale, n, seed=rng), dtype=float)
            out = y[:, None] * cast(np.ndarray, self.direction)[None, :]
        else:
            lam, u = np.linalg.eigh(cast(np.ndarray, self.covariance))
            lam = np.clip(lam, 0, None)
            keep = lam > 0
            z = np.zeros((n, m))
            if keep.any():
                std = np.asarray(noise.gaussian(1.0, (n, int(keep.sum())), seed=rng),
                                 dtype=float)
                z[:, keep] = std * np.sqrt(lam[keep])
            out = z @ u.T
        return out[0] if size is None else out

    def release(self, value: ArrayLike, *, seed: Seed = None,
                ledger: str | os.PathLike[str] | None = None, budget: float | None = None,
                allow_unproved: bool = False) -> VectorRelease:
        """F(Data) + noise, released exactly: at least as private as the plan promises.

        Returns a :class:`~quiltpriv.mechanisms.protocol.VectorRelease` of mechanism
        ``"distribution privacy"`` (it reads as the array of released numbers, which this
        method returned before), made by the one release flow
        (:func:`quiltpriv.mechanisms.protocol.release_value`; ``ledger`` and ``budget`` as
        there; the calibration records the scale and sensitivity actually drawn against).

        Every coordinate goes through :mod:`quiltpriv.mechanisms.noise`: snapped to one
        power-of-two grid ``g``, plus ``g K`` with ``K`` exact discrete noise, the exact sum
        rounded to a float once (post-processing). No float touches F before the exact sum.
        The snapping and the noise's shape are paid for as follows (docs/noise.md has the
        proofs):

        * ``"laplace"``: i.i.d. discrete Laplace of scale ``laplace_scale`` charged for the
          L1 shift ``sensitivity + m g`` (:func:`~quiltpriv.mechanisms.noise.laplace_release`
          with ``dimension=m``): ``sensitivity / laplace_scale``-private as promised.
        * ``"laplace-direction"`` (DirM(L)) and ``"laplace-directions"`` (DirM(L) with
          several directions, :mod:`~quiltpriv.distribution.vector_mechanisms`): the mean
          differences have L2 norm at most ``Delta = sensitivity`` (along ``v``: ``|alpha|``;
          in an orthonormal basis ``V``: ``||c||_2 <= ||c||_1``), so their L1 norm is at most
          ``sqrt(m) Delta``; i.i.d. discrete Laplace per coordinate with L1 sensitivity
          ``Delta' >= sqrt(m) Delta`` and scale ``b' = b Delta'/Delta`` (both rounded up)
          keeps ``Delta'/b' <= Delta/b = eps``. Noise in every direction, not only along
          ``v``: more noise than the paper's, never less.
        * ``"gaussian"``: i.i.d. discrete Gaussian with an isotropic ``sigma`` charged for the
          L2 shift ``sensitivity + sqrt(m) g``
          (:func:`~quiltpriv.mechanisms.noise.gaussian_release_vector`). ``sigma`` is
          ``release_sigma`` when set (EigM(G), DauM(G): their covariances subtract F's own
          variance, an argument that needs F + noise to be exactly Gaussian, which a snapped
          F plus discrete noise is not), else the square root of the covariance's largest
          eigenvalue, rounded up (ExpM(G), DirM(G), GroupDP(G): ``sigma = sensitivity / r``,
          and ``sigma^2 I`` dominates the covariance). The shift over ``sigma`` is then at
          most ``r``, the Mahalanobis budget of (epsilon, delta).

        Secure randomness by default; a seed is for experiments only. Raises ParameterError
        (nothing drawn) for a scale that cannot be drawn.
        """
        from quiltpriv.mechanisms import noise
        from quiltpriv.mechanisms.protocol import Calibration, Guarantee, release_value
        from quiltpriv.mechanisms.release_flow import Drawn, drawn_values
        from quiltpriv.utils.format import fmt_number

        x = check_vector(value, "value", self.dimension)
        kind: Literal["laplace", "gaussian", "none"]
        if self.noise == "none":
            kind, scale, sens = "none", 0.0, self.sensitivity
        elif self.noise == "laplace":
            kind, scale, sens = "laplace", self.laplace_scale, self.sensitivity
        elif self.noise in ("laplace-direction", "laplace-directions"):
            kind, (scale, sens) = "laplace", self._direction_l1_plan()
        elif self.noise == "gaussian":
            kind, scale, sens = "gaussian", self.gaussian_release_sigma(), self.sensitivity
        else:
            raise ParameterError(f"{self.mechanism}: unknown noise {self.noise!r}; nothing "
                                 "released")

        def draw(rng: random.Random) -> Drawn:
            if kind == "none":
                return Drawn(tuple(float(v) for v in x), 0.0, 0.0, "", True)
            if kind == "gaussian":
                return drawn_values(noise.gaussian_release_vector(x, scale, sens, seed=rng))
            return drawn_values(noise.laplace_release_vector(x, scale, sens, seed=rng))

        cal = Calibration(kind, scale, sens,
                          f"[CO23] {self.mechanism}: {self.noise} noise of scale "
                          f"{fmt_number(scale, rounding='up')} for the distance "
                          f"{fmt_number(sens, rounding='up')} in every coordinate")
        g = Guarantee("distribution privacy", self.epsilon, self.delta, tuple(self.assumptions))
        out = release_value(x, mechanism="distribution privacy", guarantee=g, calibration=cal,
                            details=self.to_dict(), seed=seed, ledger=ledger, budget=budget,
                            allow_unproved=allow_unproved, draw=draw)
        return cast("VectorRelease", out)

    def _direction_l1_plan(self) -> tuple[float, float]:
        """(b', Delta') with Delta' >= sqrt(m) Delta and Delta'/b' <= Delta/b, floats."""
        from quiltpriv.mechanisms.noise import sqrt_upper

        b, d = Fraction(self.laplace_scale), Fraction(self.sensitivity)
        if b == 0 or d == 0:
            return self.laplace_scale, 0.0
        sens = _float_up(d * sqrt_upper(self.dimension))
        return _float_up(b * Fraction(sens) / d), sens

    def gaussian_release_sigma(self) -> float:
        """The isotropic sigma :meth:`release` adds for a Gaussian plan (see there)."""
        if self.release_sigma is not None:
            return self.release_sigma
        cov = cast(np.ndarray, self.covariance)
        top = max(0.0, float(np.linalg.eigvalsh(cov)[-1]))
        return mul_up(sqrt_up(top), 1 + _SAFETY)  # eigvalsh: relative 1e-15 errors


def _float_up(x: Fraction) -> float:
    """The least float >= x (x finite, >= 0); ParameterError beyond the float range."""
    f = round_up(x)  # the one directed rounding
    if math.isinf(f):
        raise ParameterError("a release scale is beyond the float range")
    return f


@dataclass(frozen=True)
class MechanismCheck(JSONResult):
    """Outcome of the privacy condition of Theorem 4.4 / Corollary A.1 (no mechanism released).

    ``holds`` says whether (epsilon, delta)-distribution privacy follows; ``worst`` is the
    largest Mahalanobis term (mu_i - mu_j)^T (Sigma_i + S)^-1 (mu_i - mu_j) over Psi,
    ``bound`` the allowed value r^2 (= (eps/c_G)^2 classically), ``worst_pair`` where it is.
    """

    holds: bool
    worst: float
    bound: float
    worst_pair: tuple[Hashable, Hashable]
    epsilon: float
    delta: float
    notes: tuple[str, ...] = field(default=())


def expected_l2_norm_gaussian(covariance: ArrayLike) -> float:
    """E ||Z||_2 for Z ~ N(0, covariance): the L2 error reported in Table 2.

    Isotropic sigma^2 I_m: sigma sqrt(2) Gamma((m+1)/2) / Gamma(m/2) (chi distribution).
    General: E sqrt(Q) = (1 / (2 sqrt(pi))) int_0^inf (1 - prod_k (1 + 2 t l_k)^(-1/2))
    t^(-3/2) dt over the eigenvalues l_k (Laplace-transform identity), by quadrature.
    """
    c = check_covariance(covariance, "covariance")
    lam = np.clip(np.linalg.eigvalsh((c + c.T) / 2), 0, None)
    lam = lam[lam > 0]
    if lam.size == 0:
        return 0.0
    if np.allclose(lam, lam[0], rtol=1e-12):
        m = lam.size
        return float(math.sqrt(lam[0]) * math.sqrt(2)
                     * math.exp(special.gammaln((m + 1) / 2) - special.gammaln(m / 2)))
    s = float(lam.max())
    lam_n = lam / s  # scale out the largest variance for a well-conditioned integral

    def integrand(t: float) -> float:
        return (1.0 - float(np.prod((1.0 + 2.0 * t * lam_n) ** -0.5))) * t ** -1.5

    v1, _ = integrate.quad(integrand, 0, 1, limit=200)
    v2, _ = integrate.quad(integrand, 1, np.inf, limit=200)
    return float(math.sqrt(s) * (v1 + v2) / (2 * math.sqrt(math.pi)))
