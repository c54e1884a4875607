"""Named, timed steps of a release, with Dask's progress bar on the terminal.

Each step persists its Dask collections (on the workers under a distributed client) and
waits for them, so the seconds recorded for a step are that step's own, as
``metrics.json`` reports them (keys, shuffle, grouping, PK, RBK, write, ...). The task
names the dashboard shows are the dpriv functions' names (``add_keys``, ``scan_range``,
``with_revised_priors`` (``revised_view`` at a first release), ``check_qi_groups``,
``advance_state`` ...).
"""

from __future__ import annotations

import contextlib
import sys
import time

import dask

from dpriv import pending_interrupt
from dpriv._dispatch import distributed_client, is_dask

#: Show Dask's text progress bar (on stderr) for each persisted step; the CLI turns it on
#: when stderr is a terminal (``--progress/--no-progress``).
SHOW_PROGRESS = False


class Steps:
    """Wall-clock seconds of named steps, in the order they ran.

    ``seconds`` maps a step name to float seconds (rounded to 0.1 ms); a name used twice
    accumulates.
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._tick = time.perf_counter()

    def lap(self, name: str) -> None:
        """Close step ``name``: the time since the previous lap (or the start). A safe point: an
        interrupt whose exception was discarded (:mod:`dpriv.pending_interrupt`) is raised here."""
        pending_interrupt.raise_pending()
        now = time.perf_counter()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self._tick, 4)
        self._tick = now

    def run(self, name: str, *collections):
        """Persist ``collections`` (Dask objects; others pass through), wait, close ``name``.

        Returns the persisted collections as a tuple, in the order given.
        """
        lazy = [c for c in collections if is_dask(c)]
        if lazy:
            done = iter(dask.persist(*lazy))
            collections = tuple(next(done) if is_dask(c) else c for c in collections)
            client = distributed_client()
            if client is not None:
                _wait(client, [c for c in collections if is_dask(c)], name)
        self.lap(name)
        return collections


def _wait(client, collections: list, name: str) -> None:
    from distributed import progress, wait

    if SHOW_PROGRESS:
        sys.stderr.write(f"{name}\n")
        with contextlib.redirect_stdout(sys.stderr):  # keep stdout for the per-release table
            progress(*collections, multi=False)
        sys.stderr.write("\n")
    else:
        wait(collections)
