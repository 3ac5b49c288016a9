"""Every bad input named in the core issue gets a clear, specific error."""

import math

import numpy as np
import pandas as pd
import pytest
from pgmpy.factors.discrete import TabularCPD
from pgmpy.models import DiscreteBayesianNetwork

import quiltpriv as qp
from quiltpriv.errors import ModelError, ParameterError, QueryError


def _two_nodes(b_values=None, name="m"):
    net = DiscreteBayesianNetwork([("a", "b")])
    net.name = name
    net.add_cpds(TabularCPD("a", 2, [[0.5], [0.5]]),
                 TabularCPD("b", 2, b_values or [[0.9, 0.2], [0.1, 0.8]], evidence=["a"],
                            evidence_card=[2]))
    return net


STATES = {"a": [0, 1], "b": [0, 1]}


def test_cycle():
    with pytest.raises(ModelError, match="cycle: .*a -> b -> a|cycle: .*b -> a -> b"):
        qp.theta_from_tables([("a", "b"), ("b", "a")], STATES,
                             {"a": np.full((2, 2), 0.5), "b": np.full((2, 2), 0.5)})


def test_missing_cpd():
    net = DiscreteBayesianNetwork([("a", "b")])
    net.add_cpds(TabularCPD("a", 2, [[0.5], [0.5]]))
    with pytest.raises(ModelError, match="no CPD for node.*'b'"):
        qp.theta_from_pgmpy(net)


def test_non_normalised_cpd():
    net = _two_nodes([[0.9, 0.2], [0.2, 0.8]])
    with pytest.raises(ModelError, match="does not sum to one.*1.1"):
        qp.theta_from_pgmpy(net)


@pytest.mark.parametrize("bad, msg", [(math.nan, "NaN"), (-0.1, "negative")])
def test_nan_and_negative_probabilities(bad, msg):
    tables = {"a": np.array([0.5, 0.5]), "b": np.array([[1 - bad, 0.5], [bad, 0.5]])}
    with pytest.raises(ModelError, match=msg):
        qp.theta_from_tables([("a", "b")], STATES, tables)


def test_wrong_shape():
    with pytest.raises(ModelError, match="expected shape"):
        qp.theta_from_tables([("a", "b")], STATES,
                             {"a": np.array([0.5, 0.5]), "b": np.array([0.5, 0.5])})


def test_theta_members_with_different_dags():
    other = DiscreteBayesianNetwork([("b", "a")])
    other.add_cpds(TabularCPD("b", 2, [[0.5], [0.5]]),
                   TabularCPD("a", 2, [[0.9, 0.2], [0.1, 0.8]], evidence=["b"],
                              evidence_card=[2]))
    with pytest.raises(ModelError, match="share one DAG.*a->b|share one DAG.*b->a"):
        qp.theta_from_pgmpy([_two_nodes(), other])


def test_theta_members_with_different_states():
    other = DiscreteBayesianNetwork([("a", "b")])
    other.add_cpds(TabularCPD("a", 2, [[0.5], [0.5]], state_names={"a": ["x", "y"]}),
                   TabularCPD("b", 2, [[0.9, 0.2], [0.1, 0.8]], evidence=["a"],
                              evidence_card=[2], state_names={"a": ["x", "y"], "b": [0, 1]}))
    with pytest.raises(ModelError, match="share state spaces"):
        qp.theta_from_pgmpy([_two_nodes(), other])


def test_empty_theta():
    with pytest.raises(ModelError, match="empty"):
        qp.theta_from_pgmpy([])


@pytest.mark.parametrize("eps", [0, -1, math.nan, math.inf, "1"])
def test_bad_epsilon(eps):
    t = qp.theta_from_pgmpy(_two_nodes())
    with pytest.raises(ParameterError, match="epsilon"):
        qp.plan(t, qp.CountQuery(["b"], 10), "a", eps)


def test_unknown_attributes():
    t = qp.theta_from_pgmpy(_two_nodes())
    with pytest.raises(ModelError, match="sensitive attribute 'zz' not in the network"):
        qp.plan(t, qp.CountQuery(["b"], 10), "zz", 1.0)
    with pytest.raises(ModelError, match="query attribute 'qq' not in the network"):
        qp.plan(t, qp.CountQuery(["qq"], 10), "a", 1.0)


@pytest.mark.parametrize("n", [0, -3, 2.5, math.nan])
def test_bad_records(n):
    with pytest.raises(ParameterError, match="records"):
        qp.CountQuery(["b"], n)


def test_dataframe_missing_column_and_out_of_bounds():
    q = qp.MeanQuery("x", lower=0, upper=1)
    with pytest.raises(QueryError, match="no column.*'x'"):
        q.evaluate(pd.DataFrame({"y": [0.5]}))
    with pytest.raises(QueryError, match="outside the declared bounds"):
        q.evaluate(pd.DataFrame({"x": [0.5, 1.5]}))
    with pytest.raises(QueryError, match="NaN"):
        q.evaluate(pd.DataFrame({"x": [0.5, math.nan]}))


def test_count_refuses_missing_values():
    q = qp.CountQuery(["x"], 5, where="x > 0")
    with pytest.raises(QueryError, match="missing/NaN values in \\['x'\\]"):
        q.evaluate(pd.DataFrame({"x": [1.0, math.nan]}))


def test_bad_query_definitions():
    with pytest.raises(QueryError, match="lower bound"):
        qp.MeanQuery("x", lower=2, upper=1)
    with pytest.raises(QueryError, match="no bounds"):
        qp.LinearQuery({"x": 1.0}, {})
    with pytest.raises(QueryError, match="not a finite number"):
        qp.CustomQuery(["q"], lambda b: math.inf if b else 0.0)
    with pytest.raises(QueryError, match="not monotone"):
        qp.CustomQuery(["x", "y"], lambda b: 1.0 if b == frozenset({"x"}) else 0.0)


def test_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        qp.load_model(tmp_path / "nope.bif")
    with pytest.raises(ModelError, match="no bundled model named 'nope'"):
        qp.load_model("nope")
    bad = tmp_path / "bad.bif"
    bad.write_text("network unknown {\n variable a { type discrete [ 2 ] { x, y }; }\n"
                   "probability ( a ) { table 0.5 ; }\n")
    with pytest.raises(ModelError, match="bad.bif"):
        qp.load_model(bad)
    junk = tmp_path / "junk.xml"
    junk.write_text("<BIF><NETWORK><VARIABLE>")
    with pytest.raises(ModelError, match="cannot read XMLBIF file"):
        qp.load_model(junk)
    weird = tmp_path / "model.txt"
    weird.write_text("x")
    with pytest.raises(ModelError,
                       match=r"unknown model file type .*\.xmlbif, \.json, \.json\.gz or \.py"):
        qp.load_model(weird)
    mod = tmp_path / "m.py"
    mod.write_text("def model():\n    raise RuntimeError('boom')\n")
    with pytest.raises(ModelError, match="boom"):
        qp.load_model(mod)


def test_cyclic_bif(tmp_path):
    text = """network n { }
variable a { type discrete [ 2 ] { x, y }; }
variable b { type discrete [ 2 ] { x, y }; }
probability ( a | b ) { (x) 0.5, 0.5; (y) 0.5, 0.5; }
probability ( b | a ) { (x) 0.5, 0.5; (y) 0.5, 0.5; }
"""
    f = tmp_path / "cyc.bif"
    f.write_text(text)
    with pytest.raises(ModelError, match="(?i)cyc|loop"):
        qp.load_model(f)
