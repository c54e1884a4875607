"""The original must fit an Anatomy release (dpriv.anonymity.coverage_anatomy): ``dpriv verify``
of a QI table and its sensitive table, which have no membership. A drill found an edited or
foreign QI table that verified ok (each group's own k, t still held)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpriv.anonymity.coverage_anatomy import WHY, anatomy_coverage_problems
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize
from dpriv.view_check import verify_view

POLICY = ReleasePolicy(
    qi=["age", "sex"],
    sensitive="s",
    k=2,
    t=1.0,
    kinds={"sex": "categorical"},
    domains={"age": [0, 100], "sex": ["F", "M"], "s": ["a", "b", "c"]},
)
ORIGINAL = pd.DataFrame(
    {
        "age": [30, 32, 35, 38, 50, 55],
        "sex": ["F", "M", "F", "F", "M", "M"],
        "s": ["a", "a", "b", "b", "a", "b"],
    }
)
# groups 1 = {30 F a, 35 F b}, 2 = {32 M a, 38 F b}, 3 = {50 M a, 55 M b}
QI_TABLE = pd.DataFrame(
    {"qi_group": [1, 1, 2, 2, 3, 3], "age": [30, 35, 32, 38, 50, 55], "sex": list("FFMFMM")}
)


def counts(*rows) -> pd.DataFrame:
    """A sensitive table from (group, value, count) rows."""
    return pd.DataFrame(rows, columns=["qi_group", "s", "count"])


TABLE = counts((1, "a", 1), (1, "b", 1), (2, "a", 1), (2, "b", 1), (3, "a", 1), (3, "b", 1))


def test_the_true_tables_fit_and_a_foreign_qi_row_is_named():
    assert anatomy_coverage_problems(QI_TABLE, TABLE, ORIGINAL, POLICY) == []
    edited = QI_TABLE.copy()
    edited.loc[0, "age"] = 31  # no tuple of the original is 31 F
    assert anatomy_coverage_problems(edited, TABLE, ORIGINAL, POLICY) == [
        "the QI table holds (age 31, sex 'F') 1 times (QI-groups 1) where the original has it 0 times",
        WHY,
    ]
    twice = QI_TABLE.copy()
    twice.loc[3, ["age", "sex"]] = [30, "F"]  # group 2 claims the 30 F tuple of group 1
    assert anatomy_coverage_problems(twice, TABLE, ORIGINAL, POLICY)[0] == (
        "the QI table holds (age 30, sex 'F') 2 times (QI-groups 1, 2) where the original has it 1 times"
    )


def test_counts_moved_between_groups_are_named():
    moved = counts((1, "a", 2), (2, "b", 2), (3, "a", 1), (3, "b", 1))
    assert anatomy_coverage_problems(QI_TABLE, moved, ORIGINAL, POLICY) == [
        "QI-group 1: 1 of its rows can be tuples of the original with s = 'a'; its sensitive table counts 2",
        "QI-group 2: 1 of its rows can be tuples of the original with s = 'b'; its sensitive table counts 2",
        WHY,
    ]


def test_values_that_one_row_alone_could_carry_but_not_together_fail():
    # b and c can only come from the one 30 F row (35 F is an a): each alone fits, both do not
    original = pd.DataFrame({"age": [30, 30, 35], "sex": ["F", "F", "F"], "s": ["b", "c", "a"]})
    qi = pd.DataFrame({"qi_group": [1, 1], "age": [30, 35], "sex": ["F", "F"]})
    got = anatomy_coverage_problems(qi, counts((1, "b", 1), (1, "c", 1)), original, POLICY)
    assert got == [
        "no assignment of the QI table's 2 rows to tuples of the original gives every QI-group the s "
        "values its sensitive table counts: at most 1 row fits",
        WHY,
    ]
    assert anatomy_coverage_problems(qi, counts((1, "a", 1), (1, "c", 1)), original, POLICY) == []


def test_two_groups_leaning_on_the_same_tuples_fail_though_each_alone_fits():
    # one a among the 30 F tuples and one among the 40 M: each group alone can take both a's
    original = pd.DataFrame({"age": [30, 30, 40, 40], "sex": list("FFMM"), "s": list("abab")})
    qi = pd.DataFrame({"qi_group": [1, 1, 2, 2], "age": [30, 40, 30, 40], "sex": list("FMFM")})
    got = anatomy_coverage_problems(qi, counts((1, "a", 2), (2, "a", 2)), original, POLICY)
    assert got[0].endswith("at most 2 rows fit"), got
    assert anatomy_coverage_problems(qi, counts((1, "a", 2), (2, "b", 2)), original, POLICY) == []


def _view(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "rid": np.arange(n),
            "age": rng.integers(20, 70, n),
            "adm": pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 90, n), unit="D"),
            "sex": rng.choice(["F", "M"], n),
            "s": rng.choice(list("abcde"), n),
        }
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_a_true_anatomy_release_fits_and_an_edited_or_foreign_one_does_not(seed):
    view = _view(300, seed)
    policy = dict(id="rid", qi=["age", "adm", "sex"], sensitive="s", k=5, t=0.5, j=2.0, seed=seed)
    res = anonymize(view, {**policy, "kinds": {"sex": "categorical"}, "release_format": "anatomy"})
    assert verify_view(res.released, view, res.policy, sensitive=res.sensitive).ok
    edited = res.released.copy()
    edited.loc[edited.index[0], "age"] = 19  # below every age of the view
    report = verify_view(edited, view, res.policy, sensitive=res.sensitive)
    assert not report.ok and WHY in report.problems, report.problems
    # the same tables against another view of the same respondents' QIs, values redrawn
    other = view.assign(s=_view(300, seed + 10)["s"])
    report = verify_view(res.released, other, res.policy, sensitive=res.sensitive)
    assert not report.ok and WHY in report.problems, report.problems
