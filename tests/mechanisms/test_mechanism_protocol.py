"""The one mechanism protocol: every registered mechanism's guarantee, calibration and release.

Each mechanism's calibration is compared with the mechanism's own function (real numbers), its
release with the query's declared domain (refusals), the JSON schema of the release record,
seeded reproducibility and its warning, and, for two mechanisms, the released noise with its
calibrated scale (a bounded, seeded statistical check).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
import random
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import schema_check
from marks import fast_sample

from quiltpriv.cli import main
from quiltpriv.errors import (
    ParameterError,
    QueryError,
    QuiltPrivError,
    RepeatedReleaseWarning,
    SeededNoiseWarning,
)
from quiltpriv.mechanisms.apmqm import plan
from quiltpriv.mechanisms.group_dp import group_gaussian, group_laplace
from quiltpriv.mechanisms.mqm import markov_quilt_mechanism
from quiltpriv.mechanisms.network_wasserstein import network_wasserstein
from quiltpriv.mechanisms.protocol import (
    GUARANTEE_KINDS,
    Calibration,
    Guarantee,
    Mechanism,
    ReleaseRecord,
)
from quiltpriv.mechanisms.registry import (
    MECHANISMS,
    apgm_mechanism,
    build_mechanism,
    distribution_privacy_mechanism,
    wasserstein_laws_mechanism,
)
from quiltpriv.model.loading import load_model
from quiltpriv.queries.query import CountQuery, MeanQuery
from quiltpriv.releases import records

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "release-record.schema.json").read_text())
EPS, DELTA, N = 1.0, 1e-6, 20


@pytest.fixture(scope="module")
def theta():
    return load_model("student")


def _query(records_: int = N) -> CountQuery:
    return CountQuery(["sat"], records_, where="sat == 1", domain={"sat": [0, 1]})


def _data(name: str) -> pd.DataFrame:
    # MQM releases on one realisation of its network: one row.
    return pd.DataFrame({"sat": [1]}) if name == "mqm" else pd.DataFrame({"sat": [0, 1] * 10})


def _build(name: str, theta, query=None):
    delta = DELTA if MECHANISMS[name].needs_delta else None
    return build_mechanism(name, theta, query or _query(1 if name == "mqm" else N), "income",
                           EPS, delta=delta)


def _valid(record: dict) -> None:
    errs = schema_check.errors(record, SCHEMA)
    assert not errs, errs
    try:
        import jsonschema
    except ImportError:  # not a dependency: the small validator above is the check
        return
    jsonschema.validate(record, SCHEMA)


def _quiet_release(m, data, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = m.release(data, **kw)
    return r, [w.category for w in caught]


# -- guarantee and calibration equal the mechanism's own numbers ----------------------------------


def test_registry_lists_every_mechanism_the_cli_runs():
    assert list(MECHANISMS) == ["apmqm", "group-dp", "wasserstein", "group-dp-gaussian", "mqm"]


def test_apmqm_calibration_is_the_plans(theta):
    m = _build("apmqm", theta)
    p = plan(theta, _query(), "income", EPS)
    assert isinstance(m, Mechanism) and m.name == "APMQM"
    assert m.calibration.scale == p.scale == 20.0  # sat is nearby income: the trivial quilt
    b = p.binding
    assert m.calibration.sensitivity == b.sensitivity
    assert m.calibration.scale == pytest.approx(b.sensitivity / (EPS - b.influence))
    assert m.calibration.details["binding"] == "income"
    assert m.guarantee == Guarantee("distributional attribute privacy", EPS, 0.0,
                                    m.guarantee.assumptions, ("income",))
    assert m.guarantee.assumptions  # said in words


def test_group_dp_calibration_is_n_delta_over_eps(theta):
    m = _build("group-dp", theta)
    assert m.calibration.scale == group_laplace(1.0, N, EPS).scale == N * 1.0 / EPS
    assert m.calibration.sensitivity == N and m.calibration.noise == "laplace"
    assert m.guarantee.kind == "differential privacy (group)" and m.guarantee.delta == 0
    assert m.theta_identity is None
    g = _build("group-dp-gaussian", theta)
    assert g.calibration.scale == group_gaussian(1.0, N, EPS, DELTA,
                                                 calibration="analytic").scale
    assert g.calibration.noise == "gaussian" and g.guarantee.delta == DELTA
    assert g.calibration.scale > N / EPS  # more noise than Laplace at this delta


def test_wasserstein_calibration_is_w_over_eps(theta):
    m = _build("wasserstein", theta)
    w = network_wasserstein(theta, _query(), "income", EPS)
    assert m.calibration.scale == w.scale and m.calibration.sensitivity == w.sensitivity
    assert m.calibration.scale == pytest.approx(w.sensitivity / EPS)
    assert 0 < m.calibration.scale < 20.0  # far below APMQM's trivial quilt here
    assert m.theta_identity["fingerprint"] == theta.fingerprint()


def test_mqm_calibration_is_l_times_nearby_over_eps_minus_influence(theta):
    m = _build("mqm", theta)
    # only the entries the query reads count in N (an unread entry changes nothing)
    read = _query().attributes
    p = markov_quilt_mechanism(theta, EPS, lipschitz=1.0, protected="income", read=read)
    assert m.calibration.scale == p.scale
    b = p[p.binding]
    n_read = len([v for v in b.nearby if v in read])
    assert b.nearby_count == n_read <= len(b.nearby)
    assert m.calibration.sensitivity == n_read  # L = 1 for a count over one row
    assert m.calibration.scale >= n_read / (EPS - b.influence)
    assert m.calibration.scale == pytest.approx(n_read / (EPS - b.influence))
    every = markov_quilt_mechanism(theta, EPS, lipschitz=1.0, protected="income")
    assert every.scale >= p.scale
    assert m.guarantee.kind == "pufferfish (Markov quilt)"


def test_lipschitz_of_mqm_is_the_largest_one_column_sensitivity(theta):
    q = MeanQuery("sat", lower=0, upper=3)
    m = build_mechanism("mqm", theta, q, "income", EPS)
    assert m.calibration.details["lipschitz"] == 3.0
    # N counts only the entries the query reads (sat): less noise than counting all of N
    assert m.calibration.scale == markov_quilt_mechanism(theta, EPS, lipschitz=3.0,
                                                         protected="income",
                                                         read=["sat"]).scale
    assert m.calibration.scale < markov_quilt_mechanism(theta, EPS, lipschitz=3.0,
                                                        protected="income").scale


# -- release: declared domain, record, seeds ---------------------------------------------------


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_release_refuses_data_outside_the_declared_domain(theta, name):
    m = _build(name, theta)
    bad = _data(name).assign(sat=2)  # 2 is not in the declared domain [0, 1]
    with pytest.raises(QueryError, match="outside its declared domain"):
        m.release(bad, seed=1)
    with pytest.raises(QueryError, match="no column"):
        m.release(pd.DataFrame({"height": [1]}), seed=1)
    with pytest.raises(QuiltPrivError):
        m.release(pd.DataFrame({"sat": [0, 1] * 30}), seed=1)  # more records than declared
    with pytest.raises(QueryError):
        m.release([[1]], seed=1)  # not a DataFrame


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_record_validates_and_says_what_the_mechanism_is(theta, name):
    m = _build(name, theta)
    data = _data(name)
    r, _ = _quiet_release(m, data, seed=5)
    assert isinstance(r, ReleaseRecord)
    d = r.to_dict()
    _valid(d)
    assert json.loads(r.to_json()) == d
    assert d["format"] == records.RELEASE_FORMAT == "quiltpriv-release/4"
    assert d["mechanism"] == m.name
    assert d["guarantee"] == m.guarantee.to_dict()
    assert {k: d["calibration"][k] for k in m.calibration.to_dict()} == \
        m.calibration.to_dict()
    assert d["calibration"]["noise_scale_used"] >= m.calibration.scale
    assert d["data"]["rows"] == len(data) and d["data"]["columns"] == ["sat"]
    assert d["query"]["definition"] == m.query.to_dict() if name != "apmqm" else True
    assert d["noise"] == {"source": "seeded", "seed": 5, "secure": False,
                          "sampler": d["sampler"]}
    assert (d["plan"] is None) == (name != "apmqm")
    assert (d["details"] is None) == (name == "apmqm")
    assert (d["model"] is None) == name.startswith("group-dp")


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_seeded_releases_are_reproducible_and_warn(theta, name):
    m = _build(name, theta)
    data = _data(name)
    a, cats = _quiet_release(m, data, seed=11)
    b, _ = _quiet_release(m, data, seed=11)
    c, _ = _quiet_release(m, data, seed=12)
    assert SeededNoiseWarning in cats
    assert a.value == b.value != c.value
    s, cats = _quiet_release(m, data)
    assert SeededNoiseWarning not in cats and RepeatedReleaseWarning in cats
    assert s.source == "secure" and s.secure and s.seed is None


def test_group_dp_release_goes_into_a_ledger(theta, tmp_path):
    from quiltpriv.releases import ledger

    m = _build("group-dp", theta)
    path = tmp_path / "l.db"
    r, _ = _quiet_release(m, _data("group-dp"), ledger=path)
    entries, head = ledger.read(path)
    assert head.count == 1 and entries[0].record == r.to_dict()
    # one group-DP release: its own guarantee, as its record states
    c = ledger.composition(entries)
    assert c.composed and c.theorem == "own guarantee" and c.epsilon == r.guarantee.epsilon
    assert c.kind == "differential privacy (group)" and c.sensitive == ()


# ~1.5 s each: the Gaussian one is slow (Gaussian release noise is checked by default in
# test_noise.py::test_gaussian_release_inflation_and_distribution).
@pytest.mark.parametrize(("name", "spread"), fast_sample([("group-dp", "laplace"),
                                                          ("group-dp-gaussian", "gaussian")],
                                                         1, unpack=True))
def test_released_noise_has_the_calibrated_scale(theta, name, spread):
    # 600 seeded releases: the mean absolute noise of Laplace(b) is b, the standard deviation
    # of N(0, sigma^2) is sigma; both are estimated within 4 standard errors (< 20 %).
    m = _build(name, theta, CountQuery(["sat"], 5, where="sat == 1", domain={"sat": [0, 1]}))
    data = pd.DataFrame({"sat": [0, 1, 1, 0, 1]})
    rng = random.Random(2026)
    noise = np.array([_quiet_release(m, data, seed=rng)[0].value - 3.0 for _ in range(600)])
    scale = m.calibration.scale
    assert scale == (5.0 if spread == "laplace" else
                     group_gaussian(1.0, 5, EPS, DELTA, calibration="analytic").scale)
    if spread == "laplace":
        assert abs(np.mean(np.abs(noise)) / scale - 1) < 0.2
    else:
        assert abs(np.std(noise) / scale - 1) < 0.2
    assert abs(np.mean(noise)) < 4 * np.std(noise) / math.sqrt(len(noise))


# -- mechanisms wrapped from their own results ---------------------------------------------------


def test_apgm_wasserstein_laws_and_distribution_privacy_follow_the_protocol():
    from quiltpriv.distribution.distribution_privacy import dirm_laplace, expm_laplace
    from quiltpriv.mechanisms.apgm import GaussianRecordModel, apgm_gaussian_columns
    from quiltpriv.mechanisms.wasserstein import wasserstein_mechanism

    model = GaussianRecordModel([0.0, 0.0], [[1.0, 0.5], [0.5, 1.0]], ("x", "y"))
    res = apgm_gaussian_columns(model, 50, "x", {"y": [0.0, 1.0]}, 0.5, 1e-5)
    q = MeanQuery("x", lower=-10, upper=10)
    m = apgm_mechanism(res, q)
    assert isinstance(m, Mechanism) and m.calibration.scale == res.sigma > 0
    assert m.calibration.sensitivity == max(res.sensitivity.values())
    assert m.guarantee.kind == "dataset attribute privacy" and m.guarantee.delta == 1e-5
    data = pd.DataFrame({"x": [0.5, -0.25, 1.0]})
    r, _ = _quiet_release(m, data, seed=3)
    _valid(r.to_dict())
    with pytest.raises(QueryError, match="outside the declared bounds"):
        m.release(pd.DataFrame({"x": [11.0]}))

    w = wasserstein_mechanism({0: ([0, 1], [0.5, 0.5]), 1: ([0, 1, 2], [0.25, 0.5, 0.25])},
                              EPS)
    mw = wasserstein_laws_mechanism(w, _query())
    assert mw.calibration.scale == w.scale and mw.calibration.sensitivity == w.sensitivity
    _valid(_quiet_release(mw, _data("x"), seed=1)[0].to_dict())

    e = expm_laplace({"a": [0.0], "b": [0.3]}, EPS)
    md = distribution_privacy_mechanism(e, MeanQuery("x", lower=0, upper=1))
    assert md.calibration.scale == e.laplace_scale == pytest.approx(0.3)
    assert md.guarantee.kind == "distribution privacy"
    _valid(_quiet_release(md, pd.DataFrame({"x": [0.5, 0.25]}), seed=1)[0].to_dict())
    d = dirm_laplace({"a": [0.0, 0.0], "b": [0.3, 0.1]}, EPS)
    with pytest.raises(QuiltPrivError):  # directional noise has no one-scale release
        distribution_privacy_mechanism(d, MeanQuery("x", lower=0, upper=1))


# -- the protocol's own types -----------------------------------------------------------------


def test_guarantee_and_calibration_refuse_bad_values():
    assert "subset privacy" in GUARANTEE_KINDS
    for bad in [dict(kind="secrecy", epsilon=1.0), dict(kind="subset privacy", epsilon=0.0),
                dict(kind="subset privacy", epsilon=1.0, delta=1.0),
                dict(kind="subset privacy", epsilon=math.inf),
                dict(kind="subset privacy", epsilon=1.0, assumptions="one string")]:
        with pytest.raises(ParameterError):
            Guarantee(**bad)
    for bad in [("cauchy", 1.0, 1.0, "why"), ("laplace", -1.0, 1.0, "why"),
                ("laplace", 1.0, math.nan, "why"), ("laplace", 1.0, 1.0, "")]:
        with pytest.raises(ParameterError):
            Calibration(*bad)
    c = Calibration("laplace", 2.0, 1.0, "[X]: b = 2")
    assert c.std >= math.sqrt(2) * 2 and json.loads(c.to_json())["why"] == "[X]: b = 2"


def test_build_refuses_unknown_names_and_misplaced_delta(theta):
    with pytest.raises(ParameterError, match="unknown mechanism 'nope'"):
        build_mechanism("nope", theta, _query(), "income", EPS)
    with pytest.raises(ParameterError, match="delta"):
        build_mechanism("apmqm", theta, _query(), "income", EPS, delta=1e-5)
    with pytest.raises(ParameterError, match="needs delta"):
        build_mechanism("group-dp-gaussian", theta, _query(), "income", EPS)


# -- names and JSON forms ---------------------------------------------------------------------


def test_renamed_classes_keep_their_old_names_with_a_warning():
    from quiltpriv.gap import privatizers
    from quiltpriv.mechanisms import subset_privacy

    with pytest.warns(DeprecationWarning, match="AccountedRelease"):
        assert subset_privacy.Release is subset_privacy.AccountedRelease
    with pytest.warns(DeprecationWarning, match="GaussianNoisePrivatizer"):
        assert privatizers.GaussianMechanism is privatizers.GaussianNoisePrivatizer


RESULT_MODULES = ["quiltpriv.mechanisms." + m for m in (
    "apgm", "apmqm.sensitive_plan", "apmqm.plan_types", "compare", "group_dp", "mqm", "noise",
    "protocol", "verification", "wasserstein",
    "network_wasserstein")] + ["quiltpriv.distribution." + m for m in (
        "distribution_privacy", "local_distribution_privacy", "tupling", "property_model")] + [
    "quiltpriv.audit." + m for m in ("exact", "joint", "gaussian", "adversary")] + [
    "quiltpriv.gap.privatizers", "quiltpriv.gap.learning", "quiltpriv.mechanisms.subset_privacy",
    "quiltpriv.queries.network_laws"]


@pytest.mark.parametrize("module", RESULT_MODULES)
def test_every_result_dataclass_has_to_dict_and_to_json(module):
    mod = importlib.import_module(module)
    found = [c for n, c in vars(mod).items() if inspect.isclass(c) and c.__module__ == module
             and dataclasses.is_dataclass(c) and not n.startswith("_")]
    assert found
    missing = [c.__name__ for c in found if not (callable(getattr(c, "to_dict", None))
                                                and callable(getattr(c, "to_json", None)))]
    assert not missing, missing


def test_result_json_forms_hold_the_values():
    from fractions import Fraction

    from quiltpriv.mechanisms.wasserstein import Interval, wasserstein_mechanism

    g = group_laplace(2.0, 7, 0.5)
    assert g.to_dict() == {"mechanism": "laplace", "scale": 28.0, "group_sensitivity": 14.0,
                           "epsilon": 0.5, "delta": 0.0, "notes": list(g.notes)}
    assert json.loads(g.to_json()) == g.to_dict()
    assert Interval(Fraction(1, 3), 0.5).to_dict() == {"lo": "1/3", "hi": 0.5}
    w = wasserstein_mechanism({0: ([0, 1], [0.5, 0.5]), 1: ([0, 3], [0.5, 0.5])}, 2.0)
    assert json.loads(w.to_json())["scale"] == w.scale == 1.0  # W_inf = 2, b = W / eps


# -- the command line ---------------------------------------------------------------------------


def _cli(tmp_path, name, *extra):
    csv = tmp_path / f"{name}.csv"
    _data(name).to_csv(csv, index=False)
    records_ = "1" if name == "mqm" else str(N)
    return ["release", "student", "--sensitive", "income", "--epsilon", "1", "--query", "count",
            "--attributes", "sat", "--records", records_, "--where", "sat == 1", "--domain",
            "sat=0|1", "--data", str(csv), "--json", "--mechanism", name, *extra]


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_cli_release_runs_every_mechanism(tmp_path, capsys, theta, name):
    extra = ["--delta", str(DELTA)] if MECHANISMS[name].needs_delta else []
    assert main(_cli(tmp_path, name, "--seed", "4", *extra)) == 0
    cap = capsys.readouterr()
    d = json.loads(cap.out)
    _valid(d)
    m = _build(name, theta)
    assert d["mechanism"] == m.name and d["calibration"]["scale"] == m.calibration.scale
    assert d["noise"]["seed"] == 4 and "--mechanism" in d["command"]
    assert cap.err.strip().splitlines()[-1].startswith("quiltpriv: warning: seeded noise")


@pytest.mark.parametrize(("extra", "words"), [
    (["--mechanism", "nope"], "unknown mechanism 'nope'"),
    (["--mechanism", "group-dp-gaussian"], "needs --delta"),
    (["--mechanism", "group-dp", "--delta", "0.1"], "--delta applies"),
    (["--mechanism", "group-dp", "--delta", "1"], "--delta"),
    (["--mechanism", "mqm"], "1 row(s)"),
])
def test_cli_release_bad_mechanism_options_are_one_line(tmp_path, capsys, extra, words):
    args = _cli(tmp_path, "apmqm")[:-2] + extra
    assert main(args) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and len(cap.err.strip().splitlines()) == 1
    assert cap.err.startswith("quiltpriv: error: ") and words in cap.err


def test_cli_compare_recommends_a_mechanism_release_can_run(tmp_path, capsys):
    args = ["compare", "student", "--sensitive", "income", "--epsilon", "1", "--query",
            "count", "--attributes", "sat", "--records", str(N), "--where", "sat == 1",
            "--domain", "sat=0|1", "--json"]
    assert main(args) == 0
    c = json.loads(capsys.readouterr().out)
    best = c["best"]
    assert best == "wasserstein"
    row = next(r for r in c["rows"] if r["name"] == best)
    assert row["privacy"]["kind"] == "distributional attribute privacy"
    assert row["calibration"]["why"].startswith("[ZOC22, Alg. 4]")
    assert all(r["calibration"] is not None for r in c["rows"] if r["applicable"])
    assert main(_cli(tmp_path, best, "--seed", "1")) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["calibration"]["scale"] == row["scale"] == row["calibration"]["scale"]
    assert main(args[:-1]) == 0
    assert "--mechanism wasserstein" in capsys.readouterr().out


def test_mqm_pays_the_grid_against_the_least_nearby_sensitivity():
    """The grid's snapping inflates the noise by (Delta + g) / Delta, which is largest for the
    least Delta: every protected entry i needs b_i (Delta_i + g) / Delta_i with Delta_i = L
    |N_i & A|, so the release pays it against L (|N_i & A| >= 1), not against the binding
    entry's larger L |N & A| (the registry's release did, as the low-level MQMPlan.release
    did not)."""
    from fractions import Fraction

    import quiltpriv as qp
    from quiltpriv.mechanisms.protocol import _sampler_sensitivity

    flip = [[0.9, 0.1], [0.1, 0.9]]
    theta = qp.markov_chain(12, flip, [0.5, 0.5])
    read = [f"X{i}" for i in range(1, 13)]
    q = CountQuery(read, 1, where=" or ".join(f"{a} == 1" for a in read),
                   domain={a: [0, 1] for a in read})
    m = build_mechanism("mqm", theta, q, None, EPS)
    cal = m.calibration
    lip = cal.details["lipschitz"]
    assert cal.details["nearby"] > 1 and cal.sensitivity == lip * cal.details["nearby"]
    assert _sampler_sensitivity(cal) == lip
    rec, _ = _quiet_release(m, pd.DataFrame({a: [i % 2] for i, a in enumerate(read)}), seed=3)
    g, used = Fraction(rec.granularity), Fraction(rec.noise_scale_used)
    p = markov_quilt_mechanism(theta, EPS, lipschitz=lip, read=read)
    assert p.scale == cal.scale
    for entry in p.nodes:  # every entry's own need, exactly (used is t g rounded to a float)
        if entry.nearby_count:
            d = Fraction(lip) * entry.nearby_count
            assert used * (1 + Fraction(1, 2**52)) >= Fraction(entry.scale) * (d + g) / d
    # the inflation is exactly the one for Delta = L
    assert rec.noise_scale_used == pytest.approx(
        float(Fraction(cal.scale) * (Fraction(lip) + g) / Fraction(lip)), rel=2**-52)


@pytest.mark.parametrize("given", [None, "1", True, math.nan, math.inf, -1.0, 0.0, 5.0, 2.0])
def test_a_sampler_sensitivity_can_only_lower_delta(given):
    from quiltpriv.mechanisms.protocol import Calibration, _sampler_sensitivity

    details = {} if given is None else {"sampler_sensitivity": given}
    cal = Calibration("laplace", 4.0, 2.0, "why", details)
    assert _sampler_sensitivity(cal) == 2.0
    assert _sampler_sensitivity(Calibration("laplace", 4.0, 2.0, "why",
                                            {"sampler_sensitivity": 0.5})) == 0.5
