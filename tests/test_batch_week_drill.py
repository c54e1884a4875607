"""The registry's weekly batch job (session 42 drill, user B): what a week's export can get
wrong, each refused with exit 2 naming the rows or lines and what to do, nothing written.

* a category written ``1`` in the weeks before and ``"1"`` (text) in a later one was refused as
  "column 'city' holds 1 (int) and '1' (str), which read the same" with no row named: the rows
  of the rarer type are named now (dpriv/same_text.py);
* a week appended to a CSV history without one of its columns was read with its values shifted
  into the wrong columns (and blanks in the last): the refusal named blank sensitive values and
  text in a numeric QI; the lines and their number of values are named now (dpriv/csv_fields.py).
"""

from __future__ import annotations

import dask.dataframe as dd
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.errors import InputError
from dpriv.release import release_history

POLICY = {"id": "rid", "time": "v", "qi": ["age", "city"], "sensitive": "s", "k": 3, "t": 1.0, "j": 10.0}


def week(n: int = 30, age: int = 40) -> pd.DataFrame:
    """``n`` rows: ``age`` from ``age`` on, 7 values in turn, ``city`` 1, 2, 3 in turn (numbers,
    an object column), ``s`` a, b, c in turn."""
    return pd.DataFrame(
        {
            "rid": range(n),
            "age": [age + i % 7 for i in range(n)],
            "city": pd.Series([1 + i % 3 for i in range(n)], dtype=object),
            "s": [["a", "b", "c"][i % 3] for i in range(n)],
        }
    )


def test_a_category_written_as_text_in_a_later_week_names_the_rows_of_the_text(tmp_path):
    hist = pd.concat([week().assign(v=1), week(age=41).assign(v=2)], ignore_index=True)
    hist.loc[[33, 42], "city"] = "1"  # week 2's export wrote two of its 1s as text; 1 holds 18 rows
    with pytest.raises(InputError) as err:
        release_history(hist, {**POLICY, "kinds": {"city": "categorical"}}, tmp_path / "led")
    said = str(err.value)
    assert said.startswith("v = 2: column 'city' holds 1 (int) and '1' (str), which read the same once "), (
        said
    )
    assert said.endswith("rows holding '1' (str) (2 rows: row 33 (v=2), row 42 (v=2))"), said
    assert not (tmp_path / "led").exists()


def test_weekly_parquet_files_one_with_the_category_as_text_name_that_weeks_rows(tmp_path):
    """Week 1's file holds ``city`` as int64, week 2's as text, read as a folder by Dask: the rows
    are those of week 2's file (its partition), by their week."""
    (tmp_path / "h").mkdir()
    one, two = week().assign(v=1), week(age=41).assign(v=2)
    one.astype({"city": "int64"}).to_parquet(tmp_path / "h" / "week1.parquet", index=False)
    two.astype({"city": str}).to_parquet(tmp_path / "h" / "week2.parquet", index=False)
    with pytest.raises(InputError) as err:
        release_history(
            dd.read_parquet(tmp_path / "h"), {**POLICY, "kinds": {"city": "categorical"}}, tmp_path / "led"
        )
    said = str(err.value)
    assert "column 'city' holds 1 (int) and '1' (str), which read the same once released" in said, said
    assert "rows holding '1' (str) (10 rows: row 0 (v=2), row 3 (v=2)" in said, said
    assert not (tmp_path / "led").exists()


FLAGS = (
    "--id",
    "rid",
    "--time",
    "v",
    "--qi",
    "age,city",
    "--sensitive",
    "s",
    "--k",
    "3",
    "--t",
    "1",
    "--j",
    "10",
)


def release_csv(path, ledger):
    """``dpriv release path --ledger ledger`` with :data:`FLAGS`, in this process."""
    args = ["release", str(path), "--ledger", str(ledger), *FLAGS, "--no-cluster"]
    return CliRunner().invoke(app, args)


def test_a_week_appended_without_a_column_is_refused_naming_its_lines_and_counts(tmp_path):
    path = tmp_path / "h.csv"
    week().assign(v=1)[["rid", "v", "age", "city", "s"]].to_csv(path, index=False)
    week(age=41).assign(v=2)[["rid", "v", "city", "s"]].to_csv(path, mode="a", header=False, index=False)
    res = release_csv(path, tmp_path / "L")
    assert res.exit_code == 2, res.output
    said = " ".join(res.stderr.split())
    assert (
        f"error: {path}: 30 line(s) hold fewer values than its header names columns (5: rid, v, age, "
        "city, s): line 32 (4 values), line 33 (4 values), line 34 (4 values), line 35 (4 values), "
        f"line 36 (4 values) and 25 more of {path} (the header is line 1); their values would be read "
        "into the wrong columns (a value left out moves the ones after it; one left out at the end is "
        "read as blank). Was a week exported with a column missing (or one more)?"
    ) in said, said
    assert not (tmp_path / "L").exists()


def test_quoted_separators_and_blank_lines_are_not_uneven_lines(tmp_path):
    """A value holding the separator in quotes counts as one (the fast path counts its bytes;
    the parse tells them apart), a blank line none: the history is released as the same rows."""
    frame = pd.concat([week().assign(v=1), week(age=41).assign(v=2)], ignore_index=True)
    frame["city"] = frame["city"].map({1: "Lyon, FR", 2: "Nice", 3: "Metz"})
    path = tmp_path / "h.csv"
    text = frame[["rid", "v", "age", "city", "s"]].to_csv(index=False)
    assert '"Lyon, FR"' in text
    path.write_text(text.replace("\n", "\n\n", 3))
    res = release_csv(path, tmp_path / "L")
    assert res.exit_code == 0, res.output
    released = pd.read_parquet(tmp_path / "L" / "releases" / "2" / "view.parquet")
    assert len(released) == 30 and any(r"Lyon\, FR" in str(c) for c in released["city"]), released


def test_a_domain_declared_for_an_inferred_numeric_qi_says_to_write_its_kind(tmp_path):
    """The ledger's first run inferred age's domain (40..46) and recorded its kind; the next
    week's policy file declares that very domain and no [kinds]: refused as "kinds: {"age":
    "numeric"} recorded, {} given" and "start a new ledger". It says what to write now, and the
    policy with that line resumes the ledger."""
    path = tmp_path / "h.csv"
    week().assign(v=1)[["rid", "v", "age", "city", "s"]].to_csv(path, index=False)
    assert release_csv(path, tmp_path / "L").exit_code == 0
    later = week().assign(v=2)[["rid", "v", "age", "city", "s"]]
    later["s"] = later["s"].to_numpy()[::-1]  # ages within the first week's: only the policy differs
    later.to_csv(path, mode="a", header=False, index=False)
    base = (
        '[columns]\nid = "rid"\ntime = "v"\nqi = ["age", "city"]\nsensitive = "s"\n'
        "[privacy]\nk = 3\nt = 1.0\nj = 10.0\n[domains]\nage = [40, 46]\n"
    )
    (tmp_path / "p.toml").write_text(base)
    files = sorted(p.relative_to(tmp_path) for p in (tmp_path / "L").rglob("*"))
    args = ["release", str(path), "--ledger", str(tmp_path / "L"), "--policy", str(tmp_path / "p.toml")]
    res = CliRunner().invoke(app, [*args, "--no-cluster"])
    assert res.exit_code == 2, res.output
    said = " ".join(res.stderr.split())
    assert said.endswith(  # city (1, 2, 3) is numeric too, its kind taken from the ledger
        """(fields ['kinds']: kinds: {"age": "numeric", "city": "numeric"} recorded, {"city": "numeric"} """
        "given); the ledger recorded the kind "
        "of 'age' with the domain it inferred from its first release, and the policy declares [domains] "
        """for it without a kind: add [kinds] age = "numeric" to the policy file (a domain must then be """
        "the recorded one, age: [40, 46]), or leave it out of [domains] to use the ledger's"
    ), said
    assert "start a new ledger" not in said
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "L").rglob("*")) == files
    (tmp_path / "p.toml").write_text(base + '[kinds]\nage = "numeric"\n')
    res = CliRunner().invoke(app, [*args, "--no-cluster"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "L" / "releases" / "2" / "view.parquet").is_file()
