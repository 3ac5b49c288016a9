"""The bundled Adult derivative matches the cleaning of Chen and Ohrimenko (spec 03)."""

from quiltpriv.datasets import ADULT_COLUMNS, load_adult


def test_adult_counts_as_in_the_paper():
    df = load_adult()
    assert tuple(df.columns) == ADULT_COLUMNS
    assert len(df) == 45_222
    assert int((df["income"] == ">50K").sum()) == 11_208
    assert set(df["income"]) == {"<=50K", ">50K"}
    assert not df.isna().any().any()
    assert "?" not in set(df["workclass"])


def test_adult_column_ranges_match_group_dp_sensitivities():
    # spec 03: age in [17, 90], education in [1, 16], hours in [1, 99]
    df = load_adult()
    assert (df["age"].min(), df["age"].max()) == (17, 90)
    assert (df["education_num"].min(), df["education_num"].max()) == (1, 16)
    assert (df["hours_per_week"].min(), df["hours_per_week"].max()) == (1, 99)
    assert set(df["sex"]) == {"Female", "Male"}
    assert int((df["workclass"] == "Private").sum()) == 33_307
    assert int((df["marital_status"] == "Never-married").sum()) == 14_598


def test_adult_is_a_fresh_copy():
    a = load_adult()
    a.loc[0, "age"] = -1
    assert load_adult().loc[0, "age"] != -1
