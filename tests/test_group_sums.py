"""Utility metrics from additive group sums (dpriv.metrics.utility.GroupSums).

A release on Dask sums the QI-groups of each released part where it lives (the parts hold
whole groups) and merges one record per part on the client. The float sums are exact, so
the figures are the same bits for any split of the groups into parts and any order of the
parts, and they are the correctly rounded values of the formulas (checked against
``fractions.Fraction`` arithmetic, not against the code's own sums).
"""

from __future__ import annotations

import functools
from fractions import Fraction

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpriv.metrics.release import release_sums
from dpriv.metrics.utility import GroupSums
from dpriv.policy import ReleasePolicy

DOMAINS = {"age": [0, 90], "weight": [40, 140], "s": list("abcd")}
POLICY = ReleasePolicy(id="rid", qi=["age", "weight"], sensitive="s", domains=DOMAINS, k=2, t=1.0, j=10.0)


def released_view(rng: np.random.Generator, n_groups: int) -> pd.DataFrame:
    """A generalized view of ``n_groups`` groups of 1-6 rows, intervals inside the domains."""
    rows = []
    for g in range(n_groups):
        size = int(rng.integers(1, 7))
        a0, w0 = rng.uniform(0, 60), rng.uniform(40, 100)
        box = {
            "age_min": a0,
            "age_max": a0 + rng.uniform(0, 30),
            "weight_min": w0,
            "weight_max": w0 + rng.uniform(0, 40),
        }
        for s in rng.choice(list("abcd"), size=size):
            rows.append({"qi_group": int(rng.integers(0, 2**62)) + g, **box, "s": s})
    return pd.DataFrame(rows)


def fraction_figures(view: pd.DataFrame, n_original: int) -> dict:
    """The formulas over the groups in exact rational arithmetic (the oracle), rounded once
    at the end. A group's own NCP, ``|G| * NCP`` and ``sum_s c^2 / |G|`` are floats, as a
    group table holds them: what is exact is the sum over the groups."""
    per = []
    for _, grp in view.groupby("qi_group"):
        ncp = (grp["age_max"].iloc[0] - grp["age_min"].iloc[0]) / 90.0
        ncp += (grp["weight_max"].iloc[0] - grp["weight_min"].iloc[0]) / 100.0
        c2 = float((grp["s"].value_counts().to_numpy() ** 2).sum())
        per.append((len(grp), Fraction(ncp), Fraction(len(grp) * ncp), Fraction(c2 / len(grp))))
    n = sum(p[0] for p in per)
    return {
        "average_semiperimeter": float(sum(p[1] for p in per) / len(per)),
        "gcp": float((sum(p[2] for p in per) + (n_original - n) * 2) / (2 * n_original)),
        "gcp_kept": float(sum(p[2] for p in per) / (2 * n)),
        "association_loss": float(1 - sum(p[3] for p in per) / n),
        "discernibility": sum(p[0] ** 2 for p in per) + (n_original - n) * n_original,
        "c_avg": float(Fraction(n, len(per) * POLICY.k)),
    }


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_groups=st.integers(1, 40), cuts=st.integers(1, 6))
def test_sums_of_parts_in_any_order_give_the_bits_of_the_whole(seed, n_groups, cuts):
    rng = np.random.default_rng(seed)
    view = released_view(rng, n_groups)
    n_original = len(view) + int(rng.integers(0, 5))
    whole = release_sums(view, POLICY, by_group=False)
    labels = view["qi_group"].unique()
    part_of = dict(zip(labels, rng.integers(0, cuts, size=len(labels))))
    parts = [view[view["qi_group"].map(part_of) == p] for p in rng.permutation(cuts)]
    merged = functools.reduce(GroupSums.merge, [release_sums(p, POLICY, by_group=False) for p in parts])
    assert merged == whole
    got = {**whole.utility(n_original, 2, POLICY.k), "association_loss": whole.association_loss()}
    for key, value in fraction_figures(view, n_original).items():
        assert got[key] == value, key


@pytest.mark.parametrize("npartitions", [1, 3, 7])
def test_a_dask_release_of_whole_groups_per_part_gives_the_pandas_figures(npartitions):
    view = released_view(np.random.default_rng(5), 60).sort_values("qi_group", kind="stable")
    lazy = dd.from_pandas(view, npartitions=npartitions, sort=False)  # contiguous: whole groups
    expected = release_sums(view, POLICY, by_group=False)
    assert release_sums(lazy, POLICY, by_group=True) == expected
    assert release_sums(lazy, POLICY, by_group=False) == expected  # the groupby path


def test_merging_keeps_the_extremes_and_an_empty_part_changes_nothing():
    view = released_view(np.random.default_rng(1), 10)
    whole = release_sums(view, POLICY, by_group=False)
    empty = release_sums(view.iloc[:0], POLICY, by_group=False)
    assert empty.n_groups == 0 and empty.min_size is None and empty.association == (0, 0)
    assert whole.merge(empty) == whole == empty.merge(whole)
    sizes = view.groupby("qi_group").size()
    assert (whole.min_size, whole.max_size, whole.n_released) == (sizes.min(), sizes.max(), len(view))
    assert empty.utility(3, 2, 2)["average_semiperimeter"] is None
    assert empty.association_loss() is None


def test_the_sums_and_the_tail_rows_come_in_one_compute(monkeypatch):
    """The metrics step takes the per-part group sums and the pk step's tail rows in one
    ``dask.compute`` (each a round trip to the scheduler), with the figures of the pandas sums;
    the KPR then reads the released row count from the sums instead of counting the rows."""
    import dask

    from dpriv.metrics.release import release_metrics, release_sums_with

    view = released_view(np.random.default_rng(8), 40).sort_values("qi_group", kind="stable")
    lazy = dd.from_pandas(view, npartitions=3, sort=False)  # contiguous: whole groups
    tail = pd.DataFrame({"n_tuples": [4, 0, 7], "max_posterior": [0.5, np.nan, 0.25]})
    lazy_tail = dd.from_pandas(tail, npartitions=2, sort=False)
    calls = []
    real = dask.compute
    monkeypatch.setattr(dask, "compute", lambda *a, **k: calls.append(1) or real(*a, **k))
    sums, got = release_sums_with(lazy, POLICY, True, lazy_tail)
    assert len(calls) == 1
    monkeypatch.undo()
    assert sums == release_sums(view, POLICY, by_group=False)
    pd.testing.assert_frame_equal(got, tail)
    in_process = release_sums_with(view, POLICY, False, tail)
    assert in_process.sums == sums and in_process.other is tail  # in process: the same sums, tail as is
    original = view.rename(columns={"age_min": "age", "weight_min": "weight"})[["age", "weight", "s"]]
    with_sums = release_metrics(lazy, original, POLICY, len(view) + 2, 2, by_group=True, sums=sums)
    assert with_sums == release_metrics(lazy, original, POLICY, len(view) + 2, 2, by_group=True)
    alone = release_sums_with(lazy[lazy["qi_group"] < 0], POLICY, True)  # no rows: no KPR
    empty = alone.sums
    assert empty.n_released == 0 and alone.other is None
    assert release_metrics(lazy, original, POLICY, 2, 2, by_group=True, sums=empty).kpr is None
