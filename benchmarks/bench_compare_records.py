"""``compare`` and ``audit`` against the number of records n (10^2 .. 10^6, optionally 10^7).

On the bundled student model, sensitive attribute ``income``, eps = 1, two count queries:

- ``sat``: ``quiltpriv compare student --sensitive income --attributes sat --records N
  --epsilon 1``;
- ``height,sat``: the same with ``--attributes height,sat --where "height == 1 and sat == 1"``
  and ``--domain height=0|1,sat=0|1`` (a predicate over the 0/1 record states, declared).

Per n and query:

- ``compare``, ``audit``: the whole command (a fresh Python process: imports, model loading,
  the APMQM plan and the laws), wall time and CPU time (user + sys; the machine is shared, so
  wall time includes other processes' load), peak RSS. ``audit`` audits the Wasserstein
  mechanism's scale read from the compare run (the tight case: its loss is close to eps).
- in-process: :func:`quiltpriv.mechanisms.network_wasserstein.network_wasserstein` and
  :func:`quiltpriv.audit.exact.audit` alone (median of ``--repeat``), with ``W`` (exact when its
  certified bracket closes) and the audit's loss bracket and verdict.
- the exact rational path (what ``compare`` ran at every n before the certified laws) for
  n <= 1000, once, to show what the certified laws replace.

Usage::

    python benchmarks/bench_compare_records.py                 # n = 10^2..10^6, writes results
    python benchmarks/bench_compare_records.py --max-n 10000000  # also 10^7
    python benchmarks/bench_compare_records.py --quick         # n <= 10^4, one repeat, no file
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # run from a source checkout without installing
    sys.path.insert(0, str(ROOT))

from bench_core import (  # noqa: E402
    _table,
    add_code_option,
    code_version,
    machine_facts,
    write_results,
)
from measure import PEAK_RSS_SOURCE  # noqa: E402

from quiltpriv.audit.exact import audit  # noqa: E402
from quiltpriv.mechanisms.network_wasserstein import network_wasserstein  # noqa: E402
from quiltpriv.model.loading import load_model  # noqa: E402
from quiltpriv.queries.query import CountQuery  # noqa: E402

EPSILON = 1.0
SENSITIVE = "income"
QUERIES: dict[str, tuple[list[str], str | None]] = {
    "sat": (["sat"], None),
    "height,sat": (["height", "sat"], "height == 1 and sat == 1"),
}
#: The target: compare at n = 10^6 within this many seconds (whole command).
TARGET_SECONDS = 10.0
TARGET_RECORDS = 10**6

# Runs the CLI in a fresh interpreter and reports its own peak RSS (kB) on stderr.
_RUNNER = PEAK_RSS_SOURCE + ("import sys\n"
                             "from quiltpriv.cli import main\n"
                             "rc = main(sys.argv[1:])\n"
                             "sys.stderr.write('\\nBENCH_RSS_KB %d\\n' % "
                             "round(peak_rss_mb() * 1024))\n"
                             "sys.exit(rc)\n")


def _query_args(name: str, n: int) -> list[str]:
    attrs, where = QUERIES[name]
    args = ["--sensitive", SENSITIVE, "--attributes", ",".join(attrs), "--records", str(n),
            "--epsilon", f"{EPSILON:g}"]
    if where is not None:
        args += ["--where", where, "--domain", ",".join(f"{a}=0|1" for a in attrs)]
    return args


def run_command(argv: list[str], timeout: float) -> dict[str, Any]:
    """One ``quiltpriv`` command in a fresh process: wall and CPU seconds, RSS, output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    before = os.times()
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", _RUNNER, *argv], capture_output=True,
                              text=True, timeout=timeout, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        return {"argv": argv, "error": f"timed out after {timeout:g} s"}
    wall = time.perf_counter() - t0
    after = os.times()
    rss = None
    for line in proc.stderr.splitlines():
        if line.startswith("BENCH_RSS_KB "):
            rss = int(line.split()[1]) / 1024
    err = [ln for ln in proc.stderr.splitlines() if ln.strip() and "BENCH_RSS_KB" not in ln]
    return {"argv": argv, "rc": proc.returncode, "wall_s": wall,
            "cpu_s": (after.children_user - before.children_user)
            + (after.children_system - before.children_system),
            "rss_mb": rss, "stdout": proc.stdout, "stderr": err[-1:] if err else []}


def _wasserstein_scale(compare_json: str) -> float | None:
    rows = {r["mechanism"]: r for r in json.loads(compare_json)["rows"]}
    w = rows["Wasserstein"]
    return w["scale"] if w["applicable"] else None


def _median_time(fn, repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def bench(n: int, name: str, repeat: int, timeout: float, exact_up_to: int) -> dict[str, Any]:
    theta = load_model("student")
    attrs, where = QUERIES[name]
    # The predicate reads the 0/1 record categories: the declared domain says so.
    query = CountQuery(attrs, n, where=where,
                       domain=None if where is None else {a: (0, 1) for a in attrs})
    row: dict[str, Any] = {"records": n, "query": name}
    comp = run_command(["compare", "student", *_query_args(name, n), "--json"], timeout)
    row["compare_cmd"] = {k: v for k, v in comp.items() if k != "stdout"}
    scale = _wasserstein_scale(comp["stdout"]) if comp.get("rc") == 0 else None
    row["wasserstein_scale_cmd"] = scale
    t_w, w = _median_time(lambda: network_wasserstein(theta, query, SENSITIVE, EPSILON), repeat)
    r = w.result
    row["wasserstein"] = {"seconds": t_w, "W": r.sensitivity, "W_lower": r.sensitivity_lower,
                          "exact": r.exact, "arithmetic": w.arithmetic, "scale": r.scale}
    if scale is not None:
        aud = run_command(["audit", "student", *_query_args(name, n), "--scale", repr(scale),
                           "--json"], timeout)
        row["audit_cmd"] = {k: v for k, v in aud.items() if k != "stdout"}
        if aud.get("rc") in (0, 1):
            row["audit_cmd"]["verdict"] = json.loads(aud["stdout"])["verdict"]
    t_a, a = _median_time(lambda: audit(theta, query, SENSITIVE, EPSILON, r.scale), repeat)
    row["audit"] = {"seconds": t_a, "loss": a.loss, "loss_lower": a.loss_lower,
                    "verdict": a.verdict, "arithmetic": a.arithmetic}
    if n <= exact_up_to:
        t_e, e = _median_time(lambda: network_wasserstein(theta, query, SENSITIVE, EPSILON,
                                                          exact_records=n), 1)
        row["exact_rationals"] = {"seconds": t_e, "W": e.sensitivity}
    return row


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def report(rows: list[dict[str, Any]], facts: dict[str, Any], argv: list[str],
           load_start: str, load_end: str) -> str:
    out = [
        "quiltpriv compare / audit against the number of records",
        f"date {facts['date']}; {facts['cpu']}, {facts['cores']} cores, {facts['ram_gb']} GB "
        f"RAM; {facts['platform']}",
        f"python {facts['python']}, numpy {facts['numpy']}, pgmpy {facts['pgmpy']}; "
        f"quiltpriv at {facts['code']}",
        f"uptime at start: {load_start}",
        f"uptime at end:   {load_end}",
        f"command: python benchmarks/bench_compare_records.py {' '.join(argv)}".rstrip(),
        f"student model, sensitive {SENSITIVE}, eps {EPSILON:g}; queries: count over sat; "
        "count over height,sat where \"height == 1 and sat == 1\"",
        "",
    ]
    head = ("n", "query", "compare s", "cpu s", "RSS MB", "audit s", "cpu s", "verdict",
            "W", "exact", "W fn s", "audit fn s", "loss bracket", "exact-Q s")
    table = []
    for r in rows:
        c, a = r.get("compare_cmd", {}), r.get("audit_cmd", {})
        w, au = r["wasserstein"], r["audit"]
        ex = r.get("exact_rationals")
        table.append((
            f"{r['records']:.0e}".replace("e+0", "e"), r["query"],
            c.get("error") or _s(c.get("wall_s")), _s(c.get("cpu_s")),
            "-" if c.get("rss_mb") is None else f"{c['rss_mb']:.0f}",
            a.get("error") or _s(a.get("wall_s")), _s(a.get("cpu_s")), a.get("verdict", "-"),
            f"{w['W']:.0f}", "yes" if w["exact"] else f"[{w['W_lower']:.0f}, {w['W']:.0f}]",
            _s(w["seconds"]), _s(au["seconds"]),
            f"[{au['loss_lower']:.9f}, {au['loss']:.9f}]",
            _s(ex["seconds"]) if ex else "-"))
    out += _table(head, table)
    out += ["",
            "compare s / audit s: the whole command in a fresh process (imports, model, APMQM "
            "plan, laws), wall clock; cpu s: its user + sys time (the machine is shared);",
            "audit audits the Wasserstein scale W / eps read from the compare run (the tight "
            "case); W fn s / audit fn s: network_wasserstein() / audit() in-process (median);",
            "exact: W proven exact (its certified bracket closes) or the bracket; exact-Q s: the "
            "exact rational laws (the path compare used at every n before), n <= 1000, once."]
    hits = [r for r in rows if r["records"] == TARGET_RECORDS and "wall_s" in r["compare_cmd"]]
    for r in hits:
        t = r["compare_cmd"]["wall_s"]
        out.append(f"target: compare ({r['query']}) at n = 10^6 within {TARGET_SECONDS:g} s: "
                   f"{t:.2f} s wall, {r['compare_cmd']['cpu_s']:.2f} s cpu: "
                   f"{'ok' if t <= TARGET_SECONDS else 'MISSED'}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="n up to 10^4, one repetition; writes nothing unless --out is given")
    ap.add_argument("--max-n", type=int, default=10**6, help="largest n (a power of ten)")
    ap.add_argument("--repeat", type=int, default=None, help="in-process repeats (default 3)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per command")
    ap.add_argument("--out", help="write OUT.txt and OUT.json (default for a full run: "
                                  "benchmarks/results/compare-records-<date>)")
    add_code_option(ap)
    args = ap.parse_args(argv)
    top = min(args.max_n, 10**4) if args.quick else args.max_n
    repeat = args.repeat or (1 if args.quick else 3)
    sizes = [10**k for k in range(2, 12) if 10**k <= top]
    load_start = _uptime()
    code = args.code or code_version()
    rows = []
    for n in sizes:
        for name in QUERIES:
            print(f"[n = {n}, {name}] ...", file=sys.stderr, flush=True)
            rows.append(bench(n, name, repeat, args.timeout, exact_up_to=1000))
    load_end = _uptime()
    facts = {**machine_facts(), "code": code}
    text = report(rows, facts, argv, load_start, load_end)
    print(text, end="")
    write_results("compare-records", args.out, args.quick, text,
                  {"machine": facts, "argv": argv, "epsilon": EPSILON,
                   "sensitive": SENSITIVE, "queries": {k: {"attributes": v[0], "where": v[1]}
                                                      for k, v in QUERIES.items()},
                   "uptime_start": load_start, "uptime_end": load_end, "rows": rows})
    ok = all(r["compare_cmd"].get("rc") == 0 for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
