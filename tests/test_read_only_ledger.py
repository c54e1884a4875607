"""An operator's drill (s36, F8): ``dpriv release`` on a read-only copy of a ledger that holds
every view of the history already (nothing to release, nothing to write) exited 2, "dpriv cannot
write in folder ...": the writing probe and the lock came before the views were known. It is now
checked as on a writable ledger (exit 0, "nothing to release"); a view left to release is still
refused before any work (dpriv/cli/read_only.py, dpriv.ledger_files.hold_lock).

The read-only file system is a bind mount in a mount namespace of its own (``unshare -m``, as
root): permission bits would not stop root, who runs these tests."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history

ROOT = Path(__file__).resolve().parents[1]
LOOSE = {"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}}


def _can_mount_read_only(tmp_path) -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = tmp_path / "probe"
    probe.mkdir()
    script = f"mount --bind {probe} {probe} && mount -o remount,ro,bind {probe} && ! touch {probe}/x"
    ok = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, check=False)
    return ok.returncode == 0 and not (probe / "x").exists()


def _release_read_only(ledger: Path, history: Path, policy: Path) -> subprocess.CompletedProcess:
    """``dpriv release`` with ``ledger``'s folder mounted read-only for that command only."""
    argv = " ".join(
        f"'{a}'"
        for a in [sys.executable, "-m", "dpriv", "release", history, "--ledger", ledger, "--policy", policy]
    )
    script = f"mount --bind '{ledger}' '{ledger}' && mount -o remount,ro,bind '{ledger}' && exec {argv}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True, check=False
    )


def _files(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


@pytest.mark.slow
def test_a_read_only_ledger_with_nothing_left_to_release_is_checked_and_exits_0(tmp_path):
    if not _can_mount_read_only(tmp_path):
        pytest.skip("no read-only bind mount here (unshare -m needs root)")
    mh = medical_history(n_views=3, view_size=60, seed=0)
    policy = write_history(tmp_path, mh, policy_extra=LOOSE)
    two = tmp_path / "two.parquet"
    mh.history[mh.history["view"] <= 2].to_parquet(two, index=False)
    led = tmp_path / "L"
    res = CliRunner().invoke(app, ["release", str(two), "--ledger", str(led), "--policy", str(policy)])
    assert res.exit_code == 0, res.output
    before = _files(led)

    done = _release_read_only(led, two, policy)
    assert done.returncode == 0, done.stderr
    assert "nothing to release: the ledger already holds releases 1..2" in done.stdout
    assert "cannot write" not in done.stderr

    more = _release_read_only(led, tmp_path / "history.parquet", policy)  # view 3 left: it would write
    assert more.returncode == 2, more.stderr
    assert f"error: --ledger: dpriv cannot write in folder {led} (Read-only file system)" in more.stderr
    assert "tuples" not in more.stderr  # refused before the status line and any release work
    assert _files(led) == before
