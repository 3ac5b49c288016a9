"""A long two-row ladder (hidden state and observation), every node sensitive, a count over 3
observations, planned by the general APMQM planner (issue 31, part 4).

Each size runs in one fresh process, timed whole: import quiltpriv, build
``qp.hidden_markov(T, ...)`` (two hidden states, flip probability 0.1, emission 0.8/0.2), plan
``CountQuery((X_{T/4}, X_{T/2}, X_{3T/4}), 1000)`` with every hidden state and observation
sensitive (``qp.plan``), and write the plan's JSON. Reported per size: the process's wall and
CPU time (user + system), the build, plan and JSON CPU times, peak RSS, the plan's scale and
whether it is proven optimal; ``--profile T`` adds the top of a cProfile (by own time, CPU
clock) of the plan at that size. The machine is shared: compare CPU times.

    python benchmarks/bench_ladder_count.py --sizes 1000,10000 --out results/ladder-count-DATE
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

WORKER = r"""
import cProfile, io, json, pstats, resource, sys, time
import quiltpriv as qp
T, profile = int(sys.argv[1]), sys.argv[2] == "1"
c = time.process_time()
theta = qp.hidden_markov(T, [[0.9, 0.1], [0.1, 0.9]], [[0.8, 0.2], [0.2, 0.8]], [0.5, 0.5])
obs = [v for v in theta.nodes if v.startswith("X")]
query = qp.CountQuery(tuple(obs[int(T * f)] for f in (0.25, 0.5, 0.75)), 1000)
build = time.process_time() - c
prof = cProfile.Profile(time.process_time) if profile else None
c = time.process_time()
if prof:
    prof.enable()
p = qp.plan(theta, query, theta.nodes, 1.0, time_limit=None)
if prof:
    prof.disable()
plan_s = time.process_time() - c
c = time.process_time()
text = p.to_json()
json_s = time.process_time() - c
ru = resource.getrusage(resource.RUSAGE_SELF)
out = {"T": T, "nodes": len(theta.nodes), "attributes": list(query.attributes),
       "build_cpu_s": build, "plan_cpu_s": plan_s, "json_cpu_s": json_s,
       "json_mb": len(text) / 1e6, "rss_mb": ru.ru_maxrss / 1024,
       "scale": p.scale, "optimal": bool(p.optimal)}
if prof:
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(15)
    out["profile"] = buf.getvalue()
print(json.dumps(out))
"""


def run(t: int, profile: bool) -> dict[str, Any]:
    start = time.perf_counter()
    before = os.times()
    out = subprocess.run([sys.executable, "-c", WORKER, str(t), "1" if profile else "0"],
                         capture_output=True, text=True, check=True, cwd=HERE.parent)
    after = os.times()
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["process_wall_s"] = time.perf_counter() - start
    row["process_cpu_s"] = (after.children_user - before.children_user
                            + after.children_system - before.children_system)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--profile", type=int, default=None, help="profile the plan at this T")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--note", default="")
    args = ap.parse_args()
    load_start = os.getloadavg()
    rows = [run(int(t), False) for t in args.sizes.split(",")]
    if args.profile:
        rows.append({**run(args.profile, True), "profiled": True})
    lines = ["# two-row ladder, every node sensitive, a count over 3 observations "
             "(benchmarks/bench_ladder_count.py)", "",
             f"machine: {machine_facts()}", f"code: {code_version()}",
             f"load average at start {load_start}, at end {os.getloadavg()}",
             f"note: {args.note}", "",
             f"{'T':>8} {'nodes':>8} {'wall s':>8} {'CPU s':>7} {'plan CPU':>9} "
             f"{'JSON CPU':>9} {'RSS MB':>7} {'scale':>8} optimal"]
    for r in rows:
        lines.append(f"{r['T']:>8} {r['nodes']:>8} {r['process_wall_s']:>8.1f} "
                     f"{r['process_cpu_s']:>7.2f} {r['plan_cpu_s']:>9.2f} "
                     f"{r['json_cpu_s']:>9.2f} {r['rss_mb']:>7.0f} {r['scale']:>8g} "
                     f"{r['optimal']}" + ("  (profiled)" if r.get("profiled") else ""))
        if "profile" in r:
            lines += ["", r["profile"]]
    text = "\n".join(lines)
    print(text)
    if args.out:
        result = {"command": " ".join(sys.argv), "machine": machine_facts(),
                  "code": code_version(), "load_average": [load_start, os.getloadavg()],
                  "rows": rows, "note": args.note}
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1, default=str))
        args.out.with_suffix(".txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
