"""Tests of dpriv.metrics.utility (docs/algorithms.md §2.4 E11, §6 E24-E26)."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv.errors import InputError
from dpriv.metrics.utility import (
    average_class_size,
    average_semiperimeter,
    discernibility,
    gcp,
    group_table,
    parse_value_set,
    suppression_rate,
    utility_metrics,
)

NUM = {"age": (20.0, 80.0), "weight": (50.0, 100.0)}
CAT = {"gender": ["Female", "Male"]}


def _view() -> pd.DataFrame:
    """Two groups, N = 7 originals (2 suppressed), m = 3 QIs, rows shuffled.

    g1 (3 rows): age [20, 50] -> 30/60 = 0.5, weight [60, 70] -> 10/50 = 0.2,
                 gender {Female,Male} -> 1;             NCP = 1.7
    g2 (2 rows): age [30, 35] -> 5/60, weight [80, 80] -> 0, gender {Male} -> 0;
                                                         NCP = 1/12
    """
    g1 = {
        "qi_group": "g1",
        "age_min": 20,
        "age_max": 50,
        "weight_min": 60.0,
        "weight_max": 70.0,
        "gender": "{Female,Male}",
    }
    g2 = {
        "qi_group": "g2",
        "age_min": 30,
        "age_max": 35,
        "weight_min": 80.0,
        "weight_max": 80.0,
        "gender": "{Male}",
    }
    rows = [
        dict(g1, exam="a"),
        dict(g2, exam="b"),
        dict(g1, exam="b"),
        dict(g2, exam="b"),
        dict(g1, exam="a"),
    ]
    return pd.DataFrame(rows)


def test_group_table_hand_computed() -> None:
    g = group_table(_view(), NUM, CAT)
    assert list(g.columns) == ["size", "ncp__age", "ncp__weight", "ncp__gender", "ncp"]
    assert g.loc["g1", "size"] == 3 and g.loc["g2", "size"] == 2
    assert g.loc["g1", "ncp__age"] == pytest.approx(0.5)
    assert g.loc["g1", "ncp__weight"] == pytest.approx(0.2)
    assert g.loc["g1", "ncp__gender"] == 1.0
    assert g.loc["g1", "ncp"] == pytest.approx(1.7)
    assert g.loc["g2", "ncp"] == pytest.approx(1 / 12)


def test_utility_metrics_hand_computed() -> None:
    m = utility_metrics(
        _view(), numeric_domains=NUM, categorical_domains=CAT, n_original=7, k=2, sensitive="exam"
    )
    semi1, semi2 = 1.7, 1 / 12
    assert m["n_original"] == 7 and m["n_released"] == 5 and m["n_suppressed"] == 2
    assert m["n_groups"] == 2 and m["m"] == 3
    assert m["suppression_rate"] == pytest.approx(2 / 7)
    assert m["min_group_size"] == 2 and m["largest_group"] == 3
    assert m["average_semiperimeter"] == pytest.approx((semi1 + semi2) / 2)  # (E11)
    assert m["gcp"] == pytest.approx((3 * semi1 + 2 * semi2 + 2 * 3) / (3 * 7))  # (E24)
    assert m["gcp_kept"] == pytest.approx((3 * semi1 + 2 * semi2) / (3 * 5))
    assert m["discernibility"] == 3**2 + 2**2 + 2 * 7  # (E25)
    assert isinstance(m["discernibility"], int)
    assert m["c_avg"] == pytest.approx((5 / 2) / 2)  # (E26)
    assert m["min_distinct_sensitive"] == 1  # g2 has only "b"
    assert 0 <= m["gcp"] <= 1


def test_small_functions() -> None:
    g = group_table(_view(), NUM, CAT)
    assert average_semiperimeter(g) == pytest.approx((1.7 + 1 / 12) / 2)
    assert gcp(g, 5, 3) == pytest.approx(gcp(g, 5, 3, include_suppressed=False))
    assert discernibility(np.array([2, 2, 5]), 10) == 4 + 4 + 25 + 1 * 10
    assert average_class_size([2, 2, 5], 3) == pytest.approx(3 / 3)
    assert average_class_size([2, 2, 5], None) is None
    assert suppression_rate(9, 10) == pytest.approx(0.1)
    assert suppression_rate(0, 0) is None
    assert parse_value_set("{Female, Male}") == ("Female", "Male")
    assert parse_value_set("Male") == ("Male",)
    assert parse_value_set("{a,a,b}") == ("a", "b")
    with pytest.raises(InputError):
        parse_value_set("{}")


def test_no_suppression_gcp_variants_equal_and_c_avg_one() -> None:
    m = utility_metrics(_view(), numeric_domains=NUM, categorical_domains=CAT, n_original=5, k=2.5)
    assert m["gcp"] == pytest.approx(m["gcp_kept"])
    assert m["suppression_rate"] == 0.0 and m["n_suppressed"] == 0
    assert m["discernibility"] == 13
    assert m["c_avg"] == pytest.approx(1.0)


def test_empty_release_gives_none_where_undefined() -> None:
    empty = _view().iloc[:0]
    m = utility_metrics(empty, numeric_domains=NUM, categorical_domains=CAT, n_original=4, k=2)
    assert m["n_groups"] == 0 and m["n_released"] == 0
    assert m["average_semiperimeter"] is None
    assert m["gcp_kept"] is None and m["c_avg"] is None
    assert m["min_group_size"] is None and m["largest_group"] is None
    assert m["gcp"] == 1.0  # every tuple suppressed counts as fully generalized
    assert m["suppression_rate"] == 1.0
    assert m["discernibility"] == 16
    m0 = utility_metrics(empty, numeric_domains=NUM, categorical_domains=CAT, n_original=0)
    assert m0["suppression_rate"] is None and m0["gcp"] is None and m0["discernibility"] == 0


def test_degenerate_domains_contribute_zero() -> None:
    v = _view()
    v["age_min"] = 40
    v["age_max"] = 40
    v["gender"] = "{Male}"
    m = utility_metrics(
        v,
        numeric_domains={"age": (40, 40), "weight": (50, 100)},
        categorical_domains={"gender": ["Male"]},
        n_original=5,
    )
    g = group_table(v, {"age": (40, 40), "weight": (50, 100)}, {"gender": ["Male"]})
    assert (g["ncp__age"] == 0).all() and (g["ncp__gender"] == 0).all()
    assert m["average_semiperimeter"] == pytest.approx((0.2 + 0.0) / 2)
    # no QI at all: m = 0, GCP undefined
    m = utility_metrics(v, numeric_domains={}, categorical_domains={}, n_original=5)
    assert m["gcp"] is None and m["average_semiperimeter"] == 0.0


def test_category_and_string_dtypes_and_dask() -> None:
    v = _view()
    vc = v.assign(gender=v["gender"].astype("category"), qi_group=v["qi_group"].astype("str"))
    ref = utility_metrics(
        v, numeric_domains=NUM, categorical_domains=CAT, n_original=7, k=2, sensitive="exam"
    )
    assert (
        utility_metrics(vc, numeric_domains=NUM, categorical_domains=CAT, n_original=7, k=2, sensitive="exam")
        == ref
    )
    got = utility_metrics(
        dd.from_pandas(v, npartitions=2),
        numeric_domains=NUM,
        categorical_domains=CAT,
        n_original=7,
        k=2,
        sensitive="exam",
    )
    assert got.keys() == ref.keys()
    for key, val in ref.items():
        assert got[key] == pytest.approx(val), key


def test_many_groups_vectorised() -> None:
    rng = np.random.default_rng(0)
    n_groups, size = 20_000, 3
    lo = rng.integers(20, 70, n_groups)
    width = rng.integers(0, 10, n_groups)
    g = np.repeat(np.arange(n_groups), size)
    v = pd.DataFrame(
        {
            "qi_group": g,
            "age_min": np.repeat(lo, size),
            "age_max": np.repeat(lo + width, size),
            "gender": np.repeat(rng.choice(["{Female}", "{Male}", "{Female,Male}"], n_groups), size),
        }
    )
    m = utility_metrics(v, numeric_domains={"age": (20, 80)}, categorical_domains=CAT, n_original=len(v) + 10)
    gender = {"{Female}": 0.0, "{Male}": 0.0, "{Female,Male}": 1.0}
    expected = np.mean(width / 60 + v.groupby("qi_group")["gender"].first().map(gender).values)
    assert m["average_semiperimeter"] == pytest.approx(expected)
    assert m["discernibility"] == n_groups * 9 + 10 * (len(v) + 10)


def test_errors_name_the_column() -> None:
    v = _view()
    with pytest.raises(InputError, match="weight_max"):
        utility_metrics(
            v.drop(columns="weight_max"), numeric_domains=NUM, categorical_domains=CAT, n_original=7
        )
    bad = v.copy()
    bad.loc[0, "age_min"] = 21
    with pytest.raises(InputError, match="'age_min' is not constant in QI-group 'g1'"):
        group_table(bad, NUM, CAT)
    bad = v.copy()
    bad.loc[1, "gender"] = "{Female}"
    with pytest.raises(InputError, match="'gender' is not constant"):
        group_table(bad, NUM, CAT)
    with pytest.raises(InputError, match="'gender'.*not in its declared domain"):
        group_table(v, NUM, {"gender": ["Female", "Other"]})
    with pytest.raises(InputError, match="'age'.*outside the declared domain"):
        group_table(v, {"age": (25, 80), "weight": (50, 100)}, CAT)
    with pytest.raises(InputError, match="n_original"):
        utility_metrics(v, numeric_domains=NUM, categorical_domains=CAT, n_original=4)
    with pytest.raises(InputError, match="domain of 'age'"):
        group_table(v, {"age": (80, 20)}, {})
    with pytest.raises(InputError, match="sensitive column 'nope'"):
        utility_metrics(v, numeric_domains=NUM, categorical_domains=CAT, n_original=7, sensitive="nope")
