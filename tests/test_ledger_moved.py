"""A ledger moved or copied together with its policy's folder (a new-user drill, s41):
``policy_base.json`` recorded only the absolute folder of ``--policy FILE``, so after
``mv proj proj2`` a resumed ``dpriv release`` and ``dpriv attack`` without ``--policy`` were
refused (``knowledge/dk.npz`` not found) whenever the ledger did not lie in that folder
itself. The folder is recorded relative to the ledger too (``base_dir_from_ledger``);
ledgers holding only the absolute folder are read as before.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from loose_history import write_loose
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.errors import PolicyError
from dpriv.ledger import Ledger
from dpriv.policy_base import BASE_FILE, base_candidates, record_base, recorded_base


def _cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """proj/policy.toml and proj/knowledge/, the history in proj/data/, the ledger proj/runs/L
    (two views of three released with --policy)."""
    proj = tmp_path_factory.mktemp("x") / "proj"
    proj.mkdir()
    write_loose(proj, n_views=3, view_size=60, seed=1)
    (proj / "data").mkdir()
    (proj / "runs").mkdir()
    hist = pd.read_parquet(proj / "history.parquet")
    (proj / "history.parquet").unlink()
    hist[hist["view"] <= 2].to_parquet(proj / "data" / "h2.parquet", index=False)
    hist.to_parquet(proj / "data" / "h3.parquet", index=False)
    res = _cli(
        "release",
        proj / "data" / "h2.parquet",
        "--ledger",
        proj / "runs" / "L",
        "--policy",
        proj / "policy.toml",
    )
    assert res.exit_code == 0, res.output
    return proj


@pytest.mark.slow
def test_a_ledger_moved_with_its_policy_folder_resumes_and_is_attacked_without_policy(project, tmp_path):
    moved = tmp_path / "elsewhere" / "proj2"
    shutil.copytree(project, moved)
    shutil.move(str(project), str(tmp_path / "gone"))  # the recorded absolute folder no longer exists
    try:
        ledger = moved / "runs" / "L"
        res = _cli("release", moved / "data" / "h3.parquet", "--ledger", ledger)
        assert res.exit_code == 0, res.output
        assert Ledger(ledger).last_index() == 3
        res = _cli("attack", ledger, "--history", moved / "data" / "h3.parquet", "--knowledge", "dk",
                   "--out", tmp_path / "gain.csv")  # fmt: skip
        assert res.exit_code == 0, res.output
        assert list(pd.read_csv(tmp_path / "gain.csv")["release"]) == [1, 2, 3]
    finally:
        shutil.move(str(tmp_path / "gone"), str(project))


def _ledger_with(tmp_path, record: dict):
    ledger = tmp_path / "runs" / "L"
    ledger.mkdir(parents=True)
    (ledger / BASE_FILE).write_text(json.dumps(record))
    (tmp_path / "pol" / "knowledge").mkdir(parents=True)
    (tmp_path / "pol" / "knowledge" / "dk.npz").write_bytes(b"")
    return ledger


def test_an_older_ledgers_absolute_folder_is_still_read(tmp_path):
    ledger = _ledger_with(tmp_path, {"base_dir": str(tmp_path / "pol")})
    assert base_candidates(ledger, [tmp_path]) == [tmp_path / "pol", tmp_path]
    assert recorded_base(ledger, {"dk": "knowledge/dk.npz"}, {}, []) == str((tmp_path / "pol").resolve())


def test_the_absolute_folder_comes_first_and_a_lost_one_is_still_refused(tmp_path):
    ledger = _ledger_with(tmp_path, {"base_dir": "/nowhere/pol", "base_dir_from_ledger": "../../pol"})
    assert base_candidates(ledger, []) == [Path("/nowhere/pol"), tmp_path.resolve() / "pol"]
    assert recorded_base(ledger, {"dk": "knowledge/dk.npz"}, {}, []) == str((tmp_path / "pol").resolve())
    with pytest.raises(PolicyError, match=r"\[knowledge\] dk = 'knowledge/other\.npz' .* pass --policy FILE"):
        recorded_base(ledger, {"dk": "knowledge/other.npz"}, {}, [])


def test_the_folder_is_recorded_absolute_and_relative_to_the_ledger(tmp_path):
    ledger = tmp_path / "proj" / "runs" / "L"
    ledger.mkdir(parents=True)
    assert record_base(ledger, str(tmp_path / "proj")) is None  # no policy.json: nothing committed
    (ledger / "policy.json").write_text("{}")
    assert record_base(ledger, str(tmp_path / "proj" / "runs" / ".." / "")) == ledger / BASE_FILE
    record = json.loads((ledger / BASE_FILE).read_text())
    assert record == {"base_dir": str((tmp_path / "proj").resolve()), "base_dir_from_ledger": "../.."}


def test_record_base_never_replaces_the_file(tmp_path):
    ledger = _ledger_with(tmp_path, {"base_dir": "/old"})
    (ledger / "policy.json").write_text("{}")
    assert record_base(ledger, str(tmp_path / "pol")) is None
    assert json.loads((ledger / BASE_FILE).read_text()) == {"base_dir": "/old"}
