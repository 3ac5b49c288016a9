"""Listed nearby and remote sets (issue 31): the shared walks list what one walk per attribute
listed, and format quiltpriv-plan/5 writes each distinct set once and reads back the same
plan."""

from __future__ import annotations

import json

import numpy as np
import pytest
from reference import random_network

import quiltpriv.graph.shared_separation as shared_separation
import quiltpriv.mechanisms.apmqm.plan_types as plan_types
from quiltpriv.errors import PlanError
from quiltpriv.graph.quilts import markov_quilt, trivial_quilt
from quiltpriv.mechanisms.apmqm import PLAN_FORMAT, PLAN_FORMAT_SETS, Plan, plan
from quiltpriv.mechanisms.verification import check_plan
from quiltpriv.model.network import theta_from_tables
from quiltpriv.queries.query import CountQuery


def _local_network(seed: int, n: int):
    """A random local DAG: each node has 0-2 parents among the 5 nodes before it."""
    rng = np.random.default_rng(seed)
    names = [f"v{k:04d}" for k in range(n)]
    edges, cpds = [], {}
    for k, v in enumerate(names):
        ps = sorted({names[k - 1 - int(j)] for j in rng.integers(0, min(k, 5) or 1,
                                                                   size=int(rng.integers(0, 3)))
                     if k})
        edges += [(p, v) for p in ps]
        cpds[v] = rng.dirichlet([2, 2], size=2 ** len(ps)).T.reshape((2,) + (2,) * len(ps))
    return theta_from_tables(edges, {v: [0.2, 0.8] for v in names}, cpds)


def _old_listing(monkeypatch, *args, **kwargs):
    """The plan as listed before the shared walks: one walk per attribute (markov_quilt)."""
    with monkeypatch.context() as m:
        m.setattr(shared_separation, "SHARED_SEPARATION_MAX_NODES", 0)
        return plan(*args, **kwargs)


@pytest.mark.parametrize("seed", range(3))
def test_shared_walks_list_what_one_walk_per_attribute_listed(monkeypatch, seed):
    # 300 nodes, every one sensitive: the plan shares its search (QuiltIndex) and lists sets
    theta = _local_network(seed, 300)
    rng = np.random.default_rng(seed)
    attrs = [theta.nodes[int(k)] for k in rng.choice(300, 3, replace=False)]
    query = CountQuery(attrs, 100)
    new = plan(theta, query, theta.nodes, 1.0)
    old = _old_listing(monkeypatch, theta, query, theta.nodes, 1.0)
    assert all(sp.sets_listed for sp in new.sensitive)
    assert new.sensitive == old.sensitive
    assert len({sp.quilt for sp in new.sensitive}) < 300  # quilts are shared
    for sp in new.sensitive[::7]:  # and each partition is markov_quilt's (or the trivial one)
        want = markov_quilt(theta, sp.sensitive, sp.quilt)
        if not sp.quilt and (sp.nearby, sp.remote) != (want.nearby, want.remote):
            want = trivial_quilt(theta, sp.sensitive)
        assert (sp.nearby, sp.remote) == (want.nearby, want.remote)


@pytest.mark.parametrize("seed", range(12))
def test_shared_walks_on_small_random_networks(monkeypatch, seed):
    # searches alone (few sensitive attributes), counts over 1-3 attributes
    net = random_network(8800 + seed, min_nodes=3, max_nodes=12)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    attrs = [str(v) for v in rng.choice(list(theta.nodes), min(3, len(theta.nodes)),
                                        replace=False)]
    query = CountQuery(attrs[: 1 + seed % 3], 50)
    new = plan(theta, query, theta.nodes, 1.0)
    assert new.sensitive == _old_listing(monkeypatch, theta, query, theta.nodes, 1.0).sensitive


def test_format_5_writes_each_set_once_and_reads_back_the_plan(monkeypatch):
    theta = _local_network(11, 120)
    query = CountQuery([theta.nodes[30], theta.nodes[60], theta.nodes[90]], 100)
    p = plan(theta, query, theta.nodes, 1.0)
    inline = p.to_dict()
    assert inline["format"] == PLAN_FORMAT and "sets" not in inline  # small: as before
    monkeypatch.setattr(plan_types, "INLINE_SETS_LIMIT", 1000)
    d = p.to_dict()
    assert d["format"] == PLAN_FORMAT_SETS == "quiltpriv-plan/5"
    distinct = {sp.nearby for sp in p.sensitive} | {sp.remote for sp in p.sensitive}
    assert sorted(map(tuple, d["sets"])) == sorted(distinct)
    for sp in p.sensitive:
        e = d["sensitive"][sp.sensitive]
        assert tuple(d["sets"][e["nearby"]]) == sp.nearby
        assert tuple(d["sets"][e["remote"]]) == sp.remote
    back = Plan.from_json(p.to_json())
    assert not back.verified and back.sensitive == p.sensitive
    assert back.to_dict() == d
    assert check_plan(back, theta, query).ok
    # the same plan written inline reads back to the same plan
    assert Plan.from_dict(inline).sensitive == back.sensitive
    # an edited set is caught by the verifier as in format /2: a nearby node moved to R
    sp = next(sp for sp in p.sensitive if len(sp.nearby) > 1)
    moved = next(v for v in sp.nearby if v != sp.sensitive)
    edited = json.loads(p.to_json())
    e = edited["sensitive"][sp.sensitive]
    edited["sets"] += [[v for v in sp.nearby if v != moved],
                       list(theta.sort({*sp.remote, moved}))]
    e["nearby"], e["remote"] = len(edited["sets"]) - 2, len(edited["sets"]) - 1
    result = check_plan(Plan.from_dict(edited), theta, query)
    assert not result.ok and "does not d-separate" in result.failure, result.failure


@pytest.mark.parametrize(("edit", "match"), [
    (lambda d: d.pop("sets"), "has no 'sets'"),
    (lambda d: d.update(sets={}), "sets"),
    (lambda d: d.update(sets=[["v0000", "v0000"]]), "names a node twice"),
    (lambda d: d.update(sets=[[1]]), r"sets\[0\]"),
    (lambda d: next(iter(d["sensitive"].values())).update(nearby=10**6), "index into 'sets'"),
    (lambda d: next(iter(d["sensitive"].values())).update(nearby=-1), "index into 'sets'"),
    (lambda d: next(iter(d["sensitive"].values())).update(remote=True), "index into 'sets'"),
    (lambda d: next(iter(d["sensitive"].values())).update(remote=["v0001"]), "index"),
])
def test_format_5_is_parsed_strictly(monkeypatch, edit, match):
    theta = _local_network(3, 40)
    query = CountQuery([theta.nodes[10], theta.nodes[20]], 100)
    monkeypatch.setattr(plan_types, "INLINE_SETS_LIMIT", 10)
    d = json.loads(plan(theta, query, theta.nodes, 1.0).to_json())
    edit(d)
    with pytest.raises(PlanError, match=match):
        Plan.from_dict(d)


def test_format_4_has_no_sets_key():
    theta = _local_network(5, 20)
    query = CountQuery([theta.nodes[5]], 100)
    d = plan(theta, query, theta.nodes, 1.0).to_dict()
    d["sets"] = []
    with pytest.raises(PlanError, match="unknown field"):
        Plan.from_dict(d)


def test_explanations_count_a_large_remote_set_they_do_not_name():
    from quiltpriv.mechanisms.apmqm.node_plan import EXPLAINED_REMOTE_NAMES

    theta = _local_network(2, 200)
    query = CountQuery([theta.nodes[50], theta.nodes[100], theta.nodes[150]], 100)
    p = plan(theta, query, theta.nodes, 1.0)
    seen = set()
    for sp in p.sensitive:
        if not sp.quilt and not sp.remote:
            continue  # the trivial quilt's own text
        if len(sp.remote) > EXPLAINED_REMOTE_NAMES:
            assert f"R ({len(sp.remote)} nodes, listed in remote)" in sp.explanation
            seen.add("counted")
        elif sp.remote:
            assert "R = {" + ", ".join(sp.remote) + "}" in sp.explanation
            seen.add("named")
    assert "counted" in seen
