"""Accounting across releases: grouping by the data released (whatever the model or
mechanism), data-set identity, the warnings a record carries, composition by the published
results whose conditions the records meet, and the budget."""

from __future__ import annotations

import itertools
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.cli import main
from quiltpriv.mechanisms.registry import build_mechanism
from quiltpriv.model.network import theta_from_tables
from quiltpriv.releases import ledger, records
from quiltpriv.releases.composition import (
    NO_RESULT,
    composition,
    compositions_by_data,
    same_data_groups,
)


@pytest.fixture(autouse=True)
def _fresh_session():
    records.forget_releases()
    yield
    records.forget_releases()


def _xor_tables():
    s = ("0.2", "0.8")
    xor = np.zeros((2, 2, 2))
    for a, b in itertools.product(range(2), repeat=2):
        xor[a ^ b, a, b] = 1.0
    return [("j", "i"), ("k", "i")], {"j": s, "k": s, "i": s}, {
        "j": np.array([0.5, 0.5]), "k": np.array([0.5, 0.5]), "i": xor}


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


XOR_DATA = pd.DataFrame({"j": [1, 0, 1], "k": [0, 0, 1], "i": [1, 0, 0]})
Q1 = qp.CountQuery(["j"], 3, where="j == 1", domain={"j": (0, 1)})
Q2 = qp.CountQuery(["k"], 3, where="k == 1", domain={"k": (0, 1)})


def test_the_xor_pair_across_two_models_gets_no_joint_guarantee(tmp_path, capsys):
    # Hole 1: the same beliefs as a one-member Theta and as a two-member Theta have different
    # fingerprints; grouping by model showed each release alone with "together: epsilon 0.5".
    edges, states, tables = _xor_tables()
    one = theta_from_tables(edges, states, tables)
    two = theta_from_tables(edges, states, [tables, tables])
    assert one.fingerprint() != two.fingerprint()
    p1, p2 = qp.plan(one, Q1, "i", 0.5), qp.plan(two, Q2, "i", 0.5)
    assert p1.scale == p2.scale == 0
    path = tmp_path / "l.db"
    _quiet(qp.release, p1, Q1, XOR_DATA, ledger=path)
    _quiet(qp.release, p2, Q2, XOR_DATA, ledger=path)
    entries, _ = ledger.read(path)
    (c,) = compositions_by_data(entries)
    assert not c.composed and c.releases == ("#0", "#1") and c.reasons[0] == NO_RESULT
    assert "2 different models" in " ".join(c.notes)
    assert main(["ledger", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "together: NO joint guarantee" in out and "together: epsilon" not in out
    # what is at stake: the exact joint loss of the pair is 3.466 (docs/ledger.md)
    from quiltpriv.audit.joint import joint_audit

    exact = np.log((0.8**6 + 0.2**6) / 2 / (0.8**3 * 0.2**3))
    assert joint_audit(two, [Q1, Q2], [0.0, 0.0], "i").loss == pytest.approx(exact, rel=1e-12)
    assert exact == pytest.approx(3.466, abs=5e-4)


def test_apmqm_next_to_group_dp_on_the_same_data_gets_no_joint_guarantee(tmp_path):
    theta = qp.load_model("example3")
    q = qp.CountQuery(["x1"], 3, where="x1 == 1", domain={"x1": (0, 1)})
    data = pd.DataFrame({"x1": [1, 0, 1]})
    path = tmp_path / "l.db"
    _quiet(qp.release, qp.plan(theta, q, "x2", 1.0), q, data, ledger=path)
    _quiet(build_mechanism("group-dp", theta, q, "x2", 1.0).release, data, ledger=path)
    entries, _ = ledger.read(path)
    (c,) = compositions_by_data(entries)
    assert not c.composed and c.reasons[0] == NO_RESULT
    assert "different kinds of guarantee" in c.reasons[1]
    assert "APMQM, group DP Laplace" in " ".join(c.notes)
    assert "as each record states" in c.explain()


def _csv(tmp_path):
    df = pd.DataFrame({"height": [60.0, 70.0, 68.0], "sat": [1200.0, 1400.0, 1350.0],
                       "gender": ["f", "m", "f"]})
    path = tmp_path / "survey.csv"
    df.to_csv(path, index=False)
    return path


def test_a_count_and_a_histogram_over_different_columns_are_the_same_data(tmp_path, capsys):
    # Hole 2: the columns' hashes differ, the whole table's hash is the same.
    csv, path = _csv(tmp_path), tmp_path / "l.db"
    common = ["student", "--sensitive", "income", "--epsilon", "1", "--data", str(csv),
              "--ledger", str(path), "--records", "3"]
    assert main(["release", *common, "--attributes", "height", "--where", "height > 66"]) == 0
    assert main(["release", *common, "--query", "histogram", "--attributes", "sat",
                 "--domain", "sat=1200|1350|1400"]) == 0
    capsys.readouterr()
    entries, _ = ledger.read(path)
    d0, d1 = (e.record["data"] for e in entries)
    assert d0["sha256"] != d1["sha256"] and d0["columns"] != d1["columns"]
    assert d0["table_sha256"] == d1["table_sha256"]
    (c,) = compositions_by_data(entries)
    assert not c.composed and c.releases == ("#0", "#1")
    assert "every release is on the same data (table sha256" in " ".join(c.notes)


def test_a_declared_data_set_name_joins_releases_and_other_tables_stay_apart(tmp_path, capsys):
    csv, path = _csv(tmp_path), tmp_path / "l.db"
    common = ["student", "--sensitive", "income", "--epsilon", "1", "--ledger", str(path),
              "--records", "3", "--attributes", "height", "--where", "height > 66"]
    other = tmp_path / "other.csv"
    pd.read_csv(csv).assign(weight=[1, 2, 3]).to_csv(other, index=False)
    third = tmp_path / "third.csv"
    pd.DataFrame({"height": [50.0]}).to_csv(third, index=False)
    assert _quiet(main, ["release", *common, "--data", str(csv), "--dataset", "survey"]) == 0
    # another file of the same survey (a column more), declared by name
    assert _quiet(main, ["release", *common, "--data", str(other), "--dataset", "survey"]) == 0
    assert _quiet(main, ["release", *common, "--data", str(third)]) == 0  # other data
    entries, _ = ledger.read(path)
    assert entries[0].record["data"]["dataset"] == "survey"
    assert same_data_groups([e.record for e in entries]) == [[0, 1], [2]]
    comps = compositions_by_data(entries)
    assert [c.releases for c in comps] == [("#0", "#1"), ("#2",)]
    assert not comps[0].composed and comps[1].composed
    # a record written before format 3 may be on any data: it joins every group
    old = {k: v for k, v in entries[2].record.items()}
    old["format"] = "quiltpriv-release/2"
    old["data"] = {k: old["data"][k] for k in ("sha256", "rows", "columns")}
    recs = [e.record for e in entries] + [old]
    assert same_data_groups(recs) == [[0, 1, 2, 3]]
    assert "written before format 3" in " ".join(composition(recs).notes)
    capsys.readouterr()
    assert main(["release", *common, "--data", str(csv), "--dataset", " "]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "dataset must be a printable name" in cap.err
    assert ledger.verify(path).count == 3  # nothing written


# -- hole 3: reports never draw outside the ledger --------------------------------------------


def _report_args(csv=None):
    args = ["report", "student", "--sensitive", "income", "--attributes", "height,sat",
            "--records", "3", "--epsilon", "1", "--where", "height > 66 and sat > 1300"]
    return args + (["--data", str(csv)] if csv else [])


def test_a_report_without_a_ledger_entry_is_refused_or_recorded(tmp_path, capsys):
    csv, path = _csv(tmp_path), tmp_path / "l.db"
    out = tmp_path / "r.html"
    # --data without --ledger: refused before any work, nothing written, nothing drawn
    assert main([*_report_args(csv), "-o", str(out)]) == 2
    cap = capsys.readouterr()
    assert "give --ledger PATH" in cap.err and len(cap.err.splitlines()) == 1
    assert not out.exists() and not path.exists()
    # a release made and saved with 'release -o', then reported from its record
    rec_file = tmp_path / "first.json"
    assert main(["release", *_report_args(csv)[1:], "--ledger", str(path), "-o",
                 str(rec_file)]) == 0
    published = json.loads(rec_file.read_text())
    assert main([*_report_args(), "--record", str(rec_file), "-o", str(out)]) == 0
    shown = json.loads(out.with_suffix(".json").read_text())["release"]
    assert shown["value"] == published["value"] and shown["timestamp"] == published["timestamp"]
    # ... or from its ledger entry: the same value, nothing drawn
    assert main([*_report_args(), "--ledger", str(path), "--entry", "0", "-o", str(out)]) == 0
    assert json.loads(out.with_suffix(".json").read_text())["release"]["value"] == \
        published["value"]
    assert ledger.verify(path).count == 1
    # --data with --ledger draws through the ledger: the entry holds the value shown
    records.forget_releases()
    assert _quiet(main, [*_report_args(csv), "--ledger", str(path), "-o", str(out)]) == 0
    entries, _ = ledger.read(path)
    assert len(entries) == 2
    assert json.loads(out.with_suffix(".json").read_text())["release"]["timestamp"] == \
        entries[1].record["timestamp"]
    capsys.readouterr()
    for bad, why in ((["--entry", "0"], "--entry K shows entry K of --ledger"),
                     (["--ledger", str(path)], "give --entry K"),
                     (["--ledger", str(path), "--entry", "7"], "no entry 7"),
                     (["--record", str(csv)], "not valid JSON"),
                     (["--record", str(rec_file), "--ledger", str(path)], "without --data")):
        assert main([*_report_args(), *bad, "-o", str(out)]) == 2, bad
        assert why in capsys.readouterr().err, bad
    # a record made with another plan (epsilon 0.5) is refused
    other = dict(published)
    other["plan"] = dict(published["plan"], epsilon=0.5)
    (tmp_path / "other.json").write_text(json.dumps(other))
    assert main([*_report_args(), "--record", str(tmp_path / "other.json"), "-o",
                 str(out)]) == 2


# -- hole 4: a release without noise says so --------------------------------------------------

ZERO = records.ZERO_NOISE_MESSAGE


def test_a_zero_noise_release_warns_on_the_cli_and_in_the_record(tmp_path, capsys):
    assert ZERO == ("no noise: exact value; protects only the declared states of the "
                    "sensitive attributes; no record-level privacy")
    csv, path = _csv(tmp_path), tmp_path / "l.db"
    args = ["student", "--sensitive", "income", "--attributes", "height", "--records", "3",
            "--epsilon", "1", "--where", "height > 66"]  # income's quilt {height}: no noise
    assert main(["plan", *args]) == 0
    cap = capsys.readouterr()
    assert cap.err == f"quiltpriv: warning: {ZERO}\n" and f"warning: {ZERO}" in cap.out
    assert main(["release", *args, "--data", str(csv), "--ledger", str(path), "--json"]) == 0
    cap = capsys.readouterr()
    assert cap.err == f"quiltpriv: warning: {ZERO}\n"
    rec = json.loads(cap.out)
    assert rec["calibration"]["scale"] == 0 and rec["warnings"] == [ZERO]
    assert main(["ledger", "show", str(path)]) == 0
    assert f"#0: warning: {ZERO}" in capsys.readouterr().out
    (tmp_path / "r.json").write_text(json.dumps(rec))
    out = tmp_path / "rep.html"
    assert main(["report", *args, "--record", str(tmp_path / "r.json"), "-o", str(out)]) == 0
    assert ZERO in out.read_text() and \
        json.loads(out.with_suffix(".json").read_text())["warnings"] == [ZERO]
    # from Python: a ZeroNoiseWarning, and the record carries it
    theta = qp.load_model("student")
    q = qp.CountQuery(["height"], 3, where="height > 66")
    p = qp.plan(theta, q, "income", 1.0)
    assert p.scale == 0 and p.warnings == (ZERO,)
    with pytest.warns(qp.errors.ZeroNoiseWarning, match="no record-level privacy"):
        r = qp.release(p, q, pd.read_csv(csv))
    assert r.to_dict()["warnings"] == [ZERO]
    # a release with noise says nothing of the kind
    noisy = qp.plan(theta, qp.CountQuery(["sat"], 3, where="sat > 1300"), "income", 1.0)
    assert noisy.scale > 0 and noisy.warnings == () and "warning:" not in noisy.explain()


# -- hole 5: a Theta learned from the data it protects ----------------------------------------


def _populations(seed=0, n=14):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.05, 0.95, n).round(3)
    return pd.DataFrame({"a": a, "b": np.clip(a + rng.normal(0, 0.1, n), 0, 1).round(3)})


def test_a_theta_learned_from_the_released_data_warns(tmp_path, capsys):
    pytest.importorskip("pgmpy")
    from quiltpriv.errors import PrivateModelWarning

    private = _populations()
    q = qp.CountQuery(["b"], len(private), where="b > 0.5")
    theta = qp.learn_theta(private, {"a": "share", "b": "share"}, quantiles=2)
    assert theta.provenance["data_public"] is False
    with pytest.warns(PrivateModelWarning, match="data not declared public") as caught:
        p = qp.plan(theta, q, "a", 1.0)
    # the user's line, not plan's deprecated-keyword wrapper in quiltpriv/utils/deprecation.py
    assert {w.filename for w in caught if w.category is PrivateModelWarning} == {__file__}
    assert any("learned from data not declared public" in w for w in p.warnings)
    with pytest.warns(PrivateModelWarning, match="the very data being released") as caught:
        r = qp.release(p, q, private)
    assert {w.filename for w in caught if w.category is PrivateModelWarning} == {__file__}
    assert any("the very data being released" in w for w in r.to_dict()["warnings"])
    # declared public (learned on earlier data): no warning, unless released on those data
    public = qp.learn_theta(_populations(seed=1), {"a": "share", "b": "share"}, quantiles=2,
                            data_public=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivateModelWarning)
        p2 = qp.plan(public, q, "a", 1.0)
        r2 = _quiet(qp.release, p2, q, private)
    assert p2.warnings == () and all("learned" not in w for w in r2.to_dict()["warnings"])
    with pytest.warns(PrivateModelWarning, match="the very data being released"):
        qp.release(p2, q, _populations(seed=1))
    with pytest.raises(qp.errors.ParameterError, match="data_public"):
        qp.learn_theta(private, {"a": "share", "b": "share"}, quantiles=2, data_public="yes")
    # the command line: one warning line at plan time and at release time
    model = tmp_path / "learned.json"
    model.write_text(json.dumps(qp.theta_to_dict(theta)))
    csv = tmp_path / "private.csv"
    private.to_csv(csv, index=False)
    args = [str(model), "--sensitive", "a", "--attributes", "b", "--records",
            str(len(private)), "--epsilon", "1", "--where", "b > 0.5"]
    assert main(["plan", *args]) == 0
    err = capsys.readouterr().err.splitlines()
    assert any(e.startswith("quiltpriv: warning: Theta was learned from data not declared "
                            "public") for e in err)
    assert main(["release", *args, "--data", str(csv)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert sum("learned from the very data being released" in e for e in err) == 1
    assert all(e.startswith("quiltpriv: warning: ") for e in err)


# -- composition where the source papers prove it ---------------------------------------------

STATES = (("0.2", "0.8"), ("0.1", "0.5", "0.9"), ("0.3", "0.6"))


def _random_theta(rng, m, members=1):
    nodes = [f"v{k}" for k in range(m)]
    states = {v: STATES[rng.integers(len(STATES))] for v in nodes}
    edges = [(nodes[a], nodes[b]) for a in range(m) for b in range(a + 1, m)
             if rng.random() < 0.55]
    parents = {v: [a for a, b in edges if b == v] for v in nodes}

    def cpd(shape):
        t = rng.gamma(0.8, 1.0, size=shape) + 1e-3
        return t / t.sum(axis=0, keepdims=True)

    tables = [{v: cpd((len(states[v]), *(len(states[p]) for p in parents[v])))
               for v in nodes} for _ in range(members)]
    return theta_from_tables(edges, states, tables)


def test_group_dp_releases_compose_by_sequential_composition_confirmed_exactly():
    # [DR14, Thm. 3.16]: k group-DP releases with independent noise on one dataset are
    # (sum eps, sum delta)-DP, hence attribute private for every prior: the exact joint
    # auditor never finds more, on random small models.
    from quiltpriv.audit.joint import joint_audit
    from quiltpriv.distribution.composition import compose_same_input

    tight = 0
    for seed in range(30):
        rng = np.random.default_rng(seed)
        theta = _random_theta(rng, int(rng.integers(2, 4)), int(rng.integers(1, 3)))
        n = int(rng.integers(1, 4))
        sens = [str(rng.choice(theta.nodes))]
        data = pd.DataFrame({v: rng.integers(0, 2, n) for v in theta.nodes})
        queries, recs = [], []
        for _ in range(int(rng.integers(2, 4))):
            attrs = sorted({str(a) for a in rng.choice(theta.nodes, 2)})
            where = " or ".join(f"{a} == {int(rng.integers(0, 2))}" for a in attrs)
            q = qp.CountQuery(attrs, n, where=where, domain={a: (0, 1) for a in attrs})
            eps = float(rng.choice([0.25, 0.5, 1.0]))
            recs.append(_quiet(build_mechanism("group-dp", theta, q, sens, eps).release, data))
            queries.append(q)
        c = composition(recs)
        assert c.composed and c.theorem == "DR14, Thm. 3.16" and c.delta == 0, seed
        total = sum(r.guarantee.epsilon for r in recs)
        assert c.epsilon == pytest.approx(total, rel=1e-15) and c.epsilon >= total
        # the same number as [KM19, Table III]'s one-input rule for point-private mechanisms
        assert c.epsilon == compose_same_input(
            [(r.guarantee.epsilon, 0.0) for r in recs], point_private=True).epsilon
        audit = joint_audit(theta, queries, [r.calibration.scale for r in recs], sens,
                            epsilon=c.epsilon)
        assert audit.met, (seed, audit.explain())
        tight += audit.loss > 0.2 * c.epsilon
    assert tight >= 5
    # conditions: noise drawn twice from one seed is not independent
    theta = qp.load_model("example3")
    q = qp.CountQuery(["x1"], 3, where="x1 == 1", domain={"x1": (0, 1)})
    data = pd.DataFrame({"x1": [1, 0, 1]})
    m = build_mechanism("group-dp", theta, q, "x2", 1.0)
    same = [_quiet(m.release, data, seed=7), _quiet(m.release, data, seed=7)]
    c = composition(same)
    assert not c.composed and "same seed 7" in " ".join(c.reasons)
    gauss = _quiet(build_mechanism("group-dp-gaussian", theta, q, "x2", 0.5, delta=1e-6)
                   .release, data)
    c = composition([_quiet(m.release, data), gauss])
    assert c.composed and c.epsilon == 1.5 and c.delta == pytest.approx(1e-6)
    assert "delta = 1e-06" in c.explain() and "every property of the data" in c.explain()


def _as_kind(record, kind, sensitive=()):
    r = json.loads(json.dumps(record))
    r["guarantee"]["kind"], r["guarantee"]["sensitive"] = kind, list(sensitive)
    return r


def test_subset_privacy_and_distribution_privacy_compose_only_as_their_papers_say():
    from quiltpriv.distribution.composition import compose_same_input
    from quiltpriv.mechanisms.subset_privacy import compose_subset_epsilons

    theta = qp.load_model("example3")
    q = qp.CountQuery(["x1"], 3, where="x1 == 1", domain={"x1": (0, 1)})
    data = pd.DataFrame({"x1": [1, 0, 1]})
    dp = [_quiet(build_mechanism("group-dp", theta, q, "x2", e).release, data).to_dict()
          for e in (0.3, 0.1, 0.7)]
    # [Tan, Prop. 3.4] on one protected set U, with DP releases by Prop. 3.5
    subset = [_as_kind(dp[0], "subset privacy", ["x1"]), _as_kind(dp[1], "subset privacy",
                                                                  ["x1"]), dp[2]]
    c = composition(subset)
    assert c.composed and c.theorem == "Tan, Prop. 3.4" and c.sensitive == ("x1",)
    assert c.epsilon == compose_subset_epsilons([0.3, 0.1, 0.7]) >= 1.1
    other = _as_kind(dp[1], "subset privacy", ["x2"])
    c = composition([subset[0], other])
    assert not c.composed and c.reasons[0] == NO_RESULT
    # [KM19, Table III]: the ledger's releases share one input; distribution privacy alone
    # gives no bound there
    distp = [_as_kind(dp[0], "distribution privacy"), _as_kind(dp[1], "distribution privacy")]
    c = composition(distp)
    assert not c.composed and "[KM19, Table III] one input" in " ".join(c.reasons)
    assert compose_same_input([(0.3, 0.0), (0.1, 0.0)], point_private=False).epsilon == np.inf
    c = composition([distp[0], dp[2]])
    assert not c.composed and "#" not in c.releases[0]
    assert "[0] state distribution privacy only" in " ".join(c.reasons)


# -- the budget -------------------------------------------------------------------------------

BUDGET_Q = qp.CountQuery(["x1"], 3, where="x1 == 1", domain={"x1": (0, 1)})
BUDGET_DATA = pd.DataFrame({"x1": [1, 0, 1]})


def _group(eps):
    return build_mechanism("group-dp", None, BUDGET_Q, (), eps)


def test_the_budget_refuses_before_drawing_and_names_the_releases(tmp_path, monkeypatch):
    from quiltpriv.errors import BudgetError
    from quiltpriv.mechanisms import noise

    path = tmp_path / "l.db"
    _quiet(_group(1.0).release, BUDGET_DATA, ledger=path, budget=1.5)
    _quiet(_group(0.25).release, BUDGET_DATA, ledger=path, budget=1.5)

    def no_draw(*args, **kwargs):
        raise AssertionError("noise was drawn for a refused release")

    monkeypatch.setattr(noise, "laplace_release", no_draw)
    with pytest.raises(BudgetError, match=r"releases #0, #1, this release on the same data "
                                          r"total epsilon 1.75 by \[DR14, Thm. 3.16\]"):
        _quiet(_group(0.5).release, BUDGET_DATA, ledger=path, budget=1.5)
    monkeypatch.undo()
    assert ledger.verify(path).count == 2
    # another table is other data: its own budget (the same column with a column added
    # would be the same data: the columns' hash matches)
    _quiet(_group(1.0).release, pd.DataFrame({"x1": [0, 0, 1]}), ledger=path, budget=1.5)
    # APMQM next to group DP: no total is proved; refused unless allowed
    theta = qp.load_model("example3")
    p = qp.plan(theta, BUDGET_Q, "x2", 0.1)
    with pytest.raises(BudgetError, match=r"no published result proves a total for releases "
                                          r"#0, #1, this release"):
        _quiet(qp.release, p, BUDGET_Q, BUDGET_DATA, ledger=path, budget=5)
    assert ledger.verify(path).count == 3
    _quiet(qp.release, p, BUDGET_Q, BUDGET_DATA, ledger=path, budget=5, allow_unproved=True)
    assert ledger.verify(path).count == 4
    # one release over the budget alone is refused by its own guarantee
    with pytest.raises(BudgetError, match="exceeded"):
        _quiet(qp.release, qp.plan(theta, BUDGET_Q, "x2", 2.0), BUDGET_Q,
               pd.DataFrame({"x1": [1, 1, 1]}), ledger=path, budget=1.0)
    for bad in (0, -1, float("inf"), float("nan"), "1", True):
        with pytest.raises(qp.errors.ParameterError, match="budget"):
            _group(1.0).release(BUDGET_DATA, ledger=path, budget=bad)
    with pytest.raises(qp.errors.ParameterError, match="give ledger="):
        _group(1.0).release(BUDGET_DATA, budget=1.0)
    assert ledger.verify(path).count == 4


def test_the_budget_on_the_command_line(tmp_path, capsys):
    csv, path = tmp_path / "d.csv", tmp_path / "l.db"
    BUDGET_DATA.to_csv(csv, index=False)
    args = ["release", "example3", "--sensitive", "x2", "--attributes", "x1", "--records", "3",
            "--where", "x1 == 1", "--domain", "x1=0|1", "--data", str(csv), "--mechanism",
            "group-dp", "--ledger", str(path), "--budget", "1"]
    assert main([*args, "--epsilon", "0.75"]) == 0
    capsys.readouterr()
    assert main([*args, "--epsilon", "0.5"]) == 2
    cap = capsys.readouterr()
    warning, error = cap.err.splitlines()  # the repeated-release warning, then the refusal
    assert cap.out == "" and "same data as an earlier one" in warning
    assert error.startswith("quiltpriv: error: budget 1 exceeded: releases #0, this release "
                            "on the same data total epsilon 1.25 by [DR14, Thm. 3.16]")
    assert ledger.verify(path).count == 1
    assert main([*args[:-4], "--budget", "1", "--epsilon", "0.5"]) == 2
    assert "--budget counts the releases of a ledger" in capsys.readouterr().err
    assert main([*args[:-2], "--allow-unproved", "--epsilon", "0.5"]) == 2
    assert "--allow-unproved applies with --budget" in capsys.readouterr().err


def _budget_worker(path, attempts, barrier, out):
    import warnings as w

    from quiltpriv.errors import BudgetError

    w.simplefilter("ignore")
    barrier.wait()
    done = 0
    for _ in range(attempts):
        try:
            _group(0.5).release(BUDGET_DATA, ledger=path, budget=2.0)
            done += 1
        except BudgetError:
            pass
        except Exception:  # reported to the test: a bare exit status 1 says nothing
            import traceback

            out.put(traceback.format_exc())
            return
    out.put(done)


def test_the_budget_holds_across_processes_without_losing_entries(tmp_path):
    # The check and the append are one SQLite transaction (BEGIN IMMEDIATE): four processes
    # making twelve attempts of eps 0.5 against a budget of 2 on the same data get exactly
    # four releases through, and every one of them is in the verified ledger.
    import multiprocessing

    path = str(tmp_path / "l.db")
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    workers, attempts = 4, 3
    barrier, out = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=_budget_worker, args=(path, attempts, barrier, out))
             for _ in range(workers)]
    for p in procs:
        p.start()
    done = [out.get(timeout=120) for _ in range(workers)]  # before join: a full pipe blocks
    for p in procs:
        p.join(timeout=120)
    assert not [d for d in done if isinstance(d, str)], done
    assert [p.exitcode for p in procs] == [0] * workers
    entries, head = ledger.read(path)
    assert sum(done) == head.count == 4
    (c,) = compositions_by_data(entries)
    assert c.composed and c.epsilon == 2.0


# -- the exact joint audit on demand ----------------------------------------------------------


def test_ledger_show_audit_matches_the_joint_auditor(tmp_path, capsys):
    from quiltpriv.audit.joint import joint_audit
    from quiltpriv.audit.ledger import AUDIT_WORDS, audit_ledger

    # the README's session: two linear releases protecting income on the student model
    data = pd.DataFrame({"height": [1, 0, 1, 0, 1, 0, 1, 1], "sat": [0, 1, 1, 0, 1, 1, 0, 1]})
    csv, path = tmp_path / "data.csv", tmp_path / "l.db"
    data.to_csv(csv, index=False)
    base = ["release", "student", "--sensitive", "income", "--query", "linear", "--bounds",
            "height=0:1,sat=0:1", "--epsilon", "1", "--data", str(csv), "--ledger", str(path)]
    assert _quiet(main, [*base, "--weights", "height=1,sat=1"]) == 0
    assert _quiet(main, [*base, "--weights", "height=1,sat=0.5"]) == 0
    capsys.readouterr()
    entries, _ = ledger.read(path)
    theta = qp.load_model("student")
    bounds = {"height": (0, 1), "sat": (0, 1)}
    qs = [qp.LinearQuery({"height": 1.0, "sat": 1.0}, bounds),
          qp.LinearQuery({"height": 1.0, "sat": 0.5}, bounds)]
    scales = [e.record["calibration"]["noise_scale_used"] for e in entries]
    direct = joint_audit(theta, qs, scales, "income", records=8)
    (a,) = audit_ledger(theta, entries)
    assert a.loss == direct.loss and a.releases == ("#0", "#1") and a.records == 8
    assert 0.18 < a.loss < 0.19  # the calibrated scales give 0.184; the drawn ones a hair less
    assert main(["ledger", "show", str(path), "--audit", "student"]) == 0
    out = capsys.readouterr().out
    assert AUDIT_WORDS in out  # never split across lines
    out = " ".join(out.split())
    assert f"releases #0, #1: joint privacy loss {a.loss:.6g} for secrets about {{income}} " \
           f"({AUDIT_WORDS}: fingerprint {theta.fingerprint()[:16]}..., n = 8" in out
    assert main(["ledger", "show", str(path), "--audit", "student", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["audits"][0]["loss"] == a.loss and doc["audits"][0]["label"] == AUDIT_WORDS


def test_ledger_audit_of_the_xor_pair_and_its_refusals(tmp_path, capsys):
    from quiltpriv.audit.ledger import audit_ledger

    edges, states, tables = _xor_tables()
    one = theta_from_tables(edges, states, tables)
    two = theta_from_tables(edges, states, [tables, tables])
    path = tmp_path / "l.db"
    _quiet(qp.release, qp.plan(one, Q1, "i", 0.5), Q1, XOR_DATA, ledger=path)
    _quiet(qp.release, qp.plan(two, Q2, "i", 0.5), Q2, XOR_DATA, ledger=path)
    entries, _ = ledger.read(path)
    (a,) = audit_ledger(two, entries)
    assert a.loss == pytest.approx(np.log((0.8**6 + 0.2**6) / 2 / (0.8**3 * 0.2**3)),
                                   rel=1e-12)
    assert a.scales == (0.0, 0.0) and a.models == (one.fingerprint(), two.fingerprint())
    assert "planned against other models" in " ".join(a.explain().split())
    # a Gaussian release: not audited, with the reason
    g = _quiet(build_mechanism("group-dp-gaussian", None, Q1, (), 0.5, delta=1e-5).release,
               XOR_DATA)
    ledger.append(path, g.to_dict())
    entries, _ = ledger.read(path)
    (a,) = audit_ledger(two, entries)
    assert a.loss is None and "Laplace noise only" in a.refused
    assert "joint loss not audited" in a.explain()
    # too large for the exact auditor: refused at once, not approximated
    big = tmp_path / "big.db"
    n = 400
    frame = pd.DataFrame({"j": [0, 1] * (n // 2), "k": [1, 1, 0, 0] * (n // 4)})
    for where, attrs in (("j == 1", ["j"]), ("k == 1", ["k"]),
                         ("j == 1 and k == 1", ["j", "k"])):
        qq = qp.CountQuery(attrs, n, where=where, domain={a: (0, 1) for a in attrs})
        _quiet(qp.release, qp.plan(two, qq, "i", 0.5), qq, frame, ledger=big)
    entries, _ = ledger.read(big)
    (a,) = audit_ledger(two, entries, time_limit=None)
    assert a.loss is None and "too large for the exact joint auditor" in a.refused
    # past the time limit: refused
    small = tmp_path / "small.db"
    n = 60
    q = qp.CountQuery(["j", "k"], n, where="j == 1 or k == 0", domain={"j": (0, 1),
                                                                        "k": (0, 1)})
    frame = pd.DataFrame({"j": [0, 1] * (n // 2), "k": [1, 0] * (n // 2)})
    for qq in (q, qp.CountQuery(["j"], n, where="j == 1", domain={"j": (0, 1)})):
        _quiet(qp.release, qp.plan(two, qq, "i", 0.5), qq, frame, ledger=small)
    (a,) = audit_ledger(two, ledger.read(small)[0], time_limit=1e-9)
    assert a.loss is None and "time limit" in a.refused
    assert main(["ledger", "verify", str(path), "--audit", "student"]) == 2
    assert "--audit apply to 'ledger show'" in capsys.readouterr().err


def test_the_readme_ledger_session_runs_as_shown(tmp_path, capsys, monkeypatch):
    # README, "Releases over time": the commands as written, in a fresh folder.
    import shlex
    from pathlib import Path

    from quiltpriv.audit.ledger import AUDIT_WORDS

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Releases over time")
    section = readme[start:readme.index("\n## ", start + 1)]
    commands = [ln.strip() for ln in section.splitlines() if ln.startswith("    quiltpriv ")]
    assert len(commands) == 4
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.csv").write_text("height,sat\n1,0\n0,1\n1,1\n0,0\n1,1\n0,1\n1,0\n1,1\n")
    codes, errs = [], []
    for cmd in commands[:3]:
        codes.append(_quiet(main, shlex.split(cmd)[1:]))
        errs.append(capsys.readouterr().err)
    assert codes == [0, 0, 2]
    assert "no published result proves a total for releases #0, #1, this release" in errs[2]
    assert "no published result proves a total" in section
    assert not (tmp_path / "third.json").exists()
    assert main(shlex.split(commands[3])[1:]) == 0
    out = capsys.readouterr().out
    assert "together: NO joint guarantee" in out and AUDIT_WORDS in out
    assert "data set 'survey'" in out and "joint privacy loss 0.1842" in out
    assert "joint privacy loss 0.184231 for secrets about {income}" in section
