"""Table 2 of Tan, "Privacy on a subset of dataset variables", through [Tan, Alg. 1].

A university releases graduates by degree programme (public: totals must stay exact) and
annual income band (protected). [Tan, Alg. 1] (corrected, docs/papers.md) adds pairwise two-sided
geometric noise inside each row: integer cells, exact row totals, unbiased, eps-private on
{income} (exact loss eps/2 per graduate).

    python examples/subset_privacy_table2.py [--epsilon 1.0] [--seed 7]

(with quiltpriv installed, e.g. ``pip install -e .``, or ``PYTHONPATH=.`` from the repository).

Without --seed the noise comes from the operating system CSPRNG (what a real release needs).
"""

from __future__ import annotations

import argparse

import numpy as np

from quiltpriv.mechanisms.subset_privacy import (
    SubsetPrivacyAccountant,
    cell_moments,
    consistent_count_table,
)

BANDS = ["<30k", "30-40k", "40-50k", "50-60k", "60-80k", "80-100k", "100-120k", ">=120k"]
DEGREES = ["Bachelor of Arts", "Bachelor of Science", "Bachelor of Engineering"]
TABLE2 = np.array([
    [5, 10, 47, 68, 54, 33, 12, 2],
    [1, 13, 44, 92, 131, 75, 21, 15],
    [2, 25, 78, 218, 237, 153, 46, 18],
])


def show(title: str, table: np.ndarray) -> None:
    print(title)
    print(f"{'':25s}{'total':>7s}" + "".join(f"{b:>9s}" for b in BANDS))
    for name, row in zip(DEGREES, table, strict=True):
        print(f"{name:25s}{int(row.sum()):7d}" + "".join(f"{int(v):9d}" for v in row))
    print(f"{'column totals':25s}{int(table.sum()):7d}"
          + "".join(f"{int(v):9d}" for v in table.sum(axis=0)))
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=None, help="reproducible, experiments only")
    args = ap.parse_args()

    show("Table 2 (true counts):", TABLE2)
    out = consistent_count_table(TABLE2, args.epsilon, seed=args.seed)
    show(f"[Tan, Alg. 1] at eps = {out.epsilon:g}:", out.counts)

    var, cov = cell_moments(TABLE2.shape[1], out.epsilon)
    print(f"privacy: eps = {out.epsilon:g} on {{income}} (exact loss per graduate "
          f"{out.privacy_loss:g}); noise: {out.sampler}")
    print(f"each cell: Var = {var:.2f} (sd {var ** 0.5:.2f}), Cov within a row = {cov:.2f}")
    print(f"row totals exact: {tuple(int(x) for x in out.counts.sum(axis=1)) == out.row_totals}; "
          f"negative cells: {int((out.counts < 0).sum())} (no post-processing applied)")
    print()

    # Example 3.6 / Table 1: accounting this release together with others. Alg. 1 reads
    # degree and income and protects income only: its degree totals are exact, so it is not
    # private on any set containing degree (inf), whatever the other releases do.
    acc = SubsetPrivacyAccountant(["degree", "income", "age"])
    acc.register("degree x income ([Tan, Alg. 1])", out.epsilon, ["degree", "income"],
                 protected=["income"])
    acc.register_exact("degree totals (exact)", ["degree"])
    acc.register("age x degree (eps-DP)", 0.5, ["age", "degree"])
    print("eps per protected set (Props 3.2-3.5; inf = not protected at any eps):")
    print(acc.table([["degree"], ["income"], ["age"], ["income", "age"]]).format())

if __name__ == "__main__":
    main()
