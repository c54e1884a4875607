"""KPR binning is exact (issue 15): a value on a bin edge falls in the bin above it, for
short decimals and for integers beyond 2**53; checked against the exact-fraction oracle of
tests/test_kpr.py (plain Python loops, :class:`fractions.Fraction`)."""

import warnings
from fractions import Fraction

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpriv.metrics.kpr import kpr
from dpriv.metrics.kpr_exact import decimal_scale, floor_add_sqrt, int_sums
from tests.test_kpr import oracle


def _kpr_and_oracle(orig: list, syn: list, dtype=float):
    o = pd.DataFrame({"x": pd.array(orig, dtype=dtype)})
    a = pd.DataFrame({"x": pd.array(syn, dtype=dtype)})
    with pytest.warns(Warning):  # few distinct values: the low-cardinality warning
        r = kpr(o, a, ["x"])
    ref = oracle([(v,) for v in orig], [(v,) for v in syn], [True])
    return r, ref


def test_decimal_edges_issue_case():
    # U = 0.1, 0.2, 0.3: mean 0.2, std 0.1, lo 0.09, step 0.01: originals in bins 1, 11, 21
    # exactly; 0.0999 -> 0, 0.2001 -> 11, 0.2999 -> 20: only 0.2 is matched
    r, ref = _kpr_and_oracle([0.1, 0.2, 0.3], [0.0999, 0.2001, 0.2999])
    assert r.n_matched == ref["S"] == 1
    assert r.kpr == ref["kpr"] == pytest.approx(200 / 3)
    assert r.bins["x"].n_bins == 22  # (0.31 - 0.09) / 0.01 exactly


def test_integer_originals_on_edges_issue_case():
    # U = 0, 3, 6: mean 3, std 3, lo -0.3, step 0.15: originals in bins 2, 22, 42; every
    # avatar profile is unique and 0, 3.0, 6.0 sit in the originals' bins -> all matched
    syn = [0, 0.15, 0.45, 2.85, 3.0, 5.85, 6.0, 6.3]
    r, ref = _kpr_and_oracle([0.0, 3.0, 6.0], syn)
    assert r.n_unique_synthetic_profiles == ref["B1"] == 8
    assert r.n_matched == ref["S"] == 3 and r.kpr == ref["kpr"] == 0.0
    assert r.bins["x"].n_bins == 44  # 6.6 / 0.15 exactly; the last bin holds 6.3 = hi


def test_integer_column_same_as_float_column():
    r_int, _ = _kpr_and_oracle([0, 3, 6], [0, 3, 6, 1], dtype="int64")
    r_flt, _ = _kpr_and_oracle([0.0, 3.0, 6.0], [0.0, 3.0, 6.0, 1.0])
    assert r_int.kpr == r_flt.kpr == 0.0


def test_integers_beyond_2_53_binned_exactly():
    # U = M/2, M, 3M/2 with M = 20 (2**56 + 1): std M/2, step M/20, lo = M/2 - M/20:
    # the originals sit on the edges of bins 1, 11, 21; x - 1 (the same float64 as x) is
    # in the bin below, alone: nothing is matched (float64 binning matched them all)
    m = 20 * (2**56 + 1)
    orig = [m // 2, m, 3 * m // 2]
    syn = [x - 1 for x in orig]
    assert all(float(x) == float(x - 1) for x in orig)
    o = pd.DataFrame({"x": np.array(orig, dtype=np.int64)})
    a = pd.DataFrame({"x": np.array(syn, dtype=np.int64)})
    with pytest.warns(Warning):
        r = kpr(o, a, ["x"])
    assert (r.n_matched, r.kpr) == (0, 100.0)
    with pytest.warns(Warning):
        same = kpr(o, o, ["x"])
    assert (same.n_matched, same.kpr) == (3, 0.0)
    for p in (1, 2):
        with pytest.warns(Warning):
            rd = kpr(dd.from_pandas(o, npartitions=p), dd.from_pandas(a, npartitions=p), ["x"])
        assert (rd.n_matched, rd.kpr) == (0, 100.0)


def test_dask_partitions_agree_on_decimal_edges():
    o = pd.DataFrame({"x": [0.0, 3.0, 6.0, 1.25, 4.5]})
    a = pd.DataFrame({"x": [0, 0.15, 0.45, 2.85, 3.0, 5.85, 6.0, 6.3, 1.25, 4.5]})
    with pytest.warns(Warning):
        ref = kpr(o, a, ["x"])
    assert ref.kpr == oracle([(v,) for v in o["x"]], [(v,) for v in a["x"]], [True])["kpr"]
    for p in (2, 3):
        with pytest.warns(Warning):
            r = kpr(dd.from_pandas(o, npartitions=p), dd.from_pandas(a, npartitions=p), ["x"])
        assert (r.kpr, r.n_matched, r.bins["x"].n_bins) == (ref.kpr, ref.n_matched, ref.bins["x"].n_bins)


def test_helpers_exact():
    assert decimal_scale(np.array([0.1, 0.25, 3.0])) == 2
    assert decimal_scale(np.array([1 / 3])) is None
    assert decimal_scale(np.array([1e20])) is None  # more than 15 significant digits
    v = np.array([2**62 + 1, -(2**62) - 3, 5, 0], dtype=np.int64)
    assert int_sums(v) == (sum(map(int, v)), sum(int(x) ** 2 for x in v), int(v.min()), int(v.max()))
    u = np.array([2**64 - 1, 7], dtype=np.uint64)
    assert int_sums(u)[:2] == (2**64 - 1 + 7, (2**64 - 1) ** 2 + 49)
    # floor(t + sqrt(w)) on exact integers and just around them
    assert floor_add_sqrt(Fraction(1, 2), Fraction(9, 4), 1) == 2  # 0.5 + 1.5
    assert floor_add_sqrt(Fraction(1, 2) - Fraction(1, 10**30), Fraction(9, 4), 1) == 1
    assert floor_add_sqrt(Fraction(0), Fraction(2), 1) == 1
    assert floor_add_sqrt(Fraction(3), Fraction(4), -1) == 1
    assert floor_add_sqrt(Fraction(3), Fraction(4) + Fraction(1, 10**40), -1) == 0


# decimals on a coarse grid and small integers, so that many values sit on bin edges
_dec = st.integers(-4, 40).map(lambda k: round(k * 0.15, 2))
_int = st.integers(-3, 12).map(float)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    grid=st.sampled_from([_dec, _int]),
    data=st.data(),
    n=st.integers(1, 12),
    n_syn=st.integers(0, 16),
)
def test_kpr_equals_the_fraction_oracle(grid, data, n, n_syn):
    orig = data.draw(st.lists(grid, min_size=n, max_size=n))
    syn = data.draw(st.lists(grid, min_size=n_syn, max_size=n_syn))
    o = pd.DataFrame({"x": orig}, dtype=float)
    a = pd.DataFrame({"x": syn}, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few distinct values: the low-cardinality warning
        r = kpr(o, a, ["x"])
    ref = oracle([(v,) for v in orig], [(v,) for v in syn], [True])
    assert (r.kpr, r.n_unique_original, r.n_unique_synthetic_profiles, r.n_matched) == (
        ref["kpr"],
        ref["U"],
        ref["B1"],
        ref["S"],
    )
    if ref["grids"].get(0) is not None:
        assert r.bins["x"].n_bins == ref["grids"][0][3]
