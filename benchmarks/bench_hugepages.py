"""numpy's huge-page advice on or off: one view released in a fresh process, alternated.

numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) for each array
of 4 MiB and more. Where the kernel's THP ``defrag`` setting is ``madvise`` (the usual
default), a fault in such an array may compact memory synchronously, so the first touch of a
large array costs what the machine's fragmentation makes it cost. dpriv turns the advice off in
its own processes (:func:`dpriv.allocator.no_huge_page_advice`); this script measures why.

Each run is a new process (a release reuses the pages of the arrays it freed, so only a
process's first release pays the first touches, as a weekly job does) releasing one view of
``--rows`` tuples in process (the recommended defense, numba's kernels warmed on a small view
first), with ``NUMPY_MADVISE_HUGEPAGE`` 1 (numpy's default) and 0 alternated ``--repeat``
times. It also times the first touch of a (57, rows) float64 block, the size of the window
block of the respondent state at ``--rows``. Printed: each setting's runs, medians and the
ratio advice-on / advice-off (above 1: the advice costs time here).

    python benchmarks/bench_hugepages.py [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = "--child"


def child(work: Path) -> dict:
    """One fresh process: the first touch of a state-sized block, then one timed release."""
    import numpy as np
    import pandas as pd

    sys.path.insert(0, str(Path(__file__).parent))
    from _setup import forced_path, recommended_policy, warm_up

    from dpriv.allocator import keep_freed_memory
    from dpriv.release import release_history

    keep_freed_memory()  # as the dpriv command does
    policy = recommended_policy(work)
    view = pd.read_parquet(work / "history.parquet")
    start = time.perf_counter()
    block = np.empty((57, len(view)))
    block[:] = np.nan
    touch = time.perf_counter() - start
    del block
    tag = f"{os.getpid()}"
    warm_up(work / f"warm{tag}", policy, in_process=True)
    with forced_path(True):
        start = time.perf_counter()
        release_history(view, policy, work / f"ledger{tag}")
        wall = time.perf_counter() - start
    return {"touch_s": round(touch, 3), "release_s": round(wall, 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(CHILD, default="")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(Path(args.child))))
        return
    import dask

    from dpriv.datasets import write_medical_view

    work = Path(tempfile.mkdtemp(prefix="dpriv-hugepages-"))
    with dask.config.set(scheduler="threads"):
        write_medical_view(work, args.rows, npartitions=8, seed=0)
    runs: dict[str, list[dict]] = {"1": [], "0": []}
    for _ in range(args.repeat):
        for advice in runs:
            env = {**os.environ, "NUMPY_MADVISE_HUGEPAGE": advice}  # numpy reads it at import
            out = subprocess.run(
                [sys.executable, __file__, CHILD, str(work)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            runs[advice].append(json.loads(out.stdout.strip().splitlines()[-1]))
    med = {
        a: {k: statistics.median(r[k] for r in rs) for k in ("touch_s", "release_s")}
        for a, rs in runs.items()
    }
    for advice, rs in runs.items():
        name = "advice on (numpy's default)" if advice == "1" else "advice off (dpriv's setting)"
        print(f"{name}: release {[r['release_s'] for r in rs]} s, first touch {[r['touch_s'] for r in rs]} s")
    print(
        f"{args.rows} tuples in process, median of {args.repeat}: release on/off "
        f"{med['1']['release_s'] / med['0']['release_s']:.2f}, first touch of (57, {args.rows}) float64 "
        f"on/off {med['1']['touch_s'] / med['0']['touch_s']:.2f}"
    )
    import shutil

    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
