"""The kernels whose inputs dpriv.kernel_args now passes read-only, timed on the same arrays
writable (their signature before) and read-only (the one signature now), in one process.

    python benchmarks/bench_kernel_args.py [--n 1000000] [--m 10] [--pairs 5]

Both signatures are compiled (or loaded) before anything is timed. Each pair times the kernel
once writable and once read-only, alternately (the machine may be shared: only paired ratios
mean something); printed: the median of each and the median of the pairs' ratios read-only /
writable, with the outputs checked equal. Kernels: the greedy scan (``greedy_scan``, the scan
of JS-reduce's Hilbert ranges; ``--n`` // 5 tuples, it is the slowest), the repair's
``attach_aside`` on those leftovers, the per-row entropies, the JS of each group
(``_js_all``, groups of 5), the top-down node sums (``node_stats`` of all rows) and the sort of
ties within key runs (``_ties_within_runs``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dpriv.anonymity.generalize import UNGROUPED, attach_aside, entropies_kernel, greedy_scan
from dpriv.anonymity.group_stats import GroupStats
from dpriv.anonymity.topdown_sums import node_stats
from dpriv.group_table import _js_all
from dpriv.kernel_args import read_only
from dpriv.row_order import _ties_within_runs


def _flag(arrays: dict, ro: bool) -> dict:
    return {k: read_only(v) if ro else v for k, v in arrays.items()}


def cases(n: int, m: int, rng: np.random.Generator) -> dict:
    """name -> (inputs read-only in the release, call(inputs) -> output to compare)."""
    g = n // 5
    s = rng.integers(0, m, g)
    priors = rng.dirichlet(np.full(m, 0.5), g)
    view = np.bincount(s, minlength=m).astype(np.int64)
    ent = entropies_kernel(priors, 2.0)
    coords = rng.random((g, 2))

    def scan(a):
        group = np.full(g, UNGROUPED, np.int64)
        aside = np.empty(g, np.int64)
        out = greedy_scan(
            np.arange(g), a["s"], a["p"], ent, a["vc"], g, 5, 0.3, 0.6, 1.0, 0, 2.0, 60, 8, group, 0, aside
        )
        return group, aside[: out.n_aside]

    group, aside = scan({"s": s, "p": priors, "vc": view})
    stats = GroupStats.of(group, s, priors, ent, coords, np.arange(g), int(group.max()) + 1, m)
    left = np.sort(aside)

    def attach(a):
        got = tuple(x.copy() for x in stats.astuple())
        assign = np.full(len(left), UNGROUPED, np.int64)
        attach_aside(
            *got, a["s"], a["p"], ent[left], a["c"], left, assign, a["vc"], g, 0.3, 0.6, 1.0, 0, 2.0, 256
        )
        return assign

    big = rng.dirichlet(np.full(m, 0.5), n)
    starts = np.arange(0, n + 1, 5, dtype=np.int64)
    key = np.sort(rng.integers(0, n // 300, n).astype(np.uint64))
    tie = rng.integers(0, 2**63, n).astype(np.uint64)
    sx = rng.integers(0, m, n)
    x = rng.random((n, 3))
    idx = np.arange(n)
    return {
        "greedy_scan": ({"s": s, "p": priors, "vc": view}, scan),
        "attach_aside": (
            {"s": s[left].copy(), "p": priors[left].copy(), "c": coords[left].copy(), "vc": view},
            attach,
        ),
        "entropies_kernel": ({"p": big}, lambda a: entropies_kernel(a["p"], 2.0)),
        "_js_all": ({"p": big}, lambda a: _js_all(a["p"], starts, 2.0)),
        "node_stats": ({"s": sx, "p": big, "x": x}, lambda a: node_stats(idx, a["s"], a["p"], a["x"])[:2]),
        "_ties_within_runs": ({"k": key, "t": tie}, lambda a: _ties_within_runs(a["k"], a["t"])),
    }


def _equal(a, b) -> bool:
    if isinstance(a, tuple):
        return all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(np.array_equal(a, b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**6, help="rows (the greedy scan gets n // 5)")
    parser.add_argument("--m", type=int, default=10, help="sensitive values")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    small = cases(2000, args.m, np.random.default_rng(0))
    for inputs, call in small.values():  # both signatures compiled (or loaded) first
        call(_flag(inputs, False)), call(_flag(inputs, True))
    print(f"n {args.n:,}, M {args.m}, {args.pairs} pairs; CPU seconds (time.process_time), medians")
    print(f"{'kernel':20s} {'writable':>10s} {'read-only':>10s} {'ratio ro/rw':>12s}  same output")
    for name, (inputs, call) in cases(args.n, args.m, rng).items():
        rw, ro = _flag(inputs, False), _flag(inputs, True)
        times = {False: [], True: []}
        same = True
        for _ in range(args.pairs):
            outs = {}
            for flag, a in ((False, rw), (True, ro)):
                t0 = time.process_time()
                outs[flag] = call(a)
                times[flag].append(time.process_time() - t0)
            same &= _equal(outs[False], outs[True])
        ratios = [b / a for a, b in zip(times[False], times[True], strict=True) if a > 0]
        print(
            f"{name:20s} {statistics.median(times[False]):10.4f} {statistics.median(times[True]):10.4f} "
            f"{statistics.median(ratios):12.3f}  {same}"
        )
        if not same:
            raise SystemExit(f"{name}: read-only and writable inputs gave different outputs")


if __name__ == "__main__":
    main()
