"""Re-time the queries a pyAgrum comparison recorded as refused by quiltpriv.

``bench_pyagrum.py`` lists, per network, the influence queries quiltpriv refused (no
elimination order within ``max_table``) with pyAgrum's outcome on each. This script asks this
checkout's quiltpriv the same queries again, one by one, and reports per query whether it is
answered now (and in what time, with the value next to pyAgrum's when pyAgrum answered) or
still refused (and how fast the refusal came: it is priced, never a blind computation).

Usage::

    python benchmarks/bench_refused.py benchmarks/results/pyagrum-diabetes-andes-2026-11-23b.json
    python benchmarks/bench_refused.py FILE --out benchmarks/results/refused-DATE
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for _p in (HERE, HERE.parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from bench_core import code_version, machine_facts  # noqa: E402


def _model(name: str) -> Any:
    import pgmpy

    import quiltpriv as qp

    folder = os.path.join(os.path.dirname(pgmpy.__file__), "utils", "example_models")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return qp.load_model(sorted(glob.glob(os.path.join(folder, f"{name}.*")))[0])


def main() -> None:
    from quiltpriv.inference.influence import InfluenceTooExpensive, max_influence

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="a bench_pyagrum.py JSON results file")
    ap.add_argument("--out", default=str(HERE / "results" /
                                          f"refused-{datetime.date.today().isoformat()}"))
    args = ap.parse_args()
    source = json.loads(Path(args.results).read_text())
    rows: list[dict[str, Any]] = []
    lines = [f"# queries {Path(args.results).name} records as refused by quiltpriv, asked "
             f"again; {code_version()}", f"# machine: {json.dumps(machine_facts())}", "",
             f"{'network':9} {'node':16} {'|Q|':>3} {'now':9} {'s':>6} {'value':>20} "
             f"{'pyAgrum':>20} {'pyAgrum s':>9}"]
    for net in source["results"]:
        theta = _model(net["network"])
        for q in net["quiltpriv_refused"]:
            t0 = time.perf_counter()
            try:
                value: float | None = max_influence(theta, q["node"], q["quilt"]).value
            except InfluenceTooExpensive:
                value = None
            dt = time.perf_counter() - t0
            pa = q.get("pyagrum", {})
            row = {"network": net["network"], "node": q["node"], "quilt": q["quilt"],
                   "answered": value is not None, "value": value, "t": dt, "pyagrum": pa}
            rows.append(row)
            theirs = (f"{pa['value']:.15g}" if "value" in pa
                      else str(pa.get("error", "-"))[:20])
            lines.append(f"{net['network']:9} {q['node']:16} {len(q['quilt']):>3} "
                         f"{'answered' if value is not None else 'refused':9} {dt:6.1f} "
                         f"{'' if value is None else f'{value:.15g}':>20} {theirs:>20} "
                         f"{pa.get('t', float('nan')):9.1f}")
            print(lines[-1], flush=True)
    answered = sum(r["answered"] for r in rows)
    both = [r for r in rows if "value" in r["pyagrum"]]
    lines += ["", f"answered now: {answered} of {len(rows)}; pyAgrum answered {len(both)} of "
              f"them, quiltpriv now answers {sum(r['answered'] for r in both)}, never below "
              f"pyAgrum's value: "
              f"{all(r['value'] >= r['pyagrum']['value'] for r in both if r['answered'])}"]
    Path(args.out + ".txt").write_text("\n".join(lines) + "\n")
    Path(args.out + ".json").write_text(json.dumps({"machine": machine_facts(),
                                                    "rows": rows}, indent=1, default=str))
    print(lines[-1])


if __name__ == "__main__":
    main()
