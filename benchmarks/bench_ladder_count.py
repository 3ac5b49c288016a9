"""A long two-row ladder (hidden state and observation) or chain, every node sensitive, a count
over 3 steps, planned and written (issue 31, part 4: a million steps in two minutes and 4 GB).

Each size runs in fresh processes, timed whole:

* ``api``: import quiltpriv, build the model with ``qp.hidden_markov(T, ...)`` (two hidden
  states, flip probability 0.1, emission 0.8/0.2) or ``qp.markov_chain(T, ...)`` (flip 0.1),
  plan ``CountQuery((X_{T/4}, X_{T/2}, X_{3T/4}), 1000)`` with every node sensitive
  (``qp.plan``) and write the plan's JSON. Reported: the process's wall and CPU time (user +
  system), the build, plan and JSON CPU times, peak RSS, the plan's scale and optimality.
* ``cli``: what a command-line user runs on a model written beforehand (``.json.gz`` of
  ``qp.theta_to_dict``, not timed): ``python -m quiltpriv plan MODEL.json.gz --sensitive all
  --epsilon 1 --query count --records 1000 --attributes X..,X..,X.. --time-limit 3600 --json
  -o plan.json``,
  timed from outside (``os.wait4`` through ``measure.run_measured``: wall, CPU, peak RSS) with
  the plan file's size.

``--profile T`` adds the top of a cProfile (by own time, CPU clock) of the ``cli`` process at
that size (reading the model included). The machine is shared: compare CPU times.

    python benchmarks/bench_ladder_count.py --sizes 10000,100000,1000000 \
        --out benchmarks/results/ladder-count-DATE
    python benchmarks/bench_ladder_count.py --models chain --sizes 10000 --modes cli
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_core import code_version, machine_facts  # noqa: E402
from measure import PEAK_RSS_SOURCE, run_measured  # noqa: E402

BUILD = r"""
def build(model, T):
    import quiltpriv as qp
    flip = [[0.9, 0.1], [0.1, 0.9]]
    if model == "chain":
        return qp.markov_chain(T, flip, [0.5, 0.5])
    return qp.hidden_markov(T, flip, [[0.8, 0.2], [0.2, 0.8]], [0.5, 0.5])

def attributes(T):
    return tuple(f"X{int(T * f)}" for f in (0.25, 0.5, 0.75))
"""

WORKER = PEAK_RSS_SOURCE + BUILD + r"""
import json, resource, sys, time
import quiltpriv as qp
model, T = sys.argv[1], int(sys.argv[2])
c = time.process_time()
theta = build(model, T)
query = qp.CountQuery(attributes(T), 1000)
build_s = time.process_time() - c
c = time.process_time()
p = qp.plan(theta, query, theta.nodes, 1.0, time_limit=None)
plan_s = time.process_time() - c
c = time.process_time()
text = p.to_json()
json_s = time.process_time() - c
runs = getattr(p.sensitive, "runs", None)
print(json.dumps({"nodes": len(theta.nodes), "build_cpu_s": build_s, "plan_cpu_s": plan_s,
                  "json_cpu_s": json_s, "json_mb": len(text) / 1e6,
                  "rss_mb": peak_rss_mb(), "scale": p.scale, "optimal": bool(p.optimal),
                  "format": json.loads(text)["format"], "runs": None if runs is None
                  else len(runs)}))
"""

WRITER = BUILD + r"""
import gzip, json, sys
import quiltpriv as qp
model, T, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with gzip.open(path, "wt", encoding="utf-8") as fh:
    json.dump(qp.theta_to_dict(build(model, T)), fh)
"""

PROFILER = r"""
import cProfile, io, pstats, sys, time
from quiltpriv.cli import main
prof = cProfile.Profile(time.process_time)
prof.enable()
try:
    main(sys.argv[1:])
except SystemExit:
    pass
prof.disable()
buf = io.StringIO()
pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(20)
print(buf.getvalue())
"""


def attributes(t: int) -> list[str]:
    return [f"X{int(t * f)}" for f in (0.25, 0.5, 0.75)]


def run_api(model: str, t: int) -> dict[str, Any]:
    start = time.perf_counter()
    before = os.times()
    out = subprocess.run([sys.executable, "-c", WORKER, model, str(t)],
                         capture_output=True, text=True, check=True, cwd=HERE.parent)
    after = os.times()
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row.update(model=model, T=t, mode="api", wall_s=time.perf_counter() - start,
               cpu_s=(after.children_user - before.children_user
                      + after.children_system - before.children_system))
    return row


def _cli_args(model_path: str, t: int, out: str) -> list[str]:
    return ["plan", model_path, "--sensitive", "all", "--epsilon", "1", "--query", "count",
            "--records", "1000", "--attributes", ",".join(attributes(t)), "--time-limit",
            "3600", "--json", "-o", out]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--models", default="ladder,chain")
    ap.add_argument("--modes", default="api,cli")
    ap.add_argument("--api-max", type=int, default=None,
                    help="run the api mode only up to this T (the cli mode at every size)")
    ap.add_argument("--profile", type=int, default=None, help="profile the cli run at this T")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--note", default="")
    args = ap.parse_args()
    load_start = os.getloadavg()
    rows = []
    for model in args.models.split(","):
        for t in (int(x) for x in args.sizes.split(",")):
            for mode in args.modes.split(","):
                if mode == "api" and args.api_max is not None and t > args.api_max:
                    continue
                row = run_api(model, t) if mode == "api" else run_cli_measured(model, t, False)
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "profile"}), flush=True)
        if args.profile:
            rows.append({**run_cli_measured(model, args.profile, True), "profiled": True})
    lines = ["# every node sensitive, a count over 3 steps (benchmarks/bench_ladder_count.py)",
             "", f"machine: {machine_facts()}", f"code: {code_version()}",
             f"load average at start {load_start}, at end {os.getloadavg()}",
             f"note: {args.note}", "",
             f"{'model':6} {'mode':4} {'T':>8} {'nodes':>8} {'wall s':>7} {'CPU s':>7} "
             f"{'build':>6} {'plan':>6} {'JSON':>5} {'RSS MB':>7} {'out MB':>7} {'runs':>6} "
             f"{'scale':>6} optimal"]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['model']:6} {r['mode']:4} {r['T']:>8} error: {r['error']}")
            continue
        api = r["mode"] == "api"
        nodes = r.get("nodes", r["T"] * (2 if r["model"] == "ladder" else 1))
        lines.append(
            f"{r['model']:6} {r['mode']:4} {r['T']:>8} {nodes:>8} {r['wall_s']:>7.1f} "
            f"{r['cpu_s']:>7.2f} "
            + (f"{r['build_cpu_s']:>6.2f} {r['plan_cpu_s']:>6.2f} {r['json_cpu_s']:>5.2f} "
               if api else f"{'-':>6} {'-':>6} {'-':>5} ")
            + f"{r['rss_mb']:>7.0f} {r['json_mb' if api else 'plan_file_mb']:>7.2f} "
            f"{r['runs'] if r['runs'] is not None else '-':>6} {r['scale']:>6g} {r['optimal']}"
            + ("  (profiled)" if r.get("profiled") else ""))
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


def run_cli_measured(model: str, t: int, profile: bool) -> dict[str, Any]:
    """Write the model (not timed), then run the command in its own process and read its
    CPU time and peak RSS from ``os.wait4`` through the small launcher of ``measure.py``."""
    row: dict[str, Any] = {"model": model, "T": t, "mode": "cli"}
    with tempfile.TemporaryDirectory(prefix="bench-ladder-") as tmp:
        path, out = os.path.join(tmp, "model.json.gz"), os.path.join(tmp, "plan.json")
        subprocess.run([sys.executable, "-c", WRITER, model, str(t), path], check=True,
                       cwd=HERE.parent)
        row["model_file_mb"] = os.path.getsize(path) / 1e6
        head = ([sys.executable, "-c", PROFILER] if profile
                else [sys.executable, "-m", "quiltpriv"])
        m = run_measured([*head, *_cli_args(path, t, out)], cwd=HERE.parent)
        row.update(wall_s=m.wall_s, cpu_s=m.cpu_s, rss_mb=m.rss_mb,
                   rss_floor_mb=m.rss_floor_mb)
        stdout = m.stdout
        if m.returncode != 0:
            row["error"] = f"exit {m.returncode}: " + " ".join(
                m.stderr.decode("utf-8", "replace").strip().splitlines()[-1:])
            return row
        row["plan_file_mb"] = os.path.getsize(out) / 1e6
        with open(out, encoding="utf-8") as fh:
            d = json.load(fh)
        row.update(scale=d["scale"], optimal=bool(d["optimal"]), format=d["format"],
                   runs=len(d["sensitive"]["runs"]) if "runs" in d["sensitive"] else None)
        if profile:
            row["profile"] = stdout.decode("utf-8", "replace")
    return row


if __name__ == "__main__":
    main()
