"""One-time notices of a command (fresh-user findings, issue 13 item 5 follow-up): the idle
release-gate keys warning (dpriv/policy_gate.py) and numba's compile note
(dpriv/numba_cache.py) are said once per command, and the compile note only when numba
compiles a kernel (not when it loads one from the on-disk cache)."""

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.cluster import _compile_reports
from dpriv.datasets import medical_history, write_history
from dpriv.numba_cache import CompileNotice
from dpriv.policy import ReleasePolicy

ROOT = Path(__file__).resolve().parents[1]
IDLE = "retro_lever set but the release gate is off"


def test_the_idle_gate_keys_warning_is_printed_once_per_command(tmp_path):
    mh = medical_history(n_views=2, view_size=60, seed=1)
    extra = {"privacy": {"t": 1.0, "j": 10.0, "k": 3, "max_suppression": 1.0, "retro_lever": "k"}}
    policy = write_history(tmp_path, mh, policy_extra=extra)
    args = ["release", str(tmp_path / "history.parquet"), "--ledger", str(tmp_path / "l")]
    res = CliRunner().invoke(app, [*args, "--policy", str(policy)])
    assert res.exit_code == 0, res.output
    assert res.output.count(IDLE) == 1, res.output  # was 3: once per copy of the policy


def test_copies_of_a_policy_do_not_warn_again_unless_the_gate_keys_change():
    with pytest.warns(UserWarning, match=IDLE):
        idle = ReleasePolicy(id="i", qi=["a"], sensitive="s", retro_lever="k")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy = idle.with_overrides(k=3, npartitions=2)  # a command's copies: silent
        copy.resolve(__import__("pandas").DataFrame({"i": [1], "a": [2], "s": ["x"]}))
        copy.with_overrides(retro_max_gain=0.1)  # the gate turned on: nothing idle
    assert copy.k == 3 and copy.retro_lever == "k"  # a copy all the same
    with pytest.warns(UserWarning, match=r"^retro_attendance, retro_lever set"):
        copy.with_overrides(retro_attendance=0.5)  # the gate keys changed: checked anew
    with pytest.warns(UserWarning, match=IDLE):  # read again (a stored policy, a file): warned
        ReleasePolicy.from_dict(idle.model_dump())


_PROBE = """
import json, sys
import numpy as np
from dpriv import divergence
from dpriv.numba_cache import CompileNotice, uncached_kernels
said = []
notice = CompileNotice(said.append)
with notice.listening():
    if sys.argv[1] == "compile":
        divergence.entropy(np.array([0.5, 0.5]), 2.0)
        divergence.entropy(np.array([0.25, 0.75]), 2.0)
    elif sys.argv[1] == "load":
        divergence.entropy(np.array([0.5, 0.5]), 2.0)
print(json.dumps({"said": said, "uncached": uncached_kernels()}))
"""


def _probe(cache: Path, what: str) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, what], env=env, capture_output=True, text=True, check=True, timeout=300
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_compile_note_is_said_once_and_only_when_a_kernel_is_compiled(tmp_path):
    cache = tmp_path / "numba-cache"
    first = _probe(cache, "compile")  # an empty cache: entropy compiles (once for both calls)
    assert len(first["said"]) == 1, first["said"]
    note = first["said"][0]
    assert note.startswith("numba is compiling dpriv's kernels") and str(cache) in note
    # a new process loads entropy from the disk cache: nothing said, although most kernels
    # (never called here) are still not compiled; the old note said "first run" every time
    second = _probe(cache, "load")
    assert second["said"] == [] and "dpriv.divergence.entropy" not in second["uncached"]
    assert len(second["uncached"]) >= 10
    assert _probe(cache, "nothing")["said"] == []


def test_a_compile_on_a_worker_is_said_once_on_the_client(client):
    """The workers report their first compile (a worker plugin, distributed's events); two
    reports, from two tasks, make one line. The compile event is raised by hand, as numba's
    dispatcher raises it on a cache miss."""
    said = []
    notice = CompileNotice(said.append)

    def compile_event(where):
        from numba.core import event

        from dpriv.divergence import entropy

        event.broadcast(event.Event("numba:compile", event.EventStatus.START, data={"dispatcher": entropy}))
        return where

    with _compile_reports(client, notice):
        client.gather([client.submit(compile_event, i, pure=False) for i in range(2)])
        deadline = time.monotonic() + 10
        while not said and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # a second line would arrive now
    assert len(said) == 1 and said[0].startswith("numba is compiling dpriv's kernels"), said
    # the plugin is gone with the command: a user's scheduler keeps nothing of dpriv
    plugins = client.run(lambda dask_worker: sorted(dask_worker.plugins))
    assert all("dpriv-numba-compile-notice" not in names for names in plugins.values()), plugins


def test_every_module_with_cached_kernels_is_listed():
    """:data:`KERNEL_MODULES` is what :func:`uncached_kernels` and :func:`cache_dir` look at: a
    module with ``@njit(cache=True)`` kernels left out of it is a kernel they never report."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    import dpriv
    from dpriv.numba_cache import KERNEL_MODULES

    with_kernels = set()
    for info in pkgutil.walk_packages(dpriv.__path__, "dpriv."):
        if info.name.startswith("dpriv.cli") or info.name == "dpriv.__main__":
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            cached = isinstance(value, CPUDispatcher) and getattr(value, "_cache", None) is not None
            if cached and value.__module__ == info.name:
                with_kernels.add(info.name)
    assert with_kernels == set(KERNEL_MODULES)
