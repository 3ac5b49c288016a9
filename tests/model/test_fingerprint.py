"""Model identity: one fingerprint per model, whatever wrote it and in whatever order.

The fingerprint hashes the model's canonical JSON (nodes by name, canonical state names,
parents sorted, members sorted). Every loader, builder and learner must give a model the
fingerprint it had before a save, and any change to a state, an edge or a probability must
change it.
"""

from __future__ import annotations

import json
import random
import sys  # noqa: E402
import warnings
from pathlib import Path  # noqa: E402

import numpy as np
import pandas as pd
import pytest

import quiltpriv as qp
from quiltpriv.errors import ModelError
from quiltpriv.model.builder import NetworkBuilder
from quiltpriv.model.loading import _as_pgmpy, load_model, theta_to_dict
from quiltpriv.model.network import (
    FINGERPRINT_FORMAT,
    Theta,
    fingerprint_v1,
    state_name,
    theta_from_pgmpy,
    theta_from_tables,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_learning import BINS, SHARES, planted, sample_populations  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _saved_and_loaded(theta: Theta, tmp_path, name: str = "m.json") -> Theta:
    path = tmp_path / name
    path.write_text(json.dumps(theta_to_dict(theta)))
    return load_model(path)


def _xmlbif(theta: Theta) -> str:
    """One-member Theta as XMLBIF text (pgmpy's writer turns "0.2" into "0_2", another state)."""
    out = ["<?xml version='1.0'?>", "<BIF VERSION=\"0.3\"><NETWORK><NAME>m</NAME>"]
    for v in theta.nodes:
        out.append(f"<VARIABLE TYPE=\"nature\"><NAME>{v}</NAME>"
                   + "".join(f"<OUTCOME>{s}</OUTCOME>" for s in theta.states[v])
                   + "</VARIABLE>")
    for v in theta.nodes:
        table = np.moveaxis(theta.members[0][v].table, 0, -1).ravel()
        out.append(f"<DEFINITION><FOR>{v}</FOR>"
                   + "".join(f"<GIVEN>{p}</GIVEN>" for p in theta.parents[v])
                   + f"<TABLE>{' '.join(repr(float(x)) for x in table)}</TABLE></DEFINITION>")
    return "\n".join(out + ["</NETWORK></BIF>"])


def _float_theta(states_x=(0.4, 0.6), states_y=(1.0, 2.5)) -> Theta:
    return theta_from_tables([("x", "y")], {"x": states_x, "y": states_y},
                             {"x": [0.3, 0.7], "y": [[0.2, 0.9], [0.8, 0.1]]})


def test_the_bundled_student_and_its_bif_file_are_one_model():
    # Same states, parents and tables, nodes in another order (the false alarm).
    bundled, bif = load_model("student"), load_model(ROOT / "models" / "student.bif")
    assert bundled.nodes != bif.nodes
    assert bundled.fingerprint() == bif.fingerprint()
    assert load_model(ROOT / "models" / "student.bif", reader="pgmpy").fingerprint() == \
        bundled.fingerprint()


def test_float_numpy_and_named_states_are_one_model(tmp_path):
    floats = _float_theta()
    arrays = _float_theta(np.array([0.4, 0.6]), np.array([1.0, 2.5]))
    names = _float_theta(("0.4", "0.6"), ("1", "2.5"))
    ints = _float_theta(np.array([0.4, 0.6]), (1, 2.5))
    assert floats.states == {"x": ("0.4", "0.6"), "y": ("1", "2.5")}
    assert floats.fingerprint() == arrays.fingerprint() == names.fingerprint() \
        == ints.fingerprint()
    # saved (states written as names) and read back: the same fingerprint
    assert _saved_and_loaded(floats, tmp_path).fingerprint() == floats.fingerprint()


def test_state_names_are_canonical():
    assert [state_name(x) for x in (0.35, 3.0, np.float64(0.4), -0.0, 7, np.int64(2), "a")] \
        == ["0.35", "3", "0.4", "0", "7", "2", "a"]
    assert state_name(2**60) == str(2**60)  # not rounded through a float
    for bad in (True, None, float("nan"), float("inf"), (1, 2)):
        with pytest.raises(ModelError):
            state_name(bad)
    with pytest.raises(ModelError, match="listed twice"):
        _float_theta((1, 1.0))


def _chain_tables(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Random tables for a -> c <- b, c -> d with 2, 3, 2, 2 states (axes (node, *parents))."""
    def table(*shape):
        t = rng.random(shape) + 0.05
        return t / t.sum(axis=0)
    return {"a": table(2), "b": table(3), "c": table(2, 2, 3), "d": table(2, 2)}


STATES = {"a": ["0.1", "0.9"], "b": ["x", "y", "z"], "c": ["0", "1"], "d": ["lo", "hi"]}
EDGES = [("a", "c"), ("b", "c"), ("c", "d")]


def test_fingerprint_ignores_node_parent_and_member_order():
    rng = np.random.default_rng(7)
    t1, t2 = _chain_tables(rng), _chain_tables(rng)
    base = theta_from_tables(EDGES, STATES, [t1, t2], ["one", "two"])
    for seed in range(5):
        r = random.Random(seed)
        nodes = list(STATES)
        r.shuffle(nodes)
        edges = list(EDGES)
        r.shuffle(edges)
        order = ["b", "a"] if seed % 2 else ["a", "b"]
        members = [t1, t2] if seed % 3 else [t2, t1]

        def permuted(t, order=order):  # c's table with its parent axes in ``order``
            axes = [0] + [1 + ["a", "b"].index(p) for p in order]
            return {**t, "c": np.transpose(t["c"], axes)}

        other = theta_from_tables(edges, {v: STATES[v] for v in nodes},
                                  [permuted(m) for m in members], ["p", "q"],
                                  parents_order={"c": order})
        assert other.fingerprint() == base.fingerprint(), seed


def test_fingerprint_changes_with_every_state_edge_and_probability():
    rng = np.random.default_rng(3)
    t = _chain_tables(rng)
    base = theta_from_tables(EDGES, STATES, t)
    fp = base.fingerprint()
    renamed = {**STATES, "b": ["x", "y", "w"]}
    assert theta_from_tables(EDGES, renamed, t).fingerprint() != fp
    moved = {**t, "d": t["d"].copy()}
    moved["d"][:, 0] = [moved["d"][0, 0] + 2**-40, moved["d"][1, 0] - 2**-40]
    assert theta_from_tables(EDGES, STATES, moved).fingerprint() != fp
    # one edge fewer (d unconditioned): another model
    fewer = {**t, "d": t["d"][:, 0]}
    assert theta_from_tables(EDGES[:2], STATES, fewer).fingerprint() != fp
    # a second member equal to the first is another Theta (|Theta| = 2)
    assert theta_from_tables(EDGES, STATES, [t, t]).fingerprint() != fp
    # names and provenance are metadata
    assert theta_from_tables(EDGES, STATES, t, ["renamed"]).fingerprint() == fp
    assert base.with_provenance({"source": "test"}).fingerprint() == fp


def test_canonical_document_is_the_hashed_json():
    import hashlib

    theta = load_model("student")
    doc = theta.canonical_document()
    parsed = json.loads(doc)
    assert parsed["format"] == FINGERPRINT_FORMAT
    assert list(parsed["nodes"]) == sorted(theta.nodes)
    assert json.dumps(parsed, sort_keys=True, separators=(",", ":")) == doc
    assert hashlib.sha256(doc.encode()).hexdigest() == theta.fingerprint()


def test_every_loader_builder_and_learner_round_trips(tmp_path):
    """Builder, pgmpy, BIF (both readers), XMLBIF (both readers), JSON, a .py module and the
    learner: each model read back from each form it can be written in keeps its
    fingerprint."""
    from pgmpy.readwrite import BIFWriter

    built = planted()  # NetworkBuilder with float states
    tables = theta_from_tables(built.edges, {v: [0.2, 0.5, 0.8] for v in built.nodes},
                               {v: built.members[0][v].table for v in built.nodes},
                               parents_order=built.parents)
    assert tables.fingerprint() == built.fingerprint()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learned = qp.learn_theta(sample_populations(built, 80, seed=2), SHARES, bins=BINS,
                                 n_bootstrap=1, seed=1)
    for theta in (built, learned, load_model("student"), load_model("student:theta")):
        fp = theta.fingerprint()
        assert _saved_and_loaded(theta, tmp_path).fingerprint() == fp
        nets = _as_pgmpy(theta)
        assert theta_from_pgmpy(nets).fingerprint() == fp
        if len(theta) > 1:
            continue  # BIF and XMLBIF hold one member
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            BIFWriter(nets).write_bif(str(tmp_path / "m.bif"))
        (tmp_path / "m.xml").write_text(_xmlbif(theta))
        for reader in ("quiltpriv", "pgmpy"):
            for name in ("m.bif", "m.xml"):
                back = load_model(tmp_path / name, reader=reader)
                assert back.fingerprint() == fp, (name, reader)
    # a .py module returning pgmpy networks
    module = tmp_path / "mod.py"
    module.write_text("import quiltpriv as qp\nfrom quiltpriv.model.loading import _as_pgmpy\n"
                      "def model():\n    return _as_pgmpy(qp.load_model('student:theta'))\n")
    assert load_model(module).fingerprint() == load_model("student:theta").fingerprint()
    # the builder's own pgmpy network
    b = NetworkBuilder("s")
    b.attribute("u", np.array([0.25, 0.75]), kind="share")
    b.attribute("w", [1, 2, 3], kind="mean")
    b.edge("u", "w")
    b.table("u", [0.5, 0.5])
    b.table("w", {0.25: [0.2, 0.3, 0.5], "0.75": [0.6, 0.3, 0.1]})
    assert theta_from_pgmpy(b.to_pgmpy()).fingerprint() == b.to_theta().fingerprint()


def test_learned_model_keeps_its_fingerprint_after_a_save(tmp_path):
    data = sample_populations(planted(), 60, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        learned = qp.learn_theta(pd.DataFrame(data), SHARES, bins=BINS)
    back = _saved_and_loaded(learned, tmp_path)
    assert back.fingerprint() == learned.fingerprint() and back.provenance is not None


def test_a_plan_with_the_old_fingerprint_is_refused_saying_the_format_changed():
    theta = load_model("student")
    query = qp.CountQuery(["income"], 1000)
    plan = qp.plan(theta, query, "gender", 1.0)
    d = plan.to_dict()
    d["model"] = fingerprint_v1(theta)
    old = qp.Plan.from_dict(d)
    with pytest.raises(ModelError, match="fingerprint format changed"):
        qp.verify_plan(old, theta, query)
    d["model"] = "ab" * 32
    with pytest.raises(ModelError, match="another model"):
        qp.verify_plan(qp.Plan.from_dict(d), theta, query)
    # the same plan verifies against the same model written as BIF (nodes in another order)
    assert qp.verify_plan(qp.Plan.from_dict(plan.to_dict()),
                          load_model(ROOT / "models" / "student.bif"), query).verified
