"""benchmarks/proc_peaks.py: the peak RSS of a command's process and of its children, read
against allocations of known size (touched NumPy arrays) and the kernel's own ``wait4``."""

import sys

import pytest

from benchmarks.proc_peaks import ChildPeak, is_worker, run_watched, vm_hwm

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

MIB = 2**20

# a Python process that imports NumPy, touches ``own`` MiB and frees them at once (a reader of
# the current RSS would see them for a moment at most: the figure must be the peak), then waits
# long enough for several polls before it exits; with a second figure it first runs a child that
# does the same with that many MiB (and waits for it, so that wait4 counts it)
_HOLD = """
import subprocess, sys, time
import numpy as np
own, child = int(sys.argv[1]), int(sys.argv[2])
if child:
    subprocess.run([sys.executable, "-c", sys.argv[3], str(child), "0", ""], check=True)
if own:
    a = np.ones(own * 2**20 // 8)
    del a
time.sleep(0.4)
"""


def _held(own: int, child: int = 0):
    return run_watched([sys.executable, "-c", _HOLD, str(own), str(child), _HOLD], every=0.02)


def test_the_peak_of_a_process_grows_by_what_it_allocated():
    base, big = _held(0), _held(256)
    assert base.returncode == 0 and big.returncode == 0
    grown = (big.process - base.process) / MIB
    assert 250 <= grown <= 262, grown  # 256 MiB of float64 ones, give or take the allocator
    # the kernel's figure bounds the polled one (it also counts this launcher's RSS at the
    # start, which Linux keeps across exec: equal only when this test process is small)
    assert big.tree_maxrss >= big.process - 2 * MIB


def test_a_childs_peak_is_its_own_and_wait4_bounds_the_tree():
    base = _held(0)
    got = _held(64, child=192)
    assert got.returncode == 0
    assert 58 <= (got.process - base.process) / MIB <= 70  # the child's memory is not the parent's
    (grand,) = [c for c in got.children.values() if "-c" in c.cmdline]
    assert 186 <= (grand.peak - base.process) / MIB <= 198
    # wait4's ru_maxrss is at least the largest of the process and the child it reaped
    assert got.tree_maxrss >= grand.peak - 2 * MIB


def test_a_failing_command_and_a_gone_process():
    got = run_watched([sys.executable, "-c", "raise SystemExit(3)"])
    assert got.returncode == 3 and got.children == {}
    assert vm_hwm(2**22 + 12345) is None  # above Linux's default pid_max: no such process


def test_workers_are_the_spawned_children():
    spawned = "python -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5)"
    tracker = "python -c from multiprocessing.resource_tracker import main;main(4)"
    assert is_worker(ChildPeak(spawned, 1)) and not is_worker(ChildPeak(tracker, 1))
