"""A resumed history whose column types changed between weeks (dpriv/resume_types.py).

A new user's drill (session 31): ids written as text in the new week's file were accepted by
``dpriv release`` (exit 0; the input fingerprint hashes ids as text, so the committed views
still matched) and the new view was grouped as if nobody had a history, its state holding
each respondent twice; ages written ``64.0`` in the new week's CSV lines were refused only as
"view 1 differs from the one committed", naming neither the column nor the lines. Each is now
refused (exit 2, nothing written) naming the column, the ledger's dtype and the input's, and
what to do; integer ids of another width are cast to the ledger's.
"""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history

LOOSE = {"privacy": {"k": 5, "t": 0.5, "j": 1.5, "max_suppression": 1.0}}  # no view suppressed whole
ID = "respondent_id"


def snapshot(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def release(history, root, base):
    return CliRunner().invoke(
        app, ["release", str(history), "--ledger", str(root), "--policy", str(base / "policy.toml")]
    )


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A generated 3-view history (60 tuples a view, int64 ids and ages, rows in view order)."""
    out = tmp_path_factory.mktemp("types")
    write_history(out, medical_history(n_views=3, view_size=60, seed=3), policy_extra=LOOSE)
    hist = pd.read_parquet(out / "history.parquet").sort_values("view", kind="stable")
    assert hist[ID].dtype == "int64" and hist["age"].dtype == "int64"
    hist.reset_index(drop=True).to_parquet(out / "history.parquet", index=False)
    return out


def ledger_of(base, name: str, hist: pd.DataFrame):
    """The ledger ``base/name`` of views 1 and 2 of ``hist`` (view 3 left to release), made once."""
    root = base / name
    if not root.exists():
        hist[hist["view"] <= 2].to_parquet(base / f"{name}.parquet", index=False)
        res = release(base / f"{name}.parquet", root, base)
        assert res.exit_code == 0, res.output
    return root


def history(base) -> pd.DataFrame:
    return pd.read_parquet(base / "history.parquet")


def resumed(base, tmp_path, name: str, hist: pd.DataFrame, given) -> tuple:
    """``dpriv release`` of ``given`` (a file) onto a copy of the ledger ``name`` made from
    ``hist``: (result, the copy, its files before)."""
    root = tmp_path / "L"
    shutil.copytree(ledger_of(base, name, hist), root)
    before = snapshot(root)
    return release(given, root, base), root, before


def test_text_ids_onto_a_ledger_of_integer_ids_are_refused_naming_both_types(base, tmp_path):
    """The drill: exit 0, release 3 grouped as if nobody had a history. Now exit 2, the id
    column, the state's int64 and the input's text dtype named, nothing written."""
    hist = history(base)
    hist.astype({ID: str}).to_parquet(tmp_path / "ids.parquet", index=False)
    res, root, before = resumed(base, tmp_path, "int_ids", hist, tmp_path / "ids.parquet")
    assert res.exit_code == 2, res.output
    first = hist[ID].iloc[0]
    assert f"id column '{ID}' is string in this input where the ledger recorded int64 (state/2/" in res.output
    assert f"('{first}' and {first} are two respondents)" in res.output
    assert f"frame['{ID}'] = pd.to_numeric(frame['{ID}']).astype('int64')" in res.output
    assert "; every view holds its ids so, view 3 (the next to release) included;" in res.output
    assert snapshot(root) == before


def test_ids_that_are_no_numbers_onto_a_ledger_of_integer_ids_name_the_view_and_a_fix_that_works(
    base, tmp_path
):
    """A drill (session 33): the new week's ids written 'R' + 6 digits; the advice was
    pd.to_numeric(...), which fails on them, and no view was named. Now the view, how many of
    its ids and their shape (no id) are named, and the fix is the ledger's ids."""
    hist = history(base)
    text = hist.astype({ID: str})
    new = text["view"] == 3
    text.loc[new, ID] = "R" + text.loc[new, ID].str.zfill(6)
    text.to_parquet(tmp_path / "ids.parquet", index=False)
    res, root, before = resumed(base, tmp_path, "int_ids", hist, tmp_path / "ids.parquet")
    assert res.exit_code == 2, res.output
    assert f"id column '{ID}' is string in this input where the ledger recorded int64 (state/2/" in res.output
    assert (
        f"; view 3 writes ids that are not numbers ({int(new.sum())} of its ids, like 1 letter + 6 digits);"
        in (res.output)
    )
    assert (
        "pd.to_numeric cannot read such ids: give view 3 the ids its respondents have in the views "
        "released (int64: the same respondent, the same id), or start a new ledger"
    ) in res.output
    assert "pd.to_numeric(frame" not in res.output and "'R0" not in res.output
    assert snapshot(root) == before


def test_integer_ids_onto_a_ledger_of_text_ids_are_refused(base, tmp_path):
    """The reverse: text ids in the ledger's state, numbers now (a CSV's ids of digits)."""
    hist = history(base)
    res, root, before = resumed(base, tmp_path, "text_ids", hist.astype({ID: str}), base / "history.parquet")
    assert res.exit_code == 2, res.output
    assert f"id column '{ID}' is int64 in this input where the ledger recorded string" in res.output
    assert f"give '{ID}' as text" in res.output
    assert snapshot(root) == before


def negative_int32(hist: pd.DataFrame) -> pd.DataFrame:
    """Ids moved below 0 as int32 (int32 -1 and int64 -1 hash apart: the state's buckets, the
    release's digests), and 5 respondents new in view 3 (the state's outer join)."""
    ids = hist[ID].to_numpy() - 40
    first = (hist["view"] == 3).to_numpy().argmax()
    ids[first : first + 5] = -1000 - np.arange(5)
    return hist.assign(**{ID: ids.astype("int32")})


def test_integer_ids_of_another_width_release_the_bytes_of_the_ledgers_width(base, tmp_path):
    """int64 ids onto a ledger of int32 ids are cast to int32: release 3 and its state are the
    bytes the int32 history gives (before, they differed: another digest, an int64 state)."""
    hist = negative_int32(history(base))
    hist.to_parquet(tmp_path / "as32.parquet", index=False)
    hist.astype({ID: "int64"}).to_parquet(tmp_path / "as64.parquet", index=False)
    made = []
    for name in ("as32", "as64"):
        res, root, _ = resumed(base, tmp_path / name, "int32_ids", hist, tmp_path / f"{name}.parquet")
        assert res.exit_code == 0, res.output
        made.append(
            {k: v for k, v in snapshot(root).items() if k.startswith(("releases/3/view", "state/3/"))}
        )
    assert len(made[0]) == 2 and made[0] == made[1]


def test_an_id_beyond_the_ledgers_integer_width_is_refused(base, tmp_path):
    hist = negative_int32(history(base))
    wide = hist.astype({ID: "int64"})
    wide.loc[wide["view"] == 3, ID] += 2**40  # new respondents only, but beyond int32
    wide.to_parquet(tmp_path / "wide.parquet", index=False)
    res, root, before = resumed(base, tmp_path, "int32_ids", hist, tmp_path / "wide.parquet")
    assert res.exit_code == 2, res.output
    big = int(wide[ID].max())
    assert f"id column '{ID}' holds {big}, which the ledger's int32 ids (state/2/" in res.output
    assert snapshot(root) == before


def test_ages_written_as_floats_in_the_new_weeks_csv_lines_are_named(base, tmp_path):
    """The drill: only the new week's lines write ``64.0``, so the CSV's age column reads as
    float64 and view 1 'differed'. Now the QI, both dtypes and the lines are named."""
    hist = history(base)
    text = hist.astype({"age": object})
    new = text["view"] == 3
    text.loc[new, "age"] = [f"{a}.0" for a in hist.loc[new, "age"]]
    text.to_csv(tmp_path / "h.csv", index=False)
    res, root, before = resumed(base, tmp_path, "int_ids", hist, tmp_path / "h.csv")
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    where = "(releases/2/view.parquet, column age_min)"
    assert f"QI 'age' is float64 in this input where the ledger recorded int64 {where}" in out
    row = int(new.to_numpy().argmax())  # the first row of view 3; the header is line 1
    age = hist["age"].iloc[row]
    assert f"lines write whole numbers as '{age}.0' ({int(new.sum())} rows: line {row + 2} (view=3)" in out
    assert f"write the values as whole numbers ({age}, not {age}.0)" in out
    assert f"{ID}=" not in out  # rows named by line and view, never by id
    assert "frame['age'] = frame['age'].astype('int64')" in out
    assert snapshot(root) == before


def test_ages_stored_as_text_in_a_parquet_history_are_refused(base, tmp_path):
    """Ages as text hash like the numbers (the committed views matched) but release 3 would
    have published age_min/age_max as float64 after int64: refused, naming both."""
    hist = history(base)
    hist.astype({"age": str}).to_parquet(tmp_path / "h.parquet", index=False)
    res, root, before = resumed(base, tmp_path, "int_ids", hist, tmp_path / "h.parquet")
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())
    assert "QI 'age' is string in this input where the ledger recorded int64" in out
    assert "the next release would publish it as float64 where the committed releases hold int64" in out
    assert snapshot(root) == before


def test_a_view_edited_without_a_change_of_type_keeps_the_general_message(base, tmp_path):
    hist = history(base)
    edited = hist.copy()
    edited.loc[0, "age"] = 74 if edited.loc[0, "age"] != 74 else 45  # view 1, still int64
    edited.to_parquet(tmp_path / "h.parquet", index=False)
    res, root, before = resumed(base, tmp_path, "int_ids", hist, tmp_path / "h.parquet")
    assert res.exit_code == 2, res.output
    said = " ".join(res.output.split())
    assert "view 1 differs from the one committed in the ledger (first difference: " in said, said
    assert "a row was added, removed or edited" in said
    assert snapshot(root) == before
