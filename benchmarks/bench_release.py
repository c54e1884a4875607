"""The paper workload end to end (docs/algorithms.md §2.5): 24 views x 5,000 tuples, order-3 DK.

Prints the per-release table, the time per view, and the ratio of the time per view to the
paper's reported time per view ("a few minutes", up to 43 minutes on their workstation; we
take 3 minutes and 43 minutes as the two ends). Also the floor of one view: Hilbert keys +
sort + Parquet round trip of the same tuples, in the same process.

    python benchmarks/bench_release.py [--views 24] [--view-size 5000] [--t 0.5] [--j 0.8]
"""

from __future__ import annotations

import argparse
import io
import shutil
import tempfile
import time
from pathlib import Path

import dask
import pandas as pd

from dpriv.datasets import medical_history, write_history
from dpriv.hilbert import hilbert_keys
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

PAPER_SECONDS_PER_VIEW = (3 * 60, 43 * 60)


def floor_seconds(view: pd.DataFrame, policy: ReleasePolicy) -> float:
    start = time.perf_counter()
    buf = io.BytesIO()
    view.to_parquet(buf)
    frame = pd.read_parquet(io.BytesIO(buf.getvalue()))
    frame = frame.assign(_hkey=hilbert_keys(frame, policy)).sort_values("_hkey")
    frame.to_parquet(io.BytesIO())
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--views", type=int, default=24)
    ap.add_argument("--view-size", type=int, default=5000)
    ap.add_argument("--t", type=float, default=0.5)
    ap.add_argument("--j", type=float, default=0.8)
    ap.add_argument("--method", default="jsreduce")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp())
    try:
        mh = medical_history(args.views, args.view_size, seed=0)
        policy = ReleasePolicy.from_toml(write_history(work, mh), t=args.t, j=args.j)
        rows = []

        def record(i, m):
            rows.append(
                {
                    "release": i,
                    "groups": m["n_groups"],
                    "suppression": m["suppression_rate"],
                    "max_emd": m["t_achieved"],
                    "max_js": m["j_achieved"],
                    "semi": m["average_semiperimeter"],
                    "seconds": sum(m["seconds"].values()),
                }
            )
            print(pd.DataFrame([rows[-1]]).to_string(index=False, header=len(rows) == 1), flush=True)

        start = time.perf_counter()
        with dask.config.set(scheduler="threads"):
            release_history(mh.history, policy, work / "ledger", on_release=record, method=args.method)
        total = time.perf_counter() - start
        per_view = total / args.views
        floor = min(floor_seconds(mh.history[mh.history.view == 1], policy) for _ in range(5))
        print(
            f"\n{args.views} views x {args.view_size} tuples ({args.method}, k={policy.k}, t={policy.t}, "
            f"j={policy.j}): {total:.1f} s, {per_view:.2f} s per view"
        )
        print(
            f"per view / paper's per view: {per_view / PAPER_SECONDS_PER_VIEW[0]:.4f} (3 min) .. "
            f"{per_view / PAPER_SECONDS_PER_VIEW[1]:.5f} (43 min)"
        )
        print(f"per view / floor (keys + sort + Parquet round trip of one view): {per_view / floor:.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
