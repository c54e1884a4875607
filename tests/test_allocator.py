"""Freed memory kept for reuse and numpy's huge-page advice off (dpriv.allocator): what the
command's process and the workers of its LocalCluster are told, and that a freed large array
then stays in the process."""

import json
import os
import platform
import subprocess
import sys

import pytest

from dpriv.allocator import HUGEPAGE, KEEP_FREED, keep_freed_memory, worker_environ

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def test_worker_environ_keeps_dasks_variables_and_sets_glibcs(monkeypatch):
    monkeypatch.delenv("DPRIV_KEEP_FREED_MEMORY", raising=False)
    monkeypatch.delenv(HUGEPAGE, raising=False)
    base = {"MALLOC_TRIM_THRESHOLD_": 65536, "OMP_NUM_THREADS": 1}
    env = worker_environ(base)
    assert env == {
        "MALLOC_TRIM_THRESHOLD_": str(2**31 - 1),
        "OMP_NUM_THREADS": 1,
        "MALLOC_MMAP_THRESHOLD_": str(2**30),
        "NUMPY_MADVISE_HUGEPAGE": "0",
    }
    assert base == {"MALLOC_TRIM_THRESHOLD_": 65536, "OMP_NUM_THREADS": 1}  # not changed
    assert worker_environ(None) == {**KEEP_FREED, "NUMPY_MADVISE_HUGEPAGE": "0"}


@pytest.mark.parametrize("off", ["0", "false", "Off", " no "])
def test_turned_off_leaves_glibcs_settings_as_they_are(monkeypatch, off):
    monkeypatch.setenv("DPRIV_KEEP_FREED_MEMORY", off)
    monkeypatch.delenv(HUGEPAGE, raising=False)
    base = {"MALLOC_TRIM_THRESHOLD_": 65536}
    assert worker_environ(base) == {**base, "NUMPY_MADVISE_HUGEPAGE": "0"}  # the advice is another switch
    assert keep_freed_memory() is False


def test_a_users_huge_page_switch_reaches_the_workers_as_set(monkeypatch):
    monkeypatch.setenv(HUGEPAGE, "1")
    assert HUGEPAGE not in worker_environ({})  # the worker inherits the user's own "1"
    monkeypatch.delenv(HUGEPAGE)
    assert worker_environ({HUGEPAGE: "1"})[HUGEPAGE] == "1"  # set in Dask's pre-spawn environment


_ADVICE = """
import json
from dpriv.allocator import no_huge_page_advice
try:
    from numpy._core.multiarray import _set_madvise_hugepage
except ImportError:
    from numpy.core.multiarray import _set_madvise_hugepage
turned = no_huge_page_advice()
print(json.dumps({"turned": turned, "advice": _set_madvise_hugepage(False)}))  # returns the setting
"""


@pytest.mark.parametrize("user", [None, "1", "0"])
def test_numpys_advice_is_off_unless_the_user_set_numpys_switch(user):
    env = {k: v for k, v in os.environ.items() if k != HUGEPAGE}
    if user is not None:
        env[HUGEPAGE] = user
    out = subprocess.run([sys.executable, "-c", _ADVICE], env=env, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["turned"] is (user is None)
    assert got["advice"] is (user == "1")  # off, or as the user's switch set it


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
    monkeypatch.delenv(HUGEPAGE, raising=False)
    with cluster_mod.dask_client(n_workers=1, say=lambda _: None) as client:
        seen = client.run(lambda: {v: os.environ.get(v) for v in (*KEEP_FREED, HUGEPAGE, "OMP_NUM_THREADS")})
    (env,) = seen.values()
    assert env == {**KEEP_FREED, HUGEPAGE: "0", "OMP_NUM_THREADS": "1"}  # Dask's own variables kept
