"""Time series at the lengths people record: the fraction of time in a state, every step sensitive.

Each run is one fresh process (``python -c``), timed whole: import quiltpriv, build the model
(``qp.markov_chain`` / ``qp.hidden_markov``), plan (APMQM: ``qp.plan`` with every step
sensitive; MQM: ``markov_quilt_mechanism`` with every entry protected and ``lipschitz = 1/T``),
and the plan's fingerprints. Reported per run: wall time of the process, of the build and of
the plan, peak RSS, the scale times T, whether the plan is proven optimal, and for the chain
the closed form (a stationary symmetric two-state chain with flip probability 0.1, eps = 1:
31.737788616 / T; the plan must be above it by less than 1e-9 relative).

The HMM (two hidden states with flip probability 0.1, emission 0.8/0.2; every hidden state and
every observation sensitive, the query reads the observations) is planned by the HMM search
(:mod:`quiltpriv.mechanisms.hmm_quilts`); its closed form is 30.876143219 / T
(docs/time-series.md). Every row reports the process's CPU time (user + system) next to its
wall time: the machine is shared.

    python benchmarks/bench_time_series.py                       # the committed run
    python benchmarks/bench_time_series.py --sizes 1000 --quick  # a smoke run, writes nothing
    python benchmarks/bench_time_series.py --out /tmp/ts         # /tmp/ts.txt and /tmp/ts.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CLOSED_FORM = 31.737788616  # T times the scale at eps = 1, p = 0.1 (docs/time-series.md)
HMM_CLOSED_FORM = 30.876143219  # the same for the HMM with emission 0.8 (docs/time-series.md)

WORKER = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import quiltpriv as qp
from quiltpriv.mechanisms.mqm import markov_quilt_mechanism
model, mechanism, n, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
t_import = time.perf_counter() - t0
flip = [[0.9, 0.1], [0.1, 0.9]]
t1 = time.perf_counter()
if model == "chain":
    theta = qp.markov_chain(n, flip, [0.5, 0.5])
    steps = theta.nodes
else:
    theta = qp.hidden_markov(n, flip, [[0.8, 0.2], [0.2, 0.8]], [0.5, 0.5])
    steps = tuple(f"X{t}" for t in range(1, n + 1))
query = qp.FractionQuery(steps, "1")
t_build = time.perf_counter() - t1
t2 = time.perf_counter()
if mechanism == "apmqm":
    p = qp.plan(theta, query, theta.nodes, 1.0, time_limit=limit)
    scale, optimal = p.scale, p.optimal
else:
    p = markov_quilt_mechanism(theta, 1.0, lipschitz=1.0 / n, read=steps, time_limit=limit)
    scale, optimal = p.scale, p.optimal
t_plan = time.perf_counter() - t2
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"import_s": t_import, "build_s": t_build, "plan_s": t_plan,
                  "scale_T": scale * n, "optimal": bool(optimal), "rss_mb": ru.ru_maxrss / 1024,
                  "cpu_s": ru.ru_utime + ru.ru_stime}))
"""


def run(model: str, mechanism: str, n: int, limit: float, timeout: float) -> dict:
    t = time.perf_counter()
    try:
        out = subprocess.run([sys.executable, "-c", WORKER, model, mechanism, str(n), str(limit)],
                             capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                             check=False)
    except subprocess.TimeoutExpired:
        return {"model": model, "mechanism": mechanism, "T": n, "error": f"killed at {timeout} s"}
    wall = time.perf_counter() - t
    row = {"model": model, "mechanism": mechanism, "T": n, "wall_s": wall}
    if out.returncode != 0:
        row["error"] = (out.stderr.strip().splitlines() or ["?"])[-1]
        return row
    row.update(json.loads(out.stdout.strip().splitlines()[-1]))
    row["closed_form_rel"] = row["scale_T"] / (CLOSED_FORM if model == "chain"
                                               else HMM_CLOSED_FORM) - 1
    return row


def table(rows: list[dict]) -> str:
    head = (f"{'model':6} {'mech':6} {'T':>8} {'wall s':>8} {'CPU s':>8} {'build s':>8} "
            f"{'plan s':>8} "
            f"{'RSS MB':>8} {'scale*T':>14} {'optimal':>8} {'vs closed form':>15}")
    lines = [head, "-" * len(head)]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['model']:6} {r['mechanism']:6} {r['T']:>8} {r['error']}")
            continue
        cf = f"{r['closed_form_rel']:+.2e}" if "closed_form_rel" in r else "-"
        lines.append(f"{r['model']:6} {r['mechanism']:6} {r['T']:>8} {r['wall_s']:8.2f} "
                     f"{r.get('cpu_s', float('nan')):8.2f} "
                     f"{r['build_s']:8.2f} {r['plan_s']:8.2f} {r['rss_mb']:8.0f} "
                     f"{r['scale_T']:14.9f} {str(r['optimal']):>8} {cf:>15}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000,500000")
    ap.add_argument("--hmm-sizes", default="1000,10000,100000,500000",
                    help="sizes of the HMM runs")
    ap.add_argument("--mechanisms", default="apmqm,mqm")
    ap.add_argument("--time-limit", type=float, default=60.0,
                    help="the planners' time limit in seconds (default 60)")
    ap.add_argument("--timeout", type=float, default=300.0, help="kill a run after this")
    ap.add_argument("--quick", action="store_true", help="write nothing unless --out")
    ap.add_argument("--out", help="write OUT.txt and OUT.json")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    hmm = [int(s) for s in args.hmm_sizes.split(",") if s]
    mechs = [m for m in args.mechanisms.split(",") if m]
    rows = []
    for model, ns in (("chain", sizes), ("hmm", hmm)):
        for n in ns:
            for m in mechs:
                r = run(model, m, n, args.time_limit, args.timeout)
                rows.append(r)
                print(table([r]).splitlines()[-1], flush=True)
    text = table(rows)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT, check=False).stdout.strip()
    machine = {"python": platform.python_version(), "platform": platform.platform(),
               "cpus": os.cpu_count(), "commit": commit,
               "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
               "time_limit": args.time_limit, "load_average_at_end": os.getloadavg()}
    print()
    print(text)
    print(json.dumps(machine))
    out = args.out
    if out is None and not args.quick:
        out = str(ROOT / "benchmarks" / "results" / f"time-series-{dt.date.today()}")
    if out is not None:
        Path(f"{out}.txt").write_text(text + "\n\n" + json.dumps(machine) + "\n",
                                      encoding="utf-8")
        Path(f"{out}.json").write_text(json.dumps({"machine": machine, "rows": rows},
                                                  indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
