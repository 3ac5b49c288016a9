"""What a plan costs per attribute does not grow with the query (long time series).

A query over every step of a T-step series has T attributes, and a plan of every step has T
sensitive attributes: the query's fingerprint, a sensitivity of a small column set and an
attribute the deadline leaves unsearched must not cost O(T) each (O(T^2) in all). The values
are those of the previous, quadratic, code (references below, kept verbatim).
"""

from __future__ import annotations

import hashlib
import random
from fractions import Fraction

import numpy as np
import pytest

import quiltpriv.mechanisms.apmqm.planner as planner
from quiltpriv.mechanisms.apmqm import canonical_json, plan, query_fingerprint
from quiltpriv.mechanisms.apmqm.fingerprints import _QUERY_FINGERPRINT_FORMAT
from quiltpriv.model.network import theta_from_tables
from quiltpriv.queries.query import CountQuery, LinearQuery
from quiltpriv.utils.rounding import round_up


def _fingerprint_reference(query, column_sets) -> str:
    """The fingerprint as it was computed before (O(|A|) per set)."""
    attrs = tuple(query.attributes)
    pos = {a: k for k, a in enumerate(attrs)}
    sets = {tuple(a for a in attrs if a in set(b)) for b in column_sets} | {attrs}
    table = [[list(b), float(query.sensitivity(b))]
             for b in sorted(sets, key=lambda b: (len(b), [pos[a] for a in b]))]
    doc = {"format": _QUERY_FINGERPRINT_FORMAT, "query": query.to_dict(), "sensitivities": table}
    return hashlib.sha256(canonical_json(doc).encode("ascii")).hexdigest()


def _linear_sensitivity_reference(query: LinearQuery, columns) -> float:
    # Delta_B exactly (rationals of the floats the query holds), rounded up: the query's rule
    cols = set(columns)
    return round_up(sum((abs(Fraction(w)) * (Fraction(query.bounds[a][1])
                                             - Fraction(query.bounds[a][0]))
                         for a, w in query.weights.items() if a in cols), Fraction(0)))


@pytest.mark.parametrize("seed", range(30))
def test_fingerprint_and_sensitivity_equal_the_quadratic_reference(seed):
    rng = random.Random(seed)
    names = [f"a{i}" for i in range(60)]
    attrs = rng.sample(names, rng.randint(1, 30))
    weights = {a: rng.choice([0.1, 1 / 3, -2.5, 1e-3, 7.0, 1 / 7]) for a in attrs}
    linear = LinearQuery(weights, {a: (rng.choice([0, -1.5]), rng.choice([1, 2.5]))
                                   for a in attrs})
    count = CountQuery(attrs, records=rng.randint(1, 99))
    sets = [rng.sample(names, rng.randint(0, 40)) for _ in range(rng.randint(0, 6))]
    sets.append(list(reversed(attrs)))
    for q in (linear, count):
        assert query_fingerprint(q, sets) == _fingerprint_reference(q, sets)
    for b in sets:
        # bit for bit: the same float sum in the same order
        assert linear.sensitivity(b) == _linear_sensitivity_reference(linear, b)
        assert count.sensitivity(b) == (float(count.records) if set(b) & set(attrs) else 0.0)


def _star(n: int):
    """A hub with n - 1 children (not a chain: the general planner runs)."""
    names = [f"v{k}" for k in range(n)]
    a = np.array([[0.8, 0.3], [0.2, 0.7]])
    cpds = {names[0]: np.array([0.5, 0.5]), **{v: a for v in names[1:]}}
    return theta_from_tables([(names[0], v) for v in names[1:]], {v: ("0", "1") for v in names},
                             cpds)


class _CountingLinear(LinearQuery):
    """A linear query that counts the column names its sensitivity is asked about."""

    def sensitivity(self, columns):
        cols = list(columns)
        self.__dict__["asked"] = self.__dict__.get("asked", 0) + len(cols)
        return super().sensitivity(cols)


def test_attributes_after_the_deadline_cost_o1_each():
    theta = _star(600)
    query = _CountingLinear({v: 1 / 600 for v in theta.nodes}, {v: (0, 1) for v in theta.nodes})
    p = plan(theta, query, theta.nodes, 1.0, time_limit=1e-9)
    assert not p.optimal
    assert all(sp.quilt == () and not sp.optimal for sp in p.sensitive)
    # Delta_A once for the trivial quilt, once for the fingerprint and once per distinct set:
    # a few times |A|, not |A| per attribute (600 x 600)
    assert query.__dict__["asked"] <= 4 * 600


def test_single_attribute_plan_of_a_long_network_lists_nothing(monkeypatch):
    theta = _star(40)
    query = CountQuery(["v1", "v2"], 10)
    assert plan(theta, query, ["v3"], 1.0).sensitive[0].sets_listed
    monkeypatch.setattr(planner, "LIST_SETS_MAX_NODES", 39)
    sp = plan(theta, query, ["v3"], 1.0).sensitive[0]
    assert not sp.sets_listed and sp.nearby_attributes is not None
    assert plan(theta, query, ["v3"], 1.0, list_sets=True).sensitive[0].sets_listed
