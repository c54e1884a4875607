"""The state update of a release (:func:`dpriv.state.next_state`, issue 13 item 3).

In process, only the state rows of the respondents with a posterior are joined and advanced;
the oracle is the full outer join of every state row with the posteriors
(:func:`advance_state` over all of them), put bucket after bucket, sorted by id: the rows
that the new path leaves out of the join must come out with the same values, dtypes and order.
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv.anonymity.persistent import PGROUP, PNEXT
from dpriv.io import write_parquet
from dpriv.knowledge.tables import ClassMap, MarkovTables
from dpriv.policy import ReleasePolicy
from dpriv.rbk import _state_rows, revised, revised_priors, revised_view, with_revised_priors, with_state  # noqa: PLC2701
from dpriv.state import advance_state, empty_state, next_state, nullable_state, posterior_table
from dpriv.state_buckets import state_buckets, state_order

POLICY = ReleasePolicy(
    id="rid", qi=["age"], sensitive="s", domains={"age": [0, 9], "s": ["a", "b", "c"]}, k=2, t=0.0, j=0.1,
)  # fmt: skip
WINDOW = 2


def oracle(
    state: pd.DataFrame, posts: pd.DataFrame, policy: ReleasePolicy, index: int, n: int
) -> pd.DataFrame:
    """Every state row outer-joined with the posteriors and advanced, bucket after bucket by id."""
    new = advance_state(nullable_state(state).merge(posts, on=policy.id, how="outer"), policy, WINDOW, index)
    order = np.lexsort((np.arange(len(new)), state_buckets(new[policy.id], n)))
    return new.take(order).reset_index(drop=True)


def random_case(rng, policy: ReleasePolicy, n_state: int, n_posts: int, string_ids: bool):
    """A state of ``n_state`` respondents (after a few releases: some with NaN padding) and the
    posteriors of ``n_posts`` respondents, about half of them already in the state."""
    m = len(policy.sensitive_domain)
    ids = rng.choice(10 * (n_state + n_posts) + 1, size=n_state + n_posts, replace=False)
    old, fresh = ids[:n_state], ids[n_state:]
    n_post = rng.integers(1, 4, size=n_state)
    state = empty_state(policy, WINDOW)
    cols = {policy.id: old, "n_post": n_post, "last_release": rng.integers(1, 4, size=n_state),
            "last_group": rng.integers(0, 2**62, size=n_state)}  # fmt: skip
    if PGROUP in state.columns:
        cols[PGROUP] = np.where(rng.random(n_state) < 0.3, -1, rng.integers(0, 2**62, size=n_state))
    for w in range(WINDOW):
        p = rng.dirichlet(np.ones(m), size=n_state)
        p[n_post < WINDOW - w] = np.nan  # a respondent with one posterior: the oldest slot empty
        cols.update({f"pk{w}__{v}": p[:, i] for i, v in enumerate(policy.sensitive_domain)})
    state = pd.DataFrame(cols)[list(state.columns)]
    again = rng.choice(old, size=min(n_posts // 2, n_state), replace=False) if n_state else old[:0]
    who = np.concatenate([again, fresh[: n_posts - len(again)]])
    rng.shuffle(who)
    posts = posterior_table(
        who, rng.integers(0, 2**62, size=len(who)), rng.dirichlet(np.ones(m), size=len(who)), policy
    )
    if PGROUP in state.columns:
        posts[PNEXT] = pd.array(
            np.where(rng.random(len(who)) < 0.2, -1, rng.integers(0, 2**62, size=len(who))), dtype="Int64"
        )
    if string_ids:
        state[policy.id] = state[policy.id].map(lambda v: f"r{v:05d}").astype("string[pyarrow]")
        posts[policy.id] = pd.array([f"r{v:05d}" for v in who], dtype="string[pyarrow]")
    state = oracle(state, posts.iloc[:0], policy, 3, 4)  # in (bucket, id) order, as written
    return state, posts


@pytest.mark.slow
@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("string_ids", [False, True])
@pytest.mark.parametrize("n_state,n_posts", [(0, 30), (40, 0), (200, 60), (60, 200)])
@pytest.mark.parametrize("nbuckets", [1, 3])
def test_in_process_update_equals_the_full_join(persistent, string_ids, n_state, n_posts, nbuckets, tmp_path):
    policy = POLICY.with_overrides(persistent_groups=persistent)
    rng = np.random.default_rng(n_state * 7 + n_posts + 11 * persistent + 3 * string_ids)
    state, posts = random_case(rng, policy, n_state, n_posts, string_ids)
    expected = oracle(state, posts, policy, 4, nbuckets)
    got = next_state(state, posts, policy, WINDOW, 4, nbuckets)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    write_parquet(tmp_path / "a.parquet", got)
    write_parquet(tmp_path / "b.parquet", expected)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    if nbuckets == 1:
        return
    # the Dask path (both sides cut into the buckets, joined bucket by bucket): the same rows
    lazy = next_state(
        dd.from_pandas(state, npartitions=2),
        dd.from_pandas(posts, npartitions=3),
        policy,
        WINDOW,
        4,
        nbuckets,
    )
    pd.testing.assert_frame_equal(
        lazy.compute(scheduler="sync").reset_index(drop=True), expected, check_exact=True
    )


def test_a_small_update_by_hand():
    # 1 and 2 in the state; 2 gets a posterior, 1 is away, 5 is new
    state = pd.DataFrame(
        {"rid": [1, 2], "n_post": [1, 2], "last_release": [1, 2], "last_group": [7, 8],
         "pk0__a": [np.nan, 0.5], "pk0__b": [np.nan, 0.5], "pk0__c": [np.nan, 0.0],
         "pk1__a": [1.0, 0.0], "pk1__b": [0.0, 1.0], "pk1__c": [0.0, 0.0]}
    )  # fmt: skip
    posts = posterior_table(
        np.array([5, 2]), np.array([40, 41]), np.array([[0.0, 0.0, 1.0], [0.25, 0.75, 0.0]]), POLICY
    )
    got = next_state(state, posts, POLICY, WINDOW, 3, 1).set_index("rid")
    assert got.index.tolist() == [1, 2, 5]  # one bucket: by id
    # 1, away, keeps her row
    assert got.loc[1, ["n_post", "last_release", "last_group", "pk1__a", "pk1__b"]].tolist() == [
        1,
        1,
        7,
        1.0,
        0.0,
    ]
    assert got.loc[1, ["pk0__a", "pk0__b", "pk0__c"]].isna().all()
    assert got.loc[2, ["n_post", "last_release", "last_group"]].tolist() == [3, 3, 41]
    assert got.loc[2, ["pk0__a", "pk0__b", "pk1__a", "pk1__b"]].tolist() == [0.0, 1.0, 0.25, 0.75]
    assert got.loc[5, ["n_post", "last_release", "last_group", "pk1__c"]].tolist() == [1, 3, 40, 1.0]
    assert np.isnan(got.loc[5, "pk0__a"])
    assert got.dtypes[["n_post", "last_release", "last_group"]].tolist() == [np.dtype("int64")] * 3


@pytest.mark.parametrize("case", ["object ids", "nullable counters"])
def test_states_the_row_copy_cannot_take_go_through_the_merge(case):
    # ids of another dtype than the posteriors', or counters that are not int64: the join's
    # dtypes are then the merge's, so the update merges (the same result as the full join)
    rng = np.random.default_rng(5)
    state, posts = random_case(rng, POLICY, 80, 40, string_ids=True)
    if case == "object ids":
        state[POLICY.id] = state[POLICY.id].astype(object)
    else:
        state = state.astype({"n_post": "Int64"})
    expected = oracle(state, posts, POLICY, 4, 3)
    pd.testing.assert_frame_equal(next_state(state, posts, POLICY, WINDOW, 4, 3), expected, check_exact=True)


def random_tables(rng, policy: ReleasePolicy) -> MarkovTables:
    """BK^sv and BK^seq up to order WINDOW with two knowledge classes by age, zeros included."""
    m = len(policy.sensitive_domain)
    tabs = []
    for order in range(WINDOW + 1):
        t = rng.dirichlet(np.ones(m), size=(2, m**order))
        if order:
            t[rng.random((2, m**order)) < 0.3] = 0.0
        tabs.append(t)
    return MarkovTables(tuple(policy.sensitive_domain), ClassMap(("age",), ((5,),), (True,)), tabs)


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("string_ids", [False, True])
@pytest.mark.parametrize("n_state,n_view", [(0, 30), (200, 60), (60, 200)])
def test_revised_view_equals_the_join_then_revision(persistent, string_ids, n_state, n_view):
    """In process, RBK is read from the state rows of the view's respondents only
    (:func:`revised_view`); the oracle is the left join of the view with the whole state
    (:func:`with_state`) then :func:`with_revised_priors`: same columns, dtypes and bits,
    including first-timers, respondents with one posterior of two and persistent groups."""
    policy = POLICY.with_overrides(persistent_groups=persistent)
    rng = np.random.default_rng(n_state + 13 * n_view + 5 * persistent + string_ids)
    state, posts = random_case(rng, policy, n_state, n_view, string_ids)
    view = pd.DataFrame(
        {
            policy.id: posts[policy.id].array,
            "age": rng.integers(0, 10, n_view),
            "s": rng.choice(list("abc"), n_view),
        },
    ).iloc[::-1]  # a non-default index, as after the gate's filter
    tables = random_tables(rng, policy)
    assert _state_rows(view, state, policy) is not None  # the row lookup, not the join's fallback
    expected = with_revised_priors(with_state(view, state, policy, 1), tables, policy, WINDOW)
    got = revised_view(view, state, tables, policy, WINDOW)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    rbk = got[policy.prior_columns].to_numpy()
    first = ~view[policy.id].isin(state[policy.id]).to_numpy()
    bk = tables.tables[0][(view["age"].to_numpy() >= 5).astype(int), 0]
    np.testing.assert_array_equal(rbk[first], bk[first])  # first-timers: BK^sv as it is
    if n_state and (~first).any():
        assert not np.allclose(rbk[~first], bk[~first])  # the others: revised, so the test can fail
    np.testing.assert_array_equal(revised_priors(view, state, tables, policy, WINDOW), rbk)


@pytest.mark.parametrize("n_state", [0, 60])
def test_the_revised_priors_come_column_by_column(n_state):
    """RBK^sv (n, M) with each value's column one contiguous run (column-major, the same bits
    as ``tables[0][cls, 0]`` and the revision): the view's ``p__`` columns are then copied as
    runs, not gathered row by row (10^6 rows x 19 strided copies, issue 13)."""
    rng = np.random.default_rng(7 + n_state)
    state, posts = random_case(rng, POLICY, n_state, 50, False)
    view = pd.DataFrame(
        {"rid": posts["rid"].array, "age": rng.integers(0, 10, 50), "s": rng.choice(list("abc"), 50)}
    )
    tables = random_tables(rng, POLICY)
    rbk = revised_priors(view, state, tables, POLICY, WINDOW)
    assert rbk.shape == (50, 3) and rbk.flags.f_contiguous
    expected = with_revised_priors(with_state(view, state, POLICY, 1), tables, POLICY, WINDOW)
    np.testing.assert_array_equal(rbk, expected[POLICY.prior_columns].to_numpy())


@pytest.mark.parametrize("n_state", [0, 60])
def test_the_rbk_step_on_dask_equals_the_one_in_process(n_state):
    """:func:`revised` on a Dask view: partition by partition against an empty state (a first
    release), the hash join otherwise; both give each respondent the RBK of the pandas step."""
    rng = np.random.default_rng(n_state)
    state, posts = random_case(rng, POLICY, n_state, 80, False)
    s = rng.choice(list("abc"), 80)
    view = pd.DataFrame({"rid": posts["rid"].array, "age": rng.integers(0, 10, 80), "s": s})
    tables = random_tables(rng, POLICY)
    expected = revised(view, state, tables, POLICY, WINDOW, 1)
    lazy = revised(dd.from_pandas(view, npartitions=3), state, tables, POLICY, WINDOW, 2)
    cols = ["rid", "age", *POLICY.prior_columns]  # (Dask turns the object strings of S into str)
    got = lazy.compute(scheduler="sync").sort_values("rid").reset_index(drop=True)
    assert list(got.columns) == list(expected.columns)
    want = expected.sort_values("rid").reset_index(drop=True)
    pd.testing.assert_frame_equal(got[cols], want[cols], check_exact=True)


def test_revised_view_on_states_the_release_never_writes_equals_the_join():
    """A state with a column of its own (the join carries it: the lookup falls back to it) and
    a state with missing counters and persistent groups (nullable Int64, NA: read as none)."""
    policy = POLICY.with_overrides(persistent_groups=True)
    rng = np.random.default_rng(5)
    state, posts = random_case(rng, policy, 60, 40, False)
    view = pd.DataFrame(
        {"rid": posts["rid"].array, "age": rng.integers(0, 10, 40), "s": rng.choice(list("abc"), 40)}
    )
    tables = random_tables(rng, policy)
    extra = state.assign(note=np.arange(len(state)))
    nullable = state.astype({"n_post": "Int64", PGROUP: "Int64"})
    nullable.loc[::7, ["n_post", PGROUP]] = pd.NA
    for odd in (extra, nullable):
        expected = with_revised_priors(with_state(view, odd, policy, 1), tables, policy, WINDOW)
        pd.testing.assert_frame_equal(
            revised_view(view, odd, tables, policy, WINDOW), expected, check_exact=True
        )
        np.testing.assert_array_equal(
            revised_priors(view, odd, tables, policy, WINDOW), expected[policy.prior_columns].to_numpy()
        )
    assert "note" in revised_view(view, extra, tables, policy, WINDOW).columns  # carried, as by the join


def in_buckets(state: pd.DataFrame, policy: ReleasePolicy, n: int) -> dd.DataFrame:
    """``state`` as the release loop holds it after a Dask release: partition b is bucket b."""
    buckets = state_buckets(state[policy.id], n)
    parts = [dd.from_pandas(state[buckets == b].reset_index(drop=True), npartitions=1) for b in range(n)]
    return dd.concat(parts)


@pytest.mark.parametrize("string_ids", [False, True])
def test_the_rbk_join_where_the_state_lies_equals_the_one_in_process(string_ids):
    """With the state's partitions its buckets (``state_buckets``), only the view is shuffled
    (into those buckets) and each bucket is joined where it lies: each respondent still gets
    the RBK of the pandas step, bit for bit, first-timers included."""
    rng = np.random.default_rng(21 + string_ids)
    state, posts = random_case(rng, POLICY, 120, 80, string_ids)
    view = pd.DataFrame(
        {"rid": posts["rid"].array, "age": rng.integers(0, 10, 80), "s": rng.choice(list("abc"), 80)}
    )
    tables = random_tables(rng, POLICY)
    expected = revised(view, state, tables, POLICY, WINDOW, 1).sort_values("rid").reset_index(drop=True)
    lazy_view, lazy_state = dd.from_pandas(view, npartitions=3), in_buckets(state, POLICY, 3)
    joined = with_state(lazy_view, lazy_state, POLICY, 2, state_buckets=3)
    hash_join = with_state(lazy_view, lazy_state, POLICY, 2)
    shuffles = [f.optimize().expr.tree_repr().count("Shuffle:") for f in (joined, hash_join)]
    assert shuffles == [1, 2]  # the view alone moves; the hash join moves both sides
    lazy = revised(lazy_view, lazy_state, tables, POLICY, WINDOW, 2, state_buckets=3)
    assert lazy.npartitions == 3
    got = lazy.compute(scheduler="sync").sort_values("rid").reset_index(drop=True)
    cols = ["rid", "age", *POLICY.prior_columns]
    pd.testing.assert_frame_equal(got[cols], expected[cols], check_exact=True)
    assert (~view["rid"].isin(state["rid"])).any() and view["rid"].isin(state["rid"]).any()


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("held,n", [(3, 3), (2, 4), (1, 4), (3, 4)])
def test_the_state_update_with_the_state_where_it_lies_equals_the_full_join(persistent, held, n):
    """The pk step given the state's buckets (``state_buckets`` = ``held``): when ``n`` is a
    multiple of them the state is not shuffled (the same buckets declared, or each split in
    place), only the posteriors are; otherwise it is. Always the rows, values, dtypes and
    order of the full outer join."""
    policy = POLICY.with_overrides(persistent_groups=persistent)
    rng = np.random.default_rng(31 + persistent + 2 * held + 5 * n)
    state, posts = random_case(rng, policy, 150, 70, False)
    expected = oracle(state, posts, policy, 4, n)
    lazy = next_state(
        in_buckets(state, policy, held), dd.from_pandas(posts, npartitions=2), policy, WINDOW, 4, n, held
    )
    assert lazy.optimize().expr.tree_repr().count("Shuffle:") == (1 if n % held == 0 else 2)
    assert lazy.npartitions == n
    got = lazy.compute(scheduler="sync").reset_index(drop=True)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    if held == 1:  # a pandas state (a first release's, or an in-process one's) is one bucket of 1
        lazy = next_state(state, dd.from_pandas(posts, npartitions=2), policy, WINDOW, 4, n)
        assert lazy.optimize().expr.tree_repr().count("Shuffle:") == 1
        pd.testing.assert_frame_equal(
            lazy.compute(scheduler="sync").reset_index(drop=True), expected, check_exact=True
        )


@pytest.mark.parametrize("string_ids", [False, True])
@pytest.mark.parametrize("n", [1, 2, 4])
def test_the_state_order_is_bucket_then_id(string_ids, n):
    """Positions of ids in the state's order: by bucket, then id (one bucket: by id alone)."""
    rng = np.random.default_rng(n)
    values = rng.permutation(500)[:200]
    ids = pd.Series(values.astype(str) if string_ids else values)
    if string_ids:
        ids = ids.astype("string[pyarrow]")
    got = state_order(ids, n)
    keys = [(int(b), v) for b, v in zip(state_buckets(ids, n), ids.tolist())]
    assert [keys[i] for i in got] == sorted(keys)
    in_order = ids.iloc[got].reset_index(drop=True)
    assert np.array_equal(state_order(in_order, n), np.arange(len(ids)))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint64"])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("n", [1, 3, 8, 70_000])
def test_the_state_order_of_integer_ids_is_the_stable_one(dtype, ties, n):
    """Integer ids: the positions of a stable sort by (bucket, id), rows of equal ids in the
    order they came (an unstable sort of ties would reorder them); 70,000 buckets are more
    than a 16-bit bucket key holds."""
    rng = np.random.default_rng(n + 7 * ties)
    values = rng.choice(10**6, size=3000, replace=False)
    if ties:  # a few ids twice or three times, far apart
        values[rng.choice(3000, size=300, replace=False)] = values[:300]
    ids = pd.Series(values.astype(dtype))
    buckets = state_buckets(ids, n) if n > 1 else np.zeros(len(ids), dtype=np.int64)
    expected = sorted(range(len(ids)), key=lambda i: (int(buckets[i]), int(values[i]), i))
    got = state_order(ids, n)
    assert got.dtype == np.int64
    assert got.tolist() == expected


PANDAS_3 = int(pd.__version__.split(".")[0]) >= 3


def _one_array(frame: pd.DataFrame, columns: list[str]) -> bool:
    """Whether the columns are all the same array in memory (written and held once)."""
    first = frame[columns[0]].to_numpy()
    return all(np.shares_memory(first, frame[c].to_numpy()) for c in columns[1:])


@pytest.mark.parametrize("nbuckets", [1, 3])
def test_the_window_slots_no_one_filled_are_held_once_and_chain_like_the_full_join(nbuckets, tmp_path):
    # three releases of a window of 3 from the empty state: some respondents return, some are
    # away, some are new; each new state equals the full join of the one before (materialised)
    window, rng = 3, np.random.default_rng(5)
    m = len(POLICY.sensitive_domain)
    state = empty_state(POLICY, window)
    names = [[f"pk{w}__{v}" for v in POLICY.sensitive_domain] for w in range(window)]
    for index, (unfilled, who) in enumerate([(2, range(0, 50)), (1, range(20, 80)), (0, range(60, 90))], 1):
        ids = rng.permutation(np.asarray(who, dtype=np.int64))
        posts = posterior_table(
            ids, rng.integers(0, 2**62, size=len(ids)), rng.dirichlet(np.ones(m), len(ids)), POLICY
        )
        plain = state.copy(deep=True)  # the same values, every column written out
        new_adv = advance_state(
            nullable_state(plain).merge(posts, on="rid", how="outer"), POLICY, window, index
        )
        expected = new_adv.take(np.lexsort((new_adv["rid"], state_buckets(new_adv["rid"], nbuckets))))
        got = next_state(state, posts, POLICY, window, index, nbuckets)
        pd.testing.assert_frame_equal(got, expected.reset_index(drop=True), check_exact=True)
        empty_slots = [c for w in range(unfilled) for c in names[w]]
        assert got[empty_slots].isna().all().all()
        if PANDAS_3 and empty_slots:  # pandas 2's concat copies every block (written out, as before)
            assert _one_array(got, empty_slots)  # NaN in every row: held once
            assert not _one_array(got, names[-1][:1] + empty_slots[:1])
        write_parquet(tmp_path / "a.parquet", got)
        write_parquet(tmp_path / "b.parquet", expected.reset_index(drop=True))
        assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
        state = got
