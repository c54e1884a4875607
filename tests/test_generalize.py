"""The greedy kernel (Algorithm 2 and its repairs) on hand-computed cases."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dpriv.anonymity.generalize import CARRIED
from dpriv.anonymity.jsreduce import GroupStats, Params, first_pass, greedy_qi_groups, repair
from dpriv.divergence import EQUAL

FLAT = np.full((6, 2), 0.5)


def test_literal_scan_closes_a_group_as_soon_as_e9_holds():
    s = np.array([0, 1, 0, 1, 0, 1])
    g = first_pass(s, FLAT, np.array([3, 3]), Params(k=2, t=1.0, j=1.0))
    np.testing.assert_array_equal(g, [0, 0, 1, 1, 2, 2])


def test_t_binds_exactly_at_the_boundary():
    # view (3 zeros, 1 one); {0,0} has equal-distance EMD 0.25
    s, pri, view = np.array([0, 0, 0, 1]), np.full((4, 2), 0.5), np.array([3, 1])
    np.testing.assert_array_equal(first_pass(s, pri, view, Params(k=2, t=0.25, j=1.0)), [0, 0, 1, 1])
    # at t = 0.2, {0,0} and {0,0,0} (EMD 0.25) stay open; {0,0,0,1} has EMD 0
    np.testing.assert_array_equal(first_pass(s, pri, view, Params(k=2, t=0.2, j=1.0)), [0, 0, 0, 0])


def test_js_binds_and_the_cap_sets_the_outlier_aside():
    # priors A = (1, 0) and B = (0, 1); any mixed group has JS >= 0.72 bits > j
    pri = np.array([[1.0, 0.0]] * 3 + [[0.0, 1.0]] + [[1.0, 0.0]] * 3)
    s = np.zeros(7, dtype=np.int64)
    literal = first_pass(s, pri, np.array([7, 0]), Params(k=3, t=1.0, j=0.1))
    # {B, A, A, A} has JS = H(1/4, 3/4) = 0.81 bits: the open group never closes
    np.testing.assert_array_equal(literal, [0, 0, 0, -1, -1, -1, -1])
    capped = first_pass(s, pri, np.array([7, 0]), Params(k=3, t=1.0, j=0.1, cap=3))
    # at size 3 ({B, x4, x5}) B is set aside, then x6 closes {x4, x5, x6}
    np.testing.assert_array_equal(capped, [0, 0, 0, -1, 1, 1, 1])


def test_carried_tail():
    s = np.array([0, 1, 0, 1, 0])
    g = first_pass(s, np.full((5, 2), 0.5), np.array([3, 2]), Params(k=2, t=1.0, j=1.0), carry_tail=True)
    np.testing.assert_array_equal(g, [0, 0, 1, 1, CARRIED])


def test_leftover_joins_the_group_whose_box_grows_least():
    # two groups: g0 box [0.0, 0.1] at Hilbert position 0, g1 box [0.5, 0.6] at position 10;
    # the leftover at coordinate 0.55 sits nearer g0 in Hilbert order (position 3) but joins g1
    group = np.array([0, 0, 1, 1])
    s = np.array([0, 1, 0, 1])
    pri = np.full((4, 2), 0.5)
    coords = np.array([[0.0], [0.1], [0.5], [0.6]])
    pos = np.array([0, 1, 10, 11])
    stats = GroupStats.of(group, s, pri, np.ones(4), coords, pos, 2, 2)
    assign, stats = repair(
        stats,
        np.array([0]),
        np.array([[0.5, 0.5]]),
        np.array([[0.55]]),
        np.array([3]),
        np.array([3, 2]),
        Params(k=2, t=1.0, j=1.0),
    )
    assert assign.tolist() == [1] and stats.sizes.tolist() == [2, 3]
    np.testing.assert_allclose(stats.lo[:, 0], [0.0, 0.5])


def test_repair_refuses_a_group_the_leftover_would_break():
    # the only group is {0, 1} in a view (1, 1); adding a 1 gives EMD 1/6 > t = 0.1
    stats = GroupStats.of(
        np.array([0, 0]),
        np.array([0, 1]),
        np.full((2, 2), 0.5),
        np.ones(2),
        np.zeros((2, 1)),
        np.array([0, 1]),
        1,
        2,
    )
    assign, _ = repair(
        stats,
        np.array([1]),
        np.array([[0.5, 0.5]]),
        np.zeros((1, 1)),
        np.array([2]),
        np.array([1, 1]),
        Params(k=2, t=0.1, j=1.0),
    )
    assert assign.tolist() == [-1]


def test_whole_view_kernel_groups_every_tuple_when_possible():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 3, 300)
    pri = np.full((300, 3), 1 / 3)
    g = greedy_qi_groups(s, pri, np.bincount(s, minlength=3), Params(k=5, t=0.2, j=1.0, ground=EQUAL, cap=40))
    assert (g >= 0).all()
    sizes = np.bincount(g)
    assert sizes.min() >= 5


def test_box_growth_kernel_equals_the_array_expression_bit_for_bit():
    """attach_aside's per-candidate growth (E11), computed without temporaries, must equal the array
    form it replaced to the last bit (ties between candidates decide the groups)."""
    from dpriv.anonymity.generalize import _growth

    rng = np.random.default_rng(7)
    for _ in range(500):
        m = int(rng.integers(1, 6))
        a, b = rng.random((2, m)).round(int(rng.integers(1, 4)))  # rounded: ties and zero growth
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        c = rng.random(m).round(2)
        expected = (np.maximum(hi, c) - np.minimum(lo, c) - (hi - lo)).sum()
        assert _growth(lo, hi, c) == expected
    assert _growth(np.array([0.2, 0.5]), np.array([0.4, 0.5]), np.array([0.3, 0.5])) == 0.0
    assert _growth(np.array([0.25]), np.array([0.5]), np.array([1.0])) == 0.5


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 200), groups=st.integers(1, 9), seed=st.integers(0, 2**32 - 1))
def test_group_statistics_from_columns_have_the_bits_of_the_gathered_rows(n, groups, seed):
    # range_stats reads the prior columns where they lie and visits the rows in key order
    # inside the compiled loop: every statistic must equal GroupStats.of on the gathered rows
    from dpriv.anonymity.group_stats import prior_columns
    from dpriv.anonymity.jsreduce import entropies

    rng = np.random.default_rng(seed)
    m, d = 7, 3
    priors = rng.dirichlet(np.full(m, 0.3), size=n)
    priors[rng.random((n, m)) < 0.1] = 0.0  # 0 log 0 = 0 on both paths
    frame = pd.DataFrame(priors, columns=[f"p{v}" for v in range(m)])
    order = rng.permutation(n)
    group = rng.integers(0, groups, size=n)  # already in `order`
    s, coords, pos = rng.integers(0, m, size=n), rng.random((n, d)), np.arange(n)
    gathered = priors[order]
    want = GroupStats.of(group, s, gathered, entropies(gathered), coords, pos, groups, m)
    cols = prior_columns(frame, list(frame.columns))
    got = GroupStats.of_columns(group, s, cols, order, coords, pos, groups, m, 2.0)
    for a, b in zip(want.astuple(), got.astuple()):
        np.testing.assert_array_equal(a, b)  # bit for bit
