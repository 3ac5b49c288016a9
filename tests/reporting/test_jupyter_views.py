"""Jupyter: every result object renders as HTML, and progress bars stay quiet without widgets."""

from __future__ import annotations

import builtins
import sys
import types
import warnings

import numpy as np
import pytest

import quiltpriv as qp
from quiltpriv.mechanisms.apmqm import plan
from quiltpriv.mechanisms.compare import compare
from quiltpriv.utils import progress as _progress


def test_every_result_object_renders_with_its_numbers(student):
    q = qp.CountQuery(["height", "sat"], 1000)
    p = qp.plan(student, q, ["income", "weight"], 1.0)
    html = p._repr_html_()
    assert "query: <b>count</b>" in html and "[&quot;height&quot;, &quot;sat&quot;]" in html
    sp = p["income"]
    h = sp._repr_html_()
    assert "<code>income</code>" in h and f"{sp.scale:.6g}" in h and sp.explanation[:40] in h
    quilt = qp.markov_quilt(student, "income", ["gender"])
    h = quilt._repr_html_()
    assert "{gender}" in h and "{income, sat}" in h and "{height, weight}" in h
    infl = qp.max_influence(student, "income", ["gender"])
    h = infl._repr_html_()
    assert f"{infl.value:.6g}" in h and f"{infl.pair[0]} vs {infl.pair[1]}" in h
    c = compare(student, q, "income", 1.0)
    h = c._repr_html_()
    assert h.count("<tr") == 1 + len(c.rows) and 'class="best"' in h
    rel = qp.release(qp.plan(student, qp.CountQuery(["height"], 10, where="height > 0.4"),
                             "income", 1.0),
                     qp.CountQuery(["height"], 10, where="height > 0.4"),
                     __import__("pandas").DataFrame({"height": [0.3, 0.6]}), seed=1)
    assert "where = <code>&quot;height &gt; 0.4&quot;</code>" in rel._repr_html_()


def test_hostile_names_are_escaped_in_every_view():
    bad = "<img src=x onerror=alert(1)>"
    t = qp.theta_from_tables([(bad, "b")], {bad: ["0", "1"], "b": ["0", "1"]},
                             {bad: [0.5, 0.5], "b": [[0.9, 0.2], [0.1, 0.8]]})
    p = qp.plan(t, qp.CountQuery(["b"], 10), bad, 1.0)
    views = [t._repr_html_(), p._repr_html_(), p[bad]._repr_html_(),
             qp.markov_quilt(t, bad, ["b"])._repr_html_(),
             qp.max_influence(t, bad, ["b"])._repr_html_()]
    for h in views:
        assert "<img" not in h and "&lt;img" in h


def _fake_notebook(monkeypatch):
    """A Jupyter kernel as tqdm.autonotebook detects one, and no ipywidgets."""
    shell = types.SimpleNamespace(config={"IPKernelApp": {}})
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    monkeypatch.setitem(sys.modules, "ipykernel.zmqshell", types.ModuleType("ipykernel.zmqshell"))
    for mod in ("tqdm.auto", "tqdm.autonotebook", "tqdm.notebook", "ipywidgets"):
        monkeypatch.delitem(sys.modules, mod, raising=False)
    real = _progress.importlib.util.find_spec
    monkeypatch.setattr(_progress.importlib.util, "find_spec",
                        lambda name, *a: None if name == "ipywidgets" else real(name, *a))
    real_import = builtins.__import__

    def no_ipywidgets(name, *args, **kwargs):
        if name.split(".")[0] == "ipywidgets":
            raise ImportError("no ipywidgets")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ipywidgets)


def test_tqdm_auto_would_warn_in_a_notebook_without_ipywidgets(monkeypatch):
    # The symptom, reproduced: the fake notebook is one tqdm.auto complains about.
    _fake_notebook(monkeypatch)
    with pytest.warns(Warning, match="IProgress not found"):
        import tqdm.auto  # noqa: F401


def test_progress_bar_is_quiet_in_a_notebook_without_ipywidgets(monkeypatch, student):
    _fake_notebook(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from tqdm.std import tqdm

        assert _progress.tqdm_class() is tqdm
        p = plan(student, qp.CountQuery(["sat"], 100), ["income", "sat"], 1.0, progress=True)
    assert p.scale == qp.plan(student, qp.CountQuery(["sat"], 100), ["income", "sat"], 1.0).scale


def test_quiet_tqdm_auto_silences_only_the_widget_warning(monkeypatch):
    # pgmpy imports tqdm.auto itself (its structure learning, its readers): quiltpriv imports
    # it first, quietly, so learning a Theta in a notebook prints no warning.
    _fake_notebook(monkeypatch)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _progress.quiet_tqdm_auto()
        import tqdm.auto  # noqa: F401  (what pgmpy's modules do)

        warnings.warn("another warning", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["another warning"]


def test_observe_reports_progress_of_this_thread_only(student):
    seen: list[tuple[int, int]] = []
    with _progress.observe(lambda done, total: seen.append((done, total))):
        p = plan(student, qp.CountQuery(["sat"], 100), list(student.nodes), 1.0, progress=True)
    assert seen == [(k, 5) for k in range(6)]
    assert np.isfinite(p.scale)
    assert getattr(_progress._local, "hook", None) is None
