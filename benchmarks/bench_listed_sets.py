"""Listing every attribute's nearby and remote sets must not cost more than the planning it
reports (issue 31, part 3): plan time around the listing threshold.

A plan lists ``N`` and ``R`` for every sensitive attribute when the network's size times the
number of sensitive attributes is at most 2^20 (``LIST_SETS_LIMIT``): with every node
sensitive, a 1,000-node network is listed and a 3,000-node one is not. Each row runs in one
fresh process: build a random local DAG (each node 0-2 parents among the 5 before it, two
states, seeded), plan a count over 3 attributes (at 1/4, 1/2 and 3/4 of the network) with
every node sensitive (``qp.plan``), and write the plan's JSON. Reported: plan and JSON CPU
times, the JSON's size and format, whether sets are listed, the distinct quilts chosen, the
process's whole CPU time and peak RSS. ``--code DIR`` runs the workers on the quiltpriv
checkout in ``DIR`` (``PYTHONPATH``), e.g. main before a change; the default is this one.
The machine is shared: compare CPU times.

    python benchmarks/bench_listed_sets.py --sizes 1000,2000,3000 --out results/listed-DATE
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_core import code_version, machine_facts  # noqa: E402
from measure import PEAK_RSS_SOURCE  # noqa: E402

WORKER = PEAK_RSS_SOURCE + r"""
import json, resource, sys, time
import numpy as np
import quiltpriv as qp
n, listing = int(sys.argv[1]), sys.argv[2]
c = time.process_time()
rng = np.random.default_rng(7)
names = [f"v{k:05d}" for k in range(n)]
edges, cpds = [], {}
for k, v in enumerate(names):
    ps = sorted({names[k - 1 - int(j)] for j in rng.integers(0, min(k, 5) or 1,
                                                             size=int(rng.integers(0, 3))) if k})
    edges += [(p, v) for p in ps]
    cpds[v] = rng.dirichlet([2, 2], size=2 ** len(ps)).T.reshape((2,) + (2,) * len(ps))
theta = qp.theta_from_tables(edges, {v: [0.2, 0.8] for v in names}, cpds)
query = qp.CountQuery(tuple(names[int(n * f)] for f in (0.25, 0.5, 0.75)), 1000)
build = time.process_time() - c
c = time.process_time()
p = qp.plan(theta, query, theta.nodes, 1.0, list_sets={"auto": None, "yes": True,
                                                       "no": False}[listing])
plan_s = time.process_time() - c
c = time.process_time()
text = p.to_json()
json_s = time.process_time() - c
print(json.dumps({
    "nodes": n, "listing": listing, "listed": bool(p.sensitive[0].sets_listed),
    "build_cpu_s": build, "plan_cpu_s": plan_s, "json_cpu_s": json_s,
    "json_mb": len(text) / 1e6, "format": json.loads(text)["format"],
    "distinct_quilts": len({sp.quilt for sp in p.sensitive}),
    "rss_mb": peak_rss_mb(),
    "scale": p.scale, "optimal": bool(p.optimal)}))
"""


def describe(code: Path | None) -> str:
    """The code the workers ran: this checkout (:func:`bench_core.code_version`), or the
    commit of the checkout ``--code`` names and whether its quiltpriv/ is clean."""
    if code is None:
        return code_version()
    git = ["git", "-C", str(code)]
    head = subprocess.run([*git, "log", "-1", "--format=%h"], capture_output=True, text=True,
                          check=False).stdout.strip() or "not a git checkout"
    dirty = subprocess.run([*git, "status", "--porcelain", "quiltpriv"], capture_output=True,
                           text=True, check=False).stdout.strip()
    return f"{code} at {head} (quiltpriv/ {'modified' if dirty else 'clean'})"


def run(n: int, listing: str, code: Path | None) -> dict[str, Any]:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    before = os.times()
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", WORKER, str(n), listing], capture_output=True,
                         text=True, check=True, cwd=code or HERE.parent, env=env)
    after = os.times()
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["process_wall_s"] = time.perf_counter() - start
    row["process_cpu_s"] = (after.children_user - before.children_user
                            + after.children_system - before.children_system)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,2000,3000")
    ap.add_argument("--listing", default="auto", choices=["auto", "yes", "no"])
    ap.add_argument("--code", type=Path, default=None, help="a quiltpriv checkout to run")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--note", default="")
    args = ap.parse_args()
    load_start = os.getloadavg()
    rows = [run(int(n), args.listing, args.code) for _ in range(args.repeat)
            for n in args.sizes.split(",")]
    code = describe(args.code)
    lines = ["# every node sensitive, a count over 3 attributes, random local DAG "
             "(benchmarks/bench_listed_sets.py)", "",
             f"machine: {machine_facts()}", f"code: {code}",
             f"load average at start {load_start}, at end {os.getloadavg()}",
             f"note: {args.note}", "",
             f"{'nodes':>6} {'listed':>6} {'plan CPU':>9} {'JSON CPU':>9} {'JSON MB':>8} "
             f"{'format':>17} {'quilts':>6} {'CPU s':>6} {'RSS MB':>6} optimal"]
    for r in rows:
        lines.append(f"{r['nodes']:>6} {r['listed']!s:>6} {r['plan_cpu_s']:>9.3f} "
                     f"{r['json_cpu_s']:>9.3f} {r['json_mb']:>8.2f} {r['format']:>17} "
                     f"{r['distinct_quilts']:>6} {r['process_cpu_s']:>6.2f} "
                     f"{r['rss_mb']:>6.0f} {r['optimal']}")
    text = "\n".join(lines)
    print(text)
    if args.out:
        result = {"command": " ".join(sys.argv), "machine": machine_facts(),
                  "code": code,
                  "load_average": [load_start, os.getloadavg()], "rows": rows,
                  "note": args.note}
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1, default=str))
        args.out.with_suffix(".txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
