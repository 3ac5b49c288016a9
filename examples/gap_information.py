"""GAP with the log-loss and squared-loss adversaries on the binary data model (Huang et al.
2017, Sections 2.2 and 3.3, Figure 5c,d).

For the paper's two datasets, Y = X xor N with (p, q) = (0.5, 0.25) and (0.75, 0.25), print and
plot against the distortion budget D (Hamming):

* the mutual information I(X^; Y) (bits) of the MI-optimal PDD and PDI privatizers (the
  log-loss game, Figure 5c,d), :func:`quiltpriv.gap.information.binary_mi_pdd_optimum` /
  :func:`~quiltpriv.gap.information.binary_mi_pdi_optimum`;
* the MAP adversary's accuracy against the MI-optimal PDD privatizer beside the MAP-optimal one
  (Figure 5a, the linear programme Eq. (21));
* the MMSE adversary's error E[(Y - E[Y | X^])^2] against the MI-optimal PDD privatizer
  (the squared-loss adversary of Section 2.2; Var(Y) without the release);

and the distortions at which each curve saturates, beside the paper's claim that the MI curves
saturate "very close" to the MAP curves. Figure 5c,d's values are not printed in the paper (only
drawn), so only the saturation claim is compared. Finally one dataset of 2,000 rows is
privatized through :func:`~quiltpriv.gap.information.binary_privatize` (exact draws from the
noise module; seeded, experiments only, with ``--seed``; secure otherwise).

GAP gives no epsilon guarantee: these curves are the whole comparison.

Run: ``python examples/gap_information.py [--plot PATH] [--seed 0]``; with matplotlib the figure
is written to PATH, or to a new temporary folder (its path is printed).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from quiltpriv.gap.information import (
    binary_mi_pdd_optimum,
    binary_mi_pdi_optimum,
    binary_privatize,
    mi_saturation_distortion,
    mmse_adversary,
)
from quiltpriv.gap.privatizers import BinaryModel, binary_pdd_optimum, binary_pdi_theorem1
from quiltpriv.mechanisms import noise

DATASETS = [(0.5, 0.25), (0.75, 0.25)]
BUDGETS = np.round(np.arange(0.0, 0.61, 0.05), 2)


def map_saturation(p: float, q: float) -> tuple[float, float]:
    """Distortions at which the MAP curves of Figure 5a,b reach the prior's accuracy: PDD
    ``sum_x max_y p_xy - max_y P(y)`` (closed form of Eq. (21)); PDI from Theorem 1,
    ``|1 - 2q| (1 - D) + min(q, 1 - q) = max_y P(y)``."""
    model = BinaryModel.from_xor(p, q)
    pdd = model.undistorted_accuracy - model.prior_accuracy
    pdi = 1 - (model.prior_accuracy - min(q, 1 - q)) / abs(1 - 2 * q)
    return pdd, pdi


def curves(p: float, q: float) -> dict[str, list[float]]:
    model = BinaryModel.from_xor(p, q)
    out: dict[str, list[float]] = {k: [] for k in ("MI PDD", "MI PDI", "MAP of MI PDD",
                                                    "MAP optimum", "MMSE of MI PDD")}
    for d in BUDGETS:
        pdd = binary_mi_pdd_optimum(model, d)
        out["MI PDD"].append(pdd.mutual_information_bits)
        out["MI PDI"].append(binary_mi_pdi_optimum(model, d).mutual_information_bits)
        out["MAP of MI PDD"].append(pdd.map_accuracy)
        out["MAP optimum"].append(binary_pdd_optimum(model, d).accuracy)
        out["MMSE of MI PDD"].append(pdd.mmse)
    return out


def figure_path(plot: str | None) -> Path:
    if plot is not None:
        return Path(plot)
    return Path(tempfile.mkdtemp(prefix="quiltpriv-gap_information-")) / "gap_information.png"


def demo_release(seed: int | None) -> None:
    """Privatize 2,000 rows of the (0.5, 0.25) model with the MI-optimal PDD privatizer at
    D = 0.15, every draw exact through the noise module."""
    model = BinaryModel.from_xor(0.5, 0.25)
    opt = binary_mi_pdd_optimum(model, 0.15)
    rng = noise.make_rng(seed)
    rows = [divmod(noise.categorical([w for r in model.joint for w in r], rng), 2)
            for _ in range(2000)]
    x = [r[0] for r in rows]
    y = [r[1] for r in rows]
    rel = binary_privatize(opt.mechanism, x, y, seed=rng)
    joint = np.zeros((2, 2))
    for yy, xh in zip(y, rel.values, strict=True):
        joint[yy, xh] += 1
    joint /= joint.sum()
    emp = float(np.mean([a != b for a, b in zip(x, rel.values, strict=True)]))
    source = "secure source" if seed is None else f"seed {seed}, reproducible, experiments only"
    print(f"\nrelease of 2000 rows of (0.5, 0.25) by the MI-optimal PDD privatizer at D = 0.15 "
          f"({source}): measured distortion {emp:.3f} (expected {opt.distortion:.3f}); the "
          f"rows' empirical MMSE {mmse_adversary(joint).mmse:.4f} (the law's {opt.mmse:.4f})")


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plot", metavar="PATH", help="write the figure here (default: a new "
                                                   "temporary folder)")
    ap.add_argument("--seed", type=int, default=None,
                    help="seed the demonstration release (experiments only; default: secure)")
    args = ap.parse_args(argv)
    results = {}
    for p, q in DATASETS:
        model = BinaryModel.from_xor(p, q)
        res = curves(p, q)
        results[(p, q)] = res
        py = model.array.sum(axis=0)
        print(f"\n(p, q) = ({p}, {q}): P(Y = 1) = {py[1]:.4f}, Var(Y) = {py[0] * py[1]:.4f}")
        print("    D   MI PDD (bits)  MI PDI (bits)  MAP of MI-PDD  MAP optimum  MMSE of MI-PDD")
        for i, d in enumerate(BUDGETS):
            print(f"  {d:4.2f}      {res['MI PDD'][i]:.5f}        {res['MI PDI'][i]:.5f}"
                  f"         {res['MAP of MI PDD'][i]:.4f}       {res['MAP optimum'][i]:.4f}"
                  f"          {res['MMSE of MI PDD'][i]:.4f}")
        mi_pdd = mi_saturation_distortion(model, "PDD")
        mi_pdi = mi_saturation_distortion(model, "PDI")
        map_pdd, map_pdi = map_saturation(p, q)
        print(f"  saturation distortion: MI (Fig. 5c,d) PDD {mi_pdd:.4f}, PDI {mi_pdi:.4f}; "
              f"MAP (Fig. 5a,b) PDD {map_pdd:.4f}, PDI {map_pdi:.4f}")
        assert binary_pdi_theorem1(p, q, map_pdi).accuracy <= model.prior_accuracy + 1e-12
    print("\nthe paper (Sec. 3.3): the MI saturation thresholds are 'very close to what we observe "
          "in Figure 5a,b'")
    demo_release(args.seed)

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
        ax.plot(BUDGETS, res["MI PDD"], "b-o", label="PDD, MI-optimal")
        ax.plot(BUDGETS, res["MI PDI"], "r-s", label="PDI, MI-optimal")
        ax.set_title(f"binary data model, (p, q) = ({p}, {q})")
        ax.set_xlabel("distortion budget D")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("I(X^; Y) (bits)")
    axes[0].legend()
    fig.tight_layout()
    target = figure_path(args.plot)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=120)
    print(f"\nplot written to {target}")


if __name__ == "__main__":
    main()
