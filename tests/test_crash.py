"""Crash safety of the release ledger and worker loss (issue "Hardening", items 2 and 3).

``dpriv release`` runs as a subprocess on a small generated history and is killed with
SIGKILL as soon as a chosen file appears in the ledger folder (the folder is polled every
millisecond or so). After every kill the ledger must read as its last committed release
(manifest valid JSON, every listed release readable and equal to an uninterrupted run,
nothing listed beyond it), and re-running must complete it byte-identically (view.parquet,
metrics without timings, state). The subprocesses use an external ``dask scheduler`` so
that no cluster is started per run. The exhaustive variant (a kill at every file the
release creates) is marked ``slow``.

Worker loss: a ``dask worker`` process (no nanny) holding persisted data is killed in the
middle of ``dpriv release --scheduler``; the release must complete and equal a clean run.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import start_cluster, stop_cluster

from dpriv.datasets import medical_history, write_history
from dpriv.io import read_table
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

BIN = Path(sys.executable).parent
N_VIEWS = 4
FLAGS = ["--t", "0.5", "--j", "0.8"]


# -- a real scheduler and workers ----------------------------------------------------------------
@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    address, sched, workers = start_cluster(tmp_path_factory.mktemp("cluster"), 1, 2)
    yield address
    stop_cluster([sched, *workers])


# -- the history and an uninterrupted reference ledger --------------------------------------------
@pytest.fixture(scope="module")
def setting(tmp_path_factory, scheduler):
    out = tmp_path_factory.mktemp("crash")
    mh = medical_history(n_views=N_VIEWS, view_size=300, seed=0)
    policy_path = write_history(out, mh, policy_extra={"privacy": {"max_suppression": 1.0}})
    history = out / "history.parquet"
    # the uninterrupted reference: the same command on the same kind of cluster (an in-process
    # release_history gives the same rows, but the Parquet metadata of the sensitive column
    # of the sensitive column can differ with the string dtype of the input frame)
    release_cli(history, out / "reference", policy_path, scheduler)
    assert Ledger(out / "reference").last_index() == N_VIEWS
    return history, policy_path, out / "reference"


def snapshot(ledger: Path) -> dict:
    """What a reader of the ledger sees: per committed release its view and state bytes and
    its metrics without timings; plus the manifest (its metrics_sha256 leave the timings out)
    and the policy."""
    led = Ledger(ledger)
    policy = ledger / "policy.json"  # absent only before the first release (a kill may come first)
    manifest = led.manifest()
    out = {"manifest": manifest, "policy": json.loads(policy.read_text()) if policy.exists() else None}
    for r in led.committed():
        i = r["index"]
        metrics = {k: v for k, v in led.read_metrics(i).items() if k != "seconds"}
        out[i] = (
            (led.release_dir(i) / "view.parquet").read_bytes(),
            metrics,
            led.state_path(i).read_bytes(),
        )
        led.read_view(i), led.read_state(i)  # readable as Parquet
    return out


def check_committed_prefix(ledger: Path, reference: dict) -> int:
    """The ledger after a kill: valid, its committed releases those of the reference."""
    if not (ledger / "manifest.json").exists():
        return 0
    raw = (ledger / "manifest.json").read_text()
    manifest = json.loads(raw)  # valid JSON, never half written
    indices = [r["index"] for r in manifest["releases"]]
    assert indices == list(range(1, len(indices) + 1))
    snap = snapshot(ledger)
    for i in indices:
        assert snap[i][0] == reference[i][0], f"release {i}: view.parquet differs"
        assert snap[i][1] == reference[i][1], f"release {i}: metrics differ"
        assert snap[i][2] == reference[i][2], f"release {i}: state differs"
    assert Ledger(ledger).last_index() == len(indices)
    assert snap["policy"] == reference["policy"] or (not indices and snap["policy"] is None)
    assert snap["manifest"]["releases"] == reference["manifest"]["releases"][: len(indices)]
    return len(indices)


def listing(root: Path) -> set[str]:
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        for name in filenames + dirnames:
            out.add(name if rel == "." else f"{rel}/{name}")
    return out


def run_and_kill(history: Path, policy: Path, ledger: Path, scheduler: str, kill_at, timeout: float = 240):
    """Run ``dpriv release``; SIGKILL it when ``kill_at(path)`` holds for a path that was not in
    the ledger folder when the run started. Returns (killed, path that triggered it, new paths)."""
    before = listing(ledger) if ledger.exists() else set()
    proc = subprocess.Popen(
        [BIN / "dpriv", "release", history, "--ledger", ledger, "--policy", policy, *FLAGS,
         "--scheduler", scheduler],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError("dpriv release did not finish in time")
            if ledger.exists():
                for path in sorted(listing(ledger) - before - set(seen)):
                    seen.append(path)
                    if kill_at(path):
                        os.kill(proc.pid, signal.SIGKILL)
                        proc.wait()
                        return True, path, seen
            time.sleep(0.001)
    finally:
        if proc.poll() is None:
            proc.kill()
        out, err = proc.communicate()
    assert proc.returncode == 0, err.decode()
    return False, None, seen


def release_cli(history, ledger, policy, scheduler) -> None:
    """``dpriv release`` to the end, in a fresh process; it must succeed."""
    done = subprocess.run(
        [BIN / "dpriv", "release", history, "--ledger", ledger, "--policy", policy, *FLAGS,
         "--scheduler", scheduler],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def resume_and_compare(history, policy, ledger, scheduler, reference) -> None:
    release_cli(history, ledger, policy, scheduler)
    assert snapshot(ledger) == reference


# -- item 2: SIGKILL at chosen points, then resume -------------------------------------------------
#: Kill points, in the order a release writes (release dir, view temp file, view, metrics,
#: state folder and temp file, state, manifest temp file at the commit).
FAST_POINTS = [
    r"releases/1/\.view\.parquet\.|releases/1/view\.parquet",  # inside the first atomic write
    r"state/2/",  # release 2 written but its state not yet
    r"^\.manifest\.json\.|releases/4/",  # at a commit (manifest temp) or just after it
]


@pytest.mark.slow
def test_sigkill_at_chosen_points_then_resume_is_byte_identical(setting, scheduler, tmp_path):
    history, policy, ref_dir = setting
    reference = snapshot(ref_dir)
    ledger = tmp_path / "led"
    start = time.monotonic()
    committed = []
    for i, pattern in enumerate(FAST_POINTS):
        if i == 2:
            # the commit of release 3: kill on its manifest temp file (or the next release's folder)
            def kill_at(p, rx=re.compile(pattern)):
                return bool(rx.search(p)) and (ledger / "state" / "3" / "state.parquet").exists()
        else:

            def kill_at(p, rx=re.compile(pattern)):
                return bool(rx.search(p))

        killed, path, _ = run_and_kill(history, policy, ledger, scheduler, kill_at)
        assert killed, f"the run finished before a file matching {pattern!r} appeared"
        committed.append((path, check_committed_prefix(ledger, reference)))
    # the poll may see a burst of files late on a loaded machine, so the exact release reached
    # by each kill varies; it never decreases and the history is never complete before the end
    counts = [c for _, c in committed]
    assert counts == sorted(counts) and counts[-1] < N_VIEWS, committed
    resume_and_compare(history, policy, ledger, scheduler, reference)
    print(f"kills at {committed}; {time.monotonic() - start:.1f} s")


def _point(path: str) -> str:
    """A kill point: the path with the random suffix of a temp file or folder (mkstemp,
    mkdtemp: a state's parts are staged in ``state/.<i>.<random>/``) removed from each part."""
    return "/".join(re.sub(r"^(\.[^/]+)\.[A-Za-z0-9_]{8}$", r"\1.TMP", part) for part in path.split("/"))


@pytest.mark.slow
@pytest.mark.heavy
def test_sigkill_after_every_file_the_release_creates(setting, scheduler, tmp_path):
    """Kill at the first file never seen before, again and again, until a run completes: every
    file creation of the whole history (temp files included) is a kill point once.

    Not covered: the window inside the very first manifest write of a NEW ledger (see
    test_kill_while_creating_the_ledger_leaves_a_folder_that_can_be_resumed)."""
    history, policy, ref_dir = setting
    reference = snapshot(ref_dir)
    ledger = tmp_path / "led"
    # create the ledger (manifest + policy.json) with a completed first run of release 1 only
    # is not possible from the CLI; start from an empty ledger made by the library instead
    Ledger(ledger, create=True)
    ever: set[str] = {_point(p) for p in listing(ledger)}
    kills = []
    for _ in range(200):

        def kill_at(p, ever=frozenset(ever)):
            return _point(p) not in ever

        killed, path, seen = run_and_kill(history, policy, ledger, scheduler, kill_at)
        ever |= {_point(p) for p in seen}
        if not killed:
            break
        kills.append((path, check_committed_prefix(ledger, reference)))
    else:
        raise AssertionError("the release never completed")
    assert len(kills) >= 4 * N_VIEWS, kills
    assert snapshot(ledger) == reference
    resume_and_compare(history, policy, ledger, scheduler, reference)  # a no-op re-run


@pytest.mark.slow
def test_kill_while_creating_the_ledger_leaves_a_folder_that_can_be_resumed(setting, tmp_path):
    history, policy, ref_dir = setting
    ledger = tmp_path / "led"
    ledger.mkdir()
    (ledger / ".manifest.json.k3x9q2ab.dpriv-tmp").write_bytes(b'{\n  "rel')  # what SIGKILL leaves behind
    release_history(
        read_table(str(history)).compute(),
        ReleasePolicy.from_toml(policy, t=0.5, j=0.8, max_suppression=1.0),
        ledger,
        until=1,
    )
    assert Ledger(ledger).last_index() == 1


@pytest.mark.slow
def test_resume_leaves_no_temp_file_of_the_killed_run(setting, tmp_path):
    history, policy, ref_dir = setting
    pol = ReleasePolicy.from_toml(policy, t=0.5, j=0.8, max_suppression=1.0)
    frame = read_table(str(history)).compute()
    ledger = tmp_path / "led"
    release_history(frame, pol, ledger, until=1)
    (ledger / "releases" / "2").mkdir(parents=True)
    (ledger / "releases" / "2" / ".view.parquet.a1b2c3d4.dpriv-tmp").write_bytes(b"PAR1 half written")
    (ledger / ".manifest.json.d4e5f6g7.dpriv-tmp").write_bytes(b'{"releases": [')
    release_history(frame, pol, ledger, until=2)
    # the reference was released by the CLI with --policy, which also records the policy's folder
    # (policy_base.json); this ledger was released in Python
    expected = {p for p in listing(ref_dir) if not re.match(r"(releases|state)/[34]", p)}
    assert listing(ledger) == expected - {"policy_base.json"}


# -- item 3: a worker process dies in the middle of release_history -------------------------------
@pytest.mark.slow
def test_worker_killed_mid_release_completes_identically(setting, tmp_path):
    history, policy, ref_dir = setting
    reference = snapshot(ref_dir)
    address, sched, workers = start_cluster(tmp_path, 2, 1)
    try:
        from distributed import Client

        with Client(address, timeout=60) as client:
            pids = client.run(os.getpid)  # worker address -> pid (no nanny: the worker itself)
            assert sorted(pids.values()) == sorted(w.pid for w in workers)
            ledger = tmp_path / "led"
            proc = subprocess.Popen(
                [BIN / "dpriv", "release", history, "--ledger", ledger, "--policy", policy, *FLAGS,
                 "--scheduler", address],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )  # fmt: skip
            victim, at_release = None, None
            deadline = time.monotonic() + 240
            while proc.poll() is None and time.monotonic() < deadline:
                done = Ledger(ledger).last_index() if (ledger / "manifest.json").exists() else 0
                if done >= 1:
                    # release 2 or later is running: kill a worker that holds (persisted) data
                    holding = [a for a, keys in client.has_what().items() if keys]
                    if holding:
                        victim, at_release = holding[0], done + 1
                        os.kill(pids[victim], signal.SIGKILL)
                        break
                time.sleep(0.005)
            assert victim is not None, "no worker held data while the release ran"
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err.decode()
            assert len(client.scheduler_info()["workers"]) == 1
    finally:
        stop_cluster([sched, *workers])
    assert at_release <= N_VIEWS
    assert snapshot(ledger) == reference
