"""The Wasserstein Mechanism for attribute privacy ([ZOC22, Alg. 4, Thm. 5]; [SWC17]).

[ZOC22, Sec. 6, Ex. 2, Ex. 3] (Zhang, Ohrimenko and Cummings):

    W = sup over secret pairs (s_a, s_b) and theta with P(s_a), P(s_b) > 0 of
        W_inf( law of F(X) | s_a, theta ,  law of F(X) | s_b, theta )
    release F(X) + Lap(W / eps)

is (eps, 0)-Pufferfish private for any instantiation, hence (eps, 0)-dataset attribute private
(Definition 3) and (eps, 0)-distributional attribute private (Definition 4).

Soundness of W
--------------
* W_inf between two laws on the line is computed exactly (:mod:`quiltpriv.utils.distances`, Fraction
  arithmetic, rounded up), and the conditional laws of Examples 2 and 3 are computed exactly in
  rationals: float parameters are read as the decimals they print as (0.4 means 2/5), so
  mathematical ties between cumulative probabilities are ties, not float slivers.
* A continuous Theta (intervals of p1, p2) is handled by branch and bound. The conditional laws
  in both examples are *stochastically monotone* in the parameters (a sum of binomials is
  stochastically increasing in each success probability), so over a box of parameters every
  quantile function lies between those at the box's lower and upper corners. That gives a
  provable upper bound on W over the box (one-sided quantile gaps between corner laws), while
  exact values at points give a lower bound. Boxes are split until the bounds meet -- the
  supremum is then *located provably* (``exact=True``) -- or a cell budget runs out, in which
  case the mechanism uses the upper bound and says so.
* For user-supplied laws on a finite Theta the supremum is a maximum and exact; if the finite
  list is a grid drawn from a continuous Theta, pass ``theta_is_grid=True`` and the result says
  it is a grid estimate (a lower bound on the true W, so *not* a proven guarantee).

Conditional laws for a count on a general hyperparameter network from the core are in
:mod:`quiltpriv.queries.network_laws`; the mechanism on them is
:mod:`quiltpriv.mechanisms.network_wasserstein`.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Rational, Real
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms.calibration import round_up
from quiltpriv.utils.deprecation import renamed_keywords
from quiltpriv.utils.distances import (
    NumbersLike,
    quantile_shift,
    wasserstein_inf_exact,
    wasserstein_line,
)
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_epsilon, check_records

if TYPE_CHECKING:
    import os

    from quiltpriv.mechanisms.noise import Seed
    from quiltpriv.mechanisms.protocol import ReleaseRecord

__all__ = [
    "Interval",
    "WassersteinResult",
    "two_binary_dataset_law",
    "two_binary_dataset_mechanism",
    "two_binary_distributional_law",
    "two_binary_distributional_mechanism",
    "wasserstein_mechanism",
    "wasserstein_scale",
]

#: An exact law of a count: its support 0..n and a Fraction probability per point.
Law = tuple[list[int], list[Fraction]]
#: A probability as given (checked by ``_probability``, which, like ``_rational`` and
#: ``_prob_range``, takes ``object``: it is the check of untrusted input): a float read as the
#: decimal it prints as, an int, a Fraction or a decimal string.
ProbabilityLike = float | Fraction | str
#: A secret's name in a law mapping.
S = TypeVar("S", bound=Hashable)


@dataclass(frozen=True)
class Interval(JSONResult):
    """A closed interval [lo, hi] of a parameter (a continuous part of Theta or of a secret)."""

    lo: float | Fraction | str
    hi: float | Fraction | str


#: A probability or, for a box Theta, an :class:`Interval` of them.
ProbabilityRange = ProbabilityLike | Interval


@dataclass(frozen=True)
class WassersteinResult(JSONResult):
    """Noise plan of the Wasserstein Mechanism ([ZOC22, Alg. 4]).

    Attributes
    ----------
    scale
        Laplace scale W / epsilon (rounded up); 0 means F(X) is released exactly.
    sensitivity
        W used by the mechanism: the exact supremum when ``exact``, otherwise a proven upper
        bound (or, for ``theta_is_grid``, a grid estimate -- see ``notes``).
    sensitivity_lower
        Largest W_inf actually attained at a point of Theta found by the search.
    epsilon, delta
        The guarantee: (epsilon, 0)-attribute privacy (Theorem 5) -- unless ``notes`` say the
        sensitivity is only a grid estimate.
    exact
        True when the supremum over Theta was located provably (lower bound == upper bound).
    worst_case
        Description of a pair and theta attaining ``sensitivity_lower``.
    notes
        Assumptions, the search performed, caveats.
    """

    scale: float
    sensitivity: float
    sensitivity_lower: float
    epsilon: float
    delta: float
    exact: bool
    worst_case: str
    notes: tuple[str, ...] = field(default=())

    def release(self, value: float, *, seed: Seed = None,
                ledger: str | os.PathLike[str] | None = None, budget: float | None = None,
                allow_unproved: bool = False) -> ReleaseRecord:
        """F(X) + Lap(scale) with exact discrete Laplace noise from
        :mod:`quiltpriv.mechanisms.noise`, as a
        :class:`~quiltpriv.mechanisms.protocol.ReleaseRecord` (mechanism
        ``"Wasserstein (given laws)"``; its ``value`` is the noisy number).

        Secure randomness by default; a seed is for reproducible experiments only. The
        low-level form: no data checks (:func:`quiltpriv.mechanisms.protocol.release_value`,
        the one release flow; ``ledger`` and ``budget`` as there);
        :func:`quiltpriv.mechanisms.registry.wasserstein_laws_mechanism` gives
        ``release(data)``.
        """
        return self._release("Wasserstein (given laws)", (), value, seed=seed, ledger=ledger,
                             budget=budget, allow_unproved=allow_unproved)

    def _release(self, name: str, sensitive: tuple[str, ...], value: float, *, seed: Seed,
                 ledger: str | os.PathLike[str] | None, budget: float | None,
                 allow_unproved: bool, details: Any = None) -> ReleaseRecord:
        from quiltpriv.mechanisms.protocol import Calibration, Guarantee, release_value
        from quiltpriv.utils.format import fmt_number

        bound = "W" if self.exact else "W (an upper bound)"
        cal = Calibration("laplace", self.scale, self.sensitivity,
                          f"[ZOC22, Alg. 4]: b = {bound} / eps = "
                          f"{fmt_number(self.sensitivity, rounding='up')} / "
                          f"{fmt_number(self.epsilon)} = {fmt_number(self.scale, rounding='up')}",
                          {"exact": bool(self.exact)})
        g = Guarantee("distributional attribute privacy", self.epsilon, self.delta,
                      ("the given laws are the laws of the query's value given each secret",
                       *self.notes), sensitive)
        return release_value(value, mechanism=name, guarantee=g, calibration=cal,
                             details=self.to_dict() if details is None else details,
                             seed=seed, ledger=ledger, budget=budget,
                             allow_unproved=allow_unproved)


# ---------------------------------------------------------------------------------------------
# exact helpers


def _rational(x: object, name: str) -> Fraction:
    """A parameter as an exact rational; floats are read as the decimal they print as."""
    if isinstance(x, bool):
        raise ParameterError(f"{name} must be a number, got {x!r}")
    if isinstance(x, Rational):
        return Fraction(int(x.numerator), int(x.denominator))
    if isinstance(x, np.integer):
        return Fraction(int(x))
    if isinstance(x, str):
        try:
            return Fraction(x.strip())
        except (ValueError, ZeroDivisionError):
            raise ParameterError(f"{name} is not a number: {x!r}") from None
    if isinstance(x, Real | np.floating):
        f = float(x)
        if not math.isfinite(f):
            raise ParameterError(f"{name} must be finite, got {f}")
        return Fraction(repr(f))
    raise ParameterError(f"{name} must be a number, got {x!r}")


def _probability(x: object, name: str) -> Fraction:
    v = _rational(x, name)
    if not 0 <= v <= 1:
        raise ParameterError(f"{name} must be a probability in [0, 1], got {float(v)}")
    return v


def _prob_range(x: object, name: str) -> tuple[Fraction, Fraction]:
    if isinstance(x, Interval):
        lo, hi = _probability(x.lo, f"{name}.lo"), _probability(x.hi, f"{name}.hi")
        if lo > hi:
            raise ParameterError(f"{name}: empty interval [{float(lo)}, {float(hi)}]")
        return lo, hi
    v = _probability(x, name)
    return v, v


def _binomial(n: int, p: Fraction) -> list[Fraction]:
    q = 1 - p
    return [math.comb(n, k) * p**k * q ** (n - k) for k in range(n + 1)]


def _convolve(a: list[Fraction], b: list[Fraction]) -> list[Fraction]:
    out = [Fraction(0)] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return out


def _one_sided_gap(hi: Law, lo: Law) -> Fraction:
    """ess sup_u (H^{-1}(u) - L^{-1}(u)): how far the quantiles of ``hi`` exceed those of ``lo``."""
    return quantile_shift(hi[0], hi[1], lo[0], lo[1])


def _w_inf_exact(a: Law, b: Law) -> Fraction:
    return wasserstein_inf_exact(a[0], a[1], b[0], b[1])


@renamed_keywords(eps="epsilon")
def wasserstein_scale(w: Fraction, epsilon: float) -> float:
    """The Laplace scale ``W / eps`` of a Wasserstein distance ``W``, rounded up.

    ``w`` must be exact (a Fraction or an int) and >= 0, ``epsilon`` a number > 0.
    """
    if isinstance(w, bool) or not isinstance(w, Rational) or w < 0:
        raise ParameterError(f"w must be an exact distance >= 0 (a Fraction), got {w!r}")
    epsilon = check_epsilon(epsilon)
    return _ceil(w / Fraction(epsilon))  # exact quotient rounded up: never below W / eps


def _ceil(w: Fraction) -> float:
    return round_up(w)  # the one directed rounding (quiltpriv.mechanisms.calibration)


# ---------------------------------------------------------------------------------------------
# generic finite Theta


def wasserstein_mechanism(
    laws: Mapping[S, tuple[NumbersLike, NumbersLike]]
    | Sequence[Mapping[S, tuple[NumbersLike, NumbersLike]]],
    epsilon: float,
    *,
    pairs: Sequence[tuple[S, S]] | None = None,
    secret_probabilities: Sequence[Mapping[S, float]] | None = None,
    theta_is_grid: bool = False,
) -> WassersteinResult:
    """Wasserstein Mechanism ([ZOC22, Alg. 4]) for a finite Theta and user-supplied laws of F.

    Guarantee: (epsilon, 0)-Pufferfish privacy (Theorem 5) -- so dataset or distributional
    attribute privacy, depending on what the secrets are -- for the finite Theta given, when
    ``laws`` are the exact conditional laws of F(X) given each secret. W is exact (see
    :func:`quiltpriv.utils.distances.wasserstein_inf_line` for how float probabilities are read).

    Parameters
    ----------
    laws
        One mapping per theta (or a single mapping for |Theta| = 1): secret -> (support,
        probabilities) of F(X) given that secret. Leave out secrets of probability zero under a
        theta (their conditional law is undefined; [ZOC22, Alg. 4] skips them).
    epsilon
        Privacy parameter.
    pairs
        Secret pairs to protect; default every pair of distinct secrets (W_inf is symmetric).
    secret_probabilities
        Optional P(s | theta) per theta, to check that every secret with a law is possible.
    theta_is_grid
        Declare that the thetas are a grid over a continuous Theta: the result is then a grid
        estimate, reported as such (``exact=False``).
    """
    eps = check_epsilon(epsilon)
    thetas = [laws] if isinstance(laws, Mapping) else list(laws)
    if not thetas:
        raise ParameterError("Theta is empty")
    if secret_probabilities is not None and len(secret_probabilities) != len(thetas):
        raise ParameterError("secret_probabilities needs one mapping per theta")
    if pairs is not None:
        known = set().union(*(set(m) for m in thetas))
        for a, b in pairs:
            if a not in known or b not in known:
                raise ParameterError(f"pair ({a!r}, {b!r}) names a secret with no law under "
                                     "any theta")
    best, worst = Fraction(0), "no pair of secrets"
    compared = 0
    for t, by_secret in enumerate(thetas):
        if not by_secret:
            raise ParameterError(f"theta {t}: the secret set is empty")
        if secret_probabilities is not None:
            for sec in by_secret:
                pr = secret_probabilities[t].get(sec)
                if pr is None or not float(pr) > 0:
                    raise ParameterError(
                        f"secret {sec!r} has probability {pr} under theta {t}: its conditional "
                        "law is undefined; leave it out of that theta")
        theta_pairs = list(itertools.combinations(by_secret, 2)) if pairs is None else pairs
        for a, b in theta_pairs:
            if a not in by_secret or b not in by_secret:
                if pairs is not None:
                    continue  # a listed pair with a secret impossible under this theta
                raise ParameterError(f"unknown secret in pair ({a!r}, {b!r})")
            res = wasserstein_line(by_secret[a][0], by_secret[a][1],
                                   by_secret[b][0], by_secret[b][1])
            w = Fraction(res.w_inf)
            if w > best or compared == 0:
                best, worst = w, f"secrets {a!r} vs {b!r} under theta {t}"
            compared += 1
    if compared and best == 0:
        # Pairs exist and none moves the law of F: say so rather than "no pair".
        worst = f"W_inf = 0 for all {compared} pairs of secrets (e.g. {worst})"
    notes = ["(epsilon, 0) by Theorem 5 for the finite Theta given"]
    if theta_is_grid:
        notes = ["grid estimate over Theta: W is a maximum over the grid points only, a LOWER "
                 "bound on the supremum over the continuous Theta; the (epsilon, 0) guarantee "
                 "is not proven"]
    return WassersteinResult(scale=wasserstein_scale(best, eps), sensitivity=_ceil(best),
                             sensitivity_lower=_ceil(best), epsilon=eps, delta=0.0,
                             exact=not theta_is_grid, worst_case=worst, notes=tuple(notes))


# ---------------------------------------------------------------------------------------------
# branch and bound over a box of parameters


Box = tuple[tuple[Fraction, Fraction], ...]


def _corners(box: Box) -> list[tuple[Fraction, ...]]:
    return list(itertools.product(*[(lo,) if lo == hi else (lo, hi) for lo, hi in box]))


def _branch_and_bound(
    box: Box,
    point_value: Callable[[tuple[Fraction, ...]], tuple[Fraction, str]],
    cell_upper: Callable[[Box], Fraction],
    max_cells: int,
) -> tuple[Fraction, Fraction, str, int]:
    """Bracket sup over ``box`` of point_value; returns (lower, upper, argmax description, cells).

    ``cell_upper(cell)`` must bound point_value over the whole cell from above.
    """
    cache: dict[tuple[Fraction, ...], tuple[Fraction, str]] = {}

    def value(pt: tuple[Fraction, ...]) -> tuple[Fraction, str]:
        if pt not in cache:
            cache[pt] = point_value(pt)
        return cache[pt]

    lower, where = Fraction(-1), ""

    def visit(cell: Box) -> None:
        nonlocal lower, where
        mid = tuple((lo + hi) / 2 for lo, hi in cell)
        for pt in [*_corners(cell), mid]:
            v, d = value(pt)
            if v > lower:
                lower, where = v, d

    visit(box)
    counter = itertools.count()
    heap = [(-cell_upper(box), next(counter), box)]
    cells = 1
    while heap:
        neg_up, _, cell = heap[0]
        if -neg_up <= lower:
            return lower, lower, where, cells
        if cells >= max_cells:
            return lower, -neg_up, where, cells
        heapq.heappop(heap)
        k = max(range(len(cell)), key=lambda d: cell[d][1] - cell[d][0])
        lo, hi = cell[k]
        if lo == hi:  # a point whose bound exceeds its value cannot be refined
            return lower, -neg_up, where, cells
        m = (lo + hi) / 2
        for half in ((lo, m), (m, hi)):
            child = cell[:k] + (half,) + cell[k + 1:]
            visit(child)
            heapq.heappush(heap, (-cell_upper(child), next(counter), child))
            cells += 1
    return lower, lower, where, cells


def _bb_result(lower: Fraction, upper: Fraction, where: str, cells: int, eps: float,
               notes: list[str]) -> WassersteinResult:
    exact = lower == upper
    if exact:
        notes.append(f"supremum over Theta located provably ({cells} cell(s): a point value "
                     "meets the stochastic-monotonicity upper bound)")
    else:
        notes.append(f"supremum over Theta bracketed in [{_fmt(float(lower))}, "
                     f"{_fmt(float(upper))}] "
                     f"after {cells} cells; the mechanism uses the upper bound (safe)")
    return WassersteinResult(scale=wasserstein_scale(upper, eps), sensitivity=_ceil(upper),
                             sensitivity_lower=_ceil(lower), epsilon=eps, delta=0.0,
                             exact=exact, worst_case=where, notes=tuple(notes))


# ---------------------------------------------------------------------------------------------
# Example 2: dataset attribute privacy with two binary attributes


@renamed_keywords(n="records")
def two_binary_dataset_law(records: int, a: int, p1: ProbabilityLike, p2: ProbabilityLike) -> Law:
    """Exact law of F = sum of X1 given g = sum of X2 = a (Example 2): Bin(a, p1) + Bin(n-a, p2).

    p1 = P(X1 = 1 | X2 = 1), p2 = P(X1 = 1 | X2 = 0); records i.i.d. Returns the support
    0..n and exact Fraction probabilities (floats read as decimals: 0.4 is 2/5).
    """
    nn = check_records(records, "records")
    if isinstance(a, bool) or not isinstance(a, int | np.integer) or not 0 <= a <= nn:
        raise ParameterError(f"secret value a must be an integer in 0..{nn}, got {a!r}")
    q1, q2 = _probability(p1, "p1"), _probability(p2, "p2")
    return list(range(nn + 1)), _convolve(_binomial(int(a), q1), _binomial(nn - int(a), q2))


@renamed_keywords(n="records")
def two_binary_dataset_mechanism(
    records: int,
    p1: ProbabilityRange,
    p2: ProbabilityRange,
    epsilon: float,
    *,
    secrets: Sequence[int] | None = None,
    max_cells: int = 2000,
) -> WassersteinResult:
    """Wasserstein Mechanism for Example 2 (dataset attribute privacy, two binary attributes).

    X1 non-sensitive, X2 sensitive; P(X1=1 | X2=1) = p1, P(X1=1 | X2=0) = p2; F = sum of X1 and
    g = sum of X2 over n records; secrets g = a for a in ``secrets`` (default 0..n), every pair.
    Theta: p1 and p2 each a number or an :class:`Interval`. The supremum over a box Theta is
    located by branch and bound using that Bin(a, p1) + Bin(n - a, p2) is stochastically
    increasing in p1 and p2 (see the module docstring).

    Guarantee: (epsilon, 0)-dataset attribute privacy (Theorem 5), assuming 0 < P(X2 = 1) < 1
    so that every value of g has positive probability (the example leaves P(X2) free; the laws
    of F given g do not depend on it).

    Paper oracles (n = 4): W = 1 for [0.4, 0.6]^2, 2 for [0.3, 0.7]^2, 4 for [0, 1]^2.
    """
    eps = check_epsilon(epsilon)
    nn = check_records(records, "records")
    sec = list(range(nn + 1)) if secrets is None else list(secrets)
    if not sec:
        raise ParameterError("the secret set is empty")
    for a in sec:
        if isinstance(a, bool) or not isinstance(a, int | np.integer) or not 0 <= a <= nn:
            raise ParameterError(
                f"secret g = {a!r} has probability zero: g = sum of X2 takes values 0..{nn}")
    sec = sorted(set(int(a) for a in sec))
    box: Box = (_prob_range(p1, "p1"), _prob_range(p2, "p2"))
    pairs = list(itertools.combinations(sec, 2))

    def point_value(pt: tuple[Fraction, ...]) -> tuple[Fraction, str]:
        laws = {a: two_binary_dataset_law(nn, a, pt[0], pt[1]) for a in sec}
        where = (f"p1={pt[0]}, p2={pt[1]} (W_inf = 0 for every pair)" if pairs
                 else f"p1={pt[0]}, p2={pt[1]} (no pair)")
        best = Fraction(0)
        for a, b in pairs:
            w = _w_inf_exact(laws[a], laws[b])
            if w > best:
                best, where = w, f"g={a} vs g={b} at p1={pt[0]}, p2={pt[1]}"
        return best, where

    def cell_upper(cell: Box) -> Fraction:
        lo = {a: two_binary_dataset_law(nn, a, cell[0][0], cell[1][0]) for a in sec}
        hi = {a: two_binary_dataset_law(nn, a, cell[0][1], cell[1][1]) for a in sec}
        best = Fraction(0)
        for a, b in pairs:
            best = max(best, _one_sided_gap(hi[a], lo[b]), _one_sided_gap(hi[b], lo[a]))
        return best

    lower, upper, where, cells = _branch_and_bound(box, point_value, cell_upper, max_cells)
    notes = ["Example 2: F | g=a ~ Bin(a, p1) + Bin(n-a, p2), computed exactly",
             "assumes 0 < P(X2 = 1) < 1 (every secret value of g is possible)"]
    return _bb_result(lower, upper, where, cells, eps, notes)


# ---------------------------------------------------------------------------------------------
# Example 3: distributional attribute privacy with two binary attributes


@renamed_keywords(n="records")
def two_binary_distributional_law(records: int, phi2: ProbabilityLike, p1: ProbabilityLike,
                                  p2: ProbabilityLike) -> Law:
    """Exact law of F = sum of X1 given phi2 (Example 3): Bin(n, p1 phi2 + p2 (1 - phi2)).

    phi2 = P(X2 = 1) is the protected hyperparameter; with p1 = 0.4, p2 = 0.6 this is the
    paper's phi1 = 0.6 - 0.2 phi2.
    """
    nn = check_records(records, "records")
    f2 = _probability(phi2, "phi2")
    q1, q2 = _probability(p1, "p1"), _probability(p2, "p2")
    return list(range(nn + 1)), _binomial(nn, q1 * f2 + q2 * (1 - f2))


@renamed_keywords(n="records")
def two_binary_distributional_mechanism(
    records: int,
    phi2: Sequence[ProbabilityLike] | Interval,
    p1: ProbabilityRange,
    p2: ProbabilityRange,
    epsilon: float,
    *,
    max_cells: int = 2000,
) -> WassersteinResult:
    """Wasserstein Mechanism for Example 3 (distributional attribute privacy).

    F = sum of X1 over n records ~ Bin(n, phi1) with phi1 = p1 phi2 + p2 (1 - phi2); the secret
    is phi2, either a finite set of values or an :class:`Interval` (every pair of distinct values
    is protected); p1 and p2 are numbers or Intervals (Theta).

    Why the supremum is located exactly: Bin(n, x) is stochastically increasing in x, so W_inf
    between Bin(n, x) and Bin(n, y) only grows as x and y move apart. For fixed (p1, p2), phi1 is
    linear in phi2, so over an interval of secrets the supremum is at its two ends. Over a box of
    (p1, p2) every phi1 lies between the bilinear form's extremes at the corners, which bounds W
    from above; branch and bound closes the gap.

    Guarantee: (epsilon, 0)-distributional attribute privacy (Theorem 5), assuming every listed
    secret value has positive prior probability. Paper oracle: n = 4, p1 = 0.4, p2 = 0.6,
    phi2 in [0.2, 0.8] gives W = 1.
    """
    eps = check_epsilon(epsilon)
    nn = check_records(records, "records")
    if isinstance(phi2, Interval):
        lo, hi = _prob_range(phi2, "phi2")
        values = [lo, hi]
        is_interval = True
    else:
        if isinstance(phi2, str | bytes) or not isinstance(phi2, Sequence | np.ndarray):
            raise ParameterError("phi2 must be a sequence of secret values or an Interval")
        values = sorted({_probability(v, f"phi2[{k}]") for k, v in enumerate(phi2)})
        if not values:
            raise ParameterError("the secret set of phi2 is empty")
        is_interval = False
    box: Box = (_prob_range(p1, "p1"), _prob_range(p2, "p2"))

    def phi1(f2: Fraction, q1: Fraction, q2: Fraction) -> Fraction:
        return q1 * f2 + q2 * (1 - f2)

    def point_value(pt: tuple[Fraction, ...]) -> tuple[Fraction, str]:
        laws = {v: _binomial(nn, phi1(v, pt[0], pt[1])) for v in values}
        support = list(range(nn + 1))
        best = Fraction(0)
        where = (f"p1={pt[0]}, p2={pt[1]} (W_inf = 0 for every pair)" if len(values) > 1
                 else f"p1={pt[0]}, p2={pt[1]} (no pair)")
        # finite secrets: every pair; an interval: its ends (monotonicity, see docstring)
        for a, b in itertools.combinations(values, 2):
            w = _w_inf_exact((support, laws[a]), (support, laws[b]))
            if w > best:
                best, where = w, f"phi2={a} vs phi2={b} at p1={pt[0]}, p2={pt[1]}"
        return best, where

    def cell_upper(cell: Box) -> Fraction:
        ph = [phi1(v, q1, q2) for v in values for q1 in cell[0] for q2 in cell[1]]
        support = list(range(nn + 1))
        return _one_sided_gap((support, _binomial(nn, max(ph))), (support, _binomial(nn, min(ph))))

    lower, upper, where, cells = _branch_and_bound(box, point_value, cell_upper, max_cells)
    notes = ["Example 3: F | phi2 ~ Bin(n, p1 phi2 + p2 (1 - phi2)), computed exactly",
             "assumes every secret value of phi2 has positive prior probability"]
    if is_interval:
        notes.append("phi2 is an interval: for fixed (p1, p2) the supremum over secret pairs is "
                     "at its ends (Bin(n, x) is stochastically monotone in x)")
    return _bb_result(lower, upper, where, cells, eps, notes)
