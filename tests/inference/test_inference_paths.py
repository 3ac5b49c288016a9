"""The three exact inference paths (bucket elimination in a global order, greedy elimination,
calibrated junction tree) against the full joint, on seeded random networks of up to 14 nodes.

The reference is :func:`reference.full_joint` (the literal product of every CPD) marginalised by
numpy sums; nothing of quiltpriv's elimination is reused. Zero patterns must agree exactly
(they decide infinite influences); values to 1e-12 relative.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pytest
import reference as ref
from marks import fast_sample

import quiltpriv as qp
import quiltpriv.inference.influence as infl
from quiltpriv.inference import definition8
from quiltpriv.inference.cache import InferenceCache
from quiltpriv.inference.engines import bucket, cutset, elimination, exact
from quiltpriv.inference.engines.base import EngineSettings
from quiltpriv.inference.junction_tree import fill_tree_structure, junction_tree, tree_structure

METHODS = ("auto", "elimination", "junction_tree")


@pytest.fixture(params=["kernel", "python"])
def kernel(request):
    """The engine that stands for ``"auto"``: the compiled kernel (when built) and pure-Python
    bucket elimination."""
    if request.param == "kernel" and not infl.compiled_kernel():
        pytest.skip("the compiled kernel is not built here "
                    "(tests/inference/test_kernel.py says why)")
    return request.param


def _engine(method, auto):
    """The engine that runs ``method`` of METHODS, with ``auto`` standing for ``"auto"``."""
    return auto if method == "auto" else method


@pytest.mark.parametrize("seed", fast_sample(range(60), 24))
def test_joint_marginals_match_the_full_joint(seed, kernel):
    net = ref.random_network(9100 + seed, min_nodes=1, max_nodes=14 if seed % 3 else 9,
                             edge_prob=[0.15, 0.3, 0.5, 0.7][seed % 4])
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    for m in range(len(net.members)):
        joint = ref.full_joint(net, m)
        for nodes in ref.random_node_sets(net.nodes, rng, 6):
            want = ref.marginal(net, joint, nodes)
            for method in METHODS:
                got = qp.joint_marginal(theta, nodes, m, engine=_engine(method, kernel))
                where = (seed, m, nodes, method)
                assert got.shape == want.shape, where
                np.testing.assert_array_equal(got == 0, want == 0, err_msg=str(where))
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, err_msg=str(where))


def _network_9300(seed):
    return ref.random_network(9300 + seed, min_nodes=2, max_nodes=14)


@functools.cache
def _exact_influences(seed):
    """(node set, max over members of Definition 8 by brute force) for the node sets of
    test_influences_agree_across_methods; once per seed for both kernels, and each member's
    full joint built once (the joints of 14 nodes are most of that test's time)."""
    net = _network_9300(seed)
    rng = np.random.default_rng(seed)
    sets = [nodes for nodes in ref.random_node_sets(net.nodes, rng, 5) if len(nodes) >= 2]
    wants = [-math.inf] * len(sets)
    for m in range(len(net.members)):
        joint = ref.full_joint(net, m)
        for k, nodes in enumerate(sets):
            wants[k] = max(wants[k], ref.influence_from_joint(ref.marginal(net, joint, nodes)))
    return tuple(zip(sets, wants, strict=True))


# Seeds 1, 14 and 35 draw the largest joints (~3 s of brute force each): slow.
@pytest.mark.parametrize("seed", fast_sample(range(40), set(range(40)) - {1, 14, 35}))
def test_influences_agree_across_methods(seed, kernel):
    theta = _network_9300(seed).to_theta()  # a fresh Theta (and cache) for each kernel
    for nodes, want in _exact_influences(seed):
        node, q = nodes[0], nodes[1:]
        for method in METHODS:
            found = qp.max_influence(theta, node, q, engine=_engine(method, kernel))
            assert found.engine, (seed, nodes, method)
            got = found.value
            if math.isinf(want):
                assert math.isinf(got), (seed, nodes, method)
            else:
                # Never below the exact value; within the rounding margin (1e-10 relative and
                # absolute, twice over for the reference's own rounding) above it.
                top = want + 2 * infl.ROUNDING_MARGIN * (1 + want)
                assert want - 1e-12 <= got <= top, (seed, nodes, method, got, want)


def test_greedy_fallback_when_the_global_order_builds_large_tables(monkeypatch):
    net = ref.random_network(77, n_nodes=12, edge_prob=0.7, max_card=3)
    theta = net.to_theta()
    joint = ref.full_joint(net)
    calls = []
    real = bucket._bucket_eliminate

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append((kwargs.get("greedy", False), out is not None))
        return out

    monkeypatch.setattr(bucket, "_bucket_eliminate", spy)
    settings = EngineSettings(bucket_limit=1)  # the global order always gives up
    rng = np.random.default_rng(77)
    fell_back = 0
    for nodes in ref.random_node_sets(net.nodes, rng, 10):
        calls.clear()
        got = qp.joint_marginal(theta, nodes, engine="python", settings=settings)
        if len(calls) == 2:  # the global order gave up; the query's own greedy order answered
            assert calls == [(False, False), (True, True)]
            fell_back += 1
        np.testing.assert_allclose(got, ref.marginal(net, joint, nodes), rtol=1e-12)
        np.testing.assert_array_equal(got == 0, ref.marginal(net, joint, nodes) == 0)
    assert fell_back


@pytest.mark.parametrize("seed", range(25))
def test_greedy_bucket_order_matches_the_full_joint(seed):
    net = ref.random_network(9900 + seed, min_nodes=2, max_nodes=14)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    for m in range(len(net.members)):
        joint = ref.full_joint(net, m)
        for nodes in ref.random_node_sets(net.nodes, rng, 5):
            index = [theta.index[v] for v in nodes]
            got = bucket._bucket_eliminate(theta, index, m, 2**25, greedy=True)
            want = ref.marginal(net, joint, nodes)
            np.testing.assert_array_equal(got == 0, want == 0)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, err_msg=str(nodes))


def test_too_large_is_refused_on_every_path():
    net = ref.random_network(5, n_nodes=10, edge_prob=0.6, max_card=4)
    theta = net.to_theta()
    for method in METHODS:
        with pytest.raises(qp.InfluenceTooExpensive):
            qp.joint_marginal(theta, list(net.nodes), inference=method, max_table=8)


@pytest.mark.parametrize("seed", range(20))
def test_pricing_refuses_exactly_where_the_elimination_does(seed):
    net = ref.random_network(9700 + seed, min_nodes=4, max_nodes=14, edge_prob=0.6,
                             max_card=4)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    refused = fitted = 0
    for nodes in ref.random_node_sets(net.nodes, rng, 6):
        anc = theta.ancestral_set(nodes)
        for limit in (4, 9, 16, 27, 64, 256, 2**25):
            try:
                infl._eliminate(theta, tuple(nodes), anc, 0, limit)
            except qp.InfluenceTooExpensive as exc:
                refused += 1
                with pytest.raises(qp.InfluenceTooExpensive) as priced:
                    infl._eliminate(theta, tuple(nodes), anc, 0, limit, price_only=True)
                assert str(priced.value) == str(exc)
            else:
                fitted += 1
                assert infl._eliminate(theta, tuple(nodes), anc, 0, limit,
                                       price_only=True).size == 0
    assert fitted  # the largest limit always fits these small networks


@pytest.mark.parametrize("seed", range(12))
def test_a_query_the_kernel_cannot_order_is_priced_before_any_arithmetic(seed, monkeypatch):
    if not infl.compiled_kernel():
        pytest.skip("the compiled kernel is not built here "
                    "(tests/inference/test_kernel.py says why)")
    net = ref.random_network(9800 + seed, min_nodes=6, max_nodes=14, edge_prob=0.6,
                             max_card=4)
    theta = net.to_theta()
    joint = ref.full_joint(net)
    real = infl._eliminate
    calls: list[bool] = []

    def spy(*args, price_only=False, **kwargs):
        calls.append(price_only)
        return real(*args, price_only=price_only, **kwargs)

    for module in (infl, elimination, cutset, exact):  # every caller of the Python order
        monkeypatch.setattr(module, "_eliminate", spy)
    rng = np.random.default_rng(seed)
    for nodes in ref.random_node_sets(net.nodes, rng, 6):
        want = ref.marginal(net, joint, nodes)
        for limit in (9, 27, 64, 256):
            if math.prod(theta.cardinality[v] for v in nodes) > limit:
                continue
            calls.clear()
            try:
                got = qp.joint_marginal(theta, nodes, max_table=limit)
            except qp.InfluenceTooExpensive:
                # refused by the kernel's pricing, then by the Python order's, then by the
                # cutset search's: no arithmetic
                assert calls and all(calls), (nodes, limit)
                continue
            # answered by the kernel (no call), by the Python order after pricing it, or by
            # conditioning after its cutset search priced it (terms in the kernel, or in
            # Python once the pricing is over)
            assert calls in ([], [True, False]) or (
                calls[0] and sorted(calls, reverse=True) == calls), (nodes, limit)
            np.testing.assert_array_equal(got == 0, want == 0)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_the_exact_path_prices_before_its_integer_arithmetic(monkeypatch, exact_arithmetic):
    # every query takes the exact path, with at most 27 entries a table
    settings = dataclasses.replace(exact_arithmetic, exact_max_table=27)
    real = exact._exact_tables
    converted: list[int] = []

    def spy(*args, **kwargs):
        converted.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(exact, "_exact_tables", spy)
    answered = refused = 0
    for seed in range(8):
        net = ref.random_network(9850 + seed, min_nodes=6, max_nodes=12, edge_prob=0.6,
                                 max_card=4)
        theta = net.to_theta()
        joints = [ref.full_joint(net, m) for m in range(len(net.members))]
        rng = np.random.default_rng(seed)
        for nodes in ref.random_node_sets(net.nodes, rng, 8):
            if len(nodes) < 2:
                continue
            converted.clear()
            InferenceCache.of(theta).clear()
            try:
                got = qp.max_influence(theta, nodes[0], nodes[1:], settings=settings)
            except qp.InfluenceTooExpensive:
                refused += 1
                assert converted == []  # refused by the pricing alone
                continue
            answered += 1
            assert got.arithmetic == "exact" and converted
            want = max(ref.influence_from_joint(ref.marginal(net, j, nodes)) for j in joints)
            assert got.value >= want and got.value == pytest.approx(want, rel=1e-9, abs=1e-9)
    assert answered and refused


@pytest.mark.parametrize("fill", [False, True])
@pytest.mark.parametrize("seed", range(30))
def test_junction_tree_is_a_junction_tree(seed, fill):
    """Running intersection, families covered, tables are the marginals of their cliques (the
    min-weight tree; the min-fill one, for the structure)."""
    net = ref.random_network(9500 + seed, min_nodes=1, max_nodes=14)
    theta = net.to_theta()
    st = fill_tree_structure(theta) if fill else tree_structure(theta)
    n = len(theta.nodes)
    # Every variable's cliques form a connected subtree: exactly one of them has its parent
    # outside the set (or is the root).
    for v in range(n):
        holding = {c for c, cl in enumerate(st.cliques) if v in cl}
        assert holding, v
        tops = [c for c in holding if st.parent[c] not in holding]
        assert len(tops) == 1, (seed, v)
    for v, name in enumerate(theta.nodes):
        family = {v, *(theta.index[p] for p in theta.parents[name])}
        assert family <= set(st.cliques[st.assign[v]])
    # No clique is contained in another (non-maximal cliques were absorbed).
    sets = [set(c) for c in st.cliques]
    for a in range(len(sets)):
        for b in range(len(sets)):
            assert a == b or not sets[a] <= sets[b], (seed, a, b)
    if fill:
        return
    tree = junction_tree(theta)
    joint = ref.full_joint(net)
    for c, clique in enumerate(st.cliques):
        names = [theta.nodes[u] for u in clique]
        np.testing.assert_allclose(tree.tables[c], ref.marginal(net, joint, names),
                                   rtol=1e-12, atol=1e-300)


def test_min_fill_builds_smaller_trees_on_long_networks():
    """The shared propagation's tree (min-fill) against the global min-weight one, on the
    benchmark's seeded families at 2,000 nodes: real sizes, measured."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_linear_scale import build

    for family in ("banded", "layered", "lattice"):
        theta = build(family, 2000, 4)
        fill, weight = fill_tree_structure(theta), tree_structure(theta)
        assert fill.size < weight.size, family
        if family == "banded":  # moral bandwidth 8: cliques of at most 9 or 10 variables
            assert max(map(len, fill.cliques)) <= 10 < max(map(len, weight.cliques))


def test_disconnected_network_components_multiply():
    net = ref.random_network(31, n_nodes=8, edge_prob=0.0)
    theta = net.to_theta()
    joint = ref.full_joint(net)
    nodes = list(net.nodes[:4])
    for method in METHODS:
        np.testing.assert_allclose(qp.joint_marginal(theta, nodes, inference=method),
                                   ref.marginal(net, joint, nodes), rtol=1e-12)


def test_unknown_inference_method_is_refused():
    theta = qp.load_model("student:theta")
    with pytest.raises(qp.ParameterError, match="inference must be one of"):
        qp.max_influence(theta, "income", ["gender"], inference="fast")
    with pytest.raises(qp.ParameterError, match="inference must be one of"):
        qp.plan(theta, qp.CountQuery(["height"], 10), "income", 1.0, inference="magic")


def test_plans_agree_across_methods_on_bundled_models(kernel):
    for name in ("student:theta", "example3", "chain"):
        theta = qp.load_model(name)
        attrs = list(theta.nodes[:3])
        q = qp.CountQuery(attrs, 100)
        plans = [qp.plan(theta, q, theta.nodes, 1.0, engine=kernel)]
        plans += [qp.plan(theta, q, theta.nodes, 1.0, inference=m) for m in METHODS]
        for p in plans[1:]:
            for a, b in zip(plans[0].sensitive, p.sensitive, strict=True):
                assert a.quilt == b.quilt and a.optimal and b.optimal
                assert a.scale == pytest.approx(b.scale, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_folded_private_ancestors_queried_or_not(seed, kernel):
    """Trees and chains are almost all private ancestors: query them, their children, both."""
    net = ref.random_network(9700 + seed, min_nodes=4, max_nodes=12, edge_prob=0.15)
    theta = net.to_theta()
    folded = bucket._folded_factors(theta, 0)
    private = {theta.nodes[u] for f in folded if f is not None for u in f[0]}
    joint = ref.full_joint(net)
    rng = np.random.default_rng(seed)
    for _ in range(8):
        k = int(rng.integers(1, 4))
        pool = sorted(private) if private and rng.random() < 0.6 else list(net.nodes)
        nodes = list(dict.fromkeys([*(str(x) for x in rng.choice(pool, size=min(k, len(pool)),
                                                                   replace=False)),
                                    str(rng.choice(net.nodes))]))
        got = qp.joint_marginal(theta, nodes, engine=kernel)
        want = ref.marginal(net, joint, nodes)
        np.testing.assert_array_equal(got == 0, want == 0)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, err_msg=str((seed, nodes)))


def test_definition8_small_path_equals_numpy_path():
    rng = np.random.default_rng(4)
    for _ in range(3000):
        k, m = int(rng.integers(1, 5)), int(rng.integers(1, 9))
        j = rng.random((k, m)) * (rng.random((k, m)) > 0.2)
        if rng.random() < 0.1:
            j[int(rng.integers(k))] = 0
        if j.sum() == 0:
            continue
        j = j / j.sum()
        small = definition8._influence_small(j.tolist())
        big = definition8._influence_from_joint(j, use_kernel=False, small_joint=0)
        assert small[1:] == big[1:]
        if math.isinf(big[0]):
            assert math.isinf(small[0])
        else:
            assert small[0] == pytest.approx(big[0], rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("merge_limit", [1, 64, 10**7])
def test_chain_merging_at_any_limit_matches_the_full_joint(merge_limit):
    """Steps whose result feeds the next bucket are merged up to ``merge_limit`` entries: no
    merging, some, and merging everything must give the same exact marginals."""
    for seed in range(12):
        net = ref.random_network(9950 + seed, min_nodes=3, max_nodes=12)
        theta = net.to_theta()
        joint = ref.full_joint(net)
        rng = np.random.default_rng(seed)
        for nodes in ref.random_node_sets(net.nodes, rng, 4):
            index = [theta.index[v] for v in nodes]
            for greedy in (False, True):
                got = bucket._bucket_eliminate(theta, index, 0, 2**25, greedy=greedy,
                                             merge_limit=merge_limit)
                want = ref.marginal(net, joint, nodes)
                np.testing.assert_array_equal(got == 0, want == 0)
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=0,
                                           err_msg=str((seed, nodes, greedy)))


@pytest.mark.parametrize("seed", range(8))
def test_elimination_work_prices_the_python_order_and_stops_when_told(seed):
    """elimination_work is the sum of the table sizes the pricing walk of the Python order
    reports; with stop_above it stops at the first step past it, returning a partial sum above
    stop_above and never above the whole; a query no order fits costs inf."""
    net = ref.random_network(9900 + seed, min_nodes=6, max_nodes=12, edge_prob=0.5)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    for nodes in ref.random_node_sets(net.nodes, rng, 5):
        sizes: list[int] = []
        infl._eliminate(theta, tuple(nodes), theta.ancestral_set(nodes), 0, 2**25,
                        price_only=True, sizes=sizes)
        whole = infl.elimination_work(theta, nodes)
        assert whole == sum(sizes)
        if len(sizes) > 1:
            cut = sizes[0] + sizes[1] / 2
            part = infl.elimination_work(theta, nodes, stop_above=cut)
            assert cut < part <= whole
            assert part == sizes[0] + sizes[1]
        if sizes and max(sizes) > 1:
            assert infl.elimination_work(theta, nodes, max_table=max(sizes) - 1) == math.inf
    with pytest.raises(qp.ParameterError):
        infl.elimination_work(theta, [net.nodes[0]], stop_above=-1)
    with pytest.raises(qp.ParameterError):
        infl.elimination_work(theta, [net.nodes[0], net.nodes[0]])
