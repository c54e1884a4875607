"""Scale out (issue "Scale out"): one large view of the paper setting on a distributed cluster.

(a) release of one view of ``--rows`` tuples (respondent_id, age 45-74, gender 1-2, weight
    60-89, exam_result over the 19 values, drawn from the generator's BK^sv so that the 17
    stage values occur; built partition by partition by ``dpriv.datasets.medical_view_dask``;
    class-based priors ``p__<value>``) from Parquet,
    step by step: keys + set_index, chained first pass, stats/leftovers to the client,
    repair (client), QIG table + apply, write Parquet; then what ``dpriv.api.anonymize`` /
    ``dpriv.release`` do next: collect released + assigned on the client and verify.
    Per step: seconds, peak RSS of the client and of the busiest worker (psutil, sampled).
(b) the floor: read Parquet + Hilbert key + set_index + write Parquet, same view, same
    cluster; prints release / floor (issue goal <= 5).
(c) strong scaling: the same release on 1 and on 2 workers (goal >= 1.6x).
(d) partition balance after set_index on the key: largest / smallest partition (goal <= 1.5).
(e) ``--rows 10000000``: peak memory (goal <= 8 GiB); ``--max-client-gib`` stops a run
    whose client grows past the limit and reports the step.

The steps replicate :func:`dpriv.anonymize.generalize_view` (Dask path) with the same dpriv
kernels, forcing each step (persist + wait) so that it can be timed; ``--check`` also runs
``generalize_view`` itself on the same input and compares the group and suppression counts.

    python benchmarks/bench_scale.py [--rows 1000000] [--npartitions 12] [--scaling] [--json out.json]
"""

from __future__ import annotations

import _thread
import argparse
import json
import os
import shutil
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import psutil
from distributed import Client, LocalCluster, get_task_stream, wait

from dpriv.anonymity.verify import verify_release
from dpriv.anonymize import (
    HKEY,
    LABEL,
    _even_divisions,
    _keyed_meta,
    add_keys,
    apply_qig,
    chained_scan,
    generalize_view,
    hilbert_keys,
    qig_table,
    range_stats,
    released_meta,
    repair_leftovers,
)
from dpriv.api import attach_priors
from dpriv.datasets import AGE_RANGE, GENDER_RANGE, VALUES, WEIGHT_RANGE, medical_view_dask
from dpriv.policy import ReleasePolicy
from dpriv.validate import validate_view

GIB = 2**30


def paper_policy(k: int, t: float, j: float, npartitions: int) -> ReleasePolicy:
    return ReleasePolicy.from_dict(
        {
            "id": "respondent_id",
            "qi": ["age", "gender", "weight"],
            "sensitive": "exam_result",
            "domains": {
                "age": list(AGE_RANGE),
                "gender": list(GENDER_RANGE),
                "weight": list(WEIGHT_RANGE),
                "exam_result": list(VALUES),
            },
            "k": k,
            "t": t,
            "j": j,
            "npartitions": npartitions,
        }
    )


# -- the input --------------------------------------------------------------------------------
def input_view(n_rows: int, npartitions: int, seed: int = 0) -> dd.DataFrame:
    """One view of the paper setting built partition by partition on the workers
    (dpriv.datasets.medical_view_dask: exam results drawn from the generator's BK^sv per
    knowledge class), without the constant ``view`` column."""
    return medical_view_dask(n_rows, npartitions=npartitions, seed=seed).drop(columns="view")


def make_view(path: Path, n_rows: int, n_files: int, policy: ReleasePolicy, seed: int = 0) -> None:
    """Write the view with class-based priors (dpriv.api.attach_priors) to ``path`` (Parquet);
    ``n_files`` files at most (one per 65,536-row block when there are fewer blocks)."""
    attach_priors(input_view(n_rows, n_files, seed), policy, "class").to_parquet(path, write_index=False)


# -- memory sampling ---------------------------------------------------------------------------
class Sampler:
    """Polls the RSS of the client process and of every worker process; peaks per step."""

    def __init__(self, client: Client, every: float = 0.1):
        self.me = psutil.Process(os.getpid())
        self.workers = [psutil.Process(p) for p in client.run(os.getpid).values()]
        self.every, self.step, self.peaks = every, "idle", {}
        self.limit, self.over = None, None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                c = self.me.memory_info().rss
                w = [p.memory_info().rss for p in self.workers]
            except psutil.Error:
                break
            pk = self.peaks.setdefault(self.step, {"client": 0, "worker_max": 0, "workers_sum": 0})
            pk["client"] = max(pk["client"], c)
            pk["worker_max"] = max(pk["worker_max"], max(w, default=0))
            pk["workers_sum"] = max(pk["workers_sum"], sum(w))
            if self.limit and c > self.limit and self.over is None:
                self.over = self.step
                _thread.interrupt_main()  # stop before the machine runs out of memory
            self._stop.wait(self.every)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def step(name: str, times: dict, sampler: Sampler):
    """Time a step; ``times["busy"][name]``: worker compute seconds / wall seconds (the
    parallelism the step reached; the number of workers at most, 0 for client-only work)."""
    sampler.step = name
    start = time.perf_counter()
    try:
        with get_task_stream() as ts:
            yield
    except KeyboardInterrupt:
        raise MemoryError(f"client RSS passed {sampler.limit / GIB:.1f} GiB during step {name!r}") from None
    wall = time.perf_counter() - start
    times[name] = round(wall, 3)
    print(f"step {name}: {wall:.3f} s", flush=True)
    busy = sum(
        ss["stop"] - ss["start"]
        for t in ts.data
        for ss in t.get("startstops", ())
        if ss["action"] == "compute"
    )
    times.setdefault("busy", {})[name] = round(busy / max(wall, 1e-9), 2)
    sampler.step = "idle"
    if sampler.over:
        raise MemoryError(f"client RSS passed {sampler.limit / GIB:.1f} GiB during step {sampler.over!r}")


# -- (a) the release, step by step ------------------------------------------------------------------
def release_steps(
    src: Path,
    out: Path,
    policy: ReleasePolicy,
    npartitions: int,
    sampler: Sampler,
    collect: bool = True,
    times: dict | None = None,
) -> dict:
    times = {} if times is None else times  # filled in place: kept when a step breaks
    view = dd.read_parquet(src)
    with step("validate", times, sampler):
        summary = validate_view(view, policy)
    counts = summary.s_counts
    with step("keys+set_index", times, sampler):
        keyed = view.map_partitions(add_keys, policy, meta=_keyed_meta(view._meta, policy))
        ranges = keyed.set_index(HKEY, sort=True, npartitions=npartitions).persist()
        wait(ranges)
    sizes = ranges.map_partitions(len).compute().to_numpy()
    hist = keyed[HKEY].value_counts().compute().sort_index()
    with step("first_pass", times, sampler):
        grouped = chained_scan(ranges, view._meta, policy, counts).persist()
        wait(grouped)
    del ranges
    with step("stats+leftovers", times, sampler):
        stats, leftovers = dask.compute(
            grouped.map_partitions(range_stats, policy, meta=range_stats(grouped._meta, policy)),
            grouped[grouped[LABEL] < 0],
        )
    with step("repair", times, sampler):
        placed = repair_leftovers(stats, leftovers, policy, counts)
        n_suppressed = int((placed[LABEL] < 0).sum())
        placed = placed[placed[LABEL] >= 0]
    with step("qig", times, sampler):
        kept = grouped[grouped[LABEL] >= 0]
        assigned = dd.concat(
            [kept, dd.from_pandas(placed.astype(kept._meta.dtypes.to_dict()), npartitions=1)]
        )
        table = qig_table(assigned, policy)
        released = assigned.map_partitions(
            apply_qig, table, policy, meta=released_meta(policy, view._meta[policy.sensitive].dtype)
        )
        released = released.set_index("_order", divisions=_even_divisions(released.npartitions))
        released = released.reset_index(drop=True)
    with step("write", times, sampler):
        released.to_parquet(out, write_index=False)
    result = {
        "times": times,
        "n_rows": summary.n_rows,
        "n_stats_groups": len(stats),
        "n_leftovers": len(leftovers),
        "n_suppressed": n_suppressed,
        "n_qig": len(table),
        "partition_rows": sizes.tolist(),
        "balance": round(float(sizes.max() / max(sizes.min(), 1)), 3),
        "balance_exact_divisions": exact_balance(hist, npartitions),
        "distinct_keys": len(hist),
        "client_bytes": {
            "stats": int(stats.memory_usage(deep=True).sum()),
            "leftovers": int(leftovers.memory_usage(deep=True).sum()),
            "qig_table": int(table.memory_usage(deep=True).sum()),
        },
    }
    if collect:  # what api.anonymize / release.release_view do next: everything to the client
        with step("collect", times, sampler):
            rel, asg = dask.compute(released, assigned)
        with step("verify", times, sampler):
            report = verify_release(rel, policy, view_counts=counts, assigned=asg)
        result["verified"] = bool(report.ok)
        result["client_bytes"]["released+assigned"] = int(
            rel.memory_usage(deep=True).sum() + asg.memory_usage(deep=True).sum()
        )
        del rel, asg
    steps = {k: v for k, v in times.items() if k != "busy"}
    result["release_seconds"] = round(sum(v for k, v in steps.items() if k not in ("collect", "verify")), 3)
    result["release_with_collect_verify_seconds"] = round(sum(steps.values()), 3)
    return result


def exact_balance(hist: pd.Series, npartitions: int) -> float:
    """Largest / smallest range when divisions are cut from the exact key histogram (one
    value_counts pass) instead of dask's approximate quantiles: the fix proposed for set_index."""
    cum = np.cumsum(hist.to_numpy())
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, npartitions) / npartitions, side="left")
    edges = np.unique(np.concatenate([[0], cuts + 1, [len(cum)]]))
    sizes = np.diff(np.concatenate([[0], cum])[edges])
    return round(float(sizes.max() / max(sizes.min(), 1)), 3)


# -- (b) the floor ---------------------------------------------------------------------------------
def _with_key(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    return part.assign(**{HKEY: hilbert_keys(part, policy)})


def floor_run(src: Path, out: Path, policy: ReleasePolicy, npartitions: int) -> float:
    start = time.perf_counter()
    view = dd.read_parquet(src)
    meta = view._meta.assign(**{HKEY: pd.Series(dtype="uint64")})
    keyed = view.map_partitions(_with_key, policy, meta=meta)
    keyed.set_index(HKEY, sort=True, npartitions=npartitions).to_parquet(out)
    return round(time.perf_counter() - start, 3)


def check_against_dpriv(src: Path, policy: ReleasePolicy, npartitions: int, res: dict) -> dict:
    view = dd.read_parquet(src)
    summary = validate_view(view, policy)
    start = time.perf_counter()
    gen = generalize_view(view, policy, summary, npartitions=npartitions)
    gen.released.to_parquet(tempfile.mkdtemp(), write_index=False)
    return {
        "generalize_view+write_seconds": round(time.perf_counter() - start, 3),
        "same_suppression": gen.n_suppressed == res["n_suppressed"],
    }


def warm_up(policy: ReleasePolicy) -> None:
    """Compile the numba kernels (grouping, repair, verify) on a small pandas view."""
    view = attach_priors(input_view(3000, 1, seed=1).compute(scheduler="sync"), policy, "class")
    summary = validate_view(view, policy)
    gen = generalize_view(view, policy, summary, npartitions=2)
    verify_release(gen.released, policy, view_counts=summary.s_counts, assigned=gen.assigned)


def run_on(n_workers: int, src: Path, work: Path, policy: ReleasePolicy, args, label: str) -> dict:
    with (
        LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            memory_limit=args.worker_memory or "auto",
        ) as lc,
        Client(lc) as client,
    ):
        warm_up(policy)
        client.run(warm_up, policy)
        sampler = Sampler(client)
        sampler.limit = int(args.max_client_gib * GIB) if args.max_client_gib else None
        out: dict = {"workers": n_workers}
        try:
            if not args.skip_floor:
                out["floor_seconds"] = floor_run(src, work / f"floor-{label}", policy, args.npartitions)
                shutil.rmtree(work / f"floor-{label}", ignore_errors=True)
            out.update(
                release_steps(
                    src,
                    work / f"released-{label}",
                    policy,
                    args.npartitions,
                    sampler,
                    collect=not args.no_collect,
                    times=out.setdefault("times", {}),
                )
            )
            if args.check:
                out["check"] = check_against_dpriv(src, policy, args.npartitions, out)
        except MemoryError as exc:
            out["broke"] = str(exc)
        finally:
            sampler.close()
            peak = client.run(lambda: __import__("resource").getrusage(0).ru_maxrss * 1024)
        out["peak_rss_gib"] = {
            s: {k: round(v / GIB, 3) for k, v in p.items()} for s, p in sampler.peaks.items() if s != "idle"
        }
        out["worker_ru_maxrss_gib"] = [round(v / GIB, 3) for v in peak.values()]
        shutil.rmtree(work / f"released-{label}", ignore_errors=True)
        return out


def _best(runs: list[dict]) -> dict:
    """Per-step minimum over repeats (the machine may be shared); totals recomputed."""
    ok = [r for r in runs if "times" in r and "broke" not in r]
    if not ok:
        return runs[-1]
    out = dict(ok[-1])
    steps = [k for k in ok[0]["times"] if k != "busy"]
    out["times"] = {k: min(r["times"][k] for r in ok) for k in steps}
    out["times"]["busy"] = ok[-1]["times"].get("busy", {})
    if "floor_seconds" in ok[0]:
        out["floor_seconds"] = min(r["floor_seconds"] for r in ok)
    out["release_seconds"] = round(
        sum(v for k, v in out["times"].items() if k not in ("busy", "collect", "verify")), 3
    )
    out["release_with_collect_verify_seconds"] = round(
        sum(v for k, v in out["times"].items() if k != "busy"), 3
    )
    out["all_release_seconds"] = [r["release_seconds"] for r in ok]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--npartitions", type=int, default=12)
    ap.add_argument("--files", type=int, default=0, help="input Parquet files (default npartitions)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--t", type=float, default=0.5)
    ap.add_argument("--j", type=float, default=0.8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--scaling", action="store_true", help="also run on 1 worker (strong scaling)")
    ap.add_argument("--skip-floor", action="store_true")
    ap.add_argument("--no-collect", action="store_true", help="skip the client-side collect + verify")
    ap.add_argument("--check", action="store_true", help="also run dpriv's generalize_view and compare")
    ap.add_argument("--max-client-gib", type=float, default=0.0)
    ap.add_argument("--worker-memory", default="", help="memory_limit per worker, e.g. 8GiB")
    ap.add_argument("--repeats", type=int, default=1, help="interleaved repeats; min time per step")
    ap.add_argument("--work", default="")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench_scale_"))
    work.mkdir(parents=True, exist_ok=True)
    policy = paper_policy(args.k, args.t, args.j, args.npartitions)
    src = work / f"view-{args.rows}.parquet"
    report: dict = {"rows": args.rows, "npartitions": args.npartitions, "k": args.k, "t": args.t, "j": args.j}
    try:
        if not src.exists():
            start = time.perf_counter()
            with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as lc, Client(lc):
                make_view(src, args.rows, args.files or args.npartitions, policy)
            report["generate_seconds"] = round(time.perf_counter() - start, 3)
        report["input_bytes"] = sum(f.stat().st_size for f in src.iterdir())
        runs = [args.workers] + ([1] if args.scaling and args.workers != 1 else [])
        for rep in range(args.repeats):
            for w in runs:
                res = run_on(w, src, work, policy, args, f"w{w}")
                print(json.dumps({f"workers={w}": res, "repeat": rep}, indent=1), flush=True)
                report.setdefault(f"workers={w}", []).append(res)
        best = {w: _best(report[f"workers={w}"]) for w in runs}
        report["best"] = best
        main_run = best[args.workers]
        if "floor_seconds" in main_run and "release_seconds" in main_run:
            report["release_over_floor"] = round(main_run["release_seconds"] / main_run["floor_seconds"], 2)
            report["release_with_collect_verify_over_floor"] = round(
                main_run.get("release_with_collect_verify_seconds", 0) / main_run["floor_seconds"], 2
            )
        if args.scaling and "release_seconds" in best.get(1, {}) and "release_seconds" in main_run:
            one = best[1]
            report["speedup_1_to_2"] = round(one["release_seconds"] / main_run["release_seconds"], 2)
            if "floor_seconds" in one:
                report["floor_speedup_1_to_2"] = round(one["floor_seconds"] / main_run["floor_seconds"], 2)
            report["step_speedup_1_to_2"] = {
                s: round(one["times"][s] / max(v, 1e-9), 2)
                for s, v in main_run["times"].items()
                if s in one["times"] and s != "busy"
            }
        summary = {k: v for k, v in report.items() if not k.startswith("workers=")}
        summary.pop("best", None)
        for key in (
            "times",
            "balance",
            "balance_exact_divisions",
            "peak_rss_gib",
            "worker_ru_maxrss_gib",
            "client_bytes",
            "broke",
            "release_seconds",
            "floor_seconds",
        ):
            summary[key] = main_run.get(key)
        print("SUMMARY", json.dumps(summary), flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
