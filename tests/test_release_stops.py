"""A release stopped half-way from Python says the release its ledger stays at (dpriv/release_stops.py).

A fresh user's drill (session 39): a ``Client`` closed during ``release_history`` ended it with
Dask's ``FutureCancelledError: ... cancelled for reason: unknown`` (M2), a notebook's Interrupt
with a bare ``KeyboardInterrupt`` (L7); neither said which release the ledger holds. Now the
first is a ClusterError naming the release being made and the ledger's last one, the second
the same KeyboardInterrupt with a note saying so.
"""

from __future__ import annotations

import pandas as pd
import pytest
from distributed import Client

import dpriv.release as release_module
from dpriv.datasets import medical_history, write_history
from dpriv.errors import ClusterError
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

LOOSE = {"privacy": {"k": 5, "t": 0.5, "j": 1.5, "max_suppression": 1.0}}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("stops")
    write_history(out, medical_history(n_views=3, view_size=60, seed=3), policy_extra=LOOSE)
    return pd.read_parquet(out / "history.parquet"), ReleasePolicy.from_toml(out / "policy.toml")


@pytest.mark.slow
def test_a_client_closed_after_release_1_is_a_cluster_error_naming_release_2(
    data, local_cluster, tmp_path, monkeypatch
):
    import dask.dataframe as dd

    hist, policy = data
    monkeypatch.setattr(release_module, "SMALL_VIEW_ROWS", 0)  # every view on Dask
    client = Client(local_cluster)

    def close(index, metrics):
        if index == 1:
            client.close()

    with pytest.raises(ClusterError) as exc:
        release_history(dd.from_pandas(hist, npartitions=2), policy, tmp_path / "L", on_release=close)
    said = str(exc.value)
    assert "client was closed during release 2" in said, said
    assert "holds release 1" in said and "resume at release 2" in said, said
    assert Ledger(tmp_path / "L").last_index() == 1


def test_an_interrupt_after_release_2_notes_that_the_ledger_holds_releases_1_2(data, tmp_path):
    hist, policy = data

    def interrupt(index, metrics):
        if index == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as exc:
        release_history(hist, policy, tmp_path / "L", on_release=interrupt)
    notes = " ".join(getattr(exc.value, "__notes__", []))
    assert "holds releases 1..2" in notes and "resume at release 3" in notes, notes
    assert Ledger(tmp_path / "L").last_index() == 2
