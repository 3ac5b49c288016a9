"""Worked case on real data: learn Theta from 303 school districts, then protect one district's
share of low-income students while releasing statistics of its student records.

    pip install ".[data]"            # statsmodels, which ships the star98 data (no download)
    python examples/star98_release.py [--epsilon 1] [--bootstrap 20] [--seed 7] [--out DIR]

Steps (each one documented call):

1. ``quiltpriv.model.datasets.load_star98()``: one row per district, shares in [0, 1].
2. ``quiltpriv.learn_theta(...)``: 3 quantile bins per share (states = bin midpoints), pgmpy's
   hill climbing with the BDeu score, BDeu tables, and ``--bootstrap`` resampled members.
   The star98 districts are a public data set, separate from the records released below, so
   binning them at their quantiles reads nothing off the protected data.
3. One district's student records (the district with the median number of tested students).
   star98 gives, per district, the number of students above the national median in math; the
   other per-student columns are SYNTHETIC, drawn from the district's shares (the data set has
   no student records): they stand in for the records a district would hold.
4. ``quiltpriv.plan`` and ``quiltpriv.mechanisms.compare.compare`` for counts and a mean over those
   records,
   with ``low_income`` sensitive; ``quiltpriv.release``;
   ``quiltpriv.reporting.report.audit_report``.

Writes ``DIR/star98_theta.json`` (the learned Theta with its provenance: ``quiltpriv plan``,
``compare`` and ``report`` read it), ``DIR/district_records.csv`` and the audit report
``DIR/star98_report.html`` (+ ``.json``); prints every plan and comparison. Without ``--seed``
the noise is secure; with it, reproducible and NOT secure (the report says which).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

import quiltpriv as qp
from quiltpriv.mechanisms.compare import compare
from quiltpriv.model.datasets import load_star98
from quiltpriv.reporting.report import audit_report

#: The per-district shares the network models (all shares of the district's students).
PARAMETERS = {"low_income": "share", "asian": "share", "black": "share", "hispanic": "share",
              "prep_courses": "share", "math_above": "share"}


def learn(n_bootstrap: int, seed: int = 0) -> qp.Theta:
    """Theta learned from the 303 districts (deterministic for given arguments)."""
    return qp.learn_theta(load_star98(), PARAMETERS, quantiles=3, n_bootstrap=n_bootstrap,
                          seed=seed)


def district_records(seed: int = 0) -> tuple[int, pd.DataFrame]:
    """One district's student records: math results from star98, the rest synthetic."""
    districts = load_star98()
    order = districts["students"].sort_values(kind="stable")
    district = int(order.index[len(order) // 2])
    row = districts.loc[district]
    n = int(row["students"])
    rng = np.random.default_rng(seed)
    math_above = np.zeros(n, dtype=int)
    math_above[: int(row["students_math_above"])] = 1
    other = max(0.0, 1.0 - row["asian"] - row["black"] - row["hispanic"])
    group = rng.choice(4, size=n, p=np.array([row["asian"], row["black"], row["hispanic"],
                                              other]) / (row["asian"] + row["black"]
                                                         + row["hispanic"] + other))
    records = pd.DataFrame({
        "low_income": (rng.random(n) < row["low_income"]).astype(int),
        "asian": (group == 0).astype(int), "black": (group == 1).astype(int),
        "hispanic": (group == 2).astype(int),
        "prep_courses": (rng.random(n) < row["prep_courses"]).astype(int),
        "math_above": rng.permutation(math_above),
    })
    return district, records


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--bootstrap", type=int, default=20, help="bootstrap members of Theta")
    ap.add_argument("--seed", type=int, default=None,
                    help="reproducible, NOT secure noise (experiments only)")
    ap.add_argument("--out", default="star98-out", help="folder for the outputs")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    eps = args.epsilon

    theta = learn(args.bootstrap)
    prov = theta.provenance
    print(f"learned {theta!r} from {prov['populations']} districts "
          f"(data sha256 {prov['data_sha256'][:16]}...)")
    print("edges:", ", ".join(f"{a} -> {b}" for a, b in theta.edges))
    for v in theta.nodes:
        print(f"  {v}: bins {list(prov['parameters'][v]['edges'])}, states "
              f"{list(theta.states[v])}")
    (out / "star98_theta.json").write_text(json.dumps(qp.theta_to_dict(theta)) + "\n")

    district, records = district_records()
    records.to_csv(out / "district_records.csv", index=False)
    n = len(records)
    print(f"\ndistrict {district}: {n} tested students (records bound n = {n})")

    # Each record holds 0/1 indicators: declaring that domain (the record model's own) lets the
    # mechanisms that use the model's law of the count (Wasserstein) read the predicate.
    def count(attr: str) -> qp.CountQuery:
        return qp.CountQuery([attr], records=n, where=f"{attr} == 1", domain={attr: [0, 1]})

    queries = {
        "count above the math median": count("math_above"),
        "share above the math median (mean)": qp.MeanQuery("math_above", lower=0, upper=1),
        "count in prep courses": count("prep_courses"),
        "count of Asian students": count("asian"),
    }
    for label, query in queries.items():
        print(f"\n== {label}, sensitive low_income, eps = {eps:g}")
        plan = qp.plan(theta, query, "low_income", eps)
        sp = plan["low_income"]
        print(f"APMQM: scale {plan.scale:.6g}, Q = {set(sp.quilt) or '{}'}, e = "
              f"{sp.influence:.4f}")
        print(compare(theta, query, "low_income", eps).explain())
        rel = qp.release(plan, query, records, seed=args.seed)
        print(f"released {rel.value:.6g} (true {query.evaluate(records):.6g}), noise scale "
              f"{rel.scale:.6g}, secure: {rel.secure}")
        if label.startswith("count above"):
            report = audit_report(theta, query, plan, rel)
            html, js = report.write(out / "star98_report.html")
            print(f"wrote {html} and {js}")

    print("\ninfluence of each single-node quilt on low_income (max over "
          f"{len(theta)} members; the point estimate alone in brackets):")
    point = qp.Theta(theta.nodes, theta.states, theta.parents, theta.members[:1],
                     theta.names[:1])
    for v in theta.nodes:
        if v != "low_income":
            e_all = qp.max_influence(theta, "low_income", [v]).value
            e_point = qp.max_influence(point, "low_income", [v]).value
            print(f"  e({{{v}}} | low_income) = {e_all:.4f}  [{e_point:.4f}]")


if __name__ == "__main__":
    main()
