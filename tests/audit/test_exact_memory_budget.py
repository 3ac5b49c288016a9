"""The memory budget reaches the exact auditors and the network laws, and the model reader of
every command: max_memory= / --max-memory, with refusals that name the budget."""

import json

import numpy as np
import pytest

import quiltpriv as qp
from quiltpriv.audit.adversary import score_count_release
from quiltpriv.audit.exact import audit, audit_plan, query_laws
from quiltpriv.audit.joint import joint_audit, joint_laws
from quiltpriv.audit.least_scale import audit_per_attribute, least_scale
from quiltpriv.errors import ModelError, ParameterError
from quiltpriv.inference.influence import InfluenceTooExpensive
from quiltpriv.mechanisms.network_wasserstein import network_wasserstein
from quiltpriv.model.network import theta_from_tables
from quiltpriv.queries.network_laws import (
    count_laws,
    count_mixtures,
    mixture_weights,
)
from quiltpriv.queries.query import CountQuery
from quiltpriv.utils.memory import (
    EXACT_BYTES_PER_TABLE_ENTRY,
    exact_table_limit,
    table_limit,
)

PHI = ("0.2", "0.5", "0.8")
#: x -> y, three states each: the exact joint of (x, y) and its largest table have 9 entries.
FITS = 9 * EXACT_BYTES_PER_TABLE_ENTRY


def _pair():
    px = np.array([0.2, 0.3, 0.5])
    py = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]]).T  # column per x
    return theta_from_tables([("x", "y")], {"x": PHI, "y": PHI}, {"x": px, "y": py})


QUERY = CountQuery(("y",), 3)


def test_exact_table_limit_charges_an_exact_entry():
    assert exact_table_limit(None, FITS) == 9
    assert exact_table_limit(None, FITS - 1) == 8
    assert exact_table_limit(5, FITS) == 5 and exact_table_limit(100, FITS) == 9
    assert exact_table_limit(100, None) == 100 == table_limit(100)
    assert exact_table_limit(None, "1G") == 2**30 // EXACT_BYTES_PER_TABLE_ENTRY
    with pytest.raises(ParameterError, match="max_memory"):
        exact_table_limit(None, "lots")


def _refused(call):
    with pytest.raises(InfluenceTooExpensive) as refused:
        call()
    text = str(refused.value)
    assert "exact (rational) joint of x, y" in text
    assert "above 8 entries" in text
    assert f"{EXACT_BYTES_PER_TABLE_ENTRY} bytes an exact entry" in text
    assert "max_memory=" in text and "--max-memory" in text


def test_every_exact_law_refuses_below_the_budget_and_answers_at_it():
    t = _pair()
    small, enough = FITS - 1, FITS
    calls = {
        "mixture_weights": lambda m: mixture_weights(t, ["y"], "x", max_memory=m),
        "count_laws": lambda m: count_laws(t, "y", "x", 3, max_memory=m),
        "count_mixtures": lambda m: count_mixtures(t, "y", "x", max_memory=m),
        "query_laws": lambda m: query_laws(t, QUERY, "x", max_memory=m),
        "joint_laws": lambda m: joint_laws(t, [QUERY], "x", max_memory=m),
    }
    for call in calls.values():
        _refused(lambda call=call: call(small))
        assert call(enough) == call(None)  # the same exact laws as under the default budget


def test_the_auditors_take_the_budget():
    t = _pair()
    _refused(lambda: audit(t, QUERY, "x", 1.0, 2.0, max_memory=FITS - 1))
    full = audit(t, QUERY, "x", 1.0, 2.0)
    assert audit(t, QUERY, "x", 1.0, 2.0, max_memory=FITS).loss == full.loss
    _refused(lambda: joint_audit(t, [QUERY], [2.0], "x", max_memory=FITS - 1))
    assert joint_audit(t, [QUERY], [2.0], "x", max_memory=FITS).loss == pytest.approx(
        joint_audit(t, [QUERY], [2.0], "x").loss, rel=1e-12)
    _refused(lambda: audit_per_attribute(t, QUERY, "x", 1.0, 2.0, max_memory=FITS - 1))
    _refused(lambda: least_scale(t, QUERY, "x", 1.0, max_memory=FITS - 1))
    _refused(lambda: score_count_release(t, QUERY, "x", 1.0, max_memory=FITS - 1))
    p = qp.plan(t, QUERY, "x", 1.0)
    _refused(lambda: audit_plan(t, QUERY, p, max_memory=FITS - 1))
    assert audit_plan(t, QUERY, p, max_memory=FITS).loss == audit_plan(t, QUERY, p).loss
    # an explicit max_table still lowers it
    with pytest.raises(InfluenceTooExpensive, match="above 4 entries"):
        audit(t, QUERY, "x", 1.0, 2.0, max_table=4)


def test_the_wasserstein_mechanism_takes_the_budget():
    t = _pair()
    _refused(lambda: network_wasserstein(t, QUERY, "x", 1.0, max_memory=FITS - 1))
    # exact (n = 3) and certified float64 laws (n above exact_records) both go through it
    _refused(lambda: network_wasserstein(t, QUERY, "x", 1.0, max_memory=FITS - 1,
                                         exact_records=1))
    assert network_wasserstein(t, QUERY, "x", 1.0, max_memory=FITS).scale == \
        network_wasserstein(t, QUERY, "x", 1.0).scale


def _json_model(tmp_path):
    path = tmp_path / "pair.json"
    path.write_text(json.dumps(qp.theta_to_dict(_pair())), encoding="utf-8")
    return path


def test_load_theta_reads_within_the_budget(tmp_path):
    from quiltpriv.model.loading import load_theta

    path = _json_model(tmp_path)
    want = _pair().fingerprint()
    assert load_theta([path, path], max_memory="1G").fingerprint() != want  # two members
    assert load_theta([path], max_memory="1G").fingerprint() == want
    with pytest.raises(ModelError, match=r"over the 1000-byte budget \(max_memory\)"):
        load_theta([path], max_memory=1000)


@pytest.mark.parametrize("command", [
    ["plan", "--sensitive", "x", "--attributes", "y", "--records", "3", "--epsilon", "1"],
    ["release", "--sensitive", "x", "--attributes", "y", "--records", "3", "--epsilon", "1",
     "--seed", "1", "--where", "y == 1", "--domain", "y=0|1", "--data", "DATA"],
    ["quilts", "--node", "x", "--epsilon", "1"],
    ["audit", "--sensitive", "x", "--attributes", "y", "--records", "3", "--epsilon", "1",
     "--scale", "2"],
])
def test_every_command_reads_the_model_within_max_memory(cli, tmp_path, command):
    path = _json_model(tmp_path)
    data = tmp_path / "records.csv"
    data.write_text("y\n1\n0\n1\n", encoding="utf-8")
    argv = [command[0], str(path), *[str(data) if a == "DATA" else a for a in command[1:]]]
    rc, _, err = cli([*argv, "--max-memory", "1000"])
    assert rc == 2
    assert "over the 1000-byte budget (max_memory)" in err and "Traceback" not in err
    rc, _, err = cli([*argv, "--max-memory", "1G"])
    assert rc in (0, 1), err  # audit: 1 when the loss is not proven within epsilon


def test_the_audit_command_refuses_exact_tables_over_max_memory(cli):
    argv = ["audit", "example3", "--sensitive", "x2", "--attributes", "x1", "--records", "4",
            "--epsilon", "1", "--scale", "2"]
    rc, _, err = cli([*argv, "--max-memory", "100"])  # a bundled model: no JSON to read
    assert rc == 2 and "exact (rational) joint of x2, x1" in err and "Traceback" not in err
    rc, out, _ = cli([*argv, "--max-memory", "1G", "--json"])
    want = audit(qp.load_model("example3"), CountQuery(("x1",), 4), "x2", 1.0, 2.0).loss
    assert rc in (0, 1) and json.loads(out)["loss"] == want
