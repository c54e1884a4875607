"""numba's on-disk cache of dpriv's kernels: will this run compile them, and where do they go.

Every kernel is ``@njit(cache=True)``: the first run on a machine compiles them (about two
minutes on 2 cores) and writes the machine code next to the sources (``__pycache__``), or,
where the package folder is read-only (a system-wide install), in numba's per-user cache
(``~/.cache/numba``); ``NUMBA_CACHE_DIR`` overrides both. Later runs load them in seconds.
:func:`first_compile_note` tells the CLI whether to say so before the work starts.

Source: numba's caching documentation ("Cache sharing", "Cache clearing", NUMBA_CACHE_DIR),
https://numba.readthedocs.io/en/stable/developer/caching.html
"""

from __future__ import annotations

import importlib
from pathlib import Path

#: The modules that define numba kernels (imported by the release anyway).
KERNEL_MODULES = (
    "dpriv.divergence",
    "dpriv.criteria",
    "dpriv.anonymity.generalize",
    "dpriv.hilbert.curve",
    "dpriv.knowledge.prior",
    "dpriv.knowledge.revision",
    "dpriv.adversary.smoothing",
    "dpriv.adversary.history_revision",
)


def kernels() -> list:
    """The numba dispatchers of :data:`KERNEL_MODULES` that are cached on disk."""
    from numba.core.registry import CPUDispatcher

    found = []
    for name in KERNEL_MODULES:
        for value in vars(importlib.import_module(name)).values():
            if isinstance(value, CPUDispatcher) and getattr(value, "_cache", None) is not None:
                if value.__module__ == name and value not in found:
                    found.append(value)
    return found


def _index_path(kernel) -> Path | None:
    """The cache index file of ``kernel`` (numba internals; None where they differ)."""
    try:
        return Path(kernel._cache._cache_file._index_path)
    except AttributeError:
        return None


def uncached_kernels() -> list[str]:
    """``module.function`` of every kernel with no compiled code in numba's on-disk cache
    (the ones the next run compiles). Empty where numba's internals cannot tell."""
    out = []
    for kernel in kernels():
        path = _index_path(kernel)
        if path is not None and not path.is_file():
            out.append(f"{kernel.__module__}.{kernel.__name__}")
    return out


def cache_dir() -> Path | None:
    """The folder numba caches dpriv's kernels in on this machine (None where unknown)."""
    for kernel in kernels():
        path = _index_path(kernel)
        if path is not None:
            return path.parent
    return None


def first_compile_note() -> str | None:
    """One line for the user when some kernels are not compiled yet, else None."""
    missing = [k for k in kernels() if (path := _index_path(k)) is not None and not path.is_file()]
    if not missing:
        return None
    return (
        f"first run: numba compiles {len(missing)} of dpriv's kernels, up to ~2 minutes on 2 cores; "
        f"they are cached on disk for later runs (in {_index_path(missing[0]).parent}; "
        "NUMBA_CACHE_DIR moves the cache)"
    )
