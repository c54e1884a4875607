"""Benchmark dpriv's verifier against pyCANON: k, l and t of a generalized table.

Run: python benchmarks/bench_check_pycanon.py [--file PATH] [--repeats R]

Default input: pyCANON's ``adult_anonymized_10.csv`` (shared data; QI = age, education,
occupation, relationship, sex, native-country; SA = salary-class). Both tools read the
same DataFrame in the same process; dpriv's
:func:`dpriv.anonymity.verify.group_statistics` (groups = tuples of QI values, equal
ground over the table's own salary distribution, which is pyCANON's EMD for a text SA) is
timed after a warm-up call (numba compilation excluded), pyCANON's ``k_anonymity``,
``l_diversity`` and ``t_closeness`` once each. The script checks that k and l are equal
and t agrees to 1e-12, and prints the times and the speed-up. Exit status 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from _timing import best_of
from pycanon.anonymity import k_anonymity, l_diversity, t_closeness

from dpriv.criteria import group_statistics
from dpriv.validate import codes

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "data" / "pycanon" / "adult_anonymized_10.csv"
QI = ["age", "education", "occupation", "relationship", "sex", "native-country"]
SA = "salary-class"


def dpriv_klt(data: pd.DataFrame) -> tuple[int, int, float]:
    domain = sorted(data[SA].unique())
    counts = np.bincount(codes(data[SA], domain), minlength=len(domain))
    st = group_statistics(data, QI, SA, domain, counts, "equal", group_column=None)
    return int(st["size"].min()), int(st["l"].min()), float(st["emd"].max())


def pycanon_klt(data: pd.DataFrame) -> tuple[int, int, float]:
    return (int(k_anonymity(data, QI)), int(l_diversity(data, QI, [SA])), float(t_closeness(data, QI, [SA])))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DEFAULT)
    parser.add_argument("--repeats", type=int, default=5, help="dpriv runs (best is kept)")
    args = parser.parse_args()
    data = pd.read_csv(args.file)

    dpriv_klt(data.head(50))  # warm-up: numba compile / cache load
    t_dpriv, ours = best_of(lambda: dpriv_klt(data), args.repeats)
    t_pycanon, theirs = best_of(lambda: pycanon_klt(data), 1)

    print(f"{args.file.name}: {len(data)} rows")
    print(f"  dpriv   k={ours[0]} l={ours[1]} t={ours[2]:.12f}  {t_dpriv * 1e3:9.1f} ms")
    print(f"  pyCANON k={theirs[0]} l={theirs[1]} t={theirs[2]:.12f}  {t_pycanon * 1e3:9.1f} ms")
    same = ours[:2] == theirs[:2] and abs(ours[2] - theirs[2]) <= 1e-12
    print(f"  same values: {same}")
    print(f"  time ratio pyCANON / dpriv: {t_pycanon / t_dpriv:.1f}x")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
