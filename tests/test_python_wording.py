"""Refusals name what their reader typed: a Python call its arguments (``original``,
``view=<index>``, ``out``, ``view_size``, ``scheduler``, ``cluster=False``), the command line its
flags (``--original``, ``--view <index>``, ``--out``, ``--view-size``, ``--no-cluster``). These
named flags to a Python caller too (dpriv/wording.py; session 32's ``read_toml(named=...)``)."""

import re

import pandas as pd
import pytest
from conftest import random_view
from test_cli import QI
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.wording import argument_named, flag_named


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_an_argument_is_named_as_python_or_as_the_command_line_writes_it():
    assert [argument_named("view"), argument_named("view", "<index>"), argument_named("cluster", False)] == [
        "view",
        "view=<index>",
        "cluster=False",
    ]
    assert [flag_named("view_size"), flag_named("view", "<index>")] == ["--view-size", "--view <index>"]
    assert [flag_named("cluster", True), flag_named("cluster", False)] == ["--cluster", "--no-cluster"]


@pytest.fixture(scope="module")
def two_views(tmp_path_factory):
    """A history of 2 views (``view``), CSV, and the release of its first view as CSV."""
    from dpriv.release import anonymize

    folder = tmp_path_factory.mktemp("views")
    history = pd.concat([random_view(60, seed=s).assign(view=s) for s in (1, 2)], ignore_index=True)
    history.to_csv(folder / "history.csv", index=False)
    fields = {"id": "respondent_id", "qi": ["age", "gender", "weight"], "sensitive": "exam_result"}
    released = anonymize(
        history[history["view"] == 1].drop(columns="view"), {**fields, "k": 3, "t": 0.9, "j": 5}
    )
    released.released.to_csv(folder / "released.csv", index=False)
    return folder, history, released.released, ReleasePolicy.from_dict({**fields, "time": "view", "k": 3})


def test_verify_view_names_its_arguments_and_dpriv_verify_its_flags(two_views):
    folder, history, released, policy = two_views
    from dpriv.release import verify_view

    several = "original holds 2 views (view = 1..2); t is checked against the view a release was made from: "
    with pytest.raises(InputError, match=f"^{re.escape(several)}pass view=<index>$"):
        verify_view(released, history, policy)
    with pytest.raises(InputError, match=r"^original has no rows with view = 5; it holds \[1, 2\]$"):
        verify_view(released, history, policy, view=5)
    doubled = pd.concat([history, history.iloc[[3]]], ignore_index=True)
    with pytest.raises(InputError, match="^original: view = 1: duplicate 'respondent_id' within one view"):
        verify_view(released, doubled, policy, view=1)

    given = ["verify", folder / "released.csv", "--original", folder / "history.csv", "--time", "view", *QI]
    res = run(*given, "--k", 3, "--t", 0.9)
    assert res.exit_code == 2 and f"error: --{several}pass --view <index>\n" in res.output, res.output
    res = run(*given, "--k", 3, "--t", 0.9, "--view", 5)
    assert res.exit_code == 2 and "error: --original has no rows with view = 5;" in res.output, res.output


def test_run_experiment_names_out_and_view_size_and_dpriv_experiment_its_flags(tmp_path):
    from dpriv.experiment import run_experiment

    afile = tmp_path / "afile"
    afile.write_text("mine")
    said = f"{afile} is a file, not a folder: choose a folder for the experiment"
    with pytest.raises(InputError, match=f"^out {re.escape(said)}$"):
        run_experiment(afile, views=1, view_size=5, say=lambda _: None)
    res = run("experiment", "paper", "--out", afile, "--views", 1, "--view-size", 5)
    assert res.exit_code == 2 and f"error: --out {said}\n" in res.output, res.output

    few = "nothing was written: give a larger "
    with pytest.raises(InputError, match=f"{few}view_size$"):
        run_experiment(tmp_path / "tiny", views=1, view_size=3, say=lambda _: None)
    res = run("experiment", "paper", "--out", tmp_path / "tiny", "--views", 1, "--view-size", 3)
    assert res.exit_code == 2 and f"{few}--view-size\n" in res.output, res.output
    assert afile.read_text() == "mine" and not (tmp_path / "tiny").exists()


@pytest.mark.parametrize(
    "named, small, lazy",
    [
        (argument_named, "(cluster=True starts one, scheduler=ADDR uses yours)", "cluster=False: to be"),
        (flag_named, "(--cluster starts one, --scheduler ADDR uses yours)", "--no-cluster: to be"),
    ],
)
def test_where_a_release_runs_is_said_in_the_callers_words(named, small, lazy):
    from dpriv.cluster import Placement, history_size, release_frame

    frame = random_view(20)
    policy = ReleasePolicy.from_dict(
        {"id": "respondent_id", "qi": ["age"], "sensitive": "exam_result", "k": 2}
    )
    said: list[str] = []
    for size in (history_size(frame, policy), None):
        with release_frame(Placement("process", size, frame), say=said.append, named=named):
            pass
    assert said[0].endswith(f"no Dask cluster started {small}") and said[1].startswith(lazy), said


def test_write_history_names_out_dir_and_dpriv_generate_its_flag(tmp_path):
    from dpriv.datasets import medical_history, write_history

    mh = medical_history(1, 20, seed=0)
    write_history(tmp_path, mh)
    (tmp_path / "policy.toml").write_text("# edited\n")
    edited = r"overwrite=True replaces only .* or choose another folder \(out_dir\)$"
    with pytest.raises(InputError, match=edited):
        write_history(tmp_path, mh, overwrite=True)
    res = run("generate", "medical", "--out", tmp_path, "--views", 1, "--view-size", 20, "--force")
    assert res.exit_code == 2 and "or choose another folder (--out)\n" in res.output, res.output
    afile = tmp_path / "afile"
    afile.write_text("mine")
    with pytest.raises(InputError, match=r"is a file, not a folder; choose a folder for .* \(out_dir\)$"):
        write_history(afile, mh)


def test_a_count_of_one_takes_the_singular():
    """A drill: '(1 rows: line 7 of h.csv)' and 'larger than the view (1 rows)'."""
    from dpriv.wording import counted

    assert [counted(n, "row") for n in (0, 1, 2)] == ["0 rows", "1 row", "2 rows"]
    assert counted(1, "kept tuple lies", "kept tuples lie") == "1 kept tuple lies"
    assert counted(3, "kept tuple lies", "kept tuples lie") == "3 kept tuples lie"
