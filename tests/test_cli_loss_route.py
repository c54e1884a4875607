"""``dpriv release`` reads a cluster lost inside ``release_history`` from what the call tells any
Python caller (dpriv/cli/failures.py ``during_release``): its ``ClusterLossError`` (views left:
exit 3 in the command's words) or its ``ClusterLossWarning`` (after the last commit: a
``warning:`` line in the command's words, the block ending as it did when Dask's exception
passed through). Before, a context variable made ``release_history`` let Dask's exception pass
for the command: two routes for one event. Hand-made losses, no cluster."""

from __future__ import annotations

import json
import warnings

import pytest

from dpriv import release_stops
from dpriv.cli.failures import during_release
from dpriv.cluster_loss import ClusterLost, Loss
from dpriv.errors import ClusterError, ClusterLossError, ClusterLossWarning

LOSS = Loss("a worker", "results that a lost worker held are gone (Dask: 'already forgotten')")


def _holding(folder, last: int):
    """A ledger folder whose manifest lists releases 1..``last`` (what the loss reads)."""
    ledger = folder / "L"
    ledger.mkdir()
    (ledger / "manifest.json").write_text(
        json.dumps({"releases": [{"index": i} for i in range(1, last + 1)]})
    )
    return ledger


class _Progress:
    """A command that printed releases up to ``printed`` and was to make ``planned``."""

    def __init__(self, printed: int, planned: list[int]) -> None:
        self.printed, self.planned, self.caught_up = printed, planned, []

    def catch_up(self, last: int) -> None:
        self.caught_up.append(last)

    def all_committed(self, last: int) -> bool:
        return all(i <= last for i in self.planned)


def test_the_warning_after_the_last_commit_is_worded_by_the_command(tmp_path, capsys):
    progress = _Progress(3, [1, 2, 3])
    reached = []
    ledger = _holding(tmp_path, 3)
    with during_release(ledger, progress, None):
        release_stops._done(ledger, ClusterLossWarning("release_history's words", LOSS, 3))  # its delivery
        reached.append("after")  # the warning ends the block, as Dask's exception did
    err = capsys.readouterr().err
    assert err == (
        "warning: the Dask cluster lost a worker after release 3 was committed: results that a lost "
        "worker held are gone (Dask: 'already forgotten'). Every release of this run is committed: "
        f"the ledger {tmp_path / 'L'} holds releases 1..3 (dpriv status {tmp_path / 'L'})\n"
    )
    assert reached == [] and progress.caught_up == [3]


def test_the_error_with_views_left_is_worded_by_the_command(tmp_path):
    lost = ClusterLossError("release_history's words", LOSS, 1)
    ledger = _holding(tmp_path, 1)
    with pytest.raises(ClusterLost) as said, during_release(ledger, _Progress(1, [1, 2, 3]), None):
        raise lost
    assert str(said.value).startswith(
        "the Dask cluster lost a worker during release 2: results that a lost worker held are gone "
        f"(Dask: 'already forgotten'). Nothing of release 2 was committed; the ledger {tmp_path / 'L'} "
        "holds release 1: run the same command again to resume at release 2. A cluster that loses "
        "workers often"
    ), str(said.value)
    assert said.value.__cause__ is lost


def test_other_cluster_errors_and_warnings_pass_as_they_are(tmp_path):
    ledger = tmp_path / "L"
    with pytest.raises(ClusterError, match="no worker"), during_release(ledger, _Progress(0, [1]), None):
        raise ClusterError("no worker joined")
    closed = "the Dask client was closed after release 1 was committed"
    with pytest.warns(UserWarning, match=closed), during_release(ledger, _Progress(1, [1]), None):
        warnings.warn(closed, UserWarning, stacklevel=1)


def test_the_block_leaves_the_warnings_filters_alone(tmp_path, recwarn):
    """No process-wide filter while the release runs: the caller's own filters are the ones in
    force, and one that another thread sets meanwhile (a notebook's, Dask's) is still there after
    the block (``catch_warnings`` restoring its copy at the end dropped it)."""
    import threading

    warnings.filterwarnings("ignore", message="the user's own filter")
    before = list(warnings.filters)
    with during_release(_holding(tmp_path, 1), _Progress(1, [1]), None):
        assert warnings.filters == before  # no "error" filter for ClusterLossWarning in front
        other = threading.Thread(
            target=warnings.filterwarnings, args=("ignore",), kwargs={"message": "meanwhile"}
        )
        other.start()
        other.join()
    assert [f[1].pattern for f in warnings.filters[:2] if f[1] is not None] == [
        "meanwhile",
        "the user's own filter",
    ]
    # outside the block (a Python caller): release_history warns it, as ever
    with pytest.warns(ClusterLossWarning, match="the words"):
        release_stops._done(tmp_path / "L", ClusterLossWarning("the words", LOSS, 1))
