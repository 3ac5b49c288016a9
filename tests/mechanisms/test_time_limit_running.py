"""A time limit already running (:class:`quiltpriv.utils.time_limit.TimeLimit`).

The command line starts its ``--time-limit`` when the command starts and hands the planners
what is left of it; the planners' notes still state the user's seconds. A limit that passed
before the search began gives every step the trivial quilt at once (valid, flagged).
"""

from __future__ import annotations

import math
import time

import pytest

import quiltpriv as qp
from quiltpriv.errors import ParameterError
from quiltpriv.mechanisms.mqm import markov_quilt_mechanism
from quiltpriv.mechanisms.registry import build_mechanism
from quiltpriv.utils.time_limit import TimeLimit, check_time_limit, seconds_left

FLIP = [[0.9, 0.1], [0.1, 0.9]]


def _passed(seconds: float = 5.0) -> TimeLimit:
    """A limit of ``seconds`` that started long enough ago to have passed."""
    return TimeLimit(seconds, time.monotonic() - seconds - 10.0)


def test_time_limit_checks_and_clock():
    limit = TimeLimit.starting_now(3)
    assert limit.seconds == 3.0 and isinstance(limit.seconds, float)
    assert 0 < limit.remaining() <= 3 and not limit.passed()
    assert limit.ends == limit.started + 3.0 and str(limit) == "3 s"
    assert _passed().passed() and _passed().remaining() < 0
    assert check_time_limit(None) is None and check_time_limit(limit) is limit
    fresh = check_time_limit(2)
    assert isinstance(fresh, TimeLimit) and fresh.seconds == 2.0
    assert seconds_left(None) is None and seconds_left(4.0) == 4.0
    assert seconds_left(_passed()) == 1e-3 and 0 < seconds_left(limit) <= 3
    for bad in (0, -1, math.inf, math.nan, "2", True):
        with pytest.raises(ParameterError):
            check_time_limit(bad)
        with pytest.raises(ParameterError):
            TimeLimit(bad, 0.0)
    for bad in (math.nan, math.inf, None, "0", False):
        with pytest.raises(ParameterError):
            TimeLimit(1.0, bad)


@pytest.mark.parametrize("kind", ["chain", "hmm"])
def test_a_passed_limit_gives_the_trivial_quilt_and_states_the_users_seconds(kind):
    n = 300
    theta = (qp.markov_chain(n, FLIP, [0.5, 0.5]) if kind == "chain" else
             qp.hidden_markov(n, FLIP, [[0.8, 0.2], [0.2, 0.8]], [0.5, 0.5]))
    steps = [f"X{t}" for t in range(1, n + 1)]
    query = qp.FractionQuery(steps, "1")
    p = qp.plan(theta, query, theta.nodes, 1.0, time_limit=_passed(5.0), list_sets=False)
    assert not p.optimal and len(p.sensitive) == len(theta.nodes)
    assert any("the time limit of 5 s was reached" in note for note in p.notes), p.notes
    # the trivial quilt everywhere: Delta_A / eps = 1, the runs few (not one per step)
    assert p.scale == 1.0
    assert all(sp.quilt == () and not sp.optimal for sp in p.sensitive[:3])
    assert len(p.sensitive.runs) <= 3
    # a limit running but not passed plans as a number of seconds does
    fresh = qp.plan(theta, query, theta.nodes, 1.0, time_limit=TimeLimit.starting_now(600))
    assert fresh.optimal and fresh.scale == qp.plan(theta, query, theta.nodes, 1.0,
                                                     time_limit=600).scale
    m = markov_quilt_mechanism(theta, 1.0, lipschitz=1 / n, read=steps,
                               time_limit=_passed(7.0))
    assert not m.optimal
    assert any("the time limit of 7 s was reached" in note for note in m.notes), m.notes
    assert m.b_max == n  # |N & read| / eps with N every node: the trivial quilt


def test_build_mechanism_takes_a_running_limit():
    theta = qp.markov_chain(120, FLIP, [0.5, 0.5])
    query = qp.FractionQuery([f"X{t}" for t in range(1, 121)], "1")
    mech = build_mechanism("apmqm", theta, query, theta.nodes, 1.0, time_limit=_passed(2))
    assert not mech.plan.optimal and mech.plan.scale == 1.0
    mqm = build_mechanism("mqm", theta, query, theta.nodes, 1.0, time_limit=_passed(2))
    assert mqm.details["optimal"] is False


def _chain_order_reference(theta):
    """chain_order as first written: one loop per node (the definition)."""
    nodes = theta.nodes
    if len(nodes) < 2:
        return None
    for v in nodes:
        if len(theta.parents[v]) > 1 or len(theta.children[v]) > 1:
            return None
    if sum(len(theta.parents[v]) for v in nodes) != len(nodes) - 1:
        return None
    for a, b in zip(nodes[:-1], nodes[1:], strict=True):
        if theta.parents[b] != (a,):
            return None
    return nodes


@pytest.mark.parametrize("seed", range(30))
def test_chain_order_matches_its_definition(seed):
    import random

    import numpy as np

    from quiltpriv.mechanisms.chain_quilts import chain_order
    from quiltpriv.model.network import theta_from_tables

    r = random.Random(seed)
    n = r.randint(1, 7)
    names = [f"v{k}" for k in range(n)]
    if seed % 3 == 0:  # a path, sometimes with one extra edge or one missing
        edges = [(names[k], names[k + 1]) for k in range(n - 1)]
        if n > 2 and seed % 2:
            edges.append((names[0], names[2]))
        elif edges and seed % 5 == 0:
            edges.pop(r.randrange(len(edges)))
    else:
        edges = [(names[i], names[j]) for j in range(n) for i in range(j) if r.random() < 0.5]
    states = {v: ["0", "1"] for v in names}
    rng = np.random.default_rng(seed)
    tables = {}
    for v in names:
        k = sum(1 for _, b in edges if b == v)
        tables[v] = np.moveaxis(rng.dirichlet([1.0, 1.0], size=(2,) * k), -1, 0)
    theta = theta_from_tables(edges, states, tables)
    assert chain_order(theta) == _chain_order_reference(theta)
    assert chain_order(qp.markov_chain(50, FLIP, [0.5, 0.5])) is not None


def test_hmm_past_its_limit_is_what_the_search_starts_from():
    # a limit passed before hmm_search: no model check, every node the quilt {}; exactly what
    # the search itself leaves when its limit passes at once
    import numpy as np

    from quiltpriv.mechanisms import hmm_quilts as hq

    theta = qp.hidden_markov(300, FLIP, [[0.8, 0.2], [0.2, 0.8]], [0.5, 0.5])
    weight = lambda v: 1.0 if v.startswith("X") else 0.0  # noqa: E731
    passed = TimeLimit(1.0, time.monotonic() - 2)  # began 2 s ago, 1 s long
    _, before = hq.hmm_search(theta, weight, theta.nodes, 1.0, time_limit=passed)
    _, inside = hq.hmm_search(theta, weight, theta.nodes, 1.0, time_limit=1e-12)
    for name in ("step", "observed", "left", "right", "center", "band_left", "band_right",
                 "influence", "count", "scale", "optimal", "member", "considered"):
        assert np.array_equal(getattr(before, name), getattr(inside, name)), name
    assert before.stopped and not before.optimal.any() and (before.influence == 0).all()
