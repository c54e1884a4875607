"""Where Python's ``dpriv.cluster`` runs, as the command line does (s34): ``dask_client()`` with
no address ignored Dask's ``scheduler-address`` config (``DASK_SCHEDULER_ADDRESS``), which every
``dpriv`` command honours (dpriv/scheduler_address.py), and started a LocalCluster; and
``release_place(scheduler=ADDR, cluster=True)`` ran on the scheduler, where ``--scheduler ADDR
--cluster`` is refused."""

import re

import dask
import pandas as pd
import pytest

import dpriv.cluster as cluster_mod
from dpriv.cluster import HistorySize, Placement, release_frame, release_place
from dpriv.policy import ReleasePolicy
from dpriv.scheduler_address import CONFIG

POLICY = ReleasePolicy(id="rid", time="view", qi=["age"], sensitive="s", k=2, t=1.0, j=10.0)
FRAME = pd.DataFrame({"rid": [1, 2], "view": [1, 1], "age": [50, 51], "s": ["a", "b"]})
#: An address where nothing listens: refused at once (connection refused), never waited for.
NOBODY = "tcp://127.0.0.1:1"


class LocalClusterStarted(Exception):
    pass


@pytest.fixture
def no_local_cluster(monkeypatch):
    """Starting a LocalCluster raises :class:`LocalClusterStarted` (no worker processes started)."""

    def refuse(*args, **kwargs):
        raise LocalClusterStarted

    monkeypatch.setattr(cluster_mod, "LocalCluster", refuse)


def test_dask_client_without_an_address_runs_on_the_configured_scheduler(scheduler, no_local_cluster):
    said = []
    with dask.config.set({"scheduler-address": scheduler}):
        with cluster_mod.dask_client(say=said.append) as client:
            assert client.scheduler.address == scheduler
            assert client.submit(sum, [1, 2, 3]).result() == 6
    assert said[0] == (
        f"note: {CONFIG} names {scheduler}: used as scheduler={scheduler} would be; "
        "dask_client(config=False) starts a local cluster instead"
    )
    assert said[1].startswith(f"connected to {scheduler}; dashboard: ")


def test_an_unreachable_configured_scheduler_is_named_as_the_config(no_local_cluster):
    with dask.config.set({"scheduler-address": NOBODY}):
        expected = f"^{re.escape(CONFIG)} names {NOBODY}: cannot reach a Dask scheduler there .*unset it"
        with pytest.raises(ValueError, match=expected):
            with cluster_mod.dask_client(say=lambda _: None):
                pass


def test_a_local_cluster_asked_for_is_started_whatever_the_config_says(no_local_cluster):
    """``config=False`` (the commands, which settle the address first) and a placement on a
    LocalCluster asked for (``cluster=True``, ``--cluster``: no size measured) start one; a
    placement the size chose runs where the config says, as ``dask_client()`` does."""
    with dask.config.set({"scheduler-address": NOBODY}):
        with pytest.raises(LocalClusterStarted):
            with cluster_mod.dask_client(say=lambda _: None, config=False):
                pass
        with pytest.raises(LocalClusterStarted):
            with release_frame(Placement("cluster", None, FRAME), say=lambda _: None):
                pass
        with pytest.raises(ValueError, match=f"^{re.escape(CONFIG)} names {NOBODY}: cannot reach"):
            with release_frame(Placement("cluster", HistorySize(2, 2, 2), FRAME), say=lambda _: None):
                pass


@pytest.mark.parametrize(
    ("cluster", "alone"), [(True, "start a local Dask cluster"), (False, "release in this process")]
)
def test_release_place_refuses_a_scheduler_with_cluster_true_or_false(cluster, alone):
    said = (
        f"^scheduler and cluster={cluster} contradict each other: drop cluster={cluster} to run on "
        f"tcp://h:8786, or drop scheduler to {alone}$"
    )
    with pytest.raises(ValueError, match=said):
        release_place(FRAME, POLICY, scheduler="tcp://h:8786", cluster=cluster)
    assert release_place(FRAME, POLICY, scheduler="tcp://h:8786", cluster=None).place == "scheduler"
