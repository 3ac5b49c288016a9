"""[CO23] mechanisms for a vector query F in R^m: Wasserstein, approximate Wasserstein, closeness,
and the Directional Expected Value Mechanism with several directions.

The scalar forms are in :mod:`quiltpriv.distribution.distribution_privacy`
(``wasserstein_mechanism_1d``, ``approximate_wasserstein_mechanism_1d``, ``closeness_1d``,
``dirm_laplace``, ``dirm_gaussian``); the paper's query is a vector (the Adult query is in R^5),
and these are its vector forms:

* :func:`wasserstein_inf_l1` -- W_inf with the L1 ground norm between two finitely supported laws
  in R^m ([CO23, Def. 3.1]), exact for the (rounded-up) L1 distances: a bottleneck search
  decided by rational max-flow;
* :func:`closeness` -- the least W for which two such laws are (W, delta)-close ([CO23, Def.
  3.2]: some coupling puts mass >= 1 - delta on pairs at L1 distance <= W), exactly, by the
  same max-flow with a slack of delta on each side;
* :func:`wasserstein_mechanism` -- [CO23, Thm. 3.1]: F + Lap(Delta_W / eps) per coordinate,
  (eps, 0), Delta_W = max over Psi of W_inf (L1);
* :func:`approximate_wasserstein_mechanism` -- [CO23, Thm. 3.2]: F + Lap(W / eps) per
  coordinate, (eps, delta), W = max over Psi of the least (W, delta)-closeness;
* :func:`coupling_bounds_mechanism` -- [CO23, Thm. 3.1] when the laws of F are not known but
  one coupling of each pair is: it moves coordinate k by at most B_k (e.g. independent
  coordinates each coupled by its own W_inf, or a coordinate bounded by its range). The theorem
  is applied to the rescaled query G = diag(w) F with the L1 ground norm (W_inf(G) <= sum_k
  w_k B_k), so coordinate k of F gets Lap(sum_j w_j B_j / (eps w_k)); the weights are powers of
  two near B_k^(-1/3), which minimise E||noise||_2^2 up to the rounding, and make diag(w) F
  exact in floats;
* :func:`dirm_laplace_directions`, :func:`dirm_gaussian_directions` -- [CO23, Sec. 4.2] when
  the mean differences are not all parallel: an orthonormal basis v_1..v_k of the directions
  they span, noise only along those directions (Laplace: one Lap(b) per direction with
  b = max over Psi of ||V^T (mu_i - mu_j)||_1 / eps; Gaussian: N(0, sigma^2 V V^T) with
  sigma = max ||V^T (mu_i - mu_j)||_2 / r(eps, delta)). With one direction these are DirM(L)
  and DirM(G).

Why Laplace per coordinate with the L1 ground norm: the density of i.i.d. Lap(b) noise changes
by at most exp(||s||_1 / b) under a shift s, so coupling the two laws of F within L1 distance W
gives the e^eps bound with b = W / eps (and mass delta left over in Thm. 3.2).

Every release is drawn through :mod:`quiltpriv.mechanisms.noise` (the results'
``release``/``sample_noise``).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numpy.typing import ArrayLike

from quiltpriv.distribution.distribution_privacy import (
    _SAFETY,
    DistributionPrivacyResult,
    _means,
    _pairs,
    _scale,
    _square_up,
    _translation_assumption,
    mahalanobis_budget,
)
from quiltpriv.errors import ModelError, ParameterError
from quiltpriv.utils import distances
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.rounding import add_up, div_up, mul_up
from quiltpriv.utils.validation import (
    check_array,
    check_delta,
    check_epsilon,
    check_probability_vector,
    check_records,
    check_vector,
)

if TYPE_CHECKING:
    import os
    import random

    from quiltpriv.mechanisms.noise import Seed
    from quiltpriv.mechanisms.protocol import VectorRelease

__all__ = [
    "CoordinateLaplaceResult",
    "DirectionsLaplaceResult",
    "approximate_wasserstein_mechanism",
    "closeness",
    "coupling_bounds_mechanism",
    "dirm_gaussian_directions",
    "dirm_laplace_directions",
    "l1_cost_matrix",
    "wasserstein_inf_l1",
    "wasserstein_mechanism",
]

_U = 2.0 ** -53  # unit roundoff of float64
#: Largest support product (points of one law x points of the other) accepted: the max-flow
#: works on that many edges with exact rationals.
MAX_PAIRS = 250_000


# ---------------------------------------------------------------------------------------------
# laws in R^m and their distances


def _support(xs: object, p: object, name: str, m: int | None) -> tuple[np.ndarray, np.ndarray]:
    pts = check_array(xs, f"support of {name}")
    if pts.ndim == 1:
        pts = pts.reshape(-1, 1) if m in (None, 1) else pts.reshape(1, -1)
    if pts.ndim != 2 or pts.shape[0] == 0:
        raise ParameterError(f"support of {name} must be a k x m array of points")
    if not np.all(np.isfinite(pts)):
        raise ParameterError(f"support of {name} has NaN or infinite coordinates")
    if m is not None and pts.shape[1] != m:
        raise ParameterError(f"support of {name} has points in R^{pts.shape[1]}, expected R^{m}")
    prob = check_probability_vector(p, f"probabilities of {name}")
    if prob.size != pts.shape[0]:
        raise ParameterError(f"{name} has {pts.shape[0]} points but {prob.size} probabilities")
    return pts.astype(float), prob


def l1_cost_matrix(xs: ArrayLike, ys: ArrayLike) -> np.ndarray:
    """L1 distances ||x_i - y_j||_1 between two point sets in R^m, never below the exact ones.

    The float sum of m absolute differences is within a relative gamma_(m+1) = (m+1) u / (1 -
    (m+1) u) of the exact value (u = 2^-53); each entry is inflated by that bound and one more
    ulp, so it is an upper bound (0 stays 0: equal points).

    Parameters
    ----------
    xs, ys : array-like
        k x m and l x m points (a 1-d array is m = 1).

    Returns
    -------
    numpy.ndarray
        k x l.

    Examples
    --------
    >>> from quiltpriv.distribution import l1_cost_matrix
    >>> l1_cost_matrix([[0, 0], [1, 1]], [[0, 1]])
    array([[1.],
           [1.]])
    """
    a, b = check_array(xs, "xs"), check_array(ys, "ys")
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if b.ndim == 1:
        b = b.reshape(-1, 1)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ParameterError("xs and ys must be k x m and l x m arrays of points (same m)")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ParameterError("points must be finite")
    m = a.shape[1]
    d = np.abs(a[:, None, :] - b[None, :, :]).sum(axis=2)
    big = max(float(np.abs(a).max(initial=0.0)), float(np.abs(b).max(initial=0.0)))
    if np.all(a == np.round(a)) and np.all(b == np.round(b)) and 2 * m * big < 2.0 ** 52:
        return d  # integer coordinates: every difference and partial sum is exact
    gamma = (m + 1) * _U / (1 - (m + 1) * _U)
    up = np.nextafter(d * (1 + 2 * gamma), np.inf)
    return np.where(d == 0, 0.0, up)


def _pair_costs(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    if xs.shape[0] * ys.shape[0] > MAX_PAIRS:
        raise ParameterError(f"the supports have {xs.shape[0]} x {ys.shape[0]} pairs of points, "
                             f"more than {MAX_PAIRS}: merge points or use a bound")
    return l1_cost_matrix(xs, ys)


def wasserstein_inf_l1(xs: ArrayLike, p: ArrayLike, ys: ArrayLike, q: ArrayLike) -> float:
    """W_inf with the L1 ground norm ([CO23, Def. 3.1]) between two finite laws in R^m.

    ``xs`` (k x m) with probabilities ``p``, ``ys`` (l x m) with ``q``. The least over couplings
    of the largest L1 distance on the coupling's support: exact for the rounded-up distances of
    :func:`l1_cost_matrix` (:func:`quiltpriv.utils.distances.wasserstein_inf`), so never below the
    true W_inf.

    Parameters
    ----------
    xs, ys : array-like
        The points of each law (k x m and l x m).
    p, q : array-like
        Their probabilities.

    Returns
    -------
    float

    Examples
    --------
    A tenth of the mass sits at 5, four away from the other law's nearest point:

    >>> from quiltpriv.distribution import wasserstein_inf_l1
    >>> wasserstein_inf_l1([[0], [1], [5]], [0.45, 0.45, 0.1], [[0], [1]], [0.5, 0.5])
    4.0
    """
    a, pa = _support(xs, p, "the first law", None)
    b, qb = _support(ys, q, "the second law", a.shape[1])
    return distances.wasserstein_inf(_pair_costs(a, b), pa, qb).distance


def _close_at(pa: list[Fraction], qb: list[Fraction], allowed: np.ndarray, dl: Fraction) -> bool:
    """Some coupling puts mass >= 1 - dl on ``allowed``: full transport of (p, dl) to (q, dl)
    where the slack source reaches every target and every source reaches the slack target."""
    if dl == 0:
        return distances._transport_feasible(pa, qb, allowed) is not None
    n, m = allowed.shape
    ext = np.ones((n + 1, m + 1), dtype=bool)
    ext[:n, :m] = allowed
    return distances._transport_feasible([*pa, dl], [*qb, dl], ext) is not None


def closeness(xs: ArrayLike, p: ArrayLike, ys: ArrayLike, q: ArrayLike, delta: float) -> float:
    """The least W for which the two laws are (W, delta)-close ([CO23, Def. 3.2]), L1 norm.

    (W, delta)-close: some coupling puts mass >= 1 - delta on pairs at L1 distance <= W. The
    least W is one of the pairwise distances (or 0); it is found by binary search, each
    candidate decided exactly by a rational max-flow, on the rounded-up distances of
    :func:`l1_cost_matrix` (so never below the true least W). delta = 0 gives W_inf.

    Parameters
    ----------
    xs, ys : array-like
        The points of each law (k x m and l x m).
    p, q : array-like
        Their probabilities.
    delta : float
        The mass allowed to move further than W.

    Returns
    -------
    float

    Examples
    --------
    Leaving out a tenth of the mass leaves nothing to move:

    >>> from quiltpriv.distribution import closeness
    >>> xs, p, ys, q = [[0], [1], [5]], [0.45, 0.45, 0.1], [[0], [1]], [0.5, 0.5]
    >>> closeness(xs, p, ys, q, 0.1), closeness(xs, p, ys, q, 0.05)
    (0.0, 4.0)
    """
    dl = check_delta(delta, allow_zero=True)
    a, pa = _support(xs, p, "the first law", None)
    b, qb = _support(ys, q, "the second law", a.shape[1])
    ia, ib = np.flatnonzero(pa > 0), np.flatnonzero(qb > 0)
    cost = _pair_costs(a[ia], b[ib])
    fa, fb = distances._exact_law(pa[ia]), distances._exact_law(qb[ib])
    fd = Fraction(dl)
    levels = np.unique(np.concatenate([[0.0], cost.ravel()]))
    lo, hi = 0, levels.size - 1  # the largest level allows every pair: always close
    while lo < hi:
        mid = (lo + hi) // 2
        if _close_at(fa, fb, cost <= levels[mid], fd):
            hi = mid
        else:
            lo = mid + 1
    return float(levels[lo])


# ---------------------------------------------------------------------------------------------
# [CO23, Thm. 3.1 and 3.2]

Law = tuple[ArrayLike, ArrayLike]


def _laws(laws: Mapping[Any, Law]) -> tuple[dict[Any, tuple[np.ndarray, np.ndarray]], int]:
    if not isinstance(laws, Mapping) or len(laws) < 2:
        raise ParameterError("laws must map at least two thetas to (support points, "
                             "probabilities)")
    out: dict[Any, tuple[np.ndarray, np.ndarray]] = {}
    m: int | None = None
    for k, law in laws.items():
        try:
            xs, p = law
        except (TypeError, ValueError):
            raise ParameterError(f"law of F under theta {k!r} must be (support points, "
                                 "probabilities)") from None
        out[k] = _support(xs, p, f"the law under theta {k!r}", m)
        m = out[k][0].shape[1]
    assert m is not None
    return out, m


def wasserstein_mechanism(laws: Mapping[Any, Law], epsilon: float, *,
                          pairs: Sequence[tuple[Hashable, Hashable]] | None = None
                          ) -> DistributionPrivacyResult:
    """Wasserstein Mechanism for F in R^m ([CO23, Thm. 3.1]): F + Lap(Delta_W / eps) per
    coordinate, (eps, 0)-distribution private w.r.t. Psi.

    Parameters
    ----------
    laws : mapping theta -> (points, probabilities)
        The exact finite law of F under each theta: a k x m array of points (a 1-d array for
        m = 1) and their probabilities.
    epsilon : float
    pairs : sequence of (theta_i, theta_j), optional
        Psi; default every ordered pair of distinct thetas.

    Returns
    -------
    DistributionPrivacyResult

    Notes
    -----
    Delta_W = max over Psi of W_inf with the L1 ground norm (:func:`wasserstein_inf_l1`, never
    below the exact value), inflated by the package's relative safety margin.

    Examples
    --------
    >>> from quiltpriv.distribution import wasserstein_mechanism
    >>> laws = {"low": ([[0.0], [1.0]], [0.7, 0.3]),    # F is 0 or 1 under each theta
    ...         "high": ([[0.0], [1.0]], [0.4, 0.6])}
    >>> result = wasserstein_mechanism(laws, epsilon=1.0)
    >>> result.sensitivity, result.laplace_scale  # Delta_W = 1, rounded up
    (1.000000001, 1.0000000020000004)
    """
    eps = check_epsilon(epsilon)
    lw, m = _laws(laws)
    ps = _pairs(pairs, lw.keys())
    w = max(wasserstein_inf_l1(*lw[a], *lw[b]) for a, b in ps) * (1 + _SAFETY)
    return DistributionPrivacyResult(
        "Wasserstein", "laplace", m, eps, 0.0, laplace_scale=_scale(w, eps),
        sensitivity=w, assumptions=("the given laws are the exact laws of F under each theta",),
        notes=(f"Delta_W = max W_inf (L1 ground norm) over {len(ps)} pairs = {_fmt(w)} (exact "
               f"bottleneck on rounded-up distances)",))


def approximate_wasserstein_mechanism(laws: Mapping[Any, Law], epsilon: float, delta: float, *,
                                      pairs: Sequence[tuple[Hashable, Hashable]] | None = None
                                      ) -> DistributionPrivacyResult:
    """Approximate Wasserstein Mechanism for F in R^m ([CO23, Thm. 3.2]): F + Lap(W / eps) per
    coordinate, (eps, delta), W = max over Psi of the least (W, delta)-closeness
    (:func:`closeness`, exact, L1 norm).

    Parameters
    ----------
    laws : mapping theta -> (points, probabilities)
        The exact finite law of F under each theta.
    epsilon, delta : float
        The guarantee.
    pairs : sequence of (theta_i, theta_j), optional
        Psi; default every ordered pair of distinct thetas.

    Returns
    -------
    DistributionPrivacyResult

    Examples
    --------
    >>> from quiltpriv.distribution import approximate_wasserstein_mechanism
    >>> laws = {"low": ([[0.0], [1.0]], [0.7, 0.3]),    # F is 0 or 1 under each theta
    ...         "high": ([[0.0], [1.0]], [0.4, 0.6])}
    >>> result = approximate_wasserstein_mechanism(laws, 1.0, 0.1)
    >>> result.mechanism, result.laplace_scale
    ('approximate Wasserstein', 1.0000000020000004)
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    lw, m = _laws(laws)
    ps = _pairs(pairs, lw.keys())
    w = max(closeness(*lw[a], *lw[b], dl) for a, b in ps) * (1 + _SAFETY)
    return DistributionPrivacyResult(
        "approximate Wasserstein", "laplace", m, eps, dl, laplace_scale=_scale(w, eps),
        sensitivity=w, assumptions=("the given laws are the exact laws of F under each theta",),
        notes=(f"every pair is ({_fmt(w)}, {_fmt(dl)})-close in L1 (least W, exact max-flow)",))


# ---------------------------------------------------------------------------------------------
# [CO23, Thm. 3.1] from per-coordinate bounds of one coupling


@dataclass(frozen=True)
class CoordinateLaplaceResult(DistributionPrivacyResult):
    """Independent Laplace noise with a scale per coordinate: Lap(``laplace_scale / w_k``) on
    coordinate k, ``w_k = weights[k]`` a power of two; ``bounds`` are the B_k it was given.

    It is [CO23, Thm. 3.1] for G = diag(w) F (``laplace_scale = sensitivity / eps`` with
    ``sensitivity`` >= W_inf(G) in L1); :meth:`release` releases G exactly through the noise
    module and divides by w (exact: powers of two), which is post-processing.
    """

    weights: tuple[float, ...] = ()
    bounds: tuple[float, ...] = ()

    @property
    def scales(self) -> tuple[float, ...]:
        """The Laplace scale of each coordinate of F (exact: a division by a power of two)."""
        return tuple(self.laplace_scale / w for w in self.weights)

    def expected_l2_error(self) -> float:
        raise ParameterError("no closed form for E||.||_2 of independent Laplace noise in m > 1 "
                             "coordinates; use expected_l1_error or simulate")

    def expected_l1_error(self) -> float:
        return float(sum(self.scales))

    def sample_noise(self, size: int | None = None, *, seed: Seed = None) -> np.ndarray:
        """Noise vectors (for simulations; **not a release**): exact discrete Laplace samples of
        scale ``laplace_scale`` from :mod:`quiltpriv.mechanisms.noise`, divided by the weights.
        Secure randomness by default; a seed is for experiments only."""
        from quiltpriv.mechanisms import noise

        rng = noise.make_rng(seed)
        n = 1 if size is None else check_records(size, "size")
        z = np.asarray(noise.laplace(self.laplace_scale, (n, self.dimension), seed=rng),
                       dtype=float) / np.asarray(self.weights)
        return z[0] if size is None else z

    def release(self, value: ArrayLike, *, seed: Seed = None,
                ledger: str | os.PathLike[str] | None = None, budget: float | None = None,
                allow_unproved: bool = False) -> VectorRelease:
        """F(Data) + noise: G = diag(w) F (exact, powers of two) released by
        :func:`~quiltpriv.mechanisms.noise.laplace_release_vector` with L1 sensitivity
        ``sensitivity`` and scale ``laplace_scale`` (the snapping paid in L1), then divided by
        w (post-processing). Secure randomness by default; a seed is for experiments only.

        Returns a :class:`~quiltpriv.mechanisms.protocol.VectorRelease` (it reads as the array
        this method returned before; its ``noise_scale_used`` and ``granularity`` are G's, the
        scale of coordinate k divided by ``w_k``), made by the one release flow
        (:func:`quiltpriv.mechanisms.protocol.release_value`; ``ledger`` and ``budget`` as
        there)."""
        from quiltpriv.mechanisms import noise
        from quiltpriv.mechanisms.protocol import Calibration, Guarantee, release_value
        from quiltpriv.mechanisms.release_flow import Drawn, drawn_values
        from quiltpriv.utils.format import fmt_number

        x = check_vector(value, "value", self.dimension)
        w = np.asarray(self.weights)
        g = x * w
        if not np.all(np.isfinite(g)):
            raise ParameterError("value times the weights overflows; nothing released")

        def draw(rng: random.Random) -> Drawn:
            out = noise.laplace_release_vector(g, self.laplace_scale, self.sensitivity, seed=rng)
            return drawn_values(out, divide=self.weights)

        cal = Calibration("laplace", self.laplace_scale, self.sensitivity,
                          f"[CO23, Thm. 3.1] {self.mechanism}: Laplace scale "
                          f"{fmt_number(self.laplace_scale, rounding='up')} on G = diag(w) F "
                          "for its L1 distance, divided by the weights w (powers of two)")
        guarantee = Guarantee("distribution privacy", self.epsilon, self.delta,
                              tuple(self.assumptions))
        out = release_value(x, mechanism="distribution privacy", guarantee=guarantee,
                            calibration=cal, details=self.to_dict(), seed=seed, ledger=ledger,
                            budget=budget, allow_unproved=allow_unproved, draw=draw)
        return cast("VectorRelease", out)


def _power_of_two(x: float) -> float:
    """The power of two nearest to x (> 0) in log scale."""
    return math.ldexp(1.0, round(math.log2(x)))


def coupling_bounds_mechanism(bounds: ArrayLike, epsilon: float, *,
                              weights: ArrayLike | None = None) -> CoordinateLaplaceResult:
    """[CO23, Thm. 3.1] for F in R^m from per-coordinate bounds of one coupling: (eps, 0).

    Parameters
    ----------
    bounds : sequence of float > 0
        B_k such that, for every pair (theta_i, theta_j) of Psi, ONE coupling of the two laws
        of F moves every coordinate k by at most B_k at once. Per-coordinate W_inf values are
        such bounds when the coordinates are independent under each theta (the product of the
        optimal couplings); a coordinate's range is one under any coupling. (Per-coordinate
        W_inf of dependent coordinates are NOT: their couplings may not combine.)
    epsilon : float
    weights : sequence of float > 0, optional
        Each is rounded to the nearest power of two (so diag(w) F is exact in floats). Default:
        B_k^(-1/3), which minimises E||noise||_2^2 = 2 sum_k (Delta / (eps w_k))^2 over
        the weights (Lagrange), before that rounding.

    Notes
    -----
    G = diag(w) F: under the coupling ||G - G'||_1 <= Delta = sum_k w_k B_k, so W_inf(G) <=
    Delta with the L1 ground norm and G + Lap(Delta / eps)^m is (eps, 0)-distribution private
    (Thm. 3.1); F's noisy value is G's divided by w, post-processing. Delta is summed in
    rounded-up floats and inflated by the package's safety margin.
    """
    eps = check_epsilon(epsilon)
    b = check_array(bounds, "bounds", ndim=1)
    if b.size == 0 or np.any(b <= 0) or not np.all(np.isfinite(b)):
        raise ParameterError("bounds must be finite and > 0 (a coordinate that never moves "
                             "needs no noise: leave it out of F)")
    if weights is None:
        raw = b ** (-1.0 / 3.0)
    else:
        raw = check_array(weights, "weights", ndim=1)
        if raw.size != b.size or np.any(raw <= 0) or not np.all(np.isfinite(raw)):
            raise ParameterError(f"weights must be {b.size} finite numbers > 0")
    w = tuple(_power_of_two(float(v)) for v in raw)
    delta_w = 0.0
    for wk, bk in zip(w, b.tolist(), strict=True):
        delta_w = add_up(delta_w, mul_up(wk, bk))
    sens = mul_up(delta_w, 1 + _SAFETY)
    return CoordinateLaplaceResult(
        "Wasserstein (coupling bounds)", "laplace-weighted", int(b.size), eps, 0.0,
        laplace_scale=_scale(delta_w, eps), sensitivity=sens,
        assumptions=("one coupling of each pair of laws of F moves coordinate k by at most "
                     "bounds[k] at once",),
        notes=(f"G = diag(w) F with w = {list(w)} (powers of two); Delta = sum w_k B_k = "
               f"{_fmt(delta_w)} bounds W_inf(G) in L1",), weights=w,
        bounds=tuple(float(v) for v in b))


# ---------------------------------------------------------------------------------------------
# [CO23, Sec. 4.2] with several directions


def _basis(directions: ArrayLike | None, mu: Mapping[Any, np.ndarray],
           ps: Sequence[tuple[Any, Any]], m: int, rtol: float) -> np.ndarray:
    """Orthonormal columns spanning the declared directions (default: the mean differences).
    Checks that every mean difference lies in their span."""
    diffs = np.array([mu[a] - mu[b] for a, b in ps], dtype=float).reshape(len(ps), m)
    if directions is None:
        src = diffs.T
    else:
        d = check_array(directions, "directions")
        if d.ndim == 1:
            d = d.reshape(1, -1)
        if d.ndim != 2 or d.shape[1] != m or not np.all(np.isfinite(d)):
            raise ParameterError(f"directions must be a k x {m} array of finite vectors")
        src = d.T
    u, s, _ = np.linalg.svd(src, full_matrices=False)
    if s.size == 0 or s[0] == 0:
        raise ParameterError("no direction: all mean differences are zero and none was given")
    keep = s > s[0] * 1e-12
    v = u[:, keep]
    for (a, b), dv in zip(ps, diffs, strict=True):
        resid = float(np.linalg.norm(dv - v @ (v.T @ dv)))
        if resid > 0 and resid > rtol * float(np.linalg.norm(dv)):
            raise ModelError(f"the means of thetas {a!r} and {b!r} differ outside the declared "
                             f"directions (orthogonal component of norm {_fmt(resid, 3)})")
    return v


def _coefficients_norm(v: np.ndarray, mu: Mapping[Any, np.ndarray],
                       ps: Sequence[tuple[Any, Any]], ord: float) -> float:
    # max over Psi of ||V^T d||_p with a safety margin for float rounding; for p = 2 never
    # below ||d||_2 (equal in exact arithmetic when d lies in the span, as checked).
    worst = 0.0
    for a, b in ps:
        d = mu[a] - mu[b]
        c = v.T @ d
        val = float(np.linalg.norm(c, ord))
        if ord == 2:
            val = max(val, float(np.linalg.norm(d)))
        worst = max(worst, val)
    return worst * (1 + 4 * _SAFETY)


@dataclass(frozen=True)
class DirectionsLaplaceResult(DistributionPrivacyResult):
    """DirM(L) with several directions: F + sum_k Y_k v_k, Y_k i.i.d. Lap(``laplace_scale``).

    ``basis`` holds the orthonormal directions v_k as columns (m x k).

    Parameters
    ----------
    mechanism, noise, dimension, epsilon, delta, laplace_scale, covariance, direction
        As in :class:`~quiltpriv.distribution.distribution_privacy.DistributionPrivacyResult`.
    sensitivity, assumptions, notes, release_sigma
        As there.
    basis : numpy.ndarray
        The directions v_k, as columns.

    Examples
    --------
    >>> from quiltpriv.distribution import dirm_laplace_directions
    >>> result = dirm_laplace_directions({"low": [0.0, 0.0], "high": [1.0, 1.0]}, 1.0)
    >>> type(result).__name__, result.basis.shape
    ('DirectionsLaplaceResult', (2, 1))
    """

    basis: np.ndarray | None = None

    def expected_l2_error(self) -> float:
        raise ParameterError("no closed form for E||.||_2 of i.i.d. Laplace noise along several "
                             "directions; use expected_l1_error or simulate")

    def expected_l1_error(self) -> float:
        v = cast(np.ndarray, self.basis)
        if v.shape[1] == 1:
            return self.laplace_scale * float(np.abs(v).sum())
        raise ParameterError("no closed form for E||.||_1 along several directions; simulate")

    def sample_noise(self, size: int | None = None, *, seed: Seed = None) -> np.ndarray:
        """sum_k Y_k v_k with Y_k from :func:`quiltpriv.mechanisms.noise.laplace` (exact discrete
        samplers on a fine grid); secure randomness by default, a seed for experiments only."""
        from quiltpriv.mechanisms import noise

        rng = noise.make_rng(seed)
        n = 1 if size is None else check_records(size, "size")
        v = cast(np.ndarray, self.basis)
        y = np.asarray(noise.laplace(self.laplace_scale, (n, v.shape[1]), seed=rng), dtype=float)
        out = y @ v.T
        return out[0] if size is None else out


def dirm_laplace_directions(means: Mapping[Any, ArrayLike], epsilon: float, *,
                            directions: ArrayLike | None = None,
                            pairs: Sequence[tuple[Hashable, Hashable]] | None = None,
                            covariances: Mapping[Any, ArrayLike] | None = None,
                            direction_rtol: float = 1e-9) -> DirectionsLaplaceResult:
    """DirM(L) with several directions ([CO23, Sec. 4.2]): (eps, 0).

    V = an orthonormal basis of ``directions`` (k x m rows; default: of the mean differences);
    every mean difference must lie in its span (checked). Noise sum_k Y_k v_k with Y_k i.i.d.
    Lap(b), b = max over Psi of ||V^T (mu_i - mu_j)||_1 / eps: under translation the shift
    between the two laws of F is V c with c = V^T (mu_i - mu_j), and the noise density along V
    changes by at most exp(||c||_1 / b). Translation is assumed as for ExpM.

    Parameters
    ----------
    means : mapping of theta to array-like
        The mean of F (a vector of length m) under each theta.
    epsilon : float
        The guarantee.
    directions : array-like, optional
        The directions (k x m rows) whose orthonormal basis V carries the noise; default: the
        mean differences. Every mean difference must lie in their span.
    pairs : sequence of (theta_i, theta_j), optional
        Psi; default every ordered pair of distinct thetas.
    covariances : mapping of theta to array-like, optional
        F's covariance under each theta, to check that the laws are translations of one
        another (without them the assumption is recorded, not checked).
    direction_rtol : float
        Relative tolerance of the check that every mean difference lies in the span.

    Returns
    -------
    DirectionsLaplaceResult

    Examples
    --------
    Two means a unit apart on both coordinates: one direction, Lap(sqrt 2) along it:

    >>> from quiltpriv.distribution import dirm_laplace_directions
    >>> result = dirm_laplace_directions({"low": [0.0, 0.0], "high": [1.0, 1.0]}, 1.0)
    >>> round(result.laplace_scale, 6), result.basis.ravel().round(6)
    (1.414214, array([-0.707107, -0.707107]))
    """
    eps = check_epsilon(epsilon)
    mu, m = _means(means)
    ps = _pairs(pairs, mu.keys())
    assumptions = _translation_assumption(covariances, mu, ps, m)
    v = _basis(directions, mu, ps, m, direction_rtol)
    d1 = _coefficients_norm(v, mu, ps, 1)
    return DirectionsLaplaceResult(
        "DirM(L)", "laplace-directions", m, eps, 0.0, laplace_scale=div_up(d1, eps),
        direction=v[:, 0] if v.shape[1] == 1 else None, sensitivity=d1,
        assumptions=assumptions,
        notes=(f"{v.shape[1]} direction(s); max ||V^T (mu_i - mu_j)||_1 = {_fmt(d1)}; every mean "
               "difference in their span (checked)",), basis=v)


def dirm_gaussian_directions(means: Mapping[Any, ArrayLike], epsilon: float, delta: float, *,
                             directions: ArrayLike | None = None,
                             pairs: Sequence[tuple[Hashable, Hashable]] | None = None,
                             covariances: Mapping[Any, ArrayLike] | None = None,
                             calibration: str = "classical",
                             direction_rtol: float = 1e-9) -> DistributionPrivacyResult:
    """DirM(G) with several directions ([CO23, Sec. 4.2]): F + N(0, sigma^2 V V^T), (eps, delta).

    sigma = max over Psi of ||V^T (mu_i - mu_j)||_2 / r(eps, delta) (= ||mu_i - mu_j||_2 / r:
    the differences lie in the span), r the Mahalanobis budget of
    :func:`~quiltpriv.distribution.distribution_privacy.mahalanobis_budget`: inside the span
    the noise is isotropic with variance sigma^2, so the two shifted laws are Gaussians at
    Mahalanobis distance <= r. Translation is assumed as for ExpM.

    Parameters
    ----------
    means : mapping of theta to array-like
        The mean of F (a vector of length m) under each theta.
    epsilon, delta : float
        The guarantee.
    directions : array-like, optional
        The directions (k x m rows) whose orthonormal basis V carries the noise; default: the
        mean differences. Every mean difference must lie in their span.
    pairs : sequence of (theta_i, theta_j), optional
        Psi; default every ordered pair of distinct thetas.
    covariances : mapping of theta to array-like, optional
        F's covariance under each theta, to check that the laws are translations of one
        another (without them the assumption is recorded, not checked).
    calibration : {"classical", "analytic"}
        How r is found (:func:`~quiltpriv.distribution.distribution_privacy.mahalanobis_budget`).
    direction_rtol : float
        Relative tolerance of the check that every mean difference lies in the span.

    Returns
    -------
    DistributionPrivacyResult

    Examples
    --------
    >>> from quiltpriv.distribution import dirm_gaussian_directions
    >>> result = dirm_gaussian_directions({"low": [0.0, 0.0], "high": [1.0, 1.0]}, 1.0, 1e-5)
    >>> result.mechanism, result.covariance.round(3)
    ('DirM(G)', array([[23.472, 23.472],
           [23.472, 23.472]]))
    """
    eps = check_epsilon(epsilon)
    dl = check_delta(delta)
    mu, m = _means(means)
    ps = _pairs(pairs, mu.keys())
    assumptions = _translation_assumption(covariances, mu, ps, m)
    v = _basis(directions, mu, ps, m, direction_rtol)
    d2 = _coefficients_norm(v, mu, ps, 2)
    r, note = mahalanobis_budget(eps, dl, calibration)
    s2 = mul_up(_square_up(div_up(d2, r)), 1 + _SAFETY)
    return DistributionPrivacyResult(
        "DirM(G)", "gaussian", m, eps, dl, covariance=s2 * (v @ v.T),
        direction=v[:, 0] if v.shape[1] == 1 else None, sensitivity=d2,
        assumptions=assumptions,
        notes=(f"{v.shape[1]} direction(s); max ||mu_i - mu_j||_2 = {_fmt(d2)}, variance "
               f"{_fmt(s2)} "
               "along each", note))
