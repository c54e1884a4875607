"""The grouping step's kernel, the top-down range kernel (``dpriv.first_pass.topdown_range``,
the recommended defense's grouping), of this tree against an older tree: paired ratios.

A one-view medical history of ``--rows`` tuples is released in this process with the
recommended defense (:data:`dpriv.datasets.files.RECOMMENDED_DEFENSE`) while every range the
kernel gets is recorded; then the kernel of this tree and that of ``--old`` (a folder holding
an older ``dpriv``, e.g. ``git archive main | tar -x -C /tmp/old``) run alternately on the
recorded ranges (their outputs must be equal), and each pair's ratio new / old is printed
with the median (the machine may be shared: only paired ratios mean something). The older
tree's modules are loaded under other names, so give it a copy no other process imports
(numba's cache in it records the module names).

    python benchmarks/bench_topdown_split.py --old /tmp/old [--rows 200000] [--pairs 7] [--calls F]

``--calls F`` keeps the recorded ranges in the pickle ``F`` (written once, read by later runs:
the recording is a whole in-process release).
"""

from __future__ import annotations

import argparse
import importlib.util
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import pandas as pd

import dpriv.first_pass as first_pass
import dpriv.release as release_mod
from dpriv.datasets import medical_history, write_history
from dpriv.datasets.files import RECOMMENDED_DEFENSE
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


def _load(name: str, path: Path):
    """The module at ``path`` under ``name`` (its imports resolve to this tree's dpriv)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache finds compiled functions by module name
    spec.loader.exec_module(module)
    return module


def old_kernel(old: Path):
    """``topdown_range`` of the tree at ``old``, calling that tree's top-down split."""
    topdown = _load("old_dpriv_topdown", old / "dpriv" / "anonymity" / "topdown.py")
    released = _load("old_dpriv_released", old / "dpriv" / "released.py")
    kernel = _load("old_dpriv_first_pass", old / "dpriv" / "first_pass.py")
    kernel.topdown_groups, kernel.split_coords = topdown.topdown_groups, topdown.split_coords
    kernel.group_labels = released.group_labels  # the labels' hashing is part of the kernel
    return kernel.topdown_range


def recorded_ranges(rows: int, work: Path) -> list[tuple]:
    """The arguments of every range kernel call of an in-process release of ``rows`` tuples."""
    write_history(work, medical_history(1, rows, seed=0), RECOMMENDED_DEFENSE)
    policy = ReleasePolicy.from_toml(work / "policy.toml")
    calls, kernel = [], first_pass.topdown_range

    def record(*args):
        calls.append(args)
        return kernel(*args)

    big = 2**62  # the in-process path whatever the size
    with (
        mock.patch.object(first_pass, "topdown_range", record),
        mock.patch.multiple(release_mod, SMALL_VIEW_ROWS=big, SMALL_STATE_ROWS=big),
    ):
        release_history(pd.read_parquet(work / "history.parquet"), policy, work / "ledger")
    return calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="folder of the older tree (holding dpriv/)")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--calls", help="a pickle of the recorded ranges: read if it exists, else written")
    args = ap.parse_args()
    old, new = old_kernel(Path(args.old)), first_pass.topdown_range
    if args.calls and Path(args.calls).exists():  # recorded before (by this script, trusted)
        calls = pickle.loads(Path(args.calls).read_bytes())
    else:
        with tempfile.TemporaryDirectory(prefix="dpriv-topdown-") as work:
            calls = recorded_ranges(args.rows, Path(work))
        if args.calls:
            Path(args.calls).write_bytes(pickle.dumps(calls, protocol=5))
    for call in calls:
        a, b = old(*call), new(*call)
        assert a[0].equals(b[0]) and a[1].equals(b[1]), "the two trees group differently"
    ratios = []
    for i in range(args.pairs):
        seconds = {}
        for name, kernel in [("old", old), ("new", new)][:: 1 if i % 2 == 0 else -1]:
            start = time.perf_counter()
            for call in calls:
                kernel(*call)
            seconds[name] = time.perf_counter() - start
        ratios.append(seconds["new"] / seconds["old"])
        print(f"pair {i}: old {seconds['old']:.3f} s, new {seconds['new']:.3f} s, new/old {ratios[-1]:.3f}")
    print(f"{len(calls)} ranges, {args.rows} tuples: median new/old {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
