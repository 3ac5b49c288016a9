"""Every mechanism behind the one protocol of :mod:`quiltpriv.mechanisms.protocol`, by name.

Built from a model, a query, the sensitive attributes and epsilon (what ``quiltpriv release``
and ``quiltpriv compare`` are given), :data:`MECHANISMS` holds

=====================  ==============================  =======================================
name                   guarantee                       calibration
=====================  ==============================  =======================================
``apmqm``              distributional attribute        [ZOC22, Alg. 3]: least Laplace scale
                       privacy ([ZOC22, Thm. 4])       over all Markov quilts
``wasserstein``        distributional attribute        [ZOC22, Alg. 4]: ``b = W / eps`` from
                       privacy ([ZOC22, Thm. 5])       the laws of a count on the network
``group-dp``           (eps, 0) group differential     [ZOC22, Ex. 2]: ``b = n Delta / eps``
                       privacy over every record
``group-dp-gaussian``  (eps, delta) group DP           [BW18]: analytic Gaussian for
                                                       ``n Delta``
``mqm``                Pufferfish for every entry of   [ZOC22, Alg. 5] ([SWC17]):
                       a network over record values    ``b = L max_i |N| / (eps - e)``
=====================  ==============================  =======================================

:func:`build_mechanism` builds one by name; ``quiltpriv release --mechanism NAME`` runs it.

Mechanisms whose calibration needs more than a network of attribute parameters gets (a
Gaussian record model, the conditional laws of ``F``, a finite set of data distributions) are
wrapped from their own results: :func:`apgm_mechanism` ([ZOC22, Alg. 1]),
:func:`wasserstein_laws_mechanism` ([ZOC22, Alg. 4] from given laws) and
:func:`distribution_privacy_mechanism` ([CO23]). Local mechanisms ([KM19], tupling) and
GAP privatizers act on each record, not on a query of the dataset, and subset privacy's count
table ([Tan, Alg. 1]) releases a whole table with exact row totals: none of them is "a query
plus calibrated noise", so they keep their own interfaces.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from quiltpriv.errors import ParameterError, QueryError
from quiltpriv.mechanisms.apmqm import Plan, query_fingerprint
from quiltpriv.mechanisms.protocol import (
    Calibration,
    Guarantee,
    Mechanism,
    QueryMechanism,
    ReleaseRecord,
)
from quiltpriv.model.network import Theta, as_theta
from quiltpriv.queries.query import CountQuery, HistogramQuery, Query, SumQuery, check_query
from quiltpriv.utils.deprecation import renamed_fields, renamed_keywords
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.time_limit import TimeLimit, seconds_left
from quiltpriv.utils.validation import check_delta, check_epsilon

if TYPE_CHECKING:
    import pandas as pd

    from quiltpriv.distribution.results import DistributionPrivacyResult
    from quiltpriv.mechanisms.apgm import APGMResult
    from quiltpriv.mechanisms.wasserstein import WassersteinResult

__all__ = [
    "MECHANISMS",
    "APMQMMechanism",
    "MechanismEntry",
    "REGISTRY",
    "apgm_mechanism",
    "apmqm_mechanism",
    "build_mechanism",
    "distribution_privacy_mechanism",
    "group_dp_mechanism",
    "group_sensitivity",
    "mqm_mechanism",
    "network_wasserstein_mechanism",
    "wasserstein_laws_mechanism",
]


def _model_record(theta: Theta) -> dict[str, Any]:
    from quiltpriv.model.provenance import provenance_dict

    return {"fingerprint": theta.fingerprint(), "theta_size": len(theta),
            "provenance": provenance_dict(theta)}


# -- APMQM -------------------------------------------------------------------------------------


@renamed_fields(model="theta")
@dataclass(frozen=True)
class APMQMMechanism:
    """APMQM behind the protocol: a verified plan, its query and its network (``theta``).

    ``release`` is :func:`quiltpriv.mechanisms.apmqm_release.release` (every check it makes: the
    plan against the model and the query, the data against the query's declared domain), returning
    the :class:`~quiltpriv.mechanisms.protocol.ReleaseRecord` of that release.
    """

    plan: Plan
    query: Query
    theta: Theta
    name: str = "APMQM"

    @property
    def guarantee(self) -> Guarantee:
        return self.plan.guarantee

    @property
    def calibration(self) -> Calibration:
        return self.plan.calibration

    def to_dict(self) -> dict[str, Any]:
        """The mechanism as JSON: name, guarantee, calibration and the plan."""
        return {"name": self.name, "guarantee": self.guarantee.to_dict(),
                "calibration": self.calibration.to_dict(), "plan": self.plan.to_dict()}

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def release(self, data: pd.DataFrame, *, seed: int | random.Random | None = None,
                ledger: str | os.PathLike[str] | None = None,
                command: Any = None, dataset: str | None = None,
                budget: float | None = None, allow_unproved: bool = False) -> ReleaseRecord:
        """``F(data) + Lap(b)``: :func:`quiltpriv.mechanisms.apmqm_release.release` as a record."""
        from quiltpriv.mechanisms.apmqm_release import release

        return release(self.plan, self.query, data, seed=seed, theta=self.theta, ledger=ledger,
                       command=command, dataset=dataset, budget=budget,
                       allow_unproved=allow_unproved).to_record()


@renamed_keywords(model="theta")
def apmqm_mechanism(theta: Any, query: Query, sensitive: str | Iterable[str], epsilon: float,
                    **plan_options: Any) -> APMQMMechanism:
    """Plan APMQM ([ZOC22, Alg. 3]; :func:`quiltpriv.mechanisms.apmqm.plan` with
    ``plan_options``) and wrap the plan."""
    from quiltpriv.mechanisms.apmqm import plan

    theta = as_theta(theta)
    return APMQMMechanism(plan(theta, check_query(query), sensitive, epsilon, **plan_options),
                          query, theta)


# -- group differential privacy ----------------------------------------------------------------


def group_sensitivity(query: Query) -> tuple[float, int]:
    """``(Delta, n)``: the per-record sensitivity of ``query`` and the records that may change.

    Record-additive queries (count 1, sum ``hi - lo``, histogram 2 in L1) change by ``Delta``
    per changed record, over at most ``n = records`` records; for other queries ``Delta`` is
    already the largest change of ``F`` when every column changes (``n = 1``).
    """
    check_query(query)
    if isinstance(query, CountQuery):
        return 1.0, query.records
    if isinstance(query, SumQuery):
        return query.upper - query.lower, query.records
    if isinstance(query, HistogramQuery):
        return 2.0, query.records
    return float(query.sensitivity(query.attributes)), 1


_GROUP_ASSUMPTIONS = (
    "F changes by at most Delta per changed record, and the data have at most n records "
    "(the query's declared bounds); nothing is assumed about the distribution of the data",
)


def group_dp_mechanism(query: Query, epsilon: float, *, delta: float | None = None,
                       calibration: str = "analytic") -> QueryMechanism:
    """Group differential privacy over every record ([ZOC22, Ex. 2]; [DR14]).

    Laplace ``b = n Delta / eps`` (:func:`quiltpriv.mechanisms.group_dp.group_laplace`), or with
    ``delta`` Gaussian noise for the L2 sensitivity ``n Delta``
    (:func:`quiltpriv.mechanisms.group_dp.group_gaussian`, ``calibration`` ``"analytic"``
    [BW18] or ``"classical"`` [DR14, Thm. A.1], eps < 1). (eps, delta) for any change of the
    whole dataset, hence for any property of it, with no assumption on a model.
    """
    from quiltpriv.mechanisms.group_dp import group_gaussian, group_laplace

    query = check_query(query)
    d, n = group_sensitivity(query)
    fp = query_fingerprint(query, [])
    if delta is None:
        res = group_laplace(d, n, epsilon)
        cal = Calibration("laplace", res.scale, res.group_sensitivity,
                          f"[ZOC22, Ex. 2]: group privacy over all n records, b = n Delta / eps "
                          f"= {n} x {_fmt(d)} / {_fmt(res.epsilon)} = "
                          f"{_fmt(res.scale, rounding='up')}",
                          {"per_record_sensitivity": d, "records": n})
        name = "group DP Laplace"
    else:
        if isinstance(query, HistogramQuery):
            raise QueryError("group-dp-gaussian releases scalar queries only (a histogram "
                             "needs the Laplace form, group-dp)")
        res = group_gaussian(d, n, epsilon, check_delta(delta), calibration=calibration)
        cite = "[BW18]" if calibration == "analytic" else "[DR14, Thm. A.1]"
        cal = Calibration("gaussian", res.scale, res.group_sensitivity,
                          f"{cite}: Gaussian mechanism ({calibration}) for the L2 sensitivity "
                          f"n Delta = {n} x {_fmt(d)} of a change of every record: sigma = "
                          f"{_fmt(res.scale, rounding='up')}",
                          {"per_record_sensitivity": d, "records": n,
                           "calibration": calibration})
        name = "group DP Gaussian"
    g = Guarantee("differential privacy (group)", res.epsilon, res.delta, _GROUP_ASSUMPTIONS)
    return QueryMechanism(name, query, g, cal, fp, details=res.to_dict())


# -- Wasserstein -------------------------------------------------------------------------------


@renamed_keywords(model="theta")
def network_wasserstein_mechanism(theta: Any, query: Query, sensitive: str | Iterable[str],
                                  epsilon: float, *, time_limit: float | None = None,
                                  progress: bool = False) -> QueryMechanism:
    """The Wasserstein Mechanism for a count on a hyperparameter network ([ZOC22, Alg. 4],
    :func:`quiltpriv.mechanisms.network_wasserstein.network_wasserstein`): ``b = W / eps``.

    Raises what ``network_wasserstein`` raises: a query other than a count, a predicate without
    a declared domain, :class:`~quiltpriv.queries.law_bounds.BudgetExceeded` past the time
    limit.
    """
    from quiltpriv.mechanisms.network_wasserstein import network_wasserstein

    theta = as_theta(theta)
    query = check_query(query)
    w = network_wasserstein(theta, query, sensitive, epsilon,  # type: ignore[arg-type]
                            time_limit=time_limit, progress=progress)
    r = w.result
    sens = theta.check_sensitive(sensitive)
    bound = "W" if r.exact else "W (a proven upper bound of the supremum)"
    cal = Calibration("laplace", r.scale, r.sensitivity,
                      f"[ZOC22, Alg. 4]: b = {bound} / eps = {_fmt(r.sensitivity)} / "
                      f"{_fmt(r.epsilon)} = {_fmt(r.scale, rounding='up')}, W the largest "
                      "infinity-Wasserstein "
                      "distance between the laws of the count given two values of a sensitive "
                      "parameter", {"exact": bool(r.exact)})
    g = Guarantee("distributional attribute privacy", r.epsilon, 0.0, (
        "the attribute parameters phi follow the hyperparameter network for some theta in the "
        "finite Theta given",
        "the records are drawn independently given phi, attribute j of a record Bernoulli("
        "phi_j) (or categorical), read through the query's declared domain",
    ), sens)
    return QueryMechanism("Wasserstein", query, g, cal, query_fingerprint(query, []),
                          theta_identity=_model_record(theta),
                          details={**r.to_dict(), "arithmetic": w.arithmetic})


def wasserstein_laws_mechanism(result: WassersteinResult, query: Query, *,
                               sensitive: Iterable[str] = (),
                               kind: str = "distributional attribute privacy"
                               ) -> QueryMechanism:
    """The Wasserstein Mechanism ([ZOC22, Alg. 4]) from the conditional laws of ``F`` you gave
    :func:`quiltpriv.mechanisms.wasserstein.wasserstein_mechanism` (or its two-binary forms):
    ``query`` is the ``F`` those laws are the laws of (your claim). ``result.notes`` become the
    guarantee's assumptions (a grid estimate over Theta is said there)."""
    query = check_query(query)
    cal = Calibration("laplace", result.scale, result.sensitivity,
                      f"[ZOC22, Alg. 4]: b = W / eps = {_fmt(result.sensitivity)} / "
                      f"{_fmt(result.epsilon)} = "
                      f"{_fmt(result.scale, rounding='up')}", {"exact": bool(result.exact)})
    g = Guarantee(kind, result.epsilon, result.delta,  # type: ignore[arg-type]
                  ("the given laws are the laws of the query's value given each secret",
                   *result.notes), tuple(sensitive))
    return QueryMechanism("Wasserstein (given laws)", query, g, cal, query_fingerprint(query, []),
                          details=result.to_dict())


# -- the original Markov Quilt Mechanism ------------------------------------------------------


@renamed_keywords(model="theta")
def mqm_mechanism(theta: Any, query: Query, sensitive: str | Iterable[str] | None,
                  epsilon: float, **options: Any) -> QueryMechanism:
    """The original Markov Quilt Mechanism ([ZOC22, Alg. 5], [SWC17]) on a network whose nodes
    are the entries ``Y_i`` of ONE database (not attribute parameters).

    The data are that database: one row, one column per entry. ``F`` is the query;
    its Lipschitz constant ``L`` (the most ``F`` changes when one entry changes) is its largest
    one-column sensitivity ``max_j Delta_{j} F`` (exact on one row; a count's is its declared
    ``records``, an upper bound). ``sensitive`` are the protected entries (None: all).
    ``options`` go to :func:`quiltpriv.mechanisms.mqm.markov_quilt_mechanism`.
    """
    from quiltpriv.mechanisms.mqm import markov_quilt_mechanism

    theta = as_theta(theta)
    query = check_query(query)
    theta.check_nodes(query.attributes, "query attribute")
    lip = max(float(query.sensitivity([a])) for a in query.attributes)
    if lip == 0:
        raise QueryError("the query does not change with any one entry (L = 0): nothing to "
                         "protect")
    options.setdefault("read", query.attributes)
    p = markov_quilt_mechanism(theta, epsilon, lipschitz=lip, protected=sensitive, **options)
    b = p[p.binding]
    cal = Calibration("laplace", p.scale, lip * b.nearby_count,
                      f"[ZOC22, Alg. 5] ([SWC17]): b = L max_i |N(Q_i) & A| / (eps - "
                      f"e(Q_i|Y_i)), A the entries F reads, set by {b.node!r}: {_fmt(lip)} x "
                      f"{b.nearby_count} / ({_fmt(p.epsilon)} - {_fmt(b.influence)}) = "
                      f"{_fmt(p.scale, rounding='up')}",
                      {"binding": b.node, "binding_influence": b.influence, "lipschitz": lip,
                       "nearby": b.nearby_count,
                       # The grid is paid against the least positive L |N_i & A| over the
                       # protected entries, at least L (as MQMPlan.release does): paying it
                       # against the binding entry's would under-noise an entry with fewer
                       # nearby readings whose own b_i is close to the scale.
                       "sampler_sensitivity": lip})
    g = Guarantee("pufferfish (Markov quilt)", p.epsilon, 0.0, (
        "the data are one realisation of the network's entries (one row, one column per "
        "node), drawn from it for some theta in Theta",
        f"F changes by at most L = {_fmt(lip)} when one entry changes",
    ), p.protected)
    return QueryMechanism("MQM", query, g, cal, query_fingerprint(query, []),
                          theta_identity=_model_record(theta), details=p.to_dict(), rows=1)


# -- wrapped from their own results ------------------------------------------------------------


def apgm_mechanism(result: APGMResult, query: Query) -> QueryMechanism:
    """The Attribute-Private Gaussian Mechanism ([ZOC22, Alg. 1]) of ``result``
    (:func:`quiltpriv.mechanisms.apgm.apgm`,
    :func:`~quiltpriv.mechanisms.apgm.apgm_gaussian_columns`) releasing the scalar ``query``
    its moments describe (your claim: e.g. a :class:`~quiltpriv.queries.query.MeanQuery` of
    the column whose mean ``F`` is)."""
    query = check_query(query)
    if result.dimension != 1:
        raise QueryError("the protocol's APGM releases a scalar query; use result.release(value) "
                         "for a vector F")
    g, cal, _ = result._terms()  # the same claims as the result's own release(value)
    return QueryMechanism("APGM", query, g, cal, query_fingerprint(query, []),
                          details=result.to_dict())


def distribution_privacy_mechanism(result: DistributionPrivacyResult,
                                   query: Query) -> QueryMechanism:
    """A distribution privacy mechanism of [CO23]
    (:mod:`quiltpriv.distribution.distribution_privacy`) releasing ``query`` (your claim: the
    ``F`` whose laws ``result`` was calibrated for).

    Independent Laplace noise per coordinate, isotropic Gaussian noise on a scalar, or no noise
    fit the protocol; directional and correlated Gaussian noise (DirM, EigM, DauM) do not (one
    scale per coordinate cannot say them): use ``result.release(value)``.
    """

    query = check_query(query)
    m = len(query.cells) if isinstance(query, HistogramQuery) else 1
    if result.dimension != m:
        raise QueryError(f"{result.mechanism} was calibrated for F of dimension "
                         f"{result.dimension}, the query has {m}")
    if result.noise in ("laplace", "none"):
        noise, scale = "laplace", result.laplace_scale
    elif result.noise == "gaussian" and m == 1:
        # the sigma of the exact release (EigM/DauM: without F's own variance, which a
        # snapped F plus discrete noise cannot use)
        noise, scale = "gaussian", result.gaussian_release_sigma()
    else:
        raise ParameterError(f"{result.mechanism} adds {result.noise} noise"
                             f"{' in several dimensions' if m > 1 else ''}, which the protocol's "
                             "one-scale release cannot draw; use result.release(value)")
    cal = Calibration(noise, scale, result.sensitivity,  # type: ignore[arg-type]
                      f"[CO23] {result.mechanism}: scale {_fmt(scale, rounding='up')} for the "
                      "distance "
                      f"{_fmt(result.sensitivity)} ({'; '.join(result.notes) or 'see details'})")
    g = Guarantee("distribution privacy", result.epsilon, result.delta, tuple(result.assumptions))
    return QueryMechanism("distribution privacy", query, g, cal, query_fingerprint(query, []),
                          details=result.to_dict())


# -- the registry ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MechanismEntry:
    """One mechanism of the registry: ``quiltpriv release --mechanism NAME`` runs it and
    ``quiltpriv compare`` lists it (:data:`REGISTRY`).

    ``build(theta, query, sensitive, epsilon, delta=..., time_limit=..., progress=...)``
    returns the :class:`~quiltpriv.mechanisms.protocol.Mechanism`. ``build`` is None for a
    mechanism that a network of attribute parameters cannot calibrate (APGM needs a Gaussian
    record model): ``compare`` lists it with ``unavailable``, the reason, and ``release`` does
    not offer it.
    """

    name: str
    title: str
    summary: str
    needs_delta: bool
    build: Callable[..., Mechanism] | None
    unavailable: str = ""


def _apmqm(theta: Any, query: Query, sensitive: Any, epsilon: float, *,
           delta: float | None = None, time_limit: float | TimeLimit | None = None,
           progress: bool = False, **plan_options: Any) -> APMQMMechanism:
    return apmqm_mechanism(theta, query, sensitive, epsilon, time_limit=time_limit,
                           progress=progress, **plan_options)


def _wasserstein(theta: Any, query: Query, sensitive: Any, epsilon: float, *,
                 delta: float | None = None, time_limit: float | TimeLimit | None = None,
                 progress: bool = False) -> QueryMechanism:
    return network_wasserstein_mechanism(theta, query, sensitive, epsilon,
                                         time_limit=seconds_left(time_limit),
                                         progress=progress)


def _group(theta: Any, query: Query, sensitive: Any, epsilon: float, *,
           delta: float | None = None, time_limit: float | None = None,
           progress: bool = False) -> QueryMechanism:
    return group_dp_mechanism(query, epsilon)


def _group_gaussian(theta: Any, query: Query, sensitive: Any, epsilon: float, *,
                    delta: float | None = None, time_limit: float | None = None,
                    progress: bool = False) -> QueryMechanism:
    if delta is None:
        raise ParameterError("group-dp-gaussian needs delta (--delta)")
    return group_dp_mechanism(query, epsilon, delta=delta)


def _mqm(theta: Any, query: Query, sensitive: Any, epsilon: float, *,
         delta: float | None = None, time_limit: float | TimeLimit | None = None,
         progress: bool = False) -> QueryMechanism:
    return mqm_mechanism(theta, query, sensitive, epsilon, time_limit=time_limit,
                         progress=progress)


#: Every mechanism, in the order ``quiltpriv compare`` lists them.
REGISTRY: tuple[MechanismEntry, ...] = (
    MechanismEntry("apmqm", "APMQM", "Attribute-Private Markov Quilt Mechanism: least Laplace "
                   "noise over all Markov quilts [ZOC22, Alg. 3]", False, _apmqm),
    MechanismEntry("group-dp", "group DP Laplace", "Laplace noise for a change of every record "
                   "(no model needed) [ZOC22, Ex. 2]", False, _group),
    MechanismEntry("wasserstein", "Wasserstein", "Laplace noise W / eps from the laws of a count "
                   "on the network [ZOC22, Alg. 4]", False, _wasserstein),
    MechanismEntry("group-dp-gaussian", "group DP Gaussian", "Gaussian noise for a change of "
                   "every record, (eps, delta) [BW18]", True, _group_gaussian),
    MechanismEntry(
        "apgm", "APGM", "Attribute-Private Gaussian Mechanism on a Gaussian record model "
        "[ZOC22, Alg. 1] (apgm_mechanism wraps its result)", True, None,
        unavailable="does not apply: Theorem 1 needs F | secret Gaussian with a variance "
        "independent of the secret (Gaussian record models, see "
        "quiltpriv.mechanisms.apgm.apgm_gaussian_columns); on a network of Bernoulli parameters "
        "F | phi_i is a binomial mixture whose variance depends on phi_i (APGMnG, Algorithm 2, "
        "would need a checked Gaussian approximation)"),
    MechanismEntry("mqm", "MQM", "the original Markov Quilt Mechanism on a network over the "
                   "entries of one database (one row of data) [ZOC22, Alg. 5]", False, _mqm),
)

#: The mechanisms ``quiltpriv release --mechanism NAME`` runs (those of :data:`REGISTRY` that a
#: network, a query and epsilon calibrate), by name.
MECHANISMS: Mapping[str, MechanismEntry] = {e.name: e for e in REGISTRY if e.build is not None}


def mechanism_entry(name: str) -> MechanismEntry:
    """The registered mechanism ``name``; a :class:`ParameterError` listing them otherwise."""
    entry = MECHANISMS.get(name) if isinstance(name, str) else None
    if entry is None:
        raise ParameterError(f"unknown mechanism {name!r}; choose one of "
                             f"{', '.join(MECHANISMS)}")
    return entry


@renamed_keywords(model="theta")
def build_mechanism(name: str, theta: Any, query: Query, sensitive: str | Iterable[str],
                    epsilon: float, *, delta: float | None = None,
                    time_limit: float | TimeLimit | None = None, progress: bool = False,
                    **options: Any) -> Mechanism:
    """Build the mechanism ``name`` of :data:`MECHANISMS` for a model, query and epsilon.

    Parameters
    ----------
    name : str
        A key of :data:`MECHANISMS`.
    theta : Theta, pgmpy network or sequence of them
        The model (group DP does not use it).
    query : Query
    sensitive : str or iterable of str
        The sensitive attributes (MQM: the protected entries).
    epsilon : float
    delta : float, optional
        Required by ``group-dp-gaussian``; refused by the pure mechanisms.
    time_limit : float or TimeLimit, optional
        Seconds for the planning (APMQM, MQM) or the laws (Wasserstein), or a
        :class:`~quiltpriv.utils.time_limit.TimeLimit` already running (the command line's,
        from the start of the command).
    progress : bool
    **options
        More options of :func:`quiltpriv.mechanisms.apmqm.plan` (APMQM only).

    Raises
    ------
    ParameterError, ModelError, QueryError
        An unknown name, a delta given to a pure mechanism or missing for a Gaussian one, and
        whatever the mechanism refuses (a query it cannot release, ...).
    """
    entry = mechanism_entry(name)
    check_epsilon(epsilon)
    if delta is not None and not entry.needs_delta:
        raise ParameterError(f"{name} gives a pure (eps, 0) guarantee: delta does not apply")
    if options and name != "apmqm":
        raise ParameterError(f"{name} takes no options {sorted(options)}")
    theta = None if name.startswith("group-dp") else as_theta(theta)
    if theta is not None and sensitive is not None:
        theta.check_sensitive(sensitive)
    if entry.build is None:  # never: MECHANISMS holds the buildable entries only
        raise ParameterError(f"{name}: {entry.unavailable}")
    return entry.build(theta, query, sensitive, epsilon,
                       delta=delta, time_limit=time_limit, progress=progress, **options)
