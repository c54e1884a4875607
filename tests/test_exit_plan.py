"""The exit guard's plan carried out (dpriv.exit_plan): the vectorised relabelling of a part
(:func:`apply_plan`) and the union-find roots (:func:`_roots`) against plain row-by-row
references written here, on small random inputs (issue 13: the relabel was a pass over the
part per merged group)."""

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpriv.exit_plan import _roots, apply_plan
from dpriv.released import LABEL, SCODE

EXITS = np.array([2, 3])


def _reference(part, remap, moved, gone_exit, gone_all):
    """Row by row: a suppressed row is left out; otherwise its label is the one its id was
    moved to, else the label its ORIGINAL label merges into (no chains), else its own."""
    out = []
    for rid, lab, s in zip(part["rid"], part[LABEL], part[SCODE]):
        if lab in gone_all or (lab in gone_exit and s in EXITS):
            continue
        out.append((rid, moved.get(rid, remap.get(lab, lab))))
    return out


def _arrays(remap, moved, gone_exit, gone_all):
    """The plan as Plan.apply hands it to apply_plan: remap sorted by label, int64 arrays."""
    src = np.array(sorted(remap), dtype=np.int64)
    dst = np.array([remap[k] for k in sorted(remap)], dtype=np.int64)
    ids = np.array(list(moved), dtype=np.int64)
    to = np.array(list(moved.values()), dtype=np.int64)
    gone = [np.array(sorted(g), dtype=np.int64) for g in (gone_exit, gone_all)]
    return (src, dst), (ids, to), *gone


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    labels=st.lists(st.sampled_from([-1, 0, 5, 7, 2**40 + 3, -(2**62), 2**62 + 11, 9]), max_size=30),
    data=st.data(),
)
def test_apply_plan_equals_a_row_by_row_reference(labels, data):
    n = len(labels)
    codes = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    pool = [-1, 0, 5, 7, 2**40 + 3, -(2**62), 2**62 + 11, 9, 12]
    # a merged group may point at another merged group: apply_plan must not follow the chain
    remap = data.draw(st.dictionaries(st.sampled_from(pool), st.sampled_from(pool), max_size=6))
    ids = list(range(100, 100 + n))
    moved = data.draw(st.dictionaries(st.sampled_from(ids + [999]), st.sampled_from(pool), max_size=4))
    gone_exit = set(data.draw(st.lists(st.sampled_from(pool), max_size=2)))
    gone_all = set(data.draw(st.lists(st.sampled_from(pool), max_size=2)))
    part = pd.DataFrame(
        {"rid": np.array(ids, dtype=np.int64), LABEL: np.array(labels, dtype=np.int64), SCODE: codes},
        index=np.arange(n) * 3,  # a part's index need not be 0..n-1: rows keep theirs
    )
    got = apply_plan(part, "rid", *_arrays(remap, moved, gone_exit, gone_all), EXITS)
    want = _reference(part, remap, moved, gone_exit, gone_all)
    assert list(zip(got["rid"], got[LABEL])) == want
    assert got[LABEL].dtype == np.int64
    assert got.index.tolist() == [3 * (i - 100) for i, _ in want]


@given(st.data())
def test_roots_equal_following_each_parent_chain(data):
    n = data.draw(st.integers(1, 25))
    # a forest: each position points at itself or at a position drawn earlier in a random order
    order = data.draw(st.permutations(range(n)))
    parent = np.arange(n)
    for i in range(1, n):
        if data.draw(st.booleans()):
            parent[order[i]] = order[data.draw(st.integers(0, i - 1))]
    want = []
    for g in range(n):
        while parent[g] != g:
            g = parent[g]
        want.append(g)
    assert _roots(parent).tolist() == want


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_plan_apply_equals_a_row_by_row_reference(data):
    """Plan.apply hands its merges, moves and suppressions to apply_plan as arrays: on a random
    plan state each row is dropped, moved or relabelled as its own group's and row's fate says
    (merged groups to their root's label, however long the chain)."""
    from dpriv.exit_plan import Plan, Rows

    g = data.draw(st.integers(1, 6))
    labels = np.array(
        sorted(
            data.draw(
                st.sets(
                    st.sampled_from([-(2**62), -1, 0, 5, 7, 9, 2**40 + 3, 2**62 + 11]), min_size=g, max_size=g
                )
            )
        )
    )
    n = data.draw(st.integers(0, 20))
    group = np.array(data.draw(st.lists(st.integers(0, g - 1), min_size=n, max_size=n)), dtype=np.int64)
    s = np.array(data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)), dtype=np.int64)
    ids = np.arange(100, 100 + n, dtype=np.int64)
    part = pd.DataFrame({"rid": ids, LABEL: labels[group], SCODE: s}, index=np.arange(n) * 2)
    rows = Rows(ids, group, s, np.zeros((n, 0)), np.zeros(n), np.arange(n), np.isin(s, EXITS))
    plan = Plan(labels, np.zeros((g, 5), dtype=np.int64), EXITS, rows, None, None)
    order = data.draw(st.permutations(range(g)))  # a forest: each points at one drawn earlier
    for i in range(1, g):
        if data.draw(st.booleans()):
            plan.parent[order[i]] = order[data.draw(st.integers(0, i - 1))]
    plan.at = np.array(data.draw(st.lists(st.integers(-1, g - 1), min_size=n, max_size=n)), dtype=np.int64)
    plan.drop_exit = data.draw(st.lists(st.integers(0, g - 1), max_size=2))
    plan.drop_all = data.draw(st.lists(st.integers(0, g - 1), max_size=2))
    got = plan.apply(part, "rid").assigned
    want = []
    for r in range(n):
        if group[r] in plan.drop_all or (group[r] in plan.drop_exit and s[r] in EXITS):
            continue
        to = plan.at[r] if plan.at[r] >= 0 and plan.at[r] != group[r] else group[r]
        want.append((int(ids[r]), int(labels[plan.root(int(to))])))
    assert list(zip(got["rid"].tolist(), got[LABEL].tolist())) == want
    assert got[LABEL].dtype == np.int64
