"""Before the loop (issue 13, "10^6 release / floor <= 5"): the seconds ``release_history`` spends
on its checks before the first view's release, and the Parquet footers dpriv reads there, for
this checkout ("new") and another one ("old", ``--old PATH``: e.g. ``git worktree add --detach
PATH <base commit>``), timed alternately, each round in a fresh process with its own 2-worker
LocalCluster (its workers import the same checkout as their client).

The history is a ``write_medical_view`` folder of ``--rows`` tuples (``--npartitions`` files) with
its policy and the recommended defense (as ``bench_scale.py --recommended``), made once in
``--work``. In each process the before-the-loop run is done twice on that history (the first
warms the workers' imports and numba's cache, not reported) and the second is timed: from
``release_history(dd.read_parquet(folder), ...)`` to the first view's release (which is stopped
there), with the seconds of its main checks, the CPU seconds of this process and of the workers
(psutil; less at the mercy of the machine's load than the wall time) and the footers read
(``pyarrow.parquet.read_metadata`` calls from dpriv). Printed: each round's figures and the
new / old ratios (wall, client CPU, workers' CPU) with their medians.

    python benchmarks/bench_before_loop.py --old /path/to/base [--rows 1000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

#: The checks of ``release_history._checked_input`` whose seconds are reported (dpriv.release's
#: names, the same in both checkouts).
STEPS = ("check_parts", "checked_history", "as_data_types", "history_summaries", "resolve_policy")


class _Stop(Exception):
    """Raised where the first view's release begins."""


def one_round(work: Path) -> dict:
    """In this process: a 2-worker LocalCluster, the before-the-loop run twice, the second's
    seconds (total and per check) and footer reads."""
    from unittest import mock

    import dask
    import dask.dataframe as dd
    import psutil
    import pyarrow.parquet as pq
    from distributed import Client, LocalCluster

    import dpriv.release as release_mod
    from dpriv.allocator import keep_freed_memory, no_huge_page_advice, worker_config
    from dpriv.datasets.files import RECOMMENDED_DEFENSE
    from dpriv.policy import ReleasePolicy

    keep_freed_memory()
    no_huge_page_advice()
    policy = ReleasePolicy.from_toml(work / "policy.toml", **RECOMMENDED_DEFENSE["privacy"])
    policy = policy.with_overrides(**RECOMMENDED_DEFENSE["release"])
    footers, seconds = Counter(), Counter()
    real_read = pq.read_metadata

    def counted(where, *args, **kwargs):
        if sys._getframe(1).f_globals.get("__name__", "").startswith("dpriv"):
            footers[str(getattr(where, "path", where))] += 1
        return real_read(where, *args, **kwargs)

    def timed(name):
        fn = getattr(release_mod, name)

        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                seconds[name] += time.perf_counter() - start

        return mock.patch.object(release_mod, name, run)

    def stop(*args, **kwargs):
        raise _Stop

    out = {}
    with (
        dask.config.set(worker_config()),
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as lc,
        Client(lc) as client,
    ):
        workers = [psutil.Process(pid) for pid in client.run(os.getpid).values()]

        def cpu() -> tuple[float, float]:  # seconds of CPU: this process, the workers
            return time.process_time(), sum(sum(p.cpu_times()[:2]) for p in workers)

        for attempt in range(2):
            footers.clear()
            seconds.clear()
            patches = [mock.patch.object(pq, "read_metadata", counted)]
            patches += [mock.patch.object(release_mod, "_release_one", stop), *map(timed, STEPS)]
            for p in patches:
                p.start()
            start, cpu0 = time.perf_counter(), cpu()
            try:
                release_mod.release_history(
                    dd.read_parquet(work / "history.parquet"),
                    policy,
                    work / f"ledger-{os.getpid()}-{attempt}",
                )
            except _Stop:
                pass
            total, cpu1 = time.perf_counter() - start, cpu()
            for p in patches:
                p.stop()
            out = {"before_loop_s": round(total, 3), **{k: round(seconds[k], 3) for k in STEPS}}
            out["client_cpu_s"] = round(cpu1[0] - cpu0[0], 3)
            out["workers_cpu_s"] = round(cpu1[1] - cpu0[1], 3)
            out["footer_reads"] = sum(footers.values())
            out["files"] = len(footers)
    out["load"] = os.getloadavg()[0]
    out["dpriv"] = str(Path(release_mod.__file__).parents[1])
    return out


def in_fresh_process(checkout: Path, work: Path) -> dict:
    """:func:`one_round` in a new Python process importing dpriv from ``checkout``."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    code = f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
    code += "import bench_before_loop as b; from pathlib import Path; "
    code += f"print(json.dumps(b.one_round(Path({str(work)!r}))))"
    run = [sys.executable, "-c", code]  # in the checkout: "-c" puts the working folder first on sys.path
    done = subprocess.run(run, env=env, cwd=checkout, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def make_history(work: Path, rows: int, npartitions: int) -> None:
    """The ``write_medical_view`` history, its policy and knowledge in ``work`` (once)."""
    if (work / "history.parquet").exists():
        return
    from distributed import Client, LocalCluster

    from dpriv.datasets import write_medical_view

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as lc, Client(lc):
        write_medical_view(work, rows, npartitions=npartitions, seed=0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="a checkout of the code to compare with (its repo root)")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--npartitions", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default="", help="working folder (kept; default: a new temp folder)")
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="dpriv-before-loop-"))
    make_history(work, args.rows, args.npartitions)
    new, old = Path(__file__).resolve().parents[1], Path(args.old).resolve()
    ratios: dict[str, list[float]] = {"before_loop_s": [], "client_cpu_s": [], "workers_cpu_s": []}
    for r in range(args.rounds):
        row = {}
        for name, checkout in [("new", new), ("old", old)] if r % 2 == 0 else [("old", old), ("new", new)]:
            row[name] = in_fresh_process(checkout, work)
            print(f"round {r} {name}: {json.dumps(row[name])}", flush=True)
        for key in ratios:
            ratios[key].append(row["new"][key] / row["old"][key])
    for key, found in ratios.items():  # the CPU seconds: what the machine's load hardly changes
        print(
            f"{args.rows} tuples, {args.npartitions} files, 2 workers: {key} new / old "
            f"{', '.join(f'{x:.2f}' for x in found)} (median {statistics.median(found):.2f})"
        )


if __name__ == "__main__":
    main()
