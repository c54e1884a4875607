"""``dpriv status LEDGER``: what a ledger holds, read only, for monitoring and pre-flight."""

from __future__ import annotations

import datetime
import json
import os

import pytest
from loose_history import release, write_loose
from test_cli import tree
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.ledger_files import drop_lock, hold_lock


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen")
    write_loose(out, n_views=2, view_size=60)
    led = out / "led"
    assert release(out, led).exit_code == 0
    return led


def status(led):
    return CliRunner().invoke(app, ["status", str(led)])


def _stamps(root):
    return {str(p): p.stat().st_mtime_ns for p in root.rglob("*")}


def test_status_of_a_valid_ledger(ledger):
    before, stamps = tree(ledger), _stamps(ledger)
    res = status(ledger)
    assert res.exit_code == 0, res.output
    manifest = json.loads((ledger / "manifest.json").read_text())
    when = datetime.datetime.fromtimestamp((ledger / "manifest.json").stat().st_mtime, datetime.UTC)
    assert res.output.splitlines() == [
        f"ledger: {ledger}",
        f"releases: 2 releases committed (1..2); last commit {when:%Y-%m-%d %H:%M:%S} UTC "
        "(manifest.json written)",
        f"policy_sha256: {manifest['policy_sha256']}",
        "pending: none (no uncommitted release, no leftovers)",
        "valid: yes (every committed release's files whole and as manifest.json records them)",
    ]
    assert tree(ledger) == before and _stamps(ledger) == stamps  # read only: nothing made or touched


def test_status_names_a_killed_release_leftovers_and_a_running_writer(ledger):
    extra = ledger / "releases" / "3" / "view.parquet"
    extra.parent.mkdir()
    extra.write_bytes(b"half")  # a release killed before its commit
    try:
        res = status(ledger)
        assert res.exit_code == 0, res.output
        assert (
            "pending: 1 file of a release not committed, left by a run stopped before its commit: "
            "releases/3/view.parquet (the next dpriv release removes those dpriv wrote)"
        ) in res.output.splitlines()
        assert extra.read_bytes() == b"half"  # status removes nothing
        fd = hold_lock(ledger)  # a dpriv release writing release 3 now
        try:
            res = status(ledger)
        finally:
            drop_lock(fd)
        assert res.exit_code == 0, res.output
        assert "writing: another dpriv command holds the ledger's lock now (a release running)" in res.output
        assert "pending: 1 file of a release not committed, being written now: " in res.output
        assert "writing:" not in status(ledger).output  # the lock dropped: nobody writes
    finally:
        extra.unlink()
        extra.parent.rmdir()


def test_status_of_a_damaged_ledger_is_exit_2(ledger, tmp_path):
    import shutil

    led = tmp_path / "led"
    shutil.copytree(ledger, led)
    metrics = led / "releases" / "1" / "metrics.json"
    record = json.loads(metrics.read_text())
    record["k_achieved"] = 99  # raised by hand
    metrics.write_text(json.dumps(record))
    os.utime(metrics)
    res = status(led)
    assert res.exit_code == 2, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"{metrics} is not the file release 1 committed" in errors[0]
    assert "valid: yes" not in res.output


@pytest.mark.parametrize("made", ["missing", "empty"])
def test_status_of_no_ledger_is_exit_2(tmp_path, made):
    led = tmp_path / "share"
    if made == "empty":
        led.mkdir()
    res = status(led)
    assert res.exit_code == 2, res.output
    what = "does not exist" if made == "missing" else "is an empty folder"
    assert (
        res.output.strip()
        == f"error: {led} {what}: give the folder of a ledger (the one that holds its manifest.json)"
    )
    assert (made == "empty") == led.exists()  # nothing made


def test_a_status_probe_does_not_make_a_release_starting_then_busy(tmp_path):
    """``dpriv status`` probes the lock with a shared lock it drops at once: a release taking the
    lock in that instant waits for it (dpriv.ledger_files.LOCK_PATIENCE) instead of exiting 3;
    a writer's lock held longer still makes it busy."""
    import fcntl
    import threading

    from dpriv.ledger_files import LOCK, LedgerBusy

    (tmp_path / LOCK).touch()
    probe = os.open(tmp_path / LOCK, os.O_RDONLY)
    fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)  # the probe, caught between its two calls
    timer = threading.Timer(0.1, fcntl.flock, (probe, fcntl.LOCK_UN))
    timer.start()
    try:
        fd = hold_lock(tmp_path)  # before: LedgerBusy at once
    finally:
        timer.join()
        os.close(probe)
    try:
        with pytest.raises(LedgerBusy, match="another dpriv command is writing the ledger"):
            hold_lock(tmp_path)  # a real writer holds it: busy once the patience is spent
    finally:
        drop_lock(fd)
