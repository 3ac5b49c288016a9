"""Kawamoto and Murakami's location experiment ([KM19, Sec. VII]) on a synthetic city.

Users report a location to a location-based service; an attacker who knows where two groups of
users are (lambda_0, lambda_1 over the city's cells) tries to tell from one report which group
the user is in. We compare, for each mechanism, the exact distribution privacy of one report
((eps, delta)-DistP and PDistP on the pair, computed exactly over the output laws) with its
service-quality loss (SQL: expected Euclidean distance between the true cell and the reported
one; for the tupling mechanism the user keeps the real report, so its SQL is the base's):

* randomised response over the cells;
* planar Laplace restricted to the grid (P(y | x) proportional to exp(-eps d(x, y)),
  :func:`quiltpriv.distribution.location.planar_laplace_grid`: an exact law sampled by the
  exact noise core; the continuous planar Laplace is eps-geo-indistinguishable, its restriction
  to the cells is not exactly: the script prints its exact geo-indistinguishability, rounded up,
  which lies between eps and 2 eps);
* the tupling mechanism ([KM19, Sec. VI]): the planar Laplace report hidden among k dummies
  drawn uniformly over the cells, for k = 1..K.

Then a simulated service: users of both groups report through the planar Laplace mechanism
(each report drawn exactly by :mod:`quiltpriv.mechanisms.noise`), and the measured SQL is
printed beside the exact one; one tupling release is shown. The draws use the secure source
unless ``--seed`` is given (a seed makes the run reproducible and is for experiments only; the
output says which).

What replaces the paper's data: the paper uses real location traces (not shipped, and no
download at run time); here a 3 x 3 km city of 1 km cells with two groups whose locations are
GENERATED (deterministic bumps around two different centres), printed below. The numbers are
therefore not the paper's figures; the experiment (mechanisms, exact privacy, SQL) is.

    python examples/km_location_tupling.py [--epsilon 1.0] [--max-dummies 5] [--delta 0.05] \
        [--users 1000] [--seed 0]

Every privacy figure is an exact computation on the mechanisms' laws; only the simulated
service draws randomness.
"""

from __future__ import annotations

import argparse
import random

import numpy as np

from quiltpriv.distribution.local_distribution_privacy import (
    distp_epsilon,
    pdistp_epsilon,
    point_privacy_epsilon,
    randomised_response_matrix,
    sample_mechanism,
)
from quiltpriv.distribution.location import (
    geo_indistinguishability_epsilon,
    planar_laplace_grid,
    service_quality_loss,
)
from quiltpriv.distribution.tupling import tupling_exact_privacy, tupling_guarantee, tupling_sample
from quiltpriv.mechanisms import noise

SIDE = 3  # cells per side; 1 km apart


def city() -> tuple[np.ndarray, np.ndarray]:
    """Cell centres (km) and their Euclidean distances."""
    pts = np.array([(i, j) for i in range(SIDE) for j in range(SIDE)], dtype=float)
    return pts, np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(axis=2))


def group_laws(pts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two groups' location laws: bumps exp(-|x - c|^2 / 2) around (0, 0) and (2, 1)
    mixed with a uniform floor (everyone can be anywhere)."""
    out = []
    for centre in ((0.0, 0.0), (2.0, 1.0)):
        w = np.exp(-((pts - np.array(centre)) ** 2).sum(axis=1) / 2) + 0.1
        out.append(w / w.sum())
    return out[0], out[1]


def simulate(mech: np.ndarray, laws: tuple[np.ndarray, np.ndarray], dist: np.ndarray,
             users: int, rng: random.Random) -> float:
    """Mean distance between true and reported cell over ``users`` users of each group: true
    cells drawn from the group's law, reports from the mechanism, both exactly by the noise
    module (the group laws' floats taken as exact rationals)."""
    total = 0.0
    for lam in laws:
        for _ in range(users):
            x = noise.categorical(lam.tolist(), rng)
            y = sample_mechanism(mech, x, seed=rng).output
            total += float(dist[x, y])
    return total / (2 * users)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=1.0, help="eps of the base mechanisms")
    ap.add_argument("--max-dummies", type=int, default=5)
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--users", type=int, default=1000, help="simulated users per group")
    ap.add_argument("--seed", type=int, default=None,
                    help="seed the simulated service (experiments only; default: secure)")
    args = ap.parse_args()
    eps, delta = args.epsilon, args.delta

    pts, dist = city()
    lam0, lam1 = group_laws(pts)
    pair = [(lam0, lam1)]
    print(f"synthetic city: {SIDE} x {SIDE} cells of 1 km (generated, see the docstring)")
    print("group 0:", " ".join(f"{x:.3f}" for x in lam0))
    print("group 1:", " ".join(f"{x:.3f}" for x in lam1))
    mean_sql = 0.5
    print(f"\nexact privacy of one report on (lambda_0, lambda_1), both directions; "
          f"SQL averaged over the two groups (weights {mean_sql}, {mean_sql})\n")
    print(f"{'mechanism':34s} {'point eps':>9s} {'DistP eps':>10s} "
          f"{'DistP eps':>10s} {'PDistP eps':>11s} {'SQL km':>7s}")
    print(f"{'':34s} {'':>9s} {'delta 0':>10s} {f'delta {delta:g}':>10s} "
          f"{f'delta {delta:g}':>11s} {'':>7s}")

    rr = randomised_response_matrix(SIDE * SIDE, eps)
    grid = planar_laplace_grid(pts, eps)
    lap = grid.matrix
    rows = [("randomised response", rr), ("planar Laplace", lap)]
    for name, a in rows:
        s = mean_sql * (service_quality_loss(a, lam0, pts) + service_quality_loss(a, lam1, pts))
        print(f"{name:34s} {point_privacy_epsilon(a):9.4f} "
              f"{distp_epsilon(a, pair).epsilon:10.4f} "
              f"{distp_epsilon(a, pair, delta).epsilon:10.4f} "
              f"{pdistp_epsilon(a, pair, delta).epsilon:11.4f} {s:7.3f}")
    base_sql = mean_sql * (service_quality_loss(lap, lam0, pts)
                           + service_quality_loss(lap, lam1, pts))
    for k in range(1, args.max_dummies + 1):
        ex = tupling_exact_privacy(lap, lam0, lam1, k, delta=delta)
        print(f"{f'tupling, planar Laplace + {k} dummies':34s} {'':>9s} "
              f"{ex.max_divergence:10.4f} {ex.distp_epsilon:10.4f} {ex.pdistp_epsilon:11.4f} "
              f"{base_sql:7.3f}")
    k = args.max_dummies
    m = SIDE * SIDE
    alpha = 0.5 * k / m
    g = tupling_guarantee(lap, [lam0, lam1], k, alpha)
    print(f"\nthe reconstructed theorem at k = {k}, alpha = {alpha:g}: "
          f"({g.epsilon:.4f}, {g.delta:.4g})-PDistP (delta > 1 says nothing); the exact "
          f"values above are what the mechanism gives")
    print(f"traffic: the tupling mechanism sends k + 1 = {k + 1} locations per report")

    print(f"\ngeo-indistinguishability (exact, rounded up): planar Laplace restricted to the "
          f"cells {grid.geo_epsilon:.6f} per km (parameter {eps:g}; the continuous mechanism's "
          f"is {eps:g}, the restriction's at most {2 * eps:g}); randomised response "
          f"{geo_indistinguishability_epsilon(rr, pts):.6f} per km")

    rng = noise.make_rng(args.seed)
    source = ("secure source" if args.seed is None
              else f"seed {args.seed}, reproducible, experiments only")
    measured = simulate(lap, (lam0, lam1), dist, args.users, rng)
    print(f"\nsimulated service ({source}): {args.users} users per group report through the "
          f"planar Laplace mechanism, measured SQL {measured:.3f} km (exact {base_sql:.3f})")
    x = noise.categorical(lam0.tolist(), rng)
    t = tupling_sample(lap, x, k, seed=rng)
    print(f"one tupling release for a group-0 user: {list(t.output)} "
          f"(cells; the real report's slot is not recorded)")


if __name__ == "__main__":
    main()
