"""The command line on time series: plans and their verification summarised per run of steps.

``quiltpriv verify`` of a plan of every step of a chain or an HMM names the protected nodes by
their count and ends and tabulates one row per run of steps (its text linear in the runs, not
in the steps); ``--json`` keeps the full per-node form.
"""

from __future__ import annotations

import gzip
import json

import pytest

import quiltpriv as qp
from quiltpriv.cli import main

FLIP = [[0.9, 0.1], [0.1, 0.9]]


def _model(tmp_path, kind: str, n: int) -> str:
    theta = (qp.markov_chain(n, FLIP, [0.5, 0.5]) if kind == "chain" else
             qp.hidden_markov(n, FLIP, [[0.8, 0.2], [0.2, 0.8]], [0.5, 0.5]))
    path = tmp_path / f"{kind}.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(qp.theta_to_dict(theta), fh)
    return str(path)


@pytest.mark.parametrize("kind,n,closed", [("chain", 3000, 31.737788616),
                                           ("hmm", 3000, 30.876143219)])
def test_verify_text_summarises_runs(tmp_path, capsys, kind, n, closed):
    model = _model(tmp_path, kind, n)
    query = ["--query", "fraction", "--state", "1", "--attributes", f"X1..X{n}"]
    out = tmp_path / "plan.json"
    assert main(["plan", model, "--sensitive", "all", "--epsilon", "1", *query, "--json",
                 "-o", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["format"] == ("quiltpriv-plan/3" if kind == "chain"
                           else "quiltpriv-plan/hmm-runs-1")
    # the closed form of the stationary series, from above
    assert closed / n * (1 - 1e-10) <= d["scale"] <= closed / n * (1 + 1e-9)
    capsys.readouterr()
    assert main(["verify", str(out), model, *query]) == 0
    text = capsys.readouterr().out
    n_nodes = n if kind == "chain" else 2 * n
    assert text.startswith("plan VERIFIED")
    assert f"protects {n_nodes:,} nodes {{" in text
    assert len(text.splitlines()) < 400 and len(text) < 200_000, len(text)
    assert "steps)" in text  # a run of steps named by its ends and length
    assert main(["verify", str(out), model, *query, "--json"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert full["verified"] and len(full["attained_epsilon"]) == n_nodes
