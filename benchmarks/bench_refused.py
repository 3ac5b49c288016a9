"""Which influence queries does quiltpriv refuse, and does pyAgrum answer them? (issue 31, part 2)

quiltpriv bounds exact inference by a memory budget (``max_memory``; by default half the
machine's memory, 32 bytes charged per entry of the largest table) and by the time limit. The
target: no query that pyAgrum answers within 6 GB is refused. For every pgmpy-bundled network
(the ``.bif.gz`` files of ``pgmpy/utils/example_models``) this script draws, seeded:

- the benchmark's query set (``bench_pyagrum.queries``: planner quilts ``Q*(T)`` and random
  quilts of 1-3 nodes), and
- shaped queries: ``k`` = 1..8 query attributes, the sensitive node ``near`` them (least
  skeleton distance), ``far`` (greatest finite distance) or at ``random`` -- the shapes of
  part 1, here without any cap on the joint's size (the point is what cannot be held);
- on mildew, queries whose joint has 33,792,000 entries (just above the old fixed limit of
  2^25 = 33,554,432, the size the issue names);

asks quiltpriv each one (``max_influence`` with ``--time-limit`` seconds as its time_limit),
and asks pyAgrum (a fresh ``LazyPropagation`` per query, one thread, in a worker process
limited to ``--memory-gb``, killed past ``--cap`` seconds; ``bench_pyagrum.AgrumProcess``)
every query quiltpriv refused or ran out of time on, and every query whose joint is above
2^25 entries (those the old limit refused), so that the values can be compared. Peak RSS of
this process is reported per network (it holds quiltpriv's largest tables).

Usage::

    python benchmarks/bench_refused.py                           # every network
    python benchmarks/bench_refused.py --networks mildew,diabetes --per-shape 1
    python benchmarks/bench_refused.py --from-results benchmarks/results/pyagrum-X.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
for _p in (HERE, HERE.parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from bench_core import code_version, machine_facts  # noqa: E402
from bench_pyagrum import AgrumProcess, queries, read_theta  # noqa: E402
from measure import peak_rss_mb  # noqa: E402

from quiltpriv.inference.cache import InferenceCache  # noqa: E402
from quiltpriv.inference.influence import (  # noqa: E402
    DEFAULT_MAX_TABLE,
    InfluenceTooExpensive,
    max_influence,
)
from quiltpriv.model.network import Theta  # noqa: E402
from quiltpriv.utils.memory import BYTES_PER_TABLE_ENTRY, DEFAULT_MAX_MEMORY  # noqa: E402

OLD_LIMIT = 2**25
SHAPE_SIZES = tuple(range(1, 9))
PLACEMENTS = ("near", "far", "random")
#: The joint size of the mildew queries the issue names (33.8 million entries).
MILDEW_ENTRIES = 33_792_000


def networks() -> list[str]:
    import pgmpy

    folder = Path(pgmpy.__file__).parent / "utils" / "example_models"
    return sorted(p.name[:-len(".bif.gz")] for p in folder.glob("*.bif.gz"))


def _distances(theta: Theta, sources: tuple[str, ...]) -> dict[str, int]:
    """Skeleton distance of every reachable node to the nearest of ``sources``."""
    dist = dict.fromkeys(sources, 0)
    frontier = list(sources)
    while frontier:
        nxt = []
        for v in frontier:
            for u in (*theta.parents[v], *theta.children[v]):
                if u not in dist:
                    dist[u] = dist[v] + 1
                    nxt.append(u)
        frontier = nxt
    return dist


def shaped(theta: Theta, rng: np.random.Generator, per_shape: int
           ) -> list[tuple[str, str, tuple[str, ...]]]:
    """``per_shape`` queries per (k, placement); no cap on the joint's size."""
    nodes = theta.nodes
    out: list[tuple[str, str, tuple[str, ...]]] = []
    for k in SHAPE_SIZES:
        if k >= len(nodes):
            continue
        for place in PLACEMENTS:
            for _ in range(per_shape):
                q = theta.sort(nodes[int(x)] for x in rng.choice(len(nodes), size=k,
                                                                 replace=False))
                others = [v for v in nodes if v not in q]
                if place != "random":
                    dist = _distances(theta, q)
                    reach = [v for v in others if v in dist] or others
                    pick = min if place == "near" else max
                    d = pick(dist.get(v, 0) for v in reach)
                    others = [v for v in reach if dist.get(v, 0) == d]
                out.append((f"{place}-{k}", others[int(rng.integers(len(others)))], q))
    return out


def mildew_wide(theta: Theta, rng: np.random.Generator, count: int
                ) -> list[tuple[str, str, tuple[str, ...]]]:
    """``count`` seeded mildew queries whose joint has :data:`MILDEW_ENTRIES` entries."""
    import itertools

    card = theta.cardinality
    hits = [c for k in range(4, 8) for c in itertools.combinations(theta.nodes, k)
            if math.prod(card[v] for v in c) == MILDEW_ENTRIES]
    out = []
    for j in rng.choice(len(hits), size=min(count, len(hits)), replace=False):
        comb = hits[int(j)]
        node = comb[int(rng.integers(len(comb)))]
        out.append(("33.8M", node, theta.sort(v for v in comb if v != node)))
    return out


def ask_quiltpriv(theta: Theta, node: str, q: tuple[str, ...], limit: float) -> dict[str, Any]:
    InferenceCache.of(theta).influence.clear()
    t0 = time.perf_counter()
    try:
        value = max_influence(theta, node, q, time_limit=limit).value
    except InfluenceTooExpensive as exc:
        late = "time limit" in str(exc)
        return {"outcome": "late" if late else "refused", "why": str(exc),
                "t": time.perf_counter() - t0}
    except MemoryError:
        return {"outcome": "MemoryError", "t": time.perf_counter() - t0}
    return {"outcome": "answered", "value": value, "t": time.perf_counter() - t0}


def bench_network(name: str, theta: Theta, asked: list[tuple[str, str, tuple[str, ...]]],
                  args: argparse.Namespace, lines: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    agrum = AgrumProcess(name, args.memory_gb)
    try:
        for source, node, q in asked:
            entries = math.prod(theta.cardinality[v] for v in (node, *q))
            ours = ask_quiltpriv(theta, node, q, args.time_limit)
            theirs: dict[str, Any] = {}
            if ours["outcome"] != "answered" or entries > OLD_LIMIT:
                theirs = agrum.ask(node, q, 1, args.cap)
            row = {"network": name, "source": source, "node": node, "quilt": list(q),
                   "joint_entries": entries, "quiltpriv": ours, "pyagrum": theirs,
                   "rss_mb": peak_rss_mb()}
            rows.append(row)
            if theirs or ours["outcome"] != "answered":
                lines.append(_line(row))
                print(lines[-1], flush=True)
    finally:
        agrum.stop()
    return rows


def _line(r: dict[str, Any]) -> str:
    a, b = r["quiltpriv"], r["pyagrum"]
    mine = f"{a['value']:.12g}" if "value" in a else a["outcome"]
    theirs = (f"{b['value']:.12g}" if "value" in b
              else str(b.get("error", "not asked"))[:22])
    return (f"{r['network']:10} {r['source']:7} {r['node']:14} {len(r['quilt']):>2} "
            f"{r['joint_entries']:>14,} {mine:>20} {a['t']:7.2f} {theirs:>22} "
            f"{b.get('t', float('nan')):8.2f} {r['rss_mb']:8.0f}")


def from_results(path: Path) -> dict[str, list[tuple[str, str, tuple[str, ...]]]]:
    """The queries a bench_pyagrum.py results file records as refused by quiltpriv."""
    source = json.loads(path.read_text())
    return {net["network"]: [("was-refused", q["node"], tuple(q["quilt"]))
                             for q in net["quiltpriv_refused"]]
            for net in source["results"] if net["quiltpriv_refused"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", help="comma-separated (default: every pgmpy .bif.gz)")
    ap.add_argument("--from-results", type=Path,
                    help="re-ask the queries a bench_pyagrum.py results file records as "
                         "refused, instead of drawing query sets")
    ap.add_argument("--seed", type=int, default=2031)
    ap.add_argument("--per-shape", type=int, default=2)
    ap.add_argument("--planner", type=int, default=10)
    ap.add_argument("--random", type=int, default=5)
    ap.add_argument("--mildew-wide", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=120.0,
                    help="quiltpriv's deadline per query, seconds")
    ap.add_argument("--cap", type=float, default=180.0, help="pyAgrum's cap per query, s")
    ap.add_argument("--memory-gb", type=float, default=6.0, help="pyAgrum's address space")
    ap.add_argument("--out", default=str(HERE / "results" /
                                          f"refused-{datetime.date.today().isoformat()}"))
    args = ap.parse_args()
    if args.from_results:
        sets = from_results(args.from_results)
        names = list(sets)
    else:
        names = args.networks.split(",") if args.networks else networks()
    lines = [f"# quiltpriv's refusals against pyAgrum's answers; {code_version()}",
             f"# machine: {json.dumps(machine_facts())}",
             f"# settings: {json.dumps(vars(args), default=str)}",
             f"# quiltpriv memory budget {DEFAULT_MAX_MEMORY / 2**30:.2f} GiB (half the "
             f"machine's memory) = {DEFAULT_MAX_TABLE:,} table entries at "
             f"{BYTES_PER_TABLE_ENTRY} bytes; old fixed limit {OLD_LIMIT:,} entries",
             "# listed: every query quiltpriv did not answer, and every query above the old "
             "limit (pyAgrum asked for both)", "",
             f"{'network':10} {'source':7} {'node':14} {'|Q|':>2} {'joint entries':>14} "
             f"{'quiltpriv':>20} {'s':>7} {'pyAgrum':>22} {'s':>8} {'RSS MB':>8}"]
    for line in lines:
        print(line, flush=True)
    rows: list[dict[str, Any]] = []
    for name in names:
        theta = read_theta(name)
        if args.from_results:
            asked = sets[name]
        else:
            rng = np.random.default_rng([args.seed, sum(map(ord, name))])
            asked = queries(theta, rng, args.planner, args.random)
            asked += shaped(theta, rng, args.per_shape)
            if name == "mildew":
                asked += mildew_wide(theta, rng, args.mildew_wide)
        rows += bench_network(name, theta, asked, args, lines)
        mine = [r for r in rows if r["network"] == name]
        done = sum(r["quiltpriv"]["outcome"] == "answered" for r in mine)
        print(f"# {name}: {len(mine)} queries, {done} answered", file=sys.stderr, flush=True)
    summary = _summary(rows)
    lines += [""] + summary
    for line in summary:
        print(line)
    Path(args.out + ".txt").write_text("\n".join(lines) + "\n")
    Path(args.out + ".json").write_text(json.dumps(
        {"machine": machine_facts(), "code": code_version(), "settings": vars(args),
         "memory_budget_bytes": DEFAULT_MAX_MEMORY, "max_table": DEFAULT_MAX_TABLE,
         "rows": rows}, indent=1, default=str))


def _summary(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    answered = [r for r in rows if r["quiltpriv"]["outcome"] == "answered"]
    not_ours = [r for r in rows if r["quiltpriv"]["outcome"] != "answered"]
    theirs = [r for r in not_ours if "value" in r["pyagrum"]]
    big = [r for r in answered if r["joint_entries"] > OLD_LIMIT]
    big_both = [r for r in big if "value" in r["pyagrum"]]
    out.append(f"queries: {len(rows)} over {len({r['network'] for r in rows})} networks; "
               f"quiltpriv answered {len(answered)}, refused "
               f"{sum(r['quiltpriv']['outcome'] == 'refused' for r in rows)}, out of time "
               f"{sum(r['quiltpriv']['outcome'] == 'late' for r in rows)}")
    out.append(f"not answered by quiltpriv but answered by pyAgrum (the target is 0): "
               f"{len(theirs)}")
    for r in theirs:
        out.append("  " + _line(r))
    never_below = all(r["quiltpriv"]["value"] >= r["pyagrum"]["value"] - 1e-12
                      for r in big_both)
    out.append(f"answered above the old 2^25-entry limit: {len(big)}; pyAgrum answered "
               f"{len(big_both)} of them; quiltpriv never below pyAgrum's value: {never_below}")
    for r in big_both:
        a, b = r["quiltpriv"], r["pyagrum"]
        out.append(f"  {r['network']} {r['node']} |Q|={len(r['quilt'])} "
                   f"{r['joint_entries']:,} entries: quiltpriv {a['t']:.2f} s, pyAgrum "
                   f"{b['t']:.2f} s, values {a['value']:.12g} / {b['value']:.12g}")
    out.append(f"peak RSS of the quiltpriv process: {max(r['rss_mb'] for r in rows):.0f} MB")
    return out


if __name__ == "__main__":
    main()
