"""The verify step's per-group kernels on rows grouped by label (issue 13): CreateQIG's integer
bounds (:func:`dpriv.released.qig_table`), the verifier's members' min/max
(``membership._spans``) and its JS of the members' priors (:func:`dpriv.group_table.js_per_group`,
which reuses the entropy of a row equal to the one before it) against plain references written
here from their definitions, on small random inputs: labels sorted (as a release's parts come)
or not, repeated prior rows, values near 2**62 that a float64 would round."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dpriv.anonymity.membership import _spans
from dpriv.divergence import entropy, js_from_sums
from dpriv.group_table import js_per_group
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL, qig_table

BIG = 2**62


@st.composite
def grouped_rows(draw):
    """(labels int64 (n,), {name: int values (n,)}): a few labels (hashed-looking, large),
    sorted or in any order, integer values of int32 / int64 (up to 2**62 + a few) / uint64."""
    n = draw(st.integers(1, 40))
    pool = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=6, unique=True))
    labels = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)), dtype=np.int64)
    if draw(st.booleans()):
        labels = np.sort(labels)
    small = st.integers(-1000, 1000)
    near_big = st.integers(BIG - 3, BIG + 3) | small
    values = {
        "a": np.array(draw(st.lists(small, min_size=n, max_size=n)), dtype=np.int32),
        "b": np.array(draw(st.lists(near_big, min_size=n, max_size=n)), dtype=np.int64),
        "c": np.array(draw(st.lists(st.integers(0, 2**64 - 1), min_size=n, max_size=n)), dtype=np.uint64),
    }
    return labels, values


def _min_max(labels: np.ndarray, values: np.ndarray) -> dict[int, tuple[int, int]]:
    """Each label's (min, max) of ``values``, in Python integers (exact)."""
    out: dict[int, tuple[int, int]] = {}
    for g, x in zip(labels.tolist(), values.tolist()):
        lo, hi = out.get(g, (x, x))
        out[g] = (min(lo, x), max(hi, x))
    return out


@settings(max_examples=150, deadline=None)
@given(grouped_rows())
def test_qig_table_bounds_are_each_groups_min_and_max(case):
    labels, values = case
    rows = pd.DataFrame({LABEL: labels, **values, "s": "x"})
    policy = ReleasePolicy(id="rid", qi=list(values), sensitive="s", domains={"s": ["x"]})
    table = qig_table(rows, policy)
    assert table.index.name == LABEL and table.index.to_numpy().tolist() == sorted(set(labels.tolist()))
    for q, x in values.items():
        want = _min_max(labels, x)
        assert table[f"{q}_min"].dtype == (np.uint64 if x.dtype == np.uint64 else np.int64)
        assert table[f"{q}_min"].tolist() == [want[g][0] for g in table.index]
        assert table[f"{q}_max"].tolist() == [want[g][1] for g in table.index]


@settings(max_examples=150, deadline=None)
@given(grouped_rows())
def test_the_verifiers_spans_are_each_groups_min_and_max(case):
    labels, values = case
    values = {q: x.astype(np.int64) if x.dtype == np.int32 else x for q, x in values.items()}
    spans = _spans(pd.Series(labels), values)
    assert spans.index.to_numpy().tolist() == sorted(set(labels.tolist()))
    for q, x in values.items():
        want = _min_max(labels, x)
        assert spans[(q, "min")].dtype == x.dtype
        assert spans[(q, "min")].tolist() == [want[g][0] for g in spans.index]
        assert spans[(q, "max")].tolist() == [want[g][1] for g in spans.index]


def test_spans_skip_a_missing_value_as_before():
    """Floats with NaN keep the groupby (a group's bound is the min/max of its other values)."""
    spans = _spans(pd.Series([5, 5, 9]), {"x": np.array([np.nan, 2.0, np.nan])})
    assert spans[("x", "min")].tolist()[0] == 2.0 and np.isnan(spans[("x", "max")].tolist()[1])


@st.composite
def priors_by_label(draw):
    """(priors (n, M) float64 rows summing to 1, drawn from a few distinct rows so that equal
    rows follow each other; zeros included), labels (n,) sorted or not, C or Fortran order."""
    m = draw(st.integers(1, 5))
    n = draw(st.integers(1, 40))
    weights = st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0, 0.125, 7.0]), min_size=m, max_size=m)
    pool = [np.array(w) for w in draw(st.lists(weights, min_size=1, max_size=4))]
    pool = [w / w.sum() if w.sum() > 0 else np.full(m, 1.0 / m) for w in pool]
    picks = draw(st.lists(st.integers(0, len(pool) - 1), min_size=n, max_size=n))
    priors = np.array([pool[i] for i in picks], dtype=np.float64)
    labels = np.array(draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n)), dtype=np.int64) * 1_000_003
    if draw(st.booleans()):
        labels = np.sort(labels)
    return (np.asfortranarray(priors) if draw(st.booleans()) else priors), labels


def _js_plain(p: np.ndarray, base: float) -> float:
    """JS (E8, equal weights) from its definition: H(mean) - mean of H, in ``base`` units."""

    def h(q):
        q = q[q > 0]
        return float(-(q * np.log(q)).sum() / np.log(base))

    return max(h(p.mean(axis=0)) - float(np.mean([h(q) for q in p])), 0.0)


@settings(max_examples=200, deadline=None)
@given(priors_by_label(), st.sampled_from([2.0, np.e]))
def test_js_per_group_is_each_groups_js_to_the_last_bit(case, base):
    priors, labels = case
    got = js_per_group(priors, pd.Series(labels), base)
    assert got.index.tolist() == sorted(set(labels.tolist()))
    for g, value in got.items():
        members = priors[labels == g]  # in row order: the order of the kernel's sums
        sum_p, sum_h = np.zeros(priors.shape[1]), 0.0
        for row in members:
            sum_p = sum_p + row
            sum_h += entropy(np.ascontiguousarray(row), base)
        # the same bits as every entropy computed afresh, and the value of the definition
        assert value == js_from_sums(sum_p, sum_h, len(members), base)
        assert abs(value - _js_plain(members, base)) <= 1e-12
