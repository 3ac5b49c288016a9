"""All-nodes planning on growing networks of bounded in-degree and bounded treewidth.

Three seeded families (every node sensitive, a count over ``--attributes`` seeded attributes,
default 3, ``n = 1000`` records, eps = 1, the default inference):

- ``layered``: layers of ``--width`` nodes; each node draws 1-3 parents in the layer before;
- ``lattice``: a grid ``--width`` nodes wide, each node's parents its upper and left neighbours;
- ``banded``: node ``j`` draws 2-4 parents among the 8 nodes before it (a long time series with
  lags).

Cardinalities 2-3, CPD columns Dirichlet(1). Each (family, size) runs in its own subprocess
under ``--budget`` seconds (a run that exceeds it is reported as such, with the sizes above it
skipped); it reports the build, plan and JSON times, the JSON size, peak RSS (``VmHWM``, see
``measure.py``), the whole worker process's wall time (imports, build, plan, JSON) and, for the
largest size each family reaches, the top of a cProfile of the plan (``--no-profile``: none).
``--verify`` also reads the plan back from its JSON (``Plan.from_json``) and verifies it against
the model and query (``check_plan``, which recomputes every quilt's influence), timing both.

Usage::

    python benchmarks/bench_linear_scale.py                     # writes results/linear-DATE.*
    python benchmarks/bench_linear_scale.py --sizes 200,1000 --budget 60 --out /tmp/lin
    python benchmarks/bench_linear_scale.py --verify --no-profile --out results/verify-DATE
    python benchmarks/bench_linear_scale.py --attributes 7 --no-profile --out results/wide-DATE
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import io
import json
import math
import pstats
import subprocess
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
from measure import peak_rss_mb  # noqa: E402

from quiltpriv.mechanisms.apmqm import Plan, plan  # noqa: E402
from quiltpriv.mechanisms.verification import check_plan  # noqa: E402
from quiltpriv.model.network import Theta, theta_from_tables  # noqa: E402
from quiltpriv.queries.query import CountQuery  # noqa: E402

FAMILIES = ("layered", "lattice", "banded")


def parents_of(family: str, n: int, width: int, rng: np.random.Generator) -> list[list[int]]:
    """Parent indices of each node of the family (indices below the node's own)."""
    parents: list[list[int]] = [[] for _ in range(n)]
    for j in range(n):
        if family == "banded" and j:
            lo = max(0, j - 8)
            k = min(j - lo, int(rng.integers(2, 5)))
            parents[j] = sorted(int(a) for a in rng.choice(np.arange(lo, j), k, replace=False))
        elif family == "lattice":
            r, c = divmod(j, width)
            parents[j] = ([j - width] if r else []) + ([j - 1] if c else [])
        elif family == "layered" and j >= width:
            layer = j // width
            prev = np.arange((layer - 1) * width, layer * width)
            k = int(rng.integers(1, 4))
            parents[j] = sorted(int(a) for a in rng.choice(prev, k, replace=False))
    return parents


def build(family: str, n: int, width: int, seed: int = 1) -> Theta:
    """A seeded network of the family with ``n`` nodes."""
    rng = np.random.default_rng(seed)
    names = [f"X{k}" for k in range(n)]
    pa = parents_of(family, n, width, rng)
    card = [int(rng.integers(2, 4)) for _ in range(n)]
    tables = {}
    for j, v in enumerate(names):
        m = math.prod(card[p] for p in pa[j])
        cols = rng.dirichlet(np.ones(card[j]), size=m).T
        tables[v] = cols.reshape([card[j], *(card[p] for p in pa[j])])
    edges = [(names[p], names[j]) for j in range(n) for p in pa[j]]
    return theta_from_tables(edges, {v: list(range(card[j])) for j, v in enumerate(names)},
                             tables, parents_order={names[j]: [names[p] for p in pa[j]]
                                                    for j in range(n)})


def worker(family: str, n: int, width: int, profile: bool,
           verify: bool = False, k: int = 3) -> dict[str, Any]:
    t0 = time.perf_counter()
    theta = build(family, n, width)
    t1 = time.perf_counter()
    rng = np.random.default_rng(7)
    attrs = tuple(theta.nodes[int(j)] for j in rng.choice(n, k, replace=False))
    query = CountQuery(attrs, 1000)
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    p = plan(theta, query, theta.nodes, 1.0)
    if prof:
        prof.disable()
    t2 = time.perf_counter()
    text = p.to_json()
    t3 = time.perf_counter()
    out: dict[str, Any] = {
        "family": family, "n": n, "width": width, "attributes": k,
        "joint_states": math.prod(theta.cardinality[a] for a in attrs),
        "build_s": t1 - t0, "plan_s": t2 - t1,
        "ms_per_node": 1e3 * (t2 - t1) / n, "json_s": t3 - t2, "json_mb": len(text) / 1e6,
        "peak_rss_mb": peak_rss_mb(),
        "scale": p.scale, "optimal": p.optimal,
    }
    if verify:
        del p  # as a verifier holds it: the saved text only
        t4 = time.perf_counter()
        back = Plan.from_json(text)
        t5 = time.perf_counter()
        checked = check_plan(back, theta, query)
        t6 = time.perf_counter()
        out.update(read_s=t5 - t4, verify_s=t6 - t5, verified=checked.ok,
                   peak_rss_mb=peak_rss_mb())
    if prof:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(12)
        out["profile"] = buf.getvalue()
    return out


def run(family: str, n: int, width: int, budget: float, profile: bool,
        verify: bool = False, k: int = 3) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", family, str(n), str(width), "--attributes",
           str(k)]
    if profile:
        cmd.append("--profile")
    if verify:
        cmd.append("--verify")
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=budget, check=True)
    except subprocess.TimeoutExpired:
        return {"family": family, "n": n, "width": width, "attributes": k,
                "timeout_s": budget}
    # the whole worker process: imports, building the network, planning, writing the JSON
    return {**json.loads(r.stdout.strip().splitlines()[-1]),
            "process_s": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--profile", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="200,1000,5000,20000,100000")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--width", type=int, default=4)
    ap.add_argument("--budget", type=float, default=120.0, help="seconds per run")
    ap.add_argument("--verify", action="store_true",
                    help="also read each plan back from JSON and verify it")
    ap.add_argument("--no-profile", action="store_true", help="no profiled rerun")
    ap.add_argument("--attributes", type=int, default=3, help="the count's attributes")
    ap.add_argument("--out", default=str(HERE / "results" /
                                          f"linear-{datetime.date.today().isoformat()}"))
    args = ap.parse_args()
    if args.worker:
        fam, n, w = args.worker
        print(json.dumps(worker(fam, int(n), int(w), args.profile, args.verify,
                                args.attributes)))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[dict[str, Any]] = []
    for fam in args.families.split(","):
        reached: dict[str, Any] | None = None
        for n in sizes:
            r = run(fam, n, args.width, args.budget, False, args.verify, args.attributes)
            rows.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "profile"}), flush=True)
            if "timeout_s" in r:
                break
            reached = r
        if reached is not None and not args.no_profile:
            prof = run(fam, reached["n"], args.width, args.budget * 2, True, False,
                       args.attributes)
            rows.append({**prof, "profiled": True})
    facts = machine_facts()
    lines = [f"# all-nodes planning, three families (width {args.width}), a count over "
             f"{args.attributes} attributes; {code_version()}",
             f"# machine: {json.dumps(facts)}", "",
             f"{'family':8} {'n':>7} {'states':>6} {'plan s':>9} {'ms/node':>8} {'json s':>7} "
             f"{'json MB':>8} {'RSS MB':>7} {'process s':>9}"
             + (f" {'read s':>7} {'verify s':>8} verified" if args.verify else "")]
    for r in rows:
        if r.get("profiled"):
            continue
        if "timeout_s" in r:
            lines.append(f"{r['family']:8} {r['n']:>7} {'':>6} {'> ' + str(r['timeout_s']):>9} "
                         "(over the budget; larger sizes skipped)")
        else:
            lines.append(f"{r['family']:8} {r['n']:>7} {r['joint_states']:>6} {r['plan_s']:9.2f} "
                         f"{r['ms_per_node']:8.2f} {r['json_s']:7.2f} {r['json_mb']:8.2f} "
                         f"{r['peak_rss_mb']:7.0f} {r.get('process_s', math.nan):9.2f}"
                         + (f" {r['read_s']:7.2f} {r['verify_s']:8.2f} {r['verified']}"
                            if args.verify else ""))
    for r in rows:
        if r.get("profiled") and "profile" in r:
            lines += ["", f"## profile (tottime): {r['family']} n = {r['n']}", r["profile"]]
    Path(args.out + ".txt").write_text("\n".join(lines) + "\n")
    Path(args.out + ".json").write_text(json.dumps({"machine": facts, "rows": rows}, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
