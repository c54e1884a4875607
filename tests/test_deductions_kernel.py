"""The compiled passes of the exact deductions (issue 12 tooling) against plain oracles: the chain
pass against the forward-backward over Python sets that dpriv.adversary.chain_kernel's module doc
states, on random graphs, supports, gaps and exits (more than 64 respondents: several words); the
group pass against the sparse max flow + SCCs of feasible_edges, contradictions included."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpriv.adversary._assign import NoAssignment, feasible_edges, group_feasibility
from dpriv.adversary.chain_kernel import chain_pass
from dpriv.adversary.deductions import deduce
from dpriv.datasets import medical_history
from tests.test_deductions import EXIT, as_sets, own_releases, release


def plain_chain(rows, lo, hi, exited, pat, allowed, src, value, dst, edge_ok, dead):
    """One respondent's forward-backward over Python sets (chain_kernel's module doc); narrows
    ``allowed`` in place."""
    edges = list(zip(src.tolist(), value.tolist(), dst.tolist()))
    n_states = dead.shape[1]

    def reach(x, lo_, hi_, pattern, forward):
        out, cur = (set(x) if lo_ == 0 else set()), set(x)
        for j in range(1, hi_ + 1):
            if forward:
                cur = {d for e, (s, _, d) in enumerate(edges) if s in cur and edge_ok[pattern, e]}
            else:
                cur = {s for e, (s, _, d) in enumerate(edges) if d in cur and edge_ok[pattern, e]}
            if j >= lo_:
                out |= cur
        return out

    pre, post = [], []
    for k, t in enumerate(rows):
        x = post[-1] if k else {0}
        pre.append(reach(x, lo[t], hi[t], pat[t], True))
        post.append(
            {d for e, (s, v, d) in enumerate(edges) if s in pre[-1] and allowed[t, v] and edge_ok[pat[t], e]}
        )
    back = [set()] * len(rows)
    for k in range(len(rows) - 1, -1, -1):
        t = rows[k]
        b = {s for s in range(n_states) if dead[pat[t], s]} if exited[t] else set(range(n_states))
        if k + 1 < len(rows):
            j = rows[k + 1]
            y = {
                s
                for e, (s, v, d) in enumerate(edges)
                if allowed[j, v] and d in back[k + 1] and edge_ok[pat[j], e]
            }
            b &= reach(y, lo[j], hi[j], pat[t], False)
        back[k] = b
        keep = {v for e, (s, v, d) in enumerate(edges) if s in pre[k] and d in b and edge_ok[pat[t], e]}
        for v in range(allowed.shape[1]):
            allowed[t, v] &= v in keep


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_states=st.integers(1, 6),
    m=st.integers(1, 4),
    n_pat=st.integers(1, 3),
    n_resp=st.sampled_from([1, 5, 63, 64, 65, 140]),
    max_hi=st.integers(0, 3),
)
def test_chain_pass_equals_the_plain_forward_backward(seed, n_states, m, n_pat, n_resp, max_hi):
    rng = np.random.default_rng(seed)
    pairs = [(s, v) for s in range(n_states) for v in range(m)]
    keep = rng.random(len(pairs)) < 0.7
    src = np.array([s for (s, v), k in zip(pairs, keep) if k], np.int64)
    value = np.array([v for (s, v), k in zip(pairs, keep) if k], np.int64)
    dst = rng.integers(0, n_states, src.size).astype(np.int64)
    edge_ok = rng.random((n_pat, src.size)) < 0.8
    dead = rng.random((n_pat, n_states)) < 0.4
    lengths = rng.integers(1, 6, n_resp)
    n = int(lengths.sum())
    perm = rng.permutation(n)  # tuples of one respondent anywhere in the arrays
    hstart = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    hi = rng.integers(0, max_hi + 1, n).astype(np.int64)
    lo = np.minimum(rng.integers(0, max_hi + 1, n), hi).astype(np.int64)
    exited = rng.random(n) < 0.2
    pat = rng.integers(0, n_pat, n).astype(np.int64)
    allowed = rng.random((n, m)) < 0.7
    todo = rng.random(n_resp) < 0.8
    want = allowed.copy()
    for r in np.flatnonzero(todo):
        plain_chain(
            perm[hstart[r] : hstart[r + 1]].tolist(),
            lo,
            hi,
            exited,
            pat,
            want,
            src,
            value,
            dst,
            edge_ok,
            dead,
        )
    got, changed = allowed.copy(), np.zeros(n, bool)
    chain_pass(perm, hstart, todo, lo, hi, exited, pat, got, changed, src, value, dst, edge_ok, dead)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(changed, (got != allowed).any(axis=1))


def flow_feasibility(group, counts, allowed):
    """The sparse max flow + SCCs of feasible_edges over every group at once (the oracle)."""
    m = allowed.shape[1]
    t, s = np.nonzero(allowed & (counts[group] > 0))
    ok = feasible_edges(t, group[t] * m + s, len(group), counts.ravel())
    out = np.zeros_like(allowed)
    out[t[ok], s[ok]] = True
    return out


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_groups=st.integers(1, 5),
    m=st.integers(1, 7),
    max_size=st.sampled_from([3, 12, 40]),
    density=st.sampled_from([0.2, 0.5, 0.9]),
    truthful=st.booleans(),
)
def test_group_feasibility_equals_the_sparse_max_flow(seed, n_groups, m, max_size, density, truthful):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size + 1, n_groups)
    group = rng.permutation(np.repeat(np.arange(n_groups), sizes))
    truth = rng.integers(0, m, group.size)
    counts = np.bincount(group * m + truth, minlength=n_groups * m).reshape(n_groups, m)
    allowed = rng.random((group.size, m)) < density
    if truthful:  # else the sets may contradict the counts: both say so, with the same sizes
        allowed[np.arange(group.size), truth] = True
    try:
        want = flow_feasibility(group, counts, allowed)
    except NoAssignment as err:
        with pytest.raises(NoAssignment) as got:
            group_feasibility(group, counts, allowed)
        assert str(got.value) == str(err)
        return
    np.testing.assert_array_equal(group_feasibility(group, counts, allowed), want)


def test_a_member_moved_along_a_path_of_three_values():
    # counts a, b, c once each; placed in order, member 0 takes a, member 1 b; member 2 can only
    # be a: member 0 moves to b, member 1 to c, so that all three fit (and nothing else does)
    allowed = np.array([[True, True, False], [False, True, True], [True, False, False]])
    out = group_feasibility(np.zeros(3, np.int64), np.array([[1, 1, 1]]), allowed)
    assert as_sets(out, "abc") == ["b", "c", "a"]


def test_an_exit_seen_through_two_hidden_steps():
    # release 2 suppressed someone (r1 may have had one hidden exam between 1 and 3); r1 is
    # back at 3, so neither her first exam nor a hidden one was the terminal x: her first is a
    r1 = release(1, "ax", [(1, 0, "a"), (2, 0, "x")])
    r2 = release(2, "ax", [(3, 0, "a"), (4, 0, "a")], suppressed=1)
    r3 = release(3, "ax", [(1, 0, "a"), (3, 0, "a")])
    d = deduce([r1, r2, r3], EXIT, attendance=None)
    assert as_sets(d.allowed[0], "ax") == ["a", "x"]


def plain_pass(hist, hstart, todo, lo, hi, exited, pat, allowed, changed, src, value, dst, edge_ok, dead):
    """chain_pass's plain stand-in: every respondent, whatever ``todo`` says, over Python sets."""
    before = allowed.copy()
    for r in range(hstart.size - 1):
        rows = hist[hstart[r] : hstart[r + 1]].tolist()
        plain_chain(rows, lo, hi, exited, pat, allowed, src, value, dst, edge_ok, dead)
    changed |= (allowed != before).any(axis=1)


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    attendance=st.sampled_from([1.0, 0.6]),
    supp_rate=st.sampled_from([0.0, 0.2]),
    max_group=st.integers(1, 5),
    det=st.sampled_from([0.9, 1.0]),
)
def test_deduce_equals_the_plain_fixed_point(seed, attendance, supp_rate, max_group, det):
    # the compiled passes (and the respondents they skip) against every respondent over Python
    # sets and the sparse max flow, iterated to the fixed point on tiny medical histories
    import dpriv.adversary.deductions as deductions_module

    mh = medical_history(n_views=4, view_size=12, attendance=attendance, det=det, seed=seed)
    rels = own_releases(mh, np.random.default_rng(seed), supp_rate=supp_rate, max_group=max_group)
    try:
        fast = deduce(rels, mh.knowledge, attendance=attendance)
    except NoAssignment:
        fast = None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(deductions_module, "chain_pass", plain_pass)
        patch.setattr(deductions_module, "group_feasibility", flow_feasibility)
        try:
            plain = deduce(rels, mh.knowledge, attendance=attendance)
        except NoAssignment:
            plain = None
    assert (fast is None) == (plain is None)
    if fast is not None:
        assert fast.converged and plain.converged
        for a, b in zip(fast.allowed, plain.allowed):
            np.testing.assert_array_equal(a, b)
