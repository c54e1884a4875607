"""A new user's drill of ``dpriv anonymize`` (s32), its inputs: each refusal exits 2 naming the
column, the rows and the fix, in the words of README "Bad input", and writes nothing.

1. a QI or sensitive column with no value at all (CSV, Parquet float or Int64) is named as
   missing in every row (was "no domain for ['city'] ... (resolve)" or "invalid policy");
2. a Parquet QI of decimals is refused by its type (was a false "min <= max");
3. a missing value of a CSV file is said to be an empty cell or a text such as NA;
4. the '?' placeholders of the first rows checked are counted as such ("62 of the first 1,000
   rows"), not as if they were all of the file's;
5. a missing default id column says --add-row-id, a file without a header row is said to be
   one, a hierarchy value written with a trailing space is said to be.
"""

import decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_cli import assert_refused, tree
from typer.testing import CliRunner

from dpriv.cli import app

ARGS = ["--k", "2", "--t", "0.9", "--j", "5", "--no-cluster"]


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def small() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "respondent_id": range(1, 7),
            "age": range(30, 36),
            "sex": list("FM" * 3),
            "city": ["Metz", "Metz", "Nancy", "Nancy", "Metz", "Nancy"],
            "disease": ["flu", "cold"] * 3,
        }
    )


def anonymize(tmp_path, frame_or_path, qi="age,sex,city", sensitive="disease", suffix="csv"):
    if isinstance(frame_or_path, pd.DataFrame):
        src = tmp_path / f"in.{suffix}"
        if suffix == "csv":
            frame_or_path.to_csv(src, index=False)
        else:
            frame_or_path.to_parquet(src, index=False)
    else:
        src = frame_or_path
    before = tree(tmp_path)
    res = run("anonymize", src, "--out", tmp_path / "o.csv", "--qi", qi, "--sensitive", sensitive, *ARGS)
    if res.exit_code == 2:
        assert tree(tmp_path) == before
    return res


EVERY = r"column '{}' has missing values \(NaN/None[^)]*\) in every row: it holds no value at all; fill"


@pytest.mark.parametrize(
    "column, suffix, empty",
    [
        ("city", "csv", None),
        ("disease", "csv", None),
        ("city", "parquet", np.nan),
        ("city", "parquet", pd.array([None] * 6, dtype="Int64")),
        ("disease", "parquet", None),
    ],
)
def test_a_column_with_no_value_at_all_is_named_missing_in_every_row(tmp_path, column, suffix, empty):
    frame = small().assign(**{column: empty})
    res = anonymize(tmp_path, frame, suffix=suffix)
    where = r"line 2" if suffix == "csv" else r"row 1"
    assert_refused(res, EVERY.format(column), rf"\(6 rows: {where}, ")
    assert "no domain" not in res.output and "invalid policy" not in res.output


def test_a_decimal_qi_is_refused_by_its_type(tmp_path):
    frame = small().assign(x=[decimal.Decimal("0.5"), decimal.Decimal("29.5")] * 3)
    src = tmp_path / "dec.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), src)
    res = anonymize(tmp_path, src, qi="age,x")
    assert_refused(
        res,
        r"QI 'x' holds decimal numbers \(decimal128\(3, 1\).*e\.g\. \[Decimal\('0\.5'\)\]\), "
        r"which dpriv does "
        r"not generalize: convert the column to float \(e\.g\. frame\['x'\]\.astype\(float\)",
        r"6 rows: row 1",
    )
    assert "min <= max" not in res.output


def decimal_file(tmp_path, precision: int, scale: int):
    """``small()`` with a QI ``x`` of Parquet type ``decimal128(precision, scale)``."""
    values = pa.array([decimal.Decimal("0.5"), decimal.Decimal("0.1")] * 3, pa.decimal128(precision, scale))
    src = tmp_path / "dec.parquet"
    pq.write_table(pa.Table.from_pandas(small(), preserve_index=False).append_column("x", values), src)
    return src


DECIMAL_MESSAGE = r"QI 'x' holds decimal numbers \(decimal128\({}, {}\)\[pyarrow\], e\.g\. \[Decimal\('0\.5"


@pytest.mark.parametrize("precision, scale", [(1, 1), (2, 2), (4, 1), (38, 1)])
def test_a_decimal_qi_of_any_width_is_refused_by_its_type(tmp_path, precision, scale):
    """decimal128(1, 1) was an internal error (ArrowInvalid): Dask's len() of the input builds a
    sample value of each column, 1.0, which does not fit one digit after the point."""
    res = anonymize(tmp_path, decimal_file(tmp_path, precision, scale), qi="age,x")
    assert_refused(res, DECIMAL_MESSAGE.format(precision, scale), r"6 rows: row 1")


def test_a_narrow_decimal_qi_of_a_dask_frame_is_refused_by_its_type(tmp_path):
    """The Python API (and --cluster) check a Dask frame partition by partition: the rows of a
    problem were placed by Dask's len() of each partition, the same internal error."""
    import dask
    import dask.dataframe as dd

    from dpriv.errors import InputError
    from dpriv.policy import ReleasePolicy
    from dpriv.release import anonymize as release

    frame = dd.read_parquet(decimal_file(tmp_path, 1, 1))
    policy = ReleasePolicy(id="respondent_id", qi=["age", "x"], sensitive="disease", k=2, t=0.9, j=5)
    with dask.config.set(scheduler="sync"), pytest.raises(InputError, match=DECIMAL_MESSAGE.format(1, 1)):
        release(frame, policy)


def test_a_missing_value_of_a_csv_is_said_to_be_an_empty_cell_or_a_text_such_as_na(tmp_path):
    src = tmp_path / "na.csv"
    src.write_text("respondent_id,age,sex,city,disease\n1,30,F,NA,flu\n2,31,M,Metz,cold\n3,32,F,,flu\n")
    res = anonymize(tmp_path, src)
    assert_refused(
        res,
        r"column 'city' has missing values \(NaN/None; in a CSV file: an empty cell, or a text pandas "
        r"reads as missing such as NA, N/A, null, NaN\); dpriv refuses them by default: drop or impute "
        r"these rows before releasing \(2 rows: line 2, line 4 of",
    )
    (tmp_path / "o.csv").unlink(missing_ok=True)
    res = anonymize(tmp_path, small().assign(city=["Metz", None, "Nancy"] * 2), suffix="parquet")
    assert_refused(res, r"column 'city' has missing values \(NaN/None\); dpriv refuses them")
    assert "CSV" not in res.output


def test_a_missing_date_of_a_csv_is_said_to_be_an_empty_cell_too(tmp_path):
    """The date check (dpriv.dates.date_problem) words its missing values as every other check."""
    src = tmp_path / "dates.csv"
    src.write_text("respondent_id,age,born,disease\n1,30,2001-01-02,flu\n2,31,,cold\n3,32,2003-04-05,flu\n")
    res = run("anonymize", src, "--out", tmp_path / "o.csv", "--qi", "age,born", "--date", "born",
              "--sensitive", "disease", *ARGS)  # fmt: skip
    assert_refused(
        res,
        r"column 'born' has missing values \(NaN/None/NaT; in a CSV file: an empty cell, or a text pandas "
        r"reads as missing such as NA, N/A, null, NaN\); dpriv refuses them by default",
        r"\(1 row: line 3 of",
    )


def test_placeholders_of_the_first_rows_checked_are_counted_as_such(tmp_path):
    n = 1500
    frame = pd.DataFrame(
        {
            "age": np.arange(n) % 50 + 20,
            "work": ["?" if i % 10 == 3 else "job" for i in range(n)],
            "s": ["a", "b", "c"] * (n // 3),
        }
    )
    src = tmp_path / "a.csv"
    frame.to_csv(src, index=False)
    before = tree(tmp_path)
    args = ["--add-row-id", "--qi", "age,work", "--sensitive", "s", "--k", "5", "--t", "0.9", "--j", "5"]
    res = run("anonymize", src, "--out", tmp_path / "o.csv", *args)
    assert_refused(
        res,
        r"column 'work' holds '\?', a generalized or placeholder value .* \(100 of the first 1,000 rows, "
        r"the rest not checked yet: line 5, line 15, .* and 95 more of ",
    )
    assert tree(tmp_path) == before


def test_a_missing_default_id_column_says_add_row_id(tmp_path):
    res = anonymize(tmp_path, small().drop(columns="respondent_id"))
    assert_refused(
        res,
        r"missing column\(s\) \['respondent_id'\]; the input has \['age', 'sex', 'city', 'disease'\]\. .*"
        r"A table without respondent ids: pass --add-row-id to number its rows as the id",
    )
    assert "no header row" not in res.output


def test_a_file_without_a_header_row_is_said_to_have_none(tmp_path):
    src = tmp_path / "nohead.csv"
    src.write_text("39, State-gov, 77516, Bachelors, 13, <=50K\n50, Private, 83311, Masters, 14, >50K\n")
    res = anonymize(tmp_path, src, qi="age,sex", sensitive="Y")
    assert_refused(
        res,
        r"The file seems to have no header row \(column names such as \['39', '77516', '13'\] look like "
        r"data\): add a first line naming the columns",
    )


def test_a_hierarchy_value_with_a_trailing_space_is_said_to_have_one(tmp_path):
    (tmp_path / "h.csv").write_text("Metz ;Lorraine;*\nNancy;Lorraine;*\n")
    src = tmp_path / "in.csv"
    small().to_csv(src, index=False)
    before = tree(tmp_path)
    args = ["--qi", "age,city", "--sensitive", "disease", "--hierarchy", f"city={tmp_path / 'h.csv'}", *ARGS]
    res = run("anonymize", src, "--out", tmp_path / "o.csv", *args)
    assert_refused(
        res,
        r"QI 'city' holds value\(s\) \['Metz'\] that the hierarchy does not list: .*; the hierarchy "
        r"lists \['Metz '\] with spaces at the start or end, which the data's values do not have: "
        r"remove the spaces in \S*h\.csv",
    )
    assert tree(tmp_path) == before
