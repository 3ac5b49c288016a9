"""Reading a large model in quiltpriv's own JSON format (issue 31, section 3).

Writes a seeded network of a family of ``bench_linear_scale.py`` (``banded`` by default:
100,000 nodes, 2-4 parents among the 8 before, 2-3 states) with ``theta_to_dict`` to
temporary files in both formats (``quiltpriv-network/2``, the tables as one binary column
per member, and ``/1``, nested lists of decimals), then reads them back in fresh processes,
interleaved: each format with this tree's ``load_model`` and, when ``--before`` names
another checkout (e.g. ``git archive`` of the commit before the change), format ``/1`` with
that checkout's ``load_model`` (or, for a checkout whose JSON reader had a fixed size cap,
its reader called past the cap). Each run reports wall
time, CPU time (the import of ``quiltpriv.model.loading`` included), peak RSS, the model's
fingerprint (which must agree: the same checks give the same Theta) and, as the floor, the
CPU time of ``json.loads`` alone on the same text in the same process.

    python benchmarks/bench_json_load.py --n 100000 --before /path/to/old/checkout
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_core import code_version, machine_facts  # noqa: E402
from measure import PEAK_RSS_SOURCE  # noqa: E402

_READ = PEAK_RSS_SOURCE + r"""
import json, resource, sys, time
from pathlib import Path
w, c = time.perf_counter(), time.process_time()
from quiltpriv.model import loading
path = Path(sys.argv[1])
if sys.argv[2] == "after" or not hasattr(loading, "MAX_JSON_BYTES"):
    theta = loading.load_model(path)
else:  # an old reader with a fixed size cap, called past it
    theta = loading._theta_from_json(path.read_text(encoding="utf-8"), path,
                                     loading.CPD_SUM_TOLERANCE)
wall, cpu = time.perf_counter() - w, time.process_time() - c
peak = peak_rss_mb()
import gc
text = path.read_text(encoding="utf-8")
gc.disable()  # as the reader does: a collection per million containers would dominate
c = time.process_time()  # the floor: Python's own parser on the same text, nothing checked
json.loads(text)
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "peak_mb": peak,
                  "json_loads_cpu_s": time.process_time() - c,  # gc stays off: exiting
                  "fingerprint": theta.fingerprint()}))
"""


def write_model(family: str, n: int, width: int, paths: dict[int, Path]) -> dict[str, Any]:
    """The model written in each format of ``paths`` (version -> file); sizes and counts."""
    from bench_linear_scale import build

    from quiltpriv.model.network import theta_to_dict

    theta = build(family, n, width)
    sizes = {}
    for version, path in paths.items():
        text = json.dumps(theta_to_dict(theta, version=version))
        path.write_text(text, encoding="utf-8")
        sizes[f"bytes_format_{version}"] = len(text)
    entries = sum(t.table.size for t in theta.members[0].values())
    return {**sizes, "bytes": sizes["bytes_format_1"], "nodes": n,
            "table_entries": int(entries)}


def read(path: Path, tree: Path, which: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", _READ, str(path), which], env=env, cwd=tree,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="banded")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--width", type=int, default=100)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--before", type=Path, help="a checkout of the code before the change")
    ap.add_argument("--out", type=Path, help="write OUT.json and OUT.txt")
    ap.add_argument("--note", default="")
    args = ap.parse_args()
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {v: Path(tmp) / f"{args.family}-{args.n}-format{v}.json" for v in (2, 1)}
        model = write_model(args.family, args.n, args.width, paths)
        # run name -> (checkout, format version)
        readers = {"after, format /2": (HERE.parent, 2), "after, format /1": (HERE.parent, 1)}
        if args.before:
            readers["before, format /1"] = (args.before, 1)
        runs: dict[str, list[dict[str, Any]]] = {which: [] for which in readers}
        for _ in range(args.runs):
            for which, (tree, version) in readers.items():
                runs[which].append(read(paths[version], tree, which.split(",")[0]))
    fingerprints = {r["fingerprint"] for rs in runs.values() for r in rs}
    result = {"command": " ".join(sys.argv), "machine": machine_facts(), "code": code_version(),
              "load_average": [load_start, os.getloadavg()], "family": args.family,
              "model": model, "runs": runs, "same_theta": len(fingerprints) == 1,
              "note": args.note}
    lines = [f"# reading a {args.n}-node {args.family} JSON model (benchmarks/bench_json_load.py)",
             "", f"command: {result['command']}", f"machine: {result['machine']}",
             f"code: {result['code']}",
             f"load average at start {load_start}, at end {os.getloadavg()} (a shared machine: "
             "wall times move with the load; CPU times and same-run ratios move less)",
             f"model: {model['nodes']} nodes, {model['table_entries']} table entries; "
             f"{model['bytes_format_2']} bytes in format /2, {model['bytes_format_1']} in /1",
             f"note: {args.note}", ""]
    for which, rs in runs.items():
        for r in rs:
            lines.append(f"- {which}: wall {r['wall_s']:.2f} s, CPU {r['cpu_s']:.2f} s, "
                         f"peak RSS {r['peak_mb']:.0f} MB, fingerprint {r['fingerprint'][:16]}"
                         + (f"; json.loads alone {r['json_loads_cpu_s']:.2f} s CPU"
                            if "json_loads_cpu_s" in r else ""))
    lines.append(f"- same Theta (fingerprint) in every run: {result['same_theta']}")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(result, indent=1, default=str))
        args.out.with_suffix(".txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
