"""A new user's drill of ``dpriv anonymize`` (s32): an interrupted command.

SIGTERM (``timeout``, systemd, SLURM) killed ``anonymize`` mid-write with no message and left a
full-size ``.OUT.xxxx.dpriv-tmp`` in the output folder; it now ends as Ctrl-C does (the files
being written removed, one line, exit 143 = 128 + 15), for ``release`` too (the ledger stays
at its last committed release). After Ctrl-C, ``anonymize`` said "a ledger stays at its last
committed release" though it has none: the line now fits the command.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import random_view
from test_cli import LOOSE, QI
from typer.testing import CliRunner

import dpriv
from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger

ROOT = Path(dpriv.__file__).resolve().parents[1]  # the dpriv under test

#: Runs ``dpriv ARGS`` with os.fsync sending SIGTERM to the process at the fsync of a file whose
#: name holds NEEDLE: the signal arrives while dpriv writes that file (its temp file complete).
_SIGTERM_AT_WRITE = """
import os, signal, sys
real = os.fsync
def fsync(fd):
    if sys.argv[1] in os.readlink(f"/proc/self/fd/{fd}"):
        os.kill(os.getpid(), signal.SIGTERM)
    real(fd)
os.fsync = fsync
sys.argv = ["dpriv", *sys.argv[2:]]
from dpriv.__main__ import main
main()
"""


def _sigterm_at_write(needle: str, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", _SIGTERM_AT_WRITE, needle, *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow
def test_sigterm_while_anonymize_writes_leaves_nothing_and_exits_143(tmp_path):
    random_view(60).to_csv(tmp_path / "v.csv", index=False)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    res = _sigterm_at_write("o.csv", "anonymize", tmp_path / "v.csv", "--out", out_dir / "o.csv", *QI, *LOOSE)
    assert res.returncode == 143, res.stderr
    assert res.stderr.splitlines()[-1] == "terminated (SIGTERM): nothing was written"
    assert "Traceback" not in res.stderr
    assert sorted(p.name for p in out_dir.iterdir()) in ([], [".dpriv-outputs"])
    assert not (out_dir / "o.csv").exists()


@pytest.mark.slow
def test_sigterm_while_release_writes_keeps_the_ledger_at_its_last_commit(tmp_path):
    mh = medical_history(n_views=2, view_size=60, seed=0)
    policy = write_history(
        tmp_path, mh, policy_extra={"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}}
    )
    first = tmp_path / "h1.parquet"
    mh.history[mh.history["view"] == 1].to_parquet(first, index=False)
    led = tmp_path / "L"
    assert (
        CliRunner()
        .invoke(app, ["release", str(first), "--ledger", str(led), "--policy", str(policy)])
        .exit_code
        == 0
    )
    manifest = (led / "manifest.json").read_bytes()
    res = _sigterm_at_write("view.parquet", "release", tmp_path / "history.parquet", "--ledger", led)
    assert res.returncode == 143, res.stderr
    assert res.stderr.splitlines()[-1] == (
        "terminated (SIGTERM): the ledger stays at its last committed release, release 1; a release "
        "not committed by then is dropped"
    )
    assert (led / "manifest.json").read_bytes() == manifest
    assert [r["index"] for r in Ledger(led).committed()] == [1]
    assert json.loads(manifest)["releases"][-1]["index"] == 1
    assert not (led / "releases" / "2").exists()
    assert not [p for p in led.rglob("*") if p.name.endswith(".dpriv-tmp")]


def _anonymize_interrupted(tmp_path) -> None:
    """``dpriv anonymize`` of a 60-row view into ``o.csv``, interrupted: exit 130, its line."""
    random_view(60).to_csv(tmp_path / "v.csv", index=False)
    args = ["anonymize", tmp_path / "v.csv", "--out", tmp_path / "o.csv", *QI, *LOOSE, "--no-cluster"]
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exit_code == 130, res.output
    assert res.output.splitlines()[-1] == "interrupted (Ctrl-C): nothing was written"


def test_ctrl_c_in_anonymize_says_nothing_was_written(tmp_path, monkeypatch):
    import dpriv.release

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(dpriv.release, "anonymize", interrupted)
    _anonymize_interrupted(tmp_path)
    assert not (tmp_path / "o.csv").exists()


def test_ctrl_c_between_anonymize_files_removes_those_it_wrote(tmp_path, monkeypatch):
    """Interrupted after the released view, before its metrics: the view it wrote is removed."""
    import dpriv.metrics.record

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(dpriv.metrics.record, "write_record", interrupted)
    _anonymize_interrupted(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) in (["v.csv"], [".dpriv-outputs", "v.csv"])


def _anonymize(tmp_path, *extra: str):
    """``dpriv anonymize`` of a 60-row view into ``o.csv`` (the view written once)."""
    if not (tmp_path / "v.csv").exists():
        random_view(60).to_csv(tmp_path / "v.csv", index=False)
    args = ["anonymize", tmp_path / "v.csv", "--out", tmp_path / "o.csv", *QI, *LOOSE, "--no-cluster", *extra]
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize(
    "kind, code, how", [("ctrl-c", 130, "interrupted (Ctrl-C)"), ("term", 143, "terminated (SIGTERM)")]
)
def test_an_anonymize_interrupted_after_its_files_says_where_they_are(tmp_path, monkeypatch, kind, code, how):
    """Interrupted while its summary was printed, anonymize said "nothing was written" though its
    view and metrics were there (and rightly kept): the line now names them."""
    import dpriv.cli.commands
    from dpriv.cli.interrupts import Terminated

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt if kind == "ctrl-c" else Terminated

    monkeypatch.setattr(dpriv.cli.commands, "print_summary", interrupted)
    res = _anonymize(tmp_path)
    assert res.exit_code == code, res.output
    out, metrics = tmp_path / "o.csv", tmp_path / "o.csv.metrics.json"
    assert res.output.splitlines()[-1] == f"{how}: the released view was written to {out} (with {metrics})"
    assert len(pd.read_csv(out)) > 0 and json.loads(metrics.read_text())["n_groups"] > 0


def test_an_anonymize_interrupted_after_replacing_its_view_names_it(tmp_path, monkeypatch):
    """With --force, interrupted after the new view replaced the old one, before its metrics:
    the old view is gone, so "nothing was written" was untrue; the line names the file replaced
    and the old metrics file stays as it was."""
    import dpriv.metrics.record

    assert _anonymize(tmp_path).exit_code == 0
    out, metrics = tmp_path / "o.csv", tmp_path / "o.csv.metrics.json"
    old_view, old_metrics = out.stat().st_ino, metrics.read_bytes()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(dpriv.metrics.record, "write_record", interrupted)
    res = _anonymize(tmp_path, "--force")
    assert res.exit_code == 130, res.output
    assert res.output.splitlines()[-1] == (
        f"interrupted (Ctrl-C): {out} was already replaced (--force), the other files not: run the "
        "command again with --force to write them all"
    )
    assert out.stat().st_ino != old_view and metrics.read_bytes() == old_metrics  # a new file there
