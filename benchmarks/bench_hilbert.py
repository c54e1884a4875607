"""Benchmark dpriv.hilbert.hilbert_index against hilbertcurve's distances_from_points.

Run: python benchmarks/bench_hilbert.py [--n N] [--ref-n N_REF]

For each setting (m=3, bits=5: the paper; m=5, bits=12) it draws N random grid points,
times dpriv after a warm-up call (numba compilation excluded), times hilbertcurve on the
first N_REF points in the same process (scaled to N when N_REF < N, which the output says),
checks both give identical keys on the points hilbertcurve was timed on, and prints keys/s
and the speed-up (goal: >= 30x).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _timing import best_of
from hilbertcurve.hilbertcurve import HilbertCurve

from dpriv.hilbert import hilbert_index

SETTINGS = [(3, 5, "paper setting"), (5, 12, "")]
GOAL = 30.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**6, help="points per setting")
    parser.add_argument(
        "--ref-n",
        type=int,
        default=None,
        help="points given to hilbertcurve (default: all N; e.g. 100000 to save time)",
    )
    parser.add_argument("--seed", type=int, default=20040101)
    args = parser.parse_args()
    n = args.n
    n_ref = min(args.ref_n or n, n)
    rng = np.random.default_rng(args.seed)

    hilbert_index(np.zeros((2, 2), dtype=np.int64), 2)  # warm-up: numba compile / cache load
    ok_all = True
    for m, bits, note in SETTINGS:
        coords = rng.integers(0, 2**bits, size=(n, m), dtype=np.int64)
        hilbert_index(coords[:10], bits)

        keys = None

        def run_dpriv(coords=coords, bits=bits):
            nonlocal keys
            keys = hilbert_index(coords, bits)

        t_dpriv, _ = best_of(run_dpriv, 5)

        ref_pts = coords[:n_ref]
        curve = HilbertCurve(bits, m)
        t0 = time.perf_counter()
        ref = curve.distances_from_points(ref_pts)
        t_ref = time.perf_counter() - t0
        ref_keys = np.array(ref, dtype=np.uint64)

        identical = bool(np.array_equal(keys[:n_ref], ref_keys))
        ok_all &= identical
        rate_dpriv = n / t_dpriv
        rate_ref = n_ref / t_ref
        ratio = rate_dpriv / rate_ref

        title = f"m={m}, bits={bits}" + (f" ({note})" if note else "")
        print(f"== {title}: {n:,} random points")
        print(f"  dpriv.hilbert_index   : {t_dpriv:8.4f} s  {rate_dpriv:14,.0f} keys/s (best of 5)")
        scaled = "" if n_ref == n else f"  [timed on {n_ref:,} points, scaled to {n:,}]"
        print(f"  hilbertcurve          : {t_ref * n / n_ref:8.4f} s  {rate_ref:14,.0f} keys/s{scaled}")
        print(
            f"  speed-up              : {ratio:,.0f}x  (goal >= {GOAL:.0f}x: "
            f"{'met' if ratio >= GOAL else 'NOT met'})"
        )
        print(f"  identical keys on the {n_ref:,} points timed by both: {identical}")
    if not ok_all:
        raise SystemExit("MISMATCH between dpriv and hilbertcurve")


if __name__ == "__main__":
    main()
