"""GAP on the binary data model (Huang et al. 2017, Section 3.3, Figure 5a,b).

For the paper's two datasets, Y = X xor N with (p, q) = (0.5, 0.25) and (0.75, 0.25), print and
plot the MAP adversary's accuracy against the distortion budget D for

* the optimal PDD privatizer (linear programme Eq. (21), checked against its closed form),
* the optimal PDI privatizer (Theorem 1),
* privatizers learned from 10,000 synthetic rows by [HKCSR17, Alg. 1] (penalty method).

GAP gives no epsilon guarantee: these curves are the whole comparison.

Run: ``python examples/gap_binary.py [--plot PATH]``: with matplotlib installed the figure is
written to PATH, or to a new temporary folder (its path is printed), never over the committed
``examples/figures/gap_binary.png`` unless that is the PATH given; without matplotlib only the
tables are printed.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from quiltpriv.gap.learning import learn_binary_privatizer, sample_binary
from quiltpriv.gap.privatizers import (
    BinaryModel,
    binary_pdd_closed_form,
    binary_pdd_optimum,
    binary_pdi_theorem1,
)

DATASETS = [(0.5, 0.25), (0.75, 0.25)]
BUDGETS = np.round(np.arange(0.0, 0.61, 0.05), 2)
SEED = 2017


def curves(p: float, q: float) -> dict[str, list[float]]:
    model = BinaryModel.from_xor(p, q)
    x, y = sample_binary(model, 10_000, seed=SEED)
    out: dict[str, list[float]] = {k: [] for k in ("PDD", "PDD closed", "PDI", "PDD learned",
                                                    "PDI learned")}
    for d in BUDGETS:
        out["PDD"].append(binary_pdd_optimum(model, d).accuracy)
        out["PDD closed"].append(binary_pdd_closed_form(model, d))
        out["PDI"].append(binary_pdi_theorem1(p, q, d).accuracy)
        for kind in ("PDD", "PDI"):
            res = learn_binary_privatizer(x, y, d, kind=kind, constraint="penalty",
                                          model=model, seed=SEED)
            out[f"{kind} learned"].append(res.accuracy)
    return out


def figure_path(plot: str | None) -> Path:
    """Where the figure goes: ``plot`` if given, else a new temporary folder (the committed
    figure under examples/figures is rewritten only when asked for by name)."""
    if plot is not None:
        return Path(plot)
    return Path(tempfile.mkdtemp(prefix="quiltpriv-gap_binary-")) / "gap_binary.png"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plot", metavar="PATH", help="write the figure here (default: a new "
                                                   "temporary folder)")
    args = ap.parse_args(argv)
    results = {}
    for p, q in DATASETS:
        res = curves(p, q)
        results[(p, q)] = res
        print(f"\n(p, q) = ({p}, {q}): MAP adversary accuracy vs distortion D")
        print("    D     PDD(LP)  PDD(closed)  PDI(Thm1)  PDD learned  PDI learned")
        for i, d in enumerate(BUDGETS):
            print(f"  {d:4.2f}   {res['PDD'][i]:.4f}   {res['PDD closed'][i]:.4f}      "
                  f"{res['PDI'][i]:.4f}     {res['PDD learned'][i]:.4f}       "
                  f"{res['PDI learned'][i]:.4f}")
        gap_pdd = max(abs(a - b) for a, b in zip(res["PDD learned"], res["PDD"], strict=True))
        gap_pdi = max(abs(a - b) for a, b in zip(res["PDI learned"], res["PDI"], strict=True))
        print(f"  largest learned-minus-theory gap: PDD {gap_pdd:.4f}, PDI {gap_pdi:.4f}")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\nmatplotlib is not installed: skipping the plot.")
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, (p, q) in zip(axes, DATASETS, strict=True):
        res = results[(p, q)]
        ax.plot(BUDGETS, res["PDD"], "b-", label="PDD optimum (LP)")
        ax.plot(BUDGETS, res["PDI"], "r-", label="PDI optimum (Theorem 1)")
        ax.plot(BUDGETS, res["PDD learned"], "bo", mfc="none", label="PDD learned (HKCSR17 Alg. 1)")
        ax.plot(BUDGETS, res["PDI learned"], "rs", mfc="none", label="PDI learned (HKCSR17 Alg. 1)")
        ax.set_title(f"binary data model, (p, q) = ({p}, {q})")
        ax.set_xlabel("distortion budget D")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("MAP adversary accuracy")
    axes[0].legend()
    fig.tight_layout()
    target = figure_path(args.plot)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=120)
    print(f"\nplot written to {target}")


if __name__ == "__main__":
    main()
