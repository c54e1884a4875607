"""The median top-down split one depth level at a time (dpriv.anonymity.topdown_levels):
hand-computed cuts (the next dimension after a widest one with no valid cut, depth-first
numbering across levels), its compiled pieces against NumPy's
and Python's own rules (lexsort, tuple order, stable argsort), and the same groups as the
node-by-node split on random views."""

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpriv.anonymity.topdown import topdown_groups
from dpriv.anonymity.topdown_levels import _before, _dims, _level_split, _sort_first, median_groups
from dpriv.anonymity.topdown_split import Split
from dpriv.anonymity.topdown_sums import split_rows
from dpriv.divergence import EQUAL, ORDERED

EXAMPLES = int(os.environ.get("DPRIV_HYPOTHESIS_EXAMPLES", "25"))
A = [1.0, 0.0]


def test_a_valid_box_with_no_valid_cut_in_its_widest_dimension_is_cut_in_the_next():
    # 8 tuples, t 0: every group needs the view's half-and-half S. Along the wide x0 the S
    # values come 0,0,0,0,1,1,1,1: every cut skews a side. Along the narrow x1 (0,1,0,1,...)
    # the one boundary (4 | 4) gives {0,2,4,6} and {1,3,5,7}, two of each value: cut there.
    # Each half's only cut (x0, 2 | 2) leaves {0,0} and {1,1}: EMD 1/2 > 0, so they stay.
    x = np.column_stack([np.arange(8.0) * 10, np.arange(8) % 2])
    s = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    got = topdown_groups(x, s, np.array([A] * 8), np.array([4, 4]), k=2, t=0.0, j=0.1)
    np.testing.assert_array_equal(got, [0, 1, 0, 1, 0, 1, 0, 1])


def test_groups_are_numbered_depth_first_left_hand_side_first():
    # x1 (span 5) is the widest: its cut closest to the median (6) is after 4 rows (x1 in
    # {0, 1} | x1 = 5). The left box is cut again along x1 (2 | 2) one level deeper; the right
    # one has no span left. Depth first: the left box's halves are groups 0 and 1, the right
    # box (a leaf one level higher) group 2.
    x = np.column_stack([[0.0] * 4 + [1.0] * 8, [0, 0, 1, 1] + [5] * 8])
    s = np.zeros(12, dtype=np.int64)
    got = topdown_groups(x, s, np.array([A] * 12), np.array([12, 0]), k=2, t=1.0, j=1.0)
    np.testing.assert_array_equal(got, [0, 0, 1, 1] + [2] * 8)


def test_the_dimensions_are_ranked_by_span_ties_to_the_lower_and_without_nan():
    np.testing.assert_array_equal(_dims(np.array([0.5, 2.0, 0.0, 2.0, np.nan, 0.7])), [1, 3, 5, 0])
    assert len(_dims(np.array([0.0, np.nan]))) == 0


floats = st.one_of(st.sampled_from([0.0, 1.0, 2.0, np.nan]), st.floats(0, 4, allow_nan=False))


@settings(max_examples=EXAMPLES * 4, deadline=None)
@given(st.lists(st.tuples(floats, st.sampled_from([0.0, 0.5, 1.0, 2.5])), min_size=1, max_size=12))
def test_the_least_candidate_is_lexsorts_first_and_keys_compare_as_python_tuples(pairs):
    score = np.array([p[0] for p in pairs])
    off = np.array([p[1] for p in pairs])
    assert _sort_first(score, off, 0, len(pairs)) == int(np.lexsort((off, score))[0])
    for a in pairs:
        for b in pairs:
            # np.float64 keys, as the node-by-node split compares them
            want = (np.float64(a[0]), np.float64(a[1])) < (np.float64(b[0]), np.float64(b[1]))
            assert _before(a[0], a[1], b[0], b[1]) == want


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(n=st.integers(1, 60), d=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_the_halves_inherit_their_stable_orders(n, d, seed):
    # a level of two nodes, each cut after some rows of its order along one dimension: the
    # halves are split_rows' and each half's order along every dimension is its own stable
    # argsort (local positions)
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, size=(2 * n, d)).astype(np.float64)
    rows = np.sort(rng.permutation(3 * n)[: 2 * n])
    xs = np.zeros((3 * n, d))
    xs[rows] = x
    starts = np.array([0, n, 2 * n])
    orders = np.empty((d, 2 * n), dtype=np.int64)  # each node's stable order along each dimension
    for a, e in [(0, n), (n, 2 * n)]:
        for g in range(d):
            orders[g, a:e] = np.argsort(xs[rows[a:e], g], kind="stable")
    dim, size = rng.integers(0, d, size=2), rng.integers(0, n + 1, size=2)
    out, out_starts, out_orders = _level_split(rows, starts, orders, np.array([0, 1]), dim, size)
    for c, (a, e) in enumerate([(0, n), (n, 2 * n)]):
        lhs, rhs = split_rows(rows[a:e], orders[dim[c], a:e], size[c])
        for h, half in enumerate((lhs, rhs)):
            lo, hi = out_starts[2 * c + h], out_starts[2 * c + h + 1]
            np.testing.assert_array_equal(out[lo:hi], half)
            for g in range(d):
                np.testing.assert_array_equal(out_orders[g, lo:hi], np.argsort(xs[half, g], kind="stable"))


@st.composite
def split_cases(draw):
    n = draw(st.integers(1, 80))
    m = draw(st.integers(1, 4))
    d = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    x = rng.integers(0, draw(st.integers(1, 6)), size=(n, d)) / 5.0
    if draw(st.booleans()):
        x[rng.random((n, d)) < 0.05] = np.nan
    s = rng.integers(0, m, size=n)
    priors = rng.dirichlet(np.full(m, draw(st.sampled_from([0.2, 1.0, 5.0]))), size=n)
    blocks = rng.integers(0, draw(st.integers(1, 3)), size=n)
    kw = dict(
        k=draw(st.integers(1, 4)),
        t=draw(st.sampled_from([0.0, 0.1, 0.3, 1.0])),
        j=draw(st.sampled_from([0.0, 0.05, 0.2, 1.0])),
        ground=draw(st.sampled_from([EQUAL, ORDERED])),
        log_base=draw(st.sampled_from([2.0, np.e])),
        c=draw(st.sampled_from([1.0, 0.5, 0.2])),
    )
    view_counts = np.bincount(s, minlength=m) + rng.integers(0, 3, size=m)
    return x, s, priors, view_counts, blocks, kw


@settings(max_examples=EXAMPLES * 4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(split_cases())
def test_level_by_level_gives_the_node_by_node_groups(case):
    # the node-by-node split (still the one of the other cuts) is the reference: the same
    # groups, in the same order, with leftovers shed as there
    x, s, priors, view_counts, blocks, kw = case
    split = Split(x, s, priors, view_counts, **kw)
    order = np.argsort(blocks, kind="stable")
    ends = np.flatnonzero(np.diff(blocks[order])) + 1
    roots = sorted(np.split(order, ends), key=lambda rows: rows[0])
    want = [g for root in roots for g in split.groups(root)]
    got = median_groups(split, roots)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    labels = topdown_groups(x, s, priors, view_counts, blocks=blocks, **kw)
    assert labels.max(initial=-1) + 1 == len(want)
