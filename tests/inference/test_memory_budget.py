"""The memory budget: sizes parsed strictly, tables bounded by memory, refusals that name it."""

import json
import math

import numpy as np
import pytest

import quiltpriv as qp
from quiltpriv.errors import ParameterError
from quiltpriv.inference.influence import DEFAULT_MAX_TABLE, InfluenceTooExpensive
from quiltpriv.model.network import theta_from_tables
from quiltpriv.utils import memory
from quiltpriv.utils.memory import (
    BYTES_PER_TABLE_ENTRY,
    DEFAULT_MAX_MEMORY,
    check_max_memory,
    parse_memory_size,
    table_limit,
)


@pytest.mark.parametrize(("text", "size"), [
    ("1", 1), ("1048576", 2**20), ("4G", 4 * 2**30), ("512M", 512 * 2**20), ("512m", 512 * 2**20),
    ("64K", 64 * 2**10), ("2T", 2 * 2**40), ("1.5G", 3 * 2**29), ("4GB", 4 * 2**30),
    ("4GiB", 4 * 2**30), (" 8 M ", 8 * 2**20), ("100B", 100),
])
def test_sizes_parse(text, size):
    assert parse_memory_size(text) == size
    assert check_max_memory(text) == size


@pytest.mark.parametrize("text", ["", "G", "4X", "-1G", "0", "0.1", "4 G B", "1e9", "4GG",
                                  "nan", "inf", "4G5", "0x10", "½G"])
def test_bad_sizes_are_refused_naming_the_option(text):
    with pytest.raises(ParameterError, match="--max-memory must be a memory size"):
        parse_memory_size(text)


@pytest.mark.parametrize("value", [0, -5, 1.5, True, "", [1], float("nan")])
def test_bad_budgets_are_refused(value):
    with pytest.raises(ParameterError, match="max_memory"):
        check_max_memory(value)


def test_default_budget_is_half_the_machine_and_sets_the_table_limit():
    phys = memory.physical_memory()
    assert DEFAULT_MAX_MEMORY == (phys or 2 * 2**32) // 2
    assert check_max_memory(None) == DEFAULT_MAX_MEMORY
    assert DEFAULT_MAX_TABLE == DEFAULT_MAX_MEMORY // BYTES_PER_TABLE_ENTRY == table_limit()
    # the unit the old fixed limit was: 2**25 entries is 1 GiB of budget
    assert table_limit(None, "1G") == 2**25
    assert table_limit(100, None) == 100  # an explicit entry count alone is taken as it is
    assert table_limit(100, "1G") == 100 and table_limit(2**40, "1G") == 2**25  # the smaller
    with pytest.raises(ParameterError, match="max_table"):
        table_limit(0)


def _wide():
    """phi_a -> phi_b with 64 x 64 states: a joint of 4,096 entries (32 kB of budget)."""
    rng = np.random.default_rng(7)
    pa = rng.dirichlet(np.ones(64))
    pb = rng.dirichlet(np.ones(64), size=64).T  # column per parent state
    states = {"a": list(range(64)), "b": list(range(64))}
    return theta_from_tables([("a", "b")], states, {"a": pa, "b": pb})


def test_a_joint_over_the_budget_is_refused_naming_needed_and_available_memory():
    theta = _wide()
    need = 4096 * BYTES_PER_TABLE_ENTRY
    with pytest.raises(InfluenceTooExpensive) as refused:
        qp.max_influence(theta, "a", ["b"], max_memory=need - 1)
    text = str(refused.value)
    assert "4096 entries" in text and "131 kB" in text  # needed: 4,096 x 32 bytes
    assert f"limit {(need - 1) // BYTES_PER_TABLE_ENTRY} entries" in text
    assert "max_memory" in text and "--max-memory" in text
    # exactly enough memory: answered, and the same value as with the default budget
    fits = qp.max_influence(theta, "a", ["b"], max_memory=need)
    fresh = _wide()
    assert fits.value == qp.max_influence(fresh, "a", ["b"]).value
    joint = qp.joint_marginal(fresh, ["a", "b"], max_memory=f"{need}B")
    assert joint.shape == (64, 64) and math.isclose(joint.sum(), 1.0)
    with pytest.raises(InfluenceTooExpensive, match="4096 entries"):
        qp.joint_marginal(fresh, ["a", "b"], max_memory=need - 1)


def test_the_planner_takes_the_budget(student):
    query = qp.CountQuery(["height"], 100)
    exact = qp.plan(student, query, "income", 1.0)
    starved = qp.plan(qp.load_model("student"), query, "income", 1.0, max_memory=64)
    assert exact.optimal and not starved.optimal
    assert starved.scale >= exact.scale
    assert "skipped" in starved["income"].explanation
    same = qp.plan(qp.load_model("student"), query, "income", 1.0, max_memory="1G")
    assert same.scale == exact.scale and same.optimal
    with pytest.raises(ParameterError, match="max_memory"):
        qp.plan(student, query, "income", 1.0, max_memory="lots")


def test_the_command_line_takes_the_budget(cli):
    argv = ["plan", "student", "--sensitive", "income", "--attributes", "height", "--records",
            "100", "--epsilon", "1", "--json"]
    rc, out, _ = cli(argv)
    full = json.loads(out)
    rc2, out2, _ = cli([*argv, "--max-memory", "64"])  # 2 entries: nothing but the trivial
    starved = json.loads(out2)
    assert rc == rc2 == 0
    assert full["optimal"] is True and starved["optimal"] is False
    assert starved["scale"] >= full["scale"]
    rc3, out3, _ = cli([*argv, "--max-memory", "1G"])
    assert rc3 == 0 and json.loads(out3)["scale"] == full["scale"]
