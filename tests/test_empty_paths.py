"""An empty path (``--ledger ""``, an unset shell variable) is refused as empty: it read as the
current folder (``error: . is not empty and is not a ledger``); and a folder no file can be made in
though it exists (/proc) is said so, not "No such file or directory"."""

import os
from pathlib import Path

import pytest
from test_drill_repeats import only_error
from typer.testing import CliRunner

from dpriv.cli import app


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], prog_name="dpriv")


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an empty path read as "." would be this folder
    Path("h.csv").write_text("respondent_id,view,age,exam_result\n1,1,50,a\n")
    Path("p.toml").write_text(
        '[columns]\nid = "respondent_id"\ntime = "view"\nqi = ["age"]\nsensitive = "exam_result"\n'
    )
    return tmp_path


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["release", "h.csv", "--ledger", "", "--policy", "p.toml"], "--ledger"),
        (["release", "h.csv", "--ledger", "L", "--policy", " "], "--policy"),
        (["release", "", "--ledger", "L", "--policy", "p.toml"], "HISTORY"),
        (["anonymize", "h.csv", "--out", "", "--policy", "p.toml"], "--out"),
    ],
)
def test_an_empty_path_is_refused_as_empty(files, args, flag):
    given = args[args.index(flag) + 1] if flag.startswith("--") else ""
    only_error(run(*args), rf"^error: {flag} is empty \({given!r}; an unset shell variable\?\): give a path$")
    assert sorted(os.listdir(files)) == ["h.csv", "p.toml"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc")
def test_a_folder_that_takes_no_new_files_says_so(files):
    res = run("release", "h.csv", "--ledger", "/proc/dpriv-ledger", "--policy", "p.toml")
    only_error(
        res, r"^error: --ledger: dpriv cannot write in folder /proc \(its file system takes no new files\)"
    )
