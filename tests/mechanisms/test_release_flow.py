"""The one release flow (:mod:`quiltpriv.mechanisms.release_flow`): APMQM's release
(:func:`quiltpriv.release`) and a registered mechanism's (:meth:`QueryMechanism.release`) end
in the same function, so the same plan released both ways on the same seed gives the same
record, value and noise included (only the time, the plan's JSON and the details differ)."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.mechanisms.protocol import QueryMechanism
from quiltpriv.mechanisms.registry import APMQMMechanism
from quiltpriv.model.loading import load_model

N = 20
QUERIES = {
    "count": lambda: qp.CountQuery(["sat"], N, where="sat == 1", domain={"sat": [0, 1]}),
    "histogram": lambda: qp.HistogramQuery(["sat"], N, categories={"sat": [0, 1]}),
}


def _comparable(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in ("timestamp", "plan", "details")}


@pytest.mark.parametrize("seed", [0, 7, 2**40])
@pytest.mark.parametrize("kind", sorted(QUERIES))
def test_apmqm_and_the_query_mechanism_release_one_record(kind, seed):
    theta = load_model("student")
    query = QUERIES[kind]()
    plan = qp.plan(theta, query, "income", 1.0)
    assert plan.scale > 0
    data = pd.DataFrame({"sat": [0, 1] * (N // 2)})
    # The same calibration, guarantee, query and model as the plan's, as a generic mechanism
    # whose noise is paid for the plan's least positive sensitivity (as APMQM's grid is).
    least = min(sp.sensitivity for sp in plan.sensitive if sp.sensitivity > 0)
    assert least == plan.calibration.sensitivity
    generic = QueryMechanism(
        name=plan.mechanism, query=query, guarantee=plan.guarantee,
        calibration=plan.calibration, query_fingerprint=plan.query_fingerprint,
        theta_identity={"fingerprint": plan.model_fingerprint, "theta_size": plan.theta_size,
                        "provenance": getattr(theta, "provenance", None)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise; the same data released three times
        a = qp.release(plan, query, data, seed=seed).to_dict()
        b = generic.release(data, seed=seed).to_dict()
        c = APMQMMechanism(plan, query, theta).release(data, seed=seed).to_dict()
    assert _comparable(a) == _comparable(b) == _comparable(c)
    assert a["noise"]["source"] == "seeded" and a["noise"]["seed"] == seed
    assert a["plan"] == c["plan"] == plan.to_dict() and b["plan"] is None


def test_the_flow_warnings_name_the_callers_line():
    """Seeded noise, a repeat and a release without noise warn at the line that called the
    public release function (not inside the package), both ways of releasing."""
    theta = load_model("student")
    query = QUERIES["count"]()
    plan = qp.plan(theta, query, "income", 1.0)
    generic = QueryMechanism(
        name=plan.mechanism, query=query, guarantee=plan.guarantee,
        calibration=plan.calibration, query_fingerprint=plan.query_fingerprint)
    data = pd.DataFrame({"sat": [1, 0] * (N // 2)})
    for release in (lambda: qp.release(plan, query, data, seed=3),
                    lambda: generic.release(data, seed=3)):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            release()
            release()  # the second is a repeat of the first
        kinds = {type(w.message).__name__ for w in got}
        assert {"SeededNoiseWarning", "RepeatedReleaseWarning"} <= kinds
        assert {w.filename for w in got} == {__file__}
