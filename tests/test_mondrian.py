"""Mondrian baselines (docs/algorithms.md §4.4): hand-computed partitions, model checks by brute force."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpriv.anonymity.mondrian import mondrian_groups, mondrian_view
from dpriv.divergence import EQUAL, ORDERED
from dpriv.errors import PolicyError
from dpriv.policy import ReleasePolicy

# 8 points in 2-D (docs/algorithms.md §4.4 by hand, k = 2, widths 7 and 7):
# root: both normalised ranges 1 -> x (QI order); lower median of x (h = 4) = 4
#   LHS x <= 4: ids 0..3, ranges x 3/7, y 7/7 -> y; y = 1,5,2,8, lower median 2 -> {0,2} | {1,3}
#   RHS x > 4: ids 4..7, ranges x 3/7, y 4/7 -> y; y = 3,6,7,4, lower median 4 -> {4,7} | {5,6}
POINTS = np.array([[1, 1], [2, 5], [3, 2], [4, 8], [5, 3], [6, 6], [7, 7], [8, 4]])


def groups_of(qi, s=None, counts=None, **kw):
    qi = np.asarray(qi)
    n = qi.shape[0]
    s = np.zeros(n, dtype=np.int64) if s is None else np.asarray(s)
    counts = np.bincount(s, minlength=int(s.max(initial=0)) + 1) if counts is None else counts
    return mondrian_groups(qi, s, counts, **kw)


def as_sets(groups):
    return {frozenset(np.flatnonzero(groups == g).tolist()) for g in np.unique(groups)}


# --- independent brute-force oracle (float arithmetic, per-group Python loops) -----------
def float_emd(p, q, ground):
    r = np.asarray(p, dtype=float) - np.asarray(q, dtype=float)
    if ground == ORDERED:
        return float(np.abs(np.cumsum(r)).sum() / max(len(r) - 1, 1))
    return float(np.abs(r).sum() / 2)


def assert_valid(groups, s, n_values, *, k, model, l=3, t=0.3, ground=EQUAL, allowable=None):  # noqa: E741
    n = len(s)
    assert groups.dtype == np.int64 and groups.shape == (n,)
    labels = np.unique(groups)
    assert labels.tolist() == list(range(len(labels)))  # 0..G-1, none empty: a partition
    view = np.array([np.sum(s == v) for v in range(n_values)]) / n
    for g in labels:
        members = np.flatnonzero(groups == g)
        assert len(members) >= k
        if model == "l":
            assert len(set(s[members].tolist())) >= l
        if model == "t":
            dist = np.array([np.sum(s[members] == v) for v in range(n_values)]) / len(members)
            assert float_emd(dist, view, ground) <= t + 1e-9
        if model == "bt":
            assert allowable(members)


def half_clearly_valid(members, s, n_values, *, k, model, l, t, ground, allowable):  # noqa: E741
    if len(members) < k:
        return False
    if model == "l":
        return len(set(s[members].tolist())) >= l
    if model == "t":
        view = np.array([np.sum(s == v) for v in range(n_values)]) / len(s)
        dist = np.array([np.sum(s[members] == v) for v in range(n_values)]) / len(members)
        return float_emd(dist, view, ground) <= t - 1e-9  # away from the exact boundary
    if model == "bt":
        return bool(allowable(members))
    return True


def assert_no_allowable_cut(qi, groups, s, n_values, *, strict, **kw):
    """Mondrian stops only when no QI has an allowable median cut (brute force per group)."""
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        for d in range(qi.shape[1]):
            vals = [int(v) for v in qi[members, d]]
            if max(vals) == min(vals):
                continue
            h = len(vals) // 2
            if strict:
                split = sorted(vals)[max(h - 1, 0)]
                lhs = members[[v <= split for v in vals]]
                rhs = members[[v > split for v in vals]]
            else:
                pos = sorted(range(len(vals)), key=lambda i: (vals[i], i))
                lhs, rhs = np.sort(members[pos[:h]]), np.sort(members[pos[h:]])
            assert not (
                half_clearly_valid(lhs, s, n_values, **kw) and half_clearly_valid(rhs, s, n_values, **kw)
            ), (g, d)


def boxes(qi, groups):
    g = np.unique(groups)
    lo = np.array([qi[groups == i].min(axis=0) for i in g])
    hi = np.array([qi[groups == i].max(axis=0) for i in g])
    return lo, hi


def assert_no_overlap(qi, groups):
    lo, hi = boxes(np.asarray(qi, dtype=float), groups)
    # boxes a, b overlap iff they overlap on every dimension
    ov = ((lo[:, None, :] <= hi[None, :, :]) & (lo[None, :, :] <= hi[:, None, :])).all(axis=2)
    np.fill_diagonal(ov, False)
    assert not ov.any()


# --- kernel: hand-computed cases -------------------------------------------------------
def test_eight_points_k2_exact_groups():
    groups = groups_of(POINTS, k=2, model="k", widths=np.array([7.0, 7.0]))
    assert groups.tolist() == [0, 1, 0, 1, 2, 3, 3, 2]  # LHS before RHS, depth first
    assert_no_overlap(POINTS, groups)


def test_widths_default_to_table_ranges():
    a = groups_of(POINTS, k=2, model="k")
    assert a.tolist() == groups_of(POINTS, k=2, model="k", widths=np.array([7, 7])).tolist()


def test_normalised_range_uses_table_widths():
    # same points, but x's table range is 70: y is now the widest at the root
    # root: y lower median (h = 4) = 4 -> {0,2,4,7} | {1,3,5,6}; y stays the widest in
    # both halves (3/7 against 7/70 and 5/70): y <= 2 -> {0,2} | {4,7}; y <= 6 -> {1,5} | {3,6}
    groups = groups_of(POINTS, k=2, model="k", widths=np.array([70.0, 7.0]))
    assert groups.tolist() == [0, 2, 0, 3, 1, 2, 3, 1]
    groups = groups_of(POINTS, k=4, model="k", widths=np.array([70.0, 7.0]))
    assert as_sets(groups) == {frozenset({0, 2, 4, 7}), frozenset({1, 3, 5, 6})}


def test_lower_median_with_ties_strict():
    # x = 1,1,1,2,2,3: h = 3, 3rd smallest = 1 -> {1,1,1} | {2,2,3}; then h = 1 -> {2,2} | {3}
    x = np.array([[1], [1], [1], [2], [2], [3]])
    assert as_sets(groups_of(x, k=1, model="k")) == {frozenset({0, 1, 2}), frozenset({3, 4}), frozenset({5})}
    # two points: h = 1, median 1 -> {0} | {1}
    assert groups_of(np.array([[5], [9]]), k=1, model="k").tolist() == [0, 1]


def test_strict_vs_relaxed():
    # x = 1,2,2,2,2,3, k = 3: the strict median 2 leaves RHS = {3} (< k) -> one group;
    # relaxed splits the 2s by row order to balance: {1,2,2} | {2,2,3}
    x = np.array([[1], [2], [2], [2], [2], [3]])
    assert groups_of(x, k=3, model="k").tolist() == [0] * 6
    relaxed = groups_of(x, k=3, model="k", strict=False)
    assert relaxed.tolist() == [0, 0, 0, 1, 1, 1]
    # relaxed on shuffled rows: still row order among the equal values
    x2 = np.array([[2], [3], [2], [1], [2], [2]])
    assert as_sets(groups_of(x2, k=3, model="k", strict=False)) == {
        frozenset({0, 2, 3}),
        frozenset({1, 4, 5}),
    }


def test_no_allowable_cut_gives_one_group():
    assert groups_of(POINTS, k=5, model="k").tolist() == [0] * 8  # 2k > n
    # l: every median cut on x separates the two sensitive values
    x = np.array([[1], [2], [3], [4]])
    assert groups_of(x, [0, 0, 1, 1], k=1, model="l", l=2).tolist() == [0] * 4
    # t: every cut is too far from the view distribution
    assert groups_of(x, [0, 0, 1, 1], k=1, model="t", t=0.25).tolist() == [0] * 4
    # a single tuple and all-equal points
    assert groups_of(np.array([[3.0, 4.0]]), k=1, model="k").tolist() == [0]
    assert groups_of(np.ones((6, 2)), k=1, model="k").tolist() == [0] * 6


def test_next_widest_dimension_when_median_cut_not_allowable():
    # x (normalised 1) is widest but its cut gives {0,0} | {1,1}; y (0.5) is 2-diverse
    qi = np.array([[1, 1], [2, 2], [3, 1], [4, 2]])
    s = np.array([0, 0, 1, 1])
    g = groups_of(qi, s, k=2, model="l", l=2, widths=np.array([3.0, 2.0]))
    assert as_sets(g) == {frozenset({0, 2}), frozenset({1, 3})}
    g = groups_of(qi, s, k=2, model="t", t=0.0, widths=np.array([3.0, 2.0]))
    assert as_sets(g) == {frozenset({0, 2}), frozenset({1, 3})}
    # with k alone the widest dimension is cut
    g = groups_of(qi, s, k=2, model="k", widths=np.array([3.0, 2.0]))
    assert as_sets(g) == {frozenset({0, 1}), frozenset({2, 3})}


def test_t_closeness_uses_exact_boundary_and_given_view_counts():
    qi = np.arange(6)[:, None]
    s = np.array([0, 1, 2, 2, 1, 0])  # halves {0,1,2}, {2,1,0}: EMD 0 -> fine at t = 0
    g = groups_of(qi, s, k=1, model="t", t=0.0, ground=ORDERED)
    assert as_sets(g) == {frozenset({0, 1, 2}), frozenset({3, 4, 5})}
    # halves of counts (1,1,0) against the view (1,1,1): ordered EMD exactly 0.25 (float
    # arithmetic gives 0.25000000000000006), so the cut is allowed at t = 0.25
    qi, s, view = np.arange(4)[:, None], np.array([0, 1, 0, 1]), np.array([1, 1, 1])
    g = mondrian_groups(qi, s, view, k=1, model="t", t=0.25, ground=ORDERED)
    assert g.tolist() == [0, 0, 1, 1]
    with pytest.raises(PolicyError, match="farther than t"):  # the root is at 0.25 too
        mondrian_groups(qi, s, view, k=1, model="t", t=0.2499, ground=ORDERED)


def test_constant_column_has_zero_width_and_no_warning():
    qi = np.column_stack([np.full(8, 42.0), POINTS])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = groups_of(qi, k=2, model="k")
    assert g.tolist() == [0, 1, 0, 1, 2, 3, 3, 2]  # the constant column is never cut
    with pytest.raises(ValueError, match="widths is 0"):
        groups_of(qi, k=2, model="k", widths=np.array([0.0, 0.0, 7.0]))


def test_bad_inputs():
    with pytest.raises(ValueError, match="model"):
        groups_of(POINTS, k=2, model="x")
    with pytest.raises(ValueError, match="allowable"):
        groups_of(POINTS, k=2, model="bt")
    with pytest.raises(ValueError, match="NaN"):
        groups_of(np.array([[1.0], [np.nan]]), k=1, model="k")
    with pytest.raises(ValueError, match="shape"):
        groups_of(np.arange(4), k=1, model="k")
    with pytest.raises(ValueError, match="sensitive codes"):
        mondrian_groups(POINTS, np.full(8, 3), np.array([8]), k=1, model="l", l=1)
    with pytest.raises(PolicyError, match="larger than the input"):
        groups_of(POINTS, k=9, model="k")
    with pytest.raises(PolicyError, match="distinct"):
        groups_of(POINTS, np.array([0, 1] * 4), k=1, model="l", l=3)
    assert groups_of(np.zeros((0, 2)), k=3, model="k").shape == (0,)


def test_bt_hook_calls_the_callable_on_both_halves_and_the_root():
    s = np.array([0, 1, 0, 1, 1, 1, 0, 1])
    seen = []

    def allowable(idx):  # toy (B,t): at most half of a group holds value 0
        seen.append(idx)
        return np.mean(s[idx] == 0) <= 0.5

    g = groups_of(POINTS, s, k=2, model="bt", allowable=allowable)
    assert_valid(g, s, 2, k=2, model="bt", allowable=allowable)
    assert seen[0].tolist() == list(range(8))  # the root is checked first
    assert all(i.dtype == np.int64 and (np.diff(i) > 0).all() for i in seen)
    # the callable really steers the partition: in {0,1,2,3} the y cut would give {0,2} (two
    # 0s), so the next widest QI, x, is cut instead: {0,1} | {2,3}; the RHS is as with k alone
    assert g.tolist() == [0, 0, 1, 1, 2, 3, 3, 2]
    with pytest.raises(PolicyError, match=r"\(B,t\)"):
        groups_of(POINTS, s, k=2, model="bt", allowable=lambda idx: len(idx) < 8)


def test_deterministic():
    rng = np.random.default_rng(1)
    qi = rng.integers(0, 10, size=(300, 3))
    s = rng.integers(0, 4, size=300)
    for model in ("k", "l", "t"):
        a = groups_of(qi, s, k=4, model=model, l=2, t=0.2)
        assert np.array_equal(a, groups_of(qi.copy(), s.copy(), k=4, model=model, l=2, t=0.2))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    n=st.integers(1, 40),
    m=st.integers(1, 3),
    model=st.sampled_from(["k", "l", "t", "bt"]),
    k=st.integers(1, 4),
    l=st.integers(1, 3),  # noqa: E741
    t=st.sampled_from([0.0, 0.1, 0.25, 0.4, 1.0]),
    ground=st.sampled_from([EQUAL, ORDERED]),
    strict=st.booleans(),
)
def test_property_every_group_satisfies_the_model(data, n, m, model, k, l, t, ground, strict):  # noqa: E741
    qi = np.array(
        data.draw(st.lists(st.lists(st.integers(0, 4), min_size=m, max_size=m), min_size=n, max_size=n))
    )
    s = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), dtype=np.int64)
    counts = np.bincount(s, minlength=3)

    def allowable(idx):
        return np.mean(s[idx] == 0) <= 0.6

    root_ok = (
        n >= k and (model != "l" or len(set(s.tolist())) >= l) and (model != "bt" or allowable(np.arange(n)))
    )
    kw = dict(k=k, model=model, l=l, t=t, ground=ground, allowable=allowable)
    if not root_ok:
        with pytest.raises(PolicyError):
            mondrian_groups(qi, s, counts, strict=strict, **kw)
        return
    g = mondrian_groups(qi, s, counts, strict=strict, **kw)
    assert_valid(g, s, 3, **kw)
    assert_no_allowable_cut(qi, g, s, 3, strict=strict, **kw)
    if strict:
        assert_no_overlap(qi, g)
    assert np.array_equal(g, mondrian_groups(qi, s, counts, strict=strict, **kw))


# --- released view ---------------------------------------------------------------------
def small_view():
    return pd.DataFrame(
        {
            "respondent_id": [f"r{i}" for i in range(8)],
            "x": POINTS[:, 0],
            "y": POINTS[:, 1],
            "sex": ["F", "M", "F", "F", "M", "M", "F", "M"],
            "disease": ["flu", "cold", "flu", "cold", "cold", "flu", "cold", "flu"],
        }
    )


def small_policy(**kw):
    pol = ReleasePolicy(qi=["x", "y"], sensitive="disease", k=2, seed=7, **kw)
    return pol.resolve(small_view())[0]


def true_ranges(assigned, qi):
    return assigned.groupby("_label")[qi].agg(["min", "max"])


def test_view_released_format_and_true_ranges():
    res = mondrian_view(small_view(), small_policy(), model="k")
    rel = res.released
    assert list(rel.columns) == ["qi_group", "x_min", "x_max", "y_min", "y_max", "disease"]
    assert res.n_groups == 4 and res.n_suppressed == 0 and len(rel) == 8
    a = res.assigned
    assert a["_label"].dtype == np.int64 and (a["_label"] >= 0).all()
    # same partition as the kernel on the same points
    assert as_sets(pd.factorize(a["_label"])[0]) == as_sets(np.array([0, 1, 0, 1, 2, 3, 3, 2]))
    # the stale-range fault: group {r0, r2} was cut on y only at its level; its x range must be
    # the TRUE [1, 3], not the parent's [1, 4], and its y range [1, 2]
    lab = a.loc[a["respondent_id"] == "r0", "_label"].item()
    row = rel[rel["qi_group"] == lab].iloc[0]
    assert (row["x_min"], row["x_max"], row["y_min"], row["y_max"]) == (1, 3, 1, 2)
    # and in general: every released interval is the group's true min/max
    rng = true_ranges(a, ["x", "y"])
    for _, r in rel.iterrows():
        exp = rng.loc[r["qi_group"]]
        assert (r["x_min"], r["x_max"], r["y_min"], r["y_max"]) == tuple(exp.tolist())
    # released groups match the private assignment, and ids never leave
    assert sorted(rel["qi_group"].tolist()) == sorted(a["_label"].tolist())
    assert "respondent_id" not in rel.columns and "_order" not in rel.columns


def test_view_rows_are_shuffled_by_order_key_and_seeded():
    view = small_view()
    a = mondrian_view(view, small_policy(), model="k")
    b = mondrian_view(view, small_policy(), model="k")
    pd.testing.assert_frame_equal(a.released, b.released)
    pd.testing.assert_frame_equal(a.assigned, b.assigned)
    c = mondrian_view(view, small_policy().with_overrides(seed=8), model="k")
    # another seed: same partition, other labels
    same = pd.crosstab(a.assigned["_label"], c.assigned["_label"])
    assert ((same > 0).sum(axis=1) == 1).all()
    assert set(a.assigned["_label"]) != set(c.assigned["_label"])
    # labels are not the region order 0..G-1
    assert set(a.assigned["_label"]) != set(range(4))


def test_view_categorical_qi_value_sets_and_models():
    view = small_view()
    pol = ReleasePolicy(qi=["x", "sex"], sensitive="disease", k=2, t=0.5).resolve(view)[0]
    for model in ("k", "l", "t"):
        res = mondrian_view(view, pol, model=model, l=2)
        rel = res.released
        assert list(rel.columns) == ["qi_group", "x_min", "x_max", "sex", "disease"]
        a = res.assigned
        sets = a.groupby("_label")["sex"].agg(lambda v: "{" + ",".join(sorted(set(v))) + "}")
        assert (rel["sex"].to_numpy() == sets.loc[rel["qi_group"]].to_numpy()).all()
        assert_valid(
            pd.factorize(a["_label"])[0].astype(np.int64), a["_s"].to_numpy(), 2, k=2, model=model, l=2, t=0.5
        )


def test_view_bt_hook_gets_view_positions():
    view = small_view()
    flu = (view["disease"] == "flu").to_numpy()
    res = mondrian_view(view, small_policy(), model="bt", allowable=lambda idx: 0 < flu[idx].mean() < 1)
    for _, grp in res.assigned.groupby("_label"):
        assert grp["disease"].nunique() == 2


@pytest.mark.shared_data
def test_adult_k5(shared_data):
    df = pd.read_csv(shared_data / "arx" / "adult.csv", sep=";")
    df.insert(0, "respondent_id", np.arange(len(df)))
    qi = ["age", "sex", "race", "marital-status", "education"]
    pol = ReleasePolicy(qi=qi, sensitive="salary-class", k=5, seed=3).resolve(df)[0]
    res = mondrian_view(df, pol, model="k")
    rel, a = res.released, res.assigned
    sizes = rel["qi_group"].value_counts()
    assert len(rel) == len(df) == 30162 and sizes.min() >= 5
    assert res.n_groups == len(sizes) > 500
    # true ranges on the numeric QI, and categorical value sets of the group's own values
    rng = a.groupby("_label")["age"].agg(["min", "max"])
    first = rel.drop_duplicates("qi_group").set_index("qi_group")
    assert (first["age_min"] == rng.loc[first.index, "min"]).all()
    assert (first["age_max"] == rng.loc[first.index, "max"]).all()
    nsex = a.groupby("_label")["sex"].nunique()
    assert (first["sex"].str.count(",") + 1 == nsex.loc[first.index]).all()
    # strict regions do not overlap (category ranks as coordinates)
    from dpriv.anonymity.mondrian import qi_grid_of

    grid, _ = qi_grid_of(df, pol)
    g = pd.factorize(a["_label"])[0]
    lo = pd.DataFrame(grid).groupby(g).min().to_numpy()
    hi = pd.DataFrame(grid).groupby(g).max().to_numpy()
    ov = np.ones((len(lo), len(lo)), dtype=bool)
    for d in range(grid.shape[1]):
        ov &= (lo[:, None, d] <= hi[None, :, d]) & (lo[None, :, d] <= hi[:, None, d])
    np.fill_diagonal(ov, False)
    assert not ov.any()
