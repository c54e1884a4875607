"""A damaged manifest met at the moment a release stops (a Dask cluster lost, a client closed,
an interrupt): which release does the ledger stay at? Three readers answered three ways: Python's
``release_history`` took a damaged manifest for none ("holds no release yet"), ``dpriv release``
for what it had printed (exit 3, "run the same command again"), the interrupt line for nothing
said. The same command run again stops at the damaged manifest (exit 2), so the retry that exit
3 asks for cannot succeed: the user has to mend the manifest first. Now one reader
(dpriv/release_stops.py ``holds``): a manifest that cannot be read at a loss or a closed client
is a LedgerError naming both (exit 2), an interrupt stays an interrupt whose note says so.
"""

from __future__ import annotations

import pandas as pd
import pytest
from loose_history import release, write_loose
from test_cluster_failures import _connection_lost, _forgotten

import dpriv.ledger
from dpriv.cli.failures import during_release
from dpriv.cluster_loss import ClusterLost
from dpriv.errors import ClusterError, LedgerError
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

GARBAGE = "{not json"


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return write_loose(tmp_path_factory.mktemp("hist"), n_views=3, view_size=100).folder


def _damaged_then(monkeypatch, at: int, exc: BaseException) -> None:
    """Once release ``at`` is committed, its manifest is overwritten with garbage and ``exc``
    raised (the loss, or the interrupt, meets a damaged manifest)."""
    real = Ledger._committed

    def committed_then_stopped(self, index):
        real(self, index)
        if index == at:
            (self.root / "manifest.json").write_text(GARBAGE)
            raise exc

    monkeypatch.setattr(dpriv.ledger.Ledger, "_committed", committed_then_stopped)


def test_python_a_loss_meeting_a_damaged_manifest_is_a_ledger_error_naming_both(
    history, tmp_path, monkeypatch
):
    frame = pd.read_parquet(history / "history.parquet")
    policy = ReleasePolicy.from_toml(history / "policy.toml")
    _damaged_then(monkeypatch, 2, _forgotten())
    ledger = tmp_path / "L"
    with pytest.raises(LedgerError) as err:
        release_history(frame, policy, ledger)
    said = str(err.value)
    assert said.startswith(
        "the Dask cluster lost a worker: results that a lost worker held are gone (Dask: 'already "
        f"forgotten'), and the ledger's manifest cannot be read now: cannot read {ledger / 'manifest.json'}: "
    ), said
    assert said.endswith("the same command run again would stop at the manifest: mend it first"), said
    assert not isinstance(err.value, ClusterError)  # not "holds no release yet": nobody can tell
    assert (ledger / "manifest.json").read_text() == GARBAGE  # left as it was found


def test_python_an_interrupt_meeting_a_damaged_manifest_stays_an_interrupt(history, tmp_path, monkeypatch):
    frame = pd.read_parquet(history / "history.parquet")
    policy = ReleasePolicy.from_toml(history / "policy.toml")
    _damaged_then(monkeypatch, 1, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt) as err:
        release_history(frame, policy, tmp_path / "L")
    (note,) = err.value.__notes__
    manifest = tmp_path / "L" / "manifest.json"
    assert note.startswith(
        f"dpriv: interrupted; the ledger's manifest cannot be read: cannot read {manifest}"
    ), note


def test_cli_a_loss_meeting_a_damaged_manifest_exits_2_not_3(history, tmp_path, monkeypatch):
    _damaged_then(monkeypatch, 2, _connection_lost())
    ledger = tmp_path / "L"
    res = release(history, ledger)
    assert res.exit_code == 2, res.output
    assert (
        "error: the Dask cluster lost its scheduler: the connection to the scheduler was lost (Dask: "
        f"'scheduler-connection-lost'), and the ledger's manifest cannot be read now: cannot read {ledger}"
    ) in res.stderr, res.stderr
    assert "run the same command again" not in res.stderr and "resume at release" not in res.stderr
    monkeypatch.undo()
    again = release(history, ledger)  # what exit 3 would have asked for: it stops at the manifest
    assert again.exit_code == 2 and f"cannot read {ledger / 'manifest.json'}" in again.stderr, again.output


class _Progress:
    planned = [1, 2, 3]

    def catch_up(self, last: int) -> None:  # pragma: no cover - not reached: the manifest fails first
        raise AssertionError(last)

    def all_committed(self, last: int) -> bool:  # pragma: no cover
        raise AssertionError(last)


def test_cli_a_loss_outside_release_history_meeting_a_damaged_manifest_is_a_ledger_error(tmp_path):
    """Dask's own exception (a history persisted on the cluster), not release_history's."""
    ledger = tmp_path / "L"
    ledger.mkdir()
    (ledger / "manifest.json").write_text('{"releases": [{"index": 2}]}')  # release 1 missing
    with pytest.raises(LedgerError) as err, during_release(ledger, _Progress(), None):
        raise _connection_lost()
    assert str(err.value).startswith(
        "the Dask cluster lost its scheduler during dpriv release: the connection to the scheduler was "
        f"lost (Dask: 'scheduler-connection-lost'), and the ledger's manifest cannot be read now: "
        f"{ledger / 'manifest.json'}: release entry 1 has index 2 (releases are committed in order from 1)"
    ), str(err.value)


class _Nothing:
    """A command that was to make release 1 and printed nothing."""

    def catch_up(self, last: int) -> None:
        assert last == 0

    def all_committed(self, last: int) -> bool:
        return False


def test_no_manifest_yet_is_no_release_and_a_loss_stays_exit_3(tmp_path):
    with pytest.raises(ClusterLost) as err, during_release(tmp_path / "new", _Nothing(), None):
        raise _connection_lost()
    assert "during release 1: " in str(err.value), str(err.value)
    assert "holds no release yet: run the same command again to resume at release 1" in str(err.value)
