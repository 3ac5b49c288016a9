"""The planner's time against the number of query attributes |A| = 1..24.

The planner used to evaluate one candidate quilt per subset of the query attributes (2^(|A|-1)
influences, every one cached): a count over 24 attributes of a 25-node star did not finish. It
now searches by the query's sensitivity structure: two candidates for a count (all-or-nothing),
a branch and bound for a linear query (additive). This benchmark times one
``plan(theta, query, node, eps=1)`` per shape, query kind and |A|, on an empty influence cache:

- ``star/centre``: a 25-node star (centre ``c`` -> ``L00..L23``, binary, CPD columns drawn from
  Dirichlet(2, 2)), the centre sensitive, ``A`` = the first |A| leaves. Every leaf kept out of
  ``N`` joins the quilt, so the candidates' influences need joints of up to 2^25 entries;
- ``star/centre-weak``: the same with near-uniform CPD columns (0.45 + 0.1 Dirichlet(2, 2)):
  small influences, so the optimum of a linear query keeps many leaves out;
- ``star/leaf``: the same with one more leaf (26 nodes), leaf ``L00`` sensitive, ``A`` = |A|
  other leaves (the centre is not read, so a quilt must hold the leaves themselves);
- ``dag``: a seeded random DAG of 25 nodes (each node up to 3 parents among earlier ones,
  2-3 states, Dirichlet(1) columns), a well-connected node sensitive, ``A`` = |A| others;
- ``alarm``: pgmpy's bundled alarm network (37 nodes, read from its ``.bif.gz``), node
  ``HR`` sensitive, ``A`` = |A| other nodes in a seeded order.

A second table (``--sweep N``, default 10) plans a linear query over 24 attributes on N more
seeded random 25-node DAGs (a random sensitive node each) at eps in {0.5, 1, 2}: random DAGs
whose attributes are entangled through many paths are where the branch and bound works
hardest.

Queries: ``CountQuery(A, 1000)`` and ``LinearQuery`` with weights drawn from N(0, 2) and bounds
[0, 1] (seeded). Columns: seconds, the share of them spent computing influences
(``influence_upper_bound``), candidate quilts evaluated, whether the plan is proven optimal,
|Q| of the chosen quilt. Up to ``--old-max`` attributes (default 14) the previous planner's
search (every subset, with its pruning; copied here) is timed too and must give the same
scale. Every plan has a time limit (``--time-limit``, default 120 s); a plan that hits it says
so (``optimal`` false).

Usage::

    python benchmarks/bench_planner_attributes.py            # writes results/planner-<date>.*
    python benchmarks/bench_planner_attributes.py --quick    # |A| in {1, 4, 8, 12}, no files
    python benchmarks/bench_planner_attributes.py --shapes star/centre,dag --out /tmp/pl
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
for _p in (HERE.parent, HERE):  # a source checkout without installing; bench_core beside us
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from bench_core import (  # noqa: E402
    add_code_option,
    code_version,
    machine_facts,
    read_pgmpy,
    read_text,
    write_results,
)

import quiltpriv.mechanisms.apmqm as mech  # noqa: E402
import quiltpriv.mechanisms.apmqm.shared as shared  # noqa: E402
from quiltpriv.graph.quilts import least_influence_quilt, markov_quilt  # noqa: E402
from quiltpriv.inference.cache import InferenceCache  # noqa: E402
from quiltpriv.inference.influence import InfluenceTooExpensive  # noqa: E402
from quiltpriv.model.network import Theta, theta_from_pgmpy, theta_from_tables  # noqa: E402
from quiltpriv.queries.query import CountQuery, LinearQuery, Query  # noqa: E402
from quiltpriv.utils.format import text_table  # noqa: E402

SHAPES = ("star/centre", "star/centre-weak", "star/leaf", "dag", "alarm")
EPSILON = 1.0
RECORDS = 1000


# -- networks ---------------------------------------------------------------------------------


def star(seed: int = 25, leaves: int = 24, weak: bool = False) -> Theta:
    rng = np.random.default_rng(seed)
    names = [f"L{k:02d}" for k in range(leaves)]
    tables = {"c": np.array([0.4, 0.6])}
    for v in names:
        cols = rng.dirichlet([2.0, 2.0], size=2).T  # axes (leaf, c)
        tables[v] = 0.45 + 0.1 * cols if weak else cols
    return theta_from_tables([("c", v) for v in names], {v: [0, 1] for v in ["c", *names]},
                             tables)


def random_dag(seed: int = 2024, n: int = 25) -> Theta:
    rng = np.random.default_rng(seed)
    names = [f"X{k:02d}" for k in range(n)]
    parents: dict[str, list[str]] = {v: [] for v in names}
    for b in range(n):
        for a in rng.permutation(b):
            if len(parents[names[b]]) < 3 and rng.random() < 0.25:
                parents[names[b]].append(names[int(a)])
    card = {v: int(rng.integers(2, 4)) for v in names}
    tables = {}
    for v in names:
        cols = [rng.dirichlet(np.ones(card[v]))
                for _ in range(math.prod(card[p] for p in parents[v]))]
        tables[v] = np.stack(cols, axis=1).reshape([card[v], *(card[p] for p in parents[v])])
    edges = [(p, v) for v in names for p in parents[v]]
    return theta_from_tables(edges, {v: list(range(card[v])) for v in names}, tables,
                             parents_order=parents)


def shape_setup(shape: str) -> tuple[Theta, str, list[str]]:
    """(Theta, sensitive node, attribute pool: A is its first |A| entries)."""
    if shape in ("star/centre", "star/centre-weak"):
        theta = star(weak=shape.endswith("weak"))
        return theta, "c", [v for v in theta.nodes if v != "c"]
    if shape == "star/leaf":
        theta = star(leaves=25)
        return theta, "L00", [v for v in theta.nodes if v not in ("c", "L00")]
    if shape == "dag":
        theta = random_dag()
        node = max(theta.nodes, key=lambda v: (len(theta.parents[v]) + len(theta.children[v]),
                                               v))
        pool = [v for v in theta.nodes if v != node]
        return theta, node, [pool[k] for k in np.random.default_rng(5).permutation(len(pool))]
    if shape == "alarm":
        theta = theta_from_pgmpy(read_pgmpy(read_text("alarm")))
        pool = [v for v in theta.nodes if v != "HR"]
        return theta, "HR", [pool[k] for k in np.random.default_rng(5).permutation(len(pool))]
    raise SystemExit(f"unknown shape {shape!r} (known: {', '.join(SHAPES)})")


def make_query(kind: str, attrs: list[str], seed: int) -> Query:
    if kind == "count":
        return CountQuery(tuple(attrs), RECORDS)
    rng = np.random.default_rng(seed)
    return LinearQuery({a: float(rng.normal(0, 2)) for a in attrs},
                       {a: (0.0, 1.0) for a in attrs})


# -- the previous planner's search, for comparison ----------------------------------------------


def old_search(theta: Theta, query: Query, node: str, eps: float,
               limit: float) -> tuple[float, int, bool]:
    """The search this benchmark replaces: ``Q*(T)`` for every subset ``T`` of the query
    attributes (supersets of an infeasible target and candidates whose Delta alone loses are
    skipped, as it did). Returns (least scale, candidates evaluated, finished in time)."""
    attrs = set(query.attributes)
    others = [a for a in theta.sort(attrs) if a != node]
    best = mech.quilt_scale(query.sensitivity(attrs), 0.0, eps)
    seen: set[tuple[str, ...]] = set()
    infeasible: list[frozenset[str]] = []
    stop = time.monotonic() + limit
    considered = 1
    for k in range(len(others) + 1):
        for target in combinations(others, k):
            if time.monotonic() > stop:
                return best, considered, False
            t = frozenset(target)
            if any(bad <= t for bad in infeasible):
                continue
            q = least_influence_quilt(theta, node, t)
            if q in seen:
                continue
            seen.add(q)
            delta = query.sensitivity(attrs & set(markov_quilt(theta, node, q).nearby))
            if delta / eps > best:
                continue
            try:
                infl = shared.influence_upper_bound_until(theta, node, q)
            except InfluenceTooExpensive:
                continue
            considered += 1
            if infl.exact and infl.value > eps:
                infeasible.append(t)
            best = min(best, mech.quilt_scale(delta, infl.value, eps))
    return best, considered, True


# -- timing -------------------------------------------------------------------------------------


class InfluenceClock:
    """Seconds spent in ``influence_upper_bound`` (wraps the planner's reference to it)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._orig = shared.influence_upper_bound_until

    def __enter__(self) -> InfluenceClock:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return self._orig(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0

        shared.influence_upper_bound_until = timed
        return self

    def __exit__(self, *exc: Any) -> None:
        shared.influence_upper_bound_until = self._orig


def run_one(theta: Theta, node: str, query: Query, time_limit: float, old_limit: float | None,
            ) -> dict[str, Any]:
    InferenceCache.of(theta).clear()  # no influence carried over from a smaller |A|
    with InfluenceClock() as clock:
        t0 = time.perf_counter()
        p = mech.plan(theta, query, node, EPSILON, time_limit=time_limit)
        seconds = time.perf_counter() - t0
    sp = p[node]
    row: dict[str, Any] = {
        "seconds": seconds, "influence_seconds": clock.seconds,
        "candidates": sp.quilts_considered, "optimal": sp.optimal, "scale": sp.scale,
        "quilt_size": len(sp.quilt),
        "cached_influences": len(InferenceCache.of(theta).influence),
    }
    if old_limit is not None:
        InferenceCache.of(theta).clear()
        t0 = time.perf_counter()
        old_scale, old_candidates, finished = old_search(theta, query, node, EPSILON, old_limit)
        row.update(old_seconds=time.perf_counter() - t0, old_candidates=old_candidates,
                   old_finished=finished, old_scale=old_scale)
        if finished and sp.optimal:
            same = (old_scale == sp.scale
                    or math.isclose(old_scale, sp.scale, rel_tol=1e-12, abs_tol=0.0))
            row["same_scale"] = same
            if not same:
                raise SystemExit(f"new and old searches disagree: {row}")
    return row


def _f(x: float | None, spec: str = ".3g") -> str:
    return "-" if x is None else format(x, spec)


def sweep(count: int, time_limit: float) -> list[dict[str, Any]]:
    """A linear query over 24 attributes on ``count`` random DAGs, eps in {0.5, 1, 2}."""
    out = []
    for k in range(count):
        theta = random_dag(seed=3000 + k)
        rng = np.random.default_rng(k)
        node = str(rng.choice(theta.nodes))
        pool = [v for v in theta.nodes if v != node]
        attrs = [pool[x] for x in rng.permutation(len(pool))[:24]]
        query = make_query("linear", attrs, seed=k)
        for eps in (0.5, 1.0, 2.0):
            InferenceCache.of(theta).clear()
            with InfluenceClock() as clock:
                t0 = time.perf_counter()
                sp = mech.plan(theta, query, node, eps, time_limit=time_limit)[node]
                seconds = time.perf_counter() - t0
            out.append({"dag_seed": 3000 + k, "node": node, "epsilon": eps,
                        "seconds": seconds, "influence_seconds": clock.seconds,
                        "candidates": sp.quilts_considered, "optimal": sp.optimal,
                        "scale": sp.scale, "quilt_size": len(sp.quilt)})
            print(f"sweep dag {3000 + k} eps={eps:g} {seconds:8.3f} s "
                  f"cands={sp.quilts_considered:6d} optimal={sp.optimal}", flush=True)
    return out


def sweep_report(rows: list[dict[str, Any]], time_limit: float) -> list[str]:
    if not rows:
        return []
    lines = ["", f"Linear query over 24 attributes on {len(rows) // 3} random 25-node DAGs "
             f"(time limit {time_limit:g} s per plan)", ""]
    header = ("eps", "plans", "optimal", "median s", "max s", "median cands", "max cands")
    table = []
    for eps in (0.5, 1.0, 2.0):
        sel = [r for r in rows if r["epsilon"] == eps]
        secs = sorted(r["seconds"] for r in sel)
        cands = sorted(r["candidates"] for r in sel)
        table.append((f"{eps:g}", str(len(sel)), str(sum(r["optimal"] for r in sel)),
                      f"{secs[len(secs) // 2]:.3f}", f"{secs[-1]:.3f}",
                      str(cands[len(cands) // 2]), str(cands[-1])))
    return lines + text_table(header, table)


def report(rows: list[dict[str, Any]], facts: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        "Planner time against |A| (bench_planner_attributes.py)",
        f"machine: {facts['cpu']}, {facts['cores']} cores, {facts['ram_gb']} GB RAM; "
        f"{facts['platform']}; Python {facts['python']}, numpy {facts['numpy']}, "
        f"pgmpy {facts['pgmpy']}",
        f"kernel: {facts['kernel']}; code: {facts['code']}",
        f"date: {facts['date']}; load average at end: "
        f"{', '.join(f'{x:.2f}' for x in facts['loadavg_at_end'])}",
        f"eps = {EPSILON}, n = {RECORDS}; time limit per plan {args.time_limit:g} s; the old "
        f"search (every subset) up to |A| = {args.old_max}, limit {args.old_limit:g} s",
        "",
    ]
    header = ("shape", "query", "|A|", "seconds", "infl%", "cands", "optimal", "|Q|",
              "old s", "old cands", "same")
    table = []
    for r in rows:
        share = 100 * r["influence_seconds"] / r["seconds"] if r["seconds"] > 0 else 0.0
        old = r.get("old_seconds")
        table.append((r["shape"], r["query"], str(r["attributes"]), _f(r["seconds"], ".4f"),
                      f"{share:.0f}", str(r["candidates"]), "yes" if r["optimal"] else "NO",
                      str(r["quilt_size"]),
                      "-" if old is None else (_f(old, ".4f") if r["old_finished"]
                                               else f">{args.old_limit:g}"),
                      "-" if old is None else str(r["old_candidates"]),
                      {True: "yes", False: "NO"}.get(r.get("same_scale"), "-")))
    lines += text_table(header, table)
    lines.append("")
    for shape in dict.fromkeys(r["shape"] for r in rows):
        for kind in ("count", "linear"):
            sel = [r for r in rows if r["shape"] == shape and r["query"] == kind]
            if sel:
                top = max(sel, key=lambda r: r["seconds"])
                lines.append(
                    f"{shape} {kind}: slowest |A| = {top['attributes']} in {top['seconds']:.3f} s"
                    f" ({100 * top['influence_seconds'] / max(top['seconds'], 1e-12):.0f}% "
                    f"computing influences), {sum(r['optimal'] for r in sel)}/{len(sel)} plans "
                    f"proven optimal")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--max-attributes", type=int, default=24)
    ap.add_argument("--quick", action="store_true",
                    help="|A| in {1, 4, 8, 12}; writes nothing unless --out is given")
    ap.add_argument("--time-limit", type=float, default=120.0, help="per plan, seconds")
    ap.add_argument("--old-max", type=int, default=14,
                    help="largest |A| for which the old every-subset search is timed")
    ap.add_argument("--old-limit", type=float, default=60.0, help="per old search, seconds")
    ap.add_argument("--sweep", type=int, default=None,
                    help="random DAGs in the second table (default 10; 0 with --quick)")
    ap.add_argument("--out", help="write OUT.txt and OUT.json")
    add_code_option(ap)
    args = ap.parse_args(argv)
    sizes = [1, 4, 8, 12] if args.quick else list(range(1, args.max_attributes + 1))
    rows = []
    for shape in args.shapes.split(","):
        theta, node, pool = shape_setup(shape.strip())
        for kind in ("count", "linear"):
            for k in sizes:
                if k > len(pool):
                    continue
                query = make_query(kind, pool[:k], seed=k)
                old = args.old_limit if k <= args.old_max else None
                row = {"shape": shape, "query": kind, "attributes": k, "node": node,
                       **run_one(theta, node, query, args.time_limit, old)}
                rows.append(row)
                print(f"{shape:12s} {kind:6s} |A|={k:2d} {row['seconds']:8.3f} s "
                      f"cands={row['candidates']:6d} optimal={row['optimal']}", flush=True)
    count = args.sweep if args.sweep is not None else (0 if args.quick else 10)
    swept = sweep(count, min(args.time_limit, 60.0))
    facts = {**machine_facts(), "code": args.code or code_version()}
    text = "\n".join([report(rows, facts, args), *sweep_report(swept, min(args.time_limit,
                                                                          60.0))])
    print(text)
    write_results("planner", args.out, args.quick, text + "\n",
                  {"machine": facts, "epsilon": EPSILON, "records": RECORDS,
                   "time_limit": args.time_limit, "rows": rows, "sweep": swept})
    return 0


if __name__ == "__main__":
    sys.exit(main())
