"""A history whose column was renamed (the policy names ``age``, the file holds ``Age`` or
``age_years``; a new-user drill, s41): the refusal listed the columns only, and a glob of
Parquet files one of which was renamed ended as ``internal error: KeyError: "['age'] not in
index"`` (exit 1). Every such refusal now says which column was probably meant, by one rule
(:mod:`dpriv.column_hints`) for a CSV or Parquet file, a Parquet folder and a list of files.
"""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.column_hints import renamed_hint, renamed_to
from dpriv.datasets import medical_history, write_history

COLUMNS = ["respondent_id", "view", "gender", "weight", "exam_result"]


@pytest.mark.parametrize(
    ("missing", "given", "meant"),
    [
        ("age", ["Age", "gender"], "Age"),
        ("age", ["AGE "], "AGE "),
        ("exam_result", ["Exam-Result"], "Exam-Result"),
        ("age", ["age_years", "gender"], "age_years"),
        ("age", ["patient_age"], "patient_age"),
        ("weight", ["weigth"], "weigth"),
        ("age", ["age_min", "age_max"], None),  # a released view's pair: no single rename
        ("age", ["gender", "stage"], None),  # "stage" holds "age", not as a word
        ("age", ["height"], None),
    ],
)
def test_renamed_to(missing, given, meant):
    assert renamed_to(missing, given) == meant


def test_renamed_hint_names_each_pair_or_nothing():
    assert renamed_hint(["age", "weight"], ["Age", "wt_kg", "Weight"]) == (
        " (did you mean 'Age' for 'age', 'Weight' for 'weight'?)"
    )
    assert renamed_hint(["age"], ["gender"]) == ""


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    out = tmp_path_factory.mktemp("hist")
    write_history(out, medical_history(n_views=2, view_size=40, seed=0), policy_extra={"privacy": {"k": 5}})
    return out


def _release(history, source, ledger):
    args = ["release", source, "--ledger", ledger, "--policy", history / "policy.toml"]
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("new", ["Age", "age_years"])
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_a_renamed_column_is_hinted_in_parquet_as_in_csv(history, tmp_path, new, fmt):
    frame = pd.read_parquet(history / "history.parquet").rename(columns={"age": new})
    source = tmp_path / f"h.{fmt}"
    frame.to_parquet(source, index=False) if fmt == "parquet" else frame.to_csv(source, index=False)
    res = _release(history, source, tmp_path / "L")
    assert res.exit_code == 2, res.output
    has = ["respondent_id", "view", new, "gender", "weight", "exam_result"]
    assert (
        f"error: missing column(s) ['age']; the input has {has} (did you mean {new!r} for 'age'?). "
        "Rename the columns or pass --id/--qi/--sensitive" in res.stderr
    ), res.stderr
    assert not (tmp_path / "L").exists()


def _weeks(history, folder):
    """The history as one Parquet file per view, ``age`` renamed ``Age`` in week 2."""
    folder.mkdir()
    frame = pd.read_parquet(history / "history.parquet")
    for v, week in frame.groupby("view"):
        (week.rename(columns={"age": "Age"}) if v == 2 else week).to_parquet(folder / f"week{v}.parquet")


def test_a_folder_whose_later_week_renamed_a_column_is_hinted(history, tmp_path):
    _weeks(history, tmp_path / "weeks")
    res = _release(history, tmp_path / "weeks", tmp_path / "L")
    assert res.exit_code == 2, res.output
    assert "holds Parquet files of different tables" in res.stderr
    assert "(did you mean 'Age' for 'age'?); a folder is read as the parts of one table" in res.stderr
    assert "its columns named alike in every file" in res.stderr
    assert not (tmp_path / "L").exists()


def test_a_glob_whose_later_week_renamed_a_column_is_bad_input_naming_both_files(history, tmp_path):
    _weeks(history, tmp_path / "weeks")
    res = _release(history, f"{tmp_path / 'weeks'}/week*.parquet", tmp_path / "L")
    assert res.exit_code == 2, res.output  # was 1: internal error: KeyError: "['age'] not in index"
    assert (
        f"error: {tmp_path / 'weeks' / 'week2.parquet'} lacks column(s) ['age'] that "
        f"{tmp_path / 'weeks' / 'week1.parquet'} holds (did you mean 'Age' for 'age'?): the files read "
        "as one history must be parts of one table"
    ) in res.stderr, res.stderr
    assert not (tmp_path / "L").exists()


def test_the_python_api_gives_the_same_hint_for_a_list_of_files(history, tmp_path):
    import dask.dataframe as dd

    from dpriv.errors import InputError
    from dpriv.policy import ReleasePolicy
    from dpriv.release import release_history

    _weeks(history, tmp_path / "weeks")
    frame = dd.read_parquet([str(tmp_path / "weeks" / f"week{v}.parquet") for v in (1, 2)])
    policy = ReleasePolicy.from_toml(history / "policy.toml")
    said = r"week2\.parquet lacks column\(s\) \['age'\] that .*week1\.parquet holds \(did you mean 'Age' for"
    with pytest.raises(InputError, match=said):
        release_history(frame, policy, tmp_path / "L")
    assert not (tmp_path / "L").exists()
