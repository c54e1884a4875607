"""KPR on integer codes (issue 13): the pandas kernel and the Dask path give the counts of the
previous string-based implementation (tests/kpr_reference.py) on seeded random tables with
every kind of known variable, NaN, single-value columns and huge grids; the code helpers
against plain-Python oracles."""

from __future__ import annotations

import math
import warnings
from collections import Counter

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv.metrics.kpr import kpr
from dpriv.metrics.kpr_codes import (
    categorical_codes,
    local_codes,
    match_counts,
    profile_key,
    raw_numeric_codes,
    unique_rows,
)
from dpriv.metrics.kpr_validation import validate_kpr
from tests.kpr_reference import reference_counts

pytestmark = pytest.mark.filterwarnings("ignore::dpriv.metrics.kpr.KPRWarning")


def _table(rng: np.random.Generator, m: int, cats: list[str]) -> pd.DataFrame:
    """One table with every kind of known variable; values drawn from small pools so that
    profiles repeat and avatars hit the originals' bins."""

    def nan_some(x: np.ndarray, rate: float = 0.08) -> np.ndarray:
        x = x.astype(float)
        x[rng.random(m) < rate] = np.nan
        return x

    mixed = np.array([1, 1.0, True, "1", 0.0, -0.0, None, "a", 2], dtype=object)
    return pd.DataFrame(
        {
            "age": nan_some(rng.integers(18, 40, m)),  # integers as float, with NaN
            "w": nan_some(np.round(rng.normal(70, 12, m), 1)),  # one-decimal floats
            "r": nan_some(rng.normal(0, 1, m) / 3.0),  # computed floats (binary exact path)
            "neg": -rng.integers(1, 30, m),  # negative mean, int64
            "const": np.full(m, 7.5),  # a single value: one bin
            "zero": np.where(rng.random(m) < 0.5, 0.0, -0.0),  # mean 0 and range 0
            "nint": pd.array(np.where(rng.random(m) < 0.1, None, rng.integers(0, 50, m)), dtype="Int64"),
            "sex": rng.choice(np.array(["F", "M", None], dtype=object), m),
            "cat": pd.Categorical(rng.choice(cats[:5], m), categories=cats),
            "flag": rng.random(m) < 0.3,
            "s": pd.array(rng.choice(np.array(["x", "y", None], dtype=object), m), dtype="string"),
            "mixed": rng.choice(mixed, m),  # 1 / 1.0 / True / "1" are four labels
        }
    )


KNOWN_SETS = [
    ["age", "sex"],
    ["age", "w", "cat"],
    ["w", "r", "sex", "flag"],
    ["neg", "const", "zero", "nint"],
    ["age", "s", "mixed", "cat"],
    ["r", "w", "age", "nint", "sex", "cat", "flag", "s", "mixed", "neg", "const", "zero"],
]


def _check(o: pd.DataFrame, a: pd.DataFrame, known: list[str], dask: bool = True, **kw) -> None:
    _, numeric = validate_kpr(
        o, a, known, kw.get("tolerance", 0.05), kw.get("padding", 0.1), kw.get("ddof", 1)
    )
    n_u, n_b1, n_s, specs = reference_counts(o, a, known, numeric, **kw)
    names = [k for k, nm in zip(known, numeric, strict=True) if nm]
    bins = dict(zip(names, specs.reports, strict=True))
    results = [("pandas", kpr(o, a, known, **kw))]
    if dask:
        do, da = dd.from_pandas(o, npartitions=3), dd.from_pandas(a, npartitions=2)
        results.append(("dask", kpr(do, da, known, **kw)))
    for label, r in results:
        assert (r.n_unique_original, r.n_unique_synthetic_profiles, r.n_matched) == (n_u, n_b1, n_s), label
        assert r.kpr == 100.0 * (1.0 - n_s / len(o)), label
        assert r.bins.keys() == bins.keys()
        for k, b in bins.items():
            for f, v in vars(b).items():
                got = getattr(r.bins[k], f)
                assert got == v or (math.isnan(got) and math.isnan(v)), (label, k, f)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("known", KNOWN_SETS, ids=["-".join(k)[:30] for k in KNOWN_SETS])
def test_integer_codes_equal_the_previous_implementation(seed: int, known: list[str]) -> None:
    rng = np.random.default_rng(seed)
    cats = [f"c{i}" for i in range(8)]
    o = _table(rng, 600, cats)
    a = _table(rng, 500, cats)
    # avatars: half copies of originals (matches), half fresh draws; categories reordered
    a.iloc[:250] = o.iloc[:250].to_numpy()
    a["cat"] = pd.Categorical(a["cat"].astype(object), categories=cats[::-1] + ["extra"])
    a = a.astype({c: o[c].dtype for c in o.columns if c != "cat"})
    _check(o, a, known, dask=seed == 0)  # the Dask path on one seed (graph overhead)
    if seed == 1:
        _check(o, a, known, dask=False, tolerance=0.5, ddof=0)


def test_empty_synthetic_and_no_unique_original() -> None:
    rng = np.random.default_rng(4)
    o = _table(rng, 50, ["p", "q", "r", "s", "t"])
    _check(o, o.iloc[:0], ["age", "sex", "cat"])
    dup = pd.concat([o, o], ignore_index=True)  # every profile twice: U is empty
    _check(dup, o, ["age", "w", "sex", "cat"])


def test_high_cardinality_profiles_renumbered() -> None:
    # 6 categorical variables of ~2000 labels and 2 numeric ones: the radix product passes
    # 2**62 both for the raw and for the binned profiles (the keys are renumbered)
    rng = np.random.default_rng(5)
    m = 3000
    cols = {f"c{j}": rng.integers(0, 2000, m).astype(str).astype(object) for j in range(6)}
    o = pd.DataFrame({**cols, "x": rng.normal(50, 10, m), "y": rng.integers(0, 10**6, m)})
    a = o.sample(frac=1.0, random_state=1).reset_index(drop=True)
    a.loc[:999, "c0"] = "new"
    _check(o, a, list(o.columns))


def test_grid_of_more_than_2_62_bins() -> None:
    # mean 1e-5 / 6 -> step ~8e-8 over a range of ~2e12: ~2.5e19 bins (> 2**62): float
    # bins renumbered jointly instead of offset codes
    o = pd.DataFrame({"x": [-1e12, 1e12, 3e-6, 5e-6, -5e-6, 7e-6], "c": list("aabbcc")})
    a = pd.DataFrame({"x": [-1e12, 1e12, 3e-6, 5e-6, 5e-6, 7e-6, 0.0], "c": list("aabbbcc")})
    r = kpr(o, a, ["x", "c"])
    assert r.bins["x"].n_bins > 2**62
    _check(o, a, ["x", "c"])
    # bin indices beyond 2**53 are float64 (kpr_binning.bin_index): the five small values
    # share one float bin, so only (-1e12, a) and (1e12, a) are unique avatar profiles
    assert (r.n_unique_synthetic_profiles, r.n_matched) == (2, 2)


# ----------------------------------------------------------------------------- helpers


def test_local_codes_label_by_str_even_when_values_compare_equal() -> None:
    s = pd.Series([1, 1.0, True, "1", 0.0, -0.0, None, np.nan, "1"], dtype=object)
    codes, labels = local_codes(s)
    got = [None if c < 0 else labels[c] for c in codes]
    assert got == ["1", "1.0", "True", "1", "0.0", "-0.0", None, None, "1"]
    codes, labels = local_codes(pd.Series(pd.Categorical(["b", None, "a"], categories=[2, "a", "b"])))
    assert [None if c < 0 else labels[c] for c in codes] == ["b", None, "a"]
    assert list(labels) == ["2", "a", "b"]


def test_categorical_codes_compare_labels_across_dtypes() -> None:
    so = pd.Series(pd.Categorical(["M", "F", None, "X"], categories=["X", "M", "F"]))
    ss = pd.Series(["F", "M", None, "Y", True], dtype=object)
    co, cs, card = categorical_codes(so, ss)
    assert card == 6  # F, M, True, X, Y + missing
    assert co[2] == cs[2] == 0  # missing
    assert co[0] == cs[1] and co[1] == cs[0]  # M, F by label, not by category code
    assert len({*co[[0, 1, 3]], *cs[[3, 4]]}) == 5


def test_raw_numeric_codes_values_and_missing() -> None:
    codes, card, nd = raw_numeric_codes(pd.Series([0.0, -0.0, np.nan, 2.5, 2.5]))
    assert codes[0] == codes[1] != codes[3] == codes[4] and codes[2] == 0 and (card, nd) == (3, 2)
    codes, card, nd = raw_numeric_codes(pd.Series(pd.array([3, None, 3, 4], dtype="Int64")))
    assert codes[1] == 0 and codes[0] == codes[2] != codes[3] and nd == 2
    # integer columns of a small range: the offset from the minimum, without wrap-around
    codes, card, nd = raw_numeric_codes(pd.Series(np.array([127, 3, 127, -128], dtype=np.int8)))
    assert codes.tolist() == [256, 132, 256, 1] and (card, nd) == (257, 3)
    codes, card, nd = raw_numeric_codes(pd.Series(np.array([2**64 - 1, 2**64 - 3], dtype=np.uint64)))
    assert codes.tolist() == [3, 1] and (card, nd) == (4, 2)
    codes, card, nd = raw_numeric_codes(pd.Series(np.array([-(2**63), 2**63 - 1, -(2**63)])))
    assert codes[0] == codes[2] != codes[1] and nd == 2  # a huge range: hashed


@pytest.mark.parametrize("card", [7, 10**7, 2**40])
def test_profile_keys_equal_iff_profiles_equal(card: int) -> None:
    rng = np.random.default_rng(card % 1000)
    n, k = 4000, 4  # card**4 passes 2**62 for the two larger cards: renumbered on the way
    codes = [rng.integers(0, min(card, 40), n) * (card // min(card, 40)) for _ in range(k)]
    key, kcard = profile_key(codes, [card] * k)
    assert key.min() >= 0 and key.max() < kcard
    tuples = list(zip(*(c.tolist() for c in codes), strict=True))
    first: dict[tuple, int] = {}
    for t, kv in zip(tuples, key.tolist(), strict=True):
        assert first.setdefault(t, kv) == kv
    assert len(set(first.values())) == len(first)  # distinct profiles, distinct keys
    counts = Counter(tuples)
    np.testing.assert_array_equal(unique_rows(codes, [card] * k), [counts[t] == 1 for t in tuples])


@pytest.mark.parametrize("card", [50, 10**12])
def test_match_counts_against_counter(card: int) -> None:
    rng = np.random.default_rng(1)
    key_s = rng.integers(0, 50, 300) * (card // 50)
    key_u = rng.integers(0, 50, 200) * (card // 50)
    cs = Counter(key_s.tolist())
    b1 = {k for k, c in cs.items() if c == 1}
    assert match_counts(key_u, key_s, card) == (len(b1), sum(k in b1 for k in key_u.tolist()))


def test_fast_path_warns_like_before_for_low_cardinality() -> None:
    o = pd.DataFrame({"code": pd.array([1, 2, None] * 4, dtype="Int64"), "x": np.arange(12.0) * 7.3})
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        kpr(o, o, ["code", "x"])
    msgs = [str(w.message) for w in rec]
    assert any("'code' has only 2 distinct" in m for m in msgs) and not any("'x'" in m for m in msgs)
    # 'x' alone tells every original apart (U is everything, no profile key is built); the
    # warning for the later 'code' is still given, and the counts are the reference's
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        kpr(o, o, ["x", "code"])
    assert [str(w.message).split("'")[1] for w in rec] == ["code"]
    big = pd.DataFrame({"x": np.arange(5000) / 7.0, "y": np.arange(5000) % 13 * 1.5, "c": ["a", "b"] * 2500})
    _check(big, big.sample(frac=1.0, random_state=0).iloc[:4000], ["x", "y", "c"])
    _check(big, big.iloc[:10], ["c", "y", "x"])


def test_exact_statistics_by_chunks_are_the_whole_sums() -> None:
    from fractions import Fraction

    from dpriv.metrics.exact_sums import exact_sum as _exact_sum
    from dpriv.metrics.exact_sums import to_fraction as _to_fraction
    from dpriv.metrics.kpr_binning import STATS_CHUNK, _exact_sum_of_squares, var_stats

    rng = np.random.default_rng(11)
    n = 2 * STATS_CHUNK + 1234  # three chunks
    ints = rng.integers(-(10**12), 10**12, n)
    st = var_stats(ints)
    assert st.dec[:2] == (sum(ints.tolist()), sum(x * x for x in ints.tolist()))
    assert st.dec[2:] == (int(ints.min()), int(ints.max()))
    one_decimal = np.round(rng.normal(70, 15, n), 1)
    st = var_stats(one_decimal, binary=False)
    tenths = [round(v * 10) for v in one_decimal.tolist()]
    assert st.dec[:2] == (Fraction(sum(tenths), 10), Fraction(sum(t * t for t in tenths), 100))
    y = rng.normal(0, 1, n) / 3.0  # not short decimals: binary-exact sums
    st = var_stats(y)
    assert st.dec is None
    assert _to_fraction(st.total) == _to_fraction(_exact_sum(y))
    assert _to_fraction(st.total_sq) == _to_fraction(_exact_sum_of_squares(y))
    # a decimal scale is chosen for the whole column, not per chunk: integers near 1e14 in
    # the first chunk and quarters in the last need 10**2 * 1e14 > 1e15 -> not decimal
    mixed = np.concatenate([1e14 + np.arange(STATS_CHUNK, dtype=float), np.full(10, 0.25)])
    assert var_stats(mixed).dec is None
