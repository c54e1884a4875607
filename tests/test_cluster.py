"""A real multi-process cluster: `dask scheduler` and two `dask worker` processes on
127.0.0.1; `dpriv release --scheduler` gives the same bytes as the command without one; and
(slow) the Dask path on four worker processes gives the bytes of the in-process release."""

import subprocess
import sys
from pathlib import Path

import dask.dataframe as dd
import pytest
from conftest import start_cluster, stop_cluster
from distributed import Client

import dpriv.release as release_mod
from dpriv.datasets import medical_history, write_history
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

BIN = Path(sys.executable).parent


@pytest.fixture
def cluster(tmp_path):
    address, sched, workers = start_cluster(tmp_path, 2, 1)
    yield address
    stop_cluster([sched, *workers])


@pytest.mark.slow
def test_release_on_a_multiprocess_cluster_matches_local_cluster(cluster, tmp_path):
    mh = medical_history(n_views=2, view_size=600, seed=5)
    policy = write_history(
        tmp_path / "h", mh, policy_extra={"privacy": {"t": 0.5, "j": 0.8, "max_suppression": 1.0}}
    )
    history = tmp_path / "h" / "history.parquet"
    runs = {}
    for name, extra in [("remote", ["--scheduler", cluster]), ("local", [])]:
        ledger = tmp_path / name
        done = subprocess.run(
            [
                BIN / "dpriv",
                "release",
                history,
                "--ledger",
                ledger,
                "--policy",
                policy,
                "--npartitions",
                "3",
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        runs[name] = {p.relative_to(ledger): p.read_bytes() for p in sorted(ledger.rglob("view.parquet"))}
    assert len(runs["remote"]) == 2
    assert runs["remote"] == runs["local"]


@pytest.fixture
def cluster4(tmp_path):
    address, sched, workers = start_cluster(tmp_path, 4, 1)
    yield address, [w.pid for w in workers]
    stop_cluster([sched, *workers])


@pytest.mark.slow
@pytest.mark.heavy
def test_dask_path_on_four_worker_processes_matches_the_in_process_release(cluster4, tmp_path, monkeypatch):
    """Issue 13 item 6: the Dask path on four `dask worker` processes (as on a real cluster,
    each a process of its own) writes the ledger of the in-process release, byte for byte."""
    from test_small_views import ledger_files

    address, pids = cluster4

    def executed(dask_worker) -> tuple[int, int]:  # local: pickled by value to the workers
        import os

        return os.getpid(), dask_worker.state.executed_count

    mh = medical_history(n_views=3, view_size=2000, seed=3)
    policy = ReleasePolicy.from_toml(write_history(tmp_path / "h", mh), t=0.5, j=0.8, max_suppression=1.0)
    ref = release_history(mh.history, policy, tmp_path / "ref", npartitions=8)  # in process: small views
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", -1)  # every view on the Dask path
    with Client(address) as client:
        before = dict(client.run(executed).values())
        got = release_history(
            dd.from_pandas(mh.history, npartitions=4), policy, tmp_path / "dist", npartitions=8
        )
        after = dict(client.run(executed).values())
    assert sorted(after) == sorted(pids)  # the four worker processes started here, no other
    assert all(after[p] > before[p] for p in pids), (before, after)  # each one ran tasks
    a, b = ledger_files(ref.root), ledger_files(got.root)
    assert len(a) >= 3 * 3 + 2 and list(a) == list(b)
    for name in a:
        assert a[name] == b[name], name
    assert ref.read_metrics(3)["n_original"] - ref.read_metrics(3)["n_suppressed"] > 1000


@pytest.mark.slow
def test_a_relative_ledger_is_written_where_the_client_runs_not_where_the_workers_do(
    cluster, tmp_path, monkeypatch
):
    """A cluster drill (session 31): `dpriv release --ledger L_rel --scheduler ...` with workers
    started in another folder crashed (FileNotFoundError: the workers wrote the state parts
    under their own folder). The state is written, and read back at the next release, at the
    client's path."""
    import os

    mh = medical_history(n_views=2, view_size=400, seed=7)
    policy = ReleasePolicy.from_toml(write_history(tmp_path / "h", mh), t=0.5, j=0.8, max_suppression=1.0)
    ref = release_history(mh.history, policy, tmp_path / "ref", npartitions=4)  # in process
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", -1)  # every view on the Dask path
    with Client(cluster) as client:
        client.run(os.chdir, str(elsewhere))  # the workers' folder is not the client's
        history = dd.from_pandas(mh.history, npartitions=2)
        release_history(history, policy, "L_rel", npartitions=4, until=1)
        got = release_history(history, policy, "L_rel", npartitions=4)  # reads release 1's state there
    assert got.last_index() == 2 and not any(elsewhere.iterdir())
    for i in (1, 2):
        assert (here / "L_rel" / "releases" / str(i) / "view.parquet").read_bytes() == (
            ref.release_dir(i) / "view.parquet"
        ).read_bytes()
