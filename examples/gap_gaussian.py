"""GAP on the binary Gaussian mixture (Huang et al. 2017, Section 4.3, Tables 2-5, Figure 7).

For the paper's four datasets (mu = 3; P(Y=1) in {0.5, 0.75}; sigma0 in {1, 2}, sigma1 = 1)
print, for D = 1..9, the theory column of Tables 2-5 (general PDD optimum by search over the
distortion boundary), the same column as printed in the paper, and a privatizer learned from
20,000 synthetic rows by [HKCSR17, Alg. 1] (augmented Lagrangian) with its exact MAP accuracy
("P_detect"). The closed-form Theorems 2-4 are printed for the equal-variance datasets.

GAP gives no epsilon guarantee: these accuracy-vs-distortion curves are the comparison.

Run: ``python examples/gap_gaussian.py [--plot PATH]``: with matplotlib installed the figure is
written to PATH, or to a new temporary folder (its path is printed), never over the committed
``examples/figures/gap_gaussian.png`` unless that is the PATH given; without matplotlib only the
tables are printed.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

from quiltpriv.gap.learning import learn_gaussian_privatizer, sample_gaussian
from quiltpriv.gap.privatizers import (
    GaussianMixtureModel,
    gaussian_pdd_optimum,
    gaussian_theorem2_pdi,
    gaussian_theorem3_pdd_shift,
    gaussian_theorem4_pdd_shift_noise,
)

SEED = 2017
BUDGETS = list(range(1, 10))
PAPER = {  # "P_detect theory" columns as printed; Table 5, D = 6 disputed (printed 0.7500)
    "Table 2": (0.5, 1.0, [.9693, .9213, .8682, .8144, .7602, .7035, .6384, .5681, .5000]),
    "Table 3": (0.75, 1.0, [.9630, .9176, .8647, .8023, .7503, .7500, .7500, .7500, .7500]),
    "Table 4": (0.5, 2.0, [.9105, .8539, .8011, .7513, .7043, .6600, .6185, .5803, .5457]),
    "Table 5": (0.75, 2.0, [.9328, .8891, .8481, .8120, .7824, .7500, .7500, .7500, .7500]),
}


def figure_path(plot: str | None) -> Path:
    """Where the figure goes: ``plot`` if given, else a new temporary folder (the committed
    figure under examples/figures is rewritten only when asked for by name)."""
    if plot is not None:
        return Path(plot)
    return Path(tempfile.mkdtemp(prefix="quiltpriv-gap_gaussian-")) / "gap_gaussian.png"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plot", metavar="PATH", help="write the figure here (default: a new "
                                                   "temporary folder)")
    args = ap.parse_args(argv)
    results = {}
    for name, (p, s0, printed) in PAPER.items():
        model = GaussianMixtureModel(p, 3.0, sigma0=s0, sigma1=1.0)
        x, y = sample_gaussian(model, 20_000, seed=SEED)
        print(f"\n{name}: P(Y=1) = {p}, X|Y=0 ~ N(-3, {s0 ** 2:g}), X|Y=1 ~ N(3, 1)")
        head = "   D   theory   paper    learned  b0      b1      g0      g1      dist"
        if s0 == 1.0:
            head += "    Thm2    Thm3    Thm4"
        print(head)
        rows = []
        for d, paper in zip(BUDGETS, printed, strict=True):
            opt = gaussian_pdd_optimum(model, d)
            res = learn_gaussian_privatizer(x, y, d, model=model, seed=SEED)
            m = res.mechanism
            mark = "*" if name == "Table 5" and d == 6 else " "
            line = (f"  {d}   {opt.accuracy:.4f}   {paper:.4f}{mark}"
                    f"  {res.accuracy:.4f}   {m.beta0:.3f}   {m.beta1:.3f}   {m.gamma0:.3f}   "
                    f"{m.gamma1:.3f}   {res.distortion:.3f}")
            if s0 == 1.0:
                line += (f"   {gaussian_theorem2_pdi(model, d).accuracy:.4f}  "
                         f"{gaussian_theorem3_pdd_shift(model, d).accuracy:.4f}  "
                         f"{gaussian_theorem4_pdd_shift_noise(model, d).accuracy:.4f}")
            print(line)
            rows.append((opt.accuracy, res.accuracy))
        results[name] = rows
        worst = max(abs(a - b) for a, b in rows)
        print(f"  largest learned-minus-theory gap: {worst:.4f}")
    print("\n* disputed: the paper prints 0.7500; the boundary search finds no mechanism below "
          "the value in the theory column (the paper's own learned privatizer reached 0.7606).")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\nmatplotlib is not installed: skipping the plot.")
        return
    fig, axes = plt.subplots(1, 4, figsize=(16, 4), sharey=True)
    for ax, (name, (p, s0, printed)) in zip(axes, PAPER.items(), strict=True):
        rows = results[name]
        ax.plot(BUDGETS, [r[0] for r in rows], "b-", label="PDD optimum (search)")
        ax.plot(BUDGETS, [r[1] for r in rows], "bo", mfc="none", label="learned (HKCSR17 Alg. 1)")
        ax.plot(BUDGETS, printed, "k+", label="paper, theory column")
        ax.set_title(f"{name}: p~={p}, sigma0={s0:g}")
        ax.set_xlabel("distortion budget D")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("MAP adversary accuracy")
    axes[0].legend()
    fig.tight_layout()
    target = figure_path(args.plot)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=110)
    print(f"\nplot written to {target}")


if __name__ == "__main__":
    main()
