"""Benchmark dpriv's Mondrian k-anonymity against the anonypy package on Adult.

Run: python benchmarks/bench_mondrian.py [--data PATH] [--k 5 10] [--repeats 3] [--peer anonypy|pandas]

Data: ARX's Adult (``shared/data/arx/adult.csv``, ``;``-separated, 30,162 rows), QIs age
(numeric) and sex, race, marital-status, education (categorical, as their rank in the
sorted domain, the representation both sides receive), sensitive salary-class.

For every k it times

* dpriv ``mondrian_groups`` (strict Mondrian, docs/algorithms.md §4.4: lower median,
  LHS <= splitVal < RHS), best of ``--repeats``, on the prebuilt QI grid;
* dpriv ``mondrian_view`` end to end (validation, grouping, CreateQIG, shuffle), best of
  ``--repeats``;
* the peer on the same rank-coded frame, once: ``anonypy.Mondrian.partition(k)`` (pandas,
  median = mean of the middle values, ``< median`` | ``>= median``, so its groups differ),
  or, with ``--peer pandas`` or when anonypy is not installed, a straightforward recursive
  pure-pandas strict Mondrian with dpriv's cut rule (:func:`pandas_mondrian`; same groups);

and prints the times, the ratio peer / dpriv kernel, the number of groups and the average
group size of both, after checking that both outputs partition the rows into groups of at
least k.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _timing import best_of

from dpriv.anonymity.mondrian import mondrian_groups, mondrian_view, qi_grid_of
from dpriv.policy import ReleasePolicy
from dpriv.validate import codes

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "arx" / "adult.csv"
QI = ["age", "sex", "race", "marital-status", "education"]
SENSITIVE = "salary-class"


def pandas_mondrian(df: pd.DataFrame, qi: list[str], k: int) -> list[pd.Index]:
    """Plain recursive strict Mondrian in pandas (the fallback peer, dpriv's cut rule).

    Widest normalised range first (ties by QI order), lower median, LHS <= median < RHS,
    next widest QI when a half would hold fewer than k rows.
    """
    width = {q: float(df[q].max() - df[q].min()) for q in qi}
    out: list[pd.Index] = []

    def anonymize(part: pd.DataFrame) -> None:
        spans = {q: (part[q].max() - part[q].min()) / width[q] if width[q] else 0.0 for q in qi}
        for q in sorted(qi, key=lambda c: -spans[c]):  # stable: ties keep QI order
            if spans[q] <= 0:
                continue
            values = part[q].sort_values(kind="stable")
            h = len(part) // 2
            split = values.iloc[max(h - 1, 0)]
            lhs, rhs = part[part[q] <= split], part[part[q] > split]
            if len(lhs) >= k and len(rhs) >= k:
                anonymize(lhs)
                anonymize(rhs)
                return
        out.append(part.index)

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    anonymize(df)
    return out


def check_partition(parts: list[np.ndarray], n: int, k: int, who: str) -> None:
    sizes = np.array([len(p) for p in parts])
    members = np.sort(np.concatenate([np.asarray(p) for p in parts]))
    if not np.array_equal(members, np.arange(n)):
        raise AssertionError(f"{who}: the groups do not partition the {n} rows")
    if sizes.min() < k:
        raise AssertionError(f"{who}: a group of {sizes.min()} rows < k = {k}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peer", choices=["anonypy", "pandas"], default="anonypy")
    args = parser.parse_args()

    peer = args.peer
    if peer == "anonypy":
        try:
            from anonypy import Mondrian
        except ImportError:
            print("anonypy is not installed: falling back to the pure-pandas recursive Mondrian")
            peer = "pandas"

    df = pd.read_csv(args.data, sep=";")
    df.insert(0, "respondent_id", np.arange(len(df)))
    base = ReleasePolicy(qi=QI, sensitive=SENSITIVE, seed=0).resolve(df)[0]
    grid, widths = qi_grid_of(df, base)
    s = codes(df[SENSITIVE], base.sensitive_domain)
    counts = np.bincount(s, minlength=len(base.sensitive_domain)).astype(np.int64)
    ranked = df[QI].copy()
    for q in QI[1:]:
        ranked[q] = codes(df[q], base.domains[q])
    ranked[SENSITIVE] = df[SENSITIVE]
    n = len(df)
    print(f"Adult: {n} rows, QIs {QI} (categorical as ranks), sensitive {SENSITIVE}; peer: {peer}")

    mondrian_groups(grid[:100], s[:100], counts, k=2, model="k")  # warm-up (imports, caches)
    header = f"{'k':>3} {'impl':<18} {'time s':>9} {'groups':>7} {'avg size':>9} {'min size':>9} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    for k in args.k:
        t_kernel, groups = best_of(
            lambda k=k: mondrian_groups(grid, s, counts, k=k, model="k", widths=widths), args.repeats
        )
        policy = base.with_overrides(k=k)
        t_view, rel = best_of(lambda policy=policy: mondrian_view(df, policy, model="k"), args.repeats)
        g = np.bincount(groups)
        check_partition(np.split(np.argsort(groups, kind="stable"), np.cumsum(g)[:-1]), n, k, "dpriv")
        sizes = rel.released["qi_group"].value_counts()
        assert sizes.min() >= k and len(sizes) == len(g)

        t0 = time.perf_counter()
        if peer == "anonypy":
            parts = Mondrian(ranked, QI, SENSITIVE).partition(k=k)
        else:
            parts = pandas_mondrian(ranked, QI, k)
        t_peer = time.perf_counter() - t0
        check_partition(parts, n, k, peer)
        p = np.array([len(x) for x in parts])
        if peer == "pandas" and sorted(p.tolist()) != sorted(g.tolist()):
            raise AssertionError("the pandas peer (same cut rule) found other groups than dpriv")

        print(
            f"{k:>3} {'dpriv kernel':<18} {t_kernel:>9.3f} {len(g):>7} {g.mean():>9.2f} "
            f"{g.min():>9} {t_peer / t_kernel:>6.0f}x"
        )
        print(
            f"{k:>3} {'dpriv view':<18} {t_view:>9.3f} {len(sizes):>7} {sizes.mean():>9.2f} "
            f"{sizes.min():>9} {t_peer / t_view:>6.0f}x"
        )
        print(f"{k:>3} {peer:<18} {t_peer:>9.3f} {len(p):>7} {p.mean():>9.2f} {p.min():>9} {'1':>6}x")
    print("ratio = peer time / dpriv time; both outputs checked k-anonymous (partition, sizes >= k)")


if __name__ == "__main__":
    main()
