"""Data sets shipped with quiltpriv (no download at run time).

* :func:`load_adult` -- the UCI Adult census data, cleaned as in Chen and Ohrimenko (2023),
  Section 5 / spec 03 ("The Adult experiment"): train and test files concatenated, rows with a
  missing value dropped (45,222 rows, 11,208 with income > 50K). Provenance, licence (CC BY 4.0)
  and the cleaning steps are in ``quiltpriv/data/README.md``.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["ADULT_COLUMNS", "load_adult"]

#: Columns of the bundled Adult derivative, in file order.
ADULT_COLUMNS = ("age", "workclass", "education_num", "marital_status", "sex",
                 "hours_per_week", "income")


def load_adult():
    """The cleaned UCI Adult data as a pandas DataFrame (45,222 rows).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`ADULT_COLUMNS`: ``age``, ``education_num`` and ``hours_per_week`` as
        int64; ``workclass``, ``marital_status``, ``sex`` and ``income`` ("<=50K" / ">50K") as
        strings. A fresh copy on every call (callers may modify it).

    Notes
    -----
    Source: UCI Machine Learning Repository, Adult (Becker and Kohavi 1996), CC BY 4.0; this
    is a modified derivative, see ``quiltpriv/data/README.md``.
    """
    import pandas as pd

    ref = resources.files("quiltpriv.data").joinpath("adult.csv.gz")
    with resources.as_file(ref) as path:
        df = pd.read_csv(path, compression="gzip",
                         dtype={"age": "int64", "education_num": "int64",
                                "hours_per_week": "int64", "workclass": str,
                                "marital_status": str, "sex": str, "income": str})
    return df[list(ADULT_COLUMNS)]
