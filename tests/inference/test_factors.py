"""The factor algebra (quiltpriv.inference.factors) against loops over every joint state in
exact Fractions, and the engines that use it against the exact engine on random networks."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import reference as ref

import quiltpriv as qp
from quiltpriv.inference import compiled, factors
from quiltpriv.inference.engines.base import ENGINES

RUNNABLE = [e for e in ENGINES if e != "kernel" or compiled._KERNEL is not None]


def _random_factors(rng, n_vars=6, n_factors=4):
    cards = [int(rng.integers(1, 4)) for _ in range(n_vars)]
    out = []
    for _ in range(n_factors):
        k = int(rng.integers(0, min(4, n_vars) + 1))
        vs = tuple(int(v) for v in rng.choice(n_vars, size=k, replace=False))
        table = rng.integers(0, 5, size=[cards[v] for v in vs]).astype(float)
        out.append((vs, table))
    return cards, out


def _brute_product_sum(fs, cards, out):
    """Every joint state of every variable, its product in Fractions, summed onto ``out``."""
    every = sorted({u for vs, _ in fs for u in vs} | set(out))
    result = np.zeros([cards[u] for u in out], dtype=object)
    result[...] = Fraction(0)
    for state in itertools.product(*(range(cards[u]) for u in every)):
        at = dict(zip(every, state, strict=True))
        p = Fraction(1)
        for vs, t in fs:
            p *= Fraction(t[tuple(at[u] for u in vs)])
        result[tuple(at[u] for u in out)] += p
    return result


@pytest.mark.parametrize("seed", range(40))
def test_product_sum_is_the_sum_over_every_joint_state(seed):
    rng = np.random.default_rng(seed)
    cards, fs = _random_factors(rng)
    every = sorted({u for vs, _ in fs for u in vs})
    out = [int(u) for u in rng.permutation(every)[: int(rng.integers(0, len(every) + 1))]]
    want = _brute_product_sum(fs, cards, out)
    got = factors.product_sum(fs, every, out)
    # small integers: float64 is exact here, so equality is exact
    np.testing.assert_array_equal(np.asarray(got, dtype=object), want)
    label = {u: k for k, u in enumerate(every)}
    np.testing.assert_array_equal(factors.labelled_product_sum(fs, label, out), got)
    np.testing.assert_array_equal(
        factors.product_sum(fs, every, out, optimize=True), got)
    # exact integers go through the same einsum (the exact engine's tables)
    ints = [(vs, t.astype(np.int64).astype(object)) for vs, t in fs]
    np.testing.assert_array_equal(factors.product_sum(ints, every, out), want)


@pytest.mark.parametrize("seed", range(20))
def test_sum_to_order_and_broadcast(seed):
    rng = np.random.default_rng(100 + seed)
    cards, fs = _random_factors(rng, n_factors=1)
    (vs, table), = fs
    keep = [u for u in vs if rng.random() < 0.5]
    want = _brute_product_sum(fs, cards, keep)
    summed = factors.sum_to(table, vs, keep)
    np.testing.assert_array_equal(np.asarray(factors.to_order(summed, keep, keep), object),
                                  want)
    order = list(rng.permutation(keep)) if keep else []
    np.testing.assert_array_equal(
        np.asarray(factors.to_order(table, vs, order), dtype=object),
        _brute_product_sum(fs, cards, order))
    # batch axes in front are never summed
    batch = np.stack([table, 2 * table])
    np.testing.assert_array_equal(factors.sum_to(batch, vs, keep, n_batch=1),
                                  np.stack([summed, 2 * summed]))
    # a sub-table broadcast over the full scope multiplies entry by entry
    full = tuple(sorted(set(vs) | {len(cards)}))
    cards_full = [*cards, 2]
    sub = tuple(u for u in full if u in vs)
    t_sub = factors.to_order(table, vs, sub)
    view = factors.broadcast(t_sub, sub, full)
    assert view.shape == tuple(factors.broadcast_shape(sub, full, cards_full))
    expanded = np.broadcast_to(view, [cards_full[u] for u in full])
    for state in itertools.product(*(range(cards_full[u]) for u in full)):
        at = dict(zip(full, state, strict=True))
        assert expanded[state] == t_sub[tuple(at[u] for u in sub)]


def test_too_many_variables_are_refused_before_einsum():
    fs = [((k,), np.ones(1)) for k in range(factors.MAX_VARIABLES + 1)]
    with pytest.raises(ValueError, match="einsum takes 52"):
        factors.product_sum(fs, list(range(factors.MAX_VARIABLES + 1)), [])
    assert factors.scope_of(fs) == set(range(factors.MAX_VARIABLES + 1))


@pytest.mark.parametrize("seed", range(8))
def test_every_engine_agrees_with_the_exact_engine(seed):
    """Each engine's joint against the exact integer engine's (each entry rounded once), and
    the engines' influences within the float rounding bound of the exact one, never below."""
    net = ref.random_network(16_500 + seed, min_nodes=4, max_nodes=11, edge_prob=0.35)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    for nodes in ref.random_node_sets(net.nodes, rng, 4):
        exact = qp.joint_marginal(theta, nodes, engine="exact")
        for engine in RUNNABLE:
            got = qp.joint_marginal(theta, nodes, engine=engine)
            np.testing.assert_array_equal(got == 0, exact == 0)
            np.testing.assert_allclose(got, exact, rtol=1e-12, atol=0,
                                       err_msg=f"{engine} {nodes}")
        if len(nodes) < 2:
            continue
        want = qp.max_influence(theta, nodes[0], nodes[1:], engine="exact")
        for engine in RUNNABLE:
            found = qp.max_influence(theta, nodes[0], nodes[1:], engine=engine)
            if math.isinf(want.value):
                assert math.isinf(found.value), (engine, nodes)
            else:  # both rounded up from the same exact value: float's margin is the larger
                assert found.value >= want.value - 1e-12 * (1 + want.value), (engine, nodes)
                assert found.value <= want.value + 1e-9 * (1 + want.value), (engine, nodes)
