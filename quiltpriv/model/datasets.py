"""Data sets shipped with quiltpriv (no download at run time).

* :func:`load_adult` -- the UCI Adult census data, cleaned as in Chen and Ohrimenko (2023),
  Section 5 ("The Adult experiment"): train and test files concatenated, rows with a
  missing value dropped (45,222 rows, 11,208 with income > 50K). Provenance, licence (CC BY 4.0)
  and the cleaning steps are in ``quiltpriv/data/README.md``.
* :func:`load_star98` -- 303 California school districts (Jeff Gill's ``star98``), read from
  the copy statsmodels ships (``pip install "quiltpriv[data]"``); one row per district with its
  shares of low-income, Asian, Black and Hispanic students and its math results: exactly the
  per-population parameters a hyperparameter network models. quiltpriv does not redistribute
  it: the data's note says "Used with express permission from the original author, who retains
  all rights."
"""

from __future__ import annotations

from importlib import resources
from typing import Any

__all__ = ["ADULT_COLUMNS", "STAR98_COLUMNS", "load_adult", "load_star98"]

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
        dtype: dict[str, Any] = {"age": "int64", "education_num": "int64",
                                 "hours_per_week": "int64", "workclass": str,
                                 "marital_status": str, "sex": str, "income": str}
        df = pd.read_csv(path, compression="gzip", dtype=dtype)
    return df[list(ADULT_COLUMNS)]


#: Columns of :func:`load_star98`, in order.
STAR98_COLUMNS = ("low_income", "asian", "black", "hispanic", "minority_teachers",
                  "prep_courses", "math_above", "students", "students_math_above")


def load_star98():
    """The ``star98`` school districts as per-district parameters (303 rows).

    Read at run time from the CSV inside the installed statsmodels package (no network); the
    data are not shipped with quiltpriv (their note: "Used with express permission from the
    original author, who retains all rights"). Install the optional extra:
    ``pip install "quiltpriv[data]"``.

    Returns
    -------
    pandas.DataFrame
        One row per district (index ``district``, 0-302, statsmodels' row order), columns
        :data:`STAR98_COLUMNS`:

        - ``low_income``, ``asian``, ``black``, ``hispanic``: shares of the district's
          students (``LOWINC``, ``PERASIAN``, ``PERBLACK``, ``PERHISP`` divided by 100);
        - ``minority_teachers``: share of minority teachers (``PERMINTE`` / 100);
        - ``prep_courses``: share of students taking UC/CSU preparation courses
          (``PCTAF`` / 100);
        - ``math_above``: share of tested students above the national median in math,
          ``NABOVE / (NABOVE + NBELOW)``;
        - ``students``: tested students ``NABOVE + NBELOW`` (int); ``students_math_above``:
          ``NABOVE`` (int).

    Raises
    ------
    ImportError
        statsmodels is not installed (the message says which extra to install).

    Notes
    -----
    Source: Jeff Gill, *Generalized Linear Models: A Unified Approach* (Sage, 2001), via
    ``statsmodels.datasets.star98``. Shares above 1 after the division (none in the
    statsmodels copy) would be refused by :func:`quiltpriv.learn_theta`, never clipped.
    """
    import pandas as pd

    try:
        from statsmodels.datasets import star98
    except ImportError as exc:
        raise ImportError('load_star98 reads the data set shipped with statsmodels: pip install '
                          '"quiltpriv[data]" (or pip install statsmodels)') from exc
    raw = star98.load_pandas().data
    above = raw["NABOVE"].astype("int64")
    total = above + raw["NBELOW"].astype("int64")
    df = pd.DataFrame({
        "low_income": raw["LOWINC"] / 100, "asian": raw["PERASIAN"] / 100,
        "black": raw["PERBLACK"] / 100, "hispanic": raw["PERHISP"] / 100,
        "minority_teachers": raw["PERMINTE"] / 100, "prep_courses": raw["PCTAF"] / 100,
        "math_above": above / total, "students": total, "students_math_above": above,
    })
    df.index.name = "district"
    return df[list(STAR98_COLUMNS)]
