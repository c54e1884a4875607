"""The first pass over the Hilbert ranges of a Dask view (:mod:`dpriv.first_pass`).

Top-down ranges run side by side: the rows each range receives from the ranges before it are
cut from the keys alone. The oracle is the chain (each range handing on what its kernel left),
which gave every released byte so far: the same groups, labels and leftovers, range by range,
for any cut of the key space into ranges (empty ranges, several ranges inside one block, a block
over several ranges), and no range's task waits for another range's grouping.
"""

from __future__ import annotations

from unittest import mock

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpriv.first_pass import (
    _end_blocks,
    block_ids,
    chained_scan,
    first_pass,
    range_divisions,
    range_ends,
    resynced_scan,
    side_by_side,
    topdown_range,
)
from dpriv.hilbert.keys import HKEY, TIE, add_keys, balanced_divisions, grid_bits, key_dims
from dpriv.released import LABEL, secret_policy
from dpriv.validate import validate_view
from tests.test_properties import views_and_policies
from tests.test_topdown import EXAMPLES


def ranges_of(view: pd.DataFrame, policy, cuts: list[int]):
    """The view keyed and cut into Hilbert ranges at ``cuts`` (key values; ranges may be empty)."""
    keyed = add_keys(view, policy)
    keys = keyed[HKEY].to_numpy(np.uint64)
    lo, hi = int(keys.min()), int(keys.max())
    inner = sorted({lo + c % max(hi - lo, 1) for c in cuts} - {lo})
    divisions = (lo, *inner, hi) if hi > lo else (lo, hi)
    frame = dd.from_pandas(keyed, npartitions=1, sort=False)
    return frame.set_index(HKEY, sort=True, divisions=list(divisions)).to_delayed()


@pytest.mark.slow  # two Dask scans per example: ~4 s of CPU
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    views_and_policies(),
    st.sampled_from([0, 1, 2, 3]),
    st.lists(st.integers(0, 2**40), min_size=0, max_size=9),
)
def test_side_by_side_gives_the_chains_rows_in_the_chains_order(case, level, cuts):
    view, policy = case
    policy = policy.with_overrides(grouping="topdown", topdown_level=level)
    summary = validate_view(view, policy)
    policy = secret_policy(policy, summary)
    parts = ranges_of(view, policy, cuts)
    with dask.config.set(scheduler="sync"):
        chain = dask.compute(*chained_scan(parts, policy, summary.s_counts))
        side = dask.compute(*side_by_side(parts, policy, summary.s_counts))
    assert len(side) == len(chain) == len(parts)
    # a block that ends where a range ends is grouped by that range side by side, by the next
    # one in the chain: the same rows and labels, one after the other in the same order
    both = [pd.concat(frames, ignore_index=True) for frames in (side, chain)]
    pd.testing.assert_frame_equal(*both, check_exact=True)
    assert sum(len(p) for p in side) == len(view)  # every row once: grouped or left over


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(views_and_policies(), st.sampled_from([0, 1, 2, 5]), st.booleans(), st.integers(0, 2**40))
def test_topdown_range_hands_on_exactly_the_rows_of_its_last_block(case, level, last, cut):
    """One range (rows in any order, indexed by key) after carried rows: it groups every row in
    (key, tie) order except, unless it is the last range, those whose key starts with the same
    ``level * d`` bits as its largest key (read off the keys' binary digits), which it hands on."""
    view, policy = case
    summary = validate_view(view, policy)
    policy = secret_policy(policy.with_overrides(grouping="topdown", topdown_level=level), summary)
    keyed = add_keys(view, policy).sample(frac=1.0, random_state=cut % 97)
    keyed = keyed.set_index(HKEY).reset_index()  # the key first, as a range's carried rows hold it
    keys = keyed[HKEY].to_numpy(np.uint64)
    at = keys.min() + np.uint64(cut % (int(keys.max() - keys.min()) + 1))
    carry = keyed[keys < at].sort_values([HKEY, TIE], kind="stable").reset_index(drop=True)
    part = keyed[keys >= at].set_index(HKEY)
    done, handed = topdown_range(part, carry if len(carry) else None, policy, summary.s_counts, last)
    _check_range_output(done, handed, keyed, policy, level, last)


def _check_range_output(done, handed, keyed, policy, level, last):
    """``done`` holds every row of ``keyed`` in (key, tie) order but the last block (unless
    ``last``), which ``handed`` holds; its groups have at least k rows."""
    whole = keyed.sort_values([HKEY, TIE], kind="stable").reset_index(drop=True)
    width, lead = grid_bits(policy) * key_dims(policy), min(level, grid_bits(policy)) * key_dims(policy)
    prefix = np.array([format(int(k), f"0{width}b")[:lead] for k in whole[HKEY]], dtype=object)
    held = (prefix == prefix[-1]) if (len(whole) and not last) else np.zeros(len(whole), dtype=bool)
    pd.testing.assert_frame_equal(handed, whole[held].reset_index(drop=True), check_exact=True)
    pd.testing.assert_frame_equal(
        done.drop(columns=LABEL), whole[~held].reset_index(drop=True), check_exact=True
    )
    grouped = done[done[LABEL] >= 0]
    assert (grouped.groupby(LABEL).size() >= policy.k).all()


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(views_and_policies(), st.sampled_from([0, 1, 5]), st.booleans(), st.integers(0, 2**40))
def test_topdown_range_sorts_carried_rows_that_do_not_come_first(case, level, last, seed):
    """Carried rows in any order, with keys among the range's own (not as ranges hand them on):
    the range still groups all its rows in (key, tie) order, as one sorted frame."""
    view, policy = case
    summary = validate_view(view, policy)
    policy = secret_policy(policy.with_overrides(grouping="topdown", topdown_level=level), summary)
    keyed = add_keys(view, policy).set_index(HKEY).reset_index()
    carry = keyed.sample(frac=0.5, random_state=seed % 89)
    part = keyed.drop(index=carry.index).set_index(HKEY)
    carry = carry.reset_index(drop=True)
    done, handed = topdown_range(part, carry if len(carry) else None, policy, summary.s_counts, last)
    _check_range_output(done, handed, keyed, policy, level, last)


def test_no_range_waits_for_another_ranges_grouping():
    view, policy, summary = _two_qi_topdown(400, seed=3)
    parts = ranges_of(view, policy, [2**9, 2**10, 2**11, 2**11 + 5, 3 * 2**10])
    for links, chained in (
        (side_by_side(parts, policy, summary.s_counts), False),
        (chained_scan(parts, policy, summary.s_counts), True),
    ):
        last = dict(links[-1].dask)
        kernels = [k for k in last if "topdown_range" in str(k)]
        assert (len(kernels) == len(parts)) if chained else (len(kernels) == 1), kernels


@pytest.mark.slow  # two Dask scans per example: 2.4-5 s of CPU
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    views_and_policies(),
    st.lists(st.integers(0, 2**40), min_size=0, max_size=9),
    st.sampled_from([1, 2, 5, 1024]),
)
def test_resynced_scan_gives_the_chains_rows_range_by_range(case, cuts, first_rows):
    """Each range scanned alone, then resynced from a few rows (4x more each time the scans
    have not met yet): the chain's groups, labels and leftovers, range by range."""
    view, policy = case
    summary = validate_view(view, policy)
    policy = secret_policy(policy, summary)
    parts = ranges_of(view, policy, cuts)
    with dask.config.set(scheduler="sync"), mock.patch("dpriv.anonymity.resync.FIRST_ROWS", first_rows):
        chain = dask.compute(*chained_scan(parts, policy, summary.s_counts))
        resynced = dask.compute(*resynced_scan(parts, policy, summary.s_counts))
    assert len(resynced) == len(chain) == len(parts)
    for got, expected in zip(resynced, chain):
        pd.testing.assert_frame_equal(got, expected, check_exact=True)


def test_resync_stops_where_both_scans_close_a_group():
    """Hand-made: k = 2, t = 0.2 (the view holds 4 a and 3 b: a group of two a is too far from
    it, a group with a b is not). The range holds b a a b b a; alone it closes groups after
    rows 1, 3 and 5. With one a carried in, the chain closes after row 0 ({a, b}), then
    after row 3 ({a, a, b}): both scans closed a group after row 3, so rows 0-3 take the new
    groups (found when 4 rows are scanned again) and rows 4-5 keep the lone scan's."""
    from dpriv.anonymity.jsreduce import scan_range
    from dpriv.anonymity.resync import resync, scan_alone, spliced
    from dpriv.policy import ReleasePolicy

    values = list("abaabba")
    view = pd.DataFrame({"rid": np.arange(7), "age": np.arange(7), "s": values, "p__a": 0.5, "p__b": 0.5})
    policy = ReleasePolicy(
        id="rid", qi=["age"], sensitive="s", k=2, t=0.2, j=5.0, domains={"age": [0, 6], "s": ["a", "b"]}
    )
    summary = validate_view(view, policy)
    policy = secret_policy(policy, summary)
    keyed = add_keys(view, policy).sort_values(HKEY).reset_index(drop=True)
    assert keyed["s"].tolist() == values  # the key follows age
    carry, part = keyed.iloc[:1].reset_index(drop=True), keyed.iloc[1:].reset_index(drop=True)
    done, tail, closes = scan_alone(part, policy, summary.s_counts, False)
    np.testing.assert_array_equal(closes, [1, 3, 5])
    with mock.patch("dpriv.anonymity.resync.FIRST_ROWS", 1):
        fix, upto, carried = resync(done, tail, closes, carry, policy, summary.s_counts, False)
    assert upto == 4 and len(fix) == 5  # the carried row and rows 0-3
    expected, expected_tail = scan_range(part, carry, policy, summary.s_counts, False)
    pd.testing.assert_frame_equal(spliced(done, fix, upto), expected, check_exact=True)
    pd.testing.assert_frame_equal(carried, expected_tail, check_exact=True)
    assert expected[LABEL].nunique() == 3  # {a, b}, {a, a, b}, {b, a}


@pytest.mark.slow  # ~3 s of CPU
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(views_and_policies(), st.sampled_from([0, 1, 2]), st.integers(1, 9))
def test_topdown_ranges_are_cut_at_the_block_starts_nearest_to_balance(case, level, n):
    view, policy = case
    policy = policy.with_overrides(grouping="topdown", topdown_level=level)
    summary = validate_view(view, policy)
    policy = secret_policy(policy, summary)
    hist = add_keys(view, policy)[HKEY].value_counts().sort_index()
    keys, counts = hist.index.to_numpy(np.uint64), hist.to_numpy()
    divisions = range_divisions(hist, n, policy)
    # the oracle: every block start (a key whose block differs from the key before it), its
    # rows before, and for each balanced target the start with the fewest rows off (ties: the earlier)
    blocks = block_ids(keys, policy).tolist()
    starts = [i for i in range(len(keys)) if i == 0 or blocks[i] != blocks[i - 1]]
    before = {i: int(counts[:i].sum()) for i in starts}
    total = int(counts.sum())
    chosen = set()
    for m in range(1, n):
        target = total * m / n
        best = min(starts, key=lambda i: (abs(before[i] - target), i))
        if best > 0:
            chosen.add(int(keys[best]))
    assert divisions == (int(keys[0]), *sorted(chosen), int(keys[-1]))
    # ranges of whole blocks: side by side, no range hands rows on to the next
    parts = dd.from_pandas(add_keys(view, policy), npartitions=1, sort=False)
    parts = parts.set_index(HKEY, sort=True, divisions=list(divisions)).to_delayed()
    with dask.config.set(scheduler="sync"):
        sizes = [len(p) for p in dask.compute(*parts)]
        side = dask.compute(*side_by_side(parts, policy, summary.s_counts))
    assert [len(p) for p in side] == sizes


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(views_and_policies(), st.integers(1, 9))
def test_scan_ranges_keep_the_balanced_cuts(case, n):
    view, policy = case
    policy = policy.with_overrides(grouping="scan")
    hist = add_keys(view, policy)[HKEY].value_counts()
    assert range_divisions(hist, n, policy) == balanced_divisions(hist, n)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    views_and_policies(),
    st.sampled_from([0, 1, 2, 3]),
    st.lists(st.integers(0, 2**40), min_size=0, max_size=9),
)
def test_range_ends_from_the_histogram_are_those_of_the_ranges(case, level, cuts):
    """The ends read off the key histogram (no compute) are each range's computed first and last
    block, empty ranges included: side by side then cuts the same carried rows."""
    view, policy = case
    policy = policy.with_overrides(grouping="topdown", topdown_level=level)
    summary = validate_view(view, policy)
    policy = secret_policy(policy, summary)
    parts = ranges_of(view, policy, cuts)
    keys = add_keys(view, policy)[HKEY]
    lo, hi = int(keys.min()), int(keys.max())
    inner = sorted({lo + c % max(hi - lo, 1) for c in cuts} - {lo})  # the cuts ranges_of made
    divisions = (lo, *inner, hi) if hi > lo else (lo, hi)
    ends = range_ends(keys.value_counts(), divisions, policy)
    with dask.config.set(scheduler="sync"):
        computed = dask.compute(*[dask.delayed(_end_blocks)(p, policy) for p in parts])
    assert ends == list(computed)


def test_range_ends_by_hand():
    """Keys 1, 2, 9 (blocks of one 1-bit digit at level 1 of a 4-bit grid in 1 dimension: the key
    >> 3) in ranges [0, 2), [2, 5), [5, 8), [8, 9]: (0, 0), (0, 0), empty, (1, 1)."""
    policy = mock.Mock(topdown_level=1)
    with (
        mock.patch("dpriv.first_pass.key_dims", return_value=1),
        mock.patch("dpriv.first_pass.grid_bits", return_value=4),
    ):
        hist = pd.Series([5, 1, 2], index=pd.Index([9, 1, 2], dtype="uint64"))
        assert range_ends(hist, (0, 2, 5, 8, 9), policy) == [(0, 0), (0, 0), None, (1, 1)]


def test_first_pass_parts_are_not_root_tasks_placed_away_from_their_ranges():
    """Each part of the first pass's frame is computed where its range's grouping ran: no task of
    its partitions is a data producer, which the distributed scheduler places like a root task
    (on the least busy worker, wherever the range lies: at 10^6, 55-110 MiB of ranges moved
    between two workers). Dask's ``from_delayed`` meta check is such a task."""
    view, policy, summary = _two_qi_topdown(300, seed=5)
    n = len(view)
    keyed = add_keys(view, policy)
    keys = np.sort(keyed[HKEY].to_numpy(np.uint64))
    divisions = [int(keys[0]), int(keys[n // 3]), int(keys[2 * n // 3]), int(keys[-1])]
    ranges = dd.from_pandas(keyed, npartitions=1, sort=False).set_index(HKEY, sort=True, divisions=divisions)
    out = first_pass(ranges, view.iloc[:0], policy, summary.s_counts)
    graph = dict(out.__dask_graph__())
    producers = [k for k in out.__dask_keys__() if getattr(graph[k], "data_producer", False)]
    assert out.npartitions == 3 and not producers, producers
    with dask.config.set(scheduler="sync"):
        assert len(out.compute()) == n  # every row once: grouped or left over


def _two_qi_topdown(n: int, seed: int):
    """A view of ``n`` respondents on two QIs of 64 values and three sensitive values with
    Dirichlet priors, its top-down policy (k 3, t 1, j 5: the requirements never bind) made
    secret, and its summary."""
    from dpriv.policy import ReleasePolicy

    rng = np.random.default_rng(seed)
    values = ["a", "b", "c"]
    priors = rng.dirichlet(np.ones(3), n)
    view = pd.DataFrame({"rid": np.arange(n), "age": rng.integers(0, 64, n), "zip": rng.integers(0, 64, n)})
    view = view.assign(s=rng.choice(values, n), **{f"p__{v}": priors[:, i] for i, v in enumerate(values)})
    policy = ReleasePolicy(
        id="rid", qi=["age", "zip"], sensitive="s", k=3, t=1.0, j=5.0, grouping="topdown",
        domains={"age": [0, 63], "zip": [0, 63], "s": values},
    )  # fmt: skip
    summary = validate_view(view, policy)
    return view, secret_policy(policy, summary), summary
