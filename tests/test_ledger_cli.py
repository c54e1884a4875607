"""The ledger's refusals through the ``dpriv`` command: their exit status and message."""

from __future__ import annotations

import pytest
from loose_history import release, write_loose
from test_cli import tree
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.ledger import Ledger


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return write_loose(tmp_path_factory.mktemp("gen"), n_views=2, view_size=60).folder


def test_a_ledger_another_command_writes_is_exit_3_retry_later(history, tmp_path):
    """A busy lock was exit 2 ('needs a person'), so a scheduler that retries only on 3 gave up
    on a weekly run that merely overlapped the previous, slow one."""
    led = tmp_path / "led"
    other = Ledger(led, create=True, lock=True)  # another dpriv release, mid-write
    before = tree(led)
    res = release(history, led)
    assert res.exit_code == 3, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(
        f"error: another dpriv command is writing the ledger {led} "
    )
    assert "nothing was written: wait for it to finish, then run this one again" in res.output
    assert "Traceback" not in res.output and tree(led) == before
    other.unlock()  # it ended: the same command now goes through
    res = release(history, led)
    assert res.exit_code == 0, res.output
    assert [r["index"] for r in Ledger(led).committed()] == [1, 2]


def test_demo_force_leaves_a_ledger_a_release_is_writing_where_it_is(tmp_path):
    """demo --force moved a running release's ledger aside to ledger.1: the release died
    (FileNotFoundError) and demo exited 0."""
    from dpriv.ledger_files import drop_lock, hold_lock

    out = tmp_path / "dmf"
    led = out / "ledger"
    Ledger(led, create=True)
    fd = hold_lock(led)  # another dpriv release, mid-write
    before = tree(out)
    args = ["demo", "--out", str(out), "--force", "--no-retrospective", "--views", "2", "--view-size", "60"]
    res = CliRunner().invoke(app, args)
    drop_lock(fd)
    assert res.exit_code == 3, res.output
    assert f"error: another dpriv command is writing the ledger {led} " in res.output
    assert tree(out) == before and not (out / "ledger.1").exists()  # nothing moved, nothing generated
