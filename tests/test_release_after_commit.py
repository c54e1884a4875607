"""A Dask cluster lost just after a commit of ``dpriv release`` (the manifest renamed into
place, the release committed): the command said "lost its scheduler during release 4 ...
resume at release 4" and exit 3 after the last view (3) was committed, without release 3's
row or the closing ``ledger:`` line. Now the committed releases get their rows (read from
their metrics.json), and a loss after the last release to make is a warning with exit 0, as
``dpriv status`` confirms; a loss with views left stays exit 3, resuming where the ledger is.
"""

from __future__ import annotations

import pytest
from loose_history import release, write_loose
from test_cluster_failures import _connection_lost, _files
from typer.testing import CliRunner

import dpriv.ledger
from dpriv.cli import app
from dpriv.errors import InputError
from dpriv.ledger import Ledger
from dpriv.release import release_history


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return write_loose(tmp_path_factory.mktemp("hist"), n_views=3, view_size=100).folder


@pytest.fixture(scope="module")
def reference(history, tmp_path_factory):
    """An uninterrupted run: its ledger and its table's rows without the seconds column."""
    ledger = tmp_path_factory.mktemp("ref") / "L"
    res = release(history, ledger)
    assert res.exit_code == 0, res.output
    return ledger, _rows(res.stdout)


def _rows(stdout: str) -> dict[int, list[str]]:
    """The release table's rows by release, the seconds (last cell) left out."""
    cells = [line.split() for line in stdout.splitlines()]
    return {int(c[0]): c[1:-1] for c in cells if c and c[0].isdigit()}


def _lost_after_commit(monkeypatch, at: int) -> None:
    """The scheduler lost once release ``at`` is listed in the manifest (the commit point)."""
    real = Ledger._committed

    def committed_then_lost(self, index):
        real(self, index)
        if index == at:
            raise _connection_lost()

    monkeypatch.setattr(dpriv.ledger.Ledger, "_committed", committed_then_lost)


def test_a_loss_after_the_last_commit_is_a_warning_with_every_row_and_exit_0(
    history, reference, tmp_path, monkeypatch
):
    ref_ledger, ref_rows = reference
    _lost_after_commit(monkeypatch, 3)
    ledger = tmp_path / "L"
    res = release(history, ledger)
    assert res.exit_code == 0, res.output
    assert _rows(res.stdout) == ref_rows  # release 3's row too, as the uninterrupted run printed it
    assert f"ledger: {ledger} (releases/<i>/view.parquet are public" in res.stdout
    assert (
        "warning: the Dask cluster lost its scheduler after release 3 was committed: the connection "
        f"to the scheduler was lost (Dask: 'scheduler-connection-lost'). Every release of this run is "
        f"committed: the ledger {ledger} holds releases 1..3 (dpriv status {ledger})"
    ) in res.stderr
    assert "error" not in res.stderr and "release 4" not in res.stderr
    monkeypatch.undo()
    status = CliRunner().invoke(app, ["status", str(ledger)])
    assert status.exit_code == 0 and "3 releases committed (1..3)" in status.stdout, status.output
    assert "pending: none" in status.stdout
    assert _files(ledger) == _files(ref_ledger)


def test_a_loss_after_a_commit_with_views_left_prints_its_row_and_resumes(
    history, reference, tmp_path, monkeypatch
):
    ref_ledger, ref_rows = reference
    _lost_after_commit(monkeypatch, 2)
    ledger = tmp_path / "L"
    res = release(history, ledger)
    assert res.exit_code == 3, res.output
    assert _rows(res.stdout) == {1: ref_rows[1], 2: ref_rows[2]}  # release 2 was committed: said
    assert (
        f"Nothing of release 3 was committed; the ledger {ledger} holds releases 1..2: run the same "
        "command again to resume at release 3." in res.stderr
    ), res.stderr
    assert "ledger: " not in res.stdout
    monkeypatch.undo()
    resumed = release(history, ledger)
    assert resumed.exit_code == 0, resumed.output
    assert _rows(resumed.stdout) == {3: ref_rows[3]}
    assert _files(ledger) == _files(ref_ledger)


def test_on_start_gets_the_views_left_torelease(history, reference, tmp_path):
    import pandas as pd

    from dpriv.policy import ReleasePolicy

    ref_ledger, _ = reference
    frame = pd.read_parquet(history / "history.parquet")
    policy = Ledger(ref_ledger).policy()
    seen: list[list[int]] = []
    release_history(frame[frame["view"] <= 2], policy, tmp_path / "L", on_start=seen.append)
    release_history(frame, policy, tmp_path / "L", on_start=seen.append)
    release_history(frame, policy, tmp_path / "L", on_start=seen.append)
    assert seen == [[1, 2], [3], []]
    with pytest.raises(InputError, match=r"on_start must be a function of \(indices\) or None, not 3"):
        release_history(frame, ReleasePolicy.from_dict(policy.model_dump()), tmp_path / "M", on_start=3)
    assert not (tmp_path / "M").exists()
