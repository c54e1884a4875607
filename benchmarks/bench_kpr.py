"""Benchmark of dpriv.metrics.kpr: pandas path vs Dask path, in the same process.

KPR (docs/algorithms.md §5, E21/E22) of ``n`` original records against ``n`` synthetic ones,
with 2 numeric known variables (age: integer years, weight: kg with one decimal) and 1
categorical one (region, 8 levels, category dtype). The synthetic table is the original
one perturbed (age +/- 2 years, weight x N(1, 0.03), 5 % of regions redrawn).

Prints wall times, the Dask/pandas ratio, the KPR figures (they must be identical) and the
peak traced memory of each path (``tracemalloc``: NumPy/pandas buffers are traced; a
second, traced run so that the timings are not slowed down), plus the process max RSS.
Times are the best of ``--repeat`` runs.

Usage::

    python benchmarks/bench_kpr.py [--n 1000000] [--npartitions 8] [--repeat 3]
                                   [--scheduler threads|distributed] [--no-memory]
"""

from __future__ import annotations

import argparse
import gc
import resource
import time
import tracemalloc
import warnings

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv.metrics.kpr import KPRResult, KPRWarning, kpr

KNOWN = ["age", "weight", "region"]


def make_tables(n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    regions = np.array([f"region_{i}" for i in range(8)])
    age = rng.integers(18, 91, n)
    weight = np.round(rng.normal(75.0, 14.0, n), 1)
    region = regions[rng.integers(0, 8, n)]
    orig = pd.DataFrame(
        {
            "age": age,
            "weight": weight,
            "region": pd.Categorical(region, categories=regions),
        }
    )
    redraw = rng.random(n) < 0.05
    syn_region = np.where(redraw, regions[rng.integers(0, 8, n)], region)
    syn = pd.DataFrame(
        {
            "age": np.clip(age + rng.integers(-2, 3, n), 18, 90),
            "weight": np.round(weight * rng.normal(1.0, 0.03, n), 1),
            "region": pd.Categorical(syn_region, categories=regions),
        }
    )
    return orig, syn


def timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def traced_peak(fn) -> float:
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def show(label: str, r: KPRResult, seconds: float) -> None:
    print(
        f"{label:7s} {seconds:8.2f} s   KPR = {r.kpr:.4f} %   |U| = {r.n_unique_original}"
        f"   |B1| = {r.n_unique_synthetic_profiles}   |S| = {r.n_matched}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--npartitions", type=int, default=8)
    ap.add_argument("--scheduler", choices=["threads", "distributed"], default="threads")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per path (min kept)")
    ap.add_argument("--no-memory", action="store_true", help="skip the traced runs")
    args = ap.parse_args()
    warnings.simplefilter("ignore", KPRWarning)

    orig, syn = make_tables(args.n)
    print(
        f"KPR benchmark: {args.n:,} original x {len(syn):,} synthetic records, "
        f"known = {KNOWN}; Dask: {args.npartitions} partitions, scheduler={args.scheduler}"
    )
    client = None
    if args.scheduler == "distributed":
        from dask.distributed import Client, LocalCluster

        client = Client(LocalCluster(processes=False, dashboard_address=None))
    dorig = dd.from_pandas(orig, npartitions=args.npartitions)
    dsyn = dd.from_pandas(syn, npartitions=args.npartitions)

    def run_pandas() -> KPRResult:
        return kpr(orig, syn, KNOWN)

    def run_dask() -> KPRResult:
        if client is not None:
            return kpr(dorig, dsyn, KNOWN)
        with dask.config.set(scheduler="threads"):
            return kpr(dorig, dsyn, KNOWN)

    rp, tp = timed(run_pandas)
    rd, td = timed(run_dask)
    for _ in range(args.repeat - 1):  # best of `repeat` (the machine may be shared)
        tp = min(tp, timed(run_pandas)[1])
        td = min(td, timed(run_dask)[1])
    show("pandas", rp, tp)
    show("dask", rd, td)
    same = (rp.kpr, rp.n_unique_original, rp.n_unique_synthetic_profiles, rp.n_matched) == (
        rd.kpr,
        rd.n_unique_original,
        rd.n_unique_synthetic_profiles,
        rd.n_matched,
    ) and rp.bins == rd.bins
    print(f"ratio dask / pandas time: {td / tp:.2f}   identical results: {same}")
    for name, b in rp.bins.items():
        print(f"  bins {name}: lo={b.lo:.6g} hi={b.hi:.6g} step={b.step:.6g} n_bins={b.n_bins}")
    if not args.no_memory:
        mp = traced_peak(run_pandas)
        md = traced_peak(run_dask)
        print(
            f"peak traced memory: pandas {mp:.0f} MiB, dask {md:.0f} MiB "
            f"(input tables: {orig.memory_usage(deep=True).sum() / 2**20:.0f} MiB + "
            f"{syn.memory_usage(deep=True).sum() / 2**20:.0f} MiB)"
        )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS: {rss:.0f} MiB")
    if client is not None:
        client.close()
    if not same:
        raise SystemExit("pandas and Dask paths disagree")


if __name__ == "__main__":
    main()
