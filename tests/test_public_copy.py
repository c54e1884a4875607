"""A copy of a ledger without ``state/`` (its sensitive part: what one hands an auditor) made
``status``, ``attack`` and ``verify --ledger`` say "the ledger is damaged ... restore the folder
from a backup" (a fresh user's drill, s40, 3). The state absent altogether is now named as such,
with the commands that need it and those that do not; one lost part is still "damaged"."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from test_cli import assert_refused

from dpriv.datasets import medical_history, write_history
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


def _dpriv(*args):
    """``dpriv ARGS`` in process."""
    from typer.testing import CliRunner

    from dpriv.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def public(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A ledger of 2 releases (2 views x 40) copied without state/: (copy, history, policy)."""
    root = tmp_path_factory.mktemp("public")
    mh = medical_history(n_views=2, view_size=40, seed=0)
    policy = write_history(root / "gen", mh, policy_extra={"privacy": {"k": 3, "t": 0.9, "j": 5}})
    release_history(mh.history, ReleasePolicy.from_toml(policy), root / "led")
    copy = root / "pub"
    shutil.copytree(root / "led", copy, ignore=shutil.ignore_patterns("state"))
    return copy, root / "gen" / "history.parquet", policy


@pytest.mark.parametrize(
    "command",
    [
        ("status",),
        ("attack", "--history", "{history}", "--knowledge", "dk", "--policy", "{policy}", "--out", "{out}"),
        ("verify", "--ledger", "{copy}", "--view", "2", "--history", "{history}"),
    ],
    ids=["status", "attack", "verify"],
)
def test_a_copy_without_state_says_the_state_is_absent_not_damaged(public, tmp_path, command):
    copy, history, policy = public
    values = {"copy": copy, "history": history, "policy": policy, "out": tmp_path / "g.csv"}
    args = [a.format(**values) for a in command]
    res = _dpriv(*args) if command[0] == "verify" else _dpriv(args[0], copy, *args[1:])
    out = assert_refused(res, re.escape(f"{copy} has no state/ folder (the sensitive per-respondent state"))
    said = " ".join(out.split())
    assert "dpriv release, status, attack and verify --ledger need it" in said
    assert f"dpriv report {copy} and dpriv verify RELEASED --original ORIGINAL do not" in said
    assert "damaged" not in said
    assert not (tmp_path / "g.csv").exists()


def test_a_copy_without_state_still_makes_its_report(public, tmp_path):
    """A guard (passes on the old code by design): the report reads no state."""
    copy, _, _ = public
    res = _dpriv("report", copy, "--out", tmp_path / "r.html")
    assert res.exit_code == 0, res.output
