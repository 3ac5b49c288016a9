"""quiltpriv's exact max-influence against pyAgrum's exact engines, query by query.

For every network pgmpy bundles as BIF (:data:`NETWORKS`, asia through munin), a seeded set of
influence queries ``e(Q | i)`` (Definition 8 on the joint of ``(phi_i, phi_Q)``):

- ``planner``: the quilt the planner asks for, ``Q*(T)`` of
  :func:`quiltpriv.graph.quilts.least_influence_quilt`, for a random node ``i`` and a random
  target set ``T`` of 1-6 other nodes (what a count, sum or linear query's plan evaluates);
- ``random``: a random quilt of 1-3 nodes;
- ``<placement>-<k>`` (:func:`shaped_queries`): ``k`` = 1-8 query attributes drawn uniformly,
  the sensitive node ``near`` them, ``far`` from them or at ``random``.

Each query is answered by quiltpriv and by each of pyAgrum's ``LazyPropagation``,
``ShaferShenoyInference`` and ``VariableElimination`` (:func:`compare`: interleaved call by
call, quiltpriv first in alternate rounds); the ratio counts pyAgrum's fastest engine on that
query, the count most favourable to pyAgrum. Details of each side:

- quiltpriv: :func:`quiltpriv.inference.influence.max_influence` (the compiled kernel when it
  is installed), its influence cache cleared before every call; the per-network preparation
  (the kernel's copy of the tables, folded CPDs) is built once, before the timing, as pyAgrum's
  ``BayesNet`` is;
- pyAgrum: a fresh engine per call (a reused one accumulates joint targets and reuses
  messages between queries), ``addJointTarget({i} + Q)``, ``makeInference()``,
  ``jointPosterior`` and ``toarray()``; Definition 8 on that joint is computed outside the
  timing (in pyAgrum's favour). pyAgrum runs on one thread (``setNumberOfThreads(1)``), in a
  worker process of its own: a query past ``--cap`` seconds is ended by killing the worker
  (then restarted), and the worker's address space is limited to ``--memory-gb`` so that a
  too-large table ends in pyAgrum's ``bad_alloc`` rather than in swapping.

pyAgrum's model is built from quiltpriv's Theta, table by table (``Tensor.fillWith`` with the
float64 entries), not with ``gum.loadBN``: pyAgrum's BIF reader parses probabilities as float32
(alarm's 0.99 comes back as 0.99000001), so its model would not be the file's; both engines
therefore compute on the same numbers.

Times are the best of ``--repeat`` calls for a query answered in under 0.5 s, else one call,
by the wall clock and by processor time (``time.process_time``, which waiting for a core on a
loaded machine does not inflate).
Per network the report gives the median, the 10th percentile and the worst (least) of
``t_pyAgrum / t_quiltpriv`` over the queries both answered, the largest difference of the two
values (quiltpriv rounds every influence upwards by 1e-10 relative + absolute; ``raw`` takes
that margin off), and every query either engine could not answer: quiltpriv's refusals (no
elimination order within its table limit, ``InfluenceTooExpensive``) and pyAgrum's failures
(the time cap, ``bad_alloc``, a crash).

pyAgrum is an optional benchmark dependency (``pip install pyagrum``); quiltpriv never imports
it.

Usage::

    python benchmarks/bench_pyagrum.py                      # ten networks, writes results
    python benchmarks/bench_pyagrum.py --networks asia,alarm --quick
    python benchmarks/bench_pyagrum.py --out /tmp/agrum     # /tmp/agrum.txt and .json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _path in (ROOT, HERE):  # run from a source checkout without installing; bench_core
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from bench_core import (  # noqa: E402
    _differences,
    add_code_option,
    bif_path,
    code_version,
    machine_facts,
    read_text,
    write_results,
)

from quiltpriv.inference.cache import InferenceCache  # noqa: E402
from quiltpriv.inference.influence import InfluenceTooExpensive, max_influence  # noqa: E402
from quiltpriv.model.network import Theta  # noqa: E402

NETWORKS = ("asia", "cancer", "earthquake", "sachs", "survey", "alarm", "barley", "child",
            "insurance", "mildew", "water", "hailfinder", "hepar2", "win95pts", "pathfinder",
            "andes", "diabetes", "pigs", "link", "munin1", "munin2", "munin3", "munin4", "munin")
#: A query answered in under this many seconds is timed best-of-``--repeat``, else once.
REPEAT_BELOW_S = 0.5
#: quiltpriv below pyAgrum by more than this is an under-estimate (must never happen).
UNDER_TOLERANCE = 1e-12


# -- the two engines ----------------------------------------------------------------------------


def read_theta(name: str) -> Theta:
    """The bundled network as quiltpriv reads it (its own BIF reader, CPDs as float64)."""
    from quiltpriv.model.readers import read_bif

    return read_bif(read_text(name), name, name=name)


def pyagrum_bn(theta: Theta, member: int = 0) -> Any:
    """A pyAgrum ``BayesNet`` holding exactly ``theta``'s CPDs (float64, entry for entry)."""
    import pyagrum as gum

    bn = gum.BayesNet(theta.names[member])
    for v in theta.nodes:
        bn.add(gum.LabelizedVariable(v, v, [str(s) for s in theta.states[v]]))
    for v in theta.nodes:
        for p in theta.parents[v]:
            bn.addArc(p, v)
    for v in theta.nodes:
        cpt = bn.cpt(v)
        axes = (v, *theta.parents[v])
        # toarray()'s axes are the tensor's variables in reverse order.
        perm = [axes.index(n) for n in reversed(cpt.names)]
        table = np.transpose(theta.members[member][v].table, perm)
        cpt.fillWith(np.ascontiguousarray(table, dtype=np.float64).reshape(-1).tolist())
    return bn


def definition8(joint: np.ndarray) -> float:
    """Definition 8 of ``joint[a, q...]`` (no rounding margin; vectorised over the columns).

    ``max over q and over a, b with P(a), P(b) > 0 of log P(q | a) / P(q | b)``; ``+inf`` when a
    state ``q`` is possible under one value and impossible under another.
    """
    j = np.asarray(joint, dtype=np.float64).reshape(joint.shape[0], -1)
    p = j.sum(axis=1)
    cond = j[p > 0] / p[p > 0, None]
    hi, lo = cond.max(axis=0), cond.min(axis=0)
    live = hi > 0
    if np.any(lo[live] == 0):
        return math.inf
    if not np.any(live):
        return 0.0
    return max(0.0, float(np.max(np.log(hi[live]) - np.log(lo[live]))))


#: pyAgrum's three exact engines, by the name a request uses.
ENGINES = ("LazyPropagation", "ShaferShenoyInference", "VariableElimination")


def agrum_joint(gum: Any, bn: Any, node: str, quilt: list[str],
                engine: str = "LazyPropagation") -> np.ndarray:
    """pyAgrum's joint of ``[node, *quilt]`` (axes in that order), by a fresh ``engine``."""
    variables = [node, *quilt]
    ie = getattr(gum, engine)(bn)
    ie.addJointTarget(set(variables))
    ie.makeInference()
    pot = ie.jointPosterior(set(variables))
    arr = pot.toarray()
    axes = list(reversed(pot.names))
    return np.transpose(arr, [axes.index(v) for v in variables])


def _timed(fn: Any, repeat: int) -> tuple[float, Any, float]:
    """Best wall time of up to ``repeat`` calls (one call when the first takes
    REPEAT_BELOW_S), the last result, and the best processor time (``time.process_time``:
    the process's CPU seconds, which a loaded machine's waiting for a core does not inflate)."""
    best, out, best_cpu = math.inf, None, math.inf
    for k in range(repeat):
        c0 = time.process_time()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
        if k == 0 and best >= REPEAT_BELOW_S:
            break
    return best, out, best_cpu


def agrum_worker(name: str, memory_gb: float) -> int:
    """Serve pyAgrum queries on ``name`` over stdin/stdout, one JSON line each way."""
    if memory_gb > 0:
        limit = int(memory_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import pyagrum as gum

    gum.setNumberOfThreads(1)
    bn = pyagrum_bn(read_theta(name))
    print(json.dumps({"ready": gum.__version__}), flush=True)
    for line in sys.stdin:
        ask = json.loads(line)
        joint = None
        try:
            node, quilt, engine = ask["node"], ask["quilt"], ask.get("engine", ENGINES[0])
            t, joint, cpu = _timed(lambda: agrum_joint(gum, bn, node, quilt, engine),  # noqa: B023
                                   ask["repeat"])
            reply = {"t": t, "cpu": cpu, "value": definition8(joint),
                     "entries": int(joint.size)}
        except MemoryError:
            reply = {"error": "MemoryError"}
        except Exception as exc:  # pyAgrum's bad_alloc and friends, as one line
            text = str(exc).strip().splitlines()
            reply = {"error": f"{type(exc).__name__}: {text[0][:160] if text else ''}"}
        joint = None  # free the last joint before waiting for the next query
        print(json.dumps(reply), flush=True)
    return 0


class AgrumProcess:
    """One pyAgrum worker process per network; killed and restarted after a capped query."""

    def __init__(self, name: str, memory_gb: float) -> None:
        self.name, self.memory_gb = name, memory_gb
        self.proc: subprocess.Popen[str] | None = None
        self.version: str | None = None
        self.restarts = 0

    def _start(self) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--agrum-worker", self.name,
             "--memory-gb", str(self.memory_gb)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, env=env)
        ready = self._read(600)
        if ready is None or "ready" not in ready:
            self.stop()
            raise RuntimeError(f"the pyAgrum worker for {self.name} did not start")
        self.version = ready["ready"]

    def _read(self, timeout: float) -> dict[str, Any] | None:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {"error": "the pyAgrum worker died (crash)"}

    def ask(self, node: str, quilt: tuple[str, ...], repeat: int, cap: float,
            engine: str = ENGINES[0]) -> dict[str, Any]:
        if self.proc is None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"node": node, "quilt": list(quilt),
                                          "repeat": repeat, "engine": engine}) + "\n")
        self.proc.stdin.flush()
        # A query is repeated only when its first call took under REPEAT_BELOW_S.
        reply = self._read(cap + (repeat - 1) * REPEAT_BELOW_S)
        if reply is None:
            self.stop()
            return {"error": f"over the cap of {cap:g} s"}
        if "error" in reply and "crash" in reply["error"]:
            self.stop()
        return reply

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()  # this process's own child, by its handle
            self.proc.wait()
            self.proc = None
            self.restarts += 1


def ours(theta: Theta, node: str, quilt: tuple[str, ...], repeat: int,
         budget: float | None = None) -> dict[str, Any]:
    """quiltpriv's answer: time and value, or its refusal (and the time the refusal took).

    ``budget``: seconds per call (``max_influence``'s time_limit), as pyAgrum's cap.
    """
    def call() -> float:
        InferenceCache.of(theta).influence.clear()
        return max_influence(theta, node, quilt, time_limit=budget).value

    t0 = time.perf_counter()
    try:
        t, value, cpu = _timed(call, repeat)
    except InfluenceTooExpensive as exc:
        return {"refused": str(exc), "t_refusal": time.perf_counter() - t0}
    except MemoryError:
        return {"refused": "MemoryError", "t_refusal": time.perf_counter() - t0}
    return {"t": t, "cpu": cpu, "value": value}


def _merge(best: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """The better of two answers to the same query: the lesser time (a failure ends it)."""
    if best is None or "t" not in best or "t" not in new:
        return new if best is None or "t" in best else best
    return {**(new if new["t"] < best["t"] else best), "cpu": min(new["cpu"], best["cpu"])}


def compare(theta: Theta, agrum: AgrumProcess, node: str, q: tuple[str, ...], *,
            repeat: int, cap: float, engines: tuple[str, ...], flip: bool
            ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """One query on quiltpriv and on each pyAgrum engine, interleaved call by call.

    ``repeat`` rounds; in each, every engine still timed runs once, quiltpriv first in even
    rounds (odd ones when ``flip``), so that a load change on the shared machine falls on both
    sides. An engine that failed, or whose call took ``REPEAT_BELOW_S`` or more, is not called
    again. Each engine keeps its best call.
    """
    a: dict[str, Any] | None = None
    b: dict[str, dict[str, Any] | None] = dict.fromkeys(engines)

    def done(x: dict[str, Any] | None) -> bool:
        return x is not None and ("t" not in x or x["t"] >= REPEAT_BELOW_S)

    for r in range(repeat):
        ours_first = (r % 2 == 0) != flip
        if ours_first and not done(a):
            a = _merge(a, ours(theta, node, q, 1, cap))
        for e in engines:
            if not done(b[e]):
                b[e] = _merge(b[e], agrum.ask(node, q, 1, cap, e))
        if not ours_first and not done(a):
            a = _merge(a, ours(theta, node, q, 1, cap))
    assert a is not None
    return a, {e: x for e, x in b.items() if x is not None}


# -- queries ------------------------------------------------------------------------------------


def queries(theta: Theta, rng: np.random.Generator, n_planner: int, n_random: int
            ) -> list[tuple[str, str, tuple[str, ...]]]:
    """``(source, node, quilt)``: planner quilts ``Q*(T)`` and random quilts, seeded, distinct."""
    from quiltpriv.graph.quilts import least_influence_quilt

    nodes = theta.nodes
    out: list[tuple[str, str, tuple[str, ...]]] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    tries = 0
    while len(out) < n_planner and tries < 20 * n_planner:
        tries += 1
        node = nodes[int(rng.integers(len(nodes)))]
        others = [v for v in nodes if v != node]
        k = int(rng.integers(1, min(6, len(others)) + 1))
        targets = [others[int(x)] for x in rng.choice(len(others), size=k, replace=False)]
        q = least_influence_quilt(theta, node, targets)
        if q and (node, q) not in seen:
            seen.add((node, q))
            out.append(("planner", node, q))
    tries = 0
    while len(out) < n_planner + n_random and tries < 20 * (n_planner + n_random):
        tries += 1
        node = nodes[int(rng.integers(len(nodes)))]
        others = [v for v in nodes if v != node]
        k = int(rng.integers(1, min(3, len(others)) + 1))
        q = theta.sort(others[int(x)] for x in rng.choice(len(others), size=k, replace=False))
        if (node, q) not in seen:
            seen.add((node, q))
            out.append(("random", node, q))
    return out


#: Where the sensitive node is drawn, relative to the query attributes (skeleton distance).
PLACEMENTS = ("near", "far", "random")
#: The numbers of query attributes of the shaped queries.
SHAPE_SIZES = tuple(range(1, 9))


def _distances(theta: Theta, sources: tuple[str, ...]) -> dict[str, int]:
    """Skeleton (undirected) distance of every node reachable from ``sources``."""
    nb: dict[str, set[str]] = {v: set(theta.parents[v]) | set(theta.children[v])
                               for v in theta.nodes}
    dist = dict.fromkeys(sources, 0)
    frontier = list(sources)
    while frontier:
        nxt = []
        for v in frontier:
            for u in nb[v]:
                if u not in dist:
                    dist[u] = dist[v] + 1
                    nxt.append(u)
        frontier = nxt
    return dist


def shaped_queries(theta: Theta, rng: np.random.Generator, per_shape: int, max_joint: int
                   ) -> list[tuple[str, str, tuple[str, ...]]]:
    """``per_shape`` queries per shape: ``k`` query attributes (each of :data:`SHAPE_SIZES`)
    drawn uniformly, and the sensitive node ``i`` drawn among the other nodes ``near`` them
    (the least skeleton distance), ``far`` (the greatest finite one) or at ``random``. A draw
    whose joint of ``(phi_i, phi_Q)`` exceeds ``max_joint`` entries is drawn again (up to 20
    times), so that the set measures speed rather than what neither engine can hold.
    Sources are ``"<placement>-<k>"``.
    """
    nodes = theta.nodes
    out: list[tuple[str, str, tuple[str, ...]]] = []
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for k in SHAPE_SIZES:
        if k >= len(nodes):
            continue
        for place in PLACEMENTS:
            for _ in range(per_shape):
                for _try in range(20):
                    q = theta.sort(nodes[int(x)] for x in rng.choice(len(nodes), size=k,
                                                                     replace=False))
                    dist = _distances(theta, q)
                    others = [v for v in nodes if v not in q]
                    if place != "random":
                        reach = [v for v in others if v in dist]
                        if not reach:
                            continue
                        pick = min if place == "near" else max
                        d = pick(dist[v] for v in reach)
                        others = [v for v in reach if dist[v] == d]
                    node = others[int(rng.integers(len(others)))]
                    size = math.prod(theta.cardinality[v] for v in (node, *q))
                    if size <= max_joint and (node, q) not in seen:
                        seen.add((node, q))
                        out.append((f"{place}-{k}", node, q))
                        break
    return out


# -- one network --------------------------------------------------------------------------------


def _row(theta: Theta, source: str, node: str, q: tuple[str, ...], a: dict[str, Any],
         b: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One query's figures: each engine's answer, the best pyAgrum time and the ratios."""
    row: dict[str, Any] = {
        "source": source, "node": node, "quilt": list(q),
        "joint_entries": math.prod(theta.cardinality[v] for v in (node, *q)),
        "distance": _distances(theta, q).get(node),
        "quiltpriv": a, "pyagrum": b.get(ENGINES[0], {"error": "not run"}), "engines": b}
    answered = {e: x for e, x in b.items() if "t" in x}
    if "t" in a and answered:
        best = min(answered, key=lambda e: answered[e]["t"])
        row["best_engine"] = best
        row["ratio"] = answered[best]["t"] / a["t"]
        if "t" in row["pyagrum"]:
            row["ratio_lazy"] = row["pyagrum"]["t"] / a["t"]
        row["ratio_cpu"] = min(x["cpu"] for x in answered.values()) / max(a["cpu"], 1e-9)
        diffs = [_differences(a["value"], x["value"]) for x in answered.values()]
        row["abs_diff"] = max(d for d, _ in diffs)
        row["raw_diff"] = max(r for _, r in diffs)
        row["under"] = any(a["value"] < x["value"] - UNDER_TOLERANCE for x in answered.values())
    return row


def bench_network(name: str, *, n_planner: int, n_random: int, repeat: int, cap: float,
                  memory_gb: float, seed: int, n_shaped: int = 0, max_joint: int = 2**22,
                  engines: tuple[str, ...] = ENGINES, log: Any = None) -> dict[str, Any]:
    theta = read_theta(name)
    rng = np.random.default_rng([seed, sum(map(ord, name))])
    asked = queries(theta, rng, n_planner, n_random)
    asked += shaped_queries(theta, np.random.default_rng([seed, sum(map(ord, name)), 1]),
                            n_shaped, max_joint)
    # One-time preparation on both sides, outside the per-query times.
    t0 = time.perf_counter()
    first_source, first_node, first_q = asked[0]
    ours(theta, first_node, first_q, 1, cap)
    t_prepare = time.perf_counter() - t0
    agrum = AgrumProcess(name, memory_gb)
    t0 = time.perf_counter()
    agrum._start()
    t_agrum_start = time.perf_counter() - t0
    rows = []
    try:
        for k, (source, node, q) in enumerate(asked):
            a, b = compare(theta, agrum, node, q, repeat=repeat, cap=cap, engines=engines,
                           flip=k % 2 == 1)
            row = _row(theta, source, node, q, a, b)
            rows.append(row)
            if log is not None and ("ratio" not in row or row["ratio"] < 1):
                told = {e: x.get("error", f"{x.get('t', 0):.5f} s")[:60] for e, x in b.items()}
                print(f"  [{name}] {source} {node} | {list(q)}: quiltpriv "
                      f"{a.get('refused', '')[:80] or format(a['t'], '.5f') + ' s'}; "
                      f"pyAgrum {told}", file=log, flush=True)
    finally:
        agrum.stop()
    both = [r for r in rows if "ratio" in r]
    ratios = sorted(r["ratio"] for r in both)
    worst = min(both, key=lambda r: r["ratio"]) if both else None
    lazy = sorted(r["ratio_lazy"] for r in both if "ratio_lazy" in r)
    return {
        "network": name, "nodes": len(theta.nodes), "edges": len(theta.edges),
        "queries": len(rows), "answered_by_both": len(both),
        "t_prepare_quiltpriv": t_prepare, "t_start_pyagrum_worker": t_agrum_start,
        "pyagrum_version": agrum.version,
        "ratio_median": statistics.median(ratios) if ratios else None,
        "ratio_p10": float(np.percentile(ratios, 10)) if ratios else None,
        "ratio_worst": ratios[0] if ratios else None,
        "ratio_best": ratios[-1] if ratios else None,
        "ratio_worst_lazy": lazy[0] if lazy else None,
        "ratio_worst_cpu": min((r["ratio_cpu"] for r in both), default=None),
        "slower_cpu": sum(r["ratio_cpu"] < 1 for r in both),
        "worst_query": None if worst is None else {
            k: worst[k] for k in ("source", "node", "quilt", "joint_entries", "ratio",
                                  "best_engine")} | {
            "t_quiltpriv": worst["quiltpriv"]["t"],
            "t_pyagrum": worst["engines"][worst["best_engine"]]["t"]},
        "slower_than_pyagrum": sum(r < 1 for r in ratios),
        "best_engine_counts": {e: sum(r.get("best_engine") == e for r in both)
                               for e in engines},
        "max_abs_diff": max((r["abs_diff"] for r in both), default=None),
        "max_raw_diff": max((r["raw_diff"] for r in both
                             if math.isfinite(r["raw_diff"])), default=None),
        "disagree_infinite": sum(math.isinf(r["raw_diff"]) for r in both),
        "under_estimates": sum(r["under"] for r in both),
        "infinite_values": sum(math.isinf(r["quiltpriv"]["value"]) for r in both),
        "quiltpriv_refused": [r for r in rows if "refused" in r["quiltpriv"]],
        "pyagrum_failed": [r for r in rows if r["engines"] and
                           all("error" in x for x in r["engines"].values())],
        "rows": rows,
    }


# -- report -------------------------------------------------------------------------------------


def _f(x: float | None, spec: str = ".3g") -> str:
    return "-" if x is None else format(x, spec)


def _failure_line(r: dict[str, Any]) -> str:
    a, b = r["quiltpriv"], r["pyagrum"]
    ours_text = (f"refused after {a['t_refusal']:.3f} s ({a['refused'][:110]})" if "refused" in a
                 else f"{a['t']:.4f} s")
    agrum_text = b["error"][:110] if "error" in b else f"{b['t']:.4f} s"
    q = ", ".join(r["quilt"])
    return (f"- {r['network']}: e({{{q}}} | {r['node']}) (joint of {r['joint_entries']:,} "
            f"entries): quiltpriv {ours_text}; pyAgrum {agrum_text}")


def report(results: list[dict[str, Any]], facts: dict[str, Any], argv: list[str],
           settings: dict[str, Any]) -> str:
    lines = [
        "# quiltpriv max_influence against pyAgrum's best of "
        f"{', '.join(settings.get('engines', ENGINES[:1]))} (benchmarks/bench_pyagrum.py)",
        "",
        f"command: python benchmarks/bench_pyagrum.py {' '.join(argv)}",
        f"code: {facts.get('code', '?')}; kernel: {facts.get('kernel', '?')}",
        f"machine: {facts['cpu']}, {facts['cores']} cores, {facts['ram_gb']} GB; "
        f"{facts['platform']}; Python {facts['python']}, numpy {facts['numpy']}; "
        f"pyAgrum {settings.get('pyagrum_version')} on 1 thread",
        f"load average at start {tuple(round(x, 2) for x in settings['load_start'])}, at end "
        f"{tuple(round(x, 2) for x in facts['loadavg_at_end'])}",
        *([f"note: {settings['note']}"] if settings.get("note") else []),
        f"settings: {settings['planner']} planner + {settings['random']} random + "
        f"{settings.get('shaped', 0)} shaped queries per network and shape "
        f"(1-8 attributes x sensitive node near/far/random, joints of at most "
        f"{settings.get('max_joint', 0):,} entries; seed {settings['seed']}), "
        f"best of {settings['repeat']} interleaved calls below "
        f"{REPEAT_BELOW_S} s, each side capped at {settings['cap']:g} s and pyAgrum at "
        f"{settings['memory_gb']:g} GB a query",
        "",
        "ratio = (the least time of pyAgrum's engines, each fresh per call) / t_quiltpriv per "
        "query answered by both (above 1: quiltpriv is faster); p10 = 10th percentile; "
        "worst = least ratio; 'worst LP' = least ratio against LazyPropagation alone; "
        "'worst cpu' and 'slower cpu': the same by processor time (time.process_time of each "
        "side's process, best of the same calls), which waiting for a core on a loaded "
        "machine does not inflate.",
        "",
        "| network | nodes | queries | both answered | median | p10 | worst | worst LP | slower | "
        "worst cpu | slower cpu | max raw diff | quiltpriv refused | pyAgrum failed | prep s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    worst_lines: list[str] = []
    failures: list[str] = []
    total = both = 0
    for r in results:
        if "error" in r:
            lines.append(f"| {r['network']} | {r['error']} |")
            continue
        total += r["queries"]
        both += r["answered_by_both"]
        lines.append(
            f"| {r['network']} | {r['nodes']} | {r['queries']} | {r['answered_by_both']} | "
            f"{_f(r['ratio_median'])} | {_f(r['ratio_p10'])} | "
            f"{_f(r['ratio_worst'])} | {_f(r.get('ratio_worst_lazy'))} | "
            f"{r['slower_than_pyagrum']} | {_f(r.get('ratio_worst_cpu'))} | "
            f"{r.get('slower_cpu', '-')} | "
            f"{_f(r['max_raw_diff'], '.1e')} | {len(r['quiltpriv_refused'])} | "
            f"{len(r['pyagrum_failed'])} | {r['t_prepare_quiltpriv']:.3f} |")
        w = r.get("worst_query")
        if w:
            worst_lines.append(
                f"- {r['network']}: {w['ratio']:.2f}x, e({{{', '.join(w['quilt'])}}} | "
                f"{w['node']}) ({w['source']}, joint of {w['joint_entries']:,} entries): "
                f"quiltpriv {w['t_quiltpriv'] * 1e3:.3f} ms, {w['best_engine']} "
                f"{w['t_pyagrum'] * 1e3:.3f} ms")
        seen = set()
        for f in r["quiltpriv_refused"] + r["pyagrum_failed"]:
            key = (f["node"], tuple(f["quilt"]))
            if key not in seen:
                seen.add(key)
                failures.append(_failure_line({**f, "network": r["network"]}))
    under = sum(r.get("under_estimates", 0) for r in results)
    disagree = sum(r.get("disagree_infinite", 0) for r in results)
    lines += [
        "",
        f"{total} queries, {both} answered by both engines; quiltpriv below pyAgrum by more "
        f"than {UNDER_TOLERANCE:g}: {under}; one value infinite and the other not: {disagree}.",
        "'slower': queries on which quiltpriv took longer than pyAgrum. 'max raw diff': "
        "largest |quiltpriv - pyAgrum| once quiltpriv's upward margin (1e-10, relative) is "
        "taken off; what remains includes the proven float64 rounding bound quiltpriv adds, "
        "which grows with the network (1.2e-10 on munin). "
        "'prep s': quiltpriv's one-time preparation (the first query, untimed in the ratios).",
        "",
        "## The worst query of each network",
        "",
        *(worst_lines or ["none"]),
        "",
        "## Queries one engine could not answer",
        "",
        *(failures or ["none"]),
    ]
    return "\n".join(lines) + "\n"


def readme_table(results: list[dict[str, Any]]) -> str:
    """The README's table, generated from a run's results (``--report-from JSON --readme``)."""
    lines = ["| network | queries both answered | median | worst (wall) | worst (cpu) | "
             "slower (wall / cpu) | worst query |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['network']} | {r['error']} | | | | | |")
            continue
        w = r.get("worst_query")
        where = "-" if not w else (f"e({{{', '.join(w['quilt'])}}} \\| {w['node']}), "
                                    f"{w['t_quiltpriv'] * 1e3:.3g} ms against "
                                    f"{w['best_engine']} {w['t_pyagrum'] * 1e3:.3g} ms")
        lines.append(
            f"| {r['network']} | {r['answered_by_both']} of {r['queries']} | "
            f"{_f(r['ratio_median'], '.3g')}x | {_f(r['ratio_worst'], '.3g')}x | "
            f"{_f(r.get('ratio_worst_cpu'), '.3g')}x | {r['slower_than_pyagrum']} / "
            f"{r.get('slower_cpu', '-')} | {where} |")
    return "\n".join(lines) + "\n"


def _pyagrum_install() -> dict[str, Any] | None:
    try:
        from importlib import metadata

        dist = metadata.distribution("pyagrum")
    except Exception:
        return None
    size = sum((Path(dist.locate_file(f)).stat().st_size for f in (dist.files or [])
                if Path(dist.locate_file(f)).is_file()), 0)
    return {"version": dist.version, "installed_mb": round(size / 2**20, 1),
            "requires": dist.requires or []}


def _install_line(install: dict[str, Any] | None) -> str:
    if not install:
        return ""
    return (f"\npyAgrum {install['version']} (benchmark only, never imported by quiltpriv): "
            f"{install['installed_mb']} MB installed, requires "
            f"{', '.join(install['requires'])}.\n")


def _write(args: argparse.Namespace, argv: list[str], results: list[dict[str, Any]],
           load_start: Any, engines: tuple[str, ...], version: str | None,
           partial: str | None, quiet: bool = False) -> None:
    """Print (unless ``quiet``) and write the report and JSON of ``results``."""
    facts = {**machine_facts(), "code": args.code or code_version(),
             "pyagrum_install": _pyagrum_install()}
    note = "; ".join(x for x in (args.note, partial) if x)
    settings = {"planner": args.planner, "random": args.random, "shaped": args.shaped,
                "max_joint": args.max_joint, "engines": list(engines), "repeat": args.repeat,
                "cap": args.cap, "memory_gb": args.memory_gb, "seed": args.seed,
                "load_start": load_start, "note": note or None, "pyagrum_version": version}
    text = report(results, facts, argv, settings) + _install_line(facts["pyagrum_install"])
    if not quiet:
        print(text, end="")
    write_results("pyagrum", args.out, args.quick, text,
                  {"machine": facts, "settings": settings, "argv": argv, "results": results})


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", default=",".join(NETWORKS))
    ap.add_argument("--planner", type=int, default=100, help="planner quilts per network")
    ap.add_argument("--random", type=int, default=40, help="random quilts per network")
    ap.add_argument("--shaped", type=int, default=2,
                    help="queries per shape (1-8 attributes x near/far/random) per network")
    ap.add_argument("--max-joint", type=int, default=2**22,
                    help="largest joint table of a shaped query (entries)")
    ap.add_argument("--engines", default=",".join(ENGINES),
                    help="pyAgrum engines compared (the least time counts)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cap", type=float, default=60.0, help="seconds per call, each side")
    ap.add_argument("--memory-gb", type=float, default=6.0,
                    help="address-space limit of the pyAgrum worker (0: none)")
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--quick", action="store_true",
                    help="10 + 5 queries, networks asia and alarm unless given; writes nothing "
                         "without --out")
    ap.add_argument("--out", help="write OUT.txt and OUT.json")
    ap.add_argument("--note", help="a line for the report (e.g. what else ran on the machine)")
    add_code_option(ap)
    ap.add_argument("--report-from", metavar="JSON",
                    help="print (and with --out write) the report of an earlier run's JSON")
    ap.add_argument("--readme", action="store_true",
                    help="with --report-from: print the README's table of that run")
    ap.add_argument("--agrum-worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.agrum_worker:
        return agrum_worker(args.agrum_worker, args.memory_gb)
    if args.report_from:
        saved = json.loads(Path(args.report_from).read_text(encoding="utf-8"))
        if args.readme:
            print(readme_table(saved["results"]), end="")
            return 0
        text = report(saved["results"], saved["machine"], saved["argv"], saved["settings"])
        print(text + _install_line(saved["machine"].get("pyagrum_install")), end="")
        if args.out:
            write_results("pyagrum", args.out, False,
                          text + _install_line(saved["machine"].get("pyagrum_install")), saved)
        return 0
    try:
        import pyagrum  # noqa: F401
    except ImportError:
        raise SystemExit("pyAgrum is not installed (pip install pyagrum): nothing to "
                         "compare") from None
    if args.quick:
        args.planner, args.random, args.shaped = 10, 5, 1
        if "--networks" not in " ".join(argv):
            args.networks = "asia,alarm"
    names = [n.strip() for n in args.networks.split(",") if n.strip()]
    engines = tuple(e.strip() for e in args.engines.split(",") if e.strip())
    if not engines or any(e not in ENGINES for e in engines):
        raise SystemExit(f"--engines: a comma-separated subset of {', '.join(ENGINES)}")
    for n in names:
        bif_path(n)
    load_start = os.getloadavg()
    results = []
    version = None
    for n in names:
        print(f"[{n}] ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            r = bench_network(n, n_planner=args.planner, n_random=args.random,
                              n_shaped=args.shaped, repeat=args.repeat, cap=args.cap,
                              memory_gb=args.memory_gb, seed=args.seed,
                              max_joint=args.max_joint, engines=engines, log=sys.stderr)
        except Exception as exc:  # one network's failure is reported, the others still run
            r = {"network": n, "error": f"{type(exc).__name__}: {exc}"}
        version = r.get("pyagrum_version") or version
        results.append(r)
        print(f"[{n}] done in {time.perf_counter() - t0:.1f} s: median "
              f"{_f(r.get('ratio_median'), '.1f')}x, worst {_f(r.get('ratio_worst'), '.2f')}x",
              file=sys.stderr, flush=True)
        if args.out and len(results) < len(names):  # a long run keeps what it has measured
            _write(args, argv, results, load_start, engines, version,
                   f"partial: {len(results)} of {len(names)} networks so far", quiet=True)
    _write(args, argv, results, load_start, engines, version, None)
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
