"""Kernels of the verify and metrics steps against simple references (issue 13, the 10^6 release):
the released rows the verifier rebuilds (:func:`dpriv.released.qig_rows`), the per-group
association sums (:func:`dpriv.metrics.anatomy.pair_association`) and the membership's box
checks, which look the group rows up once for every numeric QI."""

from __future__ import annotations

from collections import Counter

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv.anonymity import verify_release
from dpriv.anonymity.membership import same_pairs
from dpriv.metrics.anatomy import association_per_group, pair_association
from dpriv.policy import ReleasePolicy
from dpriv.released import GROUP, LABEL, qig_rows, qig_table, released_columns, rows_digest
from dpriv.validate import codes
from dpriv.wording import counted

DOM = ["flu", "hiv", "none", "sepsis"]


def _assigned(seed: int, n: int = 400) -> tuple[pd.DataFrame, ReleasePolicy]:
    """A membership of ``n`` tuples in groups of 3-9 (hashed-looking int64 labels, rows in no
    order) with two numeric QIs, a categorical one and uniform priors."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 10, n)
    group = np.repeat(np.arange(n), sizes)[:n]
    labels = rng.choice(2**62, group.max() + 1, replace=False)[group]
    frame = pd.DataFrame(
        {
            "rid": rng.permutation(10 * n)[:n],
            "age": rng.integers(18, 90, n),
            "weight": rng.integers(40, 120, n),
            "sex": rng.choice(["F", "M", "X"], n),
            "s": rng.choice(DOM, n),
            LABEL: labels,
        }
    ).sample(frac=1.0, random_state=seed)
    for v in DOM:
        frame[f"p__{v}"] = 1.0 / len(DOM)
    policy = ReleasePolicy(
        id="rid",
        qi=["age", "weight", "sex"],
        sensitive="s",
        k=3,
        t=1.0,
        j=1.0,
        kinds={"sex": "categorical"},
        domains={"age": [0, 100], "weight": [0, 200], "sex": ["F", "M", "X"], "s": DOM},
    )
    return frame, policy


@pytest.mark.parametrize("seed", range(4))
def test_qig_rows_are_each_rows_group_values(seed):
    assigned, policy = _assigned(seed)
    table = qig_table(assigned, policy)
    rows = qig_rows(assigned, table, policy)
    assert list(rows.columns) == released_columns(policy)
    assert len(rows) == len(assigned) and rows.index.equals(pd.RangeIndex(len(assigned)))
    assert rows["sex"].dtype == object and rows["age_min"].dtype == np.int64
    by_label = {label: table.loc[label] for label in table.index}
    for i, (label, s) in enumerate(zip(assigned[LABEL], assigned["s"])):
        want = by_label[label]
        got = rows.iloc[i]
        assert got[GROUP] == label and got["s"] == s
        assert [got[c] for c in table.columns] == [want[c] for c in table.columns]
    # the generalized values are the true min/max of each group's members
    members = assigned.groupby(LABEL)
    assert (table["age_min"] == members["age"].min()).all()
    assert (table["weight_max"] == members["weight"].max()).all()


def _reference_association(groups, values) -> list[float]:
    """sum_s c_gs^2 / n_g per group, counted pair by pair (missing keys left out)."""
    counts: dict = {}
    for g, v in zip(groups, values):
        if pd.isna(g) or pd.isna(v):
            continue
        counts.setdefault(g, Counter())[v] += 1
    return sorted(sum(c * c for c in cnt.values()) / sum(cnt.values()) for cnt in counts.values())


@pytest.mark.parametrize("seed", range(6))
def test_pair_association_counts_every_pair(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    groups = pd.Series(rng.integers(0, max(n // 4, 1), n) * 7919, dtype="float64")
    values = pd.Series(rng.choice(["a", "b", "c", "d", "e"], n), dtype=object)
    if seed % 2:  # missing keys: left out, and a group with only missing values has no figure
        groups[rng.random(n) < 0.1] = np.nan
        values[rng.random(n) < 0.1] = None
    got = sorted(pair_association(groups, values).tolist())
    assert got == _reference_association(groups, values)


def test_pair_association_without_pairs_is_empty():
    assert pair_association(pd.Series([np.nan, 1.0]), pd.Series([None, None], dtype=object)).shape == (0,)


@pytest.mark.parametrize("seed", range(3))
def test_association_per_group_pandas_equals_the_dask_groupby(seed):
    assigned, policy = _assigned(seed)
    rows = qig_rows(assigned, qig_table(assigned, policy), policy)
    in_memory = np.sort(association_per_group(rows, policy))
    on_dask = np.sort(association_per_group(dd.from_pandas(rows, npartitions=3), policy))
    assert np.array_equal(in_memory, on_dask)
    assert in_memory.tolist() == _reference_association(rows[GROUP], rows["s"])


def _box_problems(released: pd.DataFrame, assigned: pd.DataFrame, policy: ReleasePolicy) -> list[str]:
    counts = np.array([(assigned["s"] == v).sum() for v in DOM])
    report = verify_release(released, policy, view_counts=counts, assigned=assigned)
    return [p for p in report.problems if p.startswith(("QI ", "QI-groups "))]


def test_box_checks_name_the_qi_and_the_groups():
    """The members' spans of every numeric QI come from one grouping and each member's group
    row from one look-up: a loose bound of one QI, a member outside another QI's interval and
    a group with a released row for no member must each be named for their own QI and group."""
    assigned, policy = _assigned(7)
    released = qig_rows(assigned, qig_table(assigned, policy), policy)
    assert _box_problems(released, assigned, policy) == []
    labels = released[GROUP].unique()
    loose, outside = labels[3], labels[5]
    r = released.copy()
    r.loc[r[GROUP] == loose, "weight_max"] += 1
    assert _box_problems(r, assigned, policy) == [
        f"QI 'weight': the interval of QI-groups {loose} is not the true min/max of their tuples"
    ]
    r = released.copy()
    r.loc[r[GROUP] == outside, "age_min"] += 1  # the group's youngest member now lies below it
    said = _box_problems(r, assigned, policy)
    assert len(said) == 1 and said[0].startswith("QI 'age': ") and f"(groups {outside})" in said[0]
    # released rows of a group without members (the released labels not the assigned ones): its
    # members have no box (they were "outside" every QI's, through NaN bounds and a RuntimeWarning)
    r = released.copy()
    r.loc[r[GROUP] == loose, GROUP] = 12345
    said = _box_problems(r, assigned, policy)
    n = int((assigned[LABEL] == loose).sum())
    assert said == [
        f"QI-groups {loose} hold {n} kept tuples of the view but have no row in the release: the file "
        "was truncated or is not this release"
    ]


def test_each_qi_names_members_outside_their_box_before_a_box_that_is_not_tight():
    """Per QI, in the policy's order: members outside their group's box are named, and only
    when there are none, the boxes that are not tight (an interval wider than its members, a
    value set listing a value no member has: no other test makes that one). Guard of the split
    of ``membership.box_problems`` into one function per kind of box: passes on the code before
    it by design."""
    assigned, policy = _assigned(7)
    released = qig_rows(assigned, qig_table(assigned, policy), policy)
    first = released.drop_duplicates(GROUP).set_index(GROUP)
    a, b = first.index[first["sex"] == "{F,M}"][:2]
    r = released.copy()
    r.loc[r[GROUP] == a, "sex"] = "{F,M,X}"
    unused = f"QI 'sex': the value sets of QI-groups {a} list values no tuple of the group has"
    assert _box_problems(r, assigned, policy) == [unused]
    r.loc[r[GROUP] == b, "sex"] = "{F}"  # b's members valued M now lie outside it: named alone
    outside_set = f"QI 'sex': kept tuples of QI-groups {b} have values outside their group's value set"
    assert _box_problems(r, assigned, policy) == [outside_set]
    # age: one group's interval loose, another's upper bound below its oldest members; weight: loose
    others = first.index[~first.index.isin([a, b]) & (first["age_min"] < first["age_max"])]
    c, d, e = others[:3]
    r.loc[r[GROUP] == c, "weight_max"] += 1
    r.loc[r[GROUP] == d, "age_max"] += 1
    r.loc[r[GROUP] == e, "age_max"] -= 1
    oldest = int(((assigned[LABEL] == e) & (assigned["age"] == first.at[e, "age_max"])).sum())
    assert _box_problems(r, assigned, policy) == [
        f"QI 'age': {counted(oldest, 'kept tuple lies', 'kept tuples lie')} outside the interval "
        f"[age_min, age_max] of their QI-group (groups {e})",
        f"QI 'weight': the interval of QI-groups {c} is not the true min/max of their tuples",
        outside_set,
    ]


def _group_count_problems(released, assigned, policy) -> list[str]:
    """The verifier's problems about groups whose released sizes or sensitive values differ."""
    view_counts = np.array([(assigned["s"] == v).sum() + len(assigned) for v in DOM])
    report = verify_release(released, policy, view_counts=view_counts, assigned=assigned)
    return sorted(p for p in report.problems if p.endswith(("assigned to it", "assigned to the group")))


@pytest.mark.parametrize("seed", range(4))
def test_sizes_and_sensitive_counts_are_checked_in_the_members_order_and_in_any_other(seed):
    """The verifier compares the released (group, sensitive) pairs with the members' without
    grouping when both come in one order (its rebuilt rows do); a changed sensitive value or a
    row moved to another group must still be named, in that order and shuffled alike."""
    assigned, policy = _assigned(seed)
    released = qig_rows(assigned, qig_table(assigned, policy), policy)
    g, s = assigned[LABEL].to_numpy(), codes(assigned["s"], DOM)
    assert same_pairs(g, s, released[GROUP].to_numpy(), codes(released["s"], DOM))
    shuffled = released.sample(frac=1.0, random_state=seed)
    assert not same_pairs(g, s, shuffled[GROUP].to_numpy(), codes(shuffled["s"], DOM))
    assert (
        _group_count_problems(released, assigned, policy)
        == _group_count_problems(shuffled, assigned, policy)
        == []
    )
    rng = np.random.default_rng(seed)
    # two rows of different groups and values swap their sensitive values: sizes stay, counts differ
    i, j = next((i, j) for i, j in rng.integers(0, len(released), (200, 2)) if g[i] != g[j] and s[i] != s[j])
    swapped = released.copy()
    swapped.loc[[i, j], "s"] = swapped.loc[[j, i], "s"].to_numpy()
    for rows in (swapped, swapped.sample(frac=1.0, random_state=seed)):
        (said,) = _group_count_problems(rows, assigned, policy)
        named, why = said.removeprefix("QI-groups ").split(": ")
        assert set(named.split(", ")) == {str(g[i]), str(g[j])}
        assert why == "the released sensitive values differ from those of the tuples assigned to the group"
    # a released row changes group: both groups' sizes differ from their members'
    moved = released.copy()
    k = int(np.flatnonzero(g != g[i])[0])
    moved.loc[i, GROUP] = g[k]
    sizes = Counter(g.tolist())

    def said(label, released: int) -> str:
        kept = counted(sizes[label], "kept tuple")
        return f"QI-group {label}: {counted(released, 'released tuple')} but {kept} assigned to it"

    want = sorted([said(g[i], sizes[g[i]] - 1), said(g[k], sizes[g[k]] + 1)])
    for rows in (moved, moved.sample(frac=1.0, random_state=seed)):
        assert _group_count_problems(rows, assigned, policy) == want


def test_the_verifiers_rows_keep_an_arrow_sensitive_column_with_the_same_codes_and_digest():
    """The verifier rebuilds the released rows with the sensitive column in the membership's
    dtype (an Arrow string column is not turned into one Python string per row): the same
    values, codes and order-free digest as the released rows, whose column is object."""
    assigned, policy = _assigned(3)
    assigned["s"] = assigned["s"].astype("string[pyarrow]")
    table = qig_table(assigned, policy)
    plain, kept = qig_rows(assigned, table, policy), qig_rows(assigned, table, policy, sensitive_as_is=True)
    assert plain["s"].dtype == object and kept["s"].dtype == assigned["s"].dtype
    assert list(kept.columns) == list(plain.columns) == released_columns(policy)
    pd.testing.assert_frame_equal(kept.astype({"s": object}), plain)
    assert (codes(kept["s"], DOM) == codes(plain["s"], DOM)).all()
    assert rows_digest(kept) == rows_digest(plain) == rows_digest(plain.sample(frac=1.0, random_state=1))
    assert rows_digest(kept) != rows_digest(kept.assign(s=kept["s"].iloc[::-1].to_numpy()))
