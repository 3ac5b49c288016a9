"""Tests of exact count laws on core networks and the Wasserstein mechanism fed by them."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from pgmpy.inference import VariableElimination
from scipy.stats import binom

from models import student
from quiltpriv.errors import ModelError, ParameterError, QueryError
from quiltpriv.mechanisms.network_wasserstein import network_wasserstein
from quiltpriv.mechanisms.wasserstein import wasserstein_mechanism
from quiltpriv.model.loading import load_model
from quiltpriv.model.network import Theta, theta_from_tables
from quiltpriv.queries.network_laws import bernoulli_parameters, count_laws
from quiltpriv.queries.query import CountQuery, MeanQuery


def test_example3_table_and_w_inf():
    theta = load_model("example3")
    cl = count_laws(theta, "x1", "x2", 4)
    laws = cl.laws[0]
    # Paper, Example 3: P(F = j | phi2 = 0.8) and P(F = j | phi2 = 0.2)
    high = [0.0983, 0.3091, 0.3643, 0.1908, 0.0375]
    assert [round(float(p), 4) for p in laws["0.8"][1]] == high
    assert [round(float(p), 4) for p in laws["0.2"][1]] == high[::-1]
    # exact: phi1 = 0.44 given phi2 = 0.8, so P(F = 0) = 0.56^4 exactly
    assert laws["0.8"][1][0] == Fraction(14, 25) ** 4
    assert all(sum(law[1]) == 1 for law in laws.values())
    pair = wasserstein_mechanism(laws, 1.0, pairs=[("0.2", "0.8")])
    assert pair.sensitivity == 1.0 and pair.exact
    res = network_wasserstein(theta, CountQuery(["x1"], 4), "x2", 0.5)
    assert res.sensitivity == 1.0
    assert res.scale == 2.0  # W / eps
    # group DP would need n = 4 times more
    assert res.laws[0].attribute == "x1"


def test_mixture_matches_pgmpy_inference():
    net = student.network()
    n = 6
    cl = count_laws(load_model("student"), "sat", "gender", n)
    infer = VariableElimination(net)
    sat_values = [float(s) for s in student.STATES["sat"]]
    for g in student.STATES["gender"]:
        post = infer.query(["sat"], evidence={"gender": g}, show_progress=False)
        w = [post.get_value(sat=s) for s in student.STATES["sat"]]
        ref = sum(wk * binom.pmf(np.arange(n + 1), n, p) for wk, p in zip(w, sat_values,
                                                                          strict=True))
        got = np.array([float(p) for p in cl.laws[0][g][1]])
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)


def test_sensitive_equals_counted_attribute_and_theta_members():
    theta = load_model("student:theta")
    assert len(theta) == 2
    cl = count_laws(theta, "income", "income", 3)
    p = Fraction(1, 5)
    assert cl.laws[0]["0.2"][1] == tuple(math.comb(3, k) * p**k * (1 - p) ** (3 - k)
                                         for k in range(4))
    q = CountQuery(["sat"], 20)
    both = network_wasserstein(theta, q, ["income", "gender"], 1.0)
    singles = [network_wasserstein(Theta(theta.nodes, theta.states, theta.parents,
                                         [theta.members[k]]), q, ["income", "gender"], 1.0)
               for k in range(2)]
    assert both.sensitivity == max(r.sensitivity for r in singles)
    assert both.result.exact


def test_zero_probability_secret_is_left_out():
    theta = theta_from_tables(
        [("a", "b")], {"a": ("0.1", "0.9", "0.5"), "b": ("0.2", "0.7")},
        {"a": np.array([0.5, 0.5, 0.0]), "b": np.array([[0.9, 0.1, 0.5], [0.1, 0.9, 0.5]])})
    cl = count_laws(theta, "b", "a", 2)
    assert set(cl.laws[0]) == {"0.1", "0.9"}
    # by hand: a = 0.1 gives 0.9 Bin(2, .2) + 0.1 Bin(2, .7) = (.585, .33, .085), a = 0.9 gives
    # (.145, .41, .445); the CDFs .585/.915 and .145/.555 leave u in (.555, .585] mapped to
    # 0 and 2: W_inf = 2
    assert cl.laws[0]["0.1"][1] == (Fraction(585, 1000), Fraction(33, 100), Fraction(85, 1000))
    res = network_wasserstein(theta, "b", "a", 1.0, records=2)
    assert res.sensitivity == 2.0


def test_refusals():
    theta = load_model("student")
    with pytest.raises(QueryError, match="needs its predicate"):
        network_wasserstein(theta, CountQuery(["sat", "height"], 5), "income", 1.0)
    with pytest.raises(QueryError, match="not valid"):
        network_wasserstein(theta, CountQuery(["sat", "height"], 5, where="sat >"), "income", 1.0)
    with pytest.raises(QueryError, match="count"):
        network_wasserstein(theta, MeanQuery("sat", lower=0, upper=1), "income", 1.0)
    with pytest.raises(ModelError, match="nope"):
        network_wasserstein(theta, CountQuery(["nope"], 5), "income", 1.0)
    with pytest.raises(ParameterError):
        network_wasserstein(theta, "sat", "income", 1.0)
    bad = theta_from_tables([("a", "b")], {"a": ("lo", "hi"), "b": ("0.2", "1.5")},
                            {"a": np.array([0.5, 0.5]), "b": np.array([[0.5, 0.5], [0.5, 0.5]])})
    with pytest.raises(ModelError, match="Bernoulli"):
        bernoulli_parameters(bad, "a")
    with pytest.raises(ModelError, match="outside"):
        count_laws(bad, "b", "a", 3)


def _records_reference(theta, attrs, i, n, pred):
    """Slow reference: enumerate phi, then every n-record 0/1 dataset over attrs."""
    import itertools

    from quiltpriv.queries.network_laws import _exact_member, bernoulli_parameters

    exact = _exact_member(theta, 0)
    nodes = (i, *[a for a in attrs if a != i])
    from quiltpriv.inference.influence import joint_marginal

    joint = joint_marginal(exact, nodes, 0)
    params = {a: bernoulli_parameters(theta, a) for a in attrs}
    out = {}
    for ai, s in enumerate(theta.states[i]):
        probs = [Fraction(0)] * (n + 1)
        row = joint[ai]
        total = row.sum()
        for idx in itertools.product(*(range(len(theta.states[v])) for v in nodes[1:])):
            w = row[idx] / total
            state = dict(zip(nodes[1:], idx, strict=True))
            state[i] = ai
            phis = {a: params[a][state[a]] for a in attrs}
            for data in itertools.product((0, 1), repeat=n * len(attrs)):
                p = Fraction(1)
                k = 0
                for r in range(n):
                    x = data[r * len(attrs):(r + 1) * len(attrs)]
                    for xj, a in zip(x, attrs, strict=True):
                        p *= phis[a] if xj else 1 - phis[a]
                    k += pred(dict(zip(attrs, x, strict=True)))
                probs[k] += w * p
        out[s] = tuple(probs)
    return out


@pytest.mark.parametrize("where, pred", [
    ("x1 == 1 and x2 == 1", lambda r: r["x1"] == 1 and r["x2"] == 1),
    ("x1 == 1 or x2 == 0", lambda r: r["x1"] == 1 or r["x2"] == 0),
])
def test_multi_attribute_predicate_laws_match_record_enumeration(where, pred):
    from quiltpriv.queries.network_laws import count_laws

    theta = load_model("example3")
    cl = count_laws(theta, ["x1", "x2"], "x2", 3, where=where)
    ref = _records_reference(theta, ("x1", "x2"), "x2", 3, pred)
    assert set(cl.laws[0]) == set(ref)
    for s, law in cl.laws[0].items():
        assert law[1] == ref[s]
        assert sum(law[1]) == 1
    # A count query's predicate reads data values: its domain links them to the record states.
    with pytest.raises(QueryError, match="declares no domain"):
        network_wasserstein(theta, CountQuery(["x1", "x2"], 3, where=where), "x2", 1.0)
    query = CountQuery(["x1", "x2"], 3, where=where, domain={"x1": (0, 1), "x2": (0, 1)})
    res = network_wasserstein(theta, query, "x2", 1.0)
    assert 0 < res.sensitivity <= 3


def test_student_two_attribute_count_by_predicate():
    from quiltpriv.queries.network_laws import count_laws

    theta = load_model("student")
    cl = count_laws(theta, ["height", "sat"], "income", 2, where="height == 1 and sat == 1")
    ref = _records_reference(theta, ("height", "sat"), "income", 2,
                             lambda r: r["height"] == 1 and r["sat"] == 1)
    for s, law in cl.laws[0].items():
        assert law[1] == ref[s]


def test_categorical_attribute_equals_its_bernoulli_projection():
    import numpy as np

    from quiltpriv.model.network import theta_from_tables
    from quiltpriv.queries.network_laws import category_laws, count_laws

    tables = {"s": np.array([0.4, 0.6]), "c": np.array([[0.7, 0.2], [0.3, 0.8]])}
    cat = theta_from_tables([("s", "c")], {"s": ["0.3", "0.6"],
                                          "c": ["0.2/0.3/0.5", "(0.5, 0.3, 0.2)"]}, tables)
    assert category_laws(cat, "c")[0] == (Fraction(1, 5), Fraction(3, 10), Fraction(1, 2))
    # "c == 2" on the categorical model is "c == 1" on the Bernoulli model with p = P(c = 2).
    ber = theta_from_tables([("s", "c")], {"s": ["0.3", "0.6"], "c": ["0.5", "0.2"]}, tables)
    got = count_laws(cat, ["c"], "s", 4, where="c == 2")
    ref = count_laws(ber, "c", "s", 4)
    assert got.laws == ref.laws
    # Two attributes, one categorical: against the record-level enumeration.
    both = count_laws(cat, ["c", "s"], "s", 2, where="c >= 1 and s == 1")
    for state, law in both.laws[0].items():
        sp = Fraction(state)
        # phi_c is fixed for the whole dataset: a mixture over the states of phi_c (weights
        # P(phi_c | phi_s), the column of the CPD) of Binomial(2, P(X_c >= 1 | phi_c) * phi_s).
        col = {"0.3": (Fraction(7, 10), Fraction(3, 10)), "0.6": (Fraction(2, 10), Fraction(8, 10))}
        expected = [Fraction(0)] * 3
        for w, ge1 in zip(col[state], (Fraction(4, 5), Fraction(1, 2)), strict=True):
            p = ge1 * sp
            for k in range(3):
                expected[k] += w * math.comb(2, k) * p**k * (1 - p) ** (2 - k)
        assert law[1] == tuple(expected)
    with pytest.raises(QueryError, match="needs its predicate"):
        count_laws(cat, "c", "s", 4)
    bad = theta_from_tables([("s", "c")], {"s": ["0.3", "0.6"], "c": ["0.2/0.3", "0.5/0.5"]},
                            tables)
    with pytest.raises(ModelError, match="probability vector"):
        count_laws(bad, ["c"], "s", 2, where="c == 1")
