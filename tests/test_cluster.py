"""A real multi-process cluster: `dask scheduler` and two `dask worker` processes on
127.0.0.1; `dpriv release --scheduler` gives the same bytes as the default LocalCluster."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpriv.datasets import medical_history, write_history

BIN = Path(sys.executable).parent


@pytest.fixture
def cluster(tmp_path):
    sched_file = tmp_path / "scheduler.json"
    procs = [
        subprocess.Popen(
            [
                BIN / "dask",
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--dashboard-address",
                ":0",
                "--scheduler-file",
                sched_file,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        for _ in range(200):
            if sched_file.exists() and sched_file.stat().st_size:
                break
            time.sleep(0.1)
        import json

        address = json.loads(sched_file.read_text())["address"]
        for _ in range(2):
            procs.append(
                subprocess.Popen(
                    [
                        BIN / "dask",
                        "worker",
                        address,
                        "--nthreads",
                        "1",
                        "--host",
                        "127.0.0.1",
                        "--dashboard-address",
                        ":0",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        from distributed import Client

        with Client(address, timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


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
