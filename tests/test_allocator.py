"""Freed memory kept for reuse (dpriv.allocator): what the command's process and the workers
of its LocalCluster are told, and that a freed large array then stays in the process."""

import json
import os
import platform
import subprocess
import sys

import pytest

from dpriv.allocator import KEEP_FREED, keep_freed_memory, worker_environ

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def test_worker_environ_keeps_dasks_variables_and_sets_glibcs(monkeypatch):
    monkeypatch.delenv("DPRIV_KEEP_FREED_MEMORY", raising=False)
    base = {"MALLOC_TRIM_THRESHOLD_": 65536, "OMP_NUM_THREADS": 1}
    env = worker_environ(base)
    assert env == {
        "MALLOC_TRIM_THRESHOLD_": str(2**31 - 1),
        "OMP_NUM_THREADS": 1,
        "MALLOC_MMAP_THRESHOLD_": str(2**30),
    }
    assert base == {"MALLOC_TRIM_THRESHOLD_": 65536, "OMP_NUM_THREADS": 1}  # not changed
    assert worker_environ(None) == KEEP_FREED


@pytest.mark.parametrize("off", ["0", "false", "Off", " no "])
def test_turned_off_leaves_both_as_they_are(monkeypatch, off):
    monkeypatch.setenv("DPRIV_KEEP_FREED_MEMORY", off)
    base = {"MALLOC_TRIM_THRESHOLD_": 65536}
    assert worker_environ(base) == base
    assert keep_freed_memory() is False


_FREED_RSS = """
import json, psutil, numpy as np
from dpriv.allocator import keep_freed_memory
applied = keep_freed_memory()
proc = psutil.Process()
before = proc.memory_info().rss
a = np.ones(2**25)  # 256 MiB, touched
del a
print(json.dumps({"applied": applied, "kept_mib": (proc.memory_info().rss - before) / 2**20}))
"""


def _freed(env_value: str) -> dict:
    env = {**os.environ, "DPRIV_KEEP_FREED_MEMORY": env_value}
    for var in KEEP_FREED:  # the process must start with glibc's defaults
        env.pop(var, None)
    out = subprocess.run(
        [sys.executable, "-c", _FREED_RSS], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's: elsewhere dpriv changes nothing")
def test_a_freed_large_array_stays_in_the_process_only_when_applied():
    on, off = _freed("1"), _freed("0")
    assert on["applied"] is True and off["applied"] is False
    assert on["kept_mib"] > 200  # the 256 MiB stay mapped for the next array
    assert off["kept_mib"] < 50  # glibc's default: unmapped on free


@pytest.mark.slow  # starts a LocalCluster
def test_the_local_cluster_workers_start_with_the_setting(monkeypatch):
    import dpriv.cluster as cluster_mod

    monkeypatch.delenv("DPRIV_KEEP_FREED_MEMORY", raising=False)
    with cluster_mod.dask_client(n_workers=1, say=lambda _: None) as client:
        seen = client.run(lambda: {v: os.environ.get(v) for v in (*KEEP_FREED, "OMP_NUM_THREADS")})
    (env,) = seen.values()
    assert env == {**KEEP_FREED, "OMP_NUM_THREADS": "1"}  # Dask's own variables kept
