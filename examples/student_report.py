"""Write the audit report of an APMQM plan and release on the student example.

The student network (Zhang, Ohrimenko and Cummings, Example 1; illustrative CPDs) with the
two-member Theta ``student:theta``. The query is the linear statistic
``share(income) + share(weight)`` over a synthetic table of school hyperparameters; the
sensitive attributes are ``weight`` and ``income``. The report shows, per sensitive
attribute, the DAG with the chosen quilt's N, Q and R, the best candidate quilts and why the
chosen one wins, and the release record.

    python examples/student_report.py [-o student-report.html] [--seed 7]

(with quiltpriv installed, e.g. ``pip install -e .``, or ``PYTHONPATH=.`` from the repository).
It writes ``student-report.html`` and ``student-report.json``. Without ``--seed`` the noise
comes from the operating system's secure generator (what a real release needs); ``--seed``
makes it reproducible and NOT secure, and the report says so.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

import quiltpriv as qp
from quiltpriv.reporting.report import audit_report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default="student-report.html")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=None,
                    help="reproducible, NOT secure noise (experiments only)")
    args = ap.parse_args()

    theta = qp.load_model("student:theta")
    query = qp.LinearQuery({"income": 1.0, "weight": 1.0},
                           {"income": (0.0, 1.0), "weight": (0.0, 1.0)})
    plan = qp.plan(theta, query, ["weight", "income"], args.epsilon)
    print(plan.explain())

    # A synthetic table of 40 schools' hyperparameters (illustration only).
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"income": rng.choice([0.2, 0.35, 0.5], 40),
                         "weight": rng.choice([0.3, 0.5, 0.7], 40)})
    rel = qp.release(plan, query, data, seed=args.seed)
    report = audit_report(theta, query, plan, rel)
    html_path, json_path = report.write(args.output)
    print(f"\nwrote {html_path} and {json_path}")


if __name__ == "__main__":
    main()
