"""Messages that lead to the fix (fresh-user findings): each refusal exits 2 and its message
names the column/row/value and the working fix; each hint is printed without refusing."""

import shutil

import pandas as pd
import pytest
from test_cli import assert_refused

from dpriv.datasets import medical_history, write_history
from dpriv.policy_base import BASE_FILE

LOOSE = {"privacy": {"k": 5, "t": 0.5, "j": 0.8, "max_suppression": 1.0}}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen")
    write_history(out, medical_history(n_views=2, view_size=80, seed=3), policy_extra=LOOSE)
    return out


# -- 1. a recorded policy's knowledge paths, run from another folder ---------------------------
def _first_release(cli, generated, tmp_path):
    """View 1 released with --policy into tmp/other/L9; the history copied next to it."""
    other = tmp_path / "other"
    other.mkdir()
    hist = pd.read_parquet(generated / "history.parquet")
    hist.to_parquet(other / "h.parquet", index=False)
    hist[hist["view"] == 1].to_parquet(other / "h1.parquet", index=False)
    pol = generated / "policy.toml"
    res = cli("release", other / "h1.parquet", "--ledger", other / "L9", "--policy", pol)
    assert res.exit_code == 0, res.output
    return other


def test_release_without_policy_finds_knowledge_of_the_recorded_policy(cli, generated, tmp_path, monkeypatch):
    other = _first_release(cli, generated, tmp_path)
    assert (other / "L9" / BASE_FILE).is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    res = cli("release", other / "h.parquet", "--ledger", other / "L9")
    assert res.exit_code == 0, res.output
    assert "ledger" in res.output and (other / "L9" / "releases" / "2").is_dir()


def test_older_ledger_without_recorded_folder_says_pass_policy(cli, generated, tmp_path, monkeypatch):
    other = _first_release(cli, generated, tmp_path)
    (other / "L9" / BASE_FILE).unlink()  # a ledger written before the folder was recorded
    monkeypatch.chdir(tmp_path)
    res = cli("release", other / "h.parquet", "--ledger", other / "L9")
    assert_refused(res, r"knowledge/dk\.npz", r"pass --policy FILE \(knowledge paths are relative to it\)")
    assert not (other / "L9" / "releases" / "2").exists()
    # the fix the message names works
    res = cli("release", other / "h.parquet", "--ledger", other / "L9", "--policy", generated / "policy.toml")
    assert res.exit_code == 0, res.output


def test_attack_without_policy_uses_the_recorded_folder(cli, generated, tmp_path):
    other = _first_release(cli, generated, tmp_path)
    moved = tmp_path / "moved.parquet"
    shutil.copy(other / "h1.parquet", moved)
    res = cli("attack", other / "L9", "--history", moved, "--knowledge", "dk")
    assert res.exit_code == 0, res.output
    (other / "L9" / BASE_FILE).unlink()
    res = cli("attack", other / "L9", "--history", moved, "--knowledge", "dk")
    assert_refused(res, r"pass --policy FILE \(knowledge paths are relative to it\)")
