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

The same processes also run without numpy's huge-page advice (:func:`no_huge_page_advice`):
numpy asks the kernel for transparent huge pages for every array of 4 MiB and more, and where
the kernel's THP ``defrag`` setting is ``madvise`` (the common default) a fault in such an
array may compact memory on the spot, at a cost that depends on how fragmented the machine's
memory is. On the 2-core VM the first touch of a (57, 10^6) float64 block (the window of a
10^6-respondent state) took 0.10-1.24 s with the advice and 0.17 s without, and a 10^6-tuple
release in a fresh process 1.19x as long (median of 3, ``benchmarks/bench_hugepages.py``).
``NUMPY_MADVISE_HUGEPAGE`` (numpy's own switch) set to anything in the environment is obeyed:
dpriv then leaves the advice as numpy set it.
"""

from __future__ import annotations

import ctypes
import os

import dask

#: glibc's settings, as environment variables a new process reads at start (the Nanny sets
#: them before it spawns a worker). Dask's own default trims at 64 KiB (``MALLOC_TRIM_THRESHOLD_``):
#: that setting returns memory promptly, which is what costs the page faults here.
KEEP_FREED = {"MALLOC_MMAP_THRESHOLD_": str(2**30), "MALLOC_TRIM_THRESHOLD_": str(2**31 - 1)}

#: numpy's switch of its huge-page advice, read when numpy is imported ("0": off).
HUGEPAGE = "NUMPY_MADVISE_HUGEPAGE"

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


def no_huge_page_advice() -> bool:
    """Turn off numpy's huge-page advice in this process (numpy is imported already, so its
    environment switch comes too late; numpy's own setter is used, as its switch would).

    Returns True when turned off; False when the user's environment sets
    ``NUMPY_MADVISE_HUGEPAGE`` (obeyed as numpy read it) or this numpy has no setter. Never
    raises: the setting changes speed, never a result.
    """
    if HUGEPAGE in os.environ:
        return False
    try:  # numpy >= 2 keeps it in numpy._core, numpy 1.x in numpy.core
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:
        try:
            from numpy.core.multiarray import _set_madvise_hugepage
        except ImportError:  # pragma: no cover - a numpy without the setting
            return False
    _set_madvise_hugepage(False)
    return True


def worker_environ(base: dict | None) -> dict:
    """The environment a LocalCluster's Nanny sets before spawning a worker: ``base`` (Dask's
    ``distributed.nanny.pre-spawn-environ``) with :data:`KEEP_FREED` over it (unless turned
    off) and numpy's huge-page advice off (``NUMPY_MADVISE_HUGEPAGE=0``, unless this process's
    environment or ``base`` sets it). A new dict; ``base`` is not changed."""
    env = dict(base or {})
    if enabled():
        env.update(KEEP_FREED)
    if HUGEPAGE not in os.environ:
        env.setdefault(HUGEPAGE, "0")
    return env


def worker_config() -> dict:
    """``dask.config.set(worker_config())`` around the making of a LocalCluster: its workers
    start with :func:`worker_environ` of the current pre-spawn environment."""
    return {SPAWN_ENV: worker_environ(dask.config.get(SPAWN_ENV, {}))}
