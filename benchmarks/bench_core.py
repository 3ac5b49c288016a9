"""Core planner benchmarks on pgmpy's bundled example networks (performance targets).

For each network, read as a hyperparameter network (states = hyperparameter values):

- ``read``: pgmpy's ``BIFReader(string=text).get_model()`` on the already decompressed file, the
  floor every plan pays to get a model at all;
- ``convert``: :func:`quiltpriv.model.network.theta_from_pgmpy` (validation and numeric copy);
- ``plan 1``: :func:`quiltpriv.mechanisms.apmqm.plan` for one sensitive node;
- ``plan all``: one :func:`~quiltpriv.mechanisms.apmqm.plan` call with every node sensitive;
  both for one count query over 3 attributes drawn with a fixed seed, eps = 1, and a fresh
  influence cache (``InferenceCache.of(theta)``) per repetition;
- influence against pgmpy: for (node, quilt) pairs sampled from the quilts the all-nodes plan
  evaluated (read back from the influence cache) plus random quilts of 1-3 nodes, the time of
  :func:`quiltpriv.inference.influence.max_influence` (influence cache cleared each call; the
  per-Theta
  elimination order kept) against pgmpy's
  ``VariableElimination(model).query([i] + Q, joint=True)`` followed by the same Definition-8
  computation (:func:`definition8`, written independently of ``quiltpriv.inference.influence``). The
  ``VariableElimination`` object is built once per network outside the timing (in pgmpy's
  favour). Reported: min/median/max of ``t_VE / t_quiltpriv`` and the largest absolute
  difference of the two influence values (quiltpriv rounds upwards by 1e-10, relative and
  absolute, so differences of that order are expected).

Every network runs in its own worker process (clean peak RSS, and a timeout per network).
Times are the median of ``--repeat`` runs (quick mode: one run, fewer pairs).

Usage::

    python benchmarks/bench_core.py                      # all six networks, writes results
    python benchmarks/bench_core.py --networks alarm --quick
    python benchmarks/bench_core.py --out /tmp/core      # writes /tmp/core.txt, /tmp/core.json
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as _dt
import gzip
import io
import json
import math
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
if str(HERE.parent) not in sys.path:  # run from a source checkout without installing
    sys.path.insert(0, str(HERE.parent))

from measure import peak_rss_mb  # noqa: E402

from quiltpriv.inference.cache import InferenceCache  # noqa: E402
from quiltpriv.inference.influence import (  # noqa: E402
    ROUNDING_MARGIN,
    InfluenceTooExpensive,
    max_influence,
)
from quiltpriv.mechanisms.apmqm import plan  # noqa: E402
from quiltpriv.model.network import Theta, theta_from_pgmpy  # noqa: E402
from quiltpriv.queries.query import CountQuery  # noqa: E402
from quiltpriv.utils.io import write_text_atomic  # noqa: E402

#: The six networks benchmarked, smallest first.
DEFAULT_NETWORKS = ("alarm", "hepar2", "win95pts", "andes", "pathfinder", "munin")
EPSILON = 1.0
RECORDS = 1000  # n of the count query; it scales every Laplace scale alike
QUERY_ATTRIBUTES = 3
#: An influence below VE's by more than this counts as an under-estimate. quiltpriv raises every
#: positive influence by 1e-10 but returns a computed 0 as 0, where VE may give ~1e-16.
UNDER_TOLERANCE = 1e-12


def bif_path(name: str) -> Path:
    """The ``.bif.gz`` file pgmpy bundles for ``name`` (read directly, no download)."""
    import pgmpy

    path = Path(pgmpy.__file__).parent / "utils" / "example_models" / f"{name}.bif.gz"
    if not path.is_file():
        raise SystemExit(f"pgmpy {pgmpy.__version__} bundles no network {name!r} ({path})")
    return path


def read_text(name: str) -> str:
    with gzip.open(bif_path(name), "rb") as fh:
        return fh.read().decode("utf-8")


def read_pgmpy(text: str) -> Any:
    """pgmpy's own read of a BIF text: the floor a plan is compared with."""
    from pgmpy.readwrite import BIFReader

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BIFReader(string=text).get_model()


def definition8(joint: np.ndarray) -> float:
    """Definition 8 from a joint table ``joint[a, q1, ..., qk]`` (reference, no rounding).

    ``max over q and over a, b with P(a), P(b) > 0 of log P(q | a) / P(q | b)``; ``+inf`` when a
    state ``q`` is possible under one value and impossible under another.
    """
    j = np.asarray(joint, dtype=float).reshape(joint.shape[0], -1)
    p = j.sum(axis=1)
    rows = [j[a] / p[a] for a in range(j.shape[0]) if p[a] > 0]
    best = 0.0
    for col in range(j.shape[1]):
        values = [r[col] for r in rows]
        hi, lo = max(values), min(values)
        if hi == 0:
            continue
        if lo == 0:
            return math.inf
        best = max(best, math.log(hi) - math.log(lo))
    return best


def ve_influence(ve: Any, node: str, quilt: tuple[str, ...]) -> float:
    """Definition 8 through pgmpy's VariableElimination joint of ``[node] + quilt``."""
    variables = [node, *quilt]
    factor = ve.query(variables, joint=True, show_progress=False)
    values = np.transpose(factor.values, [factor.variables.index(v) for v in variables])
    return definition8(values)


def _median_time(fn: Any, repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _fresh_plan(theta: Theta, query: CountQuery, sensitive: Any, time_limit: float | None):
    InferenceCache.of(theta).clear()  # every repetition recomputes every influence
    return plan(theta, query, sensitive, EPSILON, time_limit=time_limit)


def _best_of(fn: Any, repeat: int, before: Any = None) -> tuple[float, Any]:
    """Least time of ``repeat`` calls of ``fn`` (``before()`` runs untimed before each)."""
    best, out = math.inf, None
    for _ in range(repeat):
        if before is not None:
            before()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _differences(ours: float, ve: float) -> tuple[float, float]:
    """``|ours - ve|`` and the same with quiltpriv's deliberate upward margin taken off."""
    if math.isinf(ours) or math.isinf(ve):
        d = 0.0 if ours == ve else math.inf
        return d, d
    raw = (ours - ROUNDING_MARGIN) / (1 + ROUNDING_MARGIN) if ours > 0 else 0.0
    return abs(ours - ve), abs(raw - ve)


def influence_pairs(theta: Theta, evaluated: list[tuple[str, tuple[str, ...]]],
                    rng: np.random.Generator, n_planner: int, n_random: int
                    ) -> list[tuple[str, str, tuple[str, ...]]]:
    """(source, node, quilt): a seeded sample of planner quilts plus random 1-3 node quilts
    (more random ones when the plan evaluated fewer than ``n_planner`` quilts: a count query's
    plan needs two candidates per node)."""
    pairs: list[tuple[str, str, tuple[str, ...]]] = []
    if evaluated:
        take = rng.choice(len(evaluated), size=min(n_planner, len(evaluated)), replace=False)
        pairs += [("planner", *evaluated[int(k)]) for k in sorted(take)]
    nodes = theta.nodes
    for _ in range(n_random + n_planner - len(pairs)):
        node = nodes[int(rng.integers(len(nodes)))]
        k = int(rng.integers(1, 4))
        others = [v for v in nodes if v != node]
        q = theta.sort(others[int(x)] for x in rng.choice(len(others), size=k, replace=False))
        pairs.append(("random", node, q))
    return pairs


def bench_network(name: str, *, quick: bool = False, seed: int = 2024, repeat: int | None = None,
                  time_limit: float | None = None, profile: bool = False) -> dict[str, Any]:
    """Run every measurement on one network and return the figures (JSON-ready)."""
    from pgmpy.inference import VariableElimination

    repeat = repeat if repeat is not None else (1 if quick else 3)
    n_planner, n_random, inner = (6, 4, 1) if quick else (40, 20, 3)
    text = read_text(name)
    t_read, model = _median_time(lambda: read_pgmpy(text), repeat)
    t_convert, theta = _median_time(lambda: theta_from_pgmpy(model, [name]), repeat)

    rng = np.random.default_rng(seed)
    nodes = theta.nodes
    attrs = [nodes[int(k)] for k in rng.choice(len(nodes), size=QUERY_ATTRIBUTES, replace=False)]
    one = nodes[int(rng.integers(len(nodes)))]
    query = CountQuery(attrs, RECORDS)

    t_one, plan_one = _median_time(lambda: _fresh_plan(theta, query, one, time_limit), repeat)
    prof_text = None
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        _fresh_plan(theta, query, nodes, time_limit)
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(15)
        prof_text = buf.getvalue()
    # Every node alone (once each, fresh cache): the worst single-node plan, not just the
    # seeded one, is what "a single-node plan completes under 60 s" is about.
    per_node = []
    for v in nodes:
        t_v, p_v = _median_time(lambda v=v: _fresh_plan(theta, query, v, time_limit), 1)
        per_node.append((t_v, v, p_v.optimal))
    worst = max(per_node)
    t_all, plan_all = _median_time(lambda: _fresh_plan(theta, query, nodes, time_limit), repeat)
    # The influence cache now holds exactly the (node, quilt) pairs the last plan evaluated.
    # keys: (member, node, quilt, engine, settings, max_table)
    evaluated = sorted({(k[1], k[2]) for k in InferenceCache.of(theta).influence.keys() if k[2]},
                       key=lambda p: (theta.index[p[0]], p[1]))

    # Theta renormalises every CPD column (the BIF files print rounded probabilities, columns
    # off by up to ~1e-6); pgmpy uses them as printed. Compare like with like: VE runs on the
    # same renormalised CPDs (without this, alarm differs by ~2e-9 from the model, not the maths).
    for cpd in model.get_cpds():
        cpd.normalize(inplace=True)
    ve = VariableElimination(model)
    pairs = influence_pairs(theta, evaluated, rng, n_planner, n_random)
    rows = []
    for source, node, q in pairs:
        def ours(node: str = node, q: tuple[str, ...] = q) -> float:
            # Recompute the influence every call; keep the per-Theta elimination order, built
            # once like the VariableElimination object (bench_scale.py reports its cost).
            InferenceCache.of(theta).influence.clear()
            return max_influence(theta, node, q).value

        try:
            t_ours, v_ours = _best_of(ours, inner)
        except InfluenceTooExpensive as exc:
            rows.append({"source": source, "node": node, "quilt": list(q),
                         "skipped": str(exc)})
            continue
        t_ve, v_ve = _best_of(lambda node=node, q=q: ve_influence(ve, node, q), inner)
        diff, raw_diff = _differences(v_ours, v_ve)
        rows.append({"source": source, "node": node, "quilt": list(q), "ours": v_ours,
                     "ve": v_ve, "abs_diff": diff, "raw_diff": raw_diff,
                     "under": bool(v_ours < v_ve - UNDER_TOLERANCE),
                     "under_strict": bool(v_ours < v_ve), "t_ours": t_ours, "t_ve": t_ve,
                     "ratio": t_ve / t_ours})
    timed = [r for r in rows if "ratio" in r]
    ratios = [r["ratio"] for r in timed]
    sp = plan_one.sensitive[0]
    out = {
        "network": name,
        "nodes": len(nodes),
        "edges": len(theta.edges),
        "query_attributes": attrs,
        "one_node": one,
        "t_read": t_read,
        "t_convert": t_convert,
        "t_plan_one": t_one,
        "plan_one": {"optimal": sp.optimal, "scale": sp.scale, "quilt": list(sp.quilt),
                     "influence": sp.influence, "quilts_considered": sp.quilts_considered},
        "single_node_plans": {"median": statistics.median(t for t, _, _ in per_node),
                              "max": worst[0], "max_node": worst[1],
                              "optimal": sum(o for _, _, o in per_node)},
        "t_plan_all": t_all,
        "plan_all": {"optimal": plan_all.optimal, "scale": plan_all.scale,
                     "optimal_nodes": sum(s.optimal for s in plan_all.sensitive),
                     "sensitive": len(plan_all.sensitive),
                     "influences_evaluated": len(evaluated),
                     "zero_scale_nodes": sum(s.scale == 0 for s in plan_all.sensitive)},
        "ratio_plan_all_to_read": t_all / t_read,
        "influence": {
            "pairs": len(rows),
            "timed": len(timed),
            "skipped": len(rows) - len(timed),
            "ratio_min": min(ratios) if ratios else None,
            "ratio_median": statistics.median(ratios) if ratios else None,
            "ratio_max": max(ratios) if ratios else None,
            "max_abs_diff": max((r["abs_diff"] for r in timed), default=None),
            "max_raw_diff": max((r["raw_diff"] for r in timed), default=None),
            "under_estimates": sum(r["under"] for r in timed),
            "under_strict": sum(r["under_strict"] for r in timed),
            "infinite": sum(math.isinf(r["ours"]) for r in timed),
            "rows": rows,
        },
        "repeat": repeat,
        "quick": quick,
        "seed": seed,
        "peak_rss_mb": peak_rss_mb(),
    }
    if prof_text is not None:
        out["profile_plan_all"] = prof_text
    return out


def _describe_code() -> str:
    """This checkout's commit and whether quiltpriv/ has uncommitted changes, now."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", "-C", str(HERE.parent), *args], capture_output=True,
                                  text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    head = git("rev-parse", "--short", "HEAD")
    if not head:
        return f"a snapshot outside git ({HERE.parent})"
    dirty = [ln.split()[-1] for ln in git("status", "--porcelain", "--", "quiltpriv")
             .splitlines() if ln.strip()]
    return head + (f" + uncommitted changes in {', '.join(dirty)}" if dirty else
                   " (quiltpriv/ clean)")


# read when a benchmark starts (it imports this module first): the code it measures
_CODE_AT_START = _describe_code()


def code_version() -> str:
    """The commit the benchmark ran on, and whether quiltpriv/ had uncommitted changes (the
    working tree is shared, so a result must say exactly what code it measured): as at the
    start of the run, and as at the end too when the checkout changed meanwhile."""
    now = _describe_code()
    return _CODE_AT_START if now == _CODE_AT_START else (
        f"{_CODE_AT_START} at the start of the run (the checkout changed during it: {now} "
        "at the end)")


def add_code_option(ap: argparse.ArgumentParser) -> None:
    """``--code``: what the results header names as the code measured."""
    ap.add_argument("--code", help="describe the code measured (e.g. a git archive snapshot's "
                    "commit); default: this checkout's commit and whether quiltpriv/ is clean")


def write_results(stem: str, out: str | None, quick: bool, text: str,
                  payload: dict[str, Any]) -> None:
    """Write ``OUT.txt`` (the report) and ``OUT.json`` (every figure); a full run without
    ``--out`` writes ``results/<stem>-<date>``, a quick one nothing."""
    if out is None and not quick:
        out = str(HERE / "results" / f"{stem}-{_dt.date.today().isoformat()}")
    if out is None:
        return
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(f"{out}.txt", text)
    write_text_atomic(f"{out}.json", json.dumps(payload, indent=1, allow_nan=True) + "\n")
    print(f"wrote {out}.txt and {out}.json", file=sys.stderr)


def machine_facts() -> dict[str, Any]:
    import pgmpy

    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "ram_gb": ram,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pgmpy": pgmpy.__version__,
        "kernel": _kernel_fact(),
        "loadavg_at_end": os.getloadavg(),
    }


def _kernel_fact() -> str:
    """Whether quiltpriv's compiled kernel ran (and from where), for the results header."""
    try:
        from quiltpriv.inference.compiled import _KERNEL
    except ImportError:
        try:  # a quiltpriv before the kernel loading had a module of its own
            from quiltpriv.inference.influence import _KERNEL
        except ImportError:  # a quiltpriv before the kernel
            return "none (quiltpriv without a compiled kernel)"
    if _KERNEL is None:
        return "not used (pure-Python bucket elimination)"
    return f"compiled, {_KERNEL.__file__}"


def _f(x: float | None, spec: str = ".3g") -> str:
    return "-" if x is None else format(x, spec)


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Right-aligned text table: header, rule, rows."""
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h)
              for k, h in enumerate(head)]
    out = ["  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return out


def run_workers(script: str, names: list[str], worker_args: list[str],
                timeout: float) -> list[dict[str, Any]]:
    """Run ``script --worker NAME *worker_args`` per network in its own process (so peak RSS
    is per network); each prints its results as JSON. Failures become ``{"error": ...}``."""
    results: list[dict[str, Any]] = []
    for n in names:
        cmd = [sys.executable, str(Path(script).resolve()), "--worker", n, *worker_args]
        print(f"[{n}] running ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            results.append({"network": n, "error": f"timed out after {timeout:g} s"})
            continue
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
            results.append({"network": n, "error": f"worker failed: {tail[0]}"})
            print(proc.stderr, file=sys.stderr)
            continue
        results.append(json.loads(proc.stdout))
        print(f"[{n}] done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return results


def _ms(x: float) -> str:
    return f"{x * 1e3:.1f}"


def targets(results: list[dict[str, Any]]) -> list[str]:
    """The issue's targets, each as PASS / FAIL / n/a with the figure it rests on."""
    by = {r["network"]: r for r in results if "error" not in r}
    lines = []
    a = by.get("alarm")
    if a:
        ok = a["plan_all"]["optimal"] and a["ratio_plan_all_to_read"] <= 4
        lines.append(f"{'PASS' if ok else 'FAIL'}  alarm all-nodes plan exact "
                     f"({a['plan_all']['optimal_nodes']}/{a['plan_all']['sensitive']} optimal) "
                     f"and <= 4x pgmpy read: {_ms(a['t_plan_all'])} ms vs "
                     f"{_ms(a['t_read'])} ms = {a['ratio_plan_all_to_read']:.3f}x")
    else:
        lines.append("n/a   alarm not run")
    ratios = [(r["network"], r["influence"]["ratio_min"], r["influence"]["ratio_median"])
              for r in by.values() if r["influence"]["ratio_min"] is not None]
    if ratios:
        worst_med = min(ratios, key=lambda t: t[2])
        worst_min = min(ratios, key=lambda t: t[1])
        lines.append(f"{'PASS' if worst_med[2] >= 10 else 'FAIL'}  influence >= 10x faster "
                     f"than VariableElimination (median per network): lowest median "
                     f"{worst_med[2]:.1f}x ({worst_med[0]})")
        lines.append(f"{'PASS' if worst_min[1] >= 10 else 'FAIL'}  ... and for every sampled "
                     f"pair: lowest single ratio {worst_min[1]:.1f}x ({worst_min[0]})")
    m = by.get("munin")
    if m:
        s = m["single_node_plans"]
        ok = m["t_plan_one"] < 60 and s["max"] < 60
        lines.append(f"{'PASS' if ok else 'FAIL'}  munin single-node plan under 60 s "
                     f"({'exact' if m['plan_one']['optimal'] else 'flagged non-optimal'}): "
                     f"seeded node {m['t_plan_one']:.3f} s; slowest of all {m['nodes']} nodes "
                     f"{s['max']:.3f} s ({s['max_node']}), {s['optimal']}/{m['nodes']} exact")
    else:
        lines.append("n/a   munin not run")
    return lines


def report(results: list[dict[str, Any]], facts: dict[str, Any], argv: list[str]) -> str:
    out = ["quiltpriv core benchmarks (performance)",
           f"date {facts['date']}; {facts['cpu']}, {facts['cores']} cores, "
           f"{facts['ram_gb']} GB RAM; {facts['platform']}",
           f"python {facts['python']}, numpy {facts['numpy']}, pgmpy {facts['pgmpy']}; "
           f"kernel: {facts.get('kernel', 'unknown')}; quiltpriv at {facts.get('code', 'unknown')}",
           f"load average at end {', '.join(f'{x:.2f}' for x in facts['loadavg_at_end'])}",
           f"command: python benchmarks/bench_core.py {' '.join(argv)}",
           f"count query over {QUERY_ATTRIBUTES} seeded random attributes, n = {RECORDS}, "
           f"eps = {EPSILON:g}; times are medians of the repeats; fresh influence cache per plan",
           ""]
    head = ("network", "nodes", "read ms", "conv ms", "plan1 ms", "each med/max ms",
            "planAll ms", "all/read",
            "optimal", "infl", "VE/ours min", "med", "max", "max|diff|", "raw|diff|",
            "under", "RSS MB")
    rows = []
    for r in results:
        if "error" in r:
            rows.append((r["network"], "-", *(["-"] * (len(head) - 3)), r["error"][:40]))
            continue
        i = r["influence"]
        rows.append((
            r["network"], str(r["nodes"]), _ms(r["t_read"]), _ms(r["t_convert"]),
            _ms(r["t_plan_one"]),
            f"{_ms(r['single_node_plans']['median'])}/{_ms(r['single_node_plans']['max'])}",
            _ms(r["t_plan_all"]), f"{r['ratio_plan_all_to_read']:.3f}",
            f"{r['plan_all']['optimal_nodes']}/{r['plan_all']['sensitive']}",
            str(r["plan_all"]["influences_evaluated"]),
            _f(i["ratio_min"], ".1f"), _f(i["ratio_median"], ".1f"), _f(i["ratio_max"], ".1f"),
            _f(i["max_abs_diff"], ".1e"), _f(i["max_raw_diff"], ".1e"),
            str(i["under_estimates"]), f"{r['peak_rss_mb']:.0f}",
        ))
    out += _table(head, rows)
    out += ["", "columns: plan1 = the seeded sensitive node; each med/max = every node planned "
            "alone, median and slowest;", "planAll = every node sensitive in one "
            "plan() call;", "optimal = nodes whose quilt is proven least; infl = distinct "
            "(node, quilt) influences the all-nodes plan computed;",
            "VE/ours = time of pgmpy VariableElimination + Definition 8 over time of "
            "max_influence, on sampled pairs;",
            "max|diff| = largest |quiltpriv - VE| influence difference (quiltpriv rounds up by "
            "1e-10 relative + absolute);", "raw|diff| = the same with that margin taken off; "
            "under = pairs where quiltpriv < VE - 1e-12 (must be 0).",
            "VE runs on the renormalised CPDs that Theta holds (the BIF files' columns are "
            "rounded).", ""]
    for r in results:
        if "error" in r:
            continue
        p1 = r["plan_one"]
        i = r["influence"]
        out.append(f"{r['network']}: query over {', '.join(r['query_attributes'])}; "
                   f"one node {r['one_node']!r} -> quilt {p1['quilt']}, e = "
                   f"{p1['influence']:.4g}, scale {p1['scale']:.6g}, "
                   f"{'exact' if p1['optimal'] else 'NOT proven optimal'}; all-nodes scale "
                   f"{r['plan_all']['scale']:.6g} ({r['plan_all']['zero_scale_nodes']} nodes need "
                   f"no noise); influence pairs timed {i['timed']} (skipped {i['skipped']}, "
                   f"infinite {i['infinite']})")
    out += ["", "targets:"] + ["  " + t for t in targets(results)]
    for r in results:
        if "profile_plan_all" in r:
            out += ["", f"cProfile of {r['network']} all-nodes plan (top 15, cumulative):",
                    r["profile_plan_all"]]
    return "\n".join(out) + "\n"


def _worker(args: argparse.Namespace) -> int:
    res = bench_network(args.worker, quick=args.quick, seed=args.seed, repeat=args.repeat,
                        time_limit=args.time_limit, profile=args.profile)
    sys.stdout.write(json.dumps(res))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--networks", default=",".join(DEFAULT_NETWORKS),
                    help="comma-separated pgmpy example networks (default: the six above)")
    ap.add_argument("--quick", action="store_true",
                    help="one repetition and 10 influence pairs per network; writes nothing "
                         "unless --out is given")
    ap.add_argument("--out", help="write OUT.txt and OUT.json (default for a full run: "
                                  "benchmarks/results/core-<date>)")
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--repeat", type=int, default=None, help="repetitions (default 3, quick 1)")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="plan() time_limit in seconds (default none: exact search)")
    ap.add_argument("--timeout", type=float, default=1800,
                    help="seconds allowed per network worker (default 1800)")
    ap.add_argument("--profile", action="store_true",
                    help="add a cProfile (top 15) of each all-nodes plan to the report")
    add_code_option(ap)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker(args)
    names = [n.strip() for n in args.networks.split(",") if n.strip()]
    for n in names:
        bif_path(n)
    worker_args = ["--seed", str(args.seed)]
    for flag, val in (("--repeat", args.repeat), ("--time-limit", args.time_limit)):
        if val is not None:
            worker_args += [flag, str(val)]
    worker_args += ["--quick"] * args.quick + ["--profile"] * args.profile
    results = run_workers(__file__, names, worker_args, args.timeout)
    facts = {**machine_facts(), "code": args.code or code_version()}
    text = report(results, facts, argv)
    print(text, end="")
    write_results("core", args.out, args.quick, text,
                  {"machine": facts, "argv": argv, "epsilon": EPSILON, "records": RECORDS,
                   "results": results})
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
