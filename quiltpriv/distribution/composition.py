"""Composition and interpretation of distribution privacy ([KM19], Table III and Sec. III-E/F).

Sequential composition comes in two kinds, and they behave differently:

* :func:`compose_independent_inputs` -- A1 x A0: each mechanism gets its own input, drawn
  independently (x0 ~ lambda0, x1 ~ lambda1); the pairs protected are the products
  (lambda0 x lambda1, lambda0' x lambda1'). (eps_b, delta_b)-DistP mechanisms compose to
  (eps0 + eps1, delta0 + delta1)-DistP: the lifted output laws are products, and the
  hockey-stick bound for products adds.
* :func:`compose_same_input` -- A1 . A0: ONE input x ~ lambda goes to both mechanisms (the
  same user reports twice). DistP guarantees alone do NOT compose here: two mechanisms that
  each leak nothing about (lambda, lambda') can together reveal it completely (each output
  law is a mixture; the joint law of the pair is not the product of the marginals). What
  composes is point privacy: if each A_b is (eps_b, delta_b)-DP on an adjacency Phi, then
  A1 . A0 is (eps0 + eps1, delta0 + delta1)-DP on Phi, hence DistP on the lifted relation
  Phi# (couple lambda and lambda' inside Phi); the same with XDP and W_inf for XDistP.

Post-processing (:func:`post_process`) keeps any (X)DistP guarantee; pre-processing by a
c-stable transformation (:func:`pre_process`) multiplies eps by c (and, for DistP on an
adjacency, spreads delta over the c steps of a chain).

Interpretation: :func:`bayes_factor_bound` (Sec. III-E: eps-DistP bounds every posterior-odds
update by e^eps; XDistP by e^(eps W_inf); PDistP with probability >= 1 - delta) and
:func:`close_beliefs_bound` / :func:`close_beliefs_xdistp` (Sec. III-F: the guarantee against an
attacker whose beliefs differ from the distributions used to calibrate).

The matrices :func:`same_input_mechanism`, :func:`independent_inputs_mechanism` and
:func:`product_distribution` build the composed mechanisms of small finite examples, so the
exact checkers of :mod:`quiltpriv.distribution.local_distribution_privacy` can verify these
bounds (the tests do so by brute force).

All parameters are rounded up (never down) when they are sums or products of floats.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from quiltpriv.distribution.local_distribution_privacy import (
    DistributionPrivacy,
    _distribution,
    _mechanism,
    approximate_max_divergence,
)
from quiltpriv.errors import ParameterError
from quiltpriv.utils import distances
from quiltpriv.utils.format import fmt_number as _fmt
from quiltpriv.utils.rounding import add_up, exp_up, mul_up, round_down, round_up
from quiltpriv.utils.serialize import JSONResult
from quiltpriv.utils.validation import check_cost_matrix, check_delta, check_positive

__all__ = [
    "BayesFactorBound",
    "DistPGuarantee",
    "bayes_factor_bound",
    "close_beliefs_bound",
    "close_beliefs_xdistp",
    "compose_independent_inputs",
    "compose_same_input",
    "independent_inputs_mechanism",
    "post_process",
    "pre_process",
    "product_distribution",
    "same_input_mechanism",
]

_NOTIONS = ("DistP", "XDistP", "KL")


@dataclass(frozen=True)
class DistPGuarantee(JSONResult):
    """An (eps, delta) distribution-privacy guarantee and where it comes from.

    Parameters
    ----------
    epsilon : float
        eps >= 0 (``math.inf``: no bound). For XDistP it multiplies W_inf,d of the pair.
    delta : float
        delta in [0, 1].
    notion : str
        ``"DistP"`` or ``"XDistP"``.
    rule : str
        The [KM19] rule that gave it and on which pairs it holds.

    Examples
    --------
    >>> from quiltpriv.distribution import DistPGuarantee, post_process
    >>> guarantee = post_process(DistPGuarantee(1.0, 0.0, "DistP", "calibrated"))
    >>> guarantee.epsilon, guarantee.delta, guarantee.rule
    (1.0, 0.0, '[KM19, Table III] post-processing: same pairs')
    """

    epsilon: float
    delta: float
    notion: str
    rule: str


def _parts(guarantees: Iterable[DistPGuarantee | tuple[float, float]], what: str
           ) -> list[tuple[float, float]]:
    # guarantees: untrusted (any object); this is its check.
    if isinstance(guarantees, str | bytes | DistPGuarantee) or \
            not isinstance(guarantees, Iterable):
        raise ParameterError(f"{what} must be a list of (epsilon, delta) pairs, got "
                             f"{type(guarantees).__name__}")
    out = []
    for k, g in enumerate(guarantees):
        if isinstance(g, DistPGuarantee):
            eps, delta = g.epsilon, g.delta
        else:
            try:
                eps, delta = g
            except (TypeError, ValueError):
                raise ParameterError(f"{what}[{k}] must be (epsilon, delta) or a "
                                     "DistPGuarantee") from None
        e = float(eps) if isinstance(eps, int | float | np.integer | np.floating) and \
            not isinstance(eps, bool) else None
        if e is None or math.isnan(e) or e < 0:
            raise ParameterError(f"{what}[{k}]: epsilon must be a number >= 0, got {eps!r}")
        d = check_delta(delta, f"{what}[{k}]: delta", allow_zero=True)
        out.append((e, d))
    if not out:
        raise ParameterError(f"{what} is empty: give at least one guarantee")
    return out


def _sum(parts: list[tuple[float, float]]) -> tuple[float, float]:
    if any(math.isinf(e) for e, _ in parts):
        eps = math.inf
    else:
        eps = round_up(sum((Fraction(e) for e, _ in parts), Fraction(0)))
    delta = min(1.0, round_up(sum((Fraction(d) for _, d in parts), Fraction(0))))
    return eps, delta


def _notion(notion: str) -> str:
    if notion not in _NOTIONS:
        raise ParameterError(f"notion must be one of {_NOTIONS}, got {notion!r}")
    return notion


def _kl_parts(parts: list[tuple[float, float]], notion: str) -> None:
    if notion == "KL" and any(d != 0 for _, d in parts):
        raise ParameterError("KL distribution privacy has no delta: give (epsilon, 0) pairs")


def compose_independent_inputs(guarantees: Iterable[DistPGuarantee | tuple[float, float]],
                               *, notion: str = "DistP") -> DistPGuarantee:
    """[KM19, Table III], sequential composition on independent inputs (A1 x A0).

    Parameters
    ----------
    guarantees : iterable of (epsilon, delta) or DistPGuarantee
        A_b is (eps_b, delta_b)-DistP w.r.t. Psi_b, and its input x_b is drawn from its own
        distribution independently of the others. For XDistP pass, per mechanism, the pair's
        loss eps_b * W_inf,d_b(lambda_b, lambda_b') as eps_b.
    notion : {"DistP", "KL"}
        ``"KL"``: A_b is eps_b-KL-DistP (Definition 16 with the KL divergence, delta = 0); KL
        divergences of products add exactly, so the composition is (sum eps_b)-KL-DistP.

    Returns
    -------
    DistPGuarantee
        (sum eps_b, sum delta_b)-DistP w.r.t. the product pairs
        {(x_b lambda_b, x_b lambda_b') : (lambda_b, lambda_b') in Psi_b}. Proof: the lifted
        law of the product is the product of the lifted laws; writing each
        p_b = min(p_b, e^eps_b q_b) + r_b with mass(r_b) <= delta_b gives
        p0 x p1 <= e^(eps0 + eps1) q0 x q1 + r0 x p1 + p0 x r1 on every set.

    Examples
    --------
    >>> from quiltpriv.distribution import compose_independent_inputs
    >>> compose_independent_inputs([(0.5, 0.0), (0.25, 0.01)])
    DistPGuarantee(epsilon=0.75, delta=0.01, notion='DistP', rule='[KM19, Table III] ...')
    """
    n = _notion(notion)
    if n == "XDistP":
        raise ParameterError("for independent inputs pass the pairs' XDistP losses "
                             "eps_b * W_inf,d_b as DistP epsilons (notion='DistP')")
    parts = _parts(guarantees, "guarantees")
    _kl_parts(parts, n)
    eps, delta = _sum(parts)
    return DistPGuarantee(eps, delta, n,
                          "[KM19, Table III] independent inputs (A1 x A0): product pairs")


def compose_same_input(guarantees: Iterable[DistPGuarantee | tuple[float, float]], *,
                       point_private: bool, notion: str = "DistP") -> DistPGuarantee:
    """[KM19, Table III], sequential composition on one input (A1 . A0: x ~ lambda to both).

    Parameters
    ----------
    guarantees : iterable of (epsilon, delta) or DistPGuarantee
        Each mechanism's guarantee.
    point_private : bool
        True if each guarantee is POINT privacy: A_b is (eps_b, delta_b)-DP on an adjacency
        Phi of inputs (``notion="DistP"``), or (eps_b, d, delta_b)-XDP (``notion="XDistP"``),
        or KL(A_b(x) || A_b(x')) <= eps_b on Phi (``notion="KL"``, delta 0: KL-privacy).
        False if only distribution privacy of each A_b is known.
    notion : {"DistP", "XDistP", "KL"}

    Returns
    -------
    DistPGuarantee
        With point privacy: (sum eps_b, sum delta_b)-DistP on the lifted relation Phi#
        (XDistP: eps per unit of W_inf,d; KL: the chain rule adds the point KL divergences and
        joint convexity lifts the sum to every coupled pair). With DistP alone:
        ``epsilon = inf`` (no bound;
        each A_b leaking nothing does not stop A1 . A0 from revealing lambda: e.g. inputs
        {0, 1, 2}, lambda = (1/2, 0, 1/2), lambda' = (0, 1, 0), A0 sending 0, 1, 2 to
        output 0 with probability 1, 1/2, 0 and A1 the mirror image: each output law is
        (1/2, 1/2) under both, but the pair (A0, A1) is never (0, 0) under lambda and is with
        probability 1/4 under lambda').

    Examples
    --------
    Point-private mechanisms add up; distribution privacy alone gives no bound:

    >>> from quiltpriv.distribution import compose_same_input
    >>> compose_same_input([(0.5, 0.0), (0.25, 0.0)], point_private=True).epsilon
    0.75
    >>> compose_same_input([(0.5, 0.0), (0.25, 0.0)], point_private=False).epsilon
    inf
    """
    n = _notion(notion)
    parts = _parts(guarantees, "guarantees")
    _kl_parts(parts, n)
    if not point_private:
        return DistPGuarantee(math.inf, 0.0, n,
                              "[KM19, Table III] one input (A1 . A0) with only distribution "
                              "privacy known: no bound")
    eps, delta = _sum(parts)
    lifted = "every pair, eps per unit of W_inf,d" if n == "XDistP" else \
        "Phi# (pairs coupled inside the adjacency)"
    return DistPGuarantee(eps, delta, n,
                          f"[KM19, Table III] one input (A1 . A0) of point-private mechanisms: "
                          f"{lifted}")


def post_process(guarantee: DistPGuarantee | tuple[float, float], *,
                 notion: str = "DistP") -> DistPGuarantee:
    """[KM19, Table III], post-processing: mu . A is as private as A (any randomised mu that
    does not read the input), on the same pairs.

    Parameters
    ----------
    guarantee : (epsilon, delta) or DistPGuarantee
        A's guarantee.
    notion : {"DistP", "XDistP", "KL"}
        The notion of a guarantee given as a pair (a DistPGuarantee carries its own).

    Returns
    -------
    DistPGuarantee
        The same (eps, delta), on the same pairs.

    Examples
    --------
    >>> from quiltpriv.distribution import post_process
    >>> post_process((1.0, 0.0)).epsilon
    1.0
    """
    (eps, delta), = _parts([guarantee], "guarantee")
    n = guarantee.notion if isinstance(guarantee, DistPGuarantee) else _notion(notion)
    return DistPGuarantee(eps, delta, n, "[KM19, Table III] post-processing: same pairs")


def pre_process(guarantee: DistPGuarantee | tuple[float, float], stability: float, *,
                notion: str = "DistP") -> DistPGuarantee:
    """[KM19, Table III], pre-processing by a c-stable transformation T: A . T.

    Parameters
    ----------
    guarantee : (epsilon, delta) or DistPGuarantee
        A's guarantee.
    stability : float
        c. For ``notion="DistP"`` (A is (eps, delta)-DistP on Psi): a positive integer, T maps
        every protected pair to two distributions joined by a chain of at most c pairs of Psi.
        For ``"XDistP"`` (A is (eps, d, delta)-XDistP): any c >= 0 with
        W_inf,d(T#lambda, T#lambda') <= c W_inf,d(lambda, lambda').
    notion : {"DistP", "XDistP"}
        The notion of a guarantee given as a pair (a DistPGuarantee carries its own).

    Returns
    -------
    DistPGuarantee
        DistP: (c eps, delta (e^(c eps) - 1) / (e^eps - 1)) (c delta when eps = 0), the chain
        bound p0 <= e^eps p1 + delta <= ... <= e^(c eps) p_c + delta (1 + e^eps + ... +
        e^((c-1) eps)). XDistP: (c eps, delta).

    Examples
    --------
    >>> from quiltpriv.distribution import pre_process
    >>> pre_process((1.0, 0.0), 2).epsilon
    2.0
    """
    n = guarantee.notion if isinstance(guarantee, DistPGuarantee) else _notion(notion)
    (eps, delta), = _parts([guarantee], "guarantee")
    if n == "DistP":
        if isinstance(stability, bool) or not isinstance(stability, int | np.integer) \
                or stability < 1:
            raise ParameterError(f"for DistP the stability c is a chain length, an integer >= 1;"
                                 f" got {stability!r}")
        c = int(stability)
        if math.isinf(eps):
            return DistPGuarantee(math.inf, delta, n, "[KM19, Table III] pre-processing")
        ce = round_up(c * Fraction(eps))
        if eps == 0:
            d = round_up(c * Fraction(delta))
        else:
            # delta * sum_{i<c} e^(i eps): every exponent, power, sum and product rounded up
            terms = [exp_up(mul_up(i, eps)) if i else 1.0 for i in range(c)]
            d = 0.0 if delta == 0 else math.inf if math.isinf(terms[-1]) else \
                mul_up(delta, add_up(*terms))
        return DistPGuarantee(ce, min(1.0, d), n,
                              f"[KM19, Table III] pre-processing by a {c}-stable T")
    c_f = check_positive(stability, "stability", allow_zero=True)
    ce = math.inf if math.isinf(eps) else round_up(Fraction(c_f) * Fraction(eps))
    return DistPGuarantee(ce, delta, n, "[KM19, Table III] pre-processing by a "
                                        f"{_fmt(c_f)}-stable T")


# ---------------------------------------------------------------------------------------------
# the composed mechanisms of finite examples


def same_input_mechanism(*mechanisms: ArrayLike) -> np.ndarray:
    """A1 . A0 as one matrix: row x, column (y0, y1, ...) in row-major order, entry
    prod_b A_b(x)[y_b] (independent randomness, one shared input).

    Parameters
    ----------
    *mechanisms : array-like
        Each a row-stochastic matrix: row x is the law of A_b's output on input x; all share
        their rows (inputs).

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    Randomised response run twice on one bit:

    >>> from quiltpriv.distribution import same_input_mechanism
    >>> same_input_mechanism([[0.75, 0.25], [0.25, 0.75]], [[0.75, 0.25], [0.25, 0.75]])
    array([[0.5625, 0.1875, 0.1875, 0.0625],
           [0.0625, 0.1875, 0.1875, 0.5625]])
    """
    if not mechanisms:
        raise ParameterError("give at least one mechanism")
    mats = [_mechanism(m) for m in mechanisms]
    if len({m.shape[0] for m in mats}) != 1:
        raise ParameterError("the mechanisms must have the same inputs (rows)")
    out = mats[0]
    for m in mats[1:]:
        out = np.einsum("xi,xj->xij", out, m).reshape(out.shape[0], -1)
    return out


def independent_inputs_mechanism(*mechanisms: ArrayLike) -> np.ndarray:
    """A1 x A0 as one matrix: row (x0, x1, ...), column (y0, y1, ...), both row-major; entry
    prod_b A_b(x_b)[y_b] (the Kronecker product).

    Parameters
    ----------
    *mechanisms : array-like
        Each a row-stochastic matrix: row x is the law of A_b's output on input x.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    Randomised response on one bit, and a mechanism that ignores its own bit:

    >>> from quiltpriv.distribution import independent_inputs_mechanism
    >>> independent_inputs_mechanism([[0.75, 0.25], [0.25, 0.75]], [[1.0], [1.0]])
    array([[0.75, 0.25],
           [0.75, 0.25],
           [0.25, 0.75],
           [0.25, 0.75]])
    """
    if not mechanisms:
        raise ParameterError("give at least one mechanism")
    out = _mechanism(mechanisms[0])
    for m in mechanisms[1:]:
        out = np.kron(out, _mechanism(m))
    return out


def product_distribution(*laws: ArrayLike) -> np.ndarray:
    """lambda0 x lambda1 x ... in the row order of :func:`independent_inputs_mechanism`.

    Parameters
    ----------
    *laws : array-like
        Probability vectors.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> from quiltpriv.distribution import product_distribution
    >>> product_distribution([0.5, 0.5], [0.2, 0.8])
    array([0.1, 0.4, 0.1, 0.4])
    """
    if not laws:
        raise ParameterError("give at least one distribution")
    out = np.array([1.0])
    for k, lam in enumerate(laws):
        out = np.kron(out, _distribution(lam, np.asarray(lam).size, f"laws[{k}]"))
    return out


# ---------------------------------------------------------------------------------------------
# interpretation (Sec. III-E, III-F)


@dataclass(frozen=True)
class BayesFactorBound(JSONResult):
    """[KM19, Sec. III-E]: how far one observed output can move the attacker's odds.

    Parameters
    ----------
    factor : float
        B: for every observed output y and every protected pair (lambda, lambda'),
        posterior odds / prior odds = A#lambda[y] / A#lambda'[y] <= B (and >= 1 / B), rounded up.
    probability : float
        The bound holds for an output drawn from either distribution with at least this
        probability (1 for DistP and XDistP; 1 - delta for PDistP).
    epsilon : float
        The eps it comes from (for XDistP already multiplied by W_inf,d).
    notion : str
        ``"DistP"``, ``"PDistP"`` or ``"XDistP"``.

    Examples
    --------
    With eps = 1, one output moves even prior odds into [1/e, e]:

    >>> from quiltpriv.distribution import bayes_factor_bound
    >>> bound = bayes_factor_bound(1.0)
    >>> bound.posterior_odds(1.0)
    (0.367879441171442..., 2.71828182845904...)
    """

    factor: float
    probability: float
    epsilon: float
    notion: str

    def posterior_odds(self, prior_odds: float) -> tuple[float, float]:
        """The interval the posterior odds P(lambda | y) / P(lambda' | y) stay in."""
        o = check_positive(prior_odds, "prior_odds")
        if math.isinf(self.factor):
            return (0.0, math.inf)
        return (round_down(Fraction(o) / Fraction(self.factor)), mul_up(o, self.factor))


def bayes_factor_bound(result: DistributionPrivacy | float, *, notion: str = "DistP",
                       delta: float = 0.0, distance: float | None = None) -> BayesFactorBound:
    """[KM19, Sec. III-E]: the Bayes-factor bound of a distribution-privacy guarantee.

    Parameters
    ----------
    result : DistributionPrivacy or float
        A checker's result (``distp_epsilon``, ``pdistp_epsilon``, ``xdistp_epsilon`` of
        :mod:`quiltpriv.distribution.local_distribution_privacy`) or an eps.
    notion : {"DistP", "PDistP", "XDistP"}
        Used when ``result`` is a number.
    delta : float
        Used when ``result`` is a number.
    distance : float, optional
        For XDistP, W_inf,d of the pair in question (required).

    Returns
    -------
    BayesFactorBound
        Factor e^eps (DistP, delta = 0), e^(eps W_inf) (XDistP, delta = 0), or e^eps with
        probability >= 1 - delta (PDistP: outside the excluded set). DistP and XDistP with
        delta > 0 give no per-output bound (delta of probability may sit on outputs with any
        ratio): refused; use the PDistP parameters.

    Examples
    --------
    >>> from quiltpriv.distribution import bayes_factor_bound
    >>> bound = bayes_factor_bound(0.5, notion="PDistP", delta=0.01)
    >>> round(bound.factor, 6), bound.probability
    (1.648721, 0.99)
    """
    if isinstance(result, DistributionPrivacy):
        eps, n, d = result.epsilon, result.notion, result.delta
    else:
        eps = check_positive(result, "epsilon", allow_zero=True) if not (
            isinstance(result, float) and math.isinf(result) and result > 0) else math.inf
        n, d = notion, check_delta(delta, allow_zero=True)
    if n not in ("DistP", "PDistP", "XDistP"):
        raise ParameterError(f"no Bayes-factor reading for {n!r}; use DistP, PDistP or XDistP")
    if n == "XDistP":
        if distance is None:
            raise ParameterError("XDistP bounds the Bayes factor by e^(eps W_inf): give the "
                                 "pair's distance")
        w = check_positive(distance, "distance", allow_zero=True)
        eps = 0.0 if w == 0 else round_up(Fraction(eps) * Fraction(w)) if math.isfinite(eps) \
            else math.inf
    if n in ("DistP", "XDistP") and d > 0:
        raise ParameterError(f"({n} with delta = {_fmt(d)}) gives no per-output Bayes-factor "
                             "bound: "
                             "delta of probability may sit on outputs of any likelihood ratio; "
                             "use the PDistP parameters (pdistp_epsilon) instead")
    factor = exp_up(eps)  # inf beyond the float range
    return BayesFactorBound(factor, 1.0 - d if n == "PDistP" else 1.0, eps, n)


def _dinf(p: np.ndarray, q: np.ndarray) -> float:
    return approximate_max_divergence(p, q, 0.0)


def close_beliefs_bound(epsilon: float, delta: float, lam0: ArrayLike, lam1: ArrayLike,
                        belief0: ArrayLike, belief1: ArrayLike) -> DistPGuarantee:
    """[KM19, Sec. III-F]: the DistP guarantee against an attacker with other beliefs.

    A mechanism A is (eps, delta)-DistP w.r.t. (lambda0, lambda1) in both directions (the
    distributions it was calibrated on); the attacker believes the inputs follow belief0 and
    belief1 instead. With a_b = D_inf(belief_b || lambda_b) and b_b = D_inf(lambda_b || belief_b)
    (max-divergences, from the same finite space),

        A#belief0[R] <= e^a0 A#lambda0[R] <= e^a0 (e^eps A#lambda1[R] + delta)
                     <= e^(a0 + eps + b1) A#belief1[R] + e^a0 delta

    (lifting does not increase D_inf), and symmetrically. So A is
    (eps + max(a0 + b1, a1 + b0), delta e^max(a0, a1))-DistP w.r.t. (belief0, belief1): the
    closer the beliefs, the closer to the calibrated guarantee. Infinite if a belief puts mass
    where the calibrated distribution has none (or the reverse).

    Parameters
    ----------
    epsilon, delta : float
        A's guarantee on (lambda0, lambda1).
    lam0, lam1 : array-like
        The distributions A was calibrated on (probability vectors on one finite space).
    belief0, belief1 : array-like
        The attacker's beliefs, on the same space.

    Returns
    -------
    DistPGuarantee
        Rounded up.

    Examples
    --------
    >>> from quiltpriv.distribution import close_beliefs_bound
    >>> guarantee = close_beliefs_bound(1.0, 0.0, [0.5, 0.5], [0.4, 0.6],
    ...                                 [0.45, 0.55], [0.4, 0.6])
    >>> round(guarantee.epsilon, 6)
    1.105361
    """
    eps = check_positive(epsilon, "epsilon", allow_zero=True)
    d = check_delta(delta, allow_zero=True)
    n = np.asarray(lam0).size
    l0, l1 = _distribution(lam0, n, "lam0"), _distribution(lam1, n, "lam1")
    m0, m1 = _distribution(belief0, n, "belief0"), _distribution(belief1, n, "belief1")
    a0, a1 = _dinf(m0, l0), _dinf(m1, l1)
    b0, b1 = _dinf(l0, m0), _dinf(l1, m1)
    spread = max(a0 + b1, a1 + b0)
    if math.isinf(spread):
        return DistPGuarantee(math.inf, d, "DistP", "[KM19, Sec. III-F] beliefs not close: "
                              "no bound")
    e = round_up(Fraction(eps) + Fraction(a0) + Fraction(b1)) if a0 + b1 >= a1 + b0 else \
        round_up(Fraction(eps) + Fraction(a1) + Fraction(b0))
    # max-divergences are computed in floats; one ulp of slack per term keeps the sum above
    e = math.nextafter(math.nextafter(e, math.inf), math.inf)
    grow = exp_up(max(a0, a1))
    dd = 0.0 if d == 0 else 1.0 if math.isinf(grow) else min(1.0, mul_up(d, grow))
    return DistPGuarantee(e, dd, "DistP",
                          "[KM19, Sec. III-F] w.r.t. the attacker's beliefs (belief0, belief1)")


def close_beliefs_xdistp(epsilon: float, metric: ArrayLike, lam0: ArrayLike, lam1: ArrayLike,
                         belief0: ArrayLike, belief1: ArrayLike) -> float:
    """[KM19, Sec. III-F] for XDistP: the max-divergence bound against the attacker's beliefs.

    If A is (eps, d)-XDistP on every pair (e.g. from (eps, d)-XDP), then by the triangle
    inequality of W_inf,d,

        D_inf(A#belief0 || A#belief1) <= eps W_inf(belief0, belief1)
                                     <= eps (W_inf(lambda0, lambda1) + W_inf(lambda0, belief0)
                                             + W_inf(lambda1, belief1)).

    Returns that last bound (the total loss, not per unit), rounded up.

    Parameters
    ----------
    epsilon : float
        A's eps per unit of W_inf,d.
    metric : array-like
        d, the distance between the points of the finite space (a square matrix).
    lam0, lam1 : array-like
        The distributions A was calibrated on.
    belief0, belief1 : array-like
        The attacker's beliefs, on the same space.

    Returns
    -------
    float

    Examples
    --------
    >>> from quiltpriv.distribution import close_beliefs_xdistp
    >>> close_beliefs_xdistp(1.0, [[0, 1], [1, 0]], [0.5, 0.5], [0.4, 0.6],
    ...                      [0.45, 0.55], [0.4, 0.6])
    2.0
    """
    eps = check_positive(epsilon, "epsilon", allow_zero=True)
    n = np.asarray(lam0).size
    cost = check_cost_matrix(metric, n, n)
    l0, l1 = _distribution(lam0, n, "lam0"), _distribution(lam1, n, "lam1")
    m0, m1 = _distribution(belief0, n, "belief0"), _distribution(belief1, n, "belief1")
    w = [distances.wasserstein_inf(cost, x, y).distance for x, y in ((l0, l1), (l0, m0), (l1, m1))]
    total = round_up(Fraction(eps) * sum((Fraction(v) for v in w), Fraction(0)))
    return total
