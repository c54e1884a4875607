"""An interrupt at a ledger's commit point (s36 drill, F1).

SIGTERM or Ctrl-C that arrived just after the manifest's rename (listing release i) raised its
exception in the commit's last lines: the clean-up of a failed commit then removed
``releases/i/`` and ``state/i/``, and every later run refused the damaged ledger. The commit
point now runs with the interrupt deferred to its end, the clean-up keeps the files of a release
the manifest lists, and the command's line names release i as the ledger's last.
"""

import json
import os
import signal
import threading
from pathlib import Path
from typing import NamedTuple

import pytest
from typer.testing import CliRunner

import dpriv.ledger as ledger_mod
from dpriv import pending_interrupt
from dpriv.cli import app
from dpriv.cli.interrupts import Terminated
from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger
from dpriv.ledger_written import WRITTEN

LOOSE = {"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}}


def _release(history: Path, policy: Path, led: Path):
    return CliRunner().invoke(app, ["release", str(history), "--ledger", str(led), "--policy", str(policy)])


def _data_files(led: Path) -> dict[str, bytes]:
    """The released views and states (metrics.json holds timings: not compared)."""
    return {
        p.relative_to(led).as_posix(): p.read_bytes()
        for p in sorted(led.rglob("*.parquet"))
        if p.parts[len(led.parts)] in ("releases", "state")
    }


def _entries(led: Path) -> list[dict]:
    drop = ("metrics_sha256",)  # of the timings
    releases = json.loads((led / "manifest.json").read_text())["releases"]
    return [{k: v for k, v in r.items() if k not in drop} for r in releases]


def _raise_terminated() -> None:
    raise Terminated()


def _send_sigterm() -> None:  # the CLI's handler raises Terminated where it runs
    os.kill(os.getpid(), signal.SIGTERM)


class Whole(NamedTuple):
    """A history of 3 views x 60, its policy file and its ledger released without interrupt."""

    history: Path
    policy: Path
    whole: Path


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Whole:
    """One uninterrupted release for every case below (they only read it)."""
    root = tmp_path_factory.mktemp("whole")
    policy = write_history(root, medical_history(n_views=3, view_size=60, seed=0), policy_extra=LOOSE)
    ref = Whole(root / "history.parquet", policy, root / "whole")
    assert _release(ref.history, ref.policy, ref.whole).exit_code == 0  # the same history, never interrupted
    return ref


@pytest.mark.parametrize("index", [1, 2])  # the first commit also writes policy.json
@pytest.mark.parametrize("interrupt", [_raise_terminated, _send_sigterm], ids=["raised", "signal"])
def test_an_interrupt_just_after_the_manifests_rename_keeps_the_committed_release(
    tmp_path, monkeypatch, index, interrupt, whole
):
    history, policy, whole = whole
    led = tmp_path / "L"
    write = ledger_mod.atomic_write

    def renamed_then_interrupted(path, data, *args, **kwargs):
        write(path, data, *args, **kwargs)  # the rename took effect
        listed = [r["index"] for r in json.loads(data)["releases"]] if path.name == "manifest.json" else []
        if listed[-1:] == [index]:
            interrupt()

    monkeypatch.setattr(ledger_mod, "atomic_write", renamed_then_interrupted)
    res = _release(history, policy, led)
    assert res.exit_code == 143, res.output
    assert res.output.splitlines()[-1] == (
        f"terminated (SIGTERM): the ledger stays at its last committed release, release {index}; "
        "a release not committed by then is dropped"
    )
    # release `index` is whole: its files, its policy, no record of an uncommitted write
    ledger = Ledger(led)
    assert ledger.last_index() == index
    assert all((led / "releases" / str(i) / name).is_file() for i in (1, index) for name in ("view.parquet",))
    assert (led / "releases" / str(index) / "metrics.json").is_file() and ledger.state_files(index)
    assert not (led / WRITTEN).exists() and (led / "policy.json").is_file()
    assert len(ledger.read_view(index)) > 0 and ledger.read_metrics(index).n_released > 0
    monkeypatch.undo()
    res = _release(history, policy, led)  # resumes after it
    assert res.exit_code == 0, res.output
    assert _data_files(led) == _data_files(whole) and len(_data_files(led)) == 6
    assert _entries(led) == _entries(whole) and [r["index"] for r in _entries(led)] == [1, 2, 3]


def test_a_failure_before_the_manifests_rename_still_removes_the_release(tmp_path, monkeypatch):
    """The clean-up asks the manifest: a commit whose manifest was not renamed leaves nothing."""
    policy = write_history(tmp_path, medical_history(n_views=2, view_size=60, seed=0), policy_extra=LOOSE)
    led = tmp_path / "L"
    write = ledger_mod.atomic_write

    def interrupted_before(path, data, *args, **kwargs):
        if path.name == "manifest.json" and (led / "state" / "2").is_dir():  # release 2's commit point
            raise Terminated()
        write(path, data, *args, **kwargs)

    monkeypatch.setattr(ledger_mod, "atomic_write", interrupted_before)
    res = _release(tmp_path / "history.parquet", policy, led)
    assert res.exit_code == 143, res.output
    assert Ledger(led).last_index() == 1 and "release 1;" in res.output.splitlines()[-1]
    assert not (led / "releases" / "2").exists() and not (led / "state" / "2").exists()


def test_deferred_raises_a_signal_of_the_block_once_it_ends():
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, as in a script
    done = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with pending_interrupt.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                done.append("after the signal")  # the block runs whole
        assert done == ["after the signal"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back
        with pending_interrupt.deferred():  # no signal: nothing raised
            done.append("quiet")
        assert done[-1] == "quiet"
    finally:
        signal.signal(signal.SIGINT, before)


def test_deferred_in_another_thread_runs_the_block_as_it_is():
    ran, errors = [], []

    def work():
        try:
            with pending_interrupt.deferred():
                ran.append(signal.getsignal(signal.SIGINT))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert errors == [] and ran == [signal.getsignal(signal.SIGINT)]


#: ``dpriv ARGS`` that sends itself SIGTERM just after the rename of a manifest listing release 2
#: (os.replace returned: the window the drill hit by polling for the files).
_SIGTERM_AFTER_COMMIT = """
import json, os, signal, sys
real = os.replace
def replace(src, dst):
    real(src, dst)
    if str(dst).endswith("manifest.json") and len(json.load(open(dst))["releases"]) == 2:
        os.kill(os.getpid(), signal.SIGTERM)
os.replace = replace
sys.argv = ["dpriv", *sys.argv[1:]]
from dpriv.__main__ import main
main()
"""


@pytest.mark.slow
def test_a_real_sigterm_just_after_the_commit_of_release_2_leaves_it_committed(tmp_path):
    import subprocess
    import sys

    import dpriv

    policy = write_history(tmp_path, medical_history(n_views=3, view_size=60, seed=0), policy_extra=LOOSE)
    led = tmp_path / "L"
    args = ["release", str(tmp_path / "history.parquet"), "--ledger", str(led), "--policy", str(policy)]
    env = {**os.environ, "PYTHONPATH": str(Path(dpriv.__file__).resolve().parents[1])}
    res = subprocess.run(
        [sys.executable, "-c", _SIGTERM_AFTER_COMMIT, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 143, res.stderr
    assert res.stderr.splitlines()[-1].endswith(
        "its last committed release, release 2; a release not committed by then is dropped"
    )
    assert Ledger(led).last_index() == 2 and len(Ledger(led).read_view(2)) > 0
    assert Ledger(led).state_files(2) and not (led / WRITTEN).exists()
    res = _release(tmp_path / "history.parquet", policy, led)
    assert res.exit_code == 0, res.output
    assert Ledger(led).last_index() == 3
