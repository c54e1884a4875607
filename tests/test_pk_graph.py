"""The pk step of a Dask release as one small graph (dpriv.pk_graph, issue 13): the same new
state (rows, order, dtypes) and the same tail rows as the Dask DataFrame path it replaces (the
posteriors per part, a shuffle on the bucket, dpriv.state.next_state), with fewer tasks; and
the bucket cut it rests on (dpriv.state_buckets.split_by_bucket)."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from peaked_priors import peaked_priors

from dpriv.metrics.defender_tail import tail_meta
from dpriv.pk_graph import pk_graph
from dpriv.pk_step import posteriors_with_truth, tail_of_posteriors, without_truth
from dpriv.policy import ReleasePolicy
from dpriv.release_check import canonical_rows
from dpriv.released import LABEL, SCODE
from dpriv.state import empty_state, next_state
from dpriv.state_buckets import split_by_bucket, state_buckets

POLICY = ReleasePolicy(
    id="rid", qi=["age"], sensitive="s", domains={"age": [0, 9], "s": ["a", "b", "c"]}, k=2, t=0.0, j=0.1,
)  # fmt: skip
WINDOW = 2


def members(rng, ids: np.ndarray, nparts: int) -> dd.DataFrame:
    """A membership of whole QI-groups (labels), ``nparts`` partitions cut between groups, each
    sorted by (label, id) as the regroup step leaves it; priors peaked on the truth for half."""
    n, m = len(ids), len(POLICY.sensitive_domain)
    s, prior = peaked_priors(rng, n, m)
    frame = pd.DataFrame({POLICY.id: ids, LABEL: rng.integers(0, 12, n) * 7919, SCODE: s})
    frame = frame.assign(**{c: prior[:, i] for i, c in enumerate(POLICY.prior_columns)})
    labels = np.unique(frame[LABEL])
    cut = np.array_split(labels, nparts)
    parts = [canonical_rows(frame[frame[LABEL].isin(c)], POLICY) for c in cut]
    return dd.from_delayed([dask.delayed(p) for p in parts], meta=parts[0].iloc[:0], verify_meta=False)


def same_parts(new: dd.DataFrame, old: dd.DataFrame) -> None:
    """The same partitions, one by one (index included: the ledger writes each as a part)."""
    assert new.npartitions == old.npartitions
    for a, b in zip(new.to_delayed(), old.to_delayed(), strict=True):
        pd.testing.assert_frame_equal(a.compute(), b.compute())


def old_path(asg: dd.DataFrame, state, index: int, nbuckets: int, held: int | None):
    """The pk step before dpriv.pk_graph: Dask DataFrame operations and a bucket shuffle."""
    meta = posteriors_with_truth(asg._meta, POLICY)
    posts_s = asg.map_partitions(posteriors_with_truth, POLICY, meta=meta)
    posts = posts_s.map_partitions(without_truth, meta=without_truth(meta))
    new = next_state(state, posts, POLICY, WINDOW, index, nbuckets, held)
    return new, posts_s.map_partitions(tail_of_posteriors, POLICY, meta=tail_meta())


@pytest.mark.parametrize("nbuckets", [1, 4])
def test_two_releases_give_the_state_and_tail_of_the_dataframe_path(nbuckets):
    rng = np.random.default_rng(nbuckets)
    first = members(rng, rng.permutation(400)[:150], nparts=3)
    second = members(rng, rng.permutation(400)[:170], nparts=4)  # some back, some new
    with dask.config.set(scheduler="sync"):
        state = empty_state(POLICY, WINDOW)
        new = pk_graph(first, state, POLICY, WINDOW, 1, nbuckets)
        was, was_tail = old_path(first, state, 1, nbuckets, None)
        got, tail = new.state().compute(), new.tail.compute()
        same_parts(new.state(), was)
        pd.testing.assert_frame_equal(tail, was_tail.compute().reset_index(drop=True))
        assert new.state().npartitions == nbuckets
        assert tail["n_tuples"].sum() == 150 and len(tail) == 3
        # each partition is one bucket, in order (the ledger writes one part per bucket)
        for b, part in enumerate(new.state().partitions[i].compute() for i in range(nbuckets)):
            assert (state_buckets(part[POLICY.id], nbuckets) == b).all()
            assert part[POLICY.id].is_monotonic_increasing
        # the next release joins that state where it lies (held buckets)
        again = pk_graph(second, new.state(), POLICY, WINDOW, 2, nbuckets, state_buckets=nbuckets)
        was2, _ = old_path(second, was, 2, nbuckets, nbuckets)
        same_parts(again.state(), was2)
        got2 = again.state().compute()
    assert len(got2) == len(set(got[POLICY.id]) | set(second[POLICY.id].compute()))
    assert (got2["n_post"] == 2).sum() == len(set(got[POLICY.id]) & set(second[POLICY.id].compute()))


def test_a_pandas_state_with_rows_is_joined_too():
    rng = np.random.default_rng(7)
    asg = members(rng, rng.permutation(300)[:90], nparts=2)
    with dask.config.set(scheduler="sync"):
        earlier = members(rng, rng.permutation(300)[:80], 1).compute()
        before = without_truth(posteriors_with_truth(earlier, POLICY))
        state = next_state(empty_state(POLICY, WINDOW), before, POLICY, WINDOW, 1, 2)
        same_parts(pk_graph(asg, state, POLICY, WINDOW, 2, 2).state(), old_path(asg, state, 2, 2, None)[0])


def test_the_graph_has_p_plus_pb_plus_b_plus_p_plus_one_tasks():
    """8 parts, 8 buckets, a first release: 8 parts' Ω + 64 pieces + 8 joins + 8 tail rows + their
    concatenation = 89 tasks (the Dask DataFrame path had over 200)."""
    rng = np.random.default_rng(0)
    asg = members(rng, rng.permutation(4000)[:1200], nparts=8).persist(scheduler="sync")
    graph = pk_graph(asg, empty_state(POLICY, WINDOW), POLICY, WINDOW, 1, 8)
    inputs = {k for d in asg.to_delayed() for k in dict(d.__dask_graph__())}
    keys = {k for d in [*graph.buckets, graph.tail] for k in dict(d.__dask_graph__())} - inputs
    assert len(keys) == 8 + 64 + 8 + 8 + 1


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(st.integers(-(2**40), 2**40), unique=True, max_size=60),
    nbuckets=st.sampled_from([1, 2, 3, 8]),
)
def test_split_by_bucket_keeps_each_bucket_s_rows_in_order(ids, nbuckets):
    frame = pd.DataFrame({"rid": np.array(ids, dtype=np.int64), "x": np.arange(len(ids), dtype=float)})
    frame.index = frame.index * 3  # an index the pieces do not keep
    pieces = split_by_bucket(frame, "rid", nbuckets)
    assert len(pieces) == nbuckets
    buckets = state_buckets(frame["rid"], nbuckets)
    for b, piece in enumerate(pieces):
        want = frame[buckets == b].reset_index(drop=True)  # an oracle: one mask per bucket
        pd.testing.assert_frame_equal(piece, want)


def test_split_by_bucket_by_hand():
    frame = pd.DataFrame({"rid": [5, 1, 9, 2, 7], "v": [0, 1, 2, 3, 4]}, index=[4, 3, 2, 1, 0])
    # buckets of 2 (stable_hash % 2): 5 -> 0, 1 -> 1, 9 -> 1, 2 -> 0, 7 -> 0
    pieces = split_by_bucket(frame, "rid", 2)
    assert [p["rid"].tolist() for p in pieces] == [[5, 2, 7], [1, 9]]
    assert [p["v"].tolist() for p in pieces] == [[0, 3, 4], [1, 2]]
    assert [p.index.tolist() for p in pieces] == [[0, 1, 2], [0, 1]]
