"""Does ``--time-limit T`` bound the whole command? The lattice of issue 30, timed end to end.

Writes a grid ``--width`` nodes wide with ``--nodes`` nodes (each node's parents its upper and
left neighbours, binary states, CPD columns Dirichlet(1): treewidth about the width, so exact
optimality is out of reach) as a JSON model, then runs, in a fresh process each,
``quiltpriv plan MODEL --sensitive all --query count --attributes A,B,C --records 100
--epsilon 1 --time-limit T --json -o PLAN`` and reports the wall clock and CPU time of the
whole command (interpreter start-up included), the start-up (imports and reading the model:
the same command with a limit of 1 ms) and whether the plan is flagged as not optimal.

Usage::

    python benchmarks/bench_time_limit.py                       # 5,000 nodes, 70 wide, T = 10
    python benchmarks/bench_time_limit.py --nodes 1600 --width 50 --limits 2,5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (ROOT / "tests", ROOT):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


def write_lattice(path: Path, nodes: int, width: int) -> list[str]:
    """The lattice as a JSON model at ``path``; returns three attributes far apart."""
    from reference import lattice

    from quiltpriv.model.loading import theta_to_dict

    path.write_text(json.dumps(theta_to_dict(lattice(nodes, width))), encoding="utf-8")
    return [f"v{nodes // 50}", f"v{nodes // 2}", f"v{4 * nodes // 5}"]


def run(model: Path, attrs: list[str], limit: float, out: Path) -> dict[str, float | bool]:
    """One whole command in a fresh process: wall and CPU seconds, and the plan's flag."""
    cmd = [sys.executable, "-m", "quiltpriv.cli", "plan", str(model), "--sensitive", "all",
           "--query", "count", "--attributes", ",".join(attrs), "--records", "100",
           "--epsilon", "1", "--time-limit", repr(limit), "--json", "-o", str(out)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(cmd, check=True, env=env)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    doc = json.loads(out.read_text(encoding="utf-8"))
    return {"limit": limit, "wall_s": wall, "cpu_s": cpu, "optimal": doc["optimal"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--width", type=int, default=70)
    ap.add_argument("--limits", default="10", help="time limits to try, comma-separated")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "lattice.json"
        attrs = write_lattice(model, args.nodes, args.width)
        start_up = run(model, attrs, 0.001, Path(tmp) / "plan.json")
        print(f"# lattice {args.nodes} nodes, {args.width} wide; attributes {attrs}; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"start-up (limit 0.001 s): wall {start_up['wall_s']:.1f} s, "
              f"CPU {start_up['cpu_s']:.1f} s")
        for limit in (float(t) for t in args.limits.split(",")):
            r = run(model, attrs, limit, Path(tmp) / "plan.json")
            print(f"--time-limit {limit:g}: wall {r['wall_s']:.1f} s (limit + 2 s + start-up "
                  f"= {limit + 2 + start_up['wall_s']:.1f} s), CPU {r['cpu_s']:.1f} s, "
                  f"optimal {r['optimal']}")


if __name__ == "__main__":
    main()
