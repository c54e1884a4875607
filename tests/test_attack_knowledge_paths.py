"""``dpriv attack`` with a knowledge file it cannot find (a fresh user's drill, s40, 10): the
recorded policy's ``dk = knowledge/dk.npz`` was said not to exist without the folders looked in,
and ``--knowledge spm:nope.npz`` said "input nope.npz does not exist ... export ... finished"
without naming the option that gave it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_cli import assert_refused

from dpriv.datasets import medical_history, write_history


def _dpriv(*args):
    """``dpriv ARGS`` in process."""
    from typer.testing import CliRunner

    from dpriv.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def lost(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A ledger of 2 views x 40 released with gen/policy.toml, whose gen/knowledge/dk.npz is gone
    afterwards: (ledger, history elsewhere, the policy's folder)."""
    root = tmp_path_factory.mktemp("lost")
    mh = medical_history(n_views=2, view_size=40, seed=0)
    policy = write_history(root / "gen", mh, policy_extra={"privacy": {"k": 3, "t": 0.9, "j": 5}})
    led = root / "led"
    res = _dpriv("release", root / "gen" / "history.parquet", "--ledger", led, "--policy", policy)
    assert res.exit_code == 0, res.output
    (root / "data").mkdir()
    mh.history.to_csv(root / "data" / "h.csv", index=False)
    (root / "gen" / "knowledge" / "dk.npz").unlink()
    return led, root / "data" / "h.csv", root / "gen"


def test_a_missing_knowledge_file_names_the_folders_looked_in(lost, tmp_path):
    led, history, gen = lost
    res = _dpriv("attack", led, "--history", history, "--knowledge", "dk", "--out", tmp_path / "g.csv")
    out = " ".join(assert_refused(res).split())
    assert re.search(r"dk = \S*knowledge/dk\.npz does not exist", out), out
    folders = f"{gen.resolve()}, {history.parent}, {led.parent}"
    assert f"(looked for in {folders}, then the current folder); pass --policy FILE" in out
    assert not (tmp_path / "g.csv").exists()


def test_a_missing_spm_corpus_names_the_knowledge_option(lost, tmp_path):
    led, history, _ = lost
    res = _dpriv(
        "attack", led, "--history", history, "--knowledge", "spm:nope.npz", "--out", tmp_path / "g.csv"
    )
    out = " ".join(assert_refused(res).split())
    assert (
        "the SPM corpus nope.npz of the knowledge 'spm:nope.npz' (--knowledge spm:nope.npz) does not exist"
        in out
    )
    assert "export" not in out
    assert not (tmp_path / "g.csv").exists()
