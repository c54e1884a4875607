"""``dpriv verify`` as its steps (settle the flags, read the inputs, run the checks, print)
were split out of one function: its refusals of the flags, each before any input is read and
in the order a user meets them, and the hints after a failed check of a released file, which
no other test reads."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner
from verify_view import FLAGS, write_view

from dpriv.cli import app


def run(*args) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["verify", *map(str, args)])
    return res.exit_code, " ".join(res.output.split())


def test_a_released_view_or_a_ledger_release_is_needed(tmp_path):
    """Guard (passes on the code before the split by design)."""
    code, said = run("--original", tmp_path / "v.csv", *FLAGS)
    assert code == 2 and "error: give the RELEASED view to check, or --ledger L --view I" in said, said
    assert "Traceback" not in said


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--view", "1"],
            "--view I needs the release-index column of the history: --time C (or [columns] time)",
        ),
        (
            ["--add-row-id", "--time", "week"],
            "--add-row-id numbers the rows of one view, not of a history: give --id C",
        ),
    ],
)
def test_a_history_flag_on_a_view_and_a_row_number_on_a_history_are_refused(tmp_path, extra, message):
    """Neither file exists: refused on the flags alone, before either is read (a read would say
    the file is missing). Guard (passes on the code before the split by design)."""
    code, said = run(tmp_path / "r.csv", "--original", tmp_path / "v.csv", *FLAGS, *extra)
    assert code == 2 and f"error: {message}" in said, said
    assert "does not exist" not in said and "not found" not in said
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize(
    "args, first",
    [
        # the original before the released view, the released view before the method
        (["--method", "mondrian"], "give the original it was made from"),
        (["--original", "a.csv", "--history", "b.csv", "--method", "mondrian"], "not both"),
        (["--original", "a.csv", "--method", "mondrian"], "give the RELEASED view to check"),
        # the method before the policy, the policy before the flags of a history
        (["r.csv", "--original", "a.csv", "--method", "mondrian", "--view", "1"], "is not a method"),
        (["r.csv", "--original", "a.csv", "--view", "1"], "no policy file"),
        (["r.csv", "--original", "a.csv", *FLAGS, "--view", "1"], "--view I needs"),
    ],
)
def test_the_first_refusal_is_the_one_said(tmp_path, monkeypatch, args, first):
    """Guard of the order of the refusals (passes on the code before the split by design)."""
    monkeypatch.chdir(tmp_path)
    code, said = run(*args)
    assert code == 2 and said.startswith("error: ") and first in said, said


@pytest.fixture(scope="module")
def anatomy(tmp_path_factory):
    """A view of 300 tuples released as an Anatomy QI table ``ra.csv`` (its sensitive table,
    ``ra.sensitive.csv``, and metrics beside it)."""
    root = tmp_path_factory.mktemp("anatomy")
    write_view(root)
    res = CliRunner().invoke(
        app,
        [
            "anonymize",
            str(root / "v.csv"),
            "--out",
            str(root / "ra.csv"),
            *FLAGS,
            "--release-format",
            "anatomy",
        ],
    )
    assert res.exit_code == 0, res.output
    return root


def test_a_qi_table_checked_as_a_generalized_view_says_what_it_may_be(anatomy):
    """No QI-group is released as a generalized view would hold it: the achieved values are
    None and say why, and the sensitive table beside the file is named with the flag to give.
    Guard (passes on the code before the split by design)."""
    res = CliRunner().invoke(
        app, ["verify", str(anatomy / "ra.csv"), "--original", str(anatomy / "v.csv"), *FLAGS]
    )
    assert res.exit_code == 2, res.output
    lines = res.stdout.splitlines()
    for key in ("k_achieved", "l_achieved", "t_achieved"):
        assert f"  {key}: None (no QI-group released)" in lines, lines
    assert "    n_groups: 0" in lines
    assert (
        f"note: {anatomy / 'ra.sensitive.csv'} lies beside it: if this is an Anatomy release, verify it "
        "with --release-format anatomy (or the policy it was released under)"
    ) in " ".join(res.stderr.split())
    assert "give --method" not in res.stderr


def test_a_t_failure_of_a_file_says_another_method_is_given_by_flag(anatomy, tmp_path):
    """A view held to a t below its release's: the failures say t, and a note that another
    method's release is checked with --method. Guard (passes on the code before the split).
    Its metrics file as written before session 46, which recorded no t."""
    for name in ("v.csv", "ra.csv", "ra.sensitive.csv"):
        shutil.copy(anatomy / name, tmp_path / name)
    recorded = json.loads((anatomy / "ra.csv.metrics.json").read_text())
    del recorded["anonymity_parameters"]
    (tmp_path / "ra.csv.metrics.json").write_text(json.dumps(recorded))
    anatomy = tmp_path
    check = ["verify", str(anatomy / "ra.csv"), "--original", str(anatomy / "v.csv"), *FLAGS[:-2]]
    res = CliRunner().invoke(app, [*check, "--t", "0.01", "--release-format", "anatomy"])
    assert res.exit_code == 2, res.output
    assert any(line.startswith("  FAIL ") and " > t = 0.01" in line for line in res.stdout.splitlines())
    hint = "note: t is held as JS-reduce promises it; a release of another method: give --method"
    assert hint in res.stderr.splitlines()
    assert "lies beside it" not in res.stderr  # checked as the Anatomy release it is
