"""Tasks and bytes moved per step of one Dask release (issue 13: the event loops' CPU grows with both).

The release of ``bench_loop_costs.py`` (one view of ``--rows`` tuples, the recommended defense, a
LocalCluster of ``--workers`` single-threaded workers, numba warm), with its per-step table, then
per step: the tasks the workers ran (the scheduler's task stream, each task counted in the step
its computation ended in), the bytes fetched from another worker (the workers' incoming transfer
logs) and the bytes sent to the client (their outgoing logs, the requests not from a worker), and
for ``--detail`` steps the tasks by key prefix (what they are) with each worker's compute seconds.
Per step also: the CPU seconds of the client's main thread and of its other threads (the
scheduler of the LocalCluster made here) and each worker's busy seconds (task stream).

    PYTHONPATH=. python benchmarks/bench_step_tasks.py [--rows 1000000] [--detail pk,metrics]
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

import dask.dataframe as dd
import psutil
from _setup import arguments, as_dpriv_process, local_client, scratch, warm_recommended_view
from bench_loop_costs import Meter, instrument, thread_cpu
from distributed.utils import key_split
from placement_log import PlacementLog, rows_of

import dpriv.release as release_mod
from dpriv.allocator import worker_config

MIB = 2**20
#: enough room in the scheduler's task stream and the workers' transfer logs for a whole release
LOGS = {"distributed.admin.low-level-log-length": 100_000}


class EpochMeter(Meter):
    """:class:`bench_loop_costs.Meter` that also keeps the epoch time of each mark (the task
    stream's and the transfer logs' clock) and the CPU seconds of this process's main thread (the
    client: graphs, optimisation, gathers) apart from its other threads (Dask's event loop, which
    runs a LocalCluster's scheduler made here)."""

    def __init__(self, workers: list[psutil.Process]):
        super().__init__(workers)
        self.epochs: list[tuple[str, float]] = []
        self.threads: list[tuple[float, float]] = []

    def mark(self, name: str) -> None:
        super().mark(name)
        self.epochs.append((name, time.time()))
        cpu = thread_cpu()
        main = cpu.get("MainThread", 0.0)
        self.threads.append((main, sum(cpu.values()) - main))


def busy_seconds(stream: list[dict], epochs: list[tuple[str, float]]) -> dict[str, Counter]:
    """Per step, each worker's seconds computing tasks (the task stream's ``compute`` intervals,
    clipped to the step's interval): how much of the step each worker was in use."""
    out: dict[str, Counter] = {}
    for entry in stream:
        for s in entry.get("startstops", ()):
            if s["action"] != "compute":
                continue
            for (_, lo), (name, hi) in zip(epochs, epochs[1:]):
                overlap = min(hi, s["stop"]) - max(lo, s["start"])
                if overlap > 0:
                    out.setdefault(name, Counter())[entry["worker"]] += overlap
    return out


def step_of(t: float, epochs: list[tuple[str, float]]) -> str | None:
    """The step whose interval (previous mark, its mark] holds epoch time ``t``."""
    for (_, lo), (name, hi) in zip(epochs, epochs[1:]):
        if lo < t <= hi:
            return name
    return None


def _logs(dask_worker) -> dict:
    return {"in": list(dask_worker.transfer_incoming_log), "out": list(dask_worker.transfer_outgoing_log)}


def main() -> None:
    ap = arguments(None, rows=1_000_000, npartitions=8, workers=2)
    ap.add_argument("--detail", default="pk,metrics", help="steps whose tasks are listed by key prefix")
    ap.add_argument("--json", default="", help="write the per-step rows to this file")
    ap.add_argument("--no-stealing", action="store_true", help="the scheduler's work stealing off")
    ap.add_argument(
        "--placement", action="store_true", help="per step, the inputs fetched by which tasks (placement_log)"
    )
    args = ap.parse_args()
    as_dpriv_process()
    config = {**worker_config(), **LOGS, "distributed.scheduler.work-stealing": not args.no_stealing}
    with scratch("dpriv-tasks-") as work, local_client(args.workers, config) as client:
        policy = warm_recommended_view(work, args.rows, args.npartitions)
        client.get_task_stream()  # starts the scheduler's task stream
        if args.placement:
            client.register_plugin(PlacementLog())
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
        placed = client.run_on_scheduler(rows_of) if args.placement else []
    load = os.getloadavg()[0]
    print(f"{args.rows} tuples, {args.workers} workers, load {load:.1f}: release {wall:.2f} s")
    tasks, prefixes, spent = Counter(), {}, {}
    for entry in stream:
        stops = [s["stop"] for s in entry.get("startstops", ()) if s["action"] == "compute"]
        step = step_of(max(stops), meter.epochs) if stops else None
        tasks[step] += 1
        prefixes.setdefault(step, Counter())[key_split(entry["key"])] += 1
        per = spent.setdefault(step, {}).setdefault(key_split(entry["key"]), Counter())
        for s in entry.get("startstops", ()):
            if s["action"] == "compute":
                per[entry["worker"]] += s["stop"] - s["start"]
    moved, to_client, moved_keys = Counter(), Counter(), {}
    for logs in after.values():  # the transfers before the release are left out by their start time
        for rec in logs["in"]:
            if rec["start"] >= meter.epochs[0][1] - 1e-3:
                where = step_of(rec["stop"], meter.epochs)
                moved[where] += rec["total"]
                for key, nbytes in rec["keys"].items():
                    what = moved_keys.setdefault(where, Counter())
                    what[key_split(key)] += nbytes or 0
        for rec in logs["out"]:
            if rec["start"] >= meter.epochs[0][1] - 1e-3 and rec["who"] not in addresses:
                to_client[step_of(rec["stop"], meter.epochs)] += rec["total"]
    busy = busy_seconds(stream, meter.epochs)
    names = sorted(addresses)
    heads = (
        "wall s",
        "client CPU s",
        "main s",
        "sched s",
        "workers CPU s",
        "busy s (per worker)",
        "graphs",
        "round trips",
        "tasks",
        "w->w MiB",
        "->client MiB",
    )
    print(f"{'step':12s} " + " ".join(f"{h:>{max(len(h), 6)}s}" for h in heads))
    rows = []
    for i, (name, w, c, k, g, s) in enumerate(meter.rows[1:], start=1):
        main = meter.threads[i][0] - meter.threads[i - 1][0]
        sched = meter.threads[i][1] - meter.threads[i - 1][1]
        per = [busy.get(name, Counter())[a] for a in names]
        shown = "/".join(f"{b:.2f}" for b in per)
        print(
            f"{name:12s} {w:6.3f} {c:12.3f} {main:6.3f} {sched:7.3f} {k:13.3f} {shown:>19s} {g:6d} "
            f"{s:11d} {tasks[name]:6d} {moved[name] / MIB:8.1f} {to_client[name] / MIB:12.2f}"
        )
        rows.append(
            {
                "step": name,
                "wall_s": round(w, 3),
                "client_cpu_s": round(c, 3),
                "main_thread_s": round(main, 3),
                "scheduler_s": round(sched, 3),
                "workers_cpu_s": round(k, 3),
                "busy_s": [round(b, 3) for b in per],
                "graphs": g,
                "round_trips": s,
                "tasks": tasks[name],
                "w2w_mib": round(moved[name] / MIB, 2),
                "to_client_mib": round(to_client[name] / MIB, 2),
            }
        )
    total_busy = sum(sum(c.values()) for c in busy.values())
    print(
        f"{'total':12s} tasks {sum(tasks.values())}, w->w {sum(moved.values()) / MIB:.1f} MiB, "
        f"busy {total_busy:.2f} s in {wall:.2f} s x {args.workers} workers "
        f"({total_busy / (wall * args.workers):.0%} in use)"
    )
    cpu = sum(r["workers_cpu_s"] + r["client_cpu_s"] for r in rows)
    cores = psutil.cpu_count() or 1
    print(
        f"CPU in all {cpu:.2f} s (workers and this process): at least {cpu / cores:.2f} s of wall on "
        f"{cores} cores, whatever the overlap (the release took {wall:.2f} s)"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps({"workers": args.workers, "load": load, "wall_s": wall, "steps": rows})
        )
    for name in args.detail.split(","):
        shown = []
        for p, n in prefixes.get(name, Counter()).most_common():
            secs = spent[name][p]
            shown.append(f"{p} {n} ({'/'.join(f'{secs[a]:.2f}' for a in names)} s)")
        print(f"{name}: " + ", ".join(shown))
        fetched = moved_keys.get(name, Counter()).most_common()
        if fetched:
            print("  fetched: " + ", ".join(f"{p} {b / MIB:.1f} MiB" for p, b in fetched))

    if placed:
        print("inputs held elsewhere, per step: task <- input, MiB (root-ish: placed as a root task)")
        by_step: dict = {}
        for t, task, dep, nbytes, rootish in placed:
            what = f"{task} <- {dep}" + (" (root-ish)" if rootish else "")
            by_step.setdefault(step_of(t, meter.epochs), Counter())[what] += nbytes
        for name, what in by_step.items():
            shown = ", ".join(f"{w} {b / MIB:.1f}" for w, b in what.most_common(6) if b >= MIB / 10)
            if shown:
                print(f"  {name}: {shown}")


if __name__ == "__main__":
    main()
