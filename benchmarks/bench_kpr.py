"""Benchmark of dpriv.metrics.kpr against a plain pandas implementation of the formula.

KPR (docs/algorithms.md §5, E21/E22) of ``n`` original records against ``n`` synthetic ones,
with 2 numeric known variables (age: integer years, weight: kg with one decimal) and 1
categorical one (region, 8 levels, category dtype). The synthetic table is the original
one perturbed (age +/- 2 years, weight x N(1, 0.03), 5 % of regions redrawn).

Three implementations on the same tables: ``peer`` (``kpr_peer.peer_kpr``, plain pandas,
the yardstick), dpriv on pandas input, dpriv on Dask input (``--npartitions``). For each
size it prints the best wall time and the best process CPU time (all threads; on a shared
machine the less noisy of the two) of ``--repeat`` interleaved runs and the peak memory of
one run,
each also as a ratio to the peer (target of issue 13: time ratio <= 1, memory ratio
<= 1.5 for dpriv on pandas input), and checks that the KPR, ``|U|``, ``|B1|`` and ``|S|``
are the same to the last bit.

Memory: each implementation runs in a fresh subprocess (same method for all three): the
tables are built, one warm-up call on a small table loads the code paths, the peak RSS
is reset (``/proc/self/clear_refs``) and the figure is the peak RSS during the call minus
the RSS before it (input tables excluded, every allocation counted: NumPy, pandas, Arrow,
Python objects, Dask threads).

Usage::

    python benchmarks/bench_kpr.py [--sizes 100000,1000000] [--npartitions 8] [--repeat 3]
                                   [--scheduler threads|distributed] [--no-memory]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kpr_peer import peer_kpr  # noqa: E402
from proc_peaks import status_bytes  # noqa: E402

from dpriv.metrics.kpr import KPRWarning, kpr  # noqa: E402

KNOWN = ["age", "weight", "region"]
IMPLS = ("peer", "dpriv-pandas", "dpriv-dask")


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


def runner(impl: str, orig: pd.DataFrame, syn: pd.DataFrame, npartitions: int):
    """A no-argument callable computing (kpr, |U|, |B1|, |S|) with ``impl``."""
    if impl == "peer":

        def run():
            r = peer_kpr(orig, syn, KNOWN)
            return (r["kpr"], r["U"], r["B1"], r["S"])

        return run
    if impl == "dpriv-pandas":
        a, b = orig, syn
    else:
        import dask.dataframe as dd

        a = dd.from_pandas(orig, npartitions=npartitions)
        b = dd.from_pandas(syn, npartitions=npartitions)

    def run():
        r = kpr(a, b, KNOWN)
        return (r.kpr, r.n_unique_original, r.n_unique_synthetic_profiles, r.n_matched)

    return run


def child(impl: str, n: int, npartitions: int, scheduler: str) -> None:
    """Peak RSS (bytes) of one call of ``impl`` above the RSS before it; JSON on stdout."""
    warnings.simplefilter("ignore", KPRWarning)
    client = _client(scheduler)
    runner(impl, *make_tables(2000, seed=1), npartitions)()  # warm-up: imports, caches
    orig, syn = make_tables(n)
    run = runner(impl, orig, syn, npartitions)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    before = status_bytes("self", "VmRSS")["VmRSS"]
    run()
    print(json.dumps({"peak": status_bytes("self", "VmHWM")["VmHWM"] - before}))
    if client is not None:
        client.close()


def _client(scheduler: str):
    import dask

    if scheduler == "distributed":
        from dask.distributed import Client, LocalCluster

        return Client(LocalCluster(processes=False, dashboard_address=None))
    dask.config.set(scheduler="threads")
    return None


def peak_bytes(impl: str, n: int, npartitions: int, scheduler: str) -> float:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", impl, "--sizes", str(n)]
    cmd += ["--npartitions", str(npartitions), "--scheduler", scheduler]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["peak"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000", help="comma-separated table sizes")
    ap.add_argument("--npartitions", type=int, default=8)
    ap.add_argument("--scheduler", choices=["threads", "distributed"], default="threads")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per implementation (min kept)")
    ap.add_argument("--no-memory", action="store_true", help="skip the subprocess memory runs")
    ap.add_argument("--child", choices=IMPLS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:
        child(args.child, sizes[0], args.npartitions, args.scheduler)
        return
    warnings.simplefilter("ignore", KPRWarning)
    client = _client(args.scheduler)
    print(
        f"KPR benchmark: known = {KNOWN}; Dask input: {args.npartitions} partitions, "
        f"scheduler={args.scheduler}; best of {args.repeat} runs; memory = peak RSS above the "
        "inputs, one run per implementation in a fresh process"
    )
    print(
        f"{'n':>9s}  {'impl':13s} {'wall s':>8s} {'x peer':>7s} {'CPU s':>8s} {'x peer':>7s} "
        f"{'peak MiB':>9s} {'x peer':>7s}  KPR"
    )
    ok = True
    for n in sizes:
        orig, syn = make_tables(n)
        runs = {impl: runner(impl, orig, syn, args.npartitions) for impl in IMPLS}
        best = dict.fromkeys(IMPLS, float("inf"))
        cpu = dict.fromkeys(IMPLS, float("inf"))
        result = {}
        for _ in range(args.repeat):  # interleaved: a shared machine slows all alike
            for impl, run in runs.items():
                gc.collect()
                c0, t0 = time.process_time(), time.perf_counter()
                result[impl] = run()
                best[impl] = min(best[impl], time.perf_counter() - t0)
                cpu[impl] = min(cpu[impl], time.process_time() - c0)
        peak = {}
        if not args.no_memory:
            peak = {impl: peak_bytes(impl, n, args.npartitions, args.scheduler) for impl in IMPLS}
        for impl in IMPLS:
            mem = (
                f"{peak[impl] / 2**20:9.1f} {peak[impl] / peak['peer']:7.2f}"
                if peak
                else f"{'-':>9s} {'-':>7s}"
            )
            r = result[impl]
            print(
                f"{n:9d}  {impl:13s} {best[impl]:8.3f} {best[impl] / best['peer']:7.2f} "
                f"{cpu[impl]:8.3f} {cpu[impl] / cpu['peer']:7.2f} {mem}  "
                f"{r[0]!r} (|U| {r[1]}, |B1| {r[2]}, |S| {r[3]})"
            )
        same = all(result[impl] == result["peer"] for impl in IMPLS)
        ok &= same
        print(f"{'':9s}  same KPR, |U|, |B1|, |S| to the last bit in all three: {same}")
    if client is not None:
        client.close()
    if not ok:
        raise SystemExit("the implementations disagree")


if __name__ == "__main__":
    main()
