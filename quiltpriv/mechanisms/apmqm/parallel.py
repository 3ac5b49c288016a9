"""Planning the sensitive attributes in parallel: batches of attributes on joblib workers.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from quiltpriv.inference.engines.base import DEFAULT_SETTINGS, EngineName, EngineSettings
from quiltpriv.mechanisms.apmqm.node_plan import _plan_node, _trivial_plan
from quiltpriv.mechanisms.apmqm.plan_types import INTERRUPTED_NOTE
from quiltpriv.mechanisms.apmqm.search import DEFAULT_MAX_CANDIDATES
from quiltpriv.mechanisms.apmqm.sensitive_plan import SensitivePlan
from quiltpriv.mechanisms.apmqm.shared import CancelToken, _cancelled
from quiltpriv.model.network import Theta
from quiltpriv.queries.query import Query
from quiltpriv.utils.time_limit import TimeLimit


def _plan_batch(theta: Theta, query: Query, nodes: Iterable[str], eps: float, max_table: int,
                wall_deadline: float | None, engine: EngineName,
                max_candidates: int = DEFAULT_MAX_CANDIDATES,
                list_sets: bool = True,
                settings: EngineSettings = DEFAULT_SETTINGS) -> list[SensitivePlan]:
    """:func:`plan_node` for a batch of attributes in one worker.

    The time limit travels as the wall-clock time it ends (``time.time()``; monotonic clocks
    are not comparable between processes or machines) and becomes a local
    :class:`~quiltpriv.utils.time_limit.TimeLimit` here.
    """
    limit = (None if wall_deadline is None else
             TimeLimit.ending_at(time.monotonic() + max(0.0, wall_deadline - time.time())))
    return [_plan_node(theta, query, node, eps, max_table, limit, engine, max_candidates,
                       None, list_sets, settings)[0] for node in nodes]


def _plan_parallel(theta: Theta, query: Query, sens: tuple[str, ...], eps: float,
                   max_table: int, wall_deadline: float | None, engine: EngineName,
                   n_jobs: int, notes: list[str],
                   max_candidates: int = DEFAULT_MAX_CANDIDATES,
                   list_sets: bool = True,
                   cancel: CancelToken | None = None,
                   settings: EngineSettings = DEFAULT_SETTINGS,
                   ) -> tuple[tuple[SensitivePlan, ...], bool]:
    """:func:`plan`'s parallel branch: batches of attributes on joblib workers; the plans
    and whether planning was interrupted.

    Results are collected as batches finish, so on Ctrl-C (KeyboardInterrupt in this process;
    joblib then stops the workers) or once ``cancel`` is set (seen as each batch finishes) the
    finished batches are kept and every attribute not finished gets the always-valid trivial
    quilt, as the serial search does.
    """
    from joblib import Parallel, delayed, effective_n_jobs

    if n_jobs > 0:
        n_jobs = min(n_jobs, len(sens))  # no more workers than attributes (each costs a process)
    # A few batches per worker, not one task per attribute: each task pickles Theta once
    # and its attributes share the worker's caches (elimination order, influences).
    n_batches = min(len(sens), 4 * max(1, effective_n_jobs(n_jobs)))
    batches = [sens[k::n_batches] for k in range(n_batches)]
    try:
        runner = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    except ValueError:  # a backend without generators (multiprocessing): all at once
        runner = Parallel(n_jobs=n_jobs)
    by_node: dict[str, SensitivePlan] = {}
    stopped = False
    try:
        for batch in runner(delayed(_plan_batch)(theta, query, b, eps, max_table,
                                                 wall_deadline, engine, max_candidates,
                                                 list_sets, settings)
                            for b in batches):
            by_node.update((sp.sensitive, sp) for sp in batch)
            if _cancelled(cancel):
                stopped = True
                break
    except KeyboardInterrupt:
        stopped = True
    if stopped:
        notes.append(INTERRUPTED_NOTE)
        terms = (theta.sort(set(query.attributes)), query.sensitivity(query.attributes))
        for s in sens:
            if s not in by_node:
                by_node[s] = _trivial_plan(theta, query, s, eps, "planning was interrupted "
                                           "before the search of this attribute finished",
                                           list_sets, terms)
    return tuple(by_node[s] for s in sens), stopped
