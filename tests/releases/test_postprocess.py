"""Post-processing of released values (rounding, clamping), the labelled histogram Series and
the command line's one-line release summary."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
import schema_check

import quiltpriv as qp
from quiltpriv.cli import main
from quiltpriv.errors import ParameterError, SeededNoiseWarning
from quiltpriv.releases.postprocess import PostProcess, postprocess_for

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "release-record.schema.json").read_text())


def _valid(record):
    errs = schema_check.errors(record, SCHEMA)
    assert not errs, errs


@pytest.mark.parametrize("query, lo, hi", [
    (qp.CountQuery(["a"], 35), 0, 35),
    (qp.HistogramQuery(["a"], 12, categories={"a": ("x", "y")}), 0, 12),
    (qp.MeanQuery("a", lower=-1.0, upper=2.0), -1.0, 2.0),
    (qp.SumQuery("a", 10, lower=-1.0, upper=2.0), -10.0, 20.0),
    (qp.SumQuery("a", 10, lower=1.0, upper=2.0), 0.0, 20.0),  # at most 10 records: 0 is
    # the empty sum
    (qp.LinearQuery({"a": 1.0, "b": -2.0}, {"a": (0.0, 1.0), "b": (0.5, 1.0)}), -2.0, 0.0),
])
def test_clamping_range_is_what_the_query_can_take(query, lo, hi):
    post = postprocess_for("clamp", query.to_dict())
    assert (post.lower, post.upper) == (lo, hi)


def test_apply_rounds_then_clamps():
    post = PostProcess(("round", "clamp"), 0, 35)
    assert [post.apply(v) for v in (-88.9, 2.5, 3.5, 12.49, 35.4, 1e9)] == [0, 2, 4, 12, 35, 35]
    assert all(type(post.apply(v)) is int for v in (-88.9, 12.49, 1e9))
    assert PostProcess(("round",)).apply(-88.9) == -89
    assert PostProcess(("clamp",), 0.0, 1.0).apply(1.25) == 1.0
    with pytest.raises(ParameterError, match="finite"):
        post.apply(float("nan"))


def test_bad_steps_are_refused():
    count = qp.CountQuery(["a"], 5).to_dict()
    assert postprocess_for(None, count) is None and postprocess_for([], count) is None
    with pytest.raises(ParameterError, match="unknown post-processing step 'floor'"):
        postprocess_for(["round", "floor"], count)
    with pytest.raises(ParameterError, match="rounding applies to counts"):
        postprocess_for("round", qp.MeanQuery("a", lower=0.0, upper=1.0).to_dict())
    with pytest.raises(ParameterError, match="must be None, a step or a list"):
        postprocess_for(3, count)


def _students():
    return pd.read_csv(ROOT / "examples" / "data" / "students.csv")


def test_release_postprocess_is_recorded_and_costs_nothing(student):
    # sat is tied to income: the count needs Laplace(n / eps) noise, so the raw value is far
    # from an integer in [0, n] for many seeds.
    query = qp.CountQuery(["sat"], records=1000, where="sat > 1300")
    plan = qp.plan(student, query, "income", 1.0)
    assert plan.scale == 1000.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        for seed in range(6):
            raw = qp.release(plan, query, _students(), seed=seed)
            post = qp.release(plan, query, _students(), seed=seed, postprocess=["clamp", "round"])
            # the same noise: post-processing is a function of the noisy value alone
            assert post.postprocess["noisy_value"] == raw.value
            assert post.value == min(max(round(raw.value), 0), 1000)
            assert isinstance(post.value, int) and post.scale == raw.scale
            d = post.to_dict()
            _valid(d)
            assert d["format"] == "quiltpriv-release/4"
            assert d["postprocess"] == {"steps": ["round", "clamp"], "range": [0, 1000],
                                        "noisy_value": raw.value}
            assert "postprocess" not in raw.to_dict()
            _valid(raw.to_dict())


def test_histogram_series_is_labelled(student):
    data = pd.DataFrame({"sat": ["lo", "hi", "hi", "mid"], "height": [1, 0, 1, 1]})
    query = qp.HistogramQuery(["sat"], 4, categories={"sat": ("lo", "mid", "hi")})
    plan = qp.plan(student, query, "income", 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        r = qp.release(plan, query, data, seed=2, postprocess=("round", "clamp"))
    s = r.series
    assert list(s.index) == ["lo", "mid", "hi"] and s.index.name == "sat"
    assert s.tolist() == list(r.value) and all(0 <= v <= 4 for v in s)
    assert r.to_dict()["value"] == list(r.value)  # the record's JSON is unchanged
    two = qp.HistogramQuery(["sat", "height"], 4,
                            categories={"sat": ("lo", "mid", "hi"), "height": (0, 1)})
    plan2 = qp.plan(student, two, "income", 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        r2 = qp.release(plan2, two, data, seed=2)
    s2 = r2.series
    assert list(s2.index.names) == ["sat", "height"] and ("hi", 1) in s2.index
    assert s2.loc[("hi", 1)] == r2.value[list(r2.cells).index(("hi", 1))]
    count = qp.CountQuery(["height"], 4, where="height == 1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        r3 = qp.release(qp.plan(student, count, "income", 1.0), count, data, seed=1)
    assert r3.series.to_dict() == {"count": r3.value}


def _cli_release(csv, *extra):
    return main(["release", "student", "--sensitive", "income", "--attributes", "sat",
                 "--records", "8", "--epsilon", "1", "--where", "sat > 1300", "--data",
                 str(csv), "--seed", "3", *extra])


def test_cli_summary_json_and_postprocess(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    pd.DataFrame({"sat": [1200, 1400, 1350, 900]}).to_csv(csv, index=False)
    assert _cli_release(csv, "--json") == 0
    record = json.loads(capsys.readouterr().out)
    noisy = record["value"]
    assert _cli_release(csv) == 0
    line = capsys.readouterr().out
    assert line.count("\n") == 1
    assert line.startswith(f"released {noisy:.6g} (count over sat, n = 8): APMQM, Laplace "
                           f"scale {record['calibration']['noise_scale_used']:.6g}, SEEDED")
    ledger = tmp_path / "l.db"
    out = tmp_path / "r.json"
    assert _cli_release(csv, "--round", "--clamp", "--ledger", str(ledger), "-o", str(out)) == 0
    line = capsys.readouterr().out.strip()
    saved = json.loads(out.read_text())
    assert saved["postprocess"]["noisy_value"] == noisy  # same seed, same noise
    assert saved["value"] == min(max(round(noisy), 0), 8)
    _valid(saved)
    from quiltpriv.releases.ledger import read

    entries, head = read(ledger)
    assert entries[-1].record["value"] == saved["value"]
    assert line.startswith(f"released {saved['value']} (rounded and clamped to [0, 8])")
    assert line.endswith(f"; ledger {ledger} entry #0, head {head.hash[:12]}")
    assert entries[-1].seq == 0 and len(entries) == 1


def test_cli_postprocess_refusals(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    pd.DataFrame({"sat": [1200, 1400]}).to_csv(csv, index=False)
    assert main(["release", "student", "--sensitive", "income", "--query", "mean",
                 "--attributes", "sat", "--bounds", "0:2000", "--epsilon", "1", "--data",
                 str(csv), "--round"]) == 2
    assert "rounding applies to counts" in capsys.readouterr().err
    assert _cli_release(csv, "--mechanism", "group-dp", "--clamp") == 2
    assert "--round and --clamp apply to --mechanism apmqm" in capsys.readouterr().err
