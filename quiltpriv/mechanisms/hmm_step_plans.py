"""The per-node plans of a hidden Markov model, held as runs: linear in the series, not its square.

The HMM search (:mod:`quiltpriv.mechanisms.hmm_quilts`) gives each hidden state ``H_t`` and
observation ``X_t`` a quilt of observations around a window (``left`` observations of ``N``
before step ``t``, ``right`` after it), a band of observations past each end of the window and
the hidden state beyond the band (none where the band reaches the series' end), and, for a
hidden node, possibly its own observation ``X_t``. In the middle of a homogeneous series every
step makes the same choice, at the same offsets from ``t``, with the same numbers.
:class:`HMMStepPlans` keeps the choices as runs of consecutive steps of one kind (hidden or
observed) that share them, as :class:`~quiltpriv.mechanisms.step_plans.StepPlans` does for a
chain, and is a read-only sequence of :class:`~quiltpriv.mechanisms.apmqm.SensitivePlan` in
step order (``H_t`` before ``X_t``), each made when it is asked for. A plan of every node of a
10,000-step HMM is then a few hundred runs in memory and in its JSON
(``"quiltpriv-plan/hmm-runs-1"``) instead of 20,000 records, and its query fingerprint
(:meth:`HMMStepPlans.fingerprint`) is linear in the steps.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, cast, overload

import numpy as np

import quiltpriv.mechanisms.plan_fields as pf
from quiltpriv.errors import ParameterError, PlanError, QueryError
from quiltpriv.mechanisms.step_plans import (
    TIME_LIMIT_REASON,
    StepPlans,
    _scales_up,
    _sequence_index,
    step_explanation,
)
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.serialize import jsonable

__all__ = ["HMMStepPlans"]

#: The fingerprint format of an HMM plan held as runs (:meth:`HMMStepPlans.fingerprint`).
HMM_FINGERPRINT_FORMAT = "quiltpriv-query-fingerprint/hmm-windows-1"


class HMMRun(NamedTuple):
    """Consecutive steps ``first .. first + length - 1`` (0-based) of one kind sharing a choice.

    ``left`` / ``right``: the observations of ``N`` on each side of step ``t`` (-1: no quilt
    node on that side, ``N`` runs to the end); ``center``: ``X_t`` is in ``Q`` (hidden nodes
    only); ``band_left`` / ``band_right``: the first (last) observation of ``Q`` on that side is
    ``X_(t - band_left)`` (``X_(t + band_right)``), with the hidden state just beyond it in
    ``Q`` too; -1: the band reaches the series' end (no hidden state there); 0 where that
    side has no quilt node.
    """

    first: int
    length: int
    observed: bool
    left: int
    right: int
    center: bool
    band_left: int
    band_right: int
    influence: float
    sensitivity: float
    scale: float
    optimal: bool
    considered: int
    member: str | None
    pair: tuple[Any, Any] | None


_RUN_FIELDS = HMMRun._fields

#: :class:`HMMRun`'s fields as the run reader checks them (member and pair follow).
_RUN_SPEC: tuple[pf.RunField, ...] = (
    ("first", "int", 0), ("length", "int", 1), ("observed", "bool", 0), ("left", "int", -1),
    ("right", "int", -1), ("center", "bool", 0), ("band_left", "int", -1),
    ("band_right", "int", -1), ("influence", "number", 0), ("sensitivity", "number", 0),
    ("scale", "number", 0), ("optimal", "bool", 0), ("considered", "int", 1))


def _check_run_shape(r: HMMRun, n_steps: int, where: str) -> None:
    """Refuse a run whose quilt nodes lie outside the series or contradict each other."""
    last = r.first + r.length - 1
    if r.first < 0 or r.length < 1 or last >= n_steps:
        raise PlanError(f"plan: {where} runs past the series' {n_steps} steps")
    if r.observed and r.center:
        raise PlanError(f"plan: {where}: an observation's quilt cannot hold itself")
    if r.left >= 0:
        if r.first - r.left - 1 < 0:
            raise PlanError(f"plan: {where}: a quilt node lies before the series' start")
        if r.band_left != -1 and not (r.band_left > r.left and r.first - r.band_left - 1 >= 0):
            raise PlanError(f"plan: {where}: its left band is not past its window")
    elif r.band_left != 0:
        raise PlanError(f"plan: {where}: a band on a side without quilt nodes")
    if r.right >= 0:
        if last + r.right + 1 > n_steps - 1:
            raise PlanError(f"plan: {where}: a quilt node lies past the series' end")
        if r.band_right != -1 and not (r.band_right > r.right
                                       and last + r.band_right + 1 <= n_steps - 1):
            raise PlanError(f"plan: {where}: its right band is not past its window")
    elif r.band_right != 0:
        raise PlanError(f"plan: {where}: a band on a side without quilt nodes")


class HMMStepPlans(StepPlans):
    """The sensitive nodes' plans of a hidden Markov model, as runs (a sequence of
    ``SensitivePlan`` in step order, ``H_t`` before ``X_t``).

    Parameters
    ----------
    kind : type
        :class:`~quiltpriv.mechanisms.apmqm.SensitivePlan`, what a node is made as.
    hidden, observed : tuple of str
        The hidden chain ``H_1 .. H_T`` and each step's observation.
    runs : sequence of HMMRun
        Their nodes are the sensitive ones (each at most once).
    epsilon : float
    """

    __slots__ = ("hidden", "observed", "_run_of", "_step")

    #: The runs' type (a subclass holds quilts of another shape).
    _run_type: type[tuple[Any, ...]] = HMMRun

    def _check_shape(self, run: Any, n_steps: int, where: str) -> None:
        """Refuse a run whose quilt nodes lie outside the series or contradict each other."""
        _check_run_shape(run, n_steps, where)

    def __init__(self, kind: type, hidden: tuple[str, ...], observed: tuple[str, ...],
                 runs: Sequence[Any], epsilon: float) -> None:
        if not isinstance(hidden, tuple) or not isinstance(observed, tuple) \
                or len(hidden) != len(observed) or len(hidden) < 2 \
                or not all(isinstance(v, str) for v in hidden + observed):
            raise PlanError("HMM step plans: hidden and observed must be tuples of node names "
                            "of equal length (at least 2)")
        run_type = self._run_type
        if isinstance(runs, str) or not isinstance(runs, Sequence) or not runs \
                or not all(isinstance(r, run_type) for r in runs):
            raise PlanError("HMM step plans: runs must be a non-empty sequence of "
                            f"{run_type.__name__}")
        n_steps = len(hidden)
        for k, r in enumerate(runs):
            self._check_shape(r, n_steps, f"sensitive.runs[{k}]")
        lengths = np.fromiter((r.length for r in runs), dtype=np.int64, count=len(runs))
        first = np.fromiter((r.first for r in runs), dtype=np.int64, count=len(runs))
        obs = np.fromiter((r.observed for r in runs), dtype=np.int64, count=len(runs))
        run_of = np.repeat(np.arange(len(runs), dtype=np.int64), lengths)
        step = np.repeat(first, lengths) + (np.arange(int(lengths.sum()))
                                            - np.repeat(np.cumsum(lengths) - lengths, lengths))
        key = 2 * step + np.repeat(obs, lengths)
        perm = np.argsort(key, kind="stable")
        key = key[perm]
        if key.size > 1 and np.any(key[1:] == key[:-1]):
            raise PlanError("plan: a sensitive node is named by two runs")
        super().__init__(kind, hidden + observed, (), np.zeros(0, dtype=np.int64), epsilon,
                         False)
        self.runs = cast(Any, tuple(runs))
        self._starts = np.array([0, key.size], dtype=np.int64)
        self.hidden, self.observed = hidden, observed
        self._run_of, self._step = run_of[perm], step[perm]

    # -- the sequence ---------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self._step.size)

    @overload
    def __getitem__(self, j: int) -> Any: ...

    @overload
    def __getitem__(self, j: slice) -> tuple[Any, ...]: ...

    def __getitem__(self, j: int | slice) -> Any:
        if isinstance(j, slice):
            return tuple(self[k] for k in range(*j.indices(len(self))))
        k = _sequence_index(j, len(self))
        return self._make(self.runs[int(self._run_of[k])], int(self._step[k]))

    def __iter__(self) -> Iterator[Any]:
        for r, t in zip(self._run_of.tolist(), self._step.tolist(), strict=True):
            yield self._make(self.runs[r], t)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HMMStepPlans):
            return (self.hidden == other.hidden and self.observed == other.observed
                    and self.runs == other.runs and self.epsilon == other.epsilon)
        if isinstance(other, tuple):
            return len(other) == len(self) and all(x == y for x, y in zip(self, other,
                                                                           strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.hidden, self.observed, self.runs, self.epsilon))

    def __repr__(self) -> str:
        return (f"HMMStepPlans({len(self)} nodes of a {len(self.hidden)}-step hidden Markov "
                f"model in {len(self.runs)} runs)")

    def __reduce__(self) -> Any:
        return (HMMStepPlans, (self.kind, self.hidden, self.observed, self.runs, self.epsilon))

    # -- per-node views -------------------------------------------------------------------

    def _hmm_runs(self) -> tuple[HMMRun, ...]:
        return cast(tuple[HMMRun, ...], self.runs)

    def node_at(self, run: Any, offset: int) -> str:
        """The name of the ``offset``-th node of ``run``."""
        return (self.observed if run.observed else self.hidden)[run.first + offset]

    def nodes(self) -> tuple[str, ...]:
        """The sensitive nodes' names, in plan (step) order."""
        obs = np.array([r.observed for r in self._hmm_runs()], dtype=bool)
        kind = obs[self._run_of]
        return tuple((self.observed if o else self.hidden)[t]
                     for o, t in zip(kind.tolist(), self._step.tolist(), strict=True))

    @renamed_keywords(node="sensitive")
    def index(self, sensitive: Any, start: int = 0, stop: int | None = None) -> int:
        """Plan index of the sensitive node ``sensitive`` (ValueError if it is not one)."""
        node = sensitive
        if self._where is None:
            self._where = {v: k for k, v in enumerate(self.nodes())}
        k = self._where.get(node) if isinstance(node, str) else None
        if k is None or not start <= k < (len(self) if stop is None else stop):
            raise ValueError(f"{node!r} is not a sensitive node of this plan")
        return k

    def column(self, name: str) -> np.ndarray:
        """One field of :class:`HMMRun` per node in plan order (``"step"``: each one's ``t``)."""
        if name == "step":
            return self._step.copy()
        k = cast(Any, self._run_type)._fields.index(name)
        return np.array([r[k] for r in self.runs])[self._run_of]

    def binding_index(self) -> int:
        """Plan index of the first node of largest scale."""
        return int(np.argmax(self.column("scale")))

    def run_indices(self) -> np.ndarray:
        """Per node (plan order), the index of its run."""
        return self._run_of.copy()

    def binding_run(self) -> int:
        """Index of the run holding :meth:`binding_index`."""
        return int(self._run_of[self.binding_index()])

    def run_head(self, i: int) -> int:
        """Plan index of the first node of run ``i``."""
        return int(np.flatnonzero(self._run_of == i)[0])

    def describe(self) -> str:
        """The sentence above the table of runs in :meth:`Plan.explain`."""
        return (f"{len(self):,} sensitive nodes of a {len(self.hidden):,}-step hidden Markov "
                f"model, in {len(self.runs):,} runs of steps of one kind with the same quilt "
                "(offsets from the step i) and the same numbers:")

    # -- one node -------------------------------------------------------------------------

    def _shape(self, run: HMMRun, t: int) -> tuple[int, int, int, int]:
        """Step ``t``'s window ``X_lo .. X_hi`` of ``N`` and its band ends ``X_blo``,
        ``X_bhi`` (the first and last observation of ``Q``)."""
        n_steps = len(self.hidden)
        lo = 0 if run.left < 0 else t - run.left
        hi = n_steps - 1 if run.right < 0 else t + run.right
        blo = 0 if run.band_left < 0 else t - run.band_left
        bhi = n_steps - 1 if run.band_right < 0 else t + run.band_right
        return lo, hi, blo, bhi

    def quilt_at(self, run: HMMRun, t: int) -> tuple[str, ...]:
        """Step ``t``'s quilt in step order (a hidden state before an observation)."""
        lo, hi, blo, bhi = self._shape(run, t)
        out: list[str] = []
        if run.left >= 0:
            if blo > 0:
                out.append(self.hidden[blo - 1])
            out.extend(self.observed[blo:lo])
        if run.center:
            out.append(self.observed[t])
        if run.right >= 0:
            out.extend(self.observed[hi + 1:bhi + 1])
            if bhi < len(self.hidden) - 1:
                out.append(self.hidden[bhi + 1])
        return tuple(out)

    def near_at(self, run: HMMRun, t: int) -> tuple[str, ...]:
        """The observations in step ``t``'s ``N``, in step order."""
        lo, hi, _, _ = self._shape(run, t)
        if run.center:
            return self.observed[lo:t] + self.observed[t + 1:hi + 1]
        return self.observed[lo:hi + 1]

    def _make(self, run: Any, p: int) -> Any:
        node = (self.observed if run.observed else self.hidden)[p]
        quilt, near = self.quilt_at(run, p), self.near_at(run, p)
        text = step_explanation(node, quilt, None, near, run, self.epsilon,
                                2 * len(self.hidden), TIME_LIMIT_REASON)
        return self.kind(
            sensitive=node, quilt=quilt, nearby=None, remote=None, nearby_attributes=near,
            influence=run.influence, sensitivity=run.sensitivity, scale=run.scale,
            quilts_considered=run.considered, optimal=run.optimal, explanation=text,
            influence_member=run.member, influence_pair=run.pair,
            # only the time limit stops the HMM search short of the optimum
            status="optimal" if run.optimal else "time_limit")

    # -- the query's sensitivities and fingerprint ----------------------------------------

    def windows(self) -> np.ndarray:
        """Per node (plan order), its observations of ``N`` as ``[k0, k1, hole]``: the
        observations ``k0 .. k1 - 1`` (step indices) except ``hole`` (-1: none)."""
        n_steps = len(self.hidden)
        left, right = self.column("left"), self.column("right")
        center = self.column("center").astype(bool)
        t = self._step
        k0 = np.where(left < 0, 0, t - left)
        k1 = np.where(right < 0, n_steps, t + right + 1)
        return np.stack([k0, k1, np.where(center, t, -1)], axis=1).astype(np.int64)

    def sensitivities(self, query: Query) -> np.ndarray:
        """``Delta_{A&N} F`` of every node, from ``query.sensitivity`` of its nearby
        observations (once per distinct window)."""
        check_query(query)
        win = self.windows()
        names = self.observed
        out = np.empty(len(win))
        cache: dict[tuple[int, int, int], float] = {}
        for j, (k0, k1, h) in enumerate(win.tolist()):
            d = cache.get((k0, k1, h))
            if d is None:
                near = names[k0:k1] if h < 0 else names[k0:h] + names[h + 1:k1]
                d = cache[k0, k1, h] = float(query.sensitivity(near))
            out[j] = d
        return out

    def fingerprint(self, query: Query, sensitivities: np.ndarray, canonical: Any) -> str:
        """SHA-256 of the query's definition and of every ``Delta_{A&N}`` the plan uses.

        The hashed bytes are the canonical JSON ``{"attributes", "delta_a", "format",
        "query"}`` (the observations in step order, ``Delta_A F``,
        :data:`HMM_FINGERPRINT_FORMAT`, ``query.to_dict()``), then each distinct window
        ``[k0, k1, hole]`` of :meth:`windows` (sorted) as little-endian int64, then the
        windows' ``Delta`` as little-endian float64.
        """
        check_query(query)
        if not callable(canonical):
            raise ParameterError("canonical must be canonical_json")
        win = self.windows()
        sens = np.asarray(sensitivities, dtype=np.float64) \
            if isinstance(sensitivities, np.ndarray) else None
        if sens is None or sens.shape != (len(win),):
            raise ParameterError("sensitivities must be an array of one Delta per node")
        keys, first = np.unique(win, axis=0, return_index=True)
        deltas = sens[first]
        if not np.all(np.isfinite(deltas)):
            raise QueryError("query fingerprint: a sensitivity is not a finite number")
        head = canonical({"format": HMM_FINGERPRINT_FORMAT, "query": query.to_dict(),
                          "attributes": list(self.observed),
                          "delta_a": float(query.sensitivity(query.attributes))})
        h = hashlib.sha256(head.encode("ascii"))
        h.update(keys.astype("<i8").tobytes())
        h.update(deltas.astype("<f8").tobytes())
        return h.hexdigest()

    def attributes_match(self, query: Query) -> bool:
        """Whether the query reads exactly the observations."""
        return sorted(set(query.attributes)) == sorted(self.observed)

    # -- JSON -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """``{"hidden": [...], "observed": [...], "runs": [[first, length, observed, left,
        right, center, band_left, band_right, influence, sensitivity, scale, optimal,
        considered, member, pair], ...]}`` (steps 0-based)."""
        return {"hidden": list(self.hidden), "observed": list(self.observed),
                "runs": [[r.first, r.length, r.observed, r.left, r.right, r.center,
                          r.band_left, r.band_right, r.influence, r.sensitivity, r.scale,
                          r.optimal, r.considered, r.member,
                          None if r.pair is None else list(r.pair)] for r in self._hmm_runs()]}

    @classmethod
    def from_dict(cls, kind: type, d: Any, epsilon: float) -> HMMStepPlans:
        """Parse :meth:`to_dict` output strictly (PlanError naming the first bad field)."""
        d = pf._keys(d, ("hidden", "observed", "runs"), "sensitive")
        hidden = pf._names(d["hidden"], "sensitive.hidden")
        observed = pf._names(d["observed"], "sensitive.observed")
        if len(hidden) != len(observed) or len(hidden) < 2 or set(hidden) & set(observed):
            raise PlanError("plan: sensitive.hidden and sensitive.observed must name the "
                            "series' steps (as many of each, at least 2, all distinct)")
        runs = [HMMRun(*x) for x in pf._run_rows(d["runs"], _RUN_SPEC)]
        return cls(kind, hidden, observed, runs, epsilon)

    # -- text -----------------------------------------------------------------------------

    def run_label(self, run: Any) -> str:
        """``H5`` for one node, ``H33..H9968 (9,936 steps)`` for a run."""
        first = self.node_at(run, 0)
        if run.length == 1:
            return first
        return f"{first}..{self.node_at(run, run.length - 1)} ({run.length:,} steps)"

    def run_quilt_parts(self, run: Any) -> tuple[str, ...]:
        """The run's quilt: names for one node, offsets from ``i`` for several."""
        if run.length == 1:
            return self.quilt_at(run, run.first)
        h, x = self.hidden[0].rstrip("0123456789"), self.observed[0].rstrip("0123456789")

        def at(name: str, d: int) -> str:
            return f"{name}(i{d:+d})" if d else f"{name}(i)"

        out: list[str] = []
        if run.left >= 0:
            if run.band_left < 0:
                out.append(f"{x}(start)..{at(x, -run.left - 1)}")
            else:
                out += [at(h, -run.band_left - 1),
                        f"{at(x, -run.band_left)}..{at(x, -run.left - 1)}"]
        if run.center:
            out.append(at(x, 0))
        if run.right >= 0:
            if run.band_right < 0:
                out.append(f"{at(x, run.right + 1)}..{x}(end)")
            else:
                out += [f"{at(x, run.right + 1)}..{at(x, run.band_right)}",
                        at(h, run.band_right + 1)]
        return tuple(out)


def hmm_runs(kind: type, order: Any, fq: Any, nodes: Sequence[str], sensitivity: np.ndarray,
             scale: np.ndarray, names: Sequence[str], states: Sequence[Any],
             epsilon: float) -> HMMStepPlans | None:
    """The HMM search's result ``fq`` (:class:`~quiltpriv.mechanisms.hmm_quilts.HMMQuilts`
    of ``nodes``) as runs, or None when ``nodes`` are not in step order (``H_t`` before
    ``X_t``): then the plan keeps one record per node in the order given.

    ``sensitivity`` and ``scale`` are each node's ``Delta_{A&N}`` and scale; ``names`` the
    members' names; ``states`` the hidden and the observed states (each node's values)."""
    n_steps = len(order.hidden)
    t = np.asarray(fq.step, dtype=np.int64)
    obs = np.asarray(fq.observed, dtype=bool)
    key = 2 * t + obs
    if key.size > 1 and not np.all(np.diff(key) > 0):
        return None
    none_l = fq.left >= t
    none_r = fq.right >= n_steps - 1 - t
    left = np.where(none_l, -1, fq.left)
    right = np.where(none_r, -1, fq.right)
    bl = np.where(none_l, 0, np.where(fq.band_left == 0, -1, t - fq.band_left))
    br = np.where(none_r, 0, np.where(fq.band_right == n_steps - 1, -1, fq.band_right - t))
    member = np.asarray(fq.member, dtype=np.int64)
    pair = np.where(member < 0, -1, fq.pair)
    cols = (obs, left, right, fq.center, bl, br, fq.influence, sensitivity, scale, fq.optimal,
            fq.considered, member, pair)
    runs: list[HMMRun] = []
    # the runs of each kind are interleaved in step order: cut each kind's nodes separately
    for kind_obs in (False, True):
        sel = np.flatnonzero(obs == kind_obs)
        if not sel.size:
            continue
        s_same = np.zeros(sel.size, dtype=bool)
        s_same[1:] = t[sel[1:]] == t[sel[:-1]] + 1
        for c in cols[1:]:
            c = np.asarray(c)[sel]
            s_same[1:] &= c[1:] == c[:-1]
        cut = np.flatnonzero(~s_same)
        ends = np.concatenate([cut[1:], [sel.size]])
        st = states[1 if kind_obs else 0]
        for s, e in zip(cut.tolist(), ends.tolist(), strict=True):
            j = int(sel[s])
            m = int(member[j])
            pv = None
            if m >= 0:
                p = int(fq.pair[j])
                if kind_obs:
                    pv = (jsonable(st[p // len(st)]), jsonable(st[p % len(st)]))
                else:
                    pv = ((jsonable(st[0]), jsonable(st[1])) if p == 1
                          else (jsonable(st[1]), jsonable(st[0])))
            runs.append(HMMRun(
                int(t[j]), e - s, kind_obs, int(left[j]), int(right[j]), bool(fq.center[j]),
                int(bl[j]), int(br[j]), float(fq.influence[j]), float(sensitivity[j]),
                float(scale[j]), bool(fq.optimal[j]), int(fq.considered[j]),
                None if m < 0 else names[m], pv))
    runs.sort(key=lambda r: (r.first, r.observed))
    return HMMStepPlans(kind, order.hidden, order.observed, runs, epsilon)


def hmm_numbers(order: Any, fq: Any, query: Query,
                epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """Each node's ``Delta_{A&N}`` (the query's own, once per distinct ``N``: the same
    observations give the same value) and scale ``Delta / (eps - e)`` rounded up (once per
    distinct pair), for the HMM search's result ``fq`` ([ZOC22, Alg. 3]); C-level and numpy
    passes over the nodes, one sensitivity per distinct window."""
    t = np.asarray(fq.step, dtype=np.int64)
    n = len(t)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    lo = t - np.asarray(fq.left, dtype=np.int64)
    hi = t + np.asarray(fq.right, dtype=np.int64)
    mid = np.where(np.asarray(fq.center, dtype=bool), t, -1)
    width = len(order.hidden) + 2
    if width**3 < 2**62:
        _, first, inverse = np.unique((lo * width + hi) * width + (mid + 1),
                                      return_index=True, return_inverse=True)
    else:  # pragma: no cover - a series of over a million steps
        _, first, inverse = np.unique(np.stack([lo, hi, mid], axis=1), axis=0,
                                      return_index=True, return_inverse=True)
    deltas = np.array([float(query.sensitivity(fq.nearby_observed(int(j), order)))
                       for j in first.tolist()])
    delta = deltas[np.asarray(inverse).reshape(-1)]
    return delta, _scales_up(delta, np.asarray(fq.influence, dtype=np.float64), epsilon)
