"""A category written with a trailing space ('Lyon ' beside 'Lyon') or in two cases ('lyon'
beside 'Lyon'), no domain declared, was refused naming the two spellings but no row: a user of
a 10,000-line file had to search for them. The rows of the less frequent spelling are named now;
the sensitive column's spellings are not printed beside them (dpriv.same_text)."""

from __future__ import annotations

import dask.dataframe as dd
import pandas as pd
import pytest

from dpriv.errors import InputError
from dpriv.release import anonymize, release_history

POLICY = {"id": "rid", "qi": ["age", "city"], "sensitive": "s", "k": 3, "t": 1.0, "j": 10.0}
FLAGS = ("--id", "rid", "--qi", "age,city", "--sensitive", "s", "--k", "3", "--t", "1", "--j", "10")


def view(n: int = 30) -> pd.DataFrame:
    """``n`` rows: ``city`` Lyon, Nice, Metz in turn (Lyon at rows 0, 3, 6, ...), ``s`` a, b, c in turn."""
    return pd.DataFrame(
        {
            "rid": range(n),
            "age": [40 + i % 7 for i in range(n)],
            "city": [["Lyon", "Nice", "Metz"][i % 3] for i in range(n)],
            "s": [["a", "b", "c"][i % 3] for i in range(n)],
        }
    )


def refused(cli, tmp_path, frame: pd.DataFrame) -> str:
    (tmp_path / "in.csv").write_text(frame.to_csv(index=False))
    res = cli("anonymize", tmp_path / "in.csv", "--out", tmp_path / "o.parquet", *FLAGS)
    assert res.exit_code == 2 and not (tmp_path / "o.parquet").exists(), res.output
    return " ".join(res.stderr.split())  # the message as one line (the terminal wraps it)


def test_a_qi_with_a_trailing_space_names_the_lines_of_the_spaced_spelling(cli, tmp_path):
    v = view()
    v.loc[[3, 9], "city"] = "Lyon "  # lines 5 and 11 of the file (the header is line 1)
    said = refused(cli, tmp_path, v)
    assert (
        "column 'city' holds 'Lyon' and 'Lyon ', which differ only in spaces at the start or end: one "
        "value written two ways would become two; strip the spaces (e.g. frame['city'].str.strip()) or "
        "declare [domains] city with the values as they are meant; rows holding 'Lyon ' (2 rows: line 5, "
        "line 11 of"
    ) in said, said


@pytest.mark.parametrize("parts", [0, 3], ids=["pandas", "dask-3-parts"])
def test_a_qi_in_two_cases_names_the_rows_and_views_of_the_rarer_spelling(tmp_path, parts):
    hist = pd.concat([view().assign(v=1), view().assign(v=2)], ignore_index=True)
    hist.loc[[33, 42], "city"] = "lyon"  # view 2; 'Lyon' holds 18 rows
    if parts:  # the rows found part by part, named in the whole history
        hist = dd.from_pandas(hist, npartitions=parts)
    with pytest.raises(InputError) as err:
        release_history(hist, {**POLICY, "time": "v"}, tmp_path / "led")
    said = str(err.value)
    assert said.startswith("v = 2: column 'city' holds 'Lyon' and 'lyon', which differ only in upper and "), (
        said
    )
    assert said.endswith(
        "(both, if they are two values); rows holding 'lyon' (2 rows: row 33 (v=2), row 42 (v=2))"
    ), said
    assert not (tmp_path / "led").exists()


def test_a_sensitive_value_with_a_trailing_space_names_its_line_not_the_value(cli, tmp_path):
    v = view()
    v.loc[4, "s"] = "b "  # line 6; 'b' holds 9 rows
    said = refused(cli, tmp_path, v)
    assert (
        "column 's' holds two values (not printed beside their rows: see the rows named), which differ "
        "only in spaces at the start or end"
    ) in said, said
    assert "rows holding the less frequent of the two (1 row: line 6 of" in said, said
    assert "'b'" not in said and "'b '" not in said, said


def test_a_sensitive_value_in_two_cases_names_its_rows_not_the_values():
    v = view()
    v.loc[[1, 7, 10], "s"] = "B"  # 'b' (rows 4, 13, ...) holds 7 rows, 'B' 3
    with pytest.raises(InputError) as err:
        anonymize(v, POLICY)
    said = str(err.value)
    assert said.startswith(  # one view in Python: "the input", as other refusals say it
        "the input: column 's' holds two values (not printed beside their rows: see the rows named), "
        "which differ only in upper and lower case"
    ), said
    assert said.endswith("rows holding the less frequent of the two (3 rows: row 1, row 7, row 10)"), said
    assert "'b'" not in said and "'B'" not in said, said
