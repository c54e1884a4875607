"""``dpriv kpr`` as a new user met it (drill of session 33): a whole history against one view, a
released view as the synthetic table, a word in a number column, blank cells and ``NA``."""

from __future__ import annotations

import json
import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.errors import InputError
from dpriv.metrics.kpr import KPRWarning, kpr


def _run(*args: object):
    return CliRunner().invoke(app, ["kpr", *map(str, args)])


def _view(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(20, 80, n), "sex": rng.choice(["F", "M"], n)})


def _history(views: int = 3, n: int = 60) -> pd.DataFrame:
    """``views`` views of ``n`` respondents each (the same ids), as dpriv generate writes them."""
    parts = [_view(n, seed=v).assign(respondent_id=np.arange(n), view=v) for v in range(1, views + 1)]
    return pd.concat(parts, ignore_index=True)[["respondent_id", "view", "age", "sex"]]


# -- a whole history against one view ----------------------------------------------------------
def test_a_history_against_one_view_is_warned_about_naming_its_time_column(tmp_path) -> None:
    """The drill: 12,000 history rows against a 2,000-row view printed KPR 100 and nothing else.
    (E21) is legal on any sizes (§5.3), so it is a warning, naming the view column."""
    hist = _history()
    hist.to_csv(tmp_path / "h.csv", index=False)
    hist[hist["view"] == 1][["age", "sex"]].to_csv(tmp_path / "v1.csv", index=False)
    res = _run(tmp_path / "h.csv", tmp_path / "v1.csv", "--known", "age,sex")
    assert res.exit_code == 0, res.output
    assert res.stdout.strip().splitlines()[-1].startswith("KPR ")
    warning = [line for line in res.stderr.splitlines() if "times the" in line]
    assert warning == [
        "warning: kpr: the original table has 180 rows, 3.0 times the synthetic table's 60: KPR "
        "compares records with the synthetic version of the same records (one view with its "
        "release), and a profile repeated within a table (one respondent in several views of a "
        "history) is never a unique match, which pushes KPR towards 100 whatever the synthetic "
        "data; the original table's column 'view' (not in the synthetic table) has 3 values of 60 "
        "rows on average, about the synthetic table's size: the original table looks like a "
        "history of 3 views; give the rows of the one view the synthetic table is about (one "
        "value of 'view')"
    ]


def test_size_warning_both_ways_and_not_for_close_sizes() -> None:
    one, hist = _view(60, 1), _history()
    with pytest.warns(KPRWarning, match=r"the synthetic table has 180 rows, 3\.0 times the original"):
        kpr(one, hist, ["age", "sex"])
    # no column splits the larger table into views: the sizes alone are said
    with pytest.warns(KPRWarning, match=r"towards 100 whatever the synthetic data$"):
        kpr(_view(200, 2), one, ["age", "sex"])
    with pytest.warns(KPRWarning, match="column 'view'"):  # on Dask too
        kpr(dd.from_pandas(hist, npartitions=3), one, ["age", "sex"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kpr(_view(60, 3), _view(40, 4), ["age", "sex"])  # less than twice: no warning


# -- a released view as the synthetic table ----------------------------------------------------
def _released() -> pd.DataFrame:
    return pd.DataFrame(
        {"qi_group": [1, 1], "age_min": [20, 20], "age_max": [40, 40], "sex": ["F", "M"], "s": ["a", "b"]}
    )


def test_a_released_view_is_named_with_the_kpr_its_ledger_recorded(tmp_path) -> None:
    _view(60, 1).to_csv(tmp_path / "o.csv", index=False)
    led = tmp_path / "led"
    (led / "releases" / "1").mkdir(parents=True)
    (led / "manifest.json").write_text("{}")
    _released().to_parquet(led / "releases" / "1" / "view.parquet")
    (led / "releases" / "1" / "metrics.json").write_text(json.dumps({"release": 1, "kpr": 97.25}))
    before = sorted(p.name for p in tmp_path.rglob("*"))
    res = _run(tmp_path / "o.csv", led / "releases" / "1" / "view.parquet", "--known", "age,sex")
    assert res.exit_code == 2 and "Traceback" not in res.output
    out = " ".join(res.output.split())
    assert "known variable(s) ['age'] not found in the synthetic table, which looks like a released" in out
    assert "(generalized) view: it holds intervals ('age_min', 'age_max') where KPR compares microdata" in out
    assert "key kpr of its metrics.json" in out and "dpriv.metrics.microdata.release_kpr" in out
    assert f"{led}/releases/1/metrics.json records KPR 97.2500 for this release" in out
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written


def test_a_released_file_of_anonymize_points_to_its_metrics_and_python_says_it_too(tmp_path) -> None:
    _view(60, 1).to_csv(tmp_path / "o.csv", index=False)
    _released().to_csv(tmp_path / "out.csv", index=False)
    res = _run(tmp_path / "o.csv", tmp_path / "out.csv", "--known", "age")
    assert res.exit_code == 2 and "looks like a released (generalized) view" in res.output
    assert "records KPR" not in res.output  # no OUT.metrics.json beside it: nothing made up
    (tmp_path / "out.csv.metrics.json").write_text(json.dumps({"kpr": 88.5}))
    res = _run(tmp_path / "o.csv", tmp_path / "out.csv", "--known", "age")
    assert f"{tmp_path}/out.csv.metrics.json records KPR 88.5000" in " ".join(res.output.split())
    with pytest.raises(InputError, match=r"not found in the original table, which looks like a released"):
        kpr(_released(), _view(10, 1), ["age"])


# -- a word in a number column -----------------------------------------------------------------
def test_text_in_a_number_column_is_named_with_its_value_and_line(tmp_path) -> None:
    o = _view(60, 1)
    o.to_csv(tmp_path / "o.csv", index=False)
    s = o.astype({"age": object})
    s.loc[3, "age"] = "abc"  # data row 4: line 5 (the header is line 1)
    s.loc[7, "age"] = "n/k"
    s.to_csv(tmp_path / "s.csv", index=False)
    res = _run(tmp_path / "o.csv", tmp_path / "s.csv", "--known", "age,sex")
    out = " ".join(res.output.split())
    assert res.exit_code == 2
    assert "is numeric in the original table (int64) but categorical in the synthetic table" in out
    assert (
        f"the synthetic table's 'abc' is not a number (2 rows: line 5, line 9 of {tmp_path}/s.csv "
        "(the header is line 1)); correct or drop such rows" in out
    )
    # the other way round: the original's line, not the synthetic file's
    out = " ".join(_run(tmp_path / "s.csv", tmp_path / "o.csv", "--known", "age").output.split())
    assert f"the original table's 'abc' is not a number (2 rows: line 5, line 9 of {tmp_path}/s.csv" in out
    # in Python: the row labels, over every partition of a Dask frame
    with pytest.raises(InputError, match=r"'abc' is not a number \(2 rows: row 3, row 7\)"):
        kpr(o, s, ["age"])
    with pytest.raises(InputError, match=r"'abc' is not a number \(2 rows: row 3, row 7\)"):
        kpr(dd.from_pandas(o, npartitions=2), dd.from_pandas(s, npartitions=4), ["age"])


# -- blank cells and NA ------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::dpriv.metrics.kpr.KPRWarning")
def test_a_blank_text_cell_is_noted_as_a_blank_number_is() -> None:
    o = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "c": ["a", None, "c", "d"]})
    a = pd.DataFrame({"x": [1.0, 2.0], "c": ["a", None]})
    note = "'c' is missing in 1 of 4 unique originals: a missing value matches only a missing value"
    assert kpr(o, a, ["x", "c"]).note == note
    assert kpr(dd.from_pandas(o, npartitions=2), a, ["x", "c"]).note == note
    every = kpr(o.assign(c=None), a, ["x", "c"]).note
    assert every == "'c' is missing in every unique original: only missing values match"


def test_na_in_a_csv_is_said_to_be_read_as_missing(tmp_path) -> None:
    (tmp_path / "o.csv").write_text("age,region\n30,EU\n40,NA\n50,US\n")
    (tmp_path / "s.csv").write_text("age,region\n30,EU\n41,NA\n")
    res = _run(tmp_path / "o.csv", tmp_path / "s.csv", "--known", "age,region")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[1] == (
        "'region' is missing in 1 of 3 unique originals: a missing value matches only a missing value"
    )
    assert lines[2] == (
        "(a missing value in a CSV file: an empty cell, or a text pandas reads as missing such as NA, "
        "N/A, null, NaN)"
    )
    assert lines[3].startswith("KPR ")
