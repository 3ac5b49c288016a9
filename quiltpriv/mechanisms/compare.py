"""Side by side: the noise each mechanism needs for one model, query and epsilon.

For a hyperparameter network (Theta), a query ``F`` and sensitive attributes ``C``:

* **APMQM** (Algorithm 3, Theorem 4): Laplace, least scale over all Markov quilts;
  (eps, 0)-distributional attribute privacy.
* **Group DP Laplace** (spec 01/02): every record may change, scale ``Delta_all F / eps``
  (``n Delta / eps`` per-record); (eps, 0) for any secret, no assumption on Theta.
* **Wasserstein Mechanism** (Algorithm 4, Theorem 5): Laplace with scale ``W / eps`` from the
  conditional laws of ``F`` (:mod:`quiltpriv.queries.network_laws`): exact rationals for small
  ``n``,
  certified float64 laws in ``O(n)`` above (``W`` then a proven upper bound, exact when its
  bracket closes); computable for a count over one Bernoulli attribute without a predicate, or
  a count whose predicate is linked to the model's record categories by a declared ``domain``
  or ``record_states`` (otherwise the row says what to declare; a predicate is never
  reinterpreted).
* **APGM** (Algorithm 1, Theorem 1) is listed with the reason it does not apply: it needs
  ``F | secret`` Gaussian with a secret-independent variance (Gaussian record models,
  :func:`quiltpriv.mechanisms.apgm.apgm_gaussian_columns`), which a network of Bernoulli
  parameters does not give.
* **The original Markov Quilt Mechanism** (Algorithm 5) protects individual values of a network
  over record values, not hyperparameters: listed as not applicable, with a pointer to
  :func:`quiltpriv.mechanisms.mqm.markov_quilt_mechanism`.

Standard deviations: ``sqrt(2) b`` for Laplace scale ``b``, ``sigma`` for Gaussian.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from quiltpriv.errors import ModelError, QueryError
from quiltpriv.inference.influence import InfluenceTooExpensive
from quiltpriv.mechanisms.apmqm import plan, was_interrupted
from quiltpriv.mechanisms.group_dp import group_laplace
from quiltpriv.model.network import as_theta
from quiltpriv.queries.law_bounds import Budget, BudgetExceeded
from quiltpriv.queries.network_laws import network_wasserstein
from quiltpriv.queries.query import CountQuery, HistogramQuery, Query, SumQuery
from quiltpriv.utils.validation import check_epsilon, check_positive

__all__ = ["DEFAULT_TIME_LIMIT", "Comparison", "MechanismRow", "compare", "register_cli"]

#: Default ``--time-limit`` of ``quiltpriv compare`` and ``quiltpriv audit``, in seconds.
DEFAULT_TIME_LIMIT = 60.0


@dataclass(frozen=True)
class MechanismRow:
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
    """

    mechanism: str
    applicable: bool
    noise: str | None
    scale: float | None
    std: float | None
    guarantee: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "applicable": self.applicable, "noise": self.noise,
                "scale": self.scale, "std": self.std, "guarantee": self.guarantee,
                "detail": self.detail}


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
        return {"epsilon": self.epsilon, "query": self.query, "sensitive": list(self.sensitive),
                "rows": [r.to_dict() for r in self.rows], "notes": list(self.notes)}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def explain(self) -> str:
        header = ("mechanism", "noise", "scale", "std", "guarantee")
        rows = [(r.mechanism, r.noise or "-", _fmt(r.scale), _fmt(r.std),
                 r.guarantee if r.applicable else "not applicable") for r in self.rows]
        widths = [max(len(h), *(len(x[k]) for x in rows)) for k, h in enumerate(header)]
        lines = [f"epsilon = {self.epsilon:g}; sensitive: {', '.join(self.sensitive)}; "
                 f"query: {self.query.get('kind')} over "
                 f"{', '.join(self.query.get('attributes', [self.query.get('attribute', '')]))}",
                 "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)),
                 "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.ljust(w) for c, w in zip(x, widths, strict=True)) for x in rows]
        lines.append("")
        for r in self.rows:
            lines.append(f"{r.mechanism}: {r.detail}")
        b = self.best
        if b is not None:
            lines.append(f"least noise: {b.mechanism} (std {_fmt(b.std)})")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()

    def _repr_html_(self) -> str:
        from quiltpriv.reporting.report import comparison_html

        return comparison_html(self)


def _left(budget: Budget) -> float | None:
    """Seconds left of the comparison's time limit (at least a millisecond), or None."""
    left = budget.remaining()
    return None if left is None else max(left, 1e-3)


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    return "inf" if math.isinf(x) else f"{x:.6g}"


def _laplace_std(b: float) -> float:
    # sqrt(2) b, nudged up so a reported std is never below the exact one.
    return math.nextafter(math.sqrt(2.0) * b, math.inf) if b > 0 else 0.0


def _group_row(query: Query, eps: float) -> MechanismRow:
    # Per-record sensitivity for record-additive queries; otherwise Delta over every column is
    # already the largest change of F when every record changes.
    if isinstance(query, CountQuery):
        res = group_laplace(1.0, query.records, eps)
    elif isinstance(query, SumQuery):
        res = group_laplace(query.upper - query.lower, query.records, eps)
    elif isinstance(query, HistogramQuery):
        res = group_laplace(2.0, query.records, eps)
    else:
        res = group_laplace(query.sensitivity(query.attributes), 1, eps)
    return MechanismRow(
        "group DP Laplace", True, "Laplace", res.scale, _laplace_std(res.scale),
        "(eps, 0) for any change of the whole dataset",
        f"every record may change: Delta = {_fmt(res.group_sensitivity)}, "
        f"scale = Delta / eps = {_fmt(res.scale)}")


def compare(
    model: Any, query: Query, sensitive: str | Iterable[str], epsilon: float, *,
    time_limit: float | None = None, progress: bool = False,
) -> Comparison:
    """Noise scale (and standard deviation) of every applicable mechanism, side by side.

    Parameters
    ----------
    model : Theta, pgmpy network or sequence of them
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
    theta = as_theta(model)
    eps = check_epsilon(epsilon)
    if not isinstance(query, Query):
        raise QueryError(f"query must be a quiltpriv query, got {type(query).__name__}")
    sens = theta.check_sensitive(sensitive)
    budget = Budget(None if time_limit is None else check_positive(time_limit, "time_limit"))
    rows = []
    p = plan(theta, query, sens, eps, time_limit=_left(budget))
    if was_interrupted(p):
        raise KeyboardInterrupt  # Ctrl-C: stop the comparison, do not go on to the others
    detail = "; ".join(f"{sp.node}: Q = {{{', '.join(sp.quilt)}}}, e = {_fmt(sp.influence)}, "
                       f"b = {_fmt(sp.scale)}" for sp in p.sensitive)
    detail += " (optimal over all quilts)" if p.optimal else " (optimality NOT proven)"
    rows.append(MechanismRow("APMQM", True, "Laplace", p.scale, _laplace_std(p.scale),
                             "(eps, 0)-distributional attribute privacy (Theorem 4)", detail))
    rows.append(_group_row(query, eps))
    try:
        w = network_wasserstein(theta, query, sens, eps,  # type: ignore[arg-type]
                                time_limit=_left(budget), progress=progress)
    except BudgetExceeded as exc:
        rows.append(MechanismRow("Wasserstein", False, None, None, None, "",
                                 f"not computed: {exc}"))
    except (QueryError, ModelError, InfluenceTooExpensive) as exc:
        rows.append(MechanismRow("Wasserstein", False, None, None, None, "",
                                 f"not computable here: {exc}"))
    else:
        r = w.result
        # The laws of a network's count are exact or certified, never a grid over Theta:
        # the scale always buys Theorem 5 (a bracket that does not close uses its top).
        if w.arithmetic == "exact":
            how = f"W_inf = {_fmt(r.sensitivity)} from the exact laws of the count"
        elif r.exact:
            how = (f"W_inf = {_fmt(r.sensitivity)} from certified float64 laws of the count "
                   "(error-bounded; the bracket closes, so the value is exact)")
        else:
            how = (f"W_inf <= {_fmt(r.sensitivity)} (proven bound; the exact value is at least "
                   f"{_fmt(r.sensitivity_lower)}) from certified float64 laws of the count")
        rows.append(MechanismRow(
            "Wasserstein", True, "Laplace", r.scale, _laplace_std(r.scale),
            "(eps, 0)-distributional attribute privacy (Theorem 5)",
            f"{how} ({r.worst_case})"))
    rows.append(MechanismRow(
        "APGM", False, None, None, None, "",
        "does not apply: Theorem 1 needs F | secret Gaussian with a variance independent of the "
        "secret (Gaussian record models, see quiltpriv.mechanisms.apgm.apgm_gaussian_columns)"
        "; on a network of Bernoulli parameters F | phi_i is a binomial mixture whose variance "
        "depends on phi_i (APGMnG, Algorithm 2, would need a checked Gaussian approximation)"))
    rows.append(MechanismRow(
        "original MQM", False, None, None, None, "",
        "does not apply: Algorithm 5 protects individual values Y_i of a network over record "
        "values, not hyperparameters phi_i (use "
        "quiltpriv.mechanisms.mqm.markov_quilt_mechanism on such a network)"))
    return Comparison(eps, query.to_dict(), sens, tuple(rows),
                      notes=("standard deviation of Laplace(b) is sqrt(2) b",))


# -- command line -------------------------------------------------------------------------------


def _cmd_compare(args: argparse.Namespace) -> int:
    from quiltpriv.cli.core import emit, query_from_args, sensitive_from_args, theta_from_args

    limit = check_positive(args.time_limit, "--time-limit")
    theta = theta_from_args(args)
    query = query_from_args(args)
    c = compare(theta, query, sensitive_from_args(args), args.epsilon,
                time_limit=limit, progress=sys.stderr.isatty())
    emit(c.to_json() if args.json else c.explain(), args.output)
    return 0


def register_cli(sub: argparse._SubParsersAction) -> None:
    """Add ``quiltpriv compare MODEL [--theta M2 ...] --sensitive S --query ... --epsilon E``."""
    from quiltpriv.cli.core import (
        add_model_arguments,
        add_privacy_arguments,
        add_query_arguments,
        time_limit_type,
    )

    p = sub.add_parser("compare", help="noise of every mechanism side by side",
                       description="For one model, query and epsilon, print the noise scale "
                                   "and standard deviation of APMQM, group DP, the Wasserstein "
                                   "mechanism and APGM, and why any of them does not apply.")
    add_model_arguments(p)
    add_privacy_arguments(p)
    add_query_arguments(p)
    p.add_argument("--time-limit", type=time_limit_type, default=DEFAULT_TIME_LIMIT,
                   metavar="SECONDS",
                   help="stop after this long (default: %(default)g): the plan is then not "
                        "proven optimal, and the Wasserstein row says it was not computed")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically)")
    p.set_defaults(func=_cmd_compare)
