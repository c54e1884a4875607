"""A distributed client whose cluster has no worker (the notebook drill: Jupyter's Interrupt
ended the workers of the notebook's LocalCluster; the next release waited ~30 s and ended with
distributed's ``TimeoutError: No valid workers found`` from a scatter; a compute without a
scatter waits for ever). A release on Dask now asks for a worker first and raises
:class:`dpriv.errors.ClusterError` (the CLI: exit 3) before writing anything."""

from __future__ import annotations

import time

import dask.dataframe as dd
import pytest
import typer
from distributed import Client, LocalCluster
from loose_history import write_loose
from typer.testing import CliRunner

import dpriv.release
import dpriv.workers
from dpriv.cli.common import Debug, command
from dpriv.errors import ClusterError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


@pytest.fixture(scope="module")
def no_workers():
    with (
        LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("nw")
    mh = write_loose(root, n_views=2, view_size=200).mh
    return mh.history, ReleasePolicy.from_toml(root / "policy.toml")


@pytest.mark.parametrize("as_dask", [False, True], ids=["pandas-on-dask-path", "dask-history"])
def test_a_release_on_a_cluster_without_workers_fails_fast_and_writes_nothing(
    no_workers, small, tmp_path, monkeypatch, as_dask
):
    history, policy = small
    monkeypatch.setattr(dpriv.workers, "WAIT_SECONDS", 0.5)
    monkeypatch.setattr(dpriv.release, "SMALL_VIEW_ROWS", 0)  # the Dask path for these views
    data = dd.from_pandas(history, npartitions=2) if as_dask else history
    start = time.perf_counter()
    with pytest.raises(ClusterError) as caught:
        release_history(data, policy, tmp_path / "L")
    assert time.perf_counter() - start < 20
    said = str(caught.value)
    what = "the release" if as_dask else "release 1"
    assert said.startswith(f"{what} needs a Dask worker, and the cluster of the current client (")
    assert "has none (none joined in 0.5 s" in said and "run the same release again" in said
    address = no_workers.scheduler.address  # the command to start one (a fresh user's drill, s40, 9)
    assert f"start a worker (dask worker {address}, on a machine that reaches the scheduler;" in said
    assert not (tmp_path / "L").exists()


def test_a_cluster_without_workers_is_exit_3_on_the_command_line(monkeypatch):
    """The CLI maps ClusterError like a lost worker: exit 3, its message as is, one line."""
    app = typer.Typer()

    @app.command()
    @command
    def anonymize(debug: Debug = False) -> None:
        raise ClusterError("release 2 needs a Dask worker, and the cluster ... has none")

    res = CliRunner().invoke(app, [])
    assert res.exit_code == 3, res.output
    assert res.stderr == "error: release 2 needs a Dask worker, and the cluster ... has none\n"
