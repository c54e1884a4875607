"""Small views in process vs on Dask, and incremental IE knowledge (issue 13, items 5 and 3).

In one process, on the generator of ``dpriv.datasets`` (order-3 DK unless said; k = 5,
t = 0.5, j = 0.8, max_suppression = 1, Dask's threaded scheduler):

* ``sepsis``: a sepsis-like history, 68 weekly views of 15 tuples: ``release_history`` total
  seconds on the Dask path (forced, ``SMALL_VIEW_ROWS = -1``: every step persisted) vs the
  default (in process below ``SMALL_VIEW_ROWS``);
* ``paper``: the paper workload, 24 x 5,000, the same two ways;
* ``ie``: 24 x 5,000 with IE knowledge (``[knowledge] defender = "ie"``): seconds of release 24
  over release 2 (the counts are updated from the new view only);
* ``sizes``: one release of a view of n tuples both ways, for the threshold.

    python benchmarks/bench_small_views.py [sepsis paper ie sizes]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import dask

import dpriv.release as release_mod
from dpriv.datasets import medical_history, write_history
from dpriv.policy import ReleasePolicy


def timed_history(n_views: int, view_size: int, threshold: int | None, *, ie: bool = False,
                  until: int | None = None) -> tuple[float, list[float]]:
    """Seconds of ``release_history`` in all and per release (wall time between commits)."""
    work = Path(tempfile.mkdtemp())
    try:
        mh = medical_history(n_views, view_size, seed=0)
        policy = ReleasePolicy.from_toml(write_history(work, mh), t=0.5, j=0.8, max_suppression=1.0)
        if ie:
            policy = policy.with_overrides(knowledge={"defender": "ie"})
        saved = release_mod.SMALL_VIEW_ROWS
        if threshold is not None:
            release_mod.SMALL_VIEW_ROWS = threshold
        marks = [time.perf_counter()]
        try:
            with dask.config.set(scheduler="threads"):
                release_mod.release_history(
                    mh.history, policy, work / "ledger", until=until,
                    on_release=lambda i, m: marks.append(time.perf_counter()),
                )
        finally:
            release_mod.SMALL_VIEW_ROWS = saved
        per = [b - a for a, b in zip(marks, marks[1:])]
        return marks[-1] - marks[0], per
    finally:
        shutil.rmtree(work, ignore_errors=True)


def before_after(name: str, n_views: int, view_size: int, target: float) -> None:
    dask_s, _ = timed_history(n_views, view_size, -1)
    small_s, _ = timed_history(n_views, view_size, None)
    met = "met" if small_s <= target else "NOT met"
    print(f"{name}: {n_views} x {view_size}  Dask path {dask_s:.1f} s | in process {small_s:.1f} s | "
          f"ratio {dask_s / small_s:.1f}x | target <= {target:.0f} s: {met}", flush=True)


def main(parts: list[str]) -> None:
    timed_history(2, 50, None)  # warm-up: numba's cached kernels loaded, imports done
    if "sepsis" in parts:
        before_after("sepsis-like", 68, 15, 30)
    if "paper" in parts:
        before_after("paper workload", 24, 5000, 30)
    if "ie" in parts:
        total, per = timed_history(24, 5000, None, ie=True)
        print(f"IE 24 x 5000 in process: {total:.1f} s; release 2 {per[1]:.2f} s, "
              f"release 24 {per[23]:.2f} s, ratio {per[23] / per[1]:.2f} (target <= 1.5)", flush=True)
    if "sizes" in parts:
        print("one first release of n tuples: Dask path s | in process s | ratio")
        for n in (15, 500, 5000, 20000, 50000):
            d, _ = timed_history(1, n, -1)
            p, _ = timed_history(1, n, None)
            print(f"{n:>7} {d:8.2f} {p:8.2f} {d / p:6.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["sepsis", "paper", "ie", "sizes"])
