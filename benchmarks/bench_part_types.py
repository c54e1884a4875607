"""The partition-type survey before a release (:func:`dpriv.part_types.as_data_types`) of a
weekly Parquet folder of ~10^6 rows: the computed survey (every file's policy columns read, as
before session 40) against the footers' (:mod:`dpriv.part_footers`, no row read), in ONE process,
alternately (the machine may be shared: absolute seconds mean little), on the threaded scheduler
or a 2-worker cluster. Both must give the same history types.

    python benchmarks/bench_part_types.py [--files 24] [--rows 1000000] [--pairs 7] [--cluster]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd

import dpriv.part_types as part_types
from dpriv.datasets import medical_history, write_history
from dpriv.inputs import prepared
from dpriv.policy import ReleasePolicy


def weekly_folder(work: Path, files: int, rows: int) -> tuple[Path, ReleasePolicy]:
    """``files`` Parquet files of one view each (``rows`` in all); the last writes ages as floats."""
    write_history(work / "gen", medical_history(n_views=files, view_size=rows // files, seed=1))
    hist = pd.read_parquet(work / "gen" / "history.parquet")
    policy = ReleasePolicy.from_toml(work / "gen" / "policy.toml")
    folder = work / "weeks"
    folder.mkdir()
    for i, (_, week) in enumerate(hist.groupby(policy.time, sort=True)):
        if i == files - 1:
            week = week.assign(age=week["age"].astype(np.float64))
        week.to_parquet(folder / f"part.{i}.parquet", index=False)
    return folder, policy


def survey(folder: Path, policy: ReleasePolicy, footers: bool) -> tuple[float, dict]:
    """Seconds of as_data_types on the prepared read of ``folder`` and the history's dtypes."""
    history, policy = prepared(dd.read_parquet(folder), policy)
    columns = [policy.id, *policy.qi, policy.sensitive, policy.time]
    real = part_types.footer_survey
    part_types.footer_survey = real if footers else (lambda *a: None)
    try:
        t0 = time.perf_counter()
        out = part_types.as_data_types(history, columns)
        return time.perf_counter() - t0, out._meta.dtypes.astype(str).to_dict()
    finally:
        part_types.footer_survey = real


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=24)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--cluster", action="store_true", help="a 2-worker LocalCluster, as a release starts")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder, policy = weekly_folder(Path(tmp), args.files, args.rows)
        if args.cluster:
            from distributed import Client, LocalCluster

            context = Client(LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0"))
        else:
            context = nullcontext()
        with context:
            survey(folder, policy, False)  # warm: imports, the cluster's first tasks
            survey(folder, policy, True)
            old, new = [], []
            for _ in range(args.pairs):
                t_old, d_old = survey(folder, policy, False)
                t_new, d_new = survey(folder, policy, True)
                assert d_old == d_new, (d_old, d_new)
                old.append(t_old)
                new.append(t_new)
    ratios = [n / o for o, n in zip(old, new, strict=True)]
    print(f"computed survey (s): {' '.join(f'{t:.3f}' for t in old)}")
    print(f"footer survey (s):   {' '.join(f'{t:.3f}' for t in new)}")
    print(
        f"footer / computed: median {statistics.median(ratios):.3f}, "
        f"min {min(ratios):.3f}, max {max(ratios):.3f} ({len(ratios)} pairs)"
    )


if __name__ == "__main__":
    main()
