"""Time series at the lengths people record: the fraction of time in a state, every step sensitive.

Each run is the whole command-line process a practitioner runs, timed from outside: reading
the model (a ``.json.gz`` file written beforehand by ``qp.markov_chain`` /
``qp.hidden_markov``, not timed), planning and writing the result:

* APMQM: ``quiltpriv plan MODEL.json.gz --sensitive all --epsilon 1 --query fraction --state 1
  --attributes X1..XT --json -o plan.json`` (every step sensitive);
* MQM: ``quiltpriv release MODEL.json.gz --mechanism mqm --data trace.csv --sensitive all ...
  --seed 1 --json -o record.json`` (every entry protected; the record holds the plan).

Reported per run: the process's wall time, its CPU time (user + system) and peak RSS (``os.wait4``
through ``measure.run_measured``), the size of the file written, the scale times T, whether the plan
is proven optimal, and the relative distance to the closed form (a stationary symmetric two-state
chain with flip probability 0.1, eps = 1: 31.737788616 / T; the plan must be above it by less than
1e-9 relative). The machine may be shared: the CPU time is the figure to compare, and the results
record the load average.

The HMM (two hidden states with flip probability 0.1, emission 0.8/0.2; every hidden state and
every observation sensitive, the query reads the observations) is planned by the HMM search
(:mod:`quiltpriv.mechanisms.hmm_quilts`); its closed form is 30.876143219 / T
(docs/time-series.md).

    python benchmarks/bench_time_series.py                       # the committed run
    python benchmarks/bench_time_series.py --sizes 1000 --hmm-sizes '' --quick   # a smoke run
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
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from measure import run_measured  # noqa: E402

CLOSED_FORM = 31.737788616  # T times the scale at eps = 1, p = 0.1 (docs/time-series.md)
HMM_CLOSED_FORM = 30.876143219  # the same for the HMM with emission 0.8 (docs/time-series.md)

#: Writes the model (and, for MQM, a one-row trace) before the timed process; not timed.
BUILDER = r"""
import gzip, json, sys
import quiltpriv as qp
model, n, path, trace = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
flip = [[0.9, 0.1], [0.1, 0.9]]
if model == "chain":
    theta = qp.markov_chain(n, flip, [0.5, 0.5])
else:
    theta = qp.hidden_markov(n, flip, [[0.8, 0.2], [0.2, 0.8]], [0.5, 0.5])
with gzip.open(path, "wt", encoding="utf-8") as fh:
    json.dump(qp.theta_to_dict(theta), fh)
steps = [f"X{t}" for t in range(1, n + 1)]
with open(trace, "w", encoding="utf-8") as fh:
    fh.write(",".join(steps) + chr(10))
    fh.write(",".join("1" if t % 3 else "0" for t in range(n)) + chr(10))
"""


def command(mechanism: str, n: int, model: str, trace: str, out: str,
            limit: float) -> list[str]:
    """The timed command line (``python -m quiltpriv``: the installed entry point's code)."""
    common = ["--sensitive", "all", "--epsilon", "1", "--query", "fraction", "--state", "1",
              "--attributes", f"X1..X{n}", "--time-limit", f"{limit:g}", "--json", "-o", out]
    if mechanism == "apmqm":
        return [sys.executable, "-m", "quiltpriv", "plan", model, *common]
    return [sys.executable, "-m", "quiltpriv", "release", model, "--mechanism", "mqm",
            "--data", trace, "--seed", "1", *common]


def machine_facts() -> dict:
    """The machine, as the other results files record it (cpu, cores, RAM, versions, load)."""
    import numpy as np

    cpu, ram = platform.processor() or "unknown", None
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in
                   Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name"))
        ram = next(round(int(line.split()[1]) / 2**20, 1) for line in
                   Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
    except (OSError, StopIteration):
        pass
    return {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "cpu": cpu,
            "cores": os.cpu_count(), "ram_gb": ram, "platform": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__,
            "loadavg_at_end": os.getloadavg()}


def run(model: str, mechanism: str, n: int, limit: float, timeout: float) -> dict:
    row: dict = {"model": model, "mechanism": mechanism, "T": n}
    with tempfile.TemporaryDirectory(prefix="bench-ts-") as tmp:
        path, trace, out = (os.path.join(tmp, f) for f in ("model.json.gz", "trace.csv",
                                                         "out.json"))
        subprocess.run([sys.executable, "-c", BUILDER, model, str(n), path, trace], check=True,
                       cwd=ROOT)
        row["model_file_mb"] = os.path.getsize(path) / 2**20
        cmd = command(mechanism, n, path, trace, out, limit)
        m = run_measured(cmd, cwd=ROOT, timeout=timeout)
        row.update(cpu_s=m.cpu_s, rss_mb=m.rss_mb, rss_floor_mb=m.rss_floor_mb)
        if m.killed:
            row["error"] = f"killed at {timeout:g} s"
            return row
        row["wall_s"] = m.wall_s
        err = m.stderr.decode("utf-8", "replace")
        if m.returncode != 0:
            row["error"] = f"exit {m.returncode}: " + ((err.strip().splitlines() or ["?"])[-1])
            return row
        row["out_file_mb"] = os.path.getsize(out) / 2**20
        with open(out, encoding="utf-8") as fh:
            d = json.load(fh)
    if mechanism == "apmqm":
        scale, optimal = d["scale"], d["optimal"]
    else:
        scale, optimal = d["details"]["scale"], d["details"]["optimal"]
    row.update(scale_T=scale * n, optimal=bool(optimal),
               closed_form_rel=scale * n / (CLOSED_FORM if model == "chain"
                                            else HMM_CLOSED_FORM) - 1)
    return row


def table(rows: list[dict]) -> str:
    head = (f"{'model':6} {'mech':6} {'T':>8} {'wall s':>8} {'CPU s':>8} {'RSS MB':>8} "
            f"{'out MB':>8} {'scale*T':>14} {'optimal':>8} {'vs closed form':>15}")
    lines = [head, "-" * len(head)]
    for r in rows:
        if "error" in r:
            wall = f"wall {r['wall_s']:.2f} s, " if "wall_s" in r else ""
            used = (f" ({wall}CPU {r['cpu_s']:.1f} s, RSS {r['rss_mb']:.0f} MB by then)"
                    if "cpu_s" in r else "")
            lines.append(f"{r['model']:6} {r['mechanism']:6} {r['T']:>8} {r['error']}{used}")
            continue
        cf = f"{r['closed_form_rel']:+.2e}" if "closed_form_rel" in r else "-"
        lines.append(f"{r['model']:6} {r['mechanism']:6} {r['T']:>8} {r['wall_s']:8.2f} "
                     f"{r['cpu_s']:8.2f} {r['rss_mb']:8.0f} {r['out_file_mb']:8.1f} "
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
    ap.add_argument("--note", default="", help="a sentence for the results (the load, say)")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    hmm = [int(s) for s in args.hmm_sizes.split(",") if s]
    mechs = [m for m in args.mechanisms.split(",") if m]
    rows = []
    load_start = os.getloadavg()
    for model, ns in (("chain", sizes), ("hmm", hmm)):
        for n in ns:
            for m in mechs:
                r = run(model, m, n, args.time_limit, args.timeout)
                rows.append(r)
                print(table([r]).splitlines()[-1], flush=True)
    text = table(rows)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT, check=False).stdout.strip()
    machine = {**machine_facts(), "commit": commit, "niceness": os.nice(0),
               "time_limit": args.time_limit, "loadavg_at_start": load_start,
               "command": " ".join(["python", "benchmarks/bench_time_series.py",
                                    *(sys.argv[1:] if argv is None else argv)]),
               "note": args.note}
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
