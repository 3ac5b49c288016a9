"""Declared domains, never read off the data; one meaning of a predicate everywhere.

* a histogram's cells are its declared categories: two datasets that differ in one record give
  vectors of the same length, with labelled cells in declared order, checked against a slow
  count; values outside are an error or go to a declared catch-all cell;
* a count's declared domain is enforced on the data, and literals must be declared values;
* mechanisms that use the model's law of the count (Wasserstein on a network, compare, audit)
  read the predicate over record states only through a declared link (the domain is the
  record categories, or record_states maps onto them), else refuse -- the review's README query
  no longer gives "W_inf = 0 ... least noise: Wasserstein (std 0)";
* the command line declares all of this (--categories/--domain, --record-states,
  --catch-all), with one-line errors.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import Counter
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.audit.exact import audit, query_laws
from quiltpriv.errors import ModelError, QueryError
from quiltpriv.mechanisms.compare import compare
from quiltpriv.mechanisms.network_wasserstein import network_wasserstein
from quiltpriv.mechanisms.wasserstein import wasserstein_mechanism
from quiltpriv.model.network import theta_from_tables
from quiltpriv.queries.network_laws import count_laws, record_truth
from quiltpriv.queries.predicate import parse_predicate

README_WHERE = "height > 66 and sat > 1300"


# -- histograms -----------------------------------------------------------------------------------


def test_histogram_categories_are_required():
    with pytest.raises(QueryError, match="declare the categories .*--categories"):
        qp.HistogramQuery(["sat"], 10)
    with pytest.raises(QueryError, match="missing: \\['b'\\]"):
        qp.HistogramQuery(["a", "b"], 10, categories={"a": (0, 1)})
    with pytest.raises(QueryError, match="not an attribute: \\['c'\\]"):
        qp.HistogramQuery(["a"], 10, categories={"a": (0, 1), "c": (0,)})
    for bad, match in [((), "empty"), ((1, 1.0), "twice"), ((1, "a"), "mixes"),
                       ((float("nan"),), "finite"), ("ab", "list of values"),
                       ((None,), "not a number or a text")]:
        with pytest.raises(QueryError, match=match):
            qp.HistogramQuery(["a"], 10, categories={"a": bad})
    with pytest.raises(QueryError, match="also a declared category"):
        qp.HistogramQuery(["a"], 10, categories={"a": ("x", "other")}, catch_all="other")
    with pytest.raises(QueryError, match="cells"):
        qp.HistogramQuery(["a", "b"], 10, categories={"a": range(3000), "b": range(3000)})


def test_neighbouring_datasets_release_vectors_of_the_declared_length():
    # The review's example: without declared cells, a dataset and its neighbour that changes
    # one record gave vectors of different lengths, noise-free.
    theta = qp.load_model("student")
    q = qp.HistogramQuery(["sat"], 3, categories={"sat": ("lo", "mid", "hi")})
    p = qp.plan(theta, q, "income", 1.0)
    x = pd.DataFrame({"sat": ["lo", "lo", "mid"]})
    x2 = pd.DataFrame({"sat": ["lo", "lo", "lo"]})
    assert q.evaluate(x).tolist() == [2, 1, 0] and q.evaluate(x2).tolist() == [3, 0, 0]
    r1, r2 = qp.release(p, q, x, seed=1), qp.release(p, q, x2, seed=1)
    assert len(r1.value) == len(r2.value) == 3
    assert r1.cells == r2.cells == (("lo",), ("mid",), ("hi",))
    assert json.loads(r1.to_json())["cells"] == [["lo"], ["mid"], ["hi"]]
    count = qp.CountQuery(["height"], 3, where="height == 1")
    r = qp.release(qp.plan(theta, count, "income", 1.0), count, pd.DataFrame({"height": [1]}))
    assert r.cells is None and "cells" not in r.to_dict()


def _slow_histogram(rows, attrs, cats, other):
    labels = [list(cats[a]) + ([other[a]] if a in other else []) for a in attrs]
    counts = Counter()
    for r in rows:
        key = []
        for a in attrs:
            v = r[a]
            if v in cats[a]:
                key.append(v)
            elif a in other:
                key.append(other[a])
            else:
                return None
        counts[tuple(key)] += 1
    return [counts[c] for c in itertools.product(*labels)], list(itertools.product(*labels))


def test_histogram_counts_and_labels_match_a_slow_count():
    rng = random.Random(3)
    for trial in range(60):
        attrs = rng.sample(["a", "b", "c"], rng.randint(1, 3))
        cats = {}
        for a in attrs:
            if rng.random() < 0.5:
                cats[a] = tuple(rng.sample(range(-3, 6), rng.randint(1, 4)))
            else:
                cats[a] = tuple(rng.sample(["x", "y", "z", "w"], rng.randint(1, 3)))
        other = {a: "other" for a in attrs if rng.random() < 0.4}
        q = qp.HistogramQuery(attrs, 50, categories=cats, catch_all=other or None)
        n = rng.randint(0, 30)
        rows = []
        for _ in range(n):
            r = {}
            for a in attrs:
                pool = list(cats[a]) + ([99 if isinstance(cats[a][0], int) else "q"]
                                        if a in other or rng.random() < 0.05 else [])
                r[a] = rng.choice(pool)
            rows.append(r)
        frame = pd.DataFrame(rows, columns=attrs)
        if n:
            for a in attrs:  # keep the declared kind even when pandas would guess otherwise
                frame[a] = frame[a].astype(object if isinstance(cats[a][0], str) else int)
        want = _slow_histogram(rows, attrs, cats, other)
        if want is None:
            with pytest.raises(QueryError, match="outside its declared domain"):
                q.evaluate(frame)
            continue
        counts, labels = want
        assert q.evaluate(frame).tolist() == counts, (trial, attrs, cats)
        assert list(q.cells) == labels


def test_histogram_errors_name_the_column_and_an_example():
    q = qp.HistogramQuery(["a"], 10, categories={"a": ("x", "y")})
    with pytest.raises(QueryError, match="column 'a' has 2 value.*\\(e.g. 'z'\\)"):
        q.evaluate(pd.DataFrame({"a": ["x", "z", "w"]}))
    with pytest.raises(QueryError, match="holds numbers, the domain is text"):
        q.evaluate(pd.DataFrame({"a": [1, 2]}))
    with pytest.raises(QueryError, match="missing"):
        q.evaluate(pd.DataFrame({"a": ["x", None]}))


# -- count domains ---------------------------------------------------------------------------------


def test_count_domain_is_enforced_on_the_data():
    q = qp.CountQuery(["height"], 10, where="height > 66", domain={"height": range(48, 85)})
    assert q.evaluate(pd.DataFrame({"height": [60, 70, 80]})) == 2.0
    with pytest.raises(QueryError, match="column 'height' has 1 value.*\\(e.g. 90\\)"):
        q.evaluate(pd.DataFrame({"height": [60, 90]}))
    assert q.to_dict()["domain"] == {"height": list(range(48, 85))}
    # Without a domain the record is unchanged (no new keys).
    assert set(qp.CountQuery(["h"], 3, where="h > 1").to_dict()) == {
        "kind", "attributes", "records", "where"}


@pytest.mark.parametrize("kwargs, match", [
    (dict(where="height > 66", domain={"height": (0, 1)}), "66, which is not in its declared"),
    (dict(where="height in [0, 2]", domain={"height": (0, 1)}), "2, which is not in"),
    (dict(where="height == 'tall'", domain={"height": (0, 1)}), "text"),
    (dict(where="height > 0", domain={"height": ("a", "b")}), "a number"),
    (dict(where="height > 0", domain={"sat": (0, 1)}), "not among the attributes"),
    (dict(where="height > 0", domain={"height": (0, 1)},
          record_states={"height": {0: 0, 1: 1, 2: 1}}), "not in the domain"),
    (dict(where="height > 0", domain={"height": (0, 1, 2)},
          record_states={"height": {0: 0, 1: 1}}), "not mapped"),
    (dict(where="height > 0", record_states={"height": {0: 0, 1: -1}}), "whole number"),
    (dict(where="height > 0", record_states={"height": {0: 0, 1: True}}), "whole number"),
    (dict(where="height > 0", record_states={"height": [0, 1]}), "mapping"),
])
def test_count_domain_refusals(kwargs, match):
    with pytest.raises(QueryError, match=match):
        qp.CountQuery(["height"], 5, **kwargs)


def test_partial_domains_are_refused():
    with pytest.raises(QueryError, match="missing: 'sat'"):
        qp.CountQuery(["height", "sat"], 5, where="height == 1 and sat == 1",
                      domain={"height": (0, 1)})
    q = qp.CountQuery(["height", "sat"], 5, where="height == 1 and sat == 'hi'",
                      domain={"height": (0, 1)}, record_states={"sat": {"lo": 0, "hi": 1}})
    assert q.domain == {"height": (0, 1), "sat": ("lo", "hi")}


# -- one meaning on the model --------------------------------------------------------------------


def test_compare_with_the_readme_query_is_not_an_exact_release():
    theta = qp.load_model("student")
    q = qp.CountQuery(["height", "sat"], 1000, where=README_WHERE)
    c = compare(theta, q, "income", 1.0)
    w = c["Wasserstein"]
    assert not w.applicable and "declares no domain" in w.detail
    assert c.best is not None and c.best.std > 0
    assert "std 0)" not in c.explain() and "W_inf = 0" not in c.explain()
    with pytest.raises(QueryError, match="declares no domain"):
        network_wasserstein(theta, q, "income", 1.0)
    with pytest.raises(QueryError, match="declares no domain"):
        audit(theta, q, "income", 1.0, 0.0)
    # Declaring the record model's own domain makes the literal 66 impossible: refused.
    with pytest.raises(QueryError, match="66, which is not in its declared domain"):
        qp.CountQuery(["height", "sat"], 1000, where=README_WHERE,
                      domain={"height": (0, 1), "sat": (0, 1)})
    with pytest.raises(QueryError, match="66, which is not in"):
        count_laws(theta, ["height", "sat"], "income", 3, where=README_WHERE)


def test_readme_query_through_a_declared_mapping():
    # Heights and scores mapped to the model's record categories: the predicate is decided by
    # the categories, and its laws are those of "height == 1 and sat == 1".
    theta = qp.load_model("student")
    heights, sats = range(60, 73), range(1200, 1401, 50)
    states = {"height": {h: int(h > 66) for h in heights},
              "sat": {s: int(s > 1300) for s in sats}}
    q = qp.CountQuery(["height", "sat"], 4, where=README_WHERE, record_states=states)
    ref = qp.CountQuery(["height", "sat"], 4, where="height == 1 and sat == 1",
                        domain={"height": (0, 1), "sat": (0, 1)})
    got, want = (network_wasserstein(theta, x, "income", 1.0) for x in (q, ref))
    assert got.laws == tuple(type(cl)(cl.attribute, cl.sensitive, cl.records, cl.laws,
                                      cl.attributes, str(q.predicate)) for cl in want.laws)
    assert got.scale == want.scale > 0
    assert query_laws(theta, q, "income") == query_laws(theta, ref, "income")
    # Mapped so that the predicate is not decided by the categories: refused.
    loose = {"height": {h: int(h > 64) for h in heights}, "sat": states["sat"]}
    with pytest.raises(QueryError, match="no meaning on the model's records"):
        network_wasserstein(theta, qp.CountQuery(["height", "sat"], 4, where=README_WHERE,
                                                 record_states=loose), "income", 1.0)
    # A category that no data value reaches: refused.
    short = {"height": {h: 0 for h in heights}, "sat": states["sat"]}
    unreached = qp.CountQuery(["height", "sat"], 4, where=README_WHERE, record_states=short)
    with pytest.raises(QueryError, match="reaches no data value for record categories \\[1\\]"):
        network_wasserstein(theta, unreached, "income", 1.0)
    assert "reaches no data value" in compare(theta, unreached, "income", 1.0)[
        "Wasserstein"].detail
    # A domain that is not the record categories, without a mapping: refused.
    with pytest.raises(QueryError, match="not the model's record categories"):
        network_wasserstein(theta, qp.CountQuery(["height"], 4, where="height > 66",
                                                 domain={"height": heights}), "income", 1.0)


def _categorical_theta():
    tables = {"s": np.array([0.4, 0.6]), "c": np.array([[0.7, 0.2], [0.3, 0.8]]),
              "d": np.array([0.5, 0.5])}
    return theta_from_tables([("s", "c")], {"s": ["0.3", "0.6"],
                                            "c": ["0.2/0.3/0.5", "0.5/0.3/0.2"],
                                            "d": ["0.25", "0.75"]}, tables)


def test_record_truth_matches_the_mapping_on_random_cases():
    theta = _categorical_theta()
    rng = random.Random(11)
    checked = refused = 0
    for _ in range(120):
        # c has categories 0..2, d has 0..1; data values are letters mapped onto them.
        maps = {}
        for a, k in (("c", 3), ("d", 2)):
            letters = [chr(ord("p") + j) for j in range(rng.randint(k, k + 3))]
            cats = list(range(k)) + [rng.randrange(k) for _ in range(len(letters) - k)]
            rng.shuffle(cats)
            maps[a] = dict(zip(letters, cats, strict=True))
        va = rng.sample(list(maps["c"]), rng.randint(1, len(maps["c"])))
        vb = rng.choice(list(maps["d"]))
        text = rng.choice([f"c in {va!r} and d == {vb!r}", f"c in {va!r} or d != {vb!r}",
                           f"not c in {va!r}"])
        pred = parse_predicate(text)
        try:
            truth = record_truth(theta, ("c", "d"), text, record_states=maps)
        except QueryError as exc:
            assert "no meaning" in str(exc)
            # Slow check: some category really holds values on which the predicate differs.
            seen = {}
            bad = False
            for x, y in itertools.product(maps["c"], maps["d"]):
                key = (maps["c"][x], maps["d"][y])
                val = bool(pred.evaluate({"c": [x], "d": [y]})[0])
                bad |= seen.setdefault(key, val) != val
            assert bad
            refused += 1
            continue
        for x, y in itertools.product(maps["c"], maps["d"]):
            assert truth[(maps["c"][x], maps["d"][y])] == bool(
                pred.evaluate({"c": [x], "d": [y]})[0])
        assert set(truth) == set(itertools.product(range(3), range(2)))
        checked += 1
    assert checked > 20 and refused > 20, (checked, refused)


def test_categorical_identity_domain_and_audit_use_the_predicate():
    theta = _categorical_theta()
    q = qp.CountQuery(["c"], 3, where="c >= 1", domain={"c": (0, 1, 2)})
    laws = query_laws(theta, q, "s")
    ref = count_laws(theta, ["c"], "s", 3, where="c >= 1")
    for m, member in enumerate(laws):
        for state, law in member.items():
            support, probs = ref.laws[m][state]
            assert {Fraction(k): p for k, p in zip(support, probs, strict=True) if p} == law
    with pytest.raises(QueryError, match="not the model's record categories"):
        query_laws(theta, qp.CountQuery(["c"], 3, where="c >= 1", domain={"c": (0, 1)}), "s")


def test_audit_uses_the_where_predicate():
    theta = qp.load_model("example3")
    both = {"x1": (0, 1), "x2": (0, 1)}
    conj = qp.CountQuery(["x1", "x2"], 3, where="x1 == 1 and x2 == 1", domain=both)
    plain = qp.CountQuery(["x1", "x2"], 3)  # documented: "every attribute equals 1"
    disj = qp.CountQuery(["x1", "x2"], 3, where="x1 == 1 or x2 == 1", domain=both)
    assert query_laws(theta, conj, "x2") == query_laws(theta, plain, "x2")
    d = query_laws(theta, disj, "x2")
    assert d != query_laws(theta, plain, "x2")
    ref = count_laws(theta, ["x1", "x2"], "x2", 3, where="x1 == 1 or x2 == 1")
    for state, law in d[0].items():
        support, probs = ref.laws[0][state]
        assert {Fraction(k): p for k, p in zip(support, probs, strict=True) if p} == law
    # The audit follows the predicate ("x1 and not x2" leaks more than "x1 and x2" here), and
    # it refuses a predicate with no declared link to the model.
    other = qp.CountQuery(["x1", "x2"], 3, where="x1 == 1 and x2 == 0", domain=both)
    for scale in (0.0, 1.0):
        assert audit(theta, other, "x2", 1.0, scale).loss > \
            audit(theta, plain, "x2", 1.0, scale).loss + 0.3
    with pytest.raises(QueryError, match="declares no domain"):
        audit(theta, qp.CountQuery(["x1"], 3, where="x1 == 1"), "x2", 1.0, 0.0)


def test_plain_bernoulli_count_keeps_its_meaning():
    theta = qp.load_model("student")
    a = network_wasserstein(theta, qp.CountQuery(["sat"], 5), "income", 1.0)
    b = network_wasserstein(theta, qp.CountQuery(["sat"], 5, where="sat == 1",
                                                 domain={"sat": (0, 1)}), "income", 1.0)
    assert a.scale == b.scale > 0
    assert [cl.laws for cl in a.laws] == [cl.laws for cl in b.laws]
    with pytest.raises(ModelError):
        network_wasserstein(theta, qp.CountQuery(["nope"], 5), "income", 1.0)


def test_zero_wasserstein_with_pairs_is_not_called_no_pair():
    law = ([0, 1], [Fraction(1, 2), Fraction(1, 2)])
    r = wasserstein_mechanism([{"a": law, "b": law}], 1.0)
    assert r.scale == 0 and "no pair" not in r.worst_case and "W_inf = 0 for all 1" in \
        r.worst_case
    theta = qp.load_model("student")
    # A predicate constant on the records: W = 0 for real pairs, and said so.
    q = qp.CountQuery(["sat"], 3, where="sat >= 0", domain={"sat": (0, 1)})
    w = network_wasserstein(theta, q, "income", 1.0)
    assert w.scale == 0 and "no pair" not in w.result.worst_case


# -- command line ---------------------------------------------------------------------------------


def test_cli_domain_options(tmp_path, cli):
    data = tmp_path / "d.csv"
    data.write_text("height,sat,income\nshort,01,0\ntall,02,1\ntall,01,1\n")
    base = ["release", "student", "--sensitive", "income", "--records", "5", "--epsilon", "1",
            "--data", str(data), "--seed", "3", "--json"]
    rc, out, _ = cli([*base, "--query", "histogram", "--attributes", "height,sat",
                      "--categories", "height=short|tall|medium,sat=01|02"])
    assert rc == 0
    d = json.loads(out)
    assert d["cells"] == [["short", "01"], ["short", "02"], ["tall", "01"], ["tall", "02"],
                          ["medium", "01"], ["medium", "02"]]
    assert len(d["value"]) == 6
    # A count over text data with a declared domain: "01" is read as written.
    rc, out, _ = cli([*base, "--attributes", "sat", "--where", "sat == '01'",
                      "--domain", "sat=01|02"])
    assert rc == 0 and json.loads(out)["plan"]["query"]["domain"] == {"sat": ["01", "02"]}
    cmp = ["compare", "student", "--sensitive", "income", "--attributes", "height",
           "--records", "5", "--epsilon", "1", "--where", "height == 'tall'", "--json"]
    rc, out, _ = cli([*cmp, "--record-states", "height=short:0|tall:1"])
    w = {r["mechanism"]: r for r in json.loads(out)["rows"]}["Wasserstein"]
    assert rc == 0 and w["applicable"] and w["scale"] > 0
    rc, out, _ = cli(cmp)
    w = {r["mechanism"]: r for r in json.loads(out)["rows"]}["Wasserstein"]
    assert rc == 0 and not w["applicable"] and "--record-states" in w["detail"]
    aud = ["audit", "student", "--sensitive", "income", "--records", "4", "--epsilon", "1",
           "--scale", "0", "--json"]
    # The audit reads --where: the exact count of sat (which depends on income) leaks more
    # than eps, "height or sat" does not; without a declared domain it refuses.
    rc, out, _ = cli([*aud, "--attributes", "sat", "--where", "sat == 1", "--domain",
                      "sat=0|1"])
    assert rc == 1 and json.loads(out)["loss"] > 1.3
    rc, out, _ = cli([*aud, "--attributes", "height,sat", "--where",
                      "height == 1 or sat == 1", "--domain", "height=0|1,sat=0|1"])
    assert rc == 0 and 0.4 < json.loads(out)["loss"] < 0.5
    rc, _, err = cli([*aud, "--attributes", "sat", "--where", "sat == 1"])
    assert rc == 2 and "declares no domain" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("extra, match", [
    (["--query", "histogram", "--attributes", "sat"], "--categories"),
    (["--query", "histogram", "--attributes", "sat", "--categories", "sat"], "expected A="),
    (["--query", "histogram", "--attributes", "sat", "--categories", "sat=a||b"],
     "empty value"),
    (["--query", "histogram", "--attributes", "sat", "--categories", "sat=a|a"], "twice"),
    (["--query", "histogram", "--attributes", "sat", "--categories", "sat=a,sat=b"], "twice"),
    (["--query", "histogram", "--attributes", "sat", "--categories", "sat=a", "--where",
      "sat == 'a'"], "--where applies to count"),
    (["--attributes", "sat", "--where", "sat == 1", "--catch-all", "x"], "--catch-all"),
    (["--attributes", "sat", "--where", "sat == 1", "--record-states", "sat=a:x"],
     "not a whole number"),
    (["--attributes", "sat", "--where", "sat == 1", "--record-states", "sat=a"],
     "VALUE:CATEGORY"),
    (["--attributes", "sat", "--where", "sat > 5", "--domain", "sat=0|1"], "not in its"),
    (["--attributes", "sat", "--where", "@data.income == 1"], "'@'"),
    (["--attributes", "sat", "--where", "sat.__class__ == 1"], "attribute access"),
    (["--attributes", "sat,height", "--where", "sat == 1"], "declared but not read"),
    (["--query", "mean", "--attributes", "sat", "--bounds", "0:1", "--domain", "sat=0|1"],
     "--bounds"),
    (["--query", "sum", "--attributes", "sat", "--bounds", "0:1", "--where", "sat > 0"],
     "--where applies to count"),
])
def test_cli_domain_errors_are_one_line(extra, match, cli):
    argv = ["plan", "student", "--sensitive", "income", "--records", "5", "--epsilon", "1",
            *extra]
    rc, _, err = cli(argv)
    assert rc == 2 and err.startswith("quiltpriv: error:"), err
    assert len(err.strip().splitlines()) == 1, err
    assert re.search(match, err), err
