"""The engine interface: ``engine=`` chooses who computes a joint, the result says who did, and
the tuning is an :class:`EngineSettings` (checked; it can never loosen the underflow bound).

Every engine is compared with the brute-force joint of tests/reference.py on random networks.
"""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import reference as ref

import quiltpriv as qp
from quiltpriv.inference import compiled
from quiltpriv.inference.engines.base import (
    DEFAULT_SETTINGS,
    ENGINES,
    LEAST_SAFE_LOG2_FLOOR,
    EngineSettings,
    check_engine,
)
from quiltpriv.inference.influence import influence_upper_bound, max_influence

KERNEL = compiled._KERNEL is not None
RUNNABLE = [e for e in ENGINES if e != "kernel" or KERNEL]
#: The name an engine answers under, where it is not its own.
ANSWERED = {"cutset": "cutset+kernel" if KERNEL else "cutset+python"}


@pytest.mark.parametrize("engine", RUNNABLE)
@pytest.mark.parametrize("seed", range(6))
def test_every_engine_gives_the_joint_and_says_so(seed, engine):
    net = ref.random_network(15_100 + seed, min_nodes=3, max_nodes=10)
    theta = net.to_theta()
    joint = ref.full_joint(net)
    rng = np.random.default_rng(seed)
    expected = {"auto": "kernel" if KERNEL else "python",
                "cutset": "cutset+kernel" if KERNEL else "cutset+python"}.get(engine, engine)
    for nodes in ref.random_node_sets(net.nodes, rng, 5):
        got = qp.joint_marginal(theta, nodes, engine=engine)
        want = ref.marginal(net, joint, nodes)
        np.testing.assert_array_equal(got == 0, want == 0)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, err_msg=str(nodes))
        if len(nodes) < 2:
            continue
        found = max_influence(theta, nodes[0], nodes[1:], engine=engine)
        want_e = max(ref.influence_from_joint(ref.marginal(net, ref.full_joint(net, m), nodes))
                     for m in range(len(net.members)))
        if math.isinf(want_e):
            assert math.isinf(found.value)
        else:
            assert want_e - 1e-12 <= found.value <= want_e + 2e-10 * (1 + want_e)
        # the bucket engines may hand a query no order fits to elimination; not at this size
        assert found.engine == expected, (nodes, found.engine)
        assert found.arithmetic == ("exact" if engine == "exact" else "float64")


def test_an_empty_quilt_computes_nothing():
    theta = qp.load_model("student:theta")
    found = max_influence(theta, theta.nodes[0], [])
    assert found.value == 0.0 and found.engine is None


def test_engines_do_not_share_cached_answers():
    theta = ref.random_network(15_200, n_nodes=8).to_theta()
    node, quilt = theta.nodes[-1], theta.nodes[:2]
    answered = {max_influence(theta, node, quilt, engine=e).engine
                for e in ("python", "elimination", "exact")}
    assert answered == {"python", "elimination", "exact"}


def test_an_upper_bound_keeps_the_engine_and_arithmetic():
    net = ref.random_network(15_300, n_nodes=9, edge_prob=0.5)
    theta = net.to_theta()
    node, quilt = theta.nodes[-1], theta.nodes[:-1]
    exact = influence_upper_bound(theta, node, quilt, engine="exact")
    theta = net.to_theta()  # a fresh cache: influences are cached whatever the table limit
    assert exact.bound_via is None and (exact.engine, exact.arithmetic) == ("exact", "exact")
    # a table limit the quilt's joint exceeds, its separator's does not: the bound answers
    limit = math.prod(theta.cardinality[v] for v in quilt) // 2
    try:
        bound = influence_upper_bound(theta, node, quilt, engine="exact", max_table=limit)
    except qp.InfluenceTooExpensive:
        pytest.skip("the separator does not fit either")
    assert bound.bound_via is not None and bound.value >= exact.value - 1e-12
    assert (bound.engine, bound.arithmetic) == ("exact", "exact")


def test_the_kernel_engine_is_refused_where_the_kernel_is_not_loaded():
    """In a process whose kernel is switched off (``QUILTPRIV_NO_KERNEL``, not a patched
    module global), ``engine="kernel"`` is refused and ``"auto"`` is the pure-Python engine."""
    code = textwrap.dedent("""
        import quiltpriv as qp
        theta = qp.load_model("student:theta")
        try:
            qp.joint_marginal(theta, theta.nodes[:2], engine="kernel")
        except qp.ParameterError as error:
            print("refused:", error)
        print(qp.max_influence(theta, theta.nodes[0], theta.nodes[1:2]).engine)
    """)
    env = {**os.environ, "QUILTPRIV_NO_KERNEL": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parents[2]).stdout.splitlines()
    assert out[0].startswith("refused:") and "compiled kernel" in out[0]
    assert out[1] == "python"  # "auto" then means the pure-Python bucket elimination


@pytest.mark.parametrize("bad", ["fast", "", None, 3, "Kernel", ["kernel"]])
def test_an_unknown_engine_is_refused(bad):
    theta = qp.load_model("student:theta")
    with pytest.raises(qp.ParameterError, match="engine must be one of"):
        qp.joint_marginal(theta, theta.nodes[:1], engine=bad)
    with pytest.raises(qp.ParameterError):
        check_engine(bad)


def test_inference_and_engine_must_agree():
    theta = qp.load_model("student:theta")
    nodes = list(theta.nodes[:2])
    want = qp.joint_marginal(theta, nodes, engine="elimination")
    np.testing.assert_array_equal(qp.joint_marginal(theta, nodes, inference="elimination"), want)
    np.testing.assert_array_equal(
        qp.joint_marginal(theta, nodes, inference="elimination", engine="elimination"), want)
    with pytest.raises(qp.ParameterError, match="disagree"):
        qp.joint_marginal(theta, nodes, inference="junction_tree", engine="python")


def test_settings_are_checked():
    assert EngineSettings() == DEFAULT_SETTINGS
    assert DEFAULT_SETTINGS.safe_log2_floor == LEAST_SAFE_LOG2_FLOOR == -1000
    EngineSettings(safe_log2_floor=1)  # stricter: fine
    with pytest.raises(qp.ParameterError, match="at least -1000"):
        EngineSettings(safe_log2_floor=-1001)  # would trust float64 where it can underflow
    assert DEFAULT_SETTINGS.max_propagation_held is None  # the memory budget decides
    EngineSettings(max_propagation_held=0)  # never propagate: fine
    for bad in ({"bucket_limit": -1}, {"merge_limit": 2.5}, {"fold_limit": True},
                {"small_joint": "32"}, {"max_propagation_held": -1},
                {"max_propagation_held": 2.0**27}, {"shared_price_sample": 0},
                {"shared_work_ratio": None}):
        with pytest.raises(qp.ParameterError):
            EngineSettings(**bad)
    theta = qp.load_model("student:theta")
    with pytest.raises(qp.ParameterError, match="EngineSettings"):
        qp.joint_marginal(theta, theta.nodes[:1], settings={"bucket_limit": 1})


def test_a_raised_floor_sends_the_python_engine_to_exact_integers():
    theta = ref.random_network(15_400, n_nodes=8).to_theta()
    node, quilt = theta.nodes[-1], theta.nodes[:3]
    loose = max_influence(theta, node, quilt, engine="python")
    strict = max_influence(theta, node, quilt, engine="python",
                           settings=EngineSettings(safe_log2_floor=1))
    assert (loose.engine, loose.arithmetic) == ("python", "float64")
    assert (strict.engine, strict.arithmetic) == ("exact", "exact")
    assert strict.value == pytest.approx(loose.value, rel=1e-9, abs=1e-9)


def test_every_engine_implements_the_interface_and_answers_a_joint_query():
    """One object per engine name behind :class:`Engine`; each answers a JointQuery directly
    with the table and who answered, equal to the exact engine's to rounding."""
    from quiltpriv.inference import influence
    from quiltpriv.inference.engines.base import Engine, JointQuery

    assert set(influence._ENGINES) == set(ENGINES) - {"auto"}
    net = ref.random_network(15_500, n_nodes=9, edge_prob=0.4)
    theta = net.to_theta()
    joint = ref.full_joint(net)
    rng = np.random.default_rng(3)
    for name, engine in influence._ENGINES.items():
        assert isinstance(engine, Engine) and engine.name == name
        if name == "kernel" and not KERNEL:
            continue
        for nodes in ref.random_node_sets(net.nodes, rng, 4):
            query = JointQuery(theta, tuple(nodes), 0, 2**20)
            found = engine.joint(query)
            assert found is not None
            table, answered, depth = found
            assert answered == ANSWERED.get(name, name), (name, nodes)
            assert depth >= 1
            want = ref.marginal(net, joint, nodes)
            np.testing.assert_array_equal(table == 0, want == 0)
            np.testing.assert_allclose(table, want, rtol=1e-12, atol=0)
            exact_table = influence._ENGINES["exact"].joint(query).table
            np.testing.assert_allclose(table, exact_table, rtol=1e-12, atol=0)


def _fraction_influence(net, nodes, member):
    """Definition 8 on the exact joint: brute force over every joint state of the network,
    each CPD entry as its exact Fraction. The largest ratio ``P(q | a) / P(q | b)`` (a
    Fraction), ``inf``, or None when ``Q`` is independent of ``i`` at every ratio (1)."""
    from fractions import Fraction

    names = net.nodes
    pos = {v: k for k, v in enumerate(names)}
    card = [net.card[v] for v in names]
    keep = [pos[v] for v in nodes]
    joint: dict[tuple[int, ...], Fraction] = {}
    for states in itertools.product(*(range(c) for c in card)):
        p = Fraction(1)
        for v in names:
            table = net.members[member][v]
            p *= Fraction(float(table[(states[pos[v]],
                                       *(states[pos[u]] for u in net.parents[v]))]))
            if not p:
                break
        key = tuple(states[k] for k in keep)
        joint[key] = joint.get(key, Fraction(0)) + p
    first = net.card[nodes[0]]
    totals = [sum((p for k, p in joint.items() if k[0] == a), Fraction(0)) for a in range(first)]
    valid = [a for a in range(first) if totals[a] > 0]
    best = Fraction(1)
    for q in itertools.product(*(range(net.card[v]) for v in nodes[1:])):
        for a in valid:
            pa = joint.get((a, *q), Fraction(0)) / totals[a]
            for b in valid:
                pb = joint.get((b, *q), Fraction(0)) / totals[b]
                if pa > 0 and pb == 0:
                    return math.inf
                if pa > 0:
                    best = max(best, pa / pb)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_no_engine_under_estimates_the_exact_influence(seed):
    """Every engine, the cutset and batched junction-tree ones included, against Definition 8
    on the exact joint in Fractions (logs to 40 digits): never below it, and within the
    rounding margin of it."""
    import mpmath

    net = ref.random_network(15_700 + seed, min_nodes=3, max_nodes=6, max_card=3)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    mpmath.mp.dps = 40
    for nodes in ref.random_node_sets(net.nodes, rng, 3):
        if len(nodes) < 2:
            continue
        ratios = [_fraction_influence(net, nodes, m) for m in range(len(net.members))]
        exact_inf = any(r == math.inf for r in ratios)
        want = None if exact_inf else max(
            mpmath.log(mpmath.mpf(r.numerator) / r.denominator) for r in ratios)
        for engine in RUNNABLE:
            got = max_influence(theta, nodes[0], nodes[1:], engine=engine)
            if exact_inf:
                assert math.isinf(got.value), (engine, nodes)
                continue
            assert mpmath.mpf(got.value) >= want, (engine, nodes, got.value, want)
            assert got.value <= want + 1e-9 * (1 + want), (engine, nodes)


@pytest.mark.parametrize("seed", range(4))
def test_the_batched_engine_keeps_one_propagation_per_attribute_set(seed):
    """``engine="junction_tree_batched"`` propagates over the query's nodes after the first
    and keeps it, so every sensitive attribute against one quilt reads one propagation; its
    joints are the brute-force ones, axes in the query's order."""
    from quiltpriv.inference.cache import InferenceCache
    from quiltpriv.inference.engines.batched import PROPAGATIONS

    net = ref.random_network(15_800 + seed, min_nodes=5, max_nodes=8)
    theta = net.to_theta()
    full = ref.full_joint(net)
    quilt = list(theta.nodes[-2:])[::-1]  # not in the network's order
    for node in theta.nodes[:-2]:
        got = qp.joint_marginal(theta, [node, *quilt], engine="junction_tree_batched")
        np.testing.assert_allclose(got, ref.marginal(net, full, [node, *quilt]), rtol=1e-12,
                                   atol=0)
        assert max_influence(theta, node, quilt,
                             engine="junction_tree_batched").engine == "junction_tree_batched"
    kept = InferenceCache.of(theta).entries(PROPAGATIONS)
    assert len({key[:2] for key in kept.keys()}) == len(net.members)  # one per member
    single = qp.joint_marginal(theta, [theta.nodes[0]], engine="junction_tree_batched")
    np.testing.assert_allclose(single, ref.marginal(net, full, [theta.nodes[0]]), rtol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_the_batched_engines_cap_is_the_memory_budget(seed):
    """The batched engine holds at most the call's ``max_table`` entries (and
    ``settings.max_propagation_held`` when lower), not a fixed 2**27: with a budget below what
    its propagation needs it hands the query to elimination, which answers exactly."""
    from quiltpriv.inference.attribute_joints import result_entries
    from quiltpriv.inference.cache import InferenceCache
    from quiltpriv.inference.engines.batched import PROPAGATIONS

    net = ref.random_network(15_900 + seed, min_nodes=5, max_nodes=8)
    theta = net.to_theta()
    full = ref.full_joint(net)
    node, quilt = theta.nodes[0], list(theta.nodes[-2:])
    want = ref.marginal(net, full, [node, *quilt])
    need = result_entries(theta, quilt)  # the result alone: the propagation needs more
    for max_table, settings in ((need, DEFAULT_SETTINGS),
                                (2**20, EngineSettings(max_propagation_held=need))):
        got = max_influence(theta, node, quilt, engine="junction_tree_batched",
                            max_table=max_table, settings=settings)
        assert got.engine == "elimination"
        exact = max_influence(theta, node, quilt, engine="elimination")
        assert got.value == exact.value
        np.testing.assert_allclose(
            qp.joint_marginal(theta, [node, *quilt], engine="junction_tree_batched",
                              max_table=max_table, settings=settings), want, rtol=1e-12, atol=0)
    assert not InferenceCache.of(theta).entries(PROPAGATIONS).keys()  # none was kept
    got = max_influence(theta, node, quilt, engine="junction_tree_batched", max_table=2**20)
    assert got.engine == "junction_tree_batched"
    held = {key[2] for key in InferenceCache.of(theta).entries(PROPAGATIONS).keys()}
    assert held == {2**20}


def test_the_cutset_engine_answers_a_query_that_fits_as_one_term():
    """By name, ``"cutset"`` conditions on nothing where an order fits: one elimination, the
    same joint as the others; and it says which arithmetic ran its terms."""
    net = ref.random_network(15_900, n_nodes=7, edge_prob=0.4)
    theta = net.to_theta()
    nodes = list(theta.nodes[:3])
    from quiltpriv.inference import influence
    from quiltpriv.inference.engines.base import JointQuery

    answer = influence._ENGINES["cutset"].joint(JointQuery(theta, tuple(nodes), 0, 2**20))
    assert answer is not None and answer.engine == ANSWERED["cutset"]
    want = ref.marginal(net, ref.full_joint(net), nodes)
    np.testing.assert_allclose(answer.table, want, rtol=1e-12, atol=0)
    # one term: the elimination depth plus the one summed term
    from quiltpriv.inference.rounding import _elim_depth

    assert answer.depth == _elim_depth(theta) + 1
