"""Plans over many sensitive attributes: shared inference and unlisted quilt sets.

A plan shares its graph walks and one batched propagation over its sensitive attributes
(``_Shared``); it must choose what planning each attribute alone chooses, with influences that
differ only by their (upward) rounding. A plan too large to list ``N`` and ``R`` stores the
query attributes in ``N`` instead; it must verify, round-trip and refuse tampering as a listed
plan does.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from marks import fast_sample
from reference import random_network

import quiltpriv.mechanisms.apmqm.planner as apmqm_planner
import quiltpriv.mechanisms.apmqm.shared as apmqm_shared
from quiltpriv.errors import ParameterError, PlanError
from quiltpriv.inference.engines.base import EngineSettings
from quiltpriv.mechanisms.apmqm import Plan, plan, plan_node
from quiltpriv.mechanisms.verification import check_plan
from quiltpriv.queries.query import CountQuery, HistogramQuery, LinearQuery
from quiltpriv.utils.memory import BYTES_PER_TABLE_ENTRY

#: The settings of a plan that shares its work however few its sensitive attributes.
SHARE = EngineSettings(shared_min_sensitive=1)
#: ... and always runs the shared propagation (the work ratio never refuses it).
PROPAGATE = EngineSettings(shared_min_sensitive=1, shared_work_ratio=10**9)
#: ... and never by the work ratio (only where eliminating per attribute is priced higher).
PRICE = EngineSettings(shared_min_sensitive=1, shared_work_ratio=0)


def _query(net, seed: int, kind: str):
    rng = np.random.default_rng(seed + 7)
    k = min(len(net.nodes), int(rng.integers(1, 4)))
    attrs = [str(v) for v in rng.choice(list(net.nodes), k, replace=False)]
    if kind == "count":
        return CountQuery(attrs, 100)
    if kind == "histogram":
        return HistogramQuery(attrs, 100, categories={a: (0, 1) for a in attrs})
    weights = {a: float(w) for a, w in zip(attrs, rng.uniform(0.5, 2.0, k), strict=True)}
    return LinearQuery(weights, {a: (0.0, 1.0) for a in attrs})


@pytest.mark.parametrize("seed", fast_sample(range(40), 10))
@pytest.mark.parametrize("kind", ["count", "histogram", "linear"])
def test_shared_plan_chooses_what_each_attribute_alone_chooses(monkeypatch, seed, kind):
    net = random_network(3000 + seed, min_nodes=3, max_nodes=9)
    theta = net.to_theta()
    query = _query(net, seed, kind)
    calls = []
    real = apmqm_shared.joint_influence
    monkeypatch.setattr(apmqm_shared, "joint_influence", lambda *a: calls.append(a) or real(*a))
    shared = plan(theta, query, theta.nodes, 1.0, settings=PROPAGATE)
    # every non-empty candidate's influence came from the shared propagation
    assert calls or all(not sp.quilt for sp in shared.sensitive)
    for sp in shared.sensitive:
        alone = plan_node(theta, query, sp.sensitive, 1.0)
        assert sp.sensitivity == alone.sensitivity, sp.sensitive
        assert sp.optimal == alone.optimal
        if math.isinf(alone.influence):
            assert math.isinf(sp.influence)
        else:
            assert sp.influence == pytest.approx(alone.influence, rel=1e-6, abs=1e-6)
        assert sp.scale == pytest.approx(alone.scale, rel=1e-6, abs=0)
        if sp.quilt != alone.quilt:  # only a tie of scales may choose another quilt
            assert sp.scale == pytest.approx(alone.scale, rel=1e-9)
    # verification shares the same work, so it recomputes the shared plan's own numbers
    check = check_plan(Plan.from_json(shared.to_json()), theta, query, settings=PROPAGATE)
    assert check.ok, check.failure


def _listed_and_unlisted(seed: int):
    net = random_network(4000 + seed, min_nodes=4, max_nodes=9)
    theta = net.to_theta()
    query = _query(net, seed, "count")
    listed = plan(theta, query, theta.nodes, 1.0)
    unlisted = plan(theta, query, theta.nodes, 1.0, list_sets=False)
    return theta, query, listed, unlisted


@pytest.mark.parametrize("seed", range(12))
def test_unlisted_plan_keeps_what_the_noise_depends_on(seed):
    theta, query, listed, unlisted = _listed_and_unlisted(seed)
    assert unlisted.scale == listed.scale and unlisted.optimal == listed.optimal
    assert unlisted.query_fingerprint == listed.query_fingerprint
    for a, b in zip(listed.sensitive, unlisted.sensitive, strict=True):
        assert b.nearby is None and b.remote is None and not b.sets_listed
        assert a.nearby_attributes is None and a.sets_listed
        assert b.nearby_attributes == theta.sort(set(a.nearby) & set(query.attributes))
        assert b.nearby_in(query.attributes) == a.nearby_in(query.attributes)
        assert (a.quilt, a.influence, a.sensitivity, a.scale) == (
            b.quilt, b.influence, b.sensitivity, b.scale)
        # N and R on demand: the listed ones (the trivial quilt comes back as Q = {}'s own)
        part = b.partition(theta)
        if a.quilt or a.remote:
            assert (part.nearby, part.remote) == (a.nearby, a.remote)
        assert set(part.nearby) & set(query.attributes) <= set(b.nearby_attributes)
    d = unlisted.to_dict()
    entry = next(iter(d["sensitive"].values()))
    assert entry["nearby"] is None and entry["remote"] is None
    assert isinstance(entry["nearby_attributes"], list)
    assert "(not listed)" in unlisted.explain()
    assert "R (not listed in a plan this large)" in unlisted.explain() or all(
        sp.quilt == () and sp.nearby_attributes == theta.sort(set(query.attributes))
        for sp in unlisted.sensitive)


@pytest.mark.parametrize("seed", range(8))
def test_unlisted_plan_round_trips_verifies_and_refuses_edits(seed):
    theta, query, _, unlisted = _listed_and_unlisted(seed)
    back = Plan.from_json(unlisted.to_json())
    assert not back.verified and back.to_dict() == unlisted.to_dict()
    assert check_plan(back, theta, query).ok
    for sp in unlisted.sensitive:
        if not sp.nearby_attributes:
            continue
        d = json.loads(unlisted.to_json())
        # hiding a nearby attribute would hide a sensitivity
        d["sensitive"][sp.sensitive]["nearby_attributes"] = list(sp.nearby_attributes[1:])
        result = check_plan(Plan.from_dict(d), theta, query)
        assert not result.ok
        assert ("leaves out" in result.failure or "sensitivity" in result.failure
                or "Delta" in result.failure), result.failure
        break


def test_propagation_only_where_it_costs_less(monkeypatch):
    """The shared propagation is skipped when its work exceeds
    ``EngineSettings.shared_work_ratio`` times the sensitive attributes times the nodes (and
    eliminating per attribute is priced lower); the plan is then the per-attribute one,
    exactly."""
    net = random_network(3007, min_nodes=6, max_nodes=6)
    theta = net.to_theta()
    query = _query(net, 7, "count")
    calls = []
    real = apmqm_shared.joint_influence
    monkeypatch.setattr(apmqm_shared, "joint_influence", lambda *a: calls.append(a) or real(*a))
    skipped = plan(theta, query, theta.nodes, 1.0, settings=PRICE)
    assert not calls
    for sp in skipped.sensitive:
        alone = plan_node(theta, query, sp.sensitive, 1.0)
        assert (sp.quilt, sp.influence, sp.scale) == (alone.quilt, alone.influence, alone.scale)
    shared = plan(theta, query, theta.nodes, 1.0, settings=PROPAGATE)
    assert calls or all(not sp.quilt for sp in shared.sensitive)


def test_list_sets_rule_and_old_format():
    net = random_network(4100, min_nodes=5, max_nodes=5)
    theta = net.to_theta()
    query = _query(net, 1, "count")
    listed = plan(theta, query, theta.nodes, 1.0)
    assert all(sp.sets_listed for sp in listed.sensitive)
    old = apmqm_planner.LIST_SETS_LIMIT
    try:
        apmqm_planner.LIST_SETS_LIMIT = len(theta.nodes) * len(theta.nodes) - 1
        assert not any(sp.sets_listed for sp in plan(theta, query, theta.nodes, 1.0).sensitive)
    finally:
        apmqm_planner.LIST_SETS_LIMIT = old
    with pytest.raises(ParameterError):
        plan(theta, query, theta.nodes, 1.0, list_sets="yes")
    # a plan of the previous format (always listed, no nearby_attributes) is still read
    d = listed.to_dict()
    d["format"] = "quiltpriv-plan/1"
    del d["interrupted"]  # written since quiltpriv-plan/4, as each attribute's status
    for entry in d["sensitive"].values():
        del entry["nearby_attributes"], entry["status"]
    back = Plan.from_dict(d)
    assert check_plan(back, theta, query).ok
    # in the new format, listing N and nearby_attributes both is refused (one truth only)
    d = listed.to_dict()
    entry = next(iter(d["sensitive"].values()))
    entry["nearby_attributes"] = []
    with pytest.raises(PlanError, match="nearby_attributes must be null"):
        Plan.from_dict(d)
    d = listed.to_dict()
    entry = next(iter(d["sensitive"].values()))
    entry["nearby"] = None
    with pytest.raises(PlanError):
        Plan.from_dict(d)


def test_a_shared_plan_runs_in_one_process(monkeypatch):
    net = random_network(4200, min_nodes=6, max_nodes=6)
    theta = net.to_theta()
    query = _query(net, 3, "count")
    monkeypatch.setattr(apmqm_planner, "_plan_parallel", None)  # would fail if called
    p = plan(theta, query, theta.nodes, 1.0, n_jobs=2, settings=SHARE)
    assert any("n_jobs=2 not used" in n for n in p.notes)
    serial = plan(theta, query, theta.nodes, 1.0, settings=SHARE)
    assert p.to_dict()["sensitive"] == serial.to_dict()["sensitive"]


def _wide(seed: int):
    """A network with a query over 7 of its attributes (above the former limit of 6)."""
    net = random_network(5000 + seed, n_nodes=10, max_card=3, edge_prob=0.3)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    attrs = [str(v) for v in rng.choice(list(net.nodes), 7, replace=False)]
    return theta, CountQuery(attrs, 100)


@pytest.mark.parametrize("seed", fast_sample(range(12), 4))
def test_a_wide_query_shares_where_eliminating_per_attribute_is_priced_higher(monkeypatch,
                                                                               seed):
    """Where the work ratio refuses the propagation, the eliminations per attribute are priced
    and the propagation runs when its work is at most theirs: the plan then matches planning
    each attribute alone and verifies. Priced one entry less than the propagation's work, the
    per-attribute path is kept."""
    theta, query = _wide(seed)
    need = apmqm_shared.propagation_work(theta, query.attributes)
    priced = []
    real_price = apmqm_shared._per_node_work
    monkeypatch.setattr(apmqm_shared, "_per_node_work",
                        lambda *a: priced.append(real_price(*a)) or priced[-1])
    ran = []
    real = apmqm_shared.attribute_joints
    monkeypatch.setattr(apmqm_shared, "attribute_joints",
                        lambda *a, **k: ran.append(real(*a, **k) is not None) or real(*a, **k))
    plan(theta, query, theta.nodes, 1.0, settings=PRICE)
    # on networks this small the eliminations are priced far below the propagation
    assert priced and ran and set(ran) == {need <= priced[0]}  # one run per member
    for price, used in ((need - 1, False), (need, True)):
        monkeypatch.setattr(apmqm_shared, "_per_node_work", lambda *a, p=price: p)
        ran.clear()
        shared = plan(theta, query, theta.nodes, 1.0, settings=PRICE)
        assert ran and set(ran) == {used}, price
    for sp in shared.sensitive:  # the propagated plan
        alone = plan_node(theta, query, sp.sensitive, 1.0)
        assert sp.scale == pytest.approx(alone.scale, rel=1e-6, abs=0)
    # verification prices as the planner did, so it recomputes the plan's own numbers
    ran.clear()
    check = check_plan(Plan.from_json(shared.to_json()), theta, query, settings=PRICE)
    assert check.ok, check.failure
    assert ran and set(ran) == {True}


@pytest.mark.parametrize("seed", fast_sample(range(12), 4))
def test_a_split_propagation_plans_what_the_whole_one_plans(monkeypatch, seed):
    """With a memory budget that makes the shared propagation split the query's joint states
    into chunks, the plan chooses the same quilts, with the same scales, as with the whole
    propagation, and verifies."""
    from quiltpriv.inference.attribute_joints import _split, _visit
    from quiltpriv.inference.junction_tree import cardinalities, fill_tree_structure

    theta, query = _wide(seed)
    structure, cards = fill_tree_structure(theta), cardinalities(theta)
    idx = tuple(sorted(theta.index[a] for a in query.attributes))
    batch = math.prod(cards[a] for a in idx)
    whole = _split(structure, idx, cards, 2**40)
    assert whole is not None
    result = sum(cards) * batch
    budget = result + (whole[1].held + _visit(structure, cards, batch)) // 3
    split = _split(structure, idx, cards, budget)
    assert split is not None and math.prod(split[0]) < batch
    ran = []
    real = apmqm_shared.attribute_joints

    def budgeted(*a, **k):
        found = real(*a, **k)
        ran.append((k["max_held"], found is not None))
        return found

    reference = plan(theta, query, theta.nodes, 1.0, settings=PROPAGATE)
    monkeypatch.setattr(apmqm_shared, "attribute_joints", budgeted)
    # each member's propagation holds what the members before it left of the budget
    total = budget + (len(theta.members) - 1) * result
    budgeted_settings = EngineSettings(shared_min_sensitive=1, shared_work_ratio=10**9,
                                       max_propagation_held=total)
    got = plan(theta, query, theta.nodes, 1.0, settings=budgeted_settings)
    assert ran and set(ran) == {(budget, True)}
    for a, b in zip(got.sensitive, reference.sensitive, strict=True):
        assert (a.sensitive, a.quilt) == (b.sensitive, b.quilt)
        assert a.scale == pytest.approx(b.scale, rel=1e-12, abs=0)
    check = check_plan(Plan.from_json(got.to_json()), theta, query)
    assert check.ok, check.failure
    # the same budget given as memory (bytes at 32 an entry) holds the propagation as well
    ran.clear()
    by_memory = plan(theta, query, theta.nodes, 1.0, settings=PROPAGATE,
                     max_memory=total * BYTES_PER_TABLE_ENTRY)
    assert ran and set(ran) == {(budget, True)}
    assert [sp.scale for sp in by_memory.sensitive] == [sp.scale for sp in got.sensitive]


@pytest.mark.parametrize("seed", fast_sample(range(12), 4))
def test_a_small_memory_budget_lowers_the_propagations_cap(monkeypatch, seed):
    """The shared propagation holds at most what ``max_memory`` holds (at 32 bytes an entry),
    not a fixed 2**27 entries: below what even a split propagation needs, it is not run, and
    each influence is computed on its own, exactly as planning each attribute alone (never a
    refusal where the eliminations fit, never less noise)."""
    from quiltpriv.inference.attribute_joints import _split, result_entries
    from quiltpriv.inference.junction_tree import cardinalities, fill_tree_structure

    theta, query = _wide(seed)
    structure, cards = fill_tree_structure(theta), cardinalities(theta)
    idx = tuple(sorted(theta.index[a] for a in query.attributes))
    result = result_entries(theta, query.attributes)
    least = result
    while _split(structure, idx, cards, least) is None:  # the least budget a split fits
        least += 1
    # each member's propagation holds what the members before it left of the budget
    least_total = least + (len(theta.members) - 1) * result
    ran = []
    real = apmqm_shared.attribute_joints

    def recorded(*a, **k):
        found = real(*a, **k)
        ran.append((k["max_held"], found is not None))
        return found

    monkeypatch.setattr(apmqm_shared, "attribute_joints", recorded)
    fits = plan(theta, query, theta.nodes, 1.0, settings=PROPAGATE,
                max_memory=least_total * BYTES_PER_TABLE_ENTRY)
    assert ran == [(least, True)] * len(theta.members)
    ran.clear()
    small = plan(theta, query, theta.nodes, 1.0, settings=PROPAGATE,
                 max_memory=(least_total - 1) * BYTES_PER_TABLE_ENTRY)
    assert ran == [(least - 1, False)]  # refused by the cap: no further member is tried
    assert not small.interrupted
    for a, b in zip(small.sensitive, fits.sensitive, strict=True):
        alone = plan_node(theta, query, a.sensitive, 1.0)
        assert (a.quilt, a.influence, a.sensitivity, a.scale) == (
            alone.quilt, alone.influence, alone.sensitivity, alone.scale)
        assert (a.sensitive, a.sensitivity) == (b.sensitive, b.sensitivity)
        assert b.scale == pytest.approx(a.scale, rel=1e-6, abs=0)
    assert small.scale == pytest.approx(fits.scale, rel=1e-6, abs=0)
    check = check_plan(Plan.from_json(small.to_json()), theta, query, settings=PROPAGATE,
                       max_memory=(least_total - 1) * BYTES_PER_TABLE_ENTRY)
    assert check.ok, check.failure
