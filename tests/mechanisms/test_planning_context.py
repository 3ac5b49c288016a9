"""The planner's interface for verification (quiltpriv.mechanisms.apmqm.PlanningContext).

Verification recomputes a plan's numbers through this interface only; each of its answers is
checked here against the planner's own result or a direct computation, with work shared across
attributes and without.
"""

from __future__ import annotations

import ast
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from marks import fast_sample
from reference import random_network

import quiltpriv.mechanisms.apmqm as apmqm
from quiltpriv.graph.quilts import markov_quilt
from quiltpriv.inference.engines.base import EngineSettings
from quiltpriv.inference.influence import InfluenceTooExpensive, influence_upper_bound
from quiltpriv.mechanisms.apmqm import plan, plan_node, planning_context
from quiltpriv.queries.query import LinearQuery

VERIFICATION = Path(apmqm.__file__).parents[1] / "verification.py"


def test_verification_uses_only_the_planners_public_interface():
    tree = ast.parse(VERIFICATION.read_text(encoding="utf-8"))
    imported = [(node.module, alias.name) for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module
                and node.module.startswith("quiltpriv.mechanisms.apmqm")
                for alias in node.names]
    assert imported, "verification no longer imports the planner?"
    assert all(module == "quiltpriv.mechanisms.apmqm" for module, _ in imported), imported
    assert not [name for _, name in imported if name.startswith("_")], imported
    assert {"PlanningContext", "planning_context"} <= {name for _, name in imported}


def _case(seed: int):
    net = random_network(5200 + seed, min_nodes=4, max_nodes=8)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    attrs = [str(v) for v in rng.choice(list(theta.nodes), min(3, len(theta.nodes) - 1),
                                        replace=False)]
    weights = {a: float(w) for a, w in zip(attrs, rng.uniform(0.5, 2.0, len(attrs)),
                                           strict=True)}
    return theta, LinearQuery(weights, {a: (0.0, 1.0) for a in attrs})


@pytest.mark.parametrize("seed", fast_sample(range(20), 6))
@pytest.mark.parametrize("share", [False, True])
def test_context_answers_as_the_planner_and_the_definitions_do(seed, share):
    theta, query = _case(seed)
    # shared: the index and propagation a plan of many attributes uses
    settings = EngineSettings(shared_min_sensitive=1) if share else None
    made = plan(theta, query, theta.nodes, 1.0, list_sets=False, settings=settings)
    context = planning_context(theta, query, theta.nodes, 2**20, settings=settings)
    assert context.query_attributes == frozenset(query.attributes)
    attrs = frozenset(query.attributes)
    for sp in made.sensitive:
        node = sp.sensitive
        # the stated nearby query attributes, in network order
        assert context.stated_nearby_attributes(sp) == sp.nearby_in(theta.nodes)
        # nearby query attributes of every quilt inside A (and of a quilt outside it): the
        # query attributes of markov_quilt's N
        others = [v for v in theta.nodes if v != node]
        quilts = [q for k in range(len(others) + 1)
                  for q in itertools.combinations([a for a in others if a in attrs], k)]
        quilts.append(tuple(others[:2]))
        for q in quilts:
            want = frozenset(markov_quilt(theta, node, q).nearby) & attrs
            assert context.nearby_query_attributes(node, q) == want, (node, q)
        # the influence of the plan's own quilt: what the plan states (never less than the
        # direct computation's exact value, which it equals up to its upward rounding)
        if sp.quilt:
            infl = context.influence(node, sp.quilt)
            assert infl.value == sp.influence
            direct = influence_upper_bound(theta, node, theta.sort(set(sp.quilt)))
            assert math.isclose(infl.value, direct.value, rel_tol=1e-9, abs_tol=1e-9)
        # the planner's own search: the plan's scale and optimality
        best = context.least_scale_plan(node, 1.0)
        assert best.scale == sp.scale and best.optimal == sp.optimal, node
        # (alone, without the shared propagation: the same quilt, its influence rounded
        # upwards by another bound)
        assert math.isclose(best.scale, plan_node(theta, query, node, 1.0).scale, rel_tol=1e-9)


def test_influence_refuses_a_table_above_max_table():
    theta, query = _case(3)
    node = theta.nodes[0]
    context = planning_context(theta, query, [node], 1)
    with pytest.raises(InfluenceTooExpensive):
        context.influence(node, [v for v in theta.nodes if v != node][:2])


def test_mark_verified_marks_a_copy_only():
    theta, query = _case(1)
    made = plan(theta, query, theta.nodes[:1], 1.0)
    read = apmqm.Plan.from_dict(made.to_dict())
    assert made.verified and not read.verified
    marked = apmqm.PlanningContext.mark_verified(read)
    assert marked.verified and not read.verified and marked == read
