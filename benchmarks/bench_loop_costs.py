"""Where one Dask release's time goes outside dpriv's kernels (issue 13, "release / floor").

One view of ``--rows`` tuples (the paper setting, :func:`dpriv.datasets.write_medical_view`)
released with the recommended defense on a LocalCluster of ``--workers`` single-threaded worker
processes, numba warm (``_setup.warm_up``). Printed per step of the release (the steps of
``metrics.json``; ``checks`` is everything before the loop, ``write`` the ledger's commit):

* wall seconds; the CPU seconds of this process (the client's main thread and Dask's event-loop
  thread, which runs the scheduler of a LocalCluster made here) and of the worker processes;
* graphs sent to the scheduler (each ``compute``/``persist``) and blocking round trips of the
  client (``Client.sync``: a gather, a wait, a scatter, a future's result).

Then, over the whole release, the CPU seconds of each thread of this process and of the workers
(a worker's ``MainThread`` is its event loop: messages, transfers, (de)serialisation; its
``Dask-Default-Threads`` thread runs the tasks). The time outside the kernels is what the event
loops and the client spend; the kernels' is the task threads'.

    PYTHONPATH=. python benchmarks/bench_loop_costs.py [--rows 1000000] [--npartitions 8] [--workers 2]
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter

import dask.dataframe as dd
import psutil
from _setup import arguments, as_dpriv_process, local_client, scratch, warm_recommended_view
from distributed import Client

import dpriv.ledger as ledger_mod
import dpriv.release as release_mod
import dpriv.steps as steps_mod
from dpriv.allocator import worker_config


def thread_cpu() -> dict[str, float]:
    """CPU seconds (user + system) of each thread of this process, by thread name."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: Counter = Counter()
    for t in psutil.Process(os.getpid()).threads():
        name = names.get(t.id, "other")
        out["Dask-Default-Threads" if name.split("-", 1)[-1].startswith("Dask-Default") else name] += (
            t.user_time + t.system_time
        )
    return dict(out)


class Meter:
    """Marks: per step wall, CPU of this process and of the workers, graphs and round trips."""

    def __init__(self, workers: list[psutil.Process]):
        self.workers, self.rows, self.count = workers, [], Counter()
        self._last = self._now()

    def _now(self) -> tuple:
        wcpu = sum(sum(p.cpu_times()[:2]) for p in self.workers)
        return time.perf_counter(), time.process_time(), wcpu, Counter(self.count)

    def mark(self, name: str) -> None:
        now = self._now()
        (w0, c0, k0, n0), (w1, c1, k1, n1) = self._last, now
        trips = (n1["graphs"] - n0["graphs"], n1["syncs"] - n0["syncs"])
        self.rows.append((name, w1 - w0, c1 - c0, k1 - k0, *trips))
        self._last = now


def instrument(meter: Meter) -> None:
    """Count graphs and round trips; mark each step (Steps.lap), the checks and the commit."""
    g2f, sync, lap = Client._graph_to_futures, Client.sync, steps_mod.Steps.lap
    commit, checked = ledger_mod.Ledger.commit, release_mod._checked_input

    def counted_g2f(self, *a, **k):
        meter.count["graphs"] += 1
        return g2f(self, *a, **k)

    def counted_sync(self, *a, **k):
        meter.count["syncs"] += 1
        return sync(self, *a, **k)

    def marked_lap(self, name):
        lap(self, name)
        meter.mark(name)

    def marked_commit(self, *a, **k):
        meter.mark("(between)")
        out = commit(self, *a, **k)
        meter.mark("write")
        return out

    def marked_checks(*a, **k):
        out = checked(*a, **k)
        meter.mark("checks")
        return out

    Client._graph_to_futures, Client.sync, steps_mod.Steps.lap = counted_g2f, counted_sync, marked_lap
    ledger_mod.Ledger.commit, release_mod._checked_input = marked_commit, marked_checks


def main() -> None:
    args = arguments(None, rows=1_000_000, npartitions=8, workers=2).parse_args()
    as_dpriv_process()
    with scratch("dpriv-loop-") as work, local_client(args.workers, worker_config()) as client:
        policy = warm_recommended_view(work, args.rows, args.npartitions)
        workers = [psutil.Process(p) for p in client.run(os.getpid).values()]
        meter = Meter(workers)
        instrument(meter)
        mine, theirs = thread_cpu(), client.run(thread_cpu)
        meter.mark("(start)")
        start = time.perf_counter()
        view = dd.read_parquet(work / "history.parquet")
        release_mod.release_history(view, policy, work / "ledger", npartitions=args.npartitions)
        wall = time.perf_counter() - start
        meter.mark("(after)")
        mine_end, theirs_end = thread_cpu(), client.run(thread_cpu)
    print(f"{args.rows} tuples, {args.workers} workers, load {os.getloadavg()[0]:.1f}: release {wall:.2f} s")
    heads = ("wall s", "client CPU s", "workers CPU s", "graphs", "round trips")
    print(f"{'step':12s} " + " ".join(f"{h:>{max(len(h), 6)}s}" for h in heads))
    rows = meter.rows[1:]
    for name, w, c, k, g, s in rows:
        print(f"{name:12s} {w:7.3f} {c:12.3f} {k:13.3f} {g:6d} {s:11d}")
    tot = [sum(r[i] for r in rows) for i in range(1, 6)]
    print(f"{'total':12s} {tot[0]:7.3f} {tot[1]:12.3f} {tot[2]:13.3f} {tot[3]:6d} {tot[4]:11d}")
    used = {k: round(v - mine.get(k, 0.0), 2) for k, v in mine_end.items() if v - mine.get(k, 0.0) >= 0.005}
    print("this process, CPU s by thread:", used)
    for w, end in theirs_end.items():
        was = theirs[w]
        used = {k: round(v - was.get(k, 0.0), 2) for k, v in end.items() if v > was.get(k, 0.0)}
        print("worker, CPU s by thread:", used)


if __name__ == "__main__":
    main()
