"""Peak resident memory of a command run as its own process, and of each process it starts.

What a user's ``dpriv release`` holds is the memory of *that* process, not of a benchmark that
also generated the view: :func:`run_watched` starts the command, polls the kernel's high-water
mark of resident memory (``VmHWM`` in ``/proc/<pid>/status``: the peak RSS so far, never
lowered, so a poll misses nothing but what the process adds after the last one) of the process
and of each of its descendants (a LocalCluster's workers are children of the client process),
and reaps it with ``os.wait4``, whose ``ru_maxrss`` (the largest peak of the process and of the
descendants it reaped) bounds the polled figures from above. It is exact only when the
launching process is small: Linux keeps the high-water mark a process had before its ``exec``,
and a command started by ``vfork``/``posix_spawn`` (as :mod:`subprocess` does) had the
launcher's memory until then (under pytest, the test process's whole RSS). Linux only (``/proc``).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from typing import NamedTuple

import psutil


class ChildPeak(NamedTuple):
    """One descendant: its command line (joined, as ``ps`` shows it) and its peak RSS in bytes."""

    cmdline: str
    peak: int


class Peaks(NamedTuple):
    """What :func:`run_watched` measured. Bytes throughout.

    ``process``: the started process's own peak RSS (VmHWM), polled; ``children``: pid ->
    :class:`ChildPeak` for every descendant seen alive at a poll; ``tree_maxrss``: ``wait4``'s
    ``ru_maxrss`` of the started process, the largest peak among it and the descendants it
    reaped (from the kernel; at least the launcher's RSS when it started the command, see the
    module's docstring); ``wall_s``: seconds from the start to the reaping;
    ``returncode``: the exit code (negative: killed by that signal).
    """

    process: int
    children: dict[int, ChildPeak]
    tree_maxrss: int
    wall_s: float
    returncode: int


def status_bytes(pid: int | str, *keys: str) -> dict[str, int]:
    """The memory figures ``keys`` (``VmHWM``, ``VmRSS``...) of the live process ``pid``
    (``"self"``: this one) in bytes, from ``/proc/<pid>/status``; {} once it is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in keys:
                    out[key] = int(value.split()[0]) * 1024  # the kernel writes kB
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return {}
    return out


def vm_hwm(pid: int) -> int | None:
    """Peak RSS in bytes of the live process ``pid`` (``VmHWM``), ``None`` once it is gone
    (or a zombie: its memory map, and with it the figure, is released at exit)."""
    return status_bytes(pid, "VmHWM").get("VmHWM")


def _poll(pid: int, peaks: dict[int, ChildPeak]) -> int | None:
    """One poll: updates ``peaks`` for the descendants alive now, returns ``pid``'s VmHWM."""
    try:
        below = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        below = []
    for child in below:
        hwm = vm_hwm(child.pid)
        if hwm is None:
            continue
        seen = peaks.get(child.pid)
        if seen is None:
            try:
                cmd = " ".join(child.cmdline())
            except psutil.Error:
                continue
            seen = ChildPeak(cmd, 0)
        peaks[child.pid] = seen._replace(peak=max(seen.peak, hwm))
    return vm_hwm(pid)


def run_watched(
    cmd: Sequence[str], *, every: float = 0.05, env: dict[str, str] | None = None, log=None
) -> Peaks:
    """Run ``cmd`` (an argument list, no shell) to its end, polling peak RSS every ``every`` s.

    ``log``: a file object for the command's stdout and stderr (default: inherited).
    Raises OSError when the command cannot be started; a failing command is not an error here
    (see ``returncode``).
    """
    start = time.perf_counter()
    proc = subprocess.Popen(list(cmd), env=env, stdout=log, stderr=log)
    own, children = 0, {}
    while True:
        hwm = _poll(proc.pid, children)
        if hwm is not None:
            own = max(own, hwm)
        # reaped here (not by Popen) so that the child's own resource usage comes back with it
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(every)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait for it again
    return Peaks(own, children, usage.ru_maxrss * 1024, wall, proc.returncode)


def is_worker(child: ChildPeak) -> bool:
    """A Dask worker of a LocalCluster (a ``multiprocessing`` spawn child of the client), not
    multiprocessing's resource tracker or fork server."""
    return "spawn_main" in child.cmdline and "resource_tracker" not in child.cmdline
