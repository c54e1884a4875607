"""A scheduler plugin that records, for each task sent to a worker, the bytes of its inputs held
elsewhere (what that worker must fetch) and whether the scheduler treated it as root-ish (placed
on the least busy worker, wherever its inputs lie): which tasks make the workers move data.

Used by ``bench_step_tasks.py --placement``."""

from __future__ import annotations

import time

from distributed.diagnostics.plugin import SchedulerPlugin
from distributed.utils import key_split


class PlacementLog(SchedulerPlugin):
    """Rows ``(epoch, task prefix, input prefix, bytes held elsewhere, root-ish)`` for each input
    of a task that was not on the worker the task went to (``processing`` transitions)."""

    name = "dpriv-placement-log"

    def __init__(self):
        self.rows: list[tuple] = []

    async def start(self, scheduler) -> None:
        self.scheduler = scheduler

    def transition(self, key, start, finish, *args, **kwargs) -> None:
        if finish != "processing":
            return
        ts = self.scheduler.tasks.get(key)
        if ts is None or ts.processing_on is None:
            return
        ws = ts.processing_on
        rootish = self.scheduler.is_rootish(ts)
        for dep in ts.dependencies:
            if ws not in dep.who_has:
                self.rows.append((time.time(), key_split(key), key_split(dep.key), dep.nbytes, rootish))


def rows_of(dask_scheduler) -> list[tuple]:
    """The plugin's rows (run on the scheduler with ``Client.run_on_scheduler``)."""
    return dask_scheduler.plugins[PlacementLog.name].rows
