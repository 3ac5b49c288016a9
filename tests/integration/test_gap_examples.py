"""examples/gap_*.py write their figure to a temporary or given folder, never over the
committed figures in examples/figures (their long computations are replaced by fixed
numbers here: the curves themselves are tested in tests/gap/)."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _fake_binary(module, monkeypatch):
    n = len(module.BUDGETS)
    keys = ("PDD", "PDD closed", "PDI", "PDD learned", "PDI learned")
    monkeypatch.setattr(module, "curves", lambda p, q: {k: [0.5] * n for k in keys})


def _fake_gaussian(module, monkeypatch):
    class Result:
        accuracy = 0.5
        distortion = 1.0

        class mechanism:  # noqa: N801 - stands in for the learned mechanism's fields
            beta0 = beta1 = gamma0 = gamma1 = 0.0

    monkeypatch.setattr(module, "sample_gaussian", lambda model, n, seed: (None, None))
    monkeypatch.setattr(module, "learn_gaussian_privatizer", lambda *a, **k: Result())
    for f in ("gaussian_pdd_optimum", "gaussian_theorem2_pdi", "gaussian_theorem3_pdd_shift",
              "gaussian_theorem4_pdd_shift_noise"):
        monkeypatch.setattr(module, f, lambda model, d: Result())


@pytest.mark.parametrize("name, fake", [("gap_binary", _fake_binary),
                                        ("gap_gaussian", _fake_gaussian)])
def test_gap_example_leaves_committed_figure(name, fake, tmp_path, monkeypatch, capsys):
    committed = EXAMPLES / "figures" / f"{name}.png"
    before = _digest(committed)
    module = _load(name)
    fake(module, monkeypatch)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # the default folder, inspectable
    module.main([])
    written = sorted(tmp_path.rglob(f"{name}.png"))
    assert len(written) == 1 and written[0].stat().st_size > 0
    assert f"plot written to {written[0]}" in capsys.readouterr().out
    given = tmp_path / "given" / "figure.png"
    module.main(["--plot", str(given)])
    assert given.stat().st_size > 0
    assert _digest(committed) == before
