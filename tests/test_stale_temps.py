"""An operator's drill (s36, F6): ``dpriv report`` killed while writing its page left
``.weekly.html.<8>.dpriv-tmp`` in the user's folder, and the next report said nothing of it.
A SIGTERM or Ctrl-C there removes it (the writer's clean-up: checked below); only a SIGKILL (or
a crash) leaves it, and dpriv never deletes a file the same command did not create, so the
next write of the same output names it (dpriv/stale_temps.py)."""

import glob
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history

ROOT = Path(__file__).resolve().parents[1]
LOOSE = {"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}}

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # as the command line has it


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("stale")
    policy = write_history(tmp, medical_history(n_views=2, view_size=60, seed=0), policy_extra=LOOSE)
    led = tmp / "L"
    args = ["release", str(tmp / "history.parquet"), "--ledger", str(led), "--policy", str(policy)]
    assert CliRunner().invoke(app, args).exit_code == 0
    return led


def test_the_next_report_names_a_killed_reports_temp_file_and_leaves_it(ledger, tmp_path):
    out = tmp_path / "rk" / "weekly.html"
    out.parent.mkdir()
    stale = out.parent / ".weekly.html.zj18oxg5.dpriv-tmp"  # as a SIGKILLed report leaves it
    stale.write_bytes(b"<html>half a page")
    others = {
        out.parent / ".weekly.html.notes": b"mine",  # a dotfile of the user's: not a temp file
        out.parent / ".monthly.html.ab12cd34.dpriv-tmp": b"another output's",  # not of this output
    }
    for path, data in others.items():
        path.write_bytes(data)
    res = CliRunner().invoke(app, ["report", str(ledger), "--out", str(out)])
    assert res.exit_code == 0, res.output
    warned = [line for line in res.output.splitlines() if line.startswith("warning:")]
    assert warned == [
        f"warning: {stale}: left by an earlier write of {out} that was killed (SIGKILL, a crash or a "
        "power cut; any other ending removes its temp file); dpriv deletes only files the same command "
        f"created: delete it yourself, unless another dpriv command is writing {out} at this moment"
    ]
    assert stale.read_bytes() == b"<html>half a page" and out.is_file()  # named, never removed
    assert all(path.read_bytes() == data for path, data in others.items())
    stale.unlink()  # the user deletes it: the next report says nothing
    res = CliRunner().invoke(app, ["report", str(ledger), "--out", str(out), "--force"])
    assert res.exit_code == 0 and "warning:" not in res.output, res.output


SLOW_WRITE = textwrap.dedent(
    """
    import os, sys, time
    real = os.fsync
    os.fsync = lambda fd: (time.sleep(30), real(fd))  # the page's temp file stays open a while
    sys.argv = ["dpriv", "report", sys.argv[1], "--out", sys.argv[2]]
    from dpriv.__main__ import main
    main()
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_report_stopped_while_writing_removes_its_temp_file(ledger, tmp_path, sig):
    out = tmp_path / "weekly.html"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", SLOW_WRITE, str(ledger), str(out)]
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not glob.glob(str(tmp_path / ".weekly.html.*.dpriv-tmp")) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert sorted(os.listdir(tmp_path)) == [], err  # no temp file, no page
