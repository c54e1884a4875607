"""What a release costs along a long IE history (issue 13, item 3): release 24 vs release 2.

24 views of 5,000 tuples of the paper setting (``dpriv.datasets.medical_history``, seed 0;
k = 5, t = 0.5, j = 0.8, max_suppression = 1) released in process with IE knowledge
(``[knowledge] defender = "ie"``). Per release: the CPU seconds of the process
(``time.process_time``, less disturbed by other jobs on a shared machine than wall time), the
wall seconds, the seconds of each step from ``metrics.json``, the IE update
(``KnowledgeTracker.add`` + ``tables``) and the respondent state's rows. Each history is
released ``--repeat`` times; the median per release is printed, then the ratio of release 24
to release 2 (target <= 1.5) and, step by step, what grows between them.

    python benchmarks/bench_ie_history.py [--repeat 3] [--views 24] [--view-size 5000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import dask

import dpriv.sources as sources
from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


def one_history(n_views: int, view_size: int, defender: str) -> list[dict[str, float]]:
    """Release the history once; per release: cpu, wall, ie (s), state rows and step seconds."""
    work = Path(tempfile.mkdtemp())
    ie_seconds: list[float] = []
    add, tables = sources.KnowledgeTracker.add, sources.KnowledgeTracker.tables

    def timed(f):
        def call(*args, **kwargs):
            tick = time.process_time()
            try:
                return f(*args, **kwargs)
            finally:
                ie_seconds.append(time.process_time() - tick)
        return call

    try:
        mh = medical_history(n_views, view_size, seed=0)
        policy = ReleasePolicy.from_toml(write_history(work, mh), t=0.5, j=0.8, max_suppression=1.0)
        policy = policy.with_overrides(knowledge={"defender": defender})
        marks = [(time.process_time(), time.perf_counter(), 0)]

        def mark(i, m):
            marks.append((time.process_time(), time.perf_counter(), len(ie_seconds)))

        sources.KnowledgeTracker.add, sources.KnowledgeTracker.tables = timed(add), timed(tables)
        try:
            with dask.config.set(scheduler="threads"):
                release_history(mh.history, policy, work / "ledger", on_release=mark)
        finally:
            sources.KnowledgeTracker.add, sources.KnowledgeTracker.tables = add, tables
        ledger = Ledger(work / "ledger")
        out = []
        for i, (a, b) in enumerate(zip(marks, marks[1:]), start=1):
            steps = json.loads((ledger.release_dir(i) / "metrics.json").read_text())["seconds"]
            row = {"cpu": b[0] - a[0], "wall": b[1] - a[1], "ie": sum(ie_seconds[a[2]:b[2]]),
                   "state_rows": float(len(ledger.read_state(i)))}
            out.append({**row, **{f"step:{k}": v for k, v in steps.items()}})
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--views", type=int, default=24)
    ap.add_argument("--view-size", type=int, default=5000)
    ap.add_argument("--defender", default="ie", help='"ie" or a table entry of the policy ("dk")')
    args = ap.parse_args()
    one_history(2, 200, args.defender)  # warm-up: numba caches loaded, imports done
    runs = [one_history(args.views, args.view_size, args.defender) for _ in range(args.repeat)]
    keys = list(runs[0][0])
    med = [{k: statistics.median(r[i].get(k, 0.0) for r in runs) for k in keys} for i in range(args.views)]
    print(f"{args.views} x {args.view_size}, defender {args.defender}, median of {args.repeat} runs")
    print("release   cpu s  wall s    ie s  state rows")
    for i, row in enumerate(med, start=1):
        print(f"{i:>7} {row['cpu']:7.3f} {row['wall']:7.3f} {row['ie']:7.4f} {row['state_rows']:11.0f}")
    first, last = med[1], med[-1]
    print(f"release {args.views} / release 2: cpu {last['cpu'] / first['cpu']:.2f}, "
          f"wall {last['wall'] / first['wall']:.2f} (target <= 1.5)")
    print(f"{'step (wall s, median)':<22} {'release 2':>10} {f'release {args.views}':>11} {'ratio':>7}")
    for k in keys:
        if k.startswith("step:"):
            a, b = first[k], last[k]
            print(f"{k[5:]:<22} {a:10.4f} {b:11.4f} {b / a if a else float('nan'):7.2f}")


if __name__ == "__main__":
    main()
