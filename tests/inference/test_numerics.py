"""Influence numerics at every magnitude: no path may return less than the exact value.

Every inference path (compiled kernel, pure-Python bucket elimination, variable elimination,
junction tree) is compared with Definition 8 computed in exact rational arithmetic on the full
joint of the *stored* CPDs (``Fraction`` of each float64, so the reference and quiltpriv read
the same model), with the log taken to 60 digits by :mod:`decimal`. CPD entries range from
1e-320 (subnormal) to 1 - 1e-16, chains are long enough for products to underflow, and priors
of the sensitive attribute are tiny. Zero under-estimates are allowed; over-estimates must stay
within the documented rounding margin.
"""

from __future__ import annotations

import itertools
import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from marks import fast_sample

import quiltpriv as qp
import quiltpriv.inference.influence as infl
from quiltpriv.errors import ModelError
from quiltpriv.inference import compiled, underflow
from quiltpriv.inference.engines import cutset
from quiltpriv.inference.engines import exact as exact_engine
from quiltpriv.inference.engines import kernel as kernel_engine

PATHS = ["kernel", "python", "elimination", "junction_tree", "exact"]

#: Counted in the run's summary (tests/conftest.py), like the hostile-input suites.
TRIED: dict[str, int] = {"exact comparisons": 0, "refused files": 0}


@pytest.fixture(params=PATHS)
def path(request):
    """Run a test once per engine (the kernel only when it is built)."""
    if request.param == "kernel" and compiled._KERNEL is None:
        pytest.skip("compiled kernel not built")
    return request.param


# -- exact reference ------------------------------------------------------------------------


def exact_log(r: Fraction) -> Decimal:
    """``log(r)`` to 60 significant digits."""
    with localcontext() as ctx:
        ctx.prec = 60
        return Decimal(r.numerator).ln() - Decimal(r.denominator).ln()


def exact_influence(theta: qp.Theta, node: str, quilt: list[str]) -> Decimal | None:
    """Definition 8 in exact rationals on the full joint; ``None`` for +infinity."""
    best: Fraction = Fraction(1)
    for member in theta.members:
        nodes = theta.nodes
        tables = {v: member[v].table for v in nodes}
        joint: dict[tuple, Fraction] = {}
        for states in itertools.product(*(range(theta.cardinality[v]) for v in nodes)):
            assign = dict(zip(nodes, states, strict=True))
            p = Fraction(1)
            for v in nodes:
                idx = (assign[v], *(assign[u] for u in theta.parents[v]))
                x = float(tables[v][idx])
                if x == 0:
                    p = Fraction(0)
                    break
                p *= Fraction(x)
            if p:
                key = (assign[node], *(assign[u] for u in quilt))
                joint[key] = joint.get(key, Fraction(0)) + p
        prior: dict[int, Fraction] = {}
        for (a, *_), p in joint.items():
            prior[a] = prior.get(a, Fraction(0)) + p
        cols = {k[1:] for k in joint}
        for q in cols:
            conds = [joint.get((a, *q), Fraction(0)) / prior[a] for a in prior]
            hi, lo = max(conds), min(conds)
            if hi > 0 and lo == 0:
                return None
            if hi > 0 and hi / lo > best:
                best = hi / lo
    return exact_log(best)


def check_not_below(theta: qp.Theta, node: str, quilt: list[str], engine: str) -> None:
    exact = exact_influence(theta, node, quilt)
    got = qp.max_influence(theta, node, quilt, engine=engine).value
    TRIED["exact comparisons"] += 1
    if exact is None:
        assert got == math.inf, (node, quilt, got)
        return
    assert math.isfinite(got), (node, quilt, exact)
    assert Decimal(got) >= exact, (node, quilt, engine, got, exact)
    # ... and not absurdly above it (the margin is 1e-10 and a proven rounding bound)
    assert Decimal(got) <= exact * Decimal(1 + 1e-9) + Decimal(1e-9), (got, exact)


# -- the red team's examples ------------------------------------------------------------------


def and_network(p1: float, p2: float) -> qp.Theta:
    """i -> Q1, i -> Q2, X = Q1 AND Q2, with P(Q = 1 | i) = p1 or p2."""
    states = {"i": ["0.1", "0.2"], "Q1": ["0", "1"], "Q2": ["0", "1"], "X": ["0", "1"]}
    col = [[1 - p1, 1 - p2], [p1, p2]]
    cpds = {"i": [0.5, 0.5], "Q1": col, "Q2": col,
            "X": [[[1, 1], [1, 0]], [[0, 0], [0, 1]]]}
    return qp.theta_from_tables([("i", "Q1"), ("i", "Q2"), ("Q1", "X"), ("Q2", "X")],
                                states, cpds)


def test_underflowing_joint_state_is_not_skipped(path):
    theta = and_network(1e-300, 2e-300)
    e = qp.max_influence(theta, "i", ["X"], engine=path)
    assert e.value >= math.log(4)
    assert e.value == pytest.approx(math.log(4), rel=1e-9)
    assert e.arithmetic == "exact"
    check_not_below(theta, "i", ["X"], path)


def _tiny_chain() -> qp.Theta:
    """i -> A -> B: P(B = 1 | i) = 1e-400 or 1e-390, below float64's range, so e = log 1e10."""
    states = {"i": ["0.1", "0.2"], "A": ["0", "1"], "B": ["0", "1"]}
    cpds = {"i": [0.5, 0.5], "A": [[1 - 1e-200, 1 - 1e-190], [1e-200, 1e-190]],
            "B": [[1.0, 1 - 1e-200], [0.0, 1e-200]]}
    return qp.theta_from_tables([("i", "A"), ("A", "B")], states, cpds)


def test_the_kernel_reports_an_underflow_and_the_exact_path_answers():
    if compiled._KERNEL is None:
        pytest.skip("compiled kernel not built")
    theta = _tiny_chain()
    index = [theta.index["i"], theta.index["B"]]
    # in float64 both P(B = 1, i) are 0: the column would be skipped and e read as ~0
    value, _, _, underflow = kernel_engine._kernel_network(theta, 0).influence(index, 2.0**25)
    assert underflow and value < 1e-6
    assert kernel_engine._kernel_network(theta, 0).joint(index, np.empty((2, 2)), 2.0**25) == 2
    e = qp.max_influence(theta, "i", ["B"])
    assert e.arithmetic == "exact"
    assert e.value >= 10 * math.log(10) and e.value == pytest.approx(10 * math.log(10), rel=1e-9)
    check_not_below(theta, "i", ["B"], "auto")


def _long_chain(length: int, seed: int) -> qp.Theta:
    """A chain whose CPDs' least entries multiply to far below 2**-1000, though every marginal
    stays moderate: the static bound refuses float64, nothing actually underflows."""
    rng = np.random.default_rng(seed)
    names = [f"C{k}" for k in range(length)]
    states = {v: ["0", "1", "2"] for v in names}
    cpds = {names[0]: [0.2, 0.3, 0.5]}
    for v in names[1:]:
        cols = rng.dirichlet(np.ones(3), size=3)
        cols[:, 0] = 0.01  # every column's least entry is 0.01: 2**-7 floors, 250 nodes
        cols[:, 1:] *= 0.99 / cols[:, 1:].sum(axis=1, keepdims=True)
        cols[:, 2] = 1.0 - cols[:, 0] - cols[:, 1]
        cpds[v] = cols.T
    return qp.theta_from_tables(list(zip(names, names[1:], strict=False)), states, cpds)


@pytest.mark.parametrize("seed", range(3))
def test_past_the_static_bound_float64_runs_when_nothing_underflowed(seed, request):
    if compiled._KERNEL is None:
        pytest.skip("compiled kernel not built")
    theta = _long_chain(250, seed)
    assert not underflow._float_safe(theta, 0, theta.nodes)
    node = theta.nodes[200]
    quilts = [[theta.nodes[199]], [theta.nodes[199], theta.nodes[201]], [theta.nodes[240]]]
    got = [qp.max_influence(theta, node, q) for q in quilts]
    assert [e.arithmetic for e in got] == ["float64"] * 3
    for q, e in zip(quilts, got, strict=True):
        # the joint in exact integers (the elimination is exact), Definition 8 in rationals
        ints, _ = exact_engine._exact_joint(theta, (node, *q), 0, 2**25)
        rows = [[Fraction(int(x)) for x in r] for r in ints.reshape(ints.shape[0], -1)]
        conds = [[x / sum(r) for x in r] for r in rows]
        exact = exact_log(max(max(c) / min(c) for c in zip(*conds, strict=True)))
        TRIED["exact comparisons"] += 1
        assert Decimal(e.value) >= exact, (q, e.value, exact)
        assert Decimal(e.value) <= exact * Decimal(1 + 1e-9) + Decimal(1e-9)
    settings = request.getfixturevalue("exact_arithmetic")  # exact integers only
    for q in quilts:
        found = qp.max_influence(theta, node, q, settings=settings)
        assert found.arithmetic == "exact" and found.engine == "exact"


def test_planner_does_not_release_without_noise_on_underflow():
    theta = and_network(1e-300, 2e-300)
    query = qp.CountQuery(["X"], records=10)
    plan = qp.plan(theta, query, "i", 1.0)
    # e(X | i) = log 4 > 1: the quilt keeping X out of N is infeasible, so noise is needed.
    assert plan.scale > 0
    assert plan["i"].scale == pytest.approx(10.0)


def test_underflowing_prior_keeps_infinite_influence(path):
    # P(i = 0.2) = P(z = 1) P(i = 0.2 | z = 1) = 1e-200 * 1e-200 underflows in float64;
    # given i = 0.2 the quilt node Q is 1 surely, given i = 0.1 it never is: e = +inf.
    states = {"z": ["0", "1"], "i": ["0.1", "0.2"], "Q": ["0", "1"]}
    cpds = {"z": [1 - 1e-200, 1e-200],
            "i": [[1.0, 1 - 1e-200], [0.0, 1e-200]],
            "Q": [[1.0, 0.0], [0.0, 1.0]]}
    theta = qp.theta_from_tables([("z", "i"), ("i", "Q")], states, cpds)
    assert qp.max_influence(theta, "i", ["Q"], engine=path).value == math.inf
    check_not_below(theta, "i", ["Q"], path)


def test_subnormal_ratios_are_exact(path):
    # P(Q = 1 | i) = 2e-320 vs 1e-320 (subnormals): e = log 2 exactly, not a rounded ratio.
    theta = and_network(1e-320, 2e-320)
    check_not_below(theta, "i", ["Q1"], path)
    check_not_below(theta, "i", ["X"], path)


@pytest.mark.parametrize("length", [30, 45])
def test_long_chain_whose_products_underflow(path, length):
    # i -> C1 -> ... -> Cn with P(C_k = 1 | C_{k-1} = 1) = 1e-10 and i shifting C1 by 2x:
    # P(all ones) ~ 1e-10 ** n underflows, and the last node's conditional still differs.
    names = [f"C{k}" for k in range(1, length + 1)]
    states = {"i": ["0.3", "0.6"], **{v: ["0", "1"] for v in names}}
    cpds = {"i": [0.5, 0.5], names[0]: [[1 - 1e-10, 1 - 2e-10], [1e-10, 2e-10]]}
    for v in names[1:]:
        cpds[v] = [[1.0, 1 - 1e-10], [0.0, 1e-10]]
    edges = [("i", names[0]), *zip(names, names[1:], strict=False)]
    theta = qp.theta_from_tables(edges, states, cpds)
    e = qp.max_influence(theta, "i", [names[-1]], engine=path)
    assert e.value >= math.log(2)
    # the exact joint over 46 nodes is too large to enumerate; the last node is 1 only through
    # the all-ones path, so P(C_n = 1 | i) = p_i * 1e-10 ** (n - 1) and e = log 2 exactly.
    assert e.value == pytest.approx(math.log(2), rel=1e-9)


# -- random fuzzing against exact rationals ---------------------------------------------------


def _wild_column(rng: np.random.Generator, card: int) -> list[float]:
    """A probability column with entries from 1e-320 to 1 - 1e-16 that sums to 1.0 in float."""
    out = []
    for _ in range(card - 1):
        kind = rng.integers(5)
        if kind == 0:
            x = 10.0 ** -rng.uniform(300, 320)  # down to subnormals
        elif kind == 1:
            x = 10.0 ** -rng.uniform(100, 300)
        elif kind == 2:
            x = 0.0
        else:
            x = float(rng.uniform(0, 1.0 / card))
        out.append(x)
    rest = 1.0 - math.fsum(out)
    if rng.random() < 0.2 and card == 2:
        out[0], rest = 1e-16, 1 - 1e-16  # the top of the range
    out.append(rest)
    rng.shuffle(out)
    return out


def _wild_network(seed: int) -> qp.Theta | None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    names = [f"V{k}" for k in range(n)]
    edges = [(names[a], names[b]) for a in range(n) for b in range(a + 1, n)
             if rng.random() < 0.5]
    card = {v: int(rng.integers(2, 4)) for v in names}
    states = {v: [str(round(0.1 * (k + 1), 1)) for k in range(card[v])] for v in names}
    parents = {v: [a for a, b in edges if b == v] for v in names}
    members = []
    for _ in range(int(rng.integers(1, 3))):
        cpds = {}
        for v in names:
            shape = [card[u] for u in parents[v]]
            cols = [_wild_column(rng, card[v]) for _ in range(int(np.prod(shape)) if shape else 1)]
            table = np.array(cols).T.reshape([card[v], *shape])
            cpds[v] = table
        members.append(cpds)
    try:
        theta = qp.theta_from_tables(edges, states, members)
    except ModelError:  # a column that does not sum to one exactly with a subnormal entry
        return None
    for member, given in zip(theta.members, members, strict=True):  # the model as stored
        for v in names:
            if not np.array_equal(member[v].table, given[v]):
                return None
    return theta


# Seeds 1-9 and 11 by default; seeds 0 and 10 (the largest networks, ~0.2 s per path) and
# 12-39 are slow.
@pytest.mark.parametrize("seed", fast_sample(range(40), set(range(1, 12)) - {10}))
def test_random_wild_magnitudes_never_below_exact(path, seed):
    theta = _wild_network(seed)
    if theta is None:
        pytest.skip("generated column needs renormalisation (refused, tested elsewhere)")
    rng = np.random.default_rng(1000 + seed)
    for node in theta.nodes:
        others = [v for v in theta.nodes if v != node]
        for _ in range(3):
            k = int(rng.integers(1, len(others) + 1))
            quilt = sorted(rng.choice(others, size=k, replace=False).tolist(),
                           key=theta.index.__getitem__)
            check_not_below(theta, node, quilt, path)


def test_zero_in_float_but_not_exactly_is_covered():
    # Two columns equal in float64 after rounding but different exactly: float says e = 0.
    a = 0.1
    b = math.nextafter(0.1, 1.0)
    theta = qp.theta_from_tables(
        [("i", "Q")], {"i": ["0.2", "0.4"], "Q": ["0", "1"]},
        {"i": [0.5, 0.5], "Q": [[1 - a, 1 - b], [a, b]]})
    exact = exact_influence(theta, "i", ["Q"])
    assert exact > 0
    assert Decimal(qp.max_influence(theta, "i", ["Q"]).value) >= exact


def test_independent_quilt_reports_the_margin_not_zero():
    # Exactly 0 only if every column sums to one exactly; stored floats need not, so the
    # rounding margin is kept (and the empty quilt is exactly 0).
    theta = qp.theta_from_tables(
        [], {"i": ["0.2", "0.4"], "Q": ["0", "1"]}, {"i": [0.5, 0.5], "Q": [0.3, 0.7]})
    assert qp.max_influence(theta, "i", ["Q"]).value == infl.ROUNDING_MARGIN
    assert qp.max_influence(theta, "i", []).value == 0.0


# -- loaders: positive values float64 cannot hold are refused -------------------------------

BIF = """network n {{
}}
variable i {{
  type discrete [ 2 ] {{ 0.1, 0.2 }};
}}
variable Q {{
  type discrete [ 2 ] {{ 0, 1 }};
}}
probability ( i ) {{
  table 0.5, 0.5;
}}
probability ( Q | i ) {{
  (0.1) {a}, {b};
  (0.2) 0.5, 0.5;
}}
"""


@pytest.mark.parametrize("tiny", ["1e-400", "1e-320", "2.5e-310", "1e-330"])
def test_bif_refuses_probabilities_float64_cannot_hold(tmp_path, tiny):
    path = tmp_path / "m.bif"
    path.write_text(BIF.format(a="1.0", b=tiny))
    with pytest.raises(ModelError, match="below float64's normal range"):
        qp.load_model(path)
    TRIED["refused files"] += 1


def test_bif_keeps_small_normal_probabilities_and_real_zeros(tmp_path):
    path = tmp_path / "m.bif"
    path.write_text(BIF.format(a="1.0", b="1e-300").replace("(0.2) 0.5, 0.5", "(0.2) 1.0, 0.0"))
    theta = qp.load_model(path)
    assert float(theta.members[0]["Q"].table[1, 0]) == 1e-300
    assert float(theta.members[0]["Q"].table[1, 1]) == 0.0


def test_json_and_xmlbif_refuse_underflowing_probabilities(tmp_path):
    theta = and_network(1e-300, 2e-300)
    text = __import__("json").dumps(qp.theta_to_dict(theta, version=1)).replace("1e-300", "1e-400")
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(ModelError, match="1e-400"):
        qp.load_model(path)
    TRIED["refused files"] += 1
    from pgmpy.readwrite import XMLBIFWriter

    bif = tmp_path / "m.bif"
    bif.write_text(BIF.format(a="1.0", b="1e-300"))
    xml = tmp_path / "m.xml"
    XMLBIFWriter(_pgmpy(bif)).write_xmlbif(str(xml))
    xml.write_text(xml.read_text().replace("1e-300", "1e-400"))
    with pytest.raises(ModelError, match="below float64's normal range"):
        qp.load_model(xml)
    TRIED["refused files"] += 1


def _pgmpy(path):
    from pgmpy.readwrite import BIFReader

    return BIFReader(str(path)).get_model()


def test_renormalising_a_subnormal_is_refused():
    with pytest.raises(ModelError, match="normal range"):
        qp.theta_from_tables([], {"Q": ["0", "1", "2"]}, {"Q": [1e-320, 0.5, 0.4999999]})


def test_joint_marginal_is_exact_then_rounded():
    theta = and_network(1e-200, 2e-200)
    joint = qp.joint_marginal(theta, ["i", "Q1"])
    assert joint[0, 1] == 0.5 * 1e-200 and joint[1, 1] == 0.5 * 2e-200
    tiny = qp.joint_marginal(and_network(1e-300, 2e-300), ["i", "X"])
    assert tiny[:, 1].tolist() == [0.0, 0.0]  # 5e-601 and 2e-600 round to 0: documented


def test_python_model_module_refuses_underflowing_literal(tmp_path):
    # Python reads 1e-400 as 0.0 silently; the loader scans the module's literals first.
    path = tmp_path / "m.py"
    path.write_text(
        "from pgmpy.models import DiscreteBayesianNetwork\n"
        "from pgmpy.factors.discrete import TabularCPD\n"
        "def model():\n"
        "    m = DiscreteBayesianNetwork([('i', 'Q')])\n"
        "    m.add_cpds(TabularCPD('i', 2, [[0.5], [0.5]]),\n"
        "               TabularCPD('Q', 2, [[1.0, 0.5], [1e-400, 0.5]], evidence=['i'],\n"
        "                          evidence_card=[2]))\n"
        "    return m\n")
    with pytest.raises(ModelError, match="line 6: the probability 1e-400"):
        qp.load_model(path)
    TRIED["refused files"] += 1


@pytest.mark.parametrize("name", ["student", "example3", "chain"])
def test_json_round_trip_keeps_the_model_bit_for_bit(tmp_path, name):
    # A column normalised up to rounding is kept as given, so a saved model (and a plan's
    # model fingerprint) survives theta_to_dict -> load_model unchanged.
    theta = qp.load_model(name)
    path = tmp_path / "m.json"
    path.write_text(__import__("json").dumps(qp.theta_to_dict(theta)))
    assert qp.load_model(path).fingerprint() == theta.fingerprint()


def _tight_query(seed: int):
    """A seeded random network and query ``e(quilt | node)`` with the table limit set to the
    query's own joint size, so that most elimination orders do not fit."""
    import reference as ref_

    net = ref_.random_network(6100 + seed, min_nodes=5, max_nodes=9, edge_prob=0.6)
    theta = net.to_theta()
    rng = np.random.default_rng(seed)
    node = str(rng.choice(net.nodes))
    others = [v for v in net.nodes if v != node]
    quilt = [str(v) for v in rng.choice(others, int(rng.integers(1, 3)), replace=False)]
    out = int(np.prod([theta.cardinality[v] for v in (node, *quilt)]))
    return net, theta, node, quilt, out


def _engines():
    """The engines a conditioned term can run on here: the compiled kernel (when built) and
    the Python order (numpy ufuncs)."""
    import quiltpriv.inference.influence as infl

    return ["kernel", "python"] if infl.compiled_kernel() else ["python"]


@pytest.mark.parametrize("engine", _engines())
@pytest.mark.parametrize("seed", fast_sample(range(80), 20))
def test_conditioning_on_a_cutset_answers_what_no_order_fits(seed, engine, monkeypatch):
    """With a table limit no elimination order fits, the query is answered by conditioning on
    a cutset: never below the definition on the full joint, and equal to it up to rounding;
    its terms run on the compiled kernel when it is built, else in Python."""
    import reference as ref_

    import quiltpriv.inference.influence as infl

    net, theta, node, quilt, out = _tight_query(seed)
    used = []
    real = cutset._conditioned_term
    monkeypatch.setattr(cutset, "_conditioned_term",
                        lambda *a: used.append(a[-1].kernel) or real(*a))
    # measured: every one of these 80 queries is answered; most need a cutset at this limit
    got = infl.max_influence(theta, node, quilt, max_table=out, engine=engine)
    want = ref_.reference_influence(net, node, quilt)
    if np.isinf(want):
        assert np.isinf(got.value)
    else:
        assert want <= got.value <= want + 1e-6 * (1 + want)
    if used:
        assert got.arithmetic == "float64"
        assert set(used) == {engine == "kernel"}
        assert f"cutset+{engine}" in got.engine.split(", ")


@pytest.mark.parametrize("seed", fast_sample(range(80), 10))
def test_the_cutset_engine_by_name_answers_what_no_order_fits(seed):
    """``engine="cutset"`` is the conditioning ``"kernel"`` and ``"python"`` fall back to,
    chosen by name: the same queries answered, never below the definition on the full joint,
    and the result names the arithmetic of its terms."""
    import reference as ref_

    import quiltpriv.inference.influence as infl

    net, theta, node, quilt, out = _tight_query(seed)
    got = infl.max_influence(theta, node, quilt, max_table=out, engine="cutset")
    want = ref_.reference_influence(net, node, quilt)
    if np.isinf(want):
        assert np.isinf(got.value)
    else:
        assert want <= got.value <= want + 1e-6 * (1 + want)
    by = "kernel" if infl.compiled_kernel() else "python"
    assert set(got.engine.split(", ")) <= {f"cutset+{by}", "exact"}


def test_conditioning_is_priced_and_refused_beyond_its_budget(monkeypatch):
    """Beyond its work budget (max_cutset_work for the Python order, max_cutset_kernel_work
    for the kernel) or max_cutset_states (EngineSettings) the query is refused after pricing
    only: no elimination runs."""
    import quiltpriv.inference.influence as infl
    from quiltpriv.inference.engines.base import EngineSettings

    _, theta, node, quilt, out = _tight_query(2)  # a query that needs a cutset
    ran = []
    real = cutset._conditioned_term
    monkeypatch.setattr(cutset, "_conditioned_term", lambda *a: ran.append(1) or real(*a))
    for tight in (EngineSettings(max_cutset_work=1, max_cutset_kernel_work=1),
                  EngineSettings(max_cutset_states=1)):
        with pytest.raises(infl.InfluenceTooExpensive):
            infl.max_influence(theta, node, quilt, max_table=out, settings=tight)
    assert not ran
    infl.max_influence(theta, node, quilt, max_table=out)  # within budget: answered
    assert ran


def test_a_passed_deadline_stops_a_conditioned_query_between_terms(monkeypatch):
    """Conditioning checks the caller's deadline before and between its eliminations (and
    the elimination tried first, unconditioned, sees it too): one already past refuses the
    query (naming the time limit) before any term, and the refusal is not cached, so the same
    query without a deadline is answered."""
    import time

    import quiltpriv.inference.influence as infl

    _, theta, node, quilt, out = _tight_query(2)
    ran = []
    real = cutset._conditioned_term
    monkeypatch.setattr(cutset, "_conditioned_term", lambda *a: ran.append(1) or real(*a))
    with pytest.raises(infl.InfluenceTooExpensive, match="time limit passed"):
        infl.max_influence_until(theta, node, quilt, max_table=out, deadline=time.monotonic() - 1)
    with pytest.raises(infl.InfluenceTooExpensive, match="time limit"):
        infl.influence_upper_bound_until(theta, node, quilt, max_table=out,
                                    deadline=time.monotonic() - 1)
    assert not ran
    assert infl.max_influence(theta, node, quilt, max_table=out, time_limit=3600).value >= 0
    assert ran
    with pytest.raises(qp.ParameterError, match="deadline"):
        infl.max_influence_until(theta, node, quilt, deadline="soon")
    with pytest.raises(qp.ParameterError, match="time_limit"):
        infl.max_influence(theta, node, quilt, time_limit="soon")


@pytest.mark.parametrize("seed", fast_sample(range(40), 10))
def test_joint_marginal_conditions_where_no_order_fits(seed):
    """``joint_marginal`` answers a query no order fits by the same conditioning as
    ``max_influence``: the full joint's marginal, to rounding."""
    import reference as ref_

    net, theta, node, quilt, out = _tight_query(seed)
    nodes = [node, *quilt]
    got = qp.joint_marginal(theta, nodes, max_table=out)
    want = ref_.marginal(net, ref_.full_joint(net), nodes)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-300)
