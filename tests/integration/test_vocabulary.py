"""One word for each thing in every public signature (issue 32, part 4).

The network is ``theta`` (``model`` means only a GAP joint model, in :mod:`quiltpriv.gap`), the
record count is ``records``, the sensitive attribute is ``sensitive``, the privacy parameter is
``epsilon``, a time budget in seconds is ``time_limit``. This test reads the signature of every
public function, class, method, dataclass field and property of every public module of the
package and fails on an old word. An old name that still works (with a DeprecationWarning,
:mod:`quiltpriv.utils.deprecation`) is not in the signature, so it does not count.

``NOT_YET`` lists the public names that still use an old word, each by name: the test fails
when a name not listed uses one, and when a listed name no longer does (so the list only
shrinks).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import warnings
from collections.abc import Iterator

import pytest

import quiltpriv
from quiltpriv.utils.deprecation import renamed_fields, renamed_keywords

#: Old word -> the word of the vocabulary.
OLD_WORDS: dict[str, str] = {
    "model": "theta", "plan_model": "plan_theta", "network": "theta", "net": "theta", "bn": "theta",
    "n_records": "records", "num_records": "records", "n_rows": "records", "n": "records",
    "eps": "epsilon", "epsilon_": "epsilon",
    "secret": "sensitive", "sensitive_attribute": "sensitive", "secret_attribute": "sensitive",
    "node": "sensitive",
    "timeout": "time_limit", "time_budget": "time_limit", "max_seconds": "time_limit",
    "max_time": "time_limit", "deadline": "time_limit",
}

#: Where an old word means something else, by module prefix or by public name.
MEANS_ANOTHER_THING: dict[str, frozenset[str]] = {
    # A GAP joint model of (X, Y) [HKCSR17], not a Theta.
    "model": frozenset({"quiltpriv.gap."}),
    # A node of the network (a table being edited, built or compared; a chain's node in the
    # Markov Quilt Mechanism [SWC17]), not the sensitive attribute.
    "node": frozenset({
        "quiltpriv.explorer.state.", "quiltpriv.model.", "quiltpriv.mechanisms.mqm.",
        "quiltpriv.mechanisms.fragility.TableChange", "quiltpriv.queries.network_laws.",
        "quiltpriv.inference.attribute_joints."}),
    # n of a formula (a binomial's n, an index range, the paper's pair set M(n)), not a record
    # count; a validator's value; a GAP sample size.
    "n": frozenset({
        "quiltpriv.mechanisms.noise.sqrt_upper", "quiltpriv.mechanisms.noise.uniform_index",
        "quiltpriv.queries.network_laws.binomial_pmf", "quiltpriv.queries.law_bounds.",
        "quiltpriv.queries.network_laws.LogPmfCache",
        "quiltpriv.mechanisms.subset_privacy.pair_matrix",
        "quiltpriv.utils.validation.", "quiltpriv.gap.learning.sample_"}),
    # A clock reading (time.monotonic()) handed down by a caller that holds the time_limit,
    # not a budget: allowed in the inference layer below the public entry points
    # (max_influence and influence_upper_bound are entry points: they take time_limit; their
    # *_until forms take the planner's deadline). The planners themselves (plan_node, the
    # chain and HMM step searches) take the TimeLimit.
    "deadline": frozenset({
        "quiltpriv.inference.influence.max_influence_until",
        "quiltpriv.inference.influence.influence_upper_bound_until",
        "quiltpriv.inference.attribute_joints.attribute_joints",
        "quiltpriv.inference.engines.base.JointQuery",
        "quiltpriv.inference.junction_tree.fill_tree_structure",
        "quiltpriv.inference.orders.greedy_elimination"}),
    # threading.Thread.join's own word, which the explorer's Job.join mirrors.
    "timeout": frozenset({"quiltpriv.explorer.jobs.Job.join"}),
}

#: Public names that still use an old word (name -> old words), to be renamed.
NOT_YET: dict[str, frozenset[str]] = {
}


def _public_modules() -> Iterator[object]:
    for info in pkgutil.walk_packages(quiltpriv.__path__, "quiltpriv."):
        parts = info.name.split(".")[1:]
        if any(p.startswith("_") for p in parts) or "static" in parts:
            continue
        yield importlib.import_module(info.name)


def _is_deprecated_alias(obj: object) -> bool:
    return isinstance(obj, property) and getattr(obj.fget, "__deprecated_alias__", False)


def _names(mod: object) -> Iterator[tuple[str, list[str]]]:
    """(qualified public name, the parameter/field/property names it shows)."""
    for name, obj in sorted(vars(mod).items()):
        if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
            continue
        qual = f"{mod.__name__}.{name}"
        if inspect.isfunction(obj):
            yield qual, list(inspect.signature(obj).parameters)
        elif inspect.isclass(obj):
            shown: list[str] = []
            try:
                shown += list(inspect.signature(obj).parameters)
            except (TypeError, ValueError):
                pass
            if dataclasses.is_dataclass(obj):
                shown += [f.name for f in dataclasses.fields(obj)]
            yield qual, shown
            for attr, value in vars(obj).items():
                if attr.startswith("_") or _is_deprecated_alias(value):
                    continue
                if isinstance(value, property):
                    yield f"{qual}.{attr}", [attr]
                elif inspect.isfunction(value) or isinstance(value, (staticmethod, classmethod)):
                    yield f"{qual}.{attr}", list(inspect.signature(getattr(obj, attr)).parameters)


def _allowed(word: str, qual: str) -> bool:
    return any(qual.startswith(p) for p in MEANS_ANOTHER_THING.get(word, ()))


def violations() -> dict[str, frozenset[str]]:
    """Public name -> the old words its signature uses."""
    found: dict[str, set[str]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for mod in _public_modules():
            for qual, shown in _names(mod):
                for word in shown:
                    if word in OLD_WORDS and not _allowed(word, qual):
                        found.setdefault(qual, set()).add(word)
    return {k: frozenset(v) for k, v in found.items()}


def test_public_signatures_use_the_vocabulary() -> None:
    found = violations()
    new = {k: sorted(v - NOT_YET.get(k, frozenset())) for k, v in found.items()}
    new = {k: v for k, v in new.items() if v}
    assert not new, "old words in public signatures (name: old words -> " + "; ".join(
        f"{k}: {', '.join(f'{w} -> {OLD_WORDS[w]}' for w in v)}" for k, v in sorted(new.items()))
    stale = {k: sorted(v - found.get(k, frozenset())) for k, v in NOT_YET.items()}
    stale = {k: v for k, v in stale.items() if v}
    assert not stale, f"renamed since NOT_YET was written; drop them from it: {stale}"


def test_the_scan_sees_an_old_word() -> None:
    """The scan is not vacuous: an old keyword in a public function of a module is found."""
    import types

    mod = types.ModuleType("quiltpriv.fake")

    def release(plan: object, eps: float, *, model: object = None) -> None: ...

    release.__module__ = mod.__name__
    mod.release = release  # type: ignore[attr-defined]
    shown = dict(_names(mod))
    assert shown["quiltpriv.fake.release"] == ["plan", "eps", "model"]
    assert _allowed("model", "quiltpriv.gap.privatizers.binary_pdd_score")
    assert not _allowed("model", "quiltpriv.mechanisms.compare.compare")


# The deprecation helpers ----------------------------------------------------------------------


def test_renamed_keywords_maps_the_old_keyword_with_a_warning() -> None:
    @renamed_keywords(eps="epsilon", model="theta")
    def scale(theta: str, sensitivity: float, epsilon: float) -> tuple[str, float]:
        return theta, sensitivity / epsilon

    assert list(inspect.signature(scale).parameters) == ["theta", "sensitivity", "epsilon"]
    assert scale("t", 2.0, epsilon=0.5) == ("t", 4.0)
    with pytest.warns(DeprecationWarning, match="'eps' is deprecated, use 'epsilon'") as got:
        assert scale("t", 2.0, eps=0.25) == ("t", 8.0)
    assert got[0].filename == __file__  # the warning names the caller's line
    with pytest.warns(DeprecationWarning, match="'model' is deprecated, use 'theta'"):
        assert scale(model="m", sensitivity=1.0, epsilon=1.0) == ("m", 1.0)
    with pytest.raises(quiltpriv.ParameterError, match="give epsilon= only"):
        scale("t", 1.0, epsilon=1.0, eps=2.0)


def test_renamed_fields_keeps_the_old_constructor_keyword_and_attribute() -> None:
    @renamed_fields(model="model_fingerprint")
    @dataclasses.dataclass(frozen=True)
    class Made:
        epsilon: float
        model_fingerprint: str

    with pytest.warns(DeprecationWarning, match="Made: 'model' is deprecated") as got:
        made = Made(1.0, model="abc")
    assert got[0].filename == __file__
    assert made == Made(1.0, "abc")
    with pytest.warns(DeprecationWarning, match="use 'model_fingerprint'"):
        assert made.model == "abc"  # type: ignore[attr-defined]
    assert [f.name for f in dataclasses.fields(Made)] == ["epsilon", "model_fingerprint"]
    assert _is_deprecated_alias(vars(Made)["model"])
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.model_fingerprint = "x"  # type: ignore[misc]


def test_the_old_keywords_of_the_public_api_still_work_with_a_warning() -> None:
    from quiltpriv.audit.exact import audit
    from quiltpriv.mechanisms.verification import check_plan

    theta = quiltpriv.load_model("student")
    query = quiltpriv.CountQuery(["height"], records=20, where="height == 1",
                                  domain={"height": (0, 1)})
    plan = quiltpriv.plan(theta, query, "income", epsilon=1.0)
    with pytest.warns(DeprecationWarning, match="check_plan: 'model' is deprecated, use 'theta'"):
        old = check_plan(plan, model=theta, query=query)
    assert old == check_plan(plan, theta, query)
    with pytest.warns(DeprecationWarning, match="audit: 'model' is deprecated"):
        assert audit(model=theta, query=query, sensitive="income", epsilon=1.0,
                     scale=plan.scale) == audit(theta, query, "income", 1.0, plan.scale)
    quilt = quiltpriv.markov_quilt(theta, "income", ["gender"])
    with pytest.warns(DeprecationWarning, match="markov_quilt: 'node' is deprecated, use "
                                                "'sensitive'"):
        assert quiltpriv.markov_quilt(theta, node="income", quilt=["gender"]) == quilt
    with pytest.warns(DeprecationWarning, match="Quilt: 'node' is deprecated"):
        assert quilt.node == quilt.sensitive == "income"  # type: ignore[attr-defined]


def test_max_influence_takes_sensitive_and_time_limit_and_the_old_words_still_work() -> None:
    import time

    from quiltpriv.inference.influence import influence_upper_bound

    theta = quiltpriv.load_model("chain")
    new = quiltpriv.max_influence(theta, "x01", ["x07"], time_limit=60)
    assert new.sensitive == "x01" and new == quiltpriv.max_influence(theta, "x01", ["x07"])
    with pytest.warns(DeprecationWarning, match="Influence: 'node' is deprecated") as got:
        assert new.node == "x01"  # type: ignore[attr-defined]
    assert got[0].filename == __file__
    with pytest.warns(DeprecationWarning, match="max_influence: 'node' is deprecated"):
        assert quiltpriv.max_influence(theta, node="x01", quilt=["x07"]) == new
    # deadline= was a time.monotonic() value; it keeps that meaning (one already past stops at
    # once, which no time_limit > 0 says), with a warning naming the caller's line
    with pytest.warns(DeprecationWarning, match=r"max_influence: 'deadline' \(a "
                      r"time.monotonic\(\) value\) is deprecated, use 'time_limit'") as got:
        old = quiltpriv.max_influence(theta, "x01", ["x07"], deadline=time.monotonic() + 60)
    assert old == new and got[0].filename == __file__
    with pytest.warns(DeprecationWarning) as got:
        assert quiltpriv.max_influence(theta, node="x01", quilt=["x07"],
                                       deadline=time.monotonic() + 60) == new
    assert [w.filename for w in got] == [__file__, __file__]
    with pytest.warns(DeprecationWarning, match="influence_upper_bound: 'deadline'"):
        assert influence_upper_bound(theta, "x01", ["x07"], deadline=time.monotonic() + 60) == new
    with pytest.raises(quiltpriv.ParameterError, match="give time_limit= only"):
        quiltpriv.max_influence(theta, "x01", ["x07"], time_limit=1, deadline=1.0)
    for bad in (0, -1, float("nan"), "soon"):
        with pytest.raises(quiltpriv.ParameterError, match="time_limit"):
            quiltpriv.max_influence(theta, "x01", ["x07"], time_limit=bad)


def test_the_planners_step_searches_take_time_limit_and_deadline_with_a_warning() -> None:
    """plan_node and the chain and HMM step searches take ``time_limit=`` (seconds or a running
    TimeLimit); their old ``deadline=`` (a time.monotonic() value) keeps its meaning, one
    already past stopping at once, with a warning naming time_limit and the caller's line."""
    import time

    import numpy as np

    from quiltpriv.mechanisms.apmqm import plan_node
    from quiltpriv.mechanisms.chain_quilts import chain_least_quilts
    from quiltpriv.mechanisms.hmm_quilts import hmm_least_quilts, hmm_order, hmm_search
    from quiltpriv.mechanisms.mqm import chain_order
    from quiltpriv.utils.time_limit import TimeLimit

    chain = quiltpriv.markov_chain(40, [[0.9, 0.1], [0.1, 0.9]], [0.5, 0.5])
    hmm = quiltpriv.hidden_markov(40, [[0.9, 0.1], [0.1, 0.9]], [[0.8, 0.2], [0.2, 0.8]],
                                  [0.5, 0.5])
    order, n = chain_order(chain), len(chain.nodes)
    observed = frozenset(hmm_order(hmm).observed)
    calls = {
        "plan_node": lambda **k: plan_node(chain, quiltpriv.CountQuery(["X5"], 10), "X3", 1.0,
                                           **k).optimal,
        "chain_least_quilts": lambda **k: bool(chain_least_quilts(
            chain, order, range(n), np.full(n, 1 / n), 1.0, **k).optimal.all()),
        "hmm_least_quilts": lambda **k: bool(hmm_least_quilts(
            hmm, hmm_order(hmm), hmm.nodes, 1.0, **k).optimal.all()),
        "hmm_search": lambda **k: bool(hmm_search(
            hmm, lambda v: 1.0 if v in observed else 0.0, hmm.nodes, 1.0,
            **k)[1].optimal.all()),  # type: ignore[index]
    }
    for name, call in calls.items():
        assert call() and call(time_limit=60) and call(time_limit=TimeLimit.starting_now(60))
        assert not call(time_limit=TimeLimit(1.0, time.monotonic() - 2))  # passed: stops
        for deadline, finishes in ((time.monotonic() + 60, True), (0.0, False)):
            with pytest.warns(DeprecationWarning, match=rf"{name}: 'deadline' \(a "
                              r"time.monotonic\(\) value\) is deprecated, use "
                              r"'time_limit'") as got:
                assert call(deadline=deadline) is finishes, (name, deadline)
            assert got[0].filename == __file__
        with pytest.raises(quiltpriv.ParameterError, match="give time_limit= only"):
            call(time_limit=1, deadline=1.0)
        with pytest.raises(quiltpriv.ParameterError):
            call(time_limit=-1)


def test_the_sensitive_attribute_is_sensitive_in_every_result_and_json_keeps_node() -> None:
    """Verification rows, fragility rows, the quilt trade-off, the candidate quilts and the
    step plans' index name the sensitive attribute ``sensitive``; the old ``node`` still works
    with a warning, and the JSON they write keeps its key ``"node"``."""
    from quiltpriv.mechanisms.fragility import fragility
    from quiltpriv.mechanisms.verification import check_plan
    from quiltpriv.reporting.plots import quilt_tradeoff
    from quiltpriv.reporting.report import candidate_quilts

    theta = quiltpriv.load_model("student")
    query = quiltpriv.CountQuery(["sat"], records=20, where="sat == 1", domain={"sat": (0, 1)})
    plan = quiltpriv.plan(theta, query, "income", epsilon=1.0)
    check = check_plan(plan, theta, query).attributes[0]
    row = fragility(theta, plan, query, time_limit=60).rows[0]
    for result, name in ((check, "AttributeCheck"), (row, "AttributeFragility")):
        assert result.sensitive == "income" and result.to_dict()["node"] == "income"
        assert "sensitive" not in result.to_dict()
        with pytest.warns(DeprecationWarning, match=f"{name}: 'node' is deprecated"):
            assert result.node == "income"  # type: ignore[union-attr]
    assert check_plan(plan, theta, query).to_dict()["sensitive"]["income"]["node"] == "income"
    tradeoff = quilt_tradeoff(theta, query, "income", 1.0)
    assert tradeoff.sensitive == "income"
    with pytest.warns(DeprecationWarning, match="quilt_tradeoff: 'node' is deprecated"):
        assert quilt_tradeoff(theta, query, node="income", epsilon=1.0) == tradeoff
    with pytest.warns(DeprecationWarning, match="candidate_quilts: 'node' is deprecated"):
        assert candidate_quilts(theta, query, node="income", epsilon=1.0) == candidate_quilts(
            theta, query, "income", 1.0)
    from quiltpriv.mechanisms.step_plans import StepPlans

    chain = quiltpriv.markov_chain(70, [[0.9, 0.1], [0.2, 0.8]], [0.3, 0.7])
    steps = quiltpriv.plan(chain, quiltpriv.LinearQuery({"X5": 1.0}, {"X5": (0, 1)}),
                           chain.nodes[::2], epsilon=1.0).sensitive
    assert isinstance(steps, StepPlans)
    assert steps.index(sensitive=chain.nodes[4]) == 2
    with pytest.warns(DeprecationWarning, match="StepPlans.index: 'node' is deprecated"):
        assert steps.index(node=chain.nodes[4]) == 2  # type: ignore[call-arg]


def test_query_constructors_take_attributes_then_records_then_bounds_by_keyword() -> None:
    new_sum = quiltpriv.SumQuery("sat", 30, lower=0.0, upper=2.0)
    new_mean = quiltpriv.MeanQuery("sat", lower=0.0, upper=2.0)
    assert (new_sum.records, new_sum.lower, new_sum.upper) == (30, 0.0, 2.0)
    for name in ("SumQuery", "MeanQuery", "CountQuery", "HistogramQuery"):
        params = list(inspect.signature(getattr(quiltpriv, name)).parameters.values())
        first = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD][:2]
        assert first[0] in ("attribute", "attributes"), name
        assert "records" not in first or first[1] == "records", name
        bounds = [p for p in params if p.name in ("lower", "upper")]
        assert all(p.kind is p.KEYWORD_ONLY for p in bounds), name
    # The old positional order still works, with a warning, and gives the same query (and the
    # same JSON, so plans and their fingerprints are unchanged).
    with pytest.warns(DeprecationWarning, match=r"SumQuery: positional arguments in the old "
                      r"order \(attribute, lower, upper, records\)") as got:
        old_sum = quiltpriv.SumQuery("sat", 0.0, 2.0, 30)
    assert got[0].filename == __file__
    with pytest.warns(DeprecationWarning):
        assert quiltpriv.SumQuery("sat", 0.0, 2.0, records=30) == new_sum
    with pytest.warns(DeprecationWarning, match="MeanQuery"):
        old_mean = quiltpriv.MeanQuery("sat", 0.0, 2.0)
    assert (old_sum, old_mean) == (new_sum, new_mean)
    assert old_sum.to_dict() == {"kind": "sum", "attribute": "sat", "lower": 0.0, "upper": 2.0,
                                 "records": 30}
    with pytest.raises(quiltpriv.ParameterError, match="records given twice"):
        quiltpriv.SumQuery("sat", 0.0, 2.0, 30, records=30)


def test_plan_model_is_model_fingerprint_and_plan_files_keep_their_key(tmp_path) -> None:
    import pickle

    theta = quiltpriv.load_model("student")
    query = quiltpriv.CountQuery(["height"], records=20)
    plan = quiltpriv.plan(theta, query, "income", epsilon=1.0)
    assert plan.model_fingerprint == theta.fingerprint()
    with pytest.warns(DeprecationWarning, match="Plan: 'model' is deprecated, use "
                                                "'model_fingerprint'"):
        assert plan.model == plan.model_fingerprint  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning, match="plan: 'model' is deprecated, use 'theta'"):
        assert quiltpriv.plan(model=theta, query=query, sensitive="income",
                              epsilon=1.0) == plan
    d = plan.to_dict()
    assert d["model"] == theta.fingerprint() and "model_fingerprint" not in d
    # each attribute's entry keeps its key "node" (SensitivePlan.sensitive)
    assert d["sensitive"]["income"]["node"] == "income" and plan.sensitive[0].sensitive == "income"
    assert "sensitive" not in d["sensitive"]["income"]
    back = quiltpriv.Plan.from_dict(d)  # a file written before the rename reads the same
    assert back == plan and not back.verified
    state = {**back.__getstate__()}  # a plan pickled before the rename
    state["model"] = state.pop("model_fingerprint")
    old = quiltpriv.Plan.__new__(quiltpriv.Plan)
    old.__setstate__(state)
    assert old == plan and pickle.loads(pickle.dumps(plan)) == plan


def test_one_release_shape_qp_release_returns_a_release_record() -> None:
    import pandas as pd

    from quiltpriv.mechanisms.protocol import ReleaseRecord
    from quiltpriv.mechanisms.registry import MECHANISMS, build_mechanism

    theta = quiltpriv.load_model("student")
    query = quiltpriv.CountQuery(["sat"], records=20, where="sat == 1", domain={"sat": (0, 1)})
    plan = quiltpriv.plan(theta, query, "income", epsilon=1.0)
    data = pd.DataFrame({"sat": [k % 2 for k in range(20)]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # repeated releases of one data set, seeded noise
        rel = quiltpriv.release(plan, query, data, seed=3)
        assert isinstance(rel, ReleaseRecord) and rel.plan is plan
        assert rel.scale == rel.noise_scale_used >= plan.scale
        assert (rel.guarantee, rel.calibration) == (plan.guarantee, plan.calibration)
        assert rel.theta_identity == {"fingerprint": theta.fingerprint(),
                                      "theta_size": len(theta), "provenance": rel.provenance}
        with pytest.warns(DeprecationWarning, match="Release: 'model' is deprecated, use "
                                                    "'theta_identity'"):
            assert rel.model == rel.theta_identity  # type: ignore[attr-defined]
        record = rel.to_record()
        assert type(record) is ReleaseRecord and record.plan == plan.to_dict()
        assert record.to_dict()["model"]["fingerprint"] == theta.fingerprint()  # the file's key
        with pytest.warns(DeprecationWarning, match="ReleaseRecord: 'model' is deprecated"):
            assert dataclasses.replace(record, theta_identity=None) == ReleaseRecord(
                **{**{f.name: getattr(record, f.name) for f in dataclasses.fields(record)
                      if f.name != "theta_identity"}, "model": None})
        assert rel.to_dict() == record.to_dict() and rel.to_dict()["plan"] == plan.to_dict()
        for name in MECHANISMS:
            if MECHANISMS[name].needs_delta or name == "mqm":  # MQM releases one row of data
                continue
            mech = build_mechanism(name, theta, query, "income", 1.0)
            assert isinstance(mech.release(data, seed=3), ReleaseRecord), name
