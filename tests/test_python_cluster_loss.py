"""A Dask cluster lost under ``release_history`` in Python (session 42 drill, user A): the call
raised Dask's own ``FuturesCancelledError`` whether or not the loss came after the commit of the
last release to make, where ``dpriv release`` warns and exits 0. Now, as the command says it: a
loss after the last commit returns the ledger with a UserWarning naming the releases it holds; a
loss with views left raises ``dpriv.errors.ClusterError`` naming the release being made and the
one the ledger stays at; running the call again resumes with the bytes of an uninterrupted run.
(``dpriv release`` itself: tests/test_release_after_commit.py, unchanged.)
"""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
from loose_history import write_loose
from test_cluster_failures import _connection_lost, _files, _forgotten

import dpriv.ledger
from dpriv.cluster_loss import Loss
from dpriv.errors import ClusterError, ClusterLossError, ClusterLossWarning
from dpriv.ledger import Ledger
from dpriv.release import release_history


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The history (pandas, 3 views of 100) and the policy of its ledger."""
    folder = write_loose(tmp_path_factory.mktemp("hist"), n_views=3, view_size=100).folder
    frame = pd.read_parquet(folder / "history.parquet")
    reference = tmp_path_factory.mktemp("ref") / "L"
    from dpriv.policy import ReleasePolicy

    policy = ReleasePolicy.from_toml(folder / "policy.toml")
    release_history(frame, policy, reference)
    return frame, policy, reference


def _lost_after_commit(monkeypatch, at: int, exc) -> None:
    """``exc`` raised once release ``at`` is listed in the manifest (the commit point)."""
    real = Ledger._committed

    def committed_then_lost(self, index):
        real(self, index)
        if index == at:
            raise exc

    monkeypatch.setattr(dpriv.ledger.Ledger, "_committed", committed_then_lost)


def test_a_loss_after_the_last_commit_returns_the_ledger_with_a_warning(inputs, tmp_path, monkeypatch):
    frame, policy, reference = inputs
    _lost_after_commit(monkeypatch, 3, _connection_lost())
    seen: list[list[int]] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ledger = release_history(frame, policy, tmp_path / "L", on_start=seen.append)
    assert seen == [[1, 2, 3]]  # the caller's own on_start, called as before
    said = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert (
        "the Dask cluster lost its scheduler after release 3 was committed: the connection to the "
        "scheduler was lost (Dask: 'scheduler-connection-lost'). Every release of this call is "
        f"committed: the ledger {tmp_path / 'L'} holds releases 1..3"
    ) in said, said
    assert caught[0].filename == __file__  # the user's line, not dpriv's
    said_loss = caught[0].message  # what dpriv release reads to word it itself
    assert isinstance(said_loss, ClusterLossWarning) and said_loss.last == 3
    assert said_loss.loss == Loss("its scheduler", "the connection to the scheduler was lost (Dask: "
                                  "'scheduler-connection-lost')")  # fmt: skip
    assert isinstance(ledger, Ledger) and ledger.last_index() == 3
    assert _files(tmp_path / "L") == _files(reference)


def test_a_loss_with_views_left_raises_cluster_error_and_the_next_call_resumes(inputs, tmp_path, monkeypatch):
    frame, policy, reference = inputs
    _lost_after_commit(monkeypatch, 2, _forgotten())
    with pytest.raises(ClusterError) as err:
        release_history(frame, policy, tmp_path / "L")
    assert str(err.value) == (
        "the Dask cluster lost a worker during release 3: results that a lost worker held are gone "
        f"(Dask: 'already forgotten'). Nothing of release 3 was committed; the ledger {tmp_path / 'L'} "
        "holds releases 1..2: run release_history again to resume at release 3 (a cluster that loses "
        "workers often: read the workers' logs)"
    )
    assert type(err.value.__cause__).__name__ == "FuturesCancelledError"  # Dask's, kept as the cause
    assert isinstance(err.value, ClusterLossError) and err.value.last == 2
    gone = "results that a lost worker held are gone (Dask: 'already forgotten')"
    assert err.value.loss == Loss("a worker", gone)
    assert Ledger(tmp_path / "L").last_index() == 2
    monkeypatch.undo()
    assert release_history(frame, policy, tmp_path / "L").last_index() == 3
    assert _files(tmp_path / "L") == _files(reference)


def test_another_failure_after_the_last_commit_is_not_taken_for_a_loss(inputs, tmp_path, monkeypatch):
    """A disk error (an OSError of dpriv's own write) is the user's: it passes as it is."""
    frame, policy, _ = inputs
    _lost_after_commit(monkeypatch, 3, PermissionError("[Errno 13] Permission denied: 'x'"))
    with pytest.raises(PermissionError):
        release_history(frame, policy, tmp_path / "L")
