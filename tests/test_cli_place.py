"""Where ``dpriv release`` runs (issue 13): a history of small views is released in the
command's own process, no cluster started; a large one (or ``--cluster``) on a LocalCluster;
``--scheduler`` always on that scheduler. The ledger holds the same bytes either way."""

import contextlib

import dask
import dask.dataframe as dd
import pandas as pd
import pytest
from test_small_views import ledger_files
from typer.testing import CliRunner

import dpriv.cluster as cluster_mod
import dpriv.release as release_mod
from dpriv.cli import app
from dpriv.cluster import HistorySize, history_size, ledger_state_rows, release_place
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy

POLICY = ReleasePolicy(id="rid", time="view", qi=["age"], sensitive="s", k=2, t=1.0, j=10.0)


def small_history() -> pd.DataFrame:
    # views of 3, 2 and 1 tuples; respondents 1, 2, 3 and 7 (four distinct ids in six tuples)
    return pd.DataFrame(
        {
            "rid": [1, 2, 3, 1, 7, 2],
            "view": [1, 1, 1, 2, 2, 3],
            "age": [50, 51, 52, 53, 54, 55],
            "s": ["a", "b", "a", "b", "a", "b"],
        }
    )


@pytest.mark.parametrize("npartitions", [0, 1, 2])
def test_history_size_counts_tuples_largest_view_and_respondents(npartitions):
    frame = small_history()
    if npartitions:
        frame = dd.from_pandas(frame, npartitions=npartitions, sort=False)
    assert history_size(frame, POLICY) == HistorySize(rows=6, largest_view=3, respondents=4)
    # a resumed ledger's state rows count as respondents too
    assert history_size(frame, POLICY, state_rows=10).respondents == 14


def test_the_thresholds_decide_between_process_and_cluster(monkeypatch):
    frame = small_history()
    assert release_place(frame, POLICY, scheduler=None, cluster=None)[0] == "process"
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", 2)  # the view of 3 is now large
    place, size = release_place(frame, POLICY, scheduler=None, cluster=None)
    assert (place, size.small) == ("cluster", False)
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", 3)
    monkeypatch.setattr(release_mod, "SMALL_STATE_ROWS", 9)  # 4 ids + 6 state rows > 9
    assert release_place(frame, POLICY, scheduler=None, cluster=None, state_rows=6)[0] == "cluster"
    assert release_place(frame, POLICY, scheduler=None, cluster=None, state_rows=5)[0] == "process"
    monkeypatch.setattr(cluster_mod, "SMALL_HISTORY_ROWS", 5)  # six tuples: not even counted
    assert history_size(frame, POLICY) == HistorySize(6, None, None)
    assert release_place(frame, POLICY, scheduler=None, cluster=None)[0] == "cluster"


def test_flags_win_over_the_size():
    frame = small_history()
    assert release_place(frame, POLICY, scheduler="tcp://h:8786", cluster=None) == ("scheduler", None)
    assert release_place(frame, POLICY, scheduler="tcp://h:8786", cluster=True) == ("scheduler", None)
    assert release_place(frame, POLICY, scheduler=None, cluster=True) == ("cluster", None)
    place, size = release_place(frame, POLICY, scheduler=None, cluster=False)
    assert place == "process" and size.small


@pytest.fixture(scope="module")
def medical(tmp_path_factory):
    out = tmp_path_factory.mktemp("med")
    mh = medical_history(n_views=2, view_size=300, seed=2)
    policy = write_history(out, mh, policy_extra={"privacy": {"t": 0.5, "j": 0.8, "max_suppression": 1.0}})
    return out / "history.parquet", policy


def release(history, policy, ledger, *extra):
    return CliRunner().invoke(
        app,
        [
            "release",
            str(history),
            "--ledger",
            str(ledger),
            "--policy",
            str(policy),
            "--npartitions",
            "3",
            *extra,
        ],
    )


def test_a_small_history_is_released_without_a_cluster_with_the_cluster_bytes(
    medical, tmp_path, monkeypatch, scheduler
):
    history, policy = medical
    started = []

    @contextlib.contextmanager
    def no_cluster(*args, **kwargs):  # the in-process run must not start or join any
        started.append(args)
        raise AssertionError("a cluster was started for a small history")
        yield

    with monkeypatch.context() as m:
        m.setattr(cluster_mod, "dask_client", no_cluster)
        calls = []
        real = release_mod.release_view
        m.setattr(
            release_mod,
            "release_view",
            lambda v, *a, **k: calls.append(type(v).__module__) or real(v, *a, **k),
        )
        res = release(history, policy, tmp_path / "here")
        assert res.exit_code == 0, res.output
        assert "no Dask cluster started" in res.output and started == []
        assert [c.split(".")[0] for c in calls] == ["pandas"] * 2
    # the same history on a cluster, every view forced onto the Dask path (partitions, shuffles)
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", -1)
    res = release(history, policy, tmp_path / "there", "--scheduler", scheduler)
    assert res.exit_code == 0, res.output
    assert "no Dask cluster started" not in res.output
    here, there = ledger_files(tmp_path / "here"), ledger_files(tmp_path / "there")
    assert len(here) >= 2 * 3 + 2 and list(here) == list(there)
    for name in here:
        assert here[name] == there[name], name
    # resuming on the cluster's ledger without a cluster: the recorded releases are a no-op
    monkeypatch.undo()
    res = release(history, policy, tmp_path / "there")
    assert res.exit_code == 0, res.output
    assert "already holds releases 1..2" in res.output
    assert ledger_state_rows(tmp_path / "there") == len(Ledger(tmp_path / "there").read_state(2)) >= 300


def test_cluster_flag_starts_the_local_cluster_for_a_small_history(medical, tmp_path, monkeypatch, scheduler):
    history, policy = medical
    asked = []
    real = cluster_mod.dask_client

    def spy(address=None, **kwargs):
        asked.append(address)
        return real(scheduler, **kwargs)  # the module's in-process cluster stands in for a new one

    monkeypatch.setattr(cluster_mod, "dask_client", spy)
    res = release(history, policy, tmp_path / "l", "--cluster")
    assert res.exit_code == 0, res.output
    assert asked == [None]  # None: a LocalCluster, not a given scheduler


def test_scheduler_and_no_cluster_contradict(medical, tmp_path):
    history, policy = medical
    res = release(history, policy, tmp_path / "l", "--scheduler", "tcp://127.0.0.1:1", "--no-cluster")
    assert res.exit_code == 2
    assert "--scheduler and --no-cluster contradict" in res.output
    assert not (tmp_path / "l").exists()


def test_ledger_state_rows_of_a_new_or_missing_ledger_is_zero(tmp_path):
    assert ledger_state_rows(tmp_path / "nothing") == 0
    Ledger(tmp_path / "new", create=True)
    assert ledger_state_rows(tmp_path / "new") == 0


def test_an_unreachable_scheduler_is_a_clear_input_error():
    """A malformed address fails at once; a well-formed one nobody listens on takes the
    connect timeout (20 s) through the same except (checked by hand: exit 2, nothing written)."""
    address = "notanaddress"
    before = dask.config.get("scheduler", None)
    with pytest.raises(InputError, match=f"--scheduler {address}: cannot reach a Dask scheduler there"):
        with cluster_mod.dask_client(address, say=lambda _: None):
            pass
    assert dask.config.get("scheduler", None) == before  # the failed Client left no default behind
