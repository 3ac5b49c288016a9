"""The structure and tables :func:`quiltpriv.model.learning.learn_theta` learns.

The search for the DAG over the discretised parameters (pgmpy's hill climbing or PC, bounded by
a score-evaluation budget and a deadline seen at every scored move), the required and forbidden
edges, and the BDeu posterior-mean tables of one DAG. Helpers of the learner, private to the
model package.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from quiltpriv.errors import ModelError, ParameterError

LearningMethod = Literal["hill_climb", "pc"]
Score = Literal["bdeu", "bic", "k2"]


def _edge_list(edges: Iterable[Any] | None, params: Sequence[str], what: str
               ) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for e in edges or ():
        if not isinstance(e, tuple | list) or len(e) != 2:
            raise ParameterError(f"{what}: an edge is a (parent, child) pair, got {e!r}")
        a, b = e
        for x in (a, b):
            if x not in params:
                raise ParameterError(f"{what}: edge {a!r} -> {b!r} names {x!r}, which is not "
                                     f"a parameter ({', '.join(params)})")
        if a == b:
            raise ParameterError(f"{what}: edge {a!r} -> {b!r} is a self-loop")
        if (a, b) not in out:
            out.append((a, b))
    return out


class _Stop(Exception):
    """Raised inside pgmpy's move generator when the budget or the time limit runs out."""


@dataclass
class _SearchBound:
    """Counts score evaluations and checks the deadline at each (hill climbing's only loop
    that can run long is the scoring of candidate moves)."""

    budget: int
    deadline: float | None
    evaluations: int = 0
    steps: int = 0
    stopped: str | None = None
    last_best: float = -math.inf

    def tick(self) -> None:
        self.evaluations += 1
        if self.evaluations > self.budget:
            self.stopped = "evaluation_budget"
            raise _Stop
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.stopped = "time_limit"
            raise _Stop


def _learn_structure(codes: np.ndarray, cards: Sequence[int], method: LearningMethod,
                     score: Score, ess: float, max_indegree: int, max_iter: int,
                     required: list[tuple[int, int]], forbidden: list[tuple[int, int]],
                     significance: float, bound: _SearchBound) -> list[tuple[int, int]]:
    """Edges (as integer node indices) learned by pgmpy. Integers, not names: pgmpy breaks
    ties in set iteration order, which for strings changes with the process's hash seed.

    Hill climbing is pgmpy's own loop (tabu list and all); ``bound`` is checked at every
    scored move. When it stops the search, the DAG of the last completed step (the best so
    far) is returned and ``bound.stopped`` says why."""
    with warnings.catch_warnings():
        # pgmpy 1.1 warns about its own deprecations on import and use; not the user's concern.
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        from quiltpriv.utils.progress import quiet_tqdm_auto

        quiet_tqdm_auto()
        from pgmpy.causal_discovery import PC, ExpertKnowledge, HillClimbSearch
        from pgmpy.structure_score import BIC, K2, BDeu

        class _BoundedHillClimb(HillClimbSearch):
            """pgmpy's hill climbing whose move generator ticks ``bound``; it remembers the
            current model (pgmpy passes its live DAG, changed only after a step's best move
            is chosen), so a stop mid-step leaves the last completed step's DAG."""

            current: Any = None

            def _legal_operations_dag(self, *args: Any, **kwargs: Any) -> Any:
                bound.steps += 1
                bound.last_best = -math.inf
                type(self).current = kwargs["model"] if "model" in kwargs else args[0]
                for op in super()._legal_operations_dag(*args, **kwargs):
                    bound.tick()
                    bound.last_best = max(bound.last_best, float(op[1]))
                    yield op

        n = codes.shape[1]
        frame = pd.DataFrame({k: codes[:, k] for k in range(n)})
        states = {k: list(range(cards[k])) for k in range(n)}
        expert = ExpertKnowledge(required_edges=list(required), forbidden_edges=list(forbidden))
        if method == "hill_climb":
            scorer = {"bdeu": lambda: BDeu(frame, equivalent_sample_size=ess,
                                           state_names=states),
                      "bic": lambda: BIC(frame, state_names=states),
                      "k2": lambda: K2(frame, state_names=states)}[score]()
            est = _BoundedHillClimb(scoring_method=scorer, max_indegree=max_indegree,
                                    expert_knowledge=expert, return_type="dag",
                                    max_iter=max_iter, show_progress=False)
        else:
            est = PC(variant="stable", ci_test="chi_square", return_type="dag",
                     significance_level=significance, max_cond_vars=max_indegree,
                     expert_knowledge=expert, enforce_expert_knowledge=True, n_jobs=1,
                     show_progress=False)
        try:
            est.fit(frame)
            graph = est.causal_graph_
        except _Stop:
            graph = _BoundedHillClimb.current
            if graph is None:  # stopped before pgmpy built its start DAG: no edges
                return _enforce([], required, forbidden, n)
        except ValueError as exc:
            raise ModelError(f"structure learning failed: {exc}") from exc
        edges = [(int(a), int(b)) for a, b in graph.edges()]
    return _enforce(edges, required, forbidden, n)


def _enforce(edges: list[tuple[int, int]], required: list[tuple[int, int]],
             forbidden: list[tuple[int, int]], n: int) -> list[tuple[int, int]]:
    """Orient required edges as declared (PC may return one reversed) and check the result."""
    import networkx as nx

    out = set(edges)
    for a, b in required:
        if (b, a) in out:
            out.discard((b, a))
        out.add((a, b))
    bad = sorted(out & set(forbidden))
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(out)
    if bad or not nx.is_directed_acyclic_graph(g):
        raise ModelError("structure learning returned a graph that breaks the required or "
                         "forbidden edges; use method='hill_climb'")
    return sorted(out)


def _bdeu_tables(codes: np.ndarray, cards: Sequence[int], parents: Mapping[int, Sequence[int]],
                 ess: float) -> dict[int, np.ndarray]:
    """BDeu posterior-mean tables, axes ``(node, *parents)``.

    ``P(x = k | pa = j) = (N_jk + ess / (r q)) / (N_j + ess / q)`` with ``r`` the node's
    states and ``q`` its parents' joint states (pgmpy's ``BayesianEstimator`` with
    ``prior_type="BDeu"``; tests check they agree).
    """
    out: dict[int, np.ndarray] = {}
    for v in range(codes.shape[1]):
        pa = list(parents.get(v, ()))
        shape = (cards[v],) + tuple(cards[p] for p in pa)
        counts = np.zeros(shape)
        np.add.at(counts, tuple(codes[:, k] for k in [v, *pa]), 1.0)
        r = cards[v]
        q = math.prod(shape[1:])
        table = (counts + ess / (r * q)) / (counts.sum(axis=0, keepdims=True) + ess / q)
        out[v] = table
    return out
