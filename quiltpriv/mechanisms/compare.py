"""Side by side: the noise each mechanism needs for one model, query and epsilon.

For a hyperparameter network (Theta), a query ``F`` and sensitive attributes ``C``:

* **APMQM** ([ZOC22, Alg. 3, Thm. 4]): Laplace, least scale over all Markov quilts;
  (eps, 0)-distributional attribute privacy.
* **Group DP Laplace** ([DR14, Thm. 2.2]): every record may change, scale ``Delta_all F / eps``
  (``n Delta / eps`` per-record); (eps, 0) for any secret, no assumption on Theta.
* **Wasserstein Mechanism** ([ZOC22, Alg. 4, Thm. 5]): Laplace with scale ``W / eps`` from the
  conditional laws of ``F`` (:mod:`quiltpriv.queries.network_laws`): exact rationals for small
  ``n``, certified float64 laws in ``O(n)`` above (``W`` then a proven upper bound, exact when its
  bracket closes); computable for a count over one Bernoulli attribute without a predicate, or
  a count whose predicate is linked to the model's record categories by a declared ``domain``
  or ``record_states`` (otherwise the row says what to declare; a predicate is never
  reinterpreted).
* **APGM** ([ZOC22, Alg. 1, Thm. 1]) is listed with the reason it does not apply: it needs
  ``F | secret`` Gaussian with a secret-independent variance (Gaussian record models,
  :func:`quiltpriv.mechanisms.apgm.apgm_gaussian_columns`), which a network of Bernoulli
  parameters does not give.
* **The original Markov Quilt Mechanism** ([ZOC22, Alg. 5]) protects individual values of a network
  over record values, not hyperparameters: listed as not applicable, with a pointer to
  :func:`quiltpriv.mechanisms.mqm.markov_quilt_mechanism`.

Standard deviations: ``sqrt(2) b`` for Laplace scale ``b``, ``sigma`` for Gaussian.

The applicable rows are built through the mechanism protocol
(:mod:`quiltpriv.mechanisms.registry`): each carries the registry ``name``, the mechanism's
:class:`~quiltpriv.mechanisms.protocol.Guarantee` and
:class:`~quiltpriv.mechanisms.protocol.Calibration`, and ``quiltpriv release --mechanism NAME``
releases exactly the noise of that row (the recommended row's name is :attr:`Comparison.best`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from quiltpriv.errors import ModelError, QueryError
from quiltpriv.inference.influence import InfluenceTooExpensive, fmt_influence
from quiltpriv.mechanisms.apmqm import was_interrupted
from quiltpriv.mechanisms.protocol import Calibration, Guarantee, Mechanism
from quiltpriv.mechanisms.registry import (
    REGISTRY,
    MechanismEntry,
    apmqm_mechanism,
    group_dp_mechanism,
    network_wasserstein_mechanism,
)
from quiltpriv.model.network import Theta, as_theta
from quiltpriv.queries.law_bounds import Budget, BudgetExceeded
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.format import text_table
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_epsilon, check_positive

__all__ = ["DEFAULT_TIME_LIMIT", "Comparison", "MechanismRow", "compare"]

#: Default ``--time-limit`` of ``quiltpriv compare`` and ``quiltpriv audit``, in seconds.
DEFAULT_TIME_LIMIT = 60.0


@dataclass(frozen=True)
class MechanismRow(JSONResult):
    """One mechanism's noise for the compared release, or why it does not apply.

    Attributes
    ----------
    mechanism : str
    applicable : bool
    noise : str or None
        "Laplace" or "Gaussian".
    scale : float or None
        Laplace scale ``b`` (or Gaussian sigma).
    std : float or None
        Standard deviation of the noise.
    guarantee : str
        The privacy the scale buys (empty when not applicable).
    detail : str
        How the scale was obtained, or the reason the mechanism does not apply.
    name : str or None
        The mechanism's name in :data:`quiltpriv.mechanisms.registry.MECHANISMS`
        (``quiltpriv release --mechanism NAME``); None when it does not apply here.
    privacy : Guarantee or None
        The mechanism's guarantee, through the protocol.
    calibration : Calibration or None
        The mechanism's calibration (scale, sensitivity, why), through the protocol.
    """

    mechanism: str
    applicable: bool
    noise: str | None
    scale: float | None
    std: float | None
    guarantee: str
    detail: str
    name: str | None = None
    privacy: Guarantee | None = None
    calibration: Calibration | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "applicable": self.applicable, "noise": self.noise,
                "scale": self.scale, "std": self.std, "guarantee": self.guarantee,
                "detail": self.detail, "name": self.name,
                "privacy": None if self.privacy is None else self.privacy.to_dict(),
                "calibration": None if self.calibration is None else self.calibration.to_dict()}


@dataclass(frozen=True)
class Comparison:
    """All mechanisms side by side for one model, query and epsilon."""

    epsilon: float
    query: dict[str, Any]
    sensitive: tuple[str, ...]
    rows: tuple[MechanismRow, ...]
    notes: tuple[str, ...] = field(default=())

    def __getitem__(self, mechanism: str) -> MechanismRow:
        for r in self.rows:
            if r.mechanism == mechanism:
                return r
        raise KeyError(mechanism)

    @property
    def best(self) -> MechanismRow | None:
        """The applicable row with the least standard deviation (first on ties)."""
        ok = [r for r in self.rows if r.applicable and r.std is not None]
        return min(ok, key=lambda r: cast(float, r.std)) if ok else None

    def to_dict(self) -> dict[str, Any]:
        b = self.best
        return {"epsilon": self.epsilon, "query": self.query, "sensitive": list(self.sensitive),
                "rows": [r.to_dict() for r in self.rows], "notes": list(self.notes),
                "best": None if b is None else b.name}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def explain(self) -> str:
        header = ("mechanism", "noise", "scale", "std", "guarantee")
        rows = [(r.mechanism, r.noise or "-", _fmt(r.scale, rounding="up"),
                 _fmt(r.std, rounding="up"), r.guarantee if r.applicable else "not applicable")
                for r in self.rows]
        lines = [f"epsilon = {_fmt(self.epsilon)}; sensitive: {', '.join(self.sensitive)}; "
                 f"query: {self.query.get('kind')} over "
                 f"{', '.join(self.query.get('attributes', [self.query.get('attribute', '')]))}",
                 *text_table(header, rows)]
        lines.append("")
        for r in self.rows:
            lines.append(f"{r.mechanism}: {r.detail}")
        b = self.best
        if b is not None:
            lines.append(f"least noise: {b.mechanism} (std {_fmt(b.std, rounding='up')}); release "
                         "it with "
                         f"'quiltpriv release --mechanism {b.name}' and the same options")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()

    def _repr_html_(self) -> str:
        from quiltpriv.reporting.notebook import comparison_html  # a presentation hook

        return comparison_html(self)


def _left(budget: Budget) -> float | None:
    """Seconds left of the comparison's time limit (at least a millisecond), or None."""
    left = budget.remaining()
    return None if left is None else max(left, 1e-3)


def _row(name: str, m: Mechanism, guarantee: str, detail: str) -> MechanismRow:
    """An applicable row, read off the mechanism's protocol (guarantee and calibration)."""
    cal = m.calibration
    noise = "Laplace" if cal.noise == "laplace" else "Gaussian"
    return MechanismRow(m.name, True, noise, cal.scale, cal.std, guarantee, detail, name=name,
                        privacy=m.guarantee, calibration=cal)


@dataclass(frozen=True)
class _Compared:
    """What every row of one comparison is computed from."""

    theta: Theta
    query: Query
    sensitive: tuple[str, ...]
    epsilon: float
    budget: Budget
    progress: bool


def _apmqm_row(entry: MechanismEntry, c: _Compared) -> MechanismRow:
    apmqm = apmqm_mechanism(c.theta, c.query, c.sensitive, c.epsilon,
                            time_limit=_left(c.budget))
    p = apmqm.plan
    if was_interrupted(p):
        raise KeyboardInterrupt  # Ctrl-C: stop the comparison, do not go on to the others
    detail = "; ".join(f"{sp.sensitive}: Q = {{{', '.join(sp.quilt)}}}, "
                       f"e = {fmt_influence(sp.influence)}, b = {_fmt(sp.scale, rounding='up')}"
                       for sp in p.sensitive)
    detail += " (optimal over all quilts)" if p.optimal else " (optimality NOT proven)"
    return _row(entry.name, apmqm, "(eps, 0)-distributional attribute privacy (Theorem 4)",
                detail)


def _group_row(entry: MechanismEntry, c: _Compared) -> MechanismRow:
    # Per-record sensitivity for record-additive queries; otherwise Delta over every column is
    # already the largest change of F when every record changes (registry.group_sensitivity).
    m = group_dp_mechanism(c.query, c.epsilon)
    cal = m.calibration
    return _row(entry.name, m, "(eps, 0) for any change of the whole dataset",
                f"every record may change: Delta = {_fmt(cal.sensitivity)}, "
                f"scale = Delta / eps = {_fmt(cal.scale, rounding='up')}")


def _wasserstein_row(entry: MechanismEntry, c: _Compared) -> MechanismRow:
    try:
        wm = network_wasserstein_mechanism(c.theta, c.query, c.sensitive, c.epsilon,
                                           time_limit=_left(c.budget), progress=c.progress)
    except BudgetExceeded as exc:
        return MechanismRow(entry.title, False, None, None, None, "", f"not computed: {exc}")
    except (QueryError, ModelError, InfluenceTooExpensive) as exc:
        return MechanismRow(entry.title, False, None, None, None, "",
                            f"not computable here: {exc}")
    r = wm.details or {}
    sensitivity, lower = wm.calibration.sensitivity, r.get("sensitivity_lower", 0.0)
    # The laws of a network's count are exact or certified, never a grid over Theta:
    # the scale always buys Theorem 5 (a bracket that does not close uses its top).
    if r.get("arithmetic") == "exact":
        how = f"W_inf = {_fmt(sensitivity)} from the exact laws of the count"
    elif r.get("exact"):
        how = (f"W_inf = {_fmt(sensitivity)} from certified float64 laws of the count "
               "(error-bounded; the bracket closes, so the value is exact)")
    else:
        how = (f"W_inf <= {_fmt(sensitivity)} (proven bound; the exact value is at least "
               f"{_fmt(lower)}) from certified float64 laws of the count")
    return _row(entry.name, wm, "(eps, 0)-distributional attribute privacy (Theorem 5)",
                f"{how} ({r.get('worst_case')})")


def _protocol_row(entry: MechanismEntry, c: _Compared) -> MechanismRow:
    """A mechanism of the registry with no row of its own here: built by the registry, its row
    read off the protocol (guarantee and calibration)."""
    if entry.build is None:
        return MechanismRow(entry.title, False, None, None, None, "", entry.unavailable)
    m = entry.build(c.theta, c.query, c.sensitive, c.epsilon, time_limit=_left(c.budget),
                    progress=c.progress)
    return _row(entry.name, m, m.guarantee.describe(), m.calibration.why)


#: How the row of a mechanism of the registry is made, by registry name (any other buildable
#: mechanism: :func:`_protocol_row`).
_ROWS: dict[str, Callable[[MechanismEntry, _Compared], MechanismRow]] = {
    "apmqm": _apmqm_row, "group-dp": _group_row, "wasserstein": _wasserstein_row,
    "mqm": lambda entry, c: _mqm_row(c.theta, c.query, c.sensitive, c.epsilon, c.budget),
}


@renamed_keywords(model="theta")
def compare(
    theta: Any, query: Query, sensitive: str | Iterable[str], epsilon: float, *,
    time_limit: float | None = None, progress: bool = False,
) -> Comparison:
    """Noise scale (and standard deviation) of every applicable mechanism, side by side.

    One row per mechanism of the registry (:data:`quiltpriv.mechanisms.registry.REGISTRY`, in
    its order) that a pure epsilon calibrates: the ones a network cannot calibrate say why.

    Parameters
    ----------
    theta : Theta, pgmpy network or sequence of them
        The hyperparameter network(s).
    query : Query
        The query ``F`` (:mod:`quiltpriv.queries.query`).
    sensitive : str or iterable of str
        The sensitive attributes ``C``.
    epsilon : float
    time_limit : float, optional
        Seconds for the whole comparison. The APMQM plan gets what is left when it starts
        (a plan cut short stays private and says it is not proven optimal); the Wasserstein
        row gets the rest, and if its laws are not done by then the row says so instead of
        giving a scale (a maximum over part of the secret pairs could be too small).
    progress : bool
        Progress bar (tqdm) for the Wasserstein laws when they take more than half a second.

    Returns
    -------
    Comparison
        One row per mechanism (APMQM, group DP Laplace, Wasserstein, APGM, original MQM);
        rows that do not apply say why.

    Raises
    ------
    ParameterError, ModelError, QueryError
        Bad epsilon, unknown attributes, a malformed query (as
        :func:`quiltpriv.mechanisms.apmqm.plan`).
    """
    theta = as_theta(theta)
    eps = check_epsilon(epsilon)
    check_query(query)
    sens = theta.check_sensitive(sensitive)
    budget = Budget(None if time_limit is None else check_positive(time_limit, "time_limit"))
    compared = _Compared(theta, query, sens, eps, budget, progress)
    rows = []
    for entry in REGISTRY:
        if entry.build is None:
            rows.append(MechanismRow(entry.title, False, None, None, None, "",
                                     entry.unavailable))
        elif not entry.needs_delta:  # (eps, delta) mechanisms need a delta compare is not given
            rows.append(_ROWS.get(entry.name, _protocol_row)(entry, compared))
    from quiltpriv.releases.records import assumption_warnings

    # What the diagnostics of the records Theta was learned from flagged: the Wasserstein row
    # relies on the record-level assumption they test.
    flagged = tuple(f"WARNING: {w}" for w in assumption_warnings(theta.provenance))
    return Comparison(eps, query.to_dict(), sens, tuple(rows),
                      notes=("standard deviation of Laplace(b) is sqrt(2) b", *flagged))


#: The provenance key and value of a network over record values (a time series built by
#: :func:`quiltpriv.model.time_series.markov_chain` or ``hidden_markov``), on which the
#: original MQM applies.
VALUE_NETWORK = ("network", "record values")


def _mqm_row(theta: Any, query: Query, sens: tuple[str, ...], eps: float,
             budget: Budget) -> MechanismRow:
    """The original MQM ([ZOC22, Alg. 5]): computed on a network over record values (as
    ``release --mechanism mqm`` computes it), else the reason it does not apply."""
    prov = theta.provenance or {}
    if prov.get(VALUE_NETWORK[0]) != VALUE_NETWORK[1]:
        return MechanismRow(
            "original MQM", False, None, None, None, "",
            "does not apply: Algorithm 5 protects individual values Y_i of a network over "
            "record values, not hyperparameters phi_i (a network built by "
            "quiltpriv.markov_chain or quiltpriv.hidden_markov is one; release --mechanism "
            "mqm treats any network as one)")
    from quiltpriv.mechanisms.registry import mqm_mechanism

    m = mqm_mechanism(theta, query, sens, eps, time_limit=_left(budget))
    d = m.details or {}
    return _row("mqm", m, "(eps, 0)-Pufferfish privacy of every protected value "
                "([SWC17], Theorem 4.3)",
                f"{d.get('family')} family, b = L max_i |N(Q_i) & A| / (eps - e(Q_i|Y_i)) "
                f"= {_fmt(m.calibration.scale, rounding='up')} (set by {d.get('binding')!r})"
                + ("" if d.get("optimal") else " (optimality NOT proven)"))


def __getattr__(name: str) -> object:
    # comparison_html moved to quiltpriv.reporting.notebook (the old path warns until 0.3.0).
    from quiltpriv._compat import moved_attribute

    return moved_attribute(__name__, {"comparison_html": "quiltpriv.reporting.notebook"}, name)
