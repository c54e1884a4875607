"""Shared fixtures: the real data folder, one in-process Dask cluster per test module, and
the random views that several test modules build."""

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster

#: The shared real data sets: $DPRIV_SHARED_DATA (as the notebooks read it), else ../shared/data
#: beside the repository (a checkout elsewhere, e.g. a git worktree, sets the variable)
SHARED_DATA = Path(
    os.environ.get("DPRIV_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data"
)


def pytest_collection_modifyitems(config, items) -> None:
    """Tests marked ``pycanon`` skip before their fixtures run where pyCANON is absent: their own
    ``importorskip`` comes after the fixture (a whole Adult release, ~15 s of CPU) was built."""
    if importlib.util.find_spec("pycanon") is not None:
        return
    skip = pytest.mark.skip(reason="could not import 'pycanon.anonymity': No module named 'pycanon'")
    for item in items:
        if item.get_closest_marker("pycanon") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Folder of the shared real data sets; tests using it skip where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} is absent (CI has it; or set DPRIV_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture
def object_strings():
    """Dask keeps object strings as object (by default it converts them to Arrow strings)."""
    with dask.config.set({"dataframe.convert-string": False}):
        yield


@pytest.fixture(scope="module")
def local_cluster():
    """One in-process cluster per test module (one worker, two threads, no dashboard)."""
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def scheduler(local_cluster) -> str:
    """Address of :func:`local_cluster` (for ``--scheduler``)."""
    return local_cluster.scheduler_address


@pytest.fixture(scope="module")
def client(local_cluster):
    """A distributed client of :func:`local_cluster`."""
    with Client(local_cluster) as c:
        yield c


@pytest.fixture(scope="module")
def cli(scheduler):
    """``dpriv ARGS`` in process through typer's CliRunner; anonymize and release run on the
    module's in-process cluster (no worker start-up per command)."""
    from typer.testing import CliRunner

    from dpriv.cli import app

    runner = CliRunner()

    def run(*args):
        args = [str(a) for a in args]
        if args[0] in ("anonymize", "release"):
            args += ["--scheduler", scheduler]
        return runner.invoke(app, args)

    return run


_DRAW = {
    "age": lambda rng, n: rng.integers(45, 75, n),
    "weight": lambda rng, n: rng.integers(60, 90, n),
    "gender": lambda rng, n: rng.choice(["F", "M"], n),
}


def random_view(
    n: int = 60,
    seed: int = 0,
    *,
    id: str = "respondent_id",  # noqa: A002 - the policy's name of the column
    qi: tuple[str, ...] = ("age", "gender", "weight"),
    sensitive: str = "exam_result",
    values: list | None = None,
) -> pd.DataFrame:
    """A view of ``n`` respondents: id 0..n-1, uniform QIs (age 45-74, weight 60-89, gender
    F/M, drawn in ``qi`` order) and a sensitive value in a, b, c (or the given ``values``)."""
    rng = np.random.default_rng(seed)
    cols = {id: np.arange(n), **{q: _DRAW[q](rng, n) for q in qi}}
    cols[sensitive] = rng.choice(list("abc"), n) if values is None else values
    return pd.DataFrame(cols)


@pytest.fixture
def make_view():
    """:func:`random_view` as a fixture (for tests that do not build views at import)."""
    return random_view


# -- a real scheduler and workers (test_cluster, test_crash) ----------------------------------------
BIN = Path(sys.executable).parent


def start_cluster(tmp: Path, n_workers: int, nthreads: int):
    """A `dask scheduler` and ``n_workers`` `dask worker` processes (no nanny) on 127.0.0.1;
    returns (address, scheduler process, worker processes). Stop them with :func:`stop_cluster`."""
    sched_file = tmp / "scheduler.json"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    sched = subprocess.Popen(
        [BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
         "--scheduler-file", sched_file],
        **quiet,
    )  # fmt: skip
    workers = []
    try:
        for _ in range(600):
            if sched_file.exists() and sched_file.stat().st_size:
                break
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        for _ in range(n_workers):
            workers.append(
                subprocess.Popen(
                    [
                        BIN / "dask",
                        "worker",
                        address,
                        "--nthreads",
                        str(nthreads),
                        "--no-nanny",
                        "--host",
                        "127.0.0.1",
                        "--dashboard-address",
                        ":0",
                    ],
                    **quiet,
                )  # fmt: skip
            )
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(n_workers, timeout=120)
    except BaseException:
        stop_cluster([sched, *workers])
        raise
    return address, sched, workers


def stop_cluster(procs) -> None:
    """Stop our own scheduler (SIGTERM) and workers (SIGKILL: a worker without nanny can take
    many seconds to close politely)."""
    sched, workers = procs[0], procs[1:]
    for p in workers:
        if p.poll() is None:
            p.kill()
    if sched.poll() is None:
        sched.terminate()
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@pytest.fixture(scope="module")
def hist_4x300(tmp_path_factory):
    """A generated history of 4 views x 300 tuples (seed 1) and its policy at t 0.5, j 0.8,
    nothing refused for suppression: (MedicalHistory, ReleasePolicy)."""
    from dpriv.datasets import medical_history, write_history
    from dpriv.policy import ReleasePolicy

    out = tmp_path_factory.mktemp("hist")
    mh = medical_history(n_views=4, view_size=300, seed=1)
    policy = ReleasePolicy.from_toml(write_history(out, mh), t=0.5, j=0.8, max_suppression=1.0)
    return mh, policy


def ledger_files(root: Path) -> dict[str, bytes]:
    """Every file of a ledger by its path under ``root``, metrics.json without its timings
    (``seconds``, which must name the release's steps; the manifest's ``metrics_sha256`` leaves
    them out too, so manifests compare whole)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if p.name == "metrics.json":
                record = json.loads(data)
                assert set(record["seconds"]) >= {"rbk", "grouping", "verify", "pk", "write"}
                record.pop("seconds")
                data = json.dumps(record, sort_keys=True).encode()
            out[p.relative_to(root).as_posix()] = data
    return out


def forget_digests(root: Path, key: str) -> None:
    """The manifest of the ledger at ``root`` as a dpriv from before its entries' digest ``key``
    (``view_sha256``, ``metrics_sha256``) wrote it: such a ledger must still be read."""
    manifest = json.loads((root / "manifest.json").read_text())
    for entry in manifest["releases"]:
        del entry[key]
    (root / "manifest.json").write_text(json.dumps(manifest))
