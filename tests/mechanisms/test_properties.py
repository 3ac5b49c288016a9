"""Property tests of the APMQM core (monotonicity and data processing of [ZOC22, Def. 8];
[ZOC22, Alg. 3]; plan contract).

Networks come from the seeded generator in tests/reference.py; hypothesis draws the seeds,
the sets and the parameters, derandomised so every run checks the same cases. d-separation
in the properties is decided by networkx, not by quiltpriv.
"""

from __future__ import annotations

import json
import math

import networkx as nx
import reference as ref
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from marks import fewer_examples

from quiltpriv.graph.quilts import least_influence_quilt
from quiltpriv.inference.influence import ROUNDING_MARGIN, max_influence
from quiltpriv.mechanisms.apmqm import Plan, plan
from quiltpriv.queries.query import CountQuery, LinearQuery

SETTINGS = settings(derandomize=True, max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
seeds = st.integers(min_value=0, max_value=2**31 - 1)


def _net(seed: int):
    net = ref.random_network(seed, min_nodes=2, max_nodes=8)
    return net, net.to_theta()


def _subset(data, pool, min_size=0):
    pool = sorted(pool)
    if not pool:
        return set()
    return set(data.draw(st.lists(st.sampled_from(pool), min_size=min_size, unique=True)))


@SETTINGS
@given(seed=seeds, data=st.data())
def test_influence_monotone_in_quilt(seed, data):
    """Fact 1: Q subset of Q' implies e(Q|i) <= e(Q'|i)."""
    net, theta = _net(seed)
    node = data.draw(st.sampled_from(net.nodes))
    others = [v for v in net.nodes if v != node]
    big = _subset(data, others)
    small = _subset(data, big)
    e_small = max_influence(theta, node, small).value
    e_big = max_influence(theta, node, big).value
    assert e_small <= e_big + 1e-12, (seed, node, small, big, e_small, e_big)
    assert e_small >= 0.0


@SETTINGS
@given(seed=seeds, data=st.data())
def test_data_processing_bound(seed, data):
    """Fact 2: if S d-separates i from Q (networkx), then e(Q|i) <= e(S|i)."""
    net, theta = _net(seed)
    node = data.draw(st.sampled_from(net.nodes))
    others = [v for v in net.nodes if v != node]
    s = _subset(data, others)
    g = net.graph()
    remote = ref.remote_set(g, node, s)
    q = _subset(data, s | remote, min_size=0)
    if q - s:
        assert nx.is_d_separator(g, {node}, q - s, s)
    e_q = max_influence(theta, node, q).value
    e_s = max_influence(theta, node, s).value
    # Exact values obey e(Q) <= e(S). The computed ones are the exact ones raised by up to
    # ROUNDING_MARGIN (relative and absolute); an exact 0 that floating point computes as
    # 2e-16 (Q independent of i) becomes 1e-10 while e({}) is exactly 0. Allow that margin.
    assert e_q <= e_s * (1 + ROUNDING_MARGIN) + ROUNDING_MARGIN + 1e-12, (
        seed, node, sorted(s), sorted(q), e_q, e_s)


def _query(data, nodes):
    attrs = sorted(_subset(data, nodes, min_size=1))
    if data.draw(st.booleans()):
        return CountQuery(tuple(attrs), data.draw(st.integers(1, 10_000)))
    weights = {a: data.draw(st.floats(-5, 5, allow_nan=False)) for a in attrs}
    bounds = {}
    for a in attrs:
        lo = data.draw(st.floats(-10, 10, allow_nan=False))
        bounds[a] = (lo, lo + data.draw(st.floats(0.01, 10, allow_nan=False)))
    return LinearQuery(weights, bounds)


@SETTINGS
@given(seed=seeds, data=st.data(),
       eps1=st.floats(0.01, 5.0, allow_nan=False), factor=st.floats(1.0, 10.0))
def test_scale_non_increasing_in_epsilon(seed, data, eps1, factor):
    net, theta = _net(seed)
    query = _query(data, net.nodes)
    sens = sorted(_subset(data, net.nodes, min_size=1))
    eps2 = eps1 * factor
    p1, p2 = plan(theta, query, sens, eps1), plan(theta, query, sens, eps2)
    assert p2.scale <= p1.scale, (seed, sens, eps1, eps2, p1.scale, p2.scale)
    for i in sens:
        assert p2[i].scale <= p1[i].scale
    # And never more than the trivial quilt's Delta_A / eps (exact, rounded up like every scale).
    assert p1.scale <= ref.algorithm3_scale(query.sensitivity(query.attributes), 0.0, eps1)


@settings(derandomize=True, max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=seeds, data=st.data(), eps=st.floats(0.05, 5.0, allow_nan=False))
def test_plan_deterministic_and_json_round_trip(seed, data, eps):
    net, theta = _net(seed)
    query = _query(data, net.nodes)
    sens = sorted(_subset(data, net.nodes, min_size=1))
    p = plan(theta, query, sens, eps)
    again = plan(theta, query, sens, eps)
    fresh = plan(net.to_theta(), query, sens, eps)  # a new Theta: no shared caches
    assert p.to_dict() == again.to_dict() == fresh.to_dict()
    assert p.to_json() == fresh.to_json()
    back = Plan.from_dict(json.loads(p.to_json()))
    assert back.to_dict() == json.loads(p.to_json())
    assert back.to_dict() == p.to_dict()
    assert back == p
    assert math.isfinite(p.scale)


@SETTINGS
@given(seed=seeds, data=st.data())
def test_least_influence_quilt_feasible(seed, data):
    """Q*(T) lies inside T, and every target is in Q* + R(Q*) (networkx d-separation)."""
    net, theta = _net(seed)
    node = data.draw(st.sampled_from(net.nodes))
    targets = _subset(data, [v for v in net.nodes if v != node])
    q = set(least_influence_quilt(theta, node, targets))
    assert q <= targets
    g = net.graph()
    remote = ref.remote_set(g, node, q)
    assert targets <= q | remote, (seed, node, sorted(targets), sorted(q))
    # And it is no worse than the naive feasible choice Q = T.
    assert (max_influence(theta, node, q).value
            <= max_influence(theta, node, targets).value + 1e-12)


@settings(derandomize=True, max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=seeds, data=st.data(), eps=st.floats(0.05, 5.0, allow_nan=False))
def test_plan_agrees_with_brute_force(seed, data, eps):
    # The brute-force agreement as a property: every subset Q, full-joint influences.
    net, theta = _net(seed)
    node = data.draw(st.sampled_from(sorted(theta.nodes)))
    query = _query(data, theta.nodes)
    records = ref.all_quilts(net, node)
    lo = ref.reference_scale(records, query.attributes, query.sensitivity, eps,
                             influence_shift=lambda e: max(e - 1e-12, 0.0))
    hi = ref.reference_scale(records, query.attributes, query.sensitivity, eps,
                             influence_shift=lambda e: e * (1 + ROUNDING_MARGIN)
                             + ROUNDING_MARGIN)
    got = plan(theta, query, node, eps).scale
    assert lo - 1e-9 * max(1.0, lo) <= got <= hi + 1e-9 * max(1.0, hi), (lo, got, hi)


# -- the default run's samples ------------------------------------------------------------------
# The full runs above (~8 s of CPU) are marked slow; by default each property is checked on
# fewer derandomised examples (~1.5 s), drawn by the same strategies (tests/marks.py).
_eps = st.floats(0.05, 5.0, allow_nan=False)
test_influence_monotone_in_quilt_sample = fewer_examples(
    test_influence_monotone_in_quilt, 25, seed=seeds, data=st.data())
test_data_processing_bound_sample = fewer_examples(
    test_data_processing_bound, 25, seed=seeds, data=st.data())
test_scale_non_increasing_in_epsilon_sample = fewer_examples(
    test_scale_non_increasing_in_epsilon, 25, seed=seeds, data=st.data(),
    eps1=st.floats(0.01, 5.0, allow_nan=False), factor=st.floats(1.0, 10.0))
test_plan_deterministic_and_json_round_trip_sample = fewer_examples(
    test_plan_deterministic_and_json_round_trip, 15, seed=seeds, data=st.data(), eps=_eps)
test_least_influence_quilt_feasible_sample = fewer_examples(
    test_least_influence_quilt_feasible, 25, seed=seeds, data=st.data())
test_plan_agrees_with_brute_force_sample = fewer_examples(
    test_plan_agrees_with_brute_force, 15, seed=seeds, data=st.data(), eps=_eps)
