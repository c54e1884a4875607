"""Exact deductions (issue 11, item 2): hand-computed cases, brute-force oracles, and the
never-exclude-the-truth property on real releases."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpriv.adversary import ObservedRelease, chain_support, deduce, group_feasibility
from dpriv.adversary._assign import feasible_edges
from dpriv.datasets import VALUES, medical_history, medical_knowledge, write_history
from dpriv.errors import InputError
from dpriv.knowledge.tables import ClassMap, MarkovTables
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

ONE_CLASS = ClassMap(("x",), ((),), (True,))


def tables(values, order0, order1):
    """Order-1 tables of one class from {value: p} dicts (a missing context: zero row)."""
    m = len(values)
    t0 = np.zeros((1, 1, m))
    for v, p in order0.items():
        t0[0, 0, values.index(v)] = p
    t1 = np.zeros((1, m, m))
    for ctx, row in order1.items():
        for v, p in row.items():
            t1[0, values.index(ctx), values.index(v)] = p
    return MarkovTables(tuple(values), ONE_CLASS, [t0, t1])


def release(index, values, groups, *, suppressed=0):
    """ObservedRelease from [(respondent, group, true value), ...]."""
    rid, g, s = (np.array(col) for col in zip(*groups))
    s = np.array([values.index(v) for v in s])
    n_groups = g.max() + 1
    counts = np.bincount(g * len(values) + s, minlength=n_groups * len(values)).reshape(n_groups, -1)
    return ObservedRelease(index, rid, g, counts, np.zeros(len(rid), np.int64), s, suppressed)


def as_sets(allowed, values):
    return ["".join(values[k] for k in np.flatnonzero(row)) for row in allowed]


# --------------------------------------------------------------------------- group counts


def test_group_of_three_with_one_member_known_not_a():
    # counts {a: 2, b: 1}; member 0 cannot be a => she is b, the two others are a
    allowed = np.array([[False, True], [True, True], [True, True]])
    out = group_feasibility(np.zeros(3, np.int64), np.array([[2, 1]]), allowed)
    assert as_sets(out, "ab") == ["b", "a", "a"]


def test_alternating_cycle_keeps_both_values_and_fixes_the_third():
    # {a, b, c} once each; members 0 and 1 can only be a or b => member 2 is c, 0/1 stay open
    allowed = np.array([[True, True, False], [True, True, False], [True, True, True]])
    out = group_feasibility(np.zeros(3, np.int64), np.array([[1, 1, 1]]), allowed)
    assert as_sets(out, "abc") == ["ab", "ab", "c"]


def test_groups_are_independent_in_one_call():
    group = np.array([0, 0, 1, 1, 1])
    counts = np.array([[1, 1, 0], [0, 2, 1]])
    allowed = np.ones((5, 3), bool)
    allowed[0, 0] = False  # group 0: member 0 not a => b, member 1 => a
    allowed[3, 2] = allowed[4, 2] = False  # group 1: c goes to member 2
    out = group_feasibility(group, counts, allowed)
    assert as_sets(out, "abc") == ["b", "a", "c", "b", "b"]


def test_contradiction_raises():
    allowed = np.array([[True, False], [True, False]])
    with pytest.raises(InputError, match="no complete assignment"):
        group_feasibility(np.zeros(2, np.int64), np.array([[1, 1]]), allowed)


def brute_force(group_counts, allowed):
    """Values each member takes in some assignment: every permutation of the multiset."""
    multiset = [s for s, c in enumerate(group_counts) for _ in range(c)]
    out = np.zeros_like(allowed)
    for perm in set(itertools.permutations(multiset)):
        if all(allowed[b, s] for b, s in enumerate(perm)):
            out[np.arange(len(perm)), perm] = True
    return out


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_group_feasibility_equals_brute_force(data):
    n_groups = data.draw(st.integers(1, 3))
    m = data.draw(st.integers(1, 4))
    truth, group = [], []
    for g in range(n_groups):
        size = data.draw(st.integers(1, 6))
        truth += data.draw(st.lists(st.integers(0, m - 1), min_size=size, max_size=size))
        group += [g] * size
    truth, group = np.array(truth), np.array(group)
    counts = np.bincount(group * m + truth, minlength=n_groups * m).reshape(n_groups, m)
    noise = np.array(data.draw(st.lists(st.booleans(), min_size=truth.size * m, max_size=truth.size * m)))
    allowed = noise.reshape(truth.size, m)
    allowed[np.arange(truth.size), truth] = True
    got = group_feasibility(group, counts, allowed)
    for g in range(n_groups):
        rows = group == g
        np.testing.assert_array_equal(got[rows], brute_force(counts[g], allowed[rows]))


def test_feasible_edges_with_capacities():
    # 3 left nodes, right node 0 takes 2, right node 1 takes 1; left 2 only fits right 1
    left = np.array([0, 0, 1, 1, 2])
    right = np.array([0, 1, 0, 1, 1])
    assert feasible_edges(left, right, 3, np.array([2, 1])).tolist() == [True, False, True, False, True]


# --------------------------------------------------------------------------- the model's support


def test_chain_support_of_the_medical_model():
    sup = chain_support(medical_knowledge(0))
    assert sup.n_states == 294 and sup.contexts[0] == ()
    assert sup.edge_allowed.shape[0] == 1  # det < 1: every class has the same support
    first = sup.value[sup.src == 0]
    assert set(first) == set(range(17))  # a first exam is never terminal
    dis = np.array([v.split("_")[0] for v in VALUES])
    for s, v in zip(sup.src, sup.value):
        ctx = sup.contexts[s]
        assert all(VALUES[c] not in ("deceased", "discharged") for c in ctx)  # nothing after an exit
        if ctx and v < 17:
            assert dis[ctx[-1]] == dis[v]  # one disease per run
            assert abs(int(VALUES[ctx[-1]].split("_")[1]) - int(VALUES[v].split("_")[1])) <= 1
    exits = [k for k, c in enumerate(sup.contexts) if c and c[-1] >= 17]
    assert sup.dead_end[0, exits].all() and not sup.dead_end[0, 0]
    assert [VALUES[v] for v in np.flatnonzero(sup.exit_value)] == ["deceased", "discharged"]


# --------------------------------------------------------------------------- hand-made histories

# a -> b -> c -> a (deterministic); a first exam is a or c
CYCLE = tables("abc", {"a": 0.5, "c": 0.5}, {"a": {"b": 1.0}, "b": {"c": 1.0}, "c": {"a": 1.0}})


def cycle_history(supp2):
    r1 = release(1, "abc", [(1, 0, "a")])
    r2 = release(2, "abc", [(3, 0, "c")], suppressed=supp2)
    return r1, r2


def test_consecutive_releases_are_consecutive_exams():
    # nothing suppressed: r1's exam at 3 follows a... via her exam at 2? She is absent from
    # release 2 and nothing was suppressed there, so her exam at 3 is her 2nd: b. r2 is new.
    r1, r2 = cycle_history(0)
    r3 = release(3, "abc", [(1, 0, "b"), (2, 0, "c")])
    d = deduce([r1, r2, r3], CYCLE, attendance=None)
    assert as_sets(d.allowed[2], "abc") == ["b", "c"]


def test_a_suppressing_view_in_between_opens_the_gap():
    # view 2 suppressed 2 tuples: r1 may have had a hidden exam (b) => b or c at 3; r2 may
    # have had one too => a, b or c; counts {b, c}: nothing certain
    r1, r2 = cycle_history(2)
    r3 = release(3, "abc", [(1, 0, "c"), (2, 0, "b")])
    d = deduce([r1, r2, r3], CYCLE, attendance=0.5)
    assert as_sets(d.allowed[2], "abc") == ["bc", "bc"]
    assert d.n_certain.tolist() == [1, 1, 0]
    # attendance 1 and view 2 certainly admitted a newcomer (r3): r1, alive, was examined at
    # 2 (suppressed) => exactly one hidden exam => c, and r2 is b
    d = deduce([r1, r2, r3], CYCLE, attendance=1.0)
    assert d.admits_new.tolist() == [True, True, False]
    assert as_sets(d.allowed[2], "abc") == ["c", "b"]


def test_an_unlisted_release_counts_as_a_possible_gap():
    r1, _ = cycle_history(0)
    r3 = release(3, "abc", [(1, 0, "c"), (2, 0, "b")])
    d = deduce([r1, r3], CYCLE, attendance=1.0)  # release 2 unknown: 0 or 1 hidden exam
    assert as_sets(d.allowed[1], "abc") == ["bc", "bc"]


# x is terminal: nothing follows it
EXIT = tables("ax", {"a": 0.7, "x": 0.3}, {"a": {"a": 0.6, "x": 0.4}})


def exit_history(supp1=0):
    r1 = release(1, "ax", [(1, 0, "a"), (2, 0, "x")], suppressed=supp1)
    r2 = release(2, "ax", [(1, 0, "a"), (3, 0, "a")])
    return [r1, r2]


def test_nothing_after_a_terminal_value():
    d = deduce(exit_history(), EXIT, attendance=None)
    assert as_sets(d.allowed[0], "ax") == ["a", "x"]  # r1 is back at 2, so she is not x
    assert d.n_certain.tolist() == [2, 2] and d.n_exit.tolist() == [1, 0] and d.n_presence.tolist() == [0, 0]


def test_presence_marks_exits_only_when_certain():
    d = deduce(exit_history(), EXIT, attendance=1.0)
    assert d.exited[0].tolist() == [False, True] and d.n_presence.tolist() == [1, 0]
    assert d.rounds >= 1 and d.seconds >= 0
    # release 1 suppressed a tuple and release 2 has only one first-time respondent: she may
    # be that suppressed one, the view-size cap may have bound, no certain exit
    d = deduce(exit_history(supp1=1), EXIT, attendance=1.0)
    assert not d.exited[0].any() and d.admits_new.tolist() == [True, False]
    # attendance < 1: absence says nothing
    assert not deduce(exit_history(), EXIT, attendance=0.9).exited[0].any()


def test_presence_contradiction_raises():
    # r2 absent from a view that examined every active respondent, yet her value is not terminal
    r1 = release(1, "ax", [(1, 0, "a"), (2, 0, "a")])
    r2 = release(2, "ax", [(1, 0, "a"), (3, 0, "a")])
    with pytest.raises(InputError, match="contradict"):
        deduce([r1, r2], EXIT, attendance=1.0)


def test_contradiction_messages_name_no_respondent():
    # ids are never printed (README): neither the tuple left without a value nor a doubled one
    r1 = release(1, "ax", [(7001, 0, "a"), (7002, 0, "a")])
    r2 = release(2, "ax", [(7001, 0, "a"), (7003, 0, "a")])
    with pytest.raises(InputError, match="release 1: a released tuple has no possible value") as e:
        deduce([r1, r2], EXIT, attendance=1.0)
    twice = release(1, "ax", [(7001, 0, "a"), (7001, 0, "x")])
    with pytest.raises(InputError, match="a respondent has two tuples in release 1") as f:
        deduce([twice], EXIT, attendance=None)
    assert "700" not in str(e.value) + str(f.value)


def test_releases_out_of_order_are_refused():
    r1, r2 = exit_history()
    with pytest.raises(InputError, match="increasing"):
        deduce([r2, r1], EXIT, attendance=None)
    assert deduce([], EXIT, attendance=None).n_certain.size == 0
    twice = release(1, "ax", [(1, 0, "a"), (1, 0, "x")])
    with pytest.raises(InputError, match="two tuples"):
        deduce([twice], EXIT, attendance=None)


# --------------------------------------------------------------------------- the truth is never excluded


def own_releases(mh, rng, *, supp_rate, max_group):
    """Release every view with a random suppression and random small groups."""
    code = {v: k for k, v in enumerate(mh.values)}
    out = []
    for i, view in mh.history.groupby("view", sort=True):
        keep = rng.random(len(view)) >= supp_rate
        v = view[keep]
        n = len(v)
        sizes = []
        while sum(sizes) < n:
            sizes.append(int(rng.integers(1, max_group + 1)))
        group = np.repeat(np.arange(len(sizes)), sizes)[:n]
        group = group[rng.permutation(n)]
        s = v["exam_result"].map(code).to_numpy()
        g = len(sizes)
        counts = np.bincount(group * 19 + s, minlength=g * 19).reshape(g, 19)
        out.append(
            ObservedRelease(
                int(i),
                v["respondent_id"].to_numpy(),
                group,
                counts,
                mh.classmap.classify(v),
                s,
                int((~keep).sum()),
            )
        )
    return out


def assert_truth_kept(releases, d):
    for r, a in zip(releases, d.allowed):
        assert a[np.arange(len(r.truth)), r.truth].all(), f"release {r.index}: the truth was excluded"
        one = a.sum(axis=1) == 1
        assert (a[one].argmax(axis=1) == r.truth[one]).all()


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    attendance=st.sampled_from([1.0, 0.6]),
    supp_rate=st.sampled_from([0.0, 0.0, 0.05, 0.3]),
    max_group=st.integers(1, 8),
    det=st.sampled_from([0.9, 1.0]),
)
def test_own_groupings_never_exclude_the_truth(seed, attendance, supp_rate, max_group, det):
    mh = medical_history(n_views=6, view_size=60, attendance=attendance, det=det, seed=seed)
    releases = own_releases(mh, np.random.default_rng(seed), supp_rate=supp_rate, max_group=max_group)
    for att in {attendance, None}:
        d = deduce(releases, mh.knowledge, attendance=att)
        assert_truth_kept(releases, d)
        if att is None:
            assert not any(e.any() for e in d.exited)


def observed_from_ledger(ledger, history, policy, classmap):
    """What the §1.1 adversary sees of every committed release (membership from the state)."""
    code = {v: k for k, v in enumerate(policy.sensitive_domain)}
    out = []
    for entry in ledger.committed():
        i = entry["index"]
        view = history[history[policy.time] == i]
        state = ledger.read_state(i)
        mem = state.loc[state["last_release"] == i, [policy.id, "last_group"]]
        mem = mem.merge(view, on=policy.id, how="left", validate="one_to_one")
        labels, group = np.unique(mem["last_group"].to_numpy(), return_inverse=True)
        # int64 also for a fully suppressed release (pandas 3 maps an empty str column to str)
        s = mem[policy.sensitive].map(code).to_numpy(dtype=np.int64)
        m = len(code)
        counts = np.bincount(group * m + s, minlength=labels.size * m).reshape(labels.size, m)
        released = ledger.read_view(i)
        r_counts = pd.crosstab(released["qi_group"], released[policy.sensitive]).reindex(
            index=labels, columns=list(policy.sensitive_domain), fill_value=0
        )
        assert (r_counts.to_numpy() == counts).all()  # the published counts
        out.append(
            ObservedRelease(
                int(i),
                mem[policy.id].to_numpy(),
                group.astype(np.int64),
                counts,
                classmap.classify(mem),
                s,
                len(view) - len(released),
            )
        )
    return out


@pytest.fixture(scope="module")
def dpriv_releases(tmp_path_factory):
    out = tmp_path_factory.mktemp("ded")
    runs = []
    for seed, attendance, methods in ((1, 1.0, ("jsreduce", "mondrian-l")), (2, 0.5, ("jsreduce",))):
        mh = medical_history(n_views=4, view_size=150, attendance=attendance, seed=seed)
        path = write_history(out / f"h{seed}", mh, policy_extra={"privacy": {"max_suppression": 1.0}})
        for method in methods:
            t, j = (0.5, 0.8) if method == "jsreduce" else (1.0, 1.0)
            policy = ReleasePolicy.from_toml(path, t=t, j=j, k=3, npartitions=1, max_suppression=1.0)
            led = release_history(mh.history, policy, out / f"led-{seed}-{method}-{t}", method=method)
            runs.append((mh, attendance, observed_from_ledger(led, mh.history, policy, mh.classmap)))
    return runs


@pytest.mark.slow
def test_dpriv_releases_never_exclude_the_truth(dpriv_releases):
    total = 0
    for mh, attendance, releases in dpriv_releases:
        d = deduce(releases, mh.knowledge, attendance=attendance)
        assert_truth_kept(releases, d)
        total += int(d.n_certain.sum())
    assert total > 0  # something is deduced, or the test proves nothing
