"""The line of an interrupted command that writes a ledger names that ledger's last committed
release: ``dpriv release`` (its --ledger) and ``dpriv demo`` (OUT/ledger) say so to
:func:`dpriv.cli.common.command` (``ledger=``), which no longer picks them out by name; a Ctrl-C
inside a compiled kernel (a SystemError caused by the KeyboardInterrupt) says the same line."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dpriv.ledger as ledger_mod
from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger

LOOSE = {"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}}
NOT_NAMED = "the release being written is dropped, the ledger stays at its last committed release"


def _stays_at(index: int) -> str:
    return (
        f"the ledger stays at its last committed release, release {index}; a release not committed "
        "by then is dropped"
    )


def _interrupt_after_commit(monkeypatch, index: int, raiser) -> None:
    """``raiser()`` right after the manifest listing release ``index`` is renamed into place."""
    write = ledger_mod.atomic_write

    def written_then_interrupted(path, data, *args, **kwargs):
        write(path, data, *args, **kwargs)
        if path.name == "manifest.json" and [r["index"] for r in json.loads(data)["releases"]][-1:] == [
            index
        ]:
            raiser()

    monkeypatch.setattr(ledger_mod, "atomic_write", written_then_interrupted)


def _ctrl_c() -> None:
    raise KeyboardInterrupt


def _ctrl_c_in_a_kernel() -> None:
    """What Ctrl-C inside a numba kernel gives: a SystemError caused by the KeyboardInterrupt."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as exc:
        raise SystemError("CPUDispatcher(<function k>) returned a result with an exception set") from exc


def _demo(out: Path):
    args = ["demo", "--out", str(out), "--views", "2", "--view-size", "60", "--no-cluster"]
    return CliRunner().invoke(app, [*args, "--no-retrospective"])


@pytest.mark.parametrize("raiser", [_ctrl_c, _ctrl_c_in_a_kernel], ids=["ctrl-c", "in-a-kernel"])
def test_an_interrupted_demo_names_the_last_committed_release_of_its_ledger(tmp_path, monkeypatch, raiser):
    _interrupt_after_commit(monkeypatch, 1, raiser)
    res = _demo(tmp_path / "D")
    assert res.exit_code == 130, res.output
    assert res.output.splitlines()[-1] == f"interrupted (Ctrl-C): {_stays_at(1)}"
    assert Ledger(tmp_path / "D" / "ledger").last_index() == 1


def test_a_demo_interrupted_before_its_first_commit_speaks_of_its_ledger(tmp_path, monkeypatch):
    """The new ledger is removed with its first release: the line says that no ledger is left
    (not that it "stays at its last committed release", nor "nothing was written": the demo's
    history stays)."""

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ledger_mod, "write_parquet", interrupted)  # the first view's write
    res = _demo(tmp_path / "D")
    assert res.exit_code == 130, res.output
    led = tmp_path / "D" / "ledger"
    assert res.output.splitlines()[-1] == (
        f"interrupted (Ctrl-C): no ledger is left at {led}: the next run starts it again from release 1"
    )
    assert (tmp_path / "D" / "history.parquet").is_file() and not led.exists()


@pytest.fixture
def history(tmp_path):
    policy = write_history(tmp_path, medical_history(n_views=2, view_size=60, seed=0), policy_extra=LOOSE)
    return tmp_path / "history.parquet", policy


def _release(history, led: Path):
    return CliRunner().invoke(
        app, ["release", str(history[0]), "--ledger", str(led), "--policy", str(history[1])]
    )


def test_a_ctrl_c_in_a_kernel_during_a_release_names_the_last_committed_release(
    history, tmp_path, monkeypatch
):
    _interrupt_after_commit(monkeypatch, 2, _ctrl_c_in_a_kernel)
    res = _release(history, tmp_path / "L")
    assert res.exit_code == 130, res.output
    assert res.output.splitlines()[-1] == f"interrupted (Ctrl-C): {_stays_at(2)}"
    assert "internal error" not in res.output


def test_an_interrupted_release_whose_manifest_cannot_be_read_says_what_stays(history, tmp_path, monkeypatch):
    """The manifest unreadable at the interrupt: the line cannot name a release, it says the rule."""
    write = ledger_mod.atomic_write

    def garbled_then_interrupted(path, data, *args, **kwargs):
        write(path, b"{" if path.name == "manifest.json" and b'"index": 1' in data else data, *args, **kwargs)
        if path.name == "manifest.json" and b'"index": 1' in data:
            raise KeyboardInterrupt

    monkeypatch.setattr(ledger_mod, "atomic_write", garbled_then_interrupted)
    res = _release(history, tmp_path / "L")
    assert res.exit_code == 130, res.output
    assert res.output.splitlines()[-1] == f"interrupted (Ctrl-C): {NOT_NAMED}"
