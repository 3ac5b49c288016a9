"""The Markov Quilt Mechanism's per-entry choices on a time series, held as runs.

On a chain or a hidden Markov model the MQM search ([ZOC22, Alg. 5]; the exact searches of
:mod:`quiltpriv.mechanisms.chain_quilts` and :mod:`quiltpriv.mechanisms.hmm_quilts`) gives
every entry of a homogeneous series' middle the same quilt up to a shift, with the same
numbers. :class:`NodeRuns` keeps those choices as *runs*: every ``stride``-th entry of the plan
(1 on a chain; 2 on an HMM, whose entries alternate ``H_t``, ``X_t``) from ``first`` on, with
one quilt as offsets in the plan's list of entries and one set of numbers. It is a read-only
sequence of :class:`~quiltpriv.mechanisms.mqm.NodeScale`, each made when it is asked for and
equal to the one the per-entry search would have made, so that ``MQMPlan.nodes`` keeps its
meaning while a 500,000-step plan is a few hundred runs in memory and in its JSON (the
``"node_runs"`` of :meth:`quiltpriv.mechanisms.mqm.MQMPlan.to_dict`).

The runs are found with array operations (linear in the series, no object per entry); each
run's scale is computed once, exactly and rounded up, as the per-entry path computes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, overload

import numpy as np

from quiltpriv.errors import PlanError
from quiltpriv.mechanisms.step_plans import _sequence_index

#: NodeRun (a record the MQM searches build) and find_runs (fed their arrays) are internal:
#: NodeRuns checks what it is given.
__all__ = ["NodeRuns"]


class NodeRun(NamedTuple):
    """Entries ``first, first + stride, ..., first + stride (length - 1)`` of a plan (indices in
    its list of entries) sharing a choice: the quilt as ``quilt_offsets`` from each entry's
    index (or, for a run of one entry whose quilt holds an entry not in the plan, ``quilt`` by
    name) and the numbers of :class:`~quiltpriv.mechanisms.mqm.NodeScale`."""

    first: int
    length: int
    stride: int
    quilt_offsets: tuple[int, ...] | None
    quilt: tuple[str, ...] | None
    nearby_read: int
    influence: float
    scale: float
    quilts_considered: int
    influence_member: str | None
    influence_pair: tuple[Any, Any] | None


class NodeRuns(Sequence[Any]):
    """The protected entries' choices of an MQM plan, as runs (a sequence of ``NodeScale``).

    Parameters
    ----------
    kind : type
        :class:`~quiltpriv.mechanisms.mqm.NodeScale`, what an entry is made as.
    names : tuple of str
        The protected entries, in plan order.
    runs : sequence of NodeRun
        Together they name every entry of ``names`` exactly once.

    Raises
    ------
    PlanError
        Runs that overlap, leave an entry out, run past the list or name a quilt entry
        outside it.
    """

    __slots__ = ("kind", "names", "runs", "_run_of")

    def __init__(self, kind: type, names: tuple[str, ...], runs: Sequence[NodeRun]) -> None:
        if not isinstance(kind, type):
            raise PlanError(f"MQM runs: kind must be a class, got {kind!r}")
        if not isinstance(names, tuple) or not all(isinstance(v, str) for v in names):
            raise PlanError("MQM runs: names must be a tuple of entry names")
        if isinstance(runs, str) or not isinstance(runs, Sequence) \
                or not all(isinstance(r, NodeRun) for r in runs):
            raise PlanError("MQM runs: runs must be a sequence of NodeRun")
        n = len(names)
        run_of = np.full(n, -1, dtype=np.int64)
        for k, r in enumerate(runs):
            if r.length < 1 or r.stride < 1 or r.first < 0 \
                    or r.first + r.stride * (r.length - 1) >= n:
                raise PlanError(f"MQM runs: run {k} lies outside the plan's {n} entries")
            if (r.quilt_offsets is None) == (r.quilt is None) or (
                    r.quilt is not None and r.length != 1):
                raise PlanError(f"MQM runs: run {k} needs quilt offsets, or a quilt by name "
                                "for one entry")
            idx = np.arange(r.first, r.first + r.stride * r.length, r.stride)
            if r.quilt_offsets is not None and r.quilt_offsets and (
                    idx[0] + min(r.quilt_offsets) < 0 or idx[-1] + max(r.quilt_offsets) >= n):
                raise PlanError(f"MQM runs: run {k} has a quilt entry outside the plan")
            if np.any(run_of[idx] >= 0):
                raise PlanError(f"MQM runs: run {k} names an entry another run names")
            run_of[idx] = k
        if n and np.any(run_of < 0):
            raise PlanError("MQM runs: an entry is in no run")
        self.kind = kind
        self.names = names
        self.runs = tuple(runs)
        self._run_of = run_of

    # -- the sequence -------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, j: int) -> Any: ...

    @overload
    def __getitem__(self, j: slice) -> tuple[Any, ...]: ...

    def __getitem__(self, j: int | slice) -> Any:
        if isinstance(j, slice):
            return tuple(self[k] for k in range(*j.indices(len(self))))
        k = _sequence_index(j, len(self), "entries")
        return self._make(self.runs[int(self._run_of[k])], k)

    def __iter__(self) -> Iterator[Any]:
        runs, make = self.runs, self._make
        for k, r in enumerate(self._run_of.tolist()):
            yield make(runs[r], k)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NodeRuns):
            return (self.kind is other.kind and self.names == other.names
                    and self.runs == other.runs)
        if isinstance(other, tuple):
            return len(other) == len(self) and all(x == y for x, y in zip(self, other,
                                                                           strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.names, self.runs))

    def __repr__(self) -> str:
        return f"NodeRuns({len(self)} entries in {len(self.runs)} runs)"

    def __reduce__(self) -> Any:
        return (NodeRuns, (self.kind, self.names, self.runs))

    # -- views --------------------------------------------------------------------------------

    def _make(self, r: NodeRun, k: int) -> Any:
        names = self.names
        offsets = r.quilt_offsets
        quilt = (r.quilt or ()) if offsets is None else tuple(names[k + o] for o in offsets)
        return self.kind(node=names[k], quilt=quilt, nearby=None, remote=None,
                         influence=r.influence, scale=r.scale,
                         quilts_considered=r.quilts_considered,
                         influence_member=r.influence_member, influence_pair=r.influence_pair,
                         nearby_read=r.nearby_read)

    def node(self, name: str) -> Any:
        """The choice of the entry ``name`` (KeyError if it is not protected here)."""
        try:
            return self[self.names.index(name)]
        except ValueError:
            raise KeyError(name) from None

    def binding_index(self) -> int:
        """Plan index of the first entry of largest scale (as ``max`` over the entries)."""
        top = max(r.scale for r in self.runs)
        return min(r.first for r in self.runs if r.scale == top)

    def to_runs(self) -> list[dict[str, Any]]:
        """The runs as :func:`quiltpriv.mechanisms.mqm.node_runs` writes them (first and last
        entry by name, count, stride, the quilt and the numbers, exactly)."""
        out = []
        for r in sorted(self.runs, key=lambda r: r.first):
            d: dict[str, Any] = {"first": self.names[r.first],
                                 "last": self.names[r.first + r.stride * (r.length - 1)],
                                 "count": r.length, "stride": r.stride if r.length > 1 else 1}
            if r.quilt_offsets is None:
                d["quilt"] = list(r.quilt or ())
            else:
                d["quilt_offsets"] = list(r.quilt_offsets)
            d.update({"nearby_read": r.nearby_read, "influence": r.influence,
                      "scale": r.scale, "quilts_considered": r.quilts_considered,
                      "influence_member": r.influence_member,
                      "influence_pair": None if r.influence_pair is None
                      else [str(x) for x in r.influence_pair]})
            out.append(d)
        return out


def _starts(keys: np.ndarray, alone: np.ndarray) -> np.ndarray:
    """Positions (in ``keys``' rows) where a run starts: the first row, a row whose key differs
    from the row before, a row that must be alone and the row after one."""
    n = keys.shape[0]
    cut = np.zeros(n, dtype=bool)
    if n:
        cut[0] = True
        cut[1:] = np.any(keys[1:] != keys[:-1], axis=1) | alone[1:] | alone[:-1]
    return np.flatnonzero(cut)


def find_runs(kind: type, names: tuple[str, ...], stride: int, keys: np.ndarray, alone: np.ndarray,
              make: Callable[[int, int], NodeRun], *,
              expired: Callable[[], bool] | None = None,
              trivial: Callable[[int, int], NodeRun] | None = None,
              check_every: int = 256) -> tuple[NodeRuns, np.ndarray]:
    """Runs of the entries ``names`` whose rows of ``keys`` (one row per entry, every number
    that decides its quilt up to a shift and its numbers) are equal, every ``stride``-th entry
    (lane ``j % stride``); an entry with ``alone`` set is a run of its own. ``make(first,
    count)`` gives each run (its quilt and numbers from its first entry).

    ``expired`` is asked every ``check_every`` runs (the caller's deadline): once it says so,
    each lane's remaining entries become one run ``trivial(first, count)`` (the quilt ``{}``:
    valid, more noise). Returns the runs and, per entry, whether it was given the quilt
    ``{}`` that way.
    """
    runs: list[NodeRun] = []
    n = len(names)
    late = np.zeros(n, dtype=bool)
    for lane in range(min(stride, n)):
        idx = np.arange(lane, n, stride)
        starts = _starts(keys[idx], alone[idx])
        ends = np.append(starts[1:], idx.size)
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            if expired is not None and trivial is not None and not len(runs) % check_every \
                    and expired():
                runs.append(trivial(int(idx[s]), idx.size - s))
                late[idx[s:]] = True
                break
            runs.append(make(int(idx[s]), e - s))
    runs.sort(key=lambda r: r.first)
    return NodeRuns(kind, names, [r._replace(stride=stride if r.length > 1 else 1)
                            for r in runs]), late
