"""The per-node plans of a hidden Markov model read at a few observations, held as runs.

The few-step search (:mod:`quiltpriv.mechanisms.hmm_few_quilts`) gives each hidden state
``H_t`` and observation ``X_t`` a quilt ``X_B``: a subset ``B`` of the query's observation
steps ``S``, the same names whatever ``t`` (every other node is nearby). Far from the query
every step makes the same choice with the same numbers (its influence rounded up to a common
grid), so :class:`FewStepPlans` keeps the choices as runs of consecutive steps of one kind that
share them, as :class:`~quiltpriv.mechanisms.hmm_step_plans.HMMStepPlans` does for the
fraction of time: a plan of every node of a million-step ladder is a few thousand runs in
memory and in its JSON (``"quiltpriv-plan/hmm-few-runs-1"``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, NamedTuple, cast

import numpy as np

import quiltpriv.mechanisms.plan_fields as pf
from quiltpriv.errors import ParameterError, PlanError, QueryError
from quiltpriv.mechanisms.hmm_step_plans import HMMStepPlans
from quiltpriv.queries.query import Query, check_query
from quiltpriv.utils.serialize import jsonable

__all__ = ["FewStepPlans"]

#: The fingerprint format of a few-step HMM plan held as runs (:meth:`FewStepPlans.fingerprint`).
FEW_FINGERPRINT_FORMAT = "quiltpriv-query-fingerprint/hmm-few-1"


class FewRun(NamedTuple):
    """Consecutive steps ``first .. first + length - 1`` (0-based) of one kind sharing a choice:
    the quilt ``{X_s : s = steps[j], bit j of mask}`` (0: the quilt ``{}``) and its numbers."""

    first: int
    length: int
    observed: bool
    mask: int
    influence: float
    sensitivity: float
    scale: float
    optimal: bool
    considered: int
    member: str | None
    pair: tuple[Any, Any] | None


_FIELDS = FewRun._fields

#: :class:`FewRun`'s fields as the run reader checks them (member and pair follow).
_RUN_SPEC: tuple[pf.RunField, ...] = (
    ("first", "int", 0), ("length", "int", 1), ("observed", "bool", 0), ("mask", "int", 0),
    ("influence", "number", 0), ("sensitivity", "number", 0), ("scale", "number", 0),
    ("optimal", "bool", 0), ("considered", "int", 1))


class FewStepPlans(HMMStepPlans):
    """The sensitive nodes' plans of a hidden Markov model whose query reads the observations
    at ``steps``, as runs (a sequence of ``SensitivePlan`` in step order, ``H_t`` before
    ``X_t``).

    Parameters
    ----------
    kind : type
        :class:`~quiltpriv.mechanisms.apmqm.SensitivePlan`, what a node is made as.
    hidden, observed : tuple of str
        The hidden chain ``H_1 .. H_T`` and each step's observation.
    steps : tuple of int
        The query's observation steps (0-based, increasing, at most 62).
    runs : sequence of FewRun
        Their nodes are the sensitive ones (each at most once).
    epsilon : float
    """

    __slots__ = ("steps",)

    _run_type = FewRun

    def __init__(self, kind: type, hidden: tuple[str, ...], observed: tuple[str, ...],
                 steps: tuple[int, ...], runs: Sequence[FewRun], epsilon: float) -> None:
        if not isinstance(steps, tuple) or not steps or len(steps) > 62 \
                or not all(isinstance(s, int) and not isinstance(s, bool) for s in steps) \
                or list(steps) != sorted(set(steps)) or steps[0] < 0 \
                or steps[-1] >= len(observed):
            raise PlanError("plan: sensitive.steps must be the query's observation steps, "
                            "increasing, within the series")
        self.steps = steps
        super().__init__(kind, hidden, observed, runs, epsilon)

    def _check_shape(self, run: Any, n_steps: int, where: str) -> None:
        last = run.first + run.length - 1
        if run.first < 0 or run.length < 1 or last >= n_steps:
            raise PlanError(f"plan: {where} runs past the series' {n_steps} steps")
        if run.mask < 0 or run.mask >> len(self.steps):
            raise PlanError(f"plan: {where}: its mask names a step the query does not read")
        if run.observed and any(run.mask >> b & 1 and run.first <= s <= last
                                for b, s in enumerate(self.steps)):
            raise PlanError(f"plan: {where}: an observation's quilt cannot hold itself")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FewStepPlans):
            return (self.hidden == other.hidden and self.observed == other.observed
                    and self.steps == other.steps and self.runs == other.runs
                    and self.epsilon == other.epsilon)
        if isinstance(other, HMMStepPlans):
            return False
        return super().__eq__(other)

    def __hash__(self) -> int:
        return hash((self.hidden, self.observed, self.steps, self.runs, self.epsilon))

    def __repr__(self) -> str:
        return (f"FewStepPlans({len(self)} nodes of a {len(self.hidden)}-step hidden Markov "
                f"model read at {len(self.steps)} steps, in {len(self.runs)} runs)")

    def __reduce__(self) -> Any:
        return (FewStepPlans, (self.kind, self.hidden, self.observed, self.steps, self.runs,
                               self.epsilon))

    def describe(self) -> str:
        return (f"{len(self):,} sensitive nodes of a {len(self.hidden):,}-step hidden Markov "
                f"model read at {len(self.steps)} observations, in {len(self.runs):,} runs of "
                "steps of one kind with the same quilt and the same numbers:")

    # -- one node -------------------------------------------------------------------------

    def quilt_at(self, run: Any, t: int) -> tuple[str, ...]:
        """The quilt (the same for every step of the run), in step order."""
        return tuple(self.observed[s] for b, s in enumerate(self.steps) if run.mask >> b & 1)

    def near_at(self, run: Any, t: int) -> tuple[str, ...]:
        """The query's observations in ``N`` (those outside the quilt), in step order."""
        return tuple(self.observed[s] for b, s in enumerate(self.steps)
                     if not run.mask >> b & 1)

    def run_quilt_parts(self, run: Any) -> tuple[str, ...]:
        return self.quilt_at(run, run.first)

    # -- the query's sensitivities and fingerprint ----------------------------------------

    def windows(self) -> np.ndarray:
        """Per node (plan order), its quilt's mask: the query observations outside it are
        in ``N`` (with every other node)."""
        masks = np.array([r.mask for r in self._few_runs()], dtype=np.int64)
        return masks[self._run_of][:, None]

    def _few_runs(self) -> tuple[FewRun, ...]:
        return cast(tuple[FewRun, ...], self.runs)

    def sensitivities(self, query: Query) -> np.ndarray:
        """``Delta_{A&N} F`` of every node, from ``query.sensitivity`` of the query
        observations outside its quilt (once per distinct quilt)."""
        check_query(query)
        names = [self.observed[s] for s in self.steps]
        cache: dict[int, float] = {}
        for r in self._few_runs():
            if r.mask not in cache:
                cache[r.mask] = float(query.sensitivity(
                    tuple(x for b, x in enumerate(names) if not r.mask >> b & 1)))
        per_run = np.array([cache[r.mask] for r in self._few_runs()])
        return per_run[self._run_of]

    def fingerprint(self, query: Query, sensitivities: np.ndarray, canonical: Any) -> str:
        """SHA-256 of the query's definition and of every ``Delta_{A&N}`` the plan uses.

        The hashed bytes are the canonical JSON ``{"attributes", "delta_a", "format",
        "query", "steps"}`` (the observations, ``Delta_A F``, :data:`FEW_FINGERPRINT_FORMAT`,
        ``query.to_dict()``, the query's steps), then each distinct quilt mask (sorted) as
        little-endian int64, then their ``Delta`` as little-endian float64.
        """
        check_query(query)
        if not callable(canonical):
            raise ParameterError("canonical must be canonical_json")
        masks = self.windows()[:, 0]
        sens = np.asarray(sensitivities, dtype=np.float64) \
            if isinstance(sensitivities, np.ndarray) else None
        if sens is None or sens.shape != (len(masks),):
            raise ParameterError("sensitivities must be an array of one Delta per node")
        keys, first = np.unique(masks, return_index=True)
        deltas = sens[first]
        if not np.all(np.isfinite(deltas)):
            raise QueryError("query fingerprint: a sensitivity is not a finite number")
        head = canonical({"format": FEW_FINGERPRINT_FORMAT, "query": query.to_dict(),
                          "attributes": list(self.observed), "steps": list(self.steps),
                          "delta_a": float(query.sensitivity(query.attributes))})
        h = hashlib.sha256(head.encode("ascii"))
        h.update(keys.astype("<i8").tobytes())
        h.update(deltas.astype("<f8").tobytes())
        return h.hexdigest()

    def attributes_match(self, query: Query) -> bool:
        """Whether the query reads exactly the observations at :attr:`steps`."""
        return sorted(set(query.attributes)) == sorted(self.observed[s] for s in self.steps)

    # -- JSON -----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """``{"hidden": [...], "observed": [...], "steps": [...], "runs": [[first, length,
        observed, mask, influence, sensitivity, scale, optimal, considered, member, pair],
        ...]}`` (steps 0-based)."""
        return {"hidden": list(self.hidden), "observed": list(self.observed),
                "steps": list(self.steps),
                "runs": [[r.first, r.length, r.observed, r.mask, r.influence, r.sensitivity,
                          r.scale, r.optimal, r.considered, r.member,
                          None if r.pair is None else list(r.pair)] for r in self._few_runs()]}

    @classmethod
    def from_dict(cls, kind: type, d: Any, epsilon: float) -> FewStepPlans:
        """Parse :meth:`to_dict` output strictly (PlanError naming the first bad field)."""
        d = pf._keys(d, ("hidden", "observed", "steps", "runs"), "sensitive")
        hidden = pf._names(d["hidden"], "sensitive.hidden")
        observed = pf._names(d["observed"], "sensitive.observed")
        if len(hidden) != len(observed) or len(hidden) < 2 or set(hidden) & set(observed):
            raise PlanError("plan: sensitive.hidden and sensitive.observed must name the "
                            "series' steps (as many of each, at least 2, all distinct)")
        raw_steps = d["steps"]
        if not isinstance(raw_steps, list):
            raise pf._fail("sensitive.steps", "a list of step indices", raw_steps)
        steps = tuple(pf._int(s, f"sensitive.steps[{k}]", 0) for k, s in enumerate(raw_steps))
        runs = [FewRun(*x) for x in pf._run_rows(d["runs"], _RUN_SPEC)]
        return cls(kind, hidden, observed, steps, runs, epsilon)


def _few_runs(kind: type, order: Any, fq: Any, scale: np.ndarray, names: Sequence[str],
             states: Sequence[Any], epsilon: float) -> FewStepPlans | None:
    """The few-step search's result ``fq``
    (:class:`~quiltpriv.mechanisms.hmm_few_quilts.FewQuilts`) as runs, or None when its nodes
    are not in step order (``H_t`` before ``X_t``): then the plan keeps one record per node.

    ``scale`` is each node's exact scale; ``names`` the members' names; ``states`` the hidden
    and the observed states (each node's values)."""
    t = np.asarray(fq.step, dtype=np.int64)
    obs = np.asarray(fq.observed, dtype=bool)
    key = 2 * t + obs
    if key.size > 1 and not np.all(np.diff(key) > 0):
        return None
    member = np.asarray(fq.member, dtype=np.int64)
    pair = np.where(member[:, None] < 0, -1, fq.pair)
    cols = (fq.mask, fq.influence, fq.delta, scale, fq.optimal, fq.considered, member,
            pair[:, 0], pair[:, 1])
    runs: list[FewRun] = []
    for kind_obs in (False, True):
        sel = np.flatnonzero(obs == kind_obs)
        if not sel.size:
            continue
        same = np.zeros(sel.size, dtype=bool)
        same[1:] = t[sel[1:]] == t[sel[:-1]] + 1
        for c in cols:
            c = np.asarray(c)[sel]
            same[1:] &= c[1:] == c[:-1]
        cut = np.flatnonzero(~same)
        ends = np.concatenate([cut[1:], [sel.size]])
        st = states[1 if kind_obs else 0]
        for s, e in zip(cut.tolist(), ends.tolist(), strict=True):
            j = int(sel[s])
            m = int(member[j])
            pv = None if m < 0 else (jsonable(st[int(pair[j, 0])]), jsonable(st[int(pair[j, 1])]))
            runs.append(FewRun(int(t[j]), e - s, kind_obs, int(fq.mask[j]),
                               float(fq.influence[j]), float(fq.delta[j]), float(scale[j]),
                               bool(fq.optimal[j]), int(fq.considered[j]),
                               None if m < 0 else names[m], pv))
    runs.sort(key=lambda r: (r.first, r.observed))
    return FewStepPlans(kind, order.hidden, order.observed,
                        tuple(int(s) for s in fq.steps.tolist()), runs, epsilon)
