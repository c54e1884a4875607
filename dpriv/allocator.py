"""Freed memory kept for reuse: glibc's allocator told not to hand large arrays back to the OS.

A release makes and drops many arrays of (n, M) floats (priors, posteriors, window columns).
glibc serves an allocation above its mmap threshold (128 KiB to 32 MiB, adjusted as it goes)
with fresh pages from the OS and returns them on free, so each such array pays its page faults
again; on the 2-core VM where dpriv is measured a first touch of fresh memory costs up to
~6 ms per MiB. With the mmap threshold at 1 GiB and trimming off, freed arrays stay in the
process and the next array of the same size reuses pages already mapped. Measured at 10^6
tuples (docs/scaling.md "Freed memory kept for reuse"): in process 9.3-11.7 s against
12.6-16.8 s, on 2 workers 13.9-14.3 s against 16.2-16.9 s, the largest worker's peak RSS
1.33 against 1.08 GiB; 10^7 on 2 workers 177-184 s against 210 s, 7.4-8.0 against 6.8 GiB.

The ``dpriv`` command applies it to its own process (:func:`keep_freed_memory`, from the CLI's
callback) and to the workers of the LocalCluster it starts (:func:`worker_environ`, set before
they are spawned); a library user's process and a user's own scheduler are left as they are.
``DPRIV_KEEP_FREED_MEMORY=0`` in the environment turns both off. Elsewhere than glibc (macOS,
musl, Windows) nothing is changed.
"""

from __future__ import annotations

import ctypes
import os

import dask

#: glibc's settings, as environment variables a new process reads at start (the Nanny sets
#: them before it spawns a worker). Dask's own default trims at 64 KiB (``MALLOC_TRIM_THRESHOLD_``):
#: that setting returns memory promptly, which is what costs the page faults here.
KEEP_FREED = {"MALLOC_MMAP_THRESHOLD_": str(2**30), "MALLOC_TRIM_THRESHOLD_": str(2**31 - 1)}

#: mallopt parameter numbers (glibc malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3

OFF = "DPRIV_KEEP_FREED_MEMORY"

#: Dask's setting of what a Nanny puts in the environment before spawning its worker.
SPAWN_ENV = "distributed.nanny.pre-spawn-environ"


def enabled() -> bool:
    """Whether the setting is wanted: ``DPRIV_KEEP_FREED_MEMORY`` unset, or anything but
    ``0``, ``false``, ``no`` or ``off``."""
    return os.environ.get(OFF, "1").strip().lower() not in ("0", "false", "no", "off")


def keep_freed_memory() -> bool:
    """Apply :data:`KEEP_FREED` to this process through glibc's ``mallopt``.

    Returns True when glibc took both settings; False when turned off
    (``DPRIV_KEEP_FREED_MEMORY=0``), not on glibc, or refused. Never raises: the setting
    changes speed and resident memory, never a result.
    """
    if not enabled():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the interpreter runs on
    except (OSError, AttributeError):  # not glibc: nothing to tune
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mmap_ok = mallopt(_M_MMAP_THRESHOLD, int(KEEP_FREED["MALLOC_MMAP_THRESHOLD_"]))
    trim_ok = mallopt(_M_TRIM_THRESHOLD, int(KEEP_FREED["MALLOC_TRIM_THRESHOLD_"]))
    return bool(mmap_ok and trim_ok)


def worker_environ(base: dict | None) -> dict:
    """The environment a LocalCluster's Nanny sets before spawning a worker: ``base`` (Dask's
    ``distributed.nanny.pre-spawn-environ``) with :data:`KEEP_FREED` over it, or ``base`` as
    it is when turned off. A new dict; ``base`` is not changed."""
    env = dict(base or {})
    if enabled():
        env.update(KEEP_FREED)
    return env


def worker_config() -> dict:
    """``dask.config.set(worker_config())`` around the making of a LocalCluster: its workers
    start with :func:`worker_environ` of the current pre-spawn environment."""
    return {SPAWN_ENV: worker_environ(dask.config.get(SPAWN_ENV, {}))}
