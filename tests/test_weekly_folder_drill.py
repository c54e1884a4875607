"""A weekly batch job's history folder (session 43, user D): one Parquet file per week, or the
parts Dask writes.

* A folder written by Dask (``ddf.to_parquet(folder)``: its unnamed index stored as
  ``__null_dask_index__``, and empty parts where a partition held no row) was an internal error
  (``KeyError: "['__null_dask_index__'] not in index"``, exit 1); it is released as the same rows
  in one file are, byte for byte.
* A week's file with no row (an export that found nothing, or failed) was a silent exit 0
  ``nothing to release``; it is refused by name (exit 2, ledger unchanged), while a writer's empty
  parts (``part.0.parquet``) are still read as parts of one table.
"""

from __future__ import annotations

import dask.dataframe as dd
import pandas as pd
import pytest
from test_cli import assert_refused, tree
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history


@pytest.fixture(scope="module")
def weeks(tmp_path_factory):
    """3 generated views x 60, their policy (nothing suppressed at these sizes) and the history."""
    out = tmp_path_factory.mktemp("weeks")
    mh = medical_history(n_views=3, view_size=60, seed=4)
    write_history(out, mh, policy_extra={"privacy": {"k": 5, "t": 0.6, "j": 0.9, "max_suppression": 1.0}})
    return out, mh.history


def _release(history, ledger, policy) -> object:
    return CliRunner().invoke(
        app, ["release", str(history), "--ledger", str(ledger), "--policy", str(policy), "--no-cluster"]
    )


def _week_files(root, frame: pd.DataFrame, views=(1, 2, 3)):
    root.mkdir()
    for v in views:
        frame[frame["view"] == v].reset_index(drop=True).to_parquet(root / f"week{v}.parquet", index=False)
    return root


def _files(ledger) -> dict:
    return {p: p.read_bytes() for p in sorted(ledger.rglob("*.parquet"))}


def _dask_folder(root, frame: pd.DataFrame):
    """``frame`` written by Dask: an empty first part (a filter that left a partition nothing)
    and Dask's unnamed index (``__null_dask_index__``)."""
    parts = dd.concat([dd.from_pandas(frame.iloc[:0], npartitions=1), dd.from_pandas(frame, npartitions=3)])
    parts.to_parquet(root)
    return root


def test_a_dask_written_folder_is_read_as_its_frame_without_the_index_column(weeks, tmp_path):
    from dpriv.io import read_table

    _, frame = weeks
    folder = _dask_folder(tmp_path / "dask", frame)
    got = read_table(str(folder)).compute()
    assert list(got.columns) == list(frame.columns)  # the row labels are no column
    pd.testing.assert_frame_equal(got.reset_index(drop=True), frame.reset_index(drop=True), check_dtype=False)


@pytest.mark.slow  # two releases of 3 views (~5 s on 2 loaded cores)
def test_a_dask_written_folder_with_empty_parts_is_released_as_the_one_file(weeks, tmp_path):
    out, frame = weeks
    policy = out / "policy.toml"
    _dask_folder(tmp_path / "dask", frame)
    names = sorted(p.name for p in (tmp_path / "dask").glob("*.parquet"))
    assert names[0] == "part.0.parquet" and len(pd.read_parquet(tmp_path / "dask" / names[0])) == 0
    assert "__null_dask_index__" in pd.read_parquet(tmp_path / "dask" / names[1]).reset_index().columns
    res = _release(tmp_path / "dask", tmp_path / "from-dask", policy)
    assert res.exit_code == 0, res.output
    assert _release(out / "history.parquet", tmp_path / "from-file", policy).exit_code == 0
    got = {p.relative_to(tmp_path / "from-dask"): b for p, b in _files(tmp_path / "from-dask").items()}
    want = {p.relative_to(tmp_path / "from-file"): b for p, b in _files(tmp_path / "from-file").items()}
    assert len(want) == 6 and got == want  # 3 views and 3 states, the same bytes


def test_a_week_file_with_no_row_is_refused_by_name_and_the_ledger_stays(weeks, tmp_path):
    out, frame = weeks
    folder = _week_files(tmp_path / "h", frame, views=(1, 2))
    assert _release(folder, tmp_path / "led", out / "policy.toml").exit_code == 0
    frame.iloc[:0].to_parquet(folder / "week3.parquet", index=False)  # this week's export: no row
    before = tree(tmp_path)
    res = _release(folder, tmp_path / "led", out / "policy.toml")
    assert_refused(
        res,
        rf"{folder}/week3\.parquet holds no row \(its columns only\)",
        r"export that week again",
        r"a week with no data has no view: move the file out of the folder",
    )
    assert "nothing to release" not in res.output
    assert tree(tmp_path) == before  # nothing written, the ledger at release 2


def test_numbers_stored_as_text_in_a_later_week_are_refused_naming_the_week_column_and_rows(weeks, tmp_path):
    out, frame = weeks
    later = frame.assign(age=frame["age"].astype(object))
    third = later["view"] == 3
    later.loc[third, "age"] = later.loc[third, "age"].astype(str)  # week 3's export wrote ages as text
    folder = tmp_path / "h"
    folder.mkdir()
    for v in (1, 2):
        frame[frame["view"] == v].to_parquet(folder / f"week{v}.parquet", index=False)
    week3 = later[third].reset_index(drop=True).astype({"age": "str"})
    week3.to_parquet(folder / "week3.parquet", index=False)
    assert pd.read_parquet(folder / "week3.parquet")["age"].map(type).eq(str).all()
    before = tree(tmp_path)
    res = _release(folder, tmp_path / "led", out / "policy.toml")
    first = week3["age"].iloc[0]
    assert_refused(
        res,
        rf"view = 3: numeric QI 'age' holds numbers stored as text \(e\.g\. '{first}'\) where its other rows "
        r"hold numbers",
        r"write 'age' as numbers in every file, every week's",
        rf"\(60 rows: row 1 of {folder}/week3\.parquet \(view=3\), row 2 of {folder}/week3\.parquet",
    )
    assert tree(tmp_path) == before  # no ledger started


def test_a_pandas_history_mixing_numbers_and_numbers_as_text_in_a_declared_qi_is_refused(weeks, tmp_path):
    from dpriv.errors import InputError
    from dpriv.policy import ReleasePolicy
    from dpriv.release import release_history

    out, frame = weeks
    mixed = frame.assign(age=frame["age"].astype(object))
    mixed.loc[[130, 170], "age"] = ["61", "62"]  # two rows of view 3 (rows 120..179)
    policy = ReleasePolicy.from_toml(out / "policy.toml")
    with pytest.raises(InputError) as exc:
        release_history(mixed, policy, tmp_path / "led")
    said = str(exc.value)
    assert "numeric QI 'age' holds numbers stored as text (e.g. '61')" in said, said
    assert "(2 rows: row 130 (view=3), row 170 (view=3))" in said, said
    assert not (tmp_path / "led").exists()


def test_a_sensitive_value_renamed_in_a_later_week_is_refused_naming_its_rows(weeks, tmp_path):
    """'stage 2' for 'stage2' in week 3, no [domains] and no knowledge file: the inferred domain
    took it as one more value (exit 0, a release of 'liver 2' beside 'liver_2')."""
    _, frame = weeks
    renamed = frame.copy()
    hit = (renamed["view"] == 3) & (
        renamed["exam_result"] == renamed.loc[renamed["view"] == 3, "exam_result"].iloc[0]
    )
    value = renamed.loc[hit, "exam_result"].iloc[0]
    assert "_" in value and (frame.loc[frame["view"] < 3, "exam_result"] == value).any()
    renamed.loc[hit, "exam_result"] = value.replace("_", " ")  # week 3's export: a space for the '_'
    folder = _week_files(tmp_path / "h", renamed)
    policy = tmp_path / "p.toml"
    policy.write_text(
        '[columns]\nid = "respondent_id"\ntime = "view"\nqi = ["age", "gender", "weight"]\n'
        'sensitive = "exam_result"\n[privacy]\nk = 5\nt = 0.6\nj = 0.9\nmax_suppression = 1.0\n'
    )
    before = tree(tmp_path)
    res = _release(folder, tmp_path / "led", policy)
    first = int(hit[renamed["view"] == 3].to_numpy().argmax()) + 1  # its row in week3.parquet
    out = assert_refused(
        res,
        r"column 'exam_result' holds two values \(not printed beside their rows: see the rows named\), which "
        r"differ only in the spaces, '_' or '-' between their words",
        rf"row {first} of {folder}/week3\.parquet \(view=3\)",
    )
    assert value not in out and value.replace("_", " ") not in out  # a sensitive value is never printed
    assert tree(tmp_path) == before


def test_codes_that_differ_in_a_separator_between_digits_or_a_sign_stay_two_values():
    from dpriv.same_text import spelling_key

    assert (
        spelling_key("stage 2")
        == spelling_key("Stage2")
        == spelling_key("stage-2")
        == spelling_key("stage_2")
    )
    assert spelling_key("1-2") != spelling_key("12")  # a range and a number
    assert spelling_key("-1") != spelling_key("1")  # a sign
    assert spelling_key("B ") == spelling_key("b")  # spaces at the ends and case, as before


def test_a_week_file_with_one_more_column_is_refused_naming_that_column(weeks, tmp_path):
    out, frame = weeks
    folder = _week_files(tmp_path / "h", frame, views=(1, 2))
    assert _release(folder, tmp_path / "led", out / "policy.toml").exit_code == 0
    week3 = frame[frame["view"] == 3].reset_index(drop=True).assign(bmi=22.5)  # the export added a column
    week3.to_parquet(folder / "week3.parquet", index=False)
    before = tree(tmp_path)
    assert_refused(
        _release(folder, tmp_path / "led", out / "policy.toml"),
        rf"\({folder}/week3\.parquet has \['bmi'\] more\); a folder is read as the parts of one table: keep "
        r"one table's parts in it, the same columns in every file",
    )
    assert tree(tmp_path) == before


def test_anonymize_of_a_folder_whose_second_file_holds_ages_as_text_is_refused(weeks, tmp_path):
    """The same for one view given as a folder of two files (dpriv anonymize), the age's domain
    declared: its bounds were float64 (exit 0)."""
    _, frame = weeks
    one = frame[frame["view"] == 1].drop(columns="view").reset_index(drop=True)
    folder = tmp_path / "parts"
    folder.mkdir()
    one.iloc[:30].to_parquet(folder / "a.parquet", index=False)
    one.iloc[30:].astype({"age": "str"}).to_parquet(folder / "b.parquet", index=False)
    (tmp_path / "p.toml").write_text(
        '[columns]\nid = "respondent_id"\nqi = ["age", "gender", "weight"]\nsensitive = "exam_result"\n'
        "[domains]\nage = [45, 74]\n[privacy]\nk = 5\nt = 0.6\nj = 0.9\nmax_suppression = 1.0\n"
    )
    res = CliRunner().invoke(
        app, ["anonymize", str(folder), "--out", str(tmp_path / "o.parquet"),
              "--policy", str(tmp_path / "p.toml"), "--no-cluster"],
    )  # fmt: skip
    assert_refused(
        res,
        r"numeric QI 'age' holds numbers stored as text \(e\.g\. '\d+'\) where its other rows hold numbers",
        rf"\(30 rows: row 1 of {folder}/b\.parquet, row 2 of {folder}/b\.parquet",
    )
    assert not (tmp_path / "o.parquet").exists()


def test_a_renamed_value_outside_a_declared_domain_is_said_to_be_a_domain_value_written_another_way(
    weeks, tmp_path
):
    out, frame = weeks
    renamed = frame.copy()
    value = next(v for v in renamed.loc[renamed["view"] == 3, "exam_result"] if "_" in v)
    hit = (renamed["view"] == 3) & (renamed["exam_result"] == value)
    renamed.loc[hit, "exam_result"] = value.replace("_", "-")  # week 3: 'liver-2' for 'liver_2'
    folder = _week_files(tmp_path / "h", renamed)
    res = _release(folder, tmp_path / "led", out / "policy.toml")  # its [domains] declared
    said = assert_refused(
        res,
        r"view = 3: sensitive column 'exam_result' has values \(not printed beside their rows",
        r"\(of these, a value of the domain written another way: in upper and lower case, with spaces at "
        r"its ends, or with spaces, '_' or '-' between its words; write it as the domain does\)",
    )
    assert value.replace("_", "-") not in said
    other = frame.assign(exam_result=frame["exam_result"].where(~hit, "unknown"))
    res = _release(_week_files(tmp_path / "h2", other), tmp_path / "led2", out / "policy.toml")
    assert "written another way" not in assert_refused(res, r"not in its declared domain")  # a new value
