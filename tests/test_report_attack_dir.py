"""``dpriv report --attack-dir DIR`` (a fresh user's drill, s40, 2): an auditor with a read-only
ledger attacks it with ``--out FILE`` elsewhere, but the report read only ``LEDGER/attack/`` and
showed every adversary as "not attacked". The results of another folder are now read and
checked as those of ``attack/`` (of this ledger's releases)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
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
def attacked(tmp_path_factory) -> tuple[Path, Path]:
    """A ledger of 2 releases (2 views x 60) attacked with dk, paper and retrospective, into
    ``LEDGER/attack/``: (ledger, history)."""
    root = tmp_path_factory.mktemp("attack_dir")
    mh = medical_history(n_views=2, view_size=60, seed=0)
    policy = write_history(root / "gen", mh, policy_extra={"privacy": {"k": 3, "t": 0.9, "j": 5}})
    led = root / "led"
    release_history(mh.history, ReleasePolicy.from_toml(policy), led)
    mh.history.to_csv(root / "h.csv", index=False)
    for adversary in ("paper", "retrospective"):
        res = _dpriv(
            "attack", led, "--history", root / "h.csv", "--knowledge", "dk", "--adversary", adversary,
            "--policy", policy,
        )  # fmt: skip
        assert res.exit_code == 0, res.output
    return led, root / "h.csv"


def _table(page: str, table: str) -> list[str]:
    body = re.search(rf'<table id="{table}">.*?</table>', page, re.S).group(0)
    return re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)[1:]


def test_a_report_from_an_attack_dir_shows_the_gains_of_the_ledgers_attack_folder(attacked, tmp_path):
    led, _ = attacked
    own = _dpriv("report", led, "--out", tmp_path / "own.html")
    assert own.exit_code == 0, own.output
    elsewhere = tmp_path / "results"  # as if written by attack --out, the ledger being read-only
    shutil.copytree(led / "attack", elsewhere)
    copy = tmp_path / "copy"  # the ledger without its attack/ folder
    shutil.copytree(led, copy, ignore=shutil.ignore_patterns("attack"))

    bare = _dpriv("report", copy, "--out", tmp_path / "bare.html")
    assert bare.exit_code == 0, bare.output
    assert "no attack results in attack/ (results written elsewhere with dpriv attack --out" in bare.output
    res = _dpriv("report", copy, "--out", tmp_path / "dir.html", "--attack-dir", elsewhere)
    assert res.exit_code == 0, res.output
    assert "adversary gains: dk" in res.output and "retrospective adversary: dk" in res.output
    page, ref = (tmp_path / "dir.html").read_text(), (tmp_path / "own.html").read_text()
    for table in ("gains", "retro-gains"):
        assert _table(page, table) == _table(ref, table) != []
    largest = pd.read_csv(elsewhere / "gain_dk.csv")["adversary_gain"].max()
    assert f"{largest:.4f}"[:5] in _table(page, "gains")[0]  # the file's own figure, shown
    assert f"{elsewhere}/)" in page  # the page names where its results come from


def test_an_attack_dir_of_another_ledgers_results_is_refused(attacked, tmp_path):
    led, _ = attacked
    elsewhere = tmp_path / "results"
    elsewhere.mkdir()
    gain = pd.read_csv(led / "attack" / "gain_dk.csv")
    gain.assign(release=gain["release"] + 5).to_csv(elsewhere / "gain_dk.csv", index=False)
    res = _dpriv("report", led, "--out", tmp_path / "r.html", "--attack-dir", elsewhere)
    assert_refused(res, re.escape(f"the results in {elsewhere}/gain_dk.csv name release(s) [6, 7] that"))
    assert not (tmp_path / "r.html").exists()


def test_an_attack_dir_that_does_not_exist_is_named(attacked, tmp_path):
    led, _ = attacked
    res = _dpriv("report", led, "--out", tmp_path / "r.html", "--attack-dir", tmp_path / "nope")
    assert_refused(res, re.escape(f"--attack-dir {tmp_path / 'nope'}: no such folder"))
    assert not (tmp_path / "r.html").exists()


def test_the_release_tables_seconds_include_the_write_step_as_the_report_does(tmp_path, monkeypatch):
    """A fresh user's drill (s40, 5): the table printed each release's seconds without the write
    step (timed during the commit), while the report sums metrics.json's, with it: 0.46 against
    0.55. A slow write (50 ms more) shows in both."""
    import time

    import dpriv.ledger

    slow = dpriv.ledger.write_parquet

    def write_parquet(*args, **kwargs):
        time.sleep(0.05)
        return slow(*args, **kwargs)

    monkeypatch.setattr(dpriv.ledger, "write_parquet", write_parquet)
    mh = medical_history(n_views=1, view_size=40, seed=0)
    policy = write_history(tmp_path / "gen", mh, policy_extra={"privacy": {"k": 3, "t": 0.9, "j": 5}})
    res = _dpriv(
        "release", tmp_path / "gen" / "history.parquet", "--ledger", tmp_path / "L", "--policy", policy
    )
    assert res.exit_code == 0, res.output
    head, row = res.stdout.splitlines()[:2]
    shown = float(row.split()[head.split().index("seconds")])
    seconds = json.loads((tmp_path / "L" / "releases" / "1" / "metrics.json").read_text())["seconds"]
    assert seconds["write"] >= 0.05
    assert shown == round(sum(seconds.values()), 2)


def test_on_release_gets_the_seconds_metrics_json_holds(tmp_path):
    """``release_history``'s ``on_release`` is called with the committed metrics' seconds (the
    write step, timed during the commit, included), the ones ``dpriv release``'s table shows
    (before, the table re-read each metrics.json for them)."""
    mh = medical_history(n_views=2, view_size=40, seed=0)
    policy = write_history(tmp_path / "gen", mh, policy_extra={"privacy": {"k": 3, "t": 0.9, "j": 5}})
    got = {}
    release_history(
        pd.read_parquet(tmp_path / "gen" / "history.parquet"),
        ReleasePolicy.from_toml(policy),
        tmp_path / "L",
        on_release=lambda i, m: got.update({i: m["seconds"]}),
    )
    for i in (1, 2):
        written = json.loads((tmp_path / "L" / "releases" / str(i) / "metrics.json").read_text())["seconds"]
        assert "write" in got[i] and got[i] == written
