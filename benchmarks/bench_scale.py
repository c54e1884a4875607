"""Scale out (issue "Scale out"): one large view of the paper setting, released end to end.

(a) the input: ``write_medical_view`` builds a one-view history of ``--rows`` tuples on the
    workers (Parquet folder) with its policy and knowledge files;
(b) the floor, same cluster: read Parquet + Hilbert key + sort (set_index) + write Parquet;
(c) the release: ``dpriv.release.release_history`` on the Dask history (what ``dpriv
    release`` runs): RBK, Generalize, verification per QI-group part, PK and state, KPR
    and utility metrics, streamed ledger writes. Seconds per step come from the release's
    own ``metrics.json``; peak RSS of the client and of the workers is sampled (psutil);
(d) release / floor (goal <= 5), Hilbert-range balance (largest / smallest, goal <= 1.5);
(e) ``--scaling``: the same on 1 and on 2 workers, speed-up of each (goal >= 1.8x, issue 13), and
    beside them the machine's ceiling: the same cluster set-ups running an embarrassingly
    parallel task set of the release's size (:func:`ceiling_run`), whose 1 -> 2 speed-up is the
    most a release could reach here (the client and the scheduler share the cores);
(f) ``--in-process``: the same release in this process (pandas, the in-process path forced);
(g) ``--user-process``: the client as a user's process sees it, instead of (b)-(f): the view
    written by ``dpriv generate medical --partitions`` in a process of its own, then ``dpriv
    release --cluster`` (a LocalCluster, one single-threaded worker per core) in a fresh process
    whose peak RSS, and each worker's, is the kernel's high-water mark (``proc_peaks.py``); a
    60,000-tuple release before it, not measured, fills numba's on-disk cache. The policy is the
    generated one (the recommended defense). With several ``--rows`` it prints the client's peak
    at the largest size over the smallest (issue 13: within 1.2x from 10^6 to 10^7).

The policy is the generated one with ``--k``, ``--t``, ``--j`` (the greedy scan, no exit
guard); ``--recommended`` releases with the defense ``dpriv generate medical`` writes instead
(:data:`dpriv.datasets.files.RECOMMENDED_DEFENSE`: top-down, k 5, t 0.45, j 1.5, the exit
guard), what a user of the defaults runs. As the ``dpriv`` command does, this process and the
workers keep freed memory for reuse and run without numpy's huge-page advice
(:mod:`dpriv.allocator`; ``DPRIV_KEEP_FREED_MEMORY=0`` measures glibc's defaults,
``NUMPY_MADVISE_HUGEPAGE=1`` numpy's).

    python benchmarks/bench_scale.py [--rows 1000000 ...] [--npartitions 8] [--scaling] [--in-process]
        [--recommended] [--user-process] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import psutil
from distributed import Client

from dpriv.allocator import worker_config
from dpriv.datasets import write_medical_view
from dpriv.first_pass import range_divisions
from dpriv.hilbert import HKEY, hilbert_keys
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _setup import as_dpriv_process, forced_path, local_client, recommended_policy, warm_up  # noqa: E402
from _timing import best_of  # noqa: E402
from proc_peaks import Peaks, is_worker, run_watched  # noqa: E402

GIB = 2**30
#: waves of the ceiling's task set: about the release's steps persisted one after another
CEILING_ROUNDS = 11


class Sampler:
    """Polls the RSS of the client process and of the worker processes (peaks)."""

    def __init__(self, client: Client, every: float = 0.1):
        self.me = psutil.Process(os.getpid())
        self.workers = [psutil.Process(p) for p in client.run(os.getpid).values()]
        self.every, self.peak = every, {"client": 0, "worker_max": 0, "workers_sum": 0}
        # the client's RSS when the release starts: this process keeps freed memory
        # (keep_freed_memory), so its peak includes what generating the view, the balance's key
        # histogram and the floor run left; the peak less this is the release's own
        self.peak["client_start"] = self.me.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                c, w = self.me.memory_info().rss, [p.memory_info().rss for p in self.workers]
            except psutil.Error:
                break
            pk = self.peak
            pk["client"], pk["worker_max"] = max(pk["client"], c), max(pk["worker_max"], max(w, default=0))
            pk["workers_sum"] = max(pk["workers_sum"], sum(w))
            self._stop.wait(self.every)

    def close(self) -> dict:
        self._stop.set()
        self._thread.join()
        return {k: round(v / GIB, 2) for k, v in self.peak.items()}


def _with_key(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    return part.assign(**{HKEY: hilbert_keys(part, policy)})


def floor_run(src: Path, out: Path, policy: ReleasePolicy, npartitions: int) -> float:
    """Read Parquet + Hilbert key + sort on it + write Parquet: what any release must do."""
    start = time.perf_counter()
    view = dd.read_parquet(src)
    meta = view._meta.assign(**{HKEY: pd.Series(dtype="uint64")})
    keyed = view.map_partitions(_with_key, policy, meta=meta)
    keyed.set_index(HKEY, sort=True, npartitions=npartitions).to_parquet(out)
    return round(time.perf_counter() - start, 3)


def _keys(part: pd.DataFrame, policy: ReleasePolicy) -> pd.Series:
    return pd.Series(hilbert_keys(part, policy))


def balance(src: Path, policy: ReleasePolicy, npartitions: int) -> float:
    """Largest / smallest Hilbert range with the release's divisions (exact key histogram)."""
    keys = dd.read_parquet(src).map_partitions(_keys, policy, meta=pd.Series(dtype="uint64"))
    hist = keys.value_counts().compute().sort_index()
    divisions = range_divisions(hist, npartitions, policy)
    edges = np.searchsorted(hist.index.to_numpy(np.uint64), np.asarray(divisions[1:-1], np.uint64))
    cum = np.concatenate([[0], np.cumsum(hist.to_numpy())])
    sizes = np.diff(cum[np.concatenate([[0], edges, [len(hist)]])])
    return round(float(sizes.max() / max(sizes.min(), 1)), 3)


def numpy_task(n: int, seed: int) -> float:
    """One task of the ceiling's set: ``n`` random float64 drawn and sorted (CPU only, no input,
    a float out), so that the tasks need nothing from each other or from the client."""
    values = np.random.default_rng(seed).random(n)
    values.sort()
    return float(values[n // 2])


def calibrated_size(seconds: float) -> int:
    """The ``n`` for which :func:`numpy_task` takes about ``seconds`` in this process (best of
    three at 2 * 10^6, scaled linearly: n log n is near linear over a factor of a few)."""
    n = 2_000_000
    best, _ = best_of(lambda: numpy_task(n, 0), 3)
    return max(int(n * seconds / best), 1_000)


def ceiling_run(client: Client, rounds: int, tasks: int, n: int) -> float:
    """Seconds to run ``rounds`` waves of ``tasks`` independent :func:`numpy_task` of size
    ``n`` on ``client``'s workers, each wave gathered before the next starts (as each step of a
    release is persisted and waited for): a release's shape without its data dependencies."""
    start = time.perf_counter()
    for r in range(rounds):
        seeds = [r * tasks + i for i in range(tasks)]
        client.gather(client.map(numpy_task, [n] * tasks, seeds, pure=False))
    return round(time.perf_counter() - start, 3)


def run_on(n_workers: int, work: Path, policy: ReleasePolicy, args, ceiling_n: int = 0) -> dict:
    """The floor and the release on a LocalCluster of ``n_workers``; with ``ceiling_n`` the
    ceiling's task set (:func:`ceiling_run`) on the same cluster just before and just after the
    release (``ceiling_s``: their mean)."""
    with local_client(n_workers, worker_config()) as client:  # the workers dpriv's own LocalCluster starts
        src = work / "history.parquet"
        warm_up(work / f"warm{n_workers}", policy)
        floor = floor_run(src, work / f"floor{n_workers}", policy, args.npartitions)
        ceiling = [ceiling_run(client, CEILING_ROUNDS, args.npartitions, ceiling_n)] if ceiling_n else []
        sampler = Sampler(client)
        start = time.perf_counter()
        ledger = work / f"ledger{n_workers}"
        led = release_history(dd.read_parquet(src), policy, ledger, npartitions=args.npartitions)
        wall = round(time.perf_counter() - start, 3)
        peak = sampler.close()
        if ceiling_n:  # before and after the release: on a shared machine the load moves
            ceiling.append(ceiling_run(client, CEILING_ROUNDS, args.npartitions, ceiling_n))
    mean = round(sum(ceiling) / len(ceiling), 3) if ceiling else None
    return {**run_row(n_workers, floor, wall, led, peak), "ceiling_s": mean, "ceiling_runs_s": ceiling}


def run_row(workers: int, floor: float, wall: float, led, peak: dict) -> dict:
    """One run's result: seconds, their ratio, the release's steps and size figures, peak RSS."""
    metrics = led.read_metrics(1)
    return {
        "workers": workers,
        "floor_s": floor,
        "release_s": wall,
        "release_over_floor": round(wall / floor, 2),
        "steps_s": metrics["seconds"],
        "n_groups": metrics["n_groups"],
        "suppression": metrics["suppression_rate"],
        "kpr": metrics["kpr"],
        "peak_gib": peak,
    }


def run_in_process(work: Path, policy: ReleasePolicy, args) -> dict:
    """The same release in this process (``--in-process``): the view read with pandas and
    released on the in-process path, forced past its thresholds (``SMALL_VIEW_ROWS``,
    ``SMALL_STATE_ROWS``: the same kernels without Dask), against the floor run on Dask's
    threaded scheduler in this process. ``workers`` is 0 in the result."""
    src = work / "history.parquet"
    with dask.config.set(scheduler="threads"):
        floor = floor_run(src, work / "floor-inproc", policy, args.npartitions)
    warm_up(work / "warm-inproc", policy, in_process=True)
    with forced_path(True):
        start = time.perf_counter()
        led = release_history(pd.read_parquet(src), policy, work / "ledger-inproc")
        wall = round(time.perf_counter() - start, 3)
    rss = psutil.Process(os.getpid()).memory_info().rss  # not a sampled peak: after the release
    peak = {"client": round(rss / GIB, 2), "worker_max": 0.0, "workers_sum": 0.0}
    return run_row(0, floor, wall, led, peak)


def _dpriv(*args, log) -> Peaks:
    """``dpriv ARGS`` in a process of its own (this interpreter, so this venv), watched."""
    done = run_watched([sys.executable, "-m", "dpriv", *map(str, args)], log=log)
    if done.returncode:
        raise SystemExit(f"dpriv {' '.join(map(str, args))} exited {done.returncode}; see {log.name}")
    return done


def _sized(rows: int, npartitions: int) -> list:
    # the view bench_scale's own mode generates (write_medical_view, seed 0, these files)
    return ["--views", 1, "--view-size", rows, "--partitions", npartitions, "--seed", 0]


def _generate(out: Path, rows: int, npartitions: int, log) -> Peaks:
    """``dpriv generate medical``: a one-view history of ``rows`` tuples in ``npartitions`` files."""
    return _dpriv("generate", "medical", *_sized(rows, npartitions), "--out", out, log=log)


def _release(folder: Path, npartitions: int | None, log) -> Peaks:
    """``dpriv release`` of a generated folder on a LocalCluster, its own policy.toml."""
    parts = ["--npartitions", npartitions] if npartitions else []
    history, ledger, policy = folder / "history.parquet", folder / "ledger", folder / "policy.toml"
    return _dpriv("release", history, "--ledger", ledger, "--policy", policy, "--cluster", *parts,
                  "--no-progress", log=log)  # fmt: skip


def run_user_process(rows: int, work: Path, npartitions: int) -> dict:
    """(g): generate, then release through the command, each in a fresh process; peaks in GiB.

    ``client``: the release process's own peak (it also runs the scheduler and the nannies,
    as a user's does); ``client_wait4``: the kernel's largest peak of that process and of the
    workers it reaped (a bound); ``worker_max`` / ``workers_sum``: the workers' own peaks, the
    largest and their sum (not simultaneous). ``process_s``: the whole command, start-up and the
    cluster's start and stop included; ``release_s``: the steps of ``metrics.json`` summed.
    """
    with open(work / "dpriv-commands.log", "a") as log:
        view = work / f"view-{rows}"
        gen = _generate(view, rows, npartitions, log)
        rel = _release(view, npartitions, log)
    workers = [c.peak for c in rel.children.values() if is_worker(c)]
    metrics = Ledger(view / "ledger", prepare=False).read_metrics(1)
    peak = {"client": rel.process, "client_wait4": rel.tree_maxrss, "generate": gen.process}
    peak.update(worker_max=max(workers, default=0), workers_sum=sum(workers))
    return {
        "rows": rows,
        "workers": len(workers),
        "process_s": round(rel.wall_s, 3),
        "release_s": round(sum(metrics["seconds"].values()), 3),
        "steps_s": metrics["seconds"],
        "n_groups": metrics["n_groups"],
        "peak_gib": {k: round(v / GIB, 3) for k, v in peak.items()},
    }


def user_process_main(args, work: Path) -> list[dict]:
    """(g) for every ``--rows``, smallest first; prints each and the peaks' ratio."""
    with open(work / "dpriv-commands.log", "a") as log:  # not measured: numba's disk cache filled
        _generate(work / "warm", 60_000, 2, log)
        _release(work / "warm", None, log)
    runs = []
    for rows in sorted(args.rows):
        r = run_user_process(rows, work, args.npartitions)
        pk = r["peak_gib"]
        print(
            f"{rows} tuples, dpriv release --cluster in its own process ({r['workers']} workers): "
            f"process {r['process_s']} s, steps {r['release_s']} s; peak RSS client {pk['client']} GiB "
            f"(wait4 bound {pk['client_wait4']}), worker max {pk['worker_max']}, workers' peaks summed "
            f"{pk['workers_sum']} GiB; the generating process {pk['generate']} GiB",
            flush=True,
        )
        print("  steps (s): " + ", ".join(f"{k} {v}" for k, v in r["steps_s"].items()), flush=True)
        runs.append(r)
    if len(runs) > 1:
        lo, hi = runs[0], runs[-1]
        ratio = round(hi["peak_gib"]["client"] / lo["peak_gib"]["client"], 3)
        print(f"client peak {hi['rows']} / {lo['rows']} tuples: {ratio} (goal: <= 1 GiB and <= 1.2x)")
        print(f"largest worker {hi['rows']} / {lo['rows']}: "
              f"{round(hi['peak_gib']['worker_max'] / lo['peak_gib']['worker_max'], 3)}")  # fmt: skip
    return runs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000], help="several: --user-process only")
    ap.add_argument("--npartitions", type=int, default=8)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--t", type=float, default=0.5)
    ap.add_argument("--j", type=float, default=0.8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scaling", action="store_true", help="also run on 1 worker (strong scaling)")
    ap.add_argument(
        "--ceiling-seconds",
        type=float,
        default=0.06,
        help="--scaling: seconds of one ceiling task in this process (about a 10^6 release's "
        "busy seconds on 1 worker, ~5.5, over its 11 steps x 8 partitions)",
    )
    ap.add_argument("--in-process", action="store_true", help="also release it in this process (pandas)")
    ap.add_argument("--recommended", action="store_true", help="the recommended defense, not --k/--t/--j")
    ap.add_argument("--work", default="", help="working folder (default: a temp folder, removed)")
    ap.add_argument("--user-process", action="store_true", help="(g): generate, release in fresh processes")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    if len(args.rows) > 1 and not args.user_process:
        ap.error("several --rows are measured with --user-process only")
    work = Path(args.work or tempfile.mkdtemp(prefix="dpriv-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    if args.user_process:
        runs = user_process_main(args, work)
        if args.json:
            Path(args.json).write_text(json.dumps({"user_process": runs}, indent=2))
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
        return
    args.rows = args.rows[0]
    as_dpriv_process()  # as the dpriv command does in its process (dpriv.allocator)
    with local_client(args.workers):
        start = time.perf_counter()
        write_medical_view(work, args.rows, npartitions=args.npartitions, seed=0)
        generate = round(time.perf_counter() - start, 3)
    if args.recommended:
        policy = recommended_policy(work)
    else:
        policy = ReleasePolicy.from_toml(work / "policy.toml", k=args.k, t=args.t, j=args.j)
    src = work / "history.parquet"
    result = {"rows": args.rows, "npartitions": args.npartitions, "generate_s": generate}
    result["policy"] = "recommended" if args.recommended else {"k": args.k, "t": args.t, "j": args.j}
    result["balance"] = balance(src, policy, args.npartitions)
    ceiling_n = calibrated_size(args.ceiling_seconds) if args.scaling else 0
    runs = [run_on(args.workers, work, policy, args, ceiling_n)]
    if args.scaling:
        runs.insert(0, run_on(1, work, policy, args, ceiling_n))
    if args.in_process:
        runs.append(run_in_process(work, policy, args))
    result["runs"] = runs
    for r in runs:
        where = f"{r['workers']} worker(s)" if r["workers"] else "in process"
        print(
            f"{args.rows} tuples, {where}: release {r['release_s']} s, floor "
            f"{r['floor_s']} s, release/floor {r['release_over_floor']} (goal <= 5); peak RSS "
            f"client {r['peak_gib']['client']} GiB (at the start {r['peak_gib'].get('client_start', 0.0)}), "
            f"worker max {r['peak_gib']['worker_max']} GiB"
        )
        print("  steps (s): " + ", ".join(f"{k} {v}" for k, v in r["steps_s"].items()))
    print(f"Hilbert-range balance (largest/smallest): {result['balance']} (goal <= 1.5)")
    if args.scaling:
        one, two = runs[:2]
        result["speedup_release"] = round(one["release_s"] / two["release_s"], 2)
        result["speedup_floor"] = round(one["floor_s"] / two["floor_s"], 2)
        result["speedup_ceiling"] = round(one["ceiling_s"] / two["ceiling_s"], 2)
        result["ceiling"] = {"rounds": CEILING_ROUNDS, "tasks": args.npartitions, "n": ceiling_n}
        print(
            f"strong scaling 1 -> {args.workers} workers: release {result['speedup_release']}x "
            "(goal >= 1.8), "
            f"floor {result['speedup_floor']}x, ceiling {result['speedup_ceiling']}x "
            f"({CEILING_ROUNDS} waves x {args.npartitions} independent numpy tasks, before and after "
            f"each release: {one['ceiling_runs_s']} -> {two['ceiling_runs_s']} s); release / ceiling "
            f"{result['speedup_release'] / result['speedup_ceiling']:.2f}; load {os.getloadavg()[0]:.1f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
