"""What a user waits for: start-up, reading model files, and whole command-line runs.

Whole processes, as a shell runs them (hyperfine-style): every command runs once untimed (it
compiles this checkout's bytecode into a private cache and warms the file cache), then
``--runs`` times, the commands interleaved round by round so a change in the machine's load
hits all of them alike; the median (and min, max) of each is reported, and every ratio is
taken between medians of the same run.

- ``python -c pass`` (the interpreter), ``python -c "import numpy"`` (the yardstick of the
  start-up targets), ``import quiltpriv``, ``quiltpriv --help``;
- ``quiltpriv plan asia.bif.gz --sensitive smoke --query count --attributes asia,xray
  --records 1000 --epsilon 1`` (target: within 0.5 s), and the README's first command,
  ``quiltpriv plan student ...`` (a bundled Python model, declared with NetworkBuilder);
- ``quiltpriv plan munin.bif.gz`` with every node sensitive, a count over 3 seeded attributes
  (target: within 2 x pyAgrum's read of munin + 1 s), ``--runs-munin`` times;
- with ``--baseline DIR`` (another source tree, e.g. an export of an older commit), the same
  commands on that tree, for a before/after column.

Reading, in a worker process per network (in-process times, median of ``--repeat``): quiltpriv's
reader (:func:`quiltpriv.model.readers.read_bif` on the decompressed text, Theta included), pgmpy's
``BIFReader(string=text).get_model()`` + :func:`~quiltpriv.model.network.theta_from_pgmpy` (one run;
on ``--pgmpy-networks`` only, as it takes minutes on the large ones), and pyAgrum's
``loadBN`` on the decompressed file when pyAgrum is installed (it is not a dependency; note its
BIF reader parses probabilities as float32, so its model is not the file's).

The commands run this checkout's ``quiltpriv`` (``PYTHONPATH``), with ``sys.executable`` as the
interpreter; ``quiltpriv ARGS`` is ``python -c "import sys; from quiltpriv.cli import main;
sys.exit(main())" ARGS``, what the installed console script does.

Usage::

    python benchmarks/bench_startup.py                      # writes results/startup-<date>.*
    python benchmarks/bench_startup.py --quick              # 3 runs, small networks, no munin
    python benchmarks/bench_startup.py --baseline /tmp/main # before/after against another tree
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _path in (ROOT, HERE):  # run from a source checkout without installing; bench_core
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from bench_core import bif_path, machine_facts, write_results  # noqa: E402

#: Networks read by every reader (pgmpy takes seconds to minutes on the larger ones).
PGMPY_NETWORKS = ("asia", "alarm", "hepar2", "win95pts", "andes", "pigs", "link", "munin")
CLI = "import sys; from quiltpriv.cli import main; sys.exit(main())"
ASIA_ARGS = ("--sensitive", "smoke", "--query", "count", "--attributes", "asia,xray",
             "--records", "1000", "--epsilon", "1")
MUNIN_SEED = 2024
STUDENT = "quiltpriv plan student (bundled .py)"


def bundled_networks() -> list[str]:
    import pgmpy

    folder = Path(pgmpy.__file__).parent / "utils" / "example_models"
    return sorted((p.name[: -len(".bif.gz")] for p in folder.glob("*.bif.gz")),
                  key=lambda n: (folder / f"{n}.bif.gz").stat().st_size)


def _env(tree: Path, cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = str(tree)
    env["PYTHONPYCACHEPREFIX"] = cache  # bytecode is cached, as for an installed package
    return env


def _munin_args() -> tuple[str, ...]:
    import random

    from quiltpriv.model.readers import read_bif

    theta = read_bif(gzip.open(bif_path("munin"), "rt", encoding="utf-8").read(), "munin")
    attrs = random.Random(MUNIN_SEED).sample(list(theta.nodes), 3)
    return ("--sensitive", ",".join(theta.nodes), "--query", "count", "--attributes",
            ",".join(attrs), "--records", "1000", "--epsilon", "1")


def commands(quick: bool) -> list[tuple[str, list[str], bool]]:
    """(label, argv after the interpreter, is a munin run)."""
    py = []
    py.append(("python -c pass", ["-c", "pass"], False))
    py.append(("import numpy", ["-c", "import numpy"], False))
    py.append(("import quiltpriv", ["-c", "import quiltpriv"], False))
    py.append(("quiltpriv --help", ["-c", CLI, "--help"], False))
    py.append(("quiltpriv plan asia", ["-c", CLI, "plan", str(bif_path("asia")), *ASIA_ARGS],
               False))
    # The README's first command: a bundled Python model (declared with NetworkBuilder).
    py.append((STUDENT,
               ["-c", CLI, "plan", "student", "--sensitive", "income", "--query", "count",
                "--attributes", "height", "--records", "1000", "--epsilon", "1"], False))
    if not quick:
        py.append(("quiltpriv plan munin (all nodes)",
                   ["-c", CLI, "plan", str(bif_path("munin")), *_munin_args()], True))
    return py


def time_processes(trees: dict[str, Path], cmds: list[tuple[str, list[str], bool]],
                   runs: int, munin_runs: int) -> dict[str, dict[str, Any]]:
    """Median, min and max wall time of each (tree, command), interleaved round by round."""
    out: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as cache:
        jobs = [(tree_name, label, argv, munin) for tree_name in trees
                for label, argv, munin in cmds]
        times: dict[tuple[str, str], list[float]] = {(t, lab): [] for t, lab, _, _ in jobs}
        for tree_name, label, argv, _ in jobs:  # warm-up: bytecode cache, file cache
            done = subprocess.run([sys.executable, *argv], env=_env(trees[tree_name], cache),
                                  cwd=tempfile.gettempdir(), capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"{tree_name}: {label} failed:\n{done.stderr[-2000:]}")
        for r in range(max(runs, munin_runs)):
            for tree_name, label, argv, munin in jobs:
                if r >= (munin_runs if munin else runs):
                    continue
                env = _env(trees[tree_name], cache)
                t0 = time.perf_counter()
                subprocess.run([sys.executable, *argv], env=env, cwd=tempfile.gettempdir(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                times[(tree_name, label)].append(time.perf_counter() - t0)
            print(f"  round {r + 1}: {os.getloadavg()[0]:.1f} load", file=sys.stderr)
        for (tree_name, label), ts in times.items():
            out.setdefault(tree_name, {})[label] = {
                "median_s": statistics.median(ts), "min_s": min(ts), "max_s": max(ts),
                "runs": len(ts)}
    return out


# -- reading, in a worker per network -----------------------------------------------------------


def _median_time(fn: Any, repeat: int) -> float:
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def read_worker(name: str, repeat: int, with_pgmpy: bool,
                with_pyagrum: bool = True) -> dict[str, Any]:
    import warnings

    from quiltpriv.model.readers import read_bif

    path = bif_path(name)
    text = gzip.open(path, "rt", encoding="utf-8").read()
    row: dict[str, Any] = {"network": name, "bytes": len(text.encode("utf-8"))}
    theta = read_bif(text, name)
    row["nodes"] = len(theta.nodes)
    row["quiltpriv_s"] = _median_time(lambda: read_bif(text, name), repeat)
    gum = None
    if with_pyagrum:
        try:
            import pyagrum as gum
        except ImportError:
            gum = None
    if gum is not None:
        gum.setNumberOfThreads(1)
        with tempfile.TemporaryDirectory() as d:
            plain = Path(d) / f"{name}.bif"
            plain.write_text(text, encoding="utf-8")
            try:
                row["pyagrum_s"] = _median_time(lambda: gum.loadBN(str(plain)), repeat)
            except Exception as exc:  # pyAgrum refuses some bundled files (child: "Asy/Patch")
                row["pyagrum_error"] = str(exc).strip().splitlines()[0][:160]
        row["pyagrum_version"] = gum.__version__
    if with_pgmpy:
        from pgmpy.readwrite import BIFReader

        from quiltpriv.model.network import theta_from_pgmpy

        def pgmpy_read() -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theta_from_pgmpy(BIFReader(string=text).get_model(), [name])

        row["pgmpy_s"] = _median_time(pgmpy_read, 1)
    return row


def time_reading(networks: list[str], repeat: int, pgmpy_networks: set[str],
                 timeout: float) -> list[dict[str, Any]]:
    rows = []
    for name in networks:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--read-worker", name,
               "--repeat", str(repeat)] + (["--with-pgmpy"] if name in pgmpy_networks else [])
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            rows.append({"network": name, "error": f"timeout after {timeout} s"})
            continue
        if done.returncode != 0:
            rows.append({"network": name, "error": done.stderr.strip().splitlines()[-1]})
            continue
        rows.append(json.loads(done.stdout))
        r = rows[-1]
        print(f"  read {name}: ours {r['quiltpriv_s']:.4f} s"
              + (f", pyAgrum {r['pyagrum_s']:.4f} s" if "pyagrum_s" in r else "")
              + (f", pgmpy {r['pgmpy_s']:.2f} s" if "pgmpy_s" in r else ""), file=sys.stderr)
    return rows


# -- where the munin run's time goes ------------------------------------------------------------


def phases_worker() -> dict[str, Any]:
    """Wall time of each phase of ``quiltpriv plan munin`` (every node), and plan()'s profile.

    The phases are the command's own steps, called one by one: reading the model, planning,
    and formatting the text the command prints (imports are in the whole-process table).
    """
    import cProfile
    import io
    import pstats

    from quiltpriv.cli import build_parser
    from quiltpriv.cli import core as core
    from quiltpriv.inference.cache import InferenceCache
    from quiltpriv.mechanisms.apmqm import plan

    args = build_parser("plan").parse_args(["plan", str(bif_path("munin")), *_munin_args()])
    t0 = time.perf_counter()
    theta = core.theta_from_args(args)
    t_read = time.perf_counter() - t0
    query, sensitive = core.query_from_args(args), core.sensitive_from_args(args)
    t0 = time.perf_counter()
    p = plan(theta, query, sensitive, args.epsilon)
    t_plan = time.perf_counter() - t0
    t0 = time.perf_counter()
    text = p.explain()
    t_text = time.perf_counter() - t0
    InferenceCache.of(theta).clear()
    prof = cProfile.Profile()
    prof.enable()
    plan(theta, query, sensitive, args.epsilon)
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(14)
    top = [line for line in out.getvalue().splitlines() if "(" in line and "/" in line]
    return {"read_s": t_read, "plan_s": t_plan, "explain_s": t_text,
            "output_mb": len(text.encode("utf-8")) / 2**20, "plan_profile": top}


def time_phases(timeout: float) -> dict[str, Any] | None:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--phases-worker"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        print(f"phases worker failed: {done.stderr[-1000:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- report ------------------------------------------------------------------------------------


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def _f(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def _pyagrum_wheel() -> dict[str, Any] | None:
    try:
        from importlib import metadata

        dist = metadata.distribution("pyagrum")
    except Exception:
        return None
    size = sum((Path(dist.locate_file(f)).stat().st_size for f in (dist.files or [])
                if Path(dist.locate_file(f)).is_file()), 0)
    return {"version": dist.version, "installed_mb": round(size / 2**20, 1),
            "requires": dist.requires or []}


def report(proc: dict[str, dict[str, Any]], reading: list[dict[str, Any]],
           facts: dict[str, Any], argv: list[str], load_start: tuple[float, ...],
           phases: dict[str, Any] | None = None) -> str:
    lines = [
        "# quiltpriv start-up and reading benchmark (benchmarks/bench_startup.py)",
        "",
        f"command: python benchmarks/bench_startup.py {' '.join(argv)}",
        f"machine: {facts['cpu']}, {facts['cores']} cores, {facts['ram_gb']} GB; "
        f"{facts['platform']}; Python {facts['python']}, numpy {facts['numpy']}, "
        f"pgmpy {facts['pgmpy']}",
        f"load average at start {tuple(round(x, 2) for x in load_start)}, at end "
        f"{tuple(round(x, 2) for x in facts['loadavg_at_end'])} (a shared machine: absolute "
        "times move with the load; medians and same-run ratios move less)",
        *([f"note: {facts['note']}"] if facts.get("note") else []),
        "",
        "## Whole processes (wall time; median of interleaved runs, min-max in brackets)",
        "",
    ]
    trees = list(proc)
    header = "| command | " + " | ".join(trees) + " |"
    lines += [header, "|---|" + "---|" * len(trees)]
    labels = list(proc[trees[0]])
    for label in labels:
        cells = []
        for t in trees:
            s = proc[t].get(label)
            cells.append("-" if s is None else
                         f"{s['median_s']:.3f} s [{s['min_s']:.3f}-{s['max_s']:.3f}], "
                         f"n={s['runs']}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    ours = proc["this tree"]
    numpy_s = ours["import numpy"]["median_s"]

    def med(label: str) -> float | None:
        return ours[label]["median_s"] if label in ours else None

    munin_read = next((r.get("pyagrum_s") for r in reading if r.get("network") == "munin"), None)
    munin_plan = med("quiltpriv plan munin (all nodes)")
    munin_budget = None if munin_read is None else 2 * munin_read + 1.0
    lines += [
        "",
        "## Start-up targets (this tree; ratios of medians from this run)",
        "",
        f"- `import quiltpriv` / `import numpy`: "
        f"{_f(_ratio(med('import quiltpriv'), numpy_s), '.2f')}",
        f"- `quiltpriv --help` / `import numpy`: "
        f"{_f(_ratio(med('quiltpriv --help'), numpy_s), '.2f')} (target <= 2)",
        f"- `quiltpriv plan asia`: {_f(med('quiltpriv plan asia'))} s (target <= 0.5 s); "
        f"{_f(_ratio(med('quiltpriv plan asia'), numpy_s), '.2f')} x `import numpy`",
        f"- `quiltpriv plan student` (bundled .py model): {_f(med(STUDENT))} s; "
        f"{_f(_ratio(med(STUDENT), numpy_s), '.2f')} x `import numpy`",
    ]
    if munin_plan is not None:
        lines.append(
            f"- `quiltpriv plan munin`, every node sensitive: {_f(munin_plan)} s; target 2 x "
            f"pyAgrum's read of munin ({_f(munin_read, '.3f')} s) + 1 s = "
            f"{_f(munin_budget)} s" + ("" if munin_budget is None else
                                     f" -> {'met' if munin_plan <= munin_budget else 'missed'}"))
    if phases is not None:
        lines += [
            "",
            "Where the munin run's time goes (one in-process run of the command's steps): "
            f"reading the model {phases['read_s']:.3f} s, planning {phases['plan_s']:.3f} s, "
            f"formatting the text plan {phases['explain_s']:.3f} s "
            f"({phases['output_mb']:.1f} MB); the rest of the process is the interpreter, the "
            "imports (see `quiltpriv plan asia`), writing the text out and exiting. plan()'s "
            "profile, by cumulative time (under cProfile, which slows Python-heavy code):",
            "",
            "```text",
            *phases["plan_profile"],
            "```",
        ]
    if len(trees) > 1:
        base = trees[1]
        lines += ["", f"Speed-up against `{base}` (its median / this tree's median):", ""]
        for label in labels:
            b = proc[base].get(label)
            if b is not None:
                gain = _ratio(b["median_s"], ours[label]["median_s"])
                lines.append(f"- {label}: {_f(gain, '.1f')}x")
    lines += [
        "",
        "## Reading a model file (in-process, median; Theta included for quiltpriv and pgmpy)",
        "",
        "| network | nodes | MB | quiltpriv s | MB/s | pyAgrum loadBN s | pyAgrum / quiltpriv "
        "| pgmpy + theta_from_pgmpy s | pgmpy / quiltpriv |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    notes: list[str] = []
    for r in reading:
        if "error" in r:
            lines.append(f"| {r['network']} | {r['error']} |")
            continue
        if "pyagrum_error" in r:
            notes.append(f"pyAgrum cannot read {r['network']}: {r['pyagrum_error']}")
        mb = r["bytes"] / 2**20
        lines.append(
            f"| {r['network']} | {r['nodes']} | {mb:.2f} | {r['quiltpriv_s']:.4f} | "
            f"{mb / r['quiltpriv_s']:.1f} | {_f(r.get('pyagrum_s'), '.4f')} | "
            f"{_f(_ratio(r.get('pyagrum_s'), r['quiltpriv_s']), '.2f')} | "
            f"{_f(r.get('pgmpy_s'), '.2f')} | "
            f"{_f(_ratio(r.get('pgmpy_s'), r['quiltpriv_s']), '.0f')} |")
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    wheel = facts.get("pyagrum_wheel")
    if wheel:
        lines += ["", f"pyAgrum {wheel['version']} (comparison only, not a dependency): "
                      f"{wheel['installed_mb']} MB installed, requires "
                      f"{', '.join(wheel['requires'])}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15, help="timed runs per command (default 15)")
    ap.add_argument("--runs-munin", type=int, default=3, help="timed munin plans (default 3)")
    ap.add_argument("--repeat", type=int, default=5, help="in-process reads per network")
    ap.add_argument("--quick", action="store_true",
                    help="3 runs, no munin plan, small networks; writes nothing without --out")
    ap.add_argument("--networks", help="comma-separated networks to read (default: all bundled)")
    ap.add_argument("--pgmpy-networks", default=",".join(PGMPY_NETWORKS),
                    help="networks also read by pgmpy (slow); 'all' or a list")
    ap.add_argument("--baseline", type=Path, help="another source tree to time the same "
                                                   "commands on (before/after)")
    ap.add_argument("--baseline-label", help="its name in the report (default: its path)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per reading worker")
    ap.add_argument("--out", help="write OUT.txt and OUT.json")
    ap.add_argument("--note", help="a line for the report (e.g. what else ran on the machine)")
    ap.add_argument("--read-worker", help=argparse.SUPPRESS)
    ap.add_argument("--with-pgmpy", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--phases-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.phases_worker:
        print(json.dumps(phases_worker()))
        return 0
    if args.read_worker:
        print(json.dumps(read_worker(args.read_worker, args.repeat, args.with_pgmpy)))
        return 0
    load_start = os.getloadavg()
    runs = 3 if args.quick else args.runs
    networks = (args.networks.split(",") if args.networks else
                ["asia", "alarm"] if args.quick else bundled_networks())
    pgmpy_networks = set(networks if args.pgmpy_networks == "all"
                         else args.pgmpy_networks.split(","))
    trees = {"this tree": ROOT}
    if args.baseline is not None:
        trees[args.baseline_label or str(args.baseline)] = args.baseline.resolve()
    print("whole processes ...", file=sys.stderr)
    proc = time_processes(trees, commands(args.quick), runs, 0 if args.quick else args.runs_munin)
    print("reading ...", file=sys.stderr)
    reading = time_reading(networks, 1 if args.quick else args.repeat, pgmpy_networks,
                           args.timeout)
    phases = None if args.quick else time_phases(args.timeout)
    facts = machine_facts()
    facts["pyagrum_wheel"] = _pyagrum_wheel()
    facts["machine_shared"] = "yes: other jobs ran during the benchmark (see the load average)"
    facts["note"] = args.note
    text = report(proc, reading, facts, sys.argv[1:] if argv is None else argv, load_start,
                  phases)
    print(text)
    payload = {"facts": facts, "load_at_start": load_start, "processes": proc,
               "reading": reading, "munin_phases": phases,
               "argv": sys.argv[1:] if argv is None else argv,
               "python": platform.python_version()}
    write_results("startup", args.out, args.quick, text, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
