"""A new user's drill of ``dpriv anonymize`` (s32): an option given twice never loses a value
silently. Comma-list options (--qi, --categorical, --date, --known) add up when repeated;
any other option given twice with different values, and --hierarchy naming one column twice,
is refused (exit 2) naming the option and both values, nothing written."""

import pandas as pd
import pytest
from conftest import random_view
from test_cli import LOOSE, assert_refused, tree
from typer.testing import CliRunner

from dpriv.cli import app


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def dates_csv(tmp_path):
    """8 respondents with two date QIs (ISO text) and a sex."""
    days = pd.date_range("2020-03-01", periods=8)
    births = pd.date_range("1980-01-02", periods=8, freq="400D")
    frame = pd.DataFrame(
        {
            "pid": range(8),
            "birth": births.strftime("%Y-%m-%d"),
            "adm": days.strftime("%Y-%m-%d"),
            "sex": list("FM" * 4),
            "diag": list("ab" * 4),
        }
    )
    path = tmp_path / "dates.csv"
    frame.to_csv(path, index=False)
    return path


DATES = ["--id", "pid", "--sensitive", "diag", "--k", "4", "--t", "0.5", "--j", "5", "--no-cluster"]


def test_repeated_date_options_add_up(dates_csv, tmp_path):
    """The drill: ``--date birth --date adm`` released birth as exact dates (the same --id twice
    is harmless)."""
    out = tmp_path / "d1.csv"
    res = run(
        "anonymize",
        dates_csv,
        "--out",
        out,
        "--qi",
        "birth,adm,sex",
        "--date",
        "birth",
        "--date",
        "adm",
        *DATES,
    )
    assert res.exit_code == 0, res.output
    released = pd.read_csv(out)
    assert list(released.columns[1:]) == ["birth_min", "birth_max", "adm_min", "adm_max", "sex", "diag"]


def test_repeated_qi_and_categorical_options_add_up(dates_csv, tmp_path):
    out = tmp_path / "d2.csv"
    qi = ["--qi", "birth", "--qi", "adm", "--qi", "sex", "--categorical", "birth", "--categorical", "adm"]
    res = run("anonymize", dates_csv, "--out", out, *qi, *DATES)
    assert res.exit_code == 0, res.output
    assert "qi=birth,adm,sex [flag]" in res.output
    assert "inferred categorical domain of 'birth'" in res.output
    assert "inferred categorical domain of 'adm'" in res.output
    assert list(pd.read_csv(out).columns[1:]) == ["birth", "adm", "sex", "diag"]


def test_repeated_known_option_adds_up(tmp_path):
    src = tmp_path / "v.csv"
    random_view(40).to_csv(src, index=False)
    once = run("kpr", src, src, "--known", "age,gender")
    twice = run("kpr", src, src, "--known", "age", "--known", "gender")
    assert twice.exit_code == 0, twice.output
    assert twice.output == once.output
    assert "n=40" in twice.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--id", "pid", "--id", "sex"], r"--id given twice, as 'pid' and 'sex': give it once"),
        (["--sensitive", "diag", "--sensitive", "sex"], r"--sensitive given twice, as 'diag' and 'sex'"),
        (["--k", "4", "--k", "5"], r"--k given twice, as '4' and '5'"),
        (["--cluster", "--no-cluster"], r"--cluster/--no-cluster given both ways: give one of them"),
    ],
)
def test_a_single_value_option_given_twice_is_refused(dates_csv, tmp_path, args, message):
    out = tmp_path / "x.csv"
    before = tree(tmp_path)
    res = run("anonymize", dates_csv, "--out", out, "--qi", "birth,adm,sex", *args, *DATES)
    assert_refused(res, message)
    assert tree(tmp_path) == before


@pytest.mark.parametrize("command", ["release", "verify"])
def test_release_and_verify_refuse_a_time_given_twice(command, tmp_path):
    src = tmp_path / "h.csv"
    random_view(40).assign(view=1).to_csv(src, index=False)
    where = ["--ledger", tmp_path / "L"] if command == "release" else ["x.csv", "--original"]
    res = run(command, *where[:2], src, "--time", "view", "--time", "week", "--qi", "age", *LOOSE)
    assert_refused(res, r"--time given twice, as 'view' and 'week'")
    assert not (tmp_path / "L").exists()


def test_a_hierarchy_given_twice_for_one_column_is_refused(tmp_path):
    src = tmp_path / "v.csv"
    frame = random_view(40)
    frame["city"] = ["Metz", "Nancy"] * 20
    frame.to_csv(src, index=False)
    for name in ("a", "b"):
        (tmp_path / f"{name}.csv").write_text("Metz;Lorraine;*\nNancy;Lorraine;*\n")
    out = tmp_path / "x.csv"
    before = tree(tmp_path)
    args = ["--qi", "age,city", "--sensitive", "exam_result", "--id", "respondent_id", *LOOSE]
    hier = ["--hierarchy", f"city={tmp_path / 'a.csv'}", "--hierarchy", f"city={tmp_path / 'b.csv'}"]
    res = run("anonymize", src, "--out", out, *args, *hier, "--no-cluster")
    assert_refused(
        res, r"--hierarchy names 'city' twice, as \S*a\.csv and \S*b\.csv: give one hierarchy per column"
    )
    assert tree(tmp_path) == before


@pytest.mark.parametrize("release_format", ["generalized", "anatomy"])
def test_the_effective_policy_marks_what_only_a_baseline_enforces(dates_csv, tmp_path, release_format):
    """With JS-reduce (anonymize; anatomy too) l was printed as `l=3 [default]`, as if enforced."""
    out = tmp_path / "d.csv"
    args = ["--qi", "birth,adm,sex", "--date", "birth,adm", "--release-format", release_format]
    res = run("anonymize", dates_csv, "--out", out, *args, *DATES)
    assert res.exit_code == 0, res.output
    assert " l=3 [default; mondrian-l only] " in res.output
    assert " bt_b=0.3 [default; mondrian-bt only] bt_t=0.25 [default; mondrian-bt only] " in res.output
    assert " k=4 [flag] " in res.output
    # JS-reduce's own fields bare under JS-reduce
    assert " j=5.0 [flag] " in res.output and " grouping=scan [default] " in res.output


def test_a_mondrian_l_release_prints_l_unmarked(tmp_path):
    src = tmp_path / "h.csv"
    random_view(40).assign(view=1).to_csv(src, index=False)
    args = ["--time", "view", "--qi", "age,gender", "--sensitive", "exam_result", "--id", "respondent_id"]
    res = run(
        "release",
        src,
        "--ledger",
        tmp_path / "L",
        *args,
        "--k",
        "3",
        "--method",
        "mondrian-l",
        "--no-cluster",
    )
    assert " l=3 [default] bt_b=0.3 [default; mondrian-bt only] " in res.output, res.output
    # the JS threshold and JS-reduce's grouping settings: printed, marked as not this method's
    assert " j=0.1 [default; jsreduce only, unused by mondrian-l] " in res.output
    assert " grouping=scan [default; jsreduce only, unused by mondrian-l] " in res.output
