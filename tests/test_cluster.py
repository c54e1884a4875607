"""A real multi-process cluster: `dask scheduler` and two `dask worker` processes on
127.0.0.1; `dpriv release --scheduler` gives the same bytes as the default LocalCluster."""

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import start_cluster, stop_cluster

from dpriv.datasets import medical_history, write_history

BIN = Path(sys.executable).parent


@pytest.fixture
def cluster(tmp_path):
    address, sched, workers = start_cluster(tmp_path, 2, 1)
    yield address
    stop_cluster([sched, *workers])


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
