"""Options given twice or contradicting each other (s33, after the s32 drill of test_drill_options):
one value spelled two ways is accepted once (``--t .45 --t 0.45``, ``--out x --out x/``); a
comma list naming a column twice is refused as such (``--qi age --qi age``, ``--categorical a,a``,
``kpr --known a,a``), as is a column both ``--categorical`` and ``--date``; ``--scheduler``
with ``--cluster`` or ``--no-cluster`` is refused before any work; and each refusal reads as
dpriv's other bad input: one ``error: ...`` line, exit 2."""

import pandas as pd
import pytest
from conftest import random_view
from test_cli import QI, assert_refused, tree
from typer.testing import CliRunner

import dpriv.cluster as cluster_mod
import dpriv.scheduler_address as address_mod
from dpriv.cli import app

BASE = ["--sensitive", "exam_result", "--id", "respondent_id", "--k", "3", "--j", "5", "--no-cluster"]
ANON = ["--qi", "age,gender,weight", *BASE]


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def only_error(res, pattern: str) -> None:
    """Refused as dpriv refuses bad input: exit 2 and one ``error: ...`` line, no click usage
    block, nothing printed before it (the effective policy is not reached)."""
    out = assert_refused(res, pattern)
    assert out.startswith("error: ") and out.count("\n") == 1, out
    assert "Usage:" not in out and "Error:" not in out, out


@pytest.fixture
def view_csv(tmp_path):
    path = tmp_path / "v.csv"
    random_view(40).to_csv(path, index=False)
    return path


@pytest.fixture
def no_cluster_reached(monkeypatch):
    """A command that gets as far as a Dask cluster fails the test (a scheduler unreached)."""

    def refuse(*args, **kwargs):
        raise AssertionError("a Dask cluster was reached")

    monkeypatch.setattr(cluster_mod, "dask_client", refuse)
    monkeypatch.setattr(address_mod, "scheduler_identity", refuse)


def test_one_value_spelled_two_ways_is_given_once(view_csv, tmp_path, monkeypatch):
    """The drill: ``--t .45 --t 0.45`` and ``--out x.csv --out ./x.csv`` were refused as two values."""
    monkeypatch.chdir(tmp_path)
    res = run("anonymize", view_csv, "--out", "x.csv", "--out", "./x.csv", "--t", ".45", "--t", "0.45", *ANON)
    assert res.exit_code == 0, res.output
    assert " t=0.45 [flag] " in res.output
    assert len(pd.read_csv(tmp_path / "x.csv")) == 40


def test_a_folder_given_with_and_without_its_slash_is_one_folder(tmp_path):
    out = tmp_path / "g"
    res = run("generate", "medical", "--views", "1", "--view-size", "20", "--out", out, "--out", f"{out}/")
    assert res.exit_code == 0, res.output
    assert (out / "history.parquet").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--t", ".45", "--t", "0.5"], r"^error: --t given twice, as '\.45' and '0\.5': give it once"),
        (["--out", "y.csv"], r"^error: --out given twice, as '\S*/x\.csv' and 'y\.csv': give it once"),
        (["--id", "pid"], r"^error: --id given twice, as 'respondent_id' and 'pid': give it once"),
        (["--cluster"], r"^error: --cluster/--no-cluster given both ways: give one of them"),
    ],
)
def test_two_different_values_are_refused_as_dpriv_refuses_bad_input(view_csv, tmp_path, args, message):
    before = tree(tmp_path)
    res = run("anonymize", view_csv, "--out", tmp_path / "x.csv", *ANON, *args)
    only_error(res, message)
    assert tree(tmp_path) == before


@pytest.mark.parametrize(
    "args, message",
    [
        (["--qi", "age"], r"--qi names 'age' twice \(in 'age,gender,weight,age'\): give each column once"),
        (["--categorical", "gender,gender"], r"--categorical names 'gender' twice \(in 'gender,gender'\)"),
        (["--categorical", "gender", "--categorical", " gender"], r"--categorical names 'gender' twice"),
        (["--date", "age", "--date", "age"], r"--date names 'age' twice \(in 'age,age'\)"),
    ],
)
def test_a_list_option_naming_a_column_twice_is_refused(view_csv, tmp_path, args, message):
    """``--qi age --qi age`` said "used twice (id, time, QI and sensitive must differ)";
    ``--categorical a,a`` and ``--date d,d`` were accepted while ``kpr --known a,a`` was refused."""
    before = tree(tmp_path)
    res = run("anonymize", view_csv, "--out", tmp_path / "x.csv", *ANON, *args)
    only_error(res, message)
    assert tree(tmp_path) == before


@pytest.mark.parametrize("known", [["age,age"], ["age", "--known", "age"]])
def test_kpr_refuses_a_known_column_twice_as_the_other_list_options(view_csv, known):
    res = run("kpr", view_csv, view_csv, "--known", *known)
    only_error(res, r"--known names 'age' twice \(in 'age,age'\): give each column once")


def test_release_refuses_a_date_column_twice(view_csv, tmp_path):
    args = ["--time", "view", "--date", "age,age", "--ledger", tmp_path / "L", *ANON]
    only_error(run("release", view_csv, *args), r"--date names 'age' twice")
    assert not (tmp_path / "L").exists()


@pytest.mark.parametrize(
    "flag, alone", [("--cluster", "start a local Dask cluster"), ("--no-cluster", "release in this process")]
)
@pytest.mark.parametrize("command", ["anonymize", "release", "demo"])
def test_a_scheduler_with_cluster_or_no_cluster_is_refused_before_any_work(
    command, flag, alone, view_csv, tmp_path, no_cluster_reached
):
    """``--scheduler ADDR --cluster`` ran on ADDR, --cluster dropped silently; with --no-cluster
    the refusal came after the input was read (demo: after the history was generated)."""
    where = {
        "anonymize": [view_csv, "--out", tmp_path / "x.csv", *QI],
        "release": [view_csv, "--ledger", tmp_path / "L", *QI, "--time", "view"],
        "demo": ["--out", tmp_path / "demo", "--views", "1", "--view-size", "10"],
    }[command]
    before = tree(tmp_path)
    res = run(command, *where, "--scheduler", "tcp://127.0.0.1:1", flag)
    only_error(
        res,
        rf"^error: --scheduler and {flag} contradict each other: drop {flag} to run on "
        rf"tcp://127\.0\.0\.1:1, or drop --scheduler to {alone}",
    )
    assert tree(tmp_path) == before


def test_a_column_both_categorical_and_date_is_refused(tmp_path):
    """``--categorical birth --date birth`` released birth as date intervals, --categorical dropped."""
    src = tmp_path / "d.csv"
    births = pd.date_range("1980-01-02", periods=40, freq="100D").strftime("%Y-%m-%d")
    random_view(40).assign(birth=births).to_csv(src, index=False)
    before = tree(tmp_path)
    args = ["--qi", "age,gender,birth", "--categorical", "gender,birth", "--date", "birth"]
    res = run("anonymize", src, "--out", tmp_path / "x.csv", *args, *BASE)
    only_error(res, r"^error: --categorical and --date both name 'birth': .* give it to one of them")
    assert tree(tmp_path) == before
