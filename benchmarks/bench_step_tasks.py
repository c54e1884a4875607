"""Tasks and bytes moved per step of one Dask release (issue 13: the event loops' CPU grows with both).

The release of ``bench_loop_costs.py`` (one view of ``--rows`` tuples, the recommended defense, a
LocalCluster of ``--workers`` single-threaded workers, numba warm), with its per-step table, then
per step: the tasks the workers ran (the scheduler's task stream, each task counted in the step
its computation ended in), the bytes fetched from another worker (the workers' incoming transfer
logs) and the bytes sent to the client (their outgoing logs, the requests not from a worker), and
for ``--detail`` steps the tasks by key prefix (what they are).

    PYTHONPATH=. python benchmarks/bench_step_tasks.py [--rows 1000000] [--detail pk,metrics]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

import dask
import dask.dataframe as dd
import psutil
from bench_loop_costs import Meter, instrument
from bench_scale import warm_recommended_view
from distributed import Client, LocalCluster
from distributed.utils import key_split

import dpriv.release as release_mod
from dpriv.allocator import keep_freed_memory, no_huge_page_advice, worker_config

MIB = 2**20
#: enough room in the scheduler's task stream and the workers' transfer logs for a whole release
LOGS = {"distributed.admin.low-level-log-length": 100_000}


class EpochMeter(Meter):
    """:class:`bench_loop_costs.Meter` that also keeps the epoch time of each mark (the task
    stream's and the transfer logs' clock)."""

    def __init__(self, workers: list[psutil.Process]):
        super().__init__(workers)
        self.epochs: list[tuple[str, float]] = []

    def mark(self, name: str) -> None:
        super().mark(name)
        self.epochs.append((name, time.time()))


def step_of(t: float, epochs: list[tuple[str, float]]) -> str | None:
    """The step whose interval (previous mark, its mark] holds epoch time ``t``."""
    for (_, lo), (name, hi) in zip(epochs, epochs[1:]):
        if lo < t <= hi:
            return name
    return None


def _logs(dask_worker) -> dict:
    return {"in": list(dask_worker.transfer_incoming_log), "out": list(dask_worker.transfer_outgoing_log)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--npartitions", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--detail", default="pk,metrics", help="steps whose tasks are listed by key prefix")
    args = ap.parse_args()
    keep_freed_memory()
    no_huge_page_advice()
    work = Path(tempfile.mkdtemp(prefix="dpriv-tasks-"))
    try:
        with (
            dask.config.set({**worker_config(), **LOGS}),
            LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=":0") as lc,
            Client(lc) as client,
        ):
            policy = warm_recommended_view(work, args.rows, args.npartitions)
            client.get_task_stream()  # starts the scheduler's task stream
            addresses = set(client.scheduler_info()["workers"])
            workers = [psutil.Process(p) for p in client.run(os.getpid).values()]
            meter = EpochMeter(workers)
            instrument(meter)
            meter.mark("(start)")
            start = time.perf_counter()
            release_mod.release_history(
                dd.read_parquet(work / "history.parquet"),
                policy,
                work / "ledger",
                npartitions=args.npartitions,
            )
            wall = time.perf_counter() - start
            meter.mark("(after)")
            stream = client.get_task_stream(start=meter.epochs[0][1] - 1)
            after = client.run(_logs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()[0]
    print(f"{args.rows} tuples, {args.workers} workers, load {load:.1f}: release {wall:.2f} s")
    tasks, prefixes = Counter(), {}
    for entry in stream:
        stops = [s["stop"] for s in entry.get("startstops", ()) if s["action"] == "compute"]
        step = step_of(max(stops), meter.epochs) if stops else None
        tasks[step] += 1
        prefixes.setdefault(step, Counter())[key_split(entry["key"])] += 1
    moved, to_client = Counter(), Counter()
    for logs in after.values():  # the transfers before the release are left out by their start time
        for rec in logs["in"]:
            if rec["start"] >= meter.epochs[0][1] - 1e-3:
                moved[step_of(rec["stop"], meter.epochs)] += rec["total"]
        for rec in logs["out"]:
            if rec["start"] >= meter.epochs[0][1] - 1e-3 and rec["who"] not in addresses:
                to_client[step_of(rec["stop"], meter.epochs)] += rec["total"]
    heads = (
        "wall s",
        "client CPU s",
        "workers CPU s",
        "graphs",
        "round trips",
        "tasks",
        "w->w MiB",
        "->client MiB",
    )
    print(f"{'step':12s} " + " ".join(f"{h:>{max(len(h), 6)}s}" for h in heads))
    for name, w, c, k, g, s in meter.rows[1:]:
        print(
            f"{name:12s} {w:6.3f} {c:12.3f} {k:13.3f} {g:6d} {s:11d} {tasks[name]:6d} "
            f"{moved[name] / MIB:8.1f} {to_client[name] / MIB:12.2f}"
        )
    print(f"{'total':12s} tasks {sum(tasks.values())}, w->w {sum(moved.values()) / MIB:.1f} MiB")
    for name in args.detail.split(","):
        print(f"{name}: " + ", ".join(f"{p} {n}" for p, n in prefixes.get(name, Counter()).most_common()))


if __name__ == "__main__":
    main()
