"""The state's row order (:func:`dpriv.state_buckets.state_order`) against pandas' stable sort, paired.

The pk step sorts the posteriors of each state bucket by id (on Dask: one bucket per task, a
10^6-tuple view in 8 buckets of ~125,000 respondents), and in process the whole view by
(bucket, id). Integer ids are distinct, so numpy's default sort gives the one order a stable
sort gives; the bucket key is sorted as 16 bits (numpy's radix sort). This times, alternately
in one process (CPU seconds), the order as dpriv computes it and the stable pandas sort it
replaced, checks they are equal, and prints each pair's ratio and the median.

    python benchmarks/benchstate_order.py [--rows 1000000] [--pairs 7]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from dpriv.allocator import keep_freed_memory, no_huge_page_advice
from dpriv.state_buckets import state_buckets, state_order


def stable_order(ids: pd.Series, n: int) -> np.ndarray:
    """The reference: a stable sort by id, then a stable sort by bucket (the order before)."""
    by_id = ids.reset_index(drop=True).sort_values(kind="stable").index.to_numpy()
    return by_id if n <= 1 else by_id[np.argsort(state_buckets(ids, n)[by_id], kind="stable")]


def cpu(fn, *args) -> tuple[float, np.ndarray]:
    start = time.process_time()
    out = fn(*args)
    return time.process_time() - start, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--pairs", type=int, default=7)
    args = ap.parse_args()
    keep_freed_memory()  # as the dpriv command and its workers do
    no_huge_page_advice()
    rng = np.random.default_rng(0)
    ids = pd.Series(rng.choice(20 * args.rows, size=args.rows, replace=False).astype(np.int64))
    bucket = ids[state_buckets(ids, 8) == 0].reset_index(drop=True)  # a Dask task's bucket
    cases = (("one bucket of 8 (Dask, n=1)", bucket, 1), ("whole view (in process, n=8)", ids, 8))
    for name, frame, n in cases:
        ratios = []
        for k in range(args.pairs + 1):
            timed = {}
            for fn in (state_order, stable_order) if k % 2 else (stable_order, state_order):
                timed[fn] = cpu(fn, frame, n)
            assert np.array_equal(timed[state_order][1], timed[stable_order][1])
            if k:  # the first pair warms up
                ratios.append(timed[state_order][0] / timed[stable_order][0])
        print(f"{name}, {len(frame)} ids: dpriv/stable ratios " + ", ".join(f"{r:.2f}" for r in ratios)
              + f"; median {np.median(ratios):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
