"""Test helpers: a dpriv command run on a folder mounted read-only, and the ledger it is run on
(tests/test_read_only_ledger.py, tests/test_write_advice.py).

The read-only file system is a bind mount in a mount namespace of its own (``unshare -m``, as
root): permission bits would not stop root, who runs these tests. The command runs in a
subprocess, the mount living only in its namespace."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history

ROOT = Path(__file__).resolve().parents[1]
#: A policy every small view of :func:`medical_history` passes.
LOOSE = {"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}}


def skip_without_read_only_mount(tmp_path: Path) -> None:
    """Skip the test where a read-only bind mount cannot be made (``unshare -m`` needs root)."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare here: no read-only bind mount")
    probe = tmp_path / "probe"
    probe.mkdir()
    script = f"mount --bind {probe} {probe} && mount -o remount,ro,bind {probe} && ! touch {probe}/x"
    ok = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, check=False)
    if ok.returncode != 0 or (probe / "x").exists():
        pytest.skip("no read-only bind mount here (unshare -m needs root)")


def dpriv_read_only(folder: Path, *args) -> subprocess.CompletedProcess:
    """``python -m dpriv *args`` (text output captured) with ``folder`` mounted read-only for
    that command only."""
    argv = " ".join(f"'{a}'" for a in [sys.executable, "-m", "dpriv", *args])
    script = f"mount --bind '{folder}' '{folder}' && mount -o remount,ro,bind '{folder}' && exec {argv}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script], env=env, capture_output=True, text=True, check=False
    )


def files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root``: its bytes and modification time (ns), by relative path."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


def released_ledger(tmp_path: Path, n_views: int, released: int) -> tuple[Path, Path, Path]:
    """A medical history of ``n_views`` views of 60 rows written in ``tmp_path``
    (``history.parquet``, ``policy.toml`` with :data:`LOOSE`) and its views 1..``released``
    released into the ledger ``tmp_path/L``: the ledger, the policy and the file released
    (``history.parquet``, or ``first.parquet`` holding the views released when fewer)."""
    mh = medical_history(n_views=n_views, view_size=60, seed=0)
    policy = write_history(tmp_path, mh, policy_extra=LOOSE)
    source = tmp_path / "history.parquet"
    if released < n_views:
        source = tmp_path / "first.parquet"
        first: pd.DataFrame = mh.history[mh.history["view"] <= released]
        first.to_parquet(source, index=False)
    led = tmp_path / "L"
    res = CliRunner().invoke(app, ["release", str(source), "--ledger", str(led), "--policy", str(policy)])
    assert res.exit_code == 0, res.output
    return led, policy, source
