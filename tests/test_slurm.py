"""A real SLURM: deploy/slurm/launch.py, and release.sbatch submitted with sbatch, release a
history with their Dask workers as SLURM jobs; the ledger equals a LocalCluster run's.

The module fixture starts a one-node SLURM on localhost with deploy/slurm/local-cluster.sh
(munged + slurmctld + slurmd, everything under a fresh folder in the temp dir) and stops it
afterwards, checking that no process of that cluster (daemons, job steps, Dask workers) is left.
Where SLURM cannot start here (not root, slurm-wlm/munge absent, a daemon fails) the test skips
with the script's reason, which quotes the failing daemon's log. `.ci/slurm` installs slurm-wlm
and munge when root and runs this file.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from dpriv.datasets import medical_history, write_history

yaml = pytest.importorskip("yaml")
pytest.importorskip("dask_jobqueue")

# slow too (166-335 s on 2 shared cores): out of the default run; `.ci/slurm` runs `-m slurm`
pytestmark = [pytest.mark.slurm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "deploy" / "slurm" / "local-cluster.sh"
LAUNCHER = ROOT / "deploy" / "slurm" / "launch.py"
BIN = Path(sys.executable).parent


def _processes_of(folder: Path) -> dict[int, str]:
    """pid -> command line of every process whose environment points SLURM_CONF into ``folder``:
    the daemons (the script exports it), job steps and the jobs' processes (sbatch exports it)."""
    needle = f"SLURM_CONF={folder}/slurm.conf".encode()
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if needle in (proc / "environ").read_bytes().split(b"\0"):
                found[int(proc.name)] = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def _kill(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


class LocalSlurm:
    """A running one-node SLURM: its folder and the environment its clients need."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.env = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}

    def run(self, *argv: str) -> str:
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60, check=True)
        return done.stdout


@pytest.fixture(scope="module")
def local_slurm():
    if sys.platform != "linux":
        pytest.skip("the local SLURM script runs on Linux only")
    # a folder the script creates itself (it refuses one it did not make); not under pytest's
    # tmp_path, whose 0700 parents munged refuses for its socket
    folder = Path(tempfile.gettempdir()) / f"dpriv-slurm-test-{uuid.uuid4().hex[:12]}"
    started = subprocess.run(["bash", SCRIPT, "start", folder], capture_output=True, text=True, timeout=180)
    if started.returncode == 2:  # usage, or a folder it did not make (then not ours to remove)
        pytest.fail(f"local-cluster.sh refused its arguments: {started.stderr}")
    if started.returncode != 0:
        _kill(_processes_of(folder))  # a half-started cluster: what the script could not stop
        shutil.rmtree(folder, ignore_errors=True)  # made by that `start`, if it got so far
        lines = started.stderr.strip().splitlines()
        ours = [ln for ln in lines if ln.startswith("local-cluster:")]
        logged = [ln for ln in lines if re.search(r"\b(error|fatal)\b", ln, re.I)][-1:]
        reason = " | ".join(ours + logged) or started.stderr.strip()
        pytest.skip(f"SLURM cannot start here (local-cluster.sh exit {started.returncode}): {reason}")
    try:
        yield LocalSlurm(folder)
    finally:
        stopped = subprocess.run(
            ["bash", SCRIPT, "stop", folder], capture_output=True, text=True, timeout=180
        )
        left = _processes_of(folder)
        _kill(left)
        shutil.rmtree(folder, ignore_errors=True)  # made by our `start` above
        assert stopped.returncode == 0, stopped.stderr
        assert not left, f"processes of the local SLURM outlived `local-cluster.sh stop`: {left}"


def _jobqueue_config(tmp_path: Path) -> Path:
    """deploy/slurm/jobqueue.yaml with only the site settings edited for this one-node SLURM:
    two 1-core jobs of 1 GiB each, partition `debug`, this interpreter, logs in ``tmp_path``."""
    doc = yaml.safe_load((ROOT / "deploy" / "slurm" / "jobqueue.yaml").read_text())
    conf = copy.deepcopy(doc)
    conf["jobqueue"]["slurm"].update(
        {
            "cores": 1,
            "processes": 1,
            "memory": "1GiB",
            "walltime": "00:30:00",
            "queue": "debug",
            "python": sys.executable,
            "job-script-prologue": [],
            "job-extra-directives": [f"--output={tmp_path}/dpriv-worker-%j.out"],
            "local-directory": str(tmp_path / "scratch"),
            "death-timeout": 60,
            "scheduler-options": {"dashboard_address": ":0"},
        }
    )
    path = tmp_path / "jobqueue.yaml"
    path.write_text(yaml.safe_dump(conf))
    return path


class SqueuePoller(threading.Thread):
    """Polls ``squeue`` every half second; ``seen`` holds (job id, name, state, nodes) rows."""

    def __init__(self, slurm: LocalSlurm):
        super().__init__(daemon=True)
        self.slurm, self.seen, self.stopping = slurm, set(), threading.Event()

    def run(self):
        while not self.stopping.wait(0.5):
            try:
                out = self.slurm.run("squeue", "-h", "-o", "%i|%j|%T|%N")
            except (subprocess.SubprocessError, OSError):
                continue
            self.seen.update(tuple(line.split("|")) for line in out.splitlines() if line)


def _ledger_files(ledger: Path) -> dict[str, bytes]:
    """Every file of a ledger; metrics.json without its timings (``seconds``), the only
    field that may differ between two runs of the same release, and so manifest.json without
    their digests."""
    files = {}
    for path in sorted(p for p in ledger.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.name == "metrics.json":
            metrics = json.loads(data)
            assert isinstance(metrics.pop("seconds"), dict)
            data = json.dumps(metrics, sort_keys=True).encode()
        files[str(path.relative_to(ledger))] = data
    return files


def _wait(predicate, seconds: float):
    end = time.monotonic() + seconds
    while not (ok := predicate()) and time.monotonic() < end:
        time.sleep(0.5)
    return ok


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """medical_history(3 views x 300), its policy with 3 Hilbert ranges per view (npartitions,
    which release.sbatch cannot pass as a flag); the ``dpriv release`` arguments but --ledger."""
    folder = tmp_path_factory.mktemp("history")
    mh = medical_history(n_views=3, view_size=300, seed=5)
    extra = {"privacy": {"t": 0.5, "j": 0.8, "max_suppression": 1.0}, "release": {"npartitions": 3}}
    policy = write_history(folder, mh, policy_extra=extra)
    return [str(folder / "history.parquet"), "--policy", str(policy)]


@pytest.fixture(scope="module")
def local_ledger(history, tmp_path_factory):
    """The ledger files of the same release on dpriv's default LocalCluster."""
    ledger = tmp_path_factory.mktemp("local") / "ledger"
    tick = time.monotonic()
    local = subprocess.run(
        [BIN / "dpriv", "release", *history, "--ledger", ledger], capture_output=True, text=True, timeout=900
    )
    assert local.returncode == 0, local.stderr
    print(f"seconds: LocalCluster {time.monotonic() - tick:.1f}", file=sys.stderr)
    files = _ledger_files(ledger)
    assert {f"releases/{i}/view.parquet" for i in (1, 2, 3)} <= set(files)
    assert {f"state/{i}/state.parquet" for i in (1, 2, 3)} <= set(files)
    return files


def _assert_same_ledger(ledger: Path, expected: dict[str, bytes]) -> None:
    got = _ledger_files(ledger)
    assert sorted(got) == sorted(expected)
    different = [name for name in got if got[name] != expected[name]]
    assert not different, f"the SLURM and LocalCluster ledgers differ in {different}"


def _finished_jobs(slurm: LocalSlurm) -> dict[str, str]:
    """job id -> final state, from the cluster's jobcomp/filetxt record."""
    jobcomp = slurm.folder / "log" / "jobcomp.txt"
    text = jobcomp.read_text() if jobcomp.exists() else ""
    return {m.group(1): m.group(2) for m in re.finditer(r"JobId=(\d+) .*?JobState=(\S+)", text)}


def test_launcher_releases_on_slurm_workers_as_on_a_local_cluster(
    local_slurm, history, local_ledger, tmp_path
):
    tick = time.monotonic()
    poller = SqueuePoller(local_slurm)
    poller.start()
    try:
        launched = subprocess.run(
            [sys.executable, LAUNCHER, "--config", _jobqueue_config(tmp_path), "--jobs", "2",
             "--timeout", "300", "--", *history, "--ledger", tmp_path / "slurm"],
            env=local_slurm.env, capture_output=True, text=True, timeout=1200, cwd=tmp_path,
        )  # fmt: skip
    finally:
        poller.stopping.set()
        poller.join()
    assert launched.returncode == 0, launched.stdout + launched.stderr
    print(f"seconds: launcher on SLURM {time.monotonic() - tick:.1f}", file=sys.stderr)
    address = re.search(r"SLURM Dask cluster (tcp://\S+);", launched.stdout).group(1)

    # the two worker jobs ran on the node, served the launcher's scheduler, and were cancelled
    # when the launcher closed its cluster
    running = {job for job, name, state, node in poller.seen if state == "RUNNING"}
    assert len(running) == 2, poller.seen
    assert {(name, node) for job, name, state, node in poller.seen if state == "RUNNING"} == {
        ("dpriv-worker", "localhost")
    }
    for job in running:
        log = (tmp_path / f"dpriv-worker-{job}.out").read_text()
        assert re.search(rf"Registered to:\s+{re.escape(address)}\s", log), log
    assert _wait(lambda: not local_slurm.run("squeue", "-h", "-o", "%i").strip(), 60), "jobs left in squeue"
    assert _wait(lambda: running <= set(_finished_jobs(local_slurm)), 30)
    assert {_finished_jobs(local_slurm)[job] for job in running} <= {"CANCELLED", "COMPLETED"}
    _assert_same_ledger(tmp_path / "slurm", local_ledger)


def test_release_sbatch_job_releases_as_on_a_local_cluster(local_slurm, history, local_ledger, tmp_path):
    """deploy/slurm/release.sbatch as documented (sbatch --export=ALL,HISTORY=...), resized on the
    command line to fit two CPUs: the release job (1 CPU) and one worker job (1 CPU)."""
    home = tmp_path / "dpriv-home"  # DPRIV_HOME: a checkout with its virtualenv in .venv
    home.mkdir()
    (home / ".venv").symlink_to(Path(sys.prefix))
    (home / "deploy").symlink_to(ROOT / "deploy")
    assert (home / ".venv" / "bin" / "activate").is_file(), "release.sbatch sources the venv's activate"
    ledger = tmp_path / "sbatch"
    exports = {
        "HISTORY": history[0],
        "POLICY": history[2],
        "LEDGER": str(ledger),
        "DPRIV_HOME": str(home),
        "DPRIV_JOBQUEUE": str(_jobqueue_config(tmp_path)),
        "DPRIV_JOBS": "1",
        "DPRIV_NEW_LEDGER": "1",  # the first week: the ledger is made
    }
    tick = time.monotonic()
    done = subprocess.run(
        ["sbatch", "--wait", "--parsable", "--cpus-per-task=1", "--mem=1G",
         "--export=ALL," + ",".join(f"{k}={v}" for k, v in exports.items()),
         ROOT / "deploy" / "slurm" / "release.sbatch"],
        env=local_slurm.env, capture_output=True, text=True, timeout=1200, cwd=tmp_path,
    )  # fmt: skip
    job = done.stdout.strip().split(";")[0]
    out = tmp_path / f"dpriv-release-{job}.out"
    assert done.returncode == 0, (done.stderr, out.read_text() if out.exists() else "no job output")
    print(f"seconds: release.sbatch on SLURM {time.monotonic() - tick:.1f}", file=sys.stderr)
    assert "SLURM Dask cluster tcp://" in out.read_text()
    assert _wait(lambda: job in _finished_jobs(local_slurm), 30)
    assert _finished_jobs(local_slurm)[job] == "COMPLETED"
    workers = [p for p in tmp_path.glob("dpriv-worker-*.out")]
    assert len(workers) == 1 and "Registered to:" in workers[0].read_text()
    _assert_same_ledger(ledger, local_ledger)
