"""The per-step plans of a time series, held as runs: linear in the series, not in its square.

A plan of every step of a chain ``X_1 -> ... -> X_T`` chooses, for each step ``i``, the quilt
``{X_(i-a), X_(i+b)}`` (:mod:`quiltpriv.mechanisms.chain_quilts`); in the middle of a
homogeneous chain every step chooses the same ``(a, b)`` with the same influence, sensitivity
and scale. :class:`StepPlans` keeps the choices as *runs* of consecutive steps that share them
and is a read-only sequence of :class:`~quiltpriv.mechanisms.apmqm.SensitivePlan`, each made
when it is asked for (its quilt, nearby query attributes and explanation follow from the run,
the step and the chain). A plan of a million steps is then a few hundred runs in memory and
in its JSON (``"quiltpriv-plan/3"``), its fingerprint is linear in the steps
(:func:`window_fingerprint`), and nothing lists ``N`` or ``R`` until a step is looked at.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, overload

import numpy as np

import quiltpriv.mechanisms.plan_fields as pf
from quiltpriv.errors import ParameterError, PlanError, QueryError
from quiltpriv.mechanisms.quilt_price import _price_words, quilt_scale
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.serialize import jsonable
from quiltpriv.utils.time_limit import TimeLimit, passed

__all__ = ["StepPlans", "step_windows", "window_fingerprint", "window_sensitivities"]

#: Said (in the attribute's explanation) when the time limit stops a search.
TIME_LIMIT_REASON = "the time limit was reached before the search finished"

#: The fingerprint format of a plan held as runs (:func:`window_fingerprint`).
WINDOW_FINGERPRINT_FORMAT = "quiltpriv-query-fingerprint/windows-1"


class StepRun(NamedTuple):
    """Consecutive steps ``first .. first + length - 1`` (chain positions, 0-based) sharing a
    choice: the quilt ``{X_(i-a), X_(i+b)}`` (0: no quilt node on that side) and its numbers."""

    first: int
    length: int
    a: int
    b: int
    influence: float
    sensitivity: float
    scale: float
    optimal: bool
    considered: int
    member: str | None
    pair: tuple[Any, Any] | None


_RUN_FIELDS = StepRun._fields

#: :class:`StepRun`'s fields as the run reader checks them (member and pair follow).
_RUN_SPEC: tuple[pf.RunField, ...] = (
    ("first", "int", 0), ("length", "int", 1), ("a", "int", 0), ("b", "int", 0),
    ("influence", "number", 0), ("sensitivity", "number", 0), ("scale", "number", 0),
    ("optimal", "bool", 0), ("considered", "int", 1))


def _ranges(positions: np.ndarray) -> list[list[int]]:
    """Sorted distinct positions as ``[first, length]`` ranges of consecutive ones."""
    if positions.size == 0:
        return []
    cut = np.flatnonzero(np.diff(positions) != 1) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [positions.size]])
    return [[int(positions[s]), int(e - s)] for s, e in zip(starts, ends, strict=True)]



def _sequence_index(j: object, n: int, what: str = "step plans") -> int:
    """The position ``0 <= k < n`` that a whole-number index ``j`` of a sequence of ``n``
    ``what`` (step plans, MQM entries) names (negative from the end), as a tuple reads it:
    TypeError for anything but a whole number (a bool included), IndexError outside the
    sequence."""
    if isinstance(j, bool) or not isinstance(j, int | np.integer):
        raise TypeError(f"{what} are indexed by whole numbers, not {type(j).__name__}")
    k = int(j) + n if j < 0 else int(j)
    if not 0 <= k < n:
        raise IndexError(j)
    return k

class StepPlans(Sequence[Any]):
    """The sensitive steps' plans of a chain, as runs (a sequence of ``SensitivePlan``).

    Parameters
    ----------
    kind : type
        :class:`~quiltpriv.mechanisms.apmqm.SensitivePlan`, what a step is made as.
    order : tuple of str
        The chain's nodes in order.
    runs : sequence of StepRun
        In plan order; their steps are the sensitive attributes (each at most once).
    attributes : ndarray of int
        The chain positions of the query's attributes, sorted (each once).
    epsilon : float
    listed : bool
        Whether each step's ``nearby`` and ``remote`` are listed when it is made (else its
        ``nearby_attributes``, the query attributes in ``N``).
    """

    __slots__ = ("kind", "order", "runs", "attributes", "epsilon", "listed", "_starts",
                 "_where")

    def __init__(self, kind: type, order: tuple[str, ...], runs: Sequence[StepRun],
                 attributes: np.ndarray, epsilon: float, listed: bool) -> None:
        if not isinstance(kind, type):
            raise PlanError(f"step plans: kind must be a class, got {kind!r}")
        if not isinstance(order, tuple) or not all(isinstance(v, str) for v in order):
            raise PlanError("step plans: order must be a tuple of node names")
        if isinstance(runs, str) or not isinstance(runs, Sequence) \
                or not all(isinstance(r, StepRun) for r in runs):
            raise PlanError("step plans: runs must be a sequence of StepRun")
        if not isinstance(attributes, np.ndarray) or attributes.ndim != 1 \
                or not np.issubdtype(attributes.dtype, np.integer):
            raise PlanError("step plans: attributes must be a 1-D array of chain positions")
        if isinstance(epsilon, bool) or not isinstance(epsilon, float | int) \
                or not math.isfinite(epsilon) or epsilon <= 0:
            raise PlanError(f"step plans: epsilon must be a finite number > 0, got {epsilon!r}")
        if not isinstance(listed, bool):
            raise PlanError(f"step plans: listed must be True or False, got {listed!r}")
        self.kind = kind
        self.order = order
        self.runs = tuple(runs)
        self.attributes = attributes.astype(np.int64)
        self.epsilon = float(epsilon)
        self.listed = listed
        self._starts = np.concatenate([[0], np.cumsum([r.length for r in self.runs],
                                                      dtype=np.int64)])
        self._where: dict[str, int] | None = None

    # -- the sequence ---------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self._starts[-1])

    @overload
    def __getitem__(self, j: int) -> Any: ...

    @overload
    def __getitem__(self, j: slice) -> tuple[Any, ...]: ...

    def __getitem__(self, j: int | slice) -> Any:
        if isinstance(j, slice):
            return tuple(self[k] for k in range(*j.indices(len(self))))
        k = _sequence_index(j, len(self))
        r = int(np.searchsorted(self._starts, k, side="right")) - 1
        run = self.runs[r]
        return self._make(run, run.first + (k - int(self._starts[r])))

    def __iter__(self) -> Iterator[Any]:
        for run in self.runs:
            for p in range(run.first, run.first + run.length):
                yield self._make(run, p)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StepPlans):
            return (self.order == other.order and self.runs == other.runs
                    and np.array_equal(self.attributes, other.attributes)
                    and self.epsilon == other.epsilon and self.listed == other.listed)
        if isinstance(other, tuple):
            return len(other) == len(self) and all(x == y for x, y in zip(self, other,
                                                                           strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.order, self.runs, self.attributes.tobytes(), self.epsilon,
                     self.listed))

    def __repr__(self) -> str:
        return (f"StepPlans({len(self)} steps of a {len(self.order)}-step chain in "
                f"{len(self.runs)} runs)")

    def __reduce__(self) -> Any:
        return (StepPlans, (self.kind, self.order, self.runs, self.attributes, self.epsilon,
                            self.listed))

    # -- per-step views, vectorized -------------------------------------------------------

    def nodes(self) -> tuple[str, ...]:
        """The sensitive steps' names, in plan order."""
        out: list[str] = []
        for r in self.runs:
            out.extend(self.order[r.first:r.first + r.length])
        return tuple(out)

    @renamed_keywords(node="sensitive")
    def index(self, sensitive: Any, start: int = 0, stop: int | None = None) -> int:
        """Plan index of the sensitive step ``sensitive`` (ValueError if it is not one)."""
        node = sensitive
        if self._where is None:
            where: dict[str, int] = {}
            for r, s in zip(self.runs, self._starts[:-1].tolist(), strict=True):
                where.update(zip(self.order[r.first:r.first + r.length],
                                 range(s, s + r.length), strict=True))
            self._where = where
        k = self._where.get(node) if isinstance(node, str) else None
        if k is None or not start <= k < (len(self) if stop is None else stop):
            raise ValueError(f"{node!r} is not a sensitive step of this plan")
        return k

    def __contains__(self, sp: object) -> bool:
        node = getattr(sp, "sensitive", None)
        if not isinstance(node, str):
            return False
        try:
            return self[self.index(node)] == sp
        except ValueError:
            return False

    def column(self, name: str) -> np.ndarray:
        """One field of :class:`StepRun` per step (``"position"`` for the chain positions)."""
        lengths = np.fromiter((r.length for r in self.runs), dtype=np.int64,
                              count=len(self.runs))
        if name == "position":
            first = np.fromiter((r.first for r in self.runs), dtype=np.int64,
                                count=len(self.runs))
            offs = np.arange(len(self)) - np.repeat(self._starts[:-1], lengths)
            return np.repeat(first, lengths) + offs
        k = _RUN_FIELDS.index(name)
        return np.repeat(np.array([r[k] for r in self.runs]), lengths)

    def binding_index(self) -> int:
        """Plan index of the first step of largest scale (:attr:`Plan.binding`)."""
        top = max(r.scale for r in self.runs)
        for r, s in zip(self.runs, self._starts[:-1].tolist(), strict=True):
            if r.scale == top:
                return int(s)
        raise AssertionError("unreachable")  # pragma: no cover

    def node_at(self, run: Any, offset: int) -> str:
        """The name of the ``offset``-th step of ``run``."""
        return self.order[run.first + offset]

    def binding_run(self) -> int:
        """Index of the run holding :meth:`binding_index`."""
        return int(np.searchsorted(self._starts, self.binding_index(), side="right")) - 1

    def run_head(self, i: int) -> int:
        """Plan index of the first step of run ``i``."""
        return int(self._starts[i])

    def describe(self) -> str:
        """The sentence above the table of runs in :meth:`Plan.explain`."""
        return (f"{len(self):,} sensitive steps of a {len(self.order):,}-step chain, in "
                f"{len(self.runs):,} runs of steps with the same quilt (offsets i-a, i+b from "
                "the step i) and the same numbers:")

    def sensitivities(self, query: Query) -> np.ndarray:
        """``Delta_{A&N} F`` of every step (:func:`window_sensitivities`)."""
        return window_sensitivities(self, query)

    def fingerprint(self, query: Query, sensitivities: np.ndarray, canonical: Any) -> str:
        """The query fingerprint of this plan (:func:`window_fingerprint`)."""
        return window_fingerprint(query, self, sensitivities, canonical)

    def attributes_match(self, query: Query) -> bool:
        """Whether the plan's query attributes are the query's."""
        return sorted(self.order[p] for p in self.attributes.tolist()) \
            == sorted(set(query.attributes))

    # -- one step -------------------------------------------------------------------------

    def _bounds(self, run: StepRun, p: int) -> tuple[int, int]:
        """The step ``p``'s nearby set ``N``: chain positions ``lo .. hi``."""
        return (p - run.a + 1 if run.a else 0,
                p + run.b - 1 if run.b else len(self.order) - 1)

    def _make(self, run: StepRun, p: int) -> Any:
        from quiltpriv.graph.quilts import Quilt

        order = self.order
        node = order[p]
        lo, hi = self._bounds(run, p)
        quilt = tuple(order[x] for x in ((p - run.a) if run.a else -1,
                                         (p + run.b) if run.b else -1) if x >= 0)
        attrs = self.attributes
        k0 = int(np.searchsorted(attrs, lo, side="left"))
        k1 = int(np.searchsorted(attrs, hi, side="right"))
        near = tuple(order[x] for x in attrs[k0:k1].tolist())
        full = None
        if self.listed:
            q = set(quilt)
            remote = tuple(v for v in order[:lo] + order[hi + 1:] if v not in q)
            full = Quilt(node, quilt, order[lo:hi + 1], remote)
        text = step_explanation(node, quilt, full, near, run, self.epsilon, len(order),
                                TIME_LIMIT_REASON)
        return self.kind(
            sensitive=node, quilt=quilt, nearby=None if full is None else full.nearby,
            remote=None if full is None else full.remote,
            nearby_attributes=near if full is None else None,
            influence=run.influence, sensitivity=run.sensitivity, scale=run.scale,
            quilts_considered=run.considered, optimal=run.optimal, explanation=text,
            influence_member=run.member, influence_pair=run.pair,
            # only the time limit stops the chain's search short of the optimum
            status="optimal" if run.optimal else "time_limit")

    # -- JSON -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """``{"order": [...], "attributes": [[first, length], ...], "listed": bool,
        "runs": [[first, length, a, b, influence, sensitivity, scale, optimal, considered,
        member, pair], ...]}`` (positions 0-based in ``order``)."""
        return {"order": list(self.order), "attributes": _ranges(self.attributes),
                "listed": self.listed,
                "runs": [[r.first, r.length, r.a, r.b, r.influence, r.sensitivity, r.scale,
                          r.optimal, r.considered, r.member,
                          None if r.pair is None else list(r.pair)] for r in self.runs]}

    @classmethod
    def from_dict(cls, kind: type, d: Any, epsilon: float) -> StepPlans:
        """Parse :meth:`to_dict` output strictly (PlanError naming the first bad field)."""
        d = pf._keys(d, ("order", "attributes", "listed", "runs"), "sensitive")
        order = pf._names(d["order"], "sensitive.order")
        n_steps = len(order)
        if n_steps < 2:
            raise PlanError("plan: sensitive.order must name the chain's steps (at least 2)")
        listed = pf._bool(d["listed"], "sensitive.listed")
        attrs = _parse_ranges(d["attributes"], n_steps, "sensitive.attributes")
        runs = []
        seen = np.zeros(n_steps, dtype=bool)
        for k, x in enumerate(pf._run_rows(d["runs"], _RUN_SPEC)):
            where = f"sensitive.runs[{k}]"
            r = StepRun(*x)
            first, length = r.first, r.length
            if first + length > n_steps:
                raise PlanError(f"plan: {where} runs past the chain's {n_steps} steps")
            if seen[first:first + length].any():
                raise PlanError(f"plan: {where} names a step that another run names")
            seen[first:first + length] = True
            if r.a > first or (r.b and first + length - 1 + r.b >= n_steps):
                raise PlanError(f"plan: {where}: a quilt node lies outside the chain")
            runs.append(r)
        return cls(kind, order, runs, attrs, epsilon, listed)

    # -- text -----------------------------------------------------------------------------

    def run_label(self, run: StepRun) -> str:
        """``X5`` for one step, ``X33..X99968 (99,936 steps)`` for a run."""
        first = self.order[run.first]
        if run.length == 1:
            return first
        return f"{first}..{self.order[run.first + run.length - 1]} ({run.length:,} steps)"

    def run_quilt(self, run: StepRun) -> str:
        """The run's quilt: names for one step, offsets ``{i-a, i+b}`` for several."""
        return "{" + ", ".join(self.run_quilt_parts(run)) + "}"

    def run_quilt_parts(self, run: StepRun) -> tuple[str, ...]:
        """:meth:`run_quilt`'s members."""
        if run.length == 1:
            p = run.first
            return tuple(self.order[x] for x in ((p - run.a) if run.a else -1,
                                                 (p + run.b) if run.b else -1) if x >= 0)
        return tuple(([f"i-{run.a}"] if run.a else []) + ([f"i+{run.b}"] if run.b else []))


def _parse_ranges(x: Any, n_steps: int, where: str) -> np.ndarray:
    if not isinstance(x, list):
        raise pf._fail(where, "a list of [first, length] ranges", x)
    parts = []
    last = -1
    for k, r in enumerate(x):
        if not isinstance(r, list) or len(r) != 2:
            raise pf._fail(f"{where}[{k}]", "a [first, length] range", r)
        first = pf._int(r[0], f"{where}[{k}][0]", 0)
        length = pf._int(r[1], f"{where}[{k}][1]", 1)
        if first <= last or first + length > n_steps:
            raise PlanError(f"plan: {where}[{k}] is out of order, overlaps or runs past the "
                            "chain")
        last = first + length - 1
        parts.append(np.arange(first, first + length, dtype=np.int64))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


@renamed_keywords(eps="epsilon", node="sensitive")
def step_explanation(sensitive: str, quilt: tuple[str, ...], full: Any, near: tuple[str, ...],
                     run: StepRun, epsilon: float, n_nodes: int, time_reason: str) -> str:
    """One paragraph on a step's chain quilt for the sensitive step ``sensitive`` (the
    planner's wording, [ZOC22, Alg. 3])."""
    node = sensitive
    from quiltpriv.inference.influence import fmt_influence
    from quiltpriv.utils.format import fmt_set

    e, delta, scale = run.influence, run.sensitivity, run.scale
    # The price in the words of the planner, the report and ``quiltpriv quilts``.
    price = _price_words(node, near, e, delta, scale, epsilon)
    if not quilt:
        text = ("no quilt lowers the noise, so the trivial quilt (every attribute nearby) is "
                f"used: {price}.")
    else:
        remote = "R (not listed in a plan this large)" if full is None else \
            f"R = {fmt_set(full.remote)}"
        if full is not None and not full.remote:
            sep = (f"the quilt Q = {fmt_set(quilt)} is held fixed, which takes its nodes out "
                   f"of N (it separates nothing else: R = {{}})")
        else:
            sep = f"Q = {fmt_set(quilt)} d-separates {node!r} from {remote}"
        where = ""
        if run.member is not None and run.pair is not None:
            where = f" (under {run.member}, phi = {run.pair[0]} vs {run.pair[1]})"
        infl = f"max-influence e(Q|{node}) = {fmt_influence(e)}{where}"
        text = f"{sep}; {infl}; {price}."
    if run.optimal:
        m = n_nodes - 1
        total = f"{2**m}" if m <= 40 else f"2^{m}"
        text += (f" Least scale over all {total} quilts of {node!r} (exact: every other "
                 f"quilt is dominated by an evaluated candidate or ruled out by a bound; see "
                 f"docs/concepts.md).")
    else:
        text += f" Optimality not proven: {time_reason}."
    return text


def _check_steps(plans: object) -> StepPlans:
    if not isinstance(plans, StepPlans):
        raise PlanError(f"plans must be StepPlans, got {type(plans).__name__}")
    return plans


def step_windows(plans: StepPlans) -> tuple[np.ndarray, np.ndarray]:
    """Per step (plan order), the query attributes in its ``N``: indices ``[k0, k1)`` into
    ``plans.attributes`` (the query's attributes in chain order)."""
    _check_steps(plans)
    return _windows(len(plans.order), plans.attributes, plans.column("position"),
                    plans.column("a"), plans.column("b"))


def window_sensitivities(plans: StepPlans, query: Query) -> np.ndarray:
    """``Delta_{A&N} F`` of every step, each from ``query.sensitivity`` of its nearby query
    attributes (once per distinct window)."""
    check_query(query)
    k0, k1 = step_windows(plans)
    return _window_deltas(plans.order, plans.attributes, k0, k1, query)[0][:-1]


def window_fingerprint(query: Query, plans: StepPlans, sensitivities: np.ndarray,
                       canonical: Any) -> str:
    """SHA-256 of the query's definition and of every ``Delta_{A&N}`` a plan held as runs
    uses (:func:`quiltpriv.mechanisms.apmqm.query_fingerprint` for such a plan, linear in its
    steps).

    ``sensitivities`` are the query's ``Delta_{A&N}`` of each step (plan order), as
    :func:`window_sensitivities` recomputes them; ``canonical`` is
    :func:`~quiltpriv.mechanisms.apmqm.canonical_json`. The hashed bytes are the canonical JSON
    ``{"attributes", "delta_a", "format", "query"}`` (the query's attributes in chain order,
    ``Delta_A F``, :data:`WINDOW_FINGERPRINT_FORMAT`, ``query.to_dict()``), then, for each
    distinct window ``[k0, k1)`` of those attributes that a step's ``N`` holds (sorted), its
    two indices as little-endian int64, then the windows' ``Delta`` as little-endian float64.
    """
    check_query(query)
    k0, k1 = step_windows(plans)
    if not callable(canonical):
        raise ParameterError("canonical must be canonical_json")
    sens = np.asarray(sensitivities, dtype=np.float64) \
        if isinstance(sensitivities, np.ndarray) else None
    if sens is None or sens.shape != k0.shape:
        raise ParameterError("sensitivities must be an array of one Delta per step")
    keys, first = np.unique(np.stack([k0, k1], axis=1), axis=0, return_index=True)
    deltas = sens[first]
    if not np.all(np.isfinite(deltas)):
        raise QueryError("query fingerprint: a sensitivity is not a finite number")
    names = [plans.order[x] for x in plans.attributes.tolist()]
    head = canonical({"format": WINDOW_FINGERPRINT_FORMAT, "query": query.to_dict(),
                           "attributes": names,
                           "delta_a": float(query.sensitivity(query.attributes))})
    h = hashlib.sha256(head.encode("ascii"))
    h.update(keys.astype("<i8").tobytes())
    h.update(deltas.astype("<f8").tobytes())
    return h.hexdigest()


def runs_from_columns(positions: np.ndarray, a: np.ndarray, b: np.ndarray,
                      influence: np.ndarray, sensitivity: np.ndarray, scale: np.ndarray,
                      optimal: np.ndarray, considered: np.ndarray, members: Sequence[str],
                      member_idx: np.ndarray, pair_idx: np.ndarray, state_ids: np.ndarray,
                      states: Sequence[Sequence[Any]]) -> list[StepRun]:
    """Cut per-step columns (plan order) into runs of consecutive steps with equal choices.

    ``members[member_idx[j]]`` names step ``j``'s member (-1: none, and no pair); its pair
    is ``pair_idx[j]`` into ``states[state_ids[j]]``, the step's state values.
    """
    n = len(positions)
    if n == 0:
        return []
    same = np.zeros(n, dtype=bool)
    same[1:] = positions[1:] == positions[:-1] + 1
    for col in (a, b, influence, sensitivity, scale, optimal, considered, member_idx,
                state_ids):
        same[1:] &= col[1:] == col[:-1]
    same[1:] &= (pair_idx[1:] == pair_idx[:-1]).all(axis=1)
    starts = np.flatnonzero(~same)
    ends = np.concatenate([starts[1:], [n]])
    runs = []
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        m = int(member_idx[s])
        pv = None
        if m >= 0:
            st = states[int(state_ids[s])]
            pv = (jsonable(st[int(pair_idx[s, 0])]), jsonable(st[int(pair_idx[s, 1])]))
        runs.append(StepRun(int(positions[s]), e - s, int(a[s]), int(b[s]),
                            float(influence[s]), float(sensitivity[s]), float(scale[s]),
                            bool(optimal[s]), int(considered[s]),
                            None if m < 0 else members[m], pv))
    return runs


def _window_deltas(order: Sequence[str], attr_pos: np.ndarray, k0: np.ndarray,
                   k1: np.ndarray, query: Query,
                   time_limit: TimeLimit | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``query.sensitivity`` of the query attributes ``attr_pos[k0:k1]``, once per distinct
    window, then ``Delta_A F`` of all of them (at :data:`_FULL_WINDOW`, computed first); and,
    per step, whether its value was computed before ``time_limit`` passed."""
    names = list(map(order.__getitem__, attr_pos.tolist()))
    out = np.empty(len(k0) + 1)
    out[_FULL_WINDOW] = float(query.sensitivity(names))
    width = len(names) + 1
    keys, first, inverse = np.unique(k0 * width + k1, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    values = np.full(len(keys), np.nan)
    for j, (lo, hi) in enumerate(zip(k0[first].tolist(), k1[first].tolist(), strict=True)):
        if j % _CHECK_EVERY == 0 and _late(time_limit):
            break
        values[j] = out[_FULL_WINDOW] if (lo, hi) == (0, len(names)) else \
            float(query.sensitivity(names[lo:hi]))
    done = ~np.isnan(values[inverse])
    out[:-1] = values[inverse]
    return out, done


def _windows(n_steps: int, attr_pos: np.ndarray, pos: np.ndarray, a: np.ndarray,
             b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lo = np.where(a > 0, pos - a + 1, 0)
    hi = np.where(b > 0, pos + b - 1, n_steps - 1)
    return (np.searchsorted(attr_pos, lo, side="left"),
            np.searchsorted(attr_pos, hi, side="right"))


def _scales_up(delta: np.ndarray, e: np.ndarray, eps: float) -> np.ndarray:
    """:func:`~quiltpriv.mechanisms.quilt_price.quilt_scale` per step (``Delta / (eps - e)``
    exact, rounded up; 0 for ``Delta = 0`` and ``e <= eps``), once per distinct pair
    ``(Delta, e)``: the planner's own pricer, not a copy of it."""
    if len(delta) == 0:
        return np.zeros(0)
    if (delta == delta[0]).all() and (e == e[0]).all():  # one pair (every step trivial)
        return np.full(len(delta), quilt_scale(float(delta[0]), float(e[0]), eps))
    pairs, inverse = np.unique(np.stack([delta, e], axis=1), axis=0, return_inverse=True)
    scales = np.array([quilt_scale(d, x, eps) for d, x in pairs.tolist()])
    return scales[inverse.reshape(-1)]


@renamed_keywords(eps="epsilon")
def chain_step_plans(kind: type, theta: Any, query: Query, sensitive: Sequence[str], epsilon: float,
                     time_limit: TimeLimit | None, progress: bool,
                     list_sets: bool) -> StepPlans | None:
    """The plans of ``sensitive`` on a time series, or None where the chain search does not
    apply (:func:`quiltpriv.mechanisms.apmqm.plan`).

    On a directed chain with an additive sensitivity (a linear query, the fraction of time in
    a state) or an all-or-nothing one (a count, a histogram) the family
    ``{X_(i-a), X_(i+b)}`` holds an optimal quilt of every step (its ``N`` is every quilt's
    with those nearest nodes), and
    :func:`quiltpriv.mechanisms.chain_quilts.chain_least_quilts` finds it with the optimum
    proven, in time linear in ``T`` ([ZOC22, Alg. 3]). ``Delta_{A&N}`` is the query's own
    for each step's ``N``; the scale ``Delta / (eps - e)`` uses ``e`` rounded upwards. None:
    not a chain of at least :data:`~quiltpriv.mechanisms.chain_quilts.CHAIN_MIN_NODES` nodes,
    a general (custom) sensitivity, or numbers too small for float64 there.
    """
    from quiltpriv.mechanisms import chain_quilts as cq

    structure = query.sensitivity_structure
    if structure not in ("additive", "all-or-nothing") or len(theta.nodes) < cq.CHAIN_MIN_NODES:
        return None
    order = cq.chain_order(theta)
    if order is None:
        return None
    index = theta.index
    n_steps = len(order)
    positions = _positions(index, order, sensitive)
    attrs = query.attributes
    attr_pos = np.unique(np.fromiter(map(index.__getitem__, attrs), dtype=np.int64,
                                     count=len(attrs)))
    found = None
    weights = None if _late(time_limit) else _step_weights(query, index, n_steps, attr_pos,
                                                          time_limit)
    if weights is not None:
        try:
            found = cq.chain_least_quilts(theta, order, positions, weights[0], epsilon,
                                          time_limit=time_limit, progress=progress,
                                          cap=weights[1])
        except cq.ChainNotApplicable:
            return None
    elif structure == "all-or-nothing" and not _all_or_nothing(query):
        return None
    # the limit passed before the search began: every step the trivial quilt (below)
    n = len(positions)
    a = np.zeros(n, dtype=np.int64) if found is None else found.a.copy()
    b = np.zeros(n, dtype=np.int64) if found is None else found.b.copy()
    e = np.zeros(n) if found is None else found.influence.copy()
    optimal = np.zeros(n, dtype=bool) if found is None else found.optimal.copy()
    considered = np.ones(n, dtype=np.int64) if found is None else found.considered
    member = np.full(n, -1, dtype=np.int64) if found is None else found.member.copy()
    pair = np.full((n, 2), -1, dtype=np.int64) if found is None else found.pair.copy()
    k0, k1 = _windows(n_steps, attr_pos, positions, a, b)
    deltas, done = _window_deltas(order, attr_pos, k0, k1, query, time_limit)
    delta = deltas[:n]
    if not done.all():
        # the limit passed before these steps' Delta was known: the trivial quilt, whose
        # Delta_A was computed first (valid; flagged as not proven optimal)
        late = ~done
        a[late], b[late], e[late], optimal[late] = 0, 0, 0.0, False
        member[late], pair[late] = -1, -1
        delta[late] = deltas[_FULL_WINDOW]
    scale = _scales_up(delta, e, epsilon)
    ids, states = _state_ids(theta, order, positions)
    runs = runs_from_columns(positions, a, b, e, delta, scale, optimal, considered,
                             theta.names, member, pair, ids, states)
    return StepPlans(kind, order, runs, attr_pos, epsilon, list_sets)


#: :func:`_window_deltas` puts ``Delta_A F`` (the trivial quilt's) after the steps' values.
_FULL_WINDOW = -1

#: Check the time limit once per this many sensitivities computed one by one.
_CHECK_EVERY = 256


def _late(time_limit: TimeLimit | None) -> bool:
    return passed(time_limit)


def _positions(index: Any, order: tuple[str, ...], sensitive: Sequence[str]) -> np.ndarray:
    """Chain positions of ``sensitive`` (C-level passes; every step in order: a range)."""
    if len(sensitive) == len(order) and tuple(sensitive) == order:
        return np.arange(len(order), dtype=np.int64)
    return np.fromiter(map(index.__getitem__, sensitive), dtype=np.int64,
                       count=len(sensitive))


def _all_or_nothing(query: Query) -> bool:
    """Whether ``Delta_B`` is ``Delta_A`` once ``B`` holds a query attribute, else 0."""
    cap = float(query.sensitivity(query.attributes))
    return query.sensitivity(()) == 0.0 and all(query.sensitivity((v,)) == cap
                                                 for v in dict.fromkeys(query.attributes))


def _step_weights(query: Query, index: Any, n_steps: int, attr_pos: np.ndarray,
                  time_limit: TimeLimit | None) -> tuple[np.ndarray, float | None] | None:
    """Per step, ``Delta`` of that step alone (and the cap of an all-or-nothing query), as
    :func:`~quiltpriv.mechanisms.chain_quilts.chain_least_quilts` takes them; None when the
    time limit passes first (one sensitivity per query attribute: 500,000 of them on a
    year of minutes)."""
    weights = np.zeros(n_steps)
    if query.sensitivity_structure == "all-or-nothing":
        if not _all_or_nothing(query):
            return None
        weights[attr_pos] = 1.0
        return weights, float(query.sensitivity(query.attributes))
    for k, v in enumerate(dict.fromkeys(query.attributes)):
        if k % _CHECK_EVERY == 0 and _late(time_limit):
            return None
        weights[index[v]] = query.sensitivity((v,))
    return weights, None


def _state_ids(theta: Any, order: tuple[str, ...],
               positions: np.ndarray) -> tuple[np.ndarray, list[Sequence[Any]]]:
    """Per step, an index into the distinct state lists of the steps (C-level passes)."""
    per_step = list(map(theta.states.__getitem__, map(order.__getitem__, positions.tolist())))
    distinct = list(dict.fromkeys(per_step))
    if len(distinct) == 1:
        return np.zeros(len(positions), dtype=np.int64), distinct
    number = {st: k for k, st in enumerate(distinct)}
    return np.fromiter(map(number.__getitem__, per_step), dtype=np.int64,
                       count=len(per_step)), distinct
