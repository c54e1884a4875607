"""numba's on-disk cache of dpriv's kernels: will this run compile them, and where do they go.

Every kernel is ``@njit(cache=True)``: the first run on a machine compiles them (about two
minutes on 2 cores) and writes the machine code next to the sources (``__pycache__``), or,
where the package folder is read-only (a system-wide install), in numba's per-user cache
(``~/.cache/numba``); ``NUMBA_CACHE_DIR`` overrides both. Later runs load them in seconds.
:class:`CompileNotice` says so once per command, when a compile actually happens (numba's
``numba:compile`` event, which a load from the on-disk cache does not raise), in this process or
on a Dask worker (:class:`dpriv.worker_notice.WorkerCompileNotice`); a kernel the command never calls is never
announced.

Source: numba's caching documentation ("Cache sharing", "Cache clearing", NUMBA_CACHE_DIR),
https://numba.readthedocs.io/en/stable/developer/caching.html; the compile event: numba's
"Notes on the event API" (``numba.core.event``, raised in ``Dispatcher.compile`` after a cache
miss), https://numba.readthedocs.io/en/stable/developer/event_api.html
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from pathlib import Path

from numba.core import event
from numba.core.event import Listener

#: The modules that define numba kernels (imported by the release anyway).
KERNEL_MODULES = (
    "dpriv.divergence",
    "dpriv.anonymity.generalize",
    "dpriv.hilbert.curve",
    "dpriv.knowledge.prior",
    "dpriv.knowledge.revision",
    "dpriv.adversary.smoothing",
    "dpriv.adversary.history_revision",
    "dpriv.int_text_hash",
    "dpriv.adversary.fb_steps",
    "dpriv.adversary.retro_kernels",
    "dpriv.adversary.assign_kernel",
    "dpriv.adversary.chain_kernel",
    "dpriv.anonymity.group_stats",
    "dpriv.anonymity.topdown_levels",
    "dpriv.anonymity.topdown_sums",
    "dpriv.group_table",
    "dpriv.row_order",
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


#: numba's event of a kernel compiled (not loaded from the on-disk cache): numba.core.event
COMPILE_EVENT = "numba:compile"


def is_dpriv_kernel(dispatcher) -> bool:
    """Whether a numba ``dispatcher`` (from a compile event's data) is one of dpriv's."""
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    return module.startswith("dpriv.")


def compile_note(where: str | Path | None) -> str:
    """The line said when numba compiles a dpriv kernel (``where``: its on-disk cache folder)."""
    return (
        "numba is compiling dpriv's kernels (their first use on this machine, up to ~2 minutes on "
        f"2 cores); they are cached on disk for later runs (in {where or 'numba cache'}; "
        "NUMBA_CACHE_DIR moves the cache)"
    )


class CompileListener(Listener):
    """Calls ``found(cache folder or None)`` at the start of each compile of a dpriv kernel
    (numba raises the event only on a cache miss, never for a kernel loaded from disk)."""

    def __init__(self, found: Callable[[str | None], None]) -> None:
        self.found = found

    def on_start(self, event) -> None:
        dispatcher = (event.data or {}).get("dispatcher")
        if is_dpriv_kernel(dispatcher):
            path = _index_path(dispatcher)
            self.found(str(path.parent) if path is not None else None)

    def on_end(self, event) -> None:
        pass


class CompileNotice:
    """Say :func:`compile_note` once, at the first compile of a dpriv kernel in this process
    (:meth:`listening`) or on a Dask worker (:meth:`on_worker_event`, see
    :class:`dpriv.worker_notice.WorkerCompileNotice`); loads from the on-disk cache say nothing.
    ``said``: whether it was said. Numba compiles under its global compiler lock and the
    worker events arrive on the client's event loop, so one flag is enough."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.said = False

    def once(self, where: str | Path | None) -> None:
        if not self.said:
            self.said = True
            self.say(compile_note(where))

    @contextlib.contextmanager
    def listening(self) -> Iterator[CompileNotice]:
        """Listen to numba's compile events in this process for the duration."""
        with event.install_listener(COMPILE_EVENT, CompileListener(self.once)):
            yield self

    def on_worker_event(self, message: tuple[float, dict]) -> None:
        """Handler of a worker's report (``Client.subscribe_topic``): ``(time, {"where": ...})``."""
        self.once(message[1].get("where"))
