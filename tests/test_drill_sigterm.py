"""An operator's drill of ``dpriv release --cluster`` under ``timeout -s TERM`` (s33).

1 run in 9 printed "Exception ignored in: <bound method GCDiagnosis._gc_callback ...>
dpriv.cli.interrupts.Terminated", committed every release and exited 0: the SIGTERM handler's
exception was raised inside Dask's gc callback, where Python discards it. Each interrupt is now
recorded and raised again at the next safe point (a step's end, a file's rename: the manifest,
the commit, last), so nothing is committed after a SIGTERM. The other runs printed Dask's
``distributed.scheduler - ERROR`` lines and asyncio's "Future exception was never retrieved"
tracebacks before dpriv's line (the workers, in the process group ``timeout`` signals, died
first): the shutdown after an interrupt is now quiet unless --debug.
"""

import gc
import json
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dpriv
import dpriv.release
from dpriv.cli import app
from dpriv.cli.interrupts import Terminated, sigterm_interrupts
from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger
from dpriv.steps import Steps

ROOT = Path(dpriv.__file__).resolve().parents[1]  # the dpriv under test
LOOSE = {"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}}
STAYS = (  # the ledger holds release 1: release 2 was being written
    "terminated (SIGTERM): the ledger stays at its last committed release, release 1; a release not "
    "committed by then is dropped"
)


def _signal_in_gc_callback(signum: int = signal.SIGTERM) -> None:
    """``signum`` to this process from inside a gc callback: os.kill runs the handler at once, in
    the callback, and the gc reports its exception as unraisable and discards it."""

    def callback(phase: str, info: dict) -> None:
        gc.callbacks.remove(callback)
        os.kill(os.getpid(), signum)

    gc.callbacks.append(callback)
    gc.collect()


@pytest.mark.parametrize(
    ("signum", "kind"), [(signal.SIGTERM, Terminated), (signal.SIGINT, KeyboardInterrupt)]
)
def test_a_signal_discarded_by_a_gc_callback_is_raised_at_the_next_step(capsys, signum, kind):
    # Python's own Ctrl-C handler, as in a command (an earlier test, or Dask, may have set another:
    # dpriv then leaves SIGINT to it)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _discarded_signal_raised_at_next_step(capsys, signum, kind)
    finally:
        signal.signal(signal.SIGINT, before)


def _discarded_signal_raised_at_next_step(capsys, signum, kind) -> None:
    dask_log = logging.getLogger("distributed.scheduler")
    with sigterm_interrupts():
        _signal_in_gc_callback(signum)  # returns: the exception is gone
        assert not dask_log.isEnabledFor(logging.CRITICAL)  # the shutdown that follows is quiet
        steps = Steps()
        with pytest.raises(kind) as raised:
            steps.lap("grouping")
        steps.lap("pk")  # raised once: the clean-up after it runs whole
    assert type(raised.value) is kind
    assert "grouping" not in steps.seconds
    assert capsys.readouterr().err == ""  # not "Exception ignored in ... Terminated"
    assert dask_log.isEnabledFor(logging.ERROR)  # after the command, as it was


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # --debug shows it
def test_with_debug_the_shutdown_after_a_signal_logs_as_usual():
    with sigterm_interrupts(debug=True):
        _signal_in_gc_callback()
        assert logging.getLogger("distributed.scheduler").isEnabledFor(logging.ERROR)
        with pytest.raises(Terminated):
            Steps().lap("grouping")


def test_a_signal_caught_inside_the_command_still_ends_it():
    """Swallowed by code that catches it (no safe point after): raised as the command ends."""
    with pytest.raises(Terminated), sigterm_interrupts():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        except KeyboardInterrupt:
            pass


def _two_views(tmp_path: Path) -> tuple[Path, Path]:
    """A two-view history (policy beside it) and its ledger holding release 1."""
    mh = medical_history(n_views=2, view_size=60, seed=0)
    policy = write_history(tmp_path, mh, policy_extra=LOOSE)
    first = tmp_path / "h1.parquet"
    mh.history[mh.history["view"] == 1].to_parquet(first, index=False)
    led = tmp_path / "L"
    res = CliRunner().invoke(app, ["release", str(first), "--ledger", str(led), "--policy", str(policy)])
    assert res.exit_code == 0, res.output
    return tmp_path / "history.parquet", led


def test_a_sigterm_discarded_after_the_last_step_commits_nothing(tmp_path, monkeypatch):
    """Discarded between release 2's last step and its commit: the manifest's rename raises it."""
    policy = write_history(tmp_path, medical_history(n_views=2, view_size=60, seed=0), policy_extra=LOOSE)
    led, dates, calls = tmp_path / "L", dpriv.release.released_dates, []

    def dates_interrupted_at_2(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            _signal_in_gc_callback()
        return dates(*args, **kwargs)

    monkeypatch.setattr(dpriv.release, "released_dates", dates_interrupted_at_2)
    args = ["release", str(tmp_path / "history.parquet"), "--ledger", str(led), "--policy", str(policy)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 143, res.output
    assert res.output.splitlines()[-1] == STAYS
    assert "Exception ignored" not in res.output and "Traceback" not in res.output
    assert [r["index"] for r in Ledger(led).committed()] == [1]
    assert not (led / "releases" / "2").exists()
    assert not [p for p in led.rglob("*") if p.name.endswith(".dpriv-tmp")]


#: ``dpriv ARGS`` whose os.fsync signals SIGTERM to its whole process group (as ``timeout``
#: does: the local cluster's workers get it too) at the fsync of a file whose path holds NEEDLE.
_SIGTERM_GROUP_AT_WRITE = """
import os, signal, sys
real = os.fsync
def fsync(fd):
    if sys.argv[1] in os.readlink(f"/proc/self/fd/{fd}"):
        os.killpg(0, signal.SIGTERM)
    real(fd)
os.fsync = fsync
sys.argv = ["dpriv", *sys.argv[2:]]
from dpriv.__main__ import main
main()
"""


@pytest.mark.slow
def test_sigterm_to_a_cluster_release_prints_only_dpriv_line(tmp_path):
    history, led = _two_views(tmp_path)
    manifest = (led / "manifest.json").read_bytes()
    cmd = [sys.executable, "-c", _SIGTERM_GROUP_AT_WRITE, "releases/2/.view.parquet"]
    cmd += ["release", str(history), "--ledger", str(led), "--cluster"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # a session of its own: the process group signalled is the command's and its workers'
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, start_new_session=True)
    assert res.returncode == 143, res.stderr
    assert res.stderr.splitlines()[-1] == STAYS
    assert "Traceback" not in res.stderr and "never retrieved" not in res.stderr
    assert "distributed." not in res.stderr  # "... - distributed.scheduler - ERROR - broadcast ... failed"
    assert (led / "manifest.json").read_bytes() == manifest
    assert json.loads(manifest)["releases"][-1]["index"] == 1
