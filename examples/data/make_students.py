"""Write ``students.csv``: 1,000 synthetic student records of one school, for the student model.

    python examples/data/make_students.py      # rewrites examples/data/students.csv

The bundled ``student`` network (Zhang, Ohrimenko and Cummings, Example 1; illustrative CPDs)
models a school's *parameters*: the share of women, of students from high-income families, of
students with an SAT score above 1300, taller than 5'6'' (66 inches) and heavier than 70 kg.
This script draws one school's parameters from that network, then 1,000 students with those
shares, written with raw values, so the README's predicates read as written
(``height > 66 and sat > 1300``):

- ``gender``: 1 for a woman, 0 for a man;
- ``income``: 1 for a student from a high-income family, 0 otherwise;
- ``sat``: SAT score, 400-1600 in steps of 10 (above 1300 with the school's SAT share);
- ``height``: inches, 58-78 (above 66 with the school's height share);
- ``weight``: kg, 45-110 (above 70 with the school's weight share).

Everything is drawn from ``numpy.random.default_rng(SEED)``: the file is the same on every run.
Purely synthetic; no real student is described.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

SEED = 20261123
RECORDS = 1000
OUT = Path(__file__).resolve().parent / "students.csv"


def school_parameters(rng: np.random.Generator) -> dict[str, float]:
    """One school's shares, drawn from the student network (ancestral sampling)."""
    import quiltpriv as qp

    theta = qp.load_model("student")
    member = theta.members[0]
    index: dict[str, int] = {}
    for v in theta.nodes:
        column = member[v].table[(slice(None),) + tuple(index[p] for p in theta.parents[v])]
        index[v] = int(rng.choice(len(column), p=column))
    return {v: float(theta.states[v][index[v]]) for v in theta.nodes}


def students(phi: dict[str, float], n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` records whose expected shares are ``phi`` (columns independent given phi)."""
    def split(share: float, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        above = rng.random(n) < share
        return np.where(above, rng.choice(high, n), rng.choice(low, n))

    return pd.DataFrame({
        "gender": (rng.random(n) < phi["gender"]).astype(int),
        "income": (rng.random(n) < phi["income"]).astype(int),
        "sat": split(phi["sat"], np.arange(400, 1301, 10), np.arange(1310, 1601, 10)),
        "height": split(phi["height"], np.arange(58, 67), np.arange(67, 79)),
        "weight": split(phi["weight"], np.arange(45, 71), np.arange(71, 111)),
    })


def main(out: Path = OUT) -> None:
    rng = np.random.default_rng(SEED)
    phi = school_parameters(rng)
    df = students(phi, RECORDS, rng)
    df.to_csv(out, index=False, lineterminator="\n")
    print(f"school parameters {phi}; wrote {len(df)} records to {out}")


if __name__ == "__main__":
    main()
