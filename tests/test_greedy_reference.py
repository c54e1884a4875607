"""The compiled greedy scan and attach against plain-Python statements of their rules.

The kernels of :mod:`dpriv.anonymity.generalize` keep work from one step to the next (the
open group's violation, which groups keep t with one more tuple of each value); the
references below recompute everything at every step, exactly as docs/algorithms.md §2.2
states the rules, with the same arithmetic (the exact integer EMD and the same JS sums), so
the group of every tuple and every updated statistic must be equal bit for bit.
"""

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpriv.anonymity.generalize import _PULL_SCAN, UNGROUPED, attach_aside, entropies_kernel, greedy_scan
from dpriv.divergence import EQUAL, ORDERED, emd_num_den, emd_within, js_from_sums, js_from_sums_with
from dpriv.kernel_args import kernel_input

EMD = emd_num_den.py_func
JS = js_from_sums.py_func
JS_WITH = js_from_sums_with.py_func
TINY = np.finfo(np.float64).tiny


def TV(counts, sum_p, u):  # noqa: N802 - as EMD and JS
    """RBK-closeness distance from scratch: half the L1 distance of counts and prior sums, / u."""
    d = 0.0
    for a, b in zip(counts, sum_p, strict=True):
        d += abs(a - b)
    return 0.5 * d / u


def _violation(counts, u, sum_p, sum_h, view, t, j, c, ground):
    """max(0, EMD - t) (at least TINY when over) + max(0, JS - j) + max(0, TV - c) of a group,
    from its sums (the TV term only for c < 1: c = 1 is the bound's "off")."""
    num, den = EMD(counts, u, view, int(view.sum()), ground)
    js = JS(sum_p, sum_h, u, 2.0)
    v = 0.0 if emd_within.py_func(num, den, t) else max(num / den - t, TINY)
    tv = TV(counts, sum_p, u) if c < 1.0 else 0.0
    return v + (js - j if js > j else 0.0) + (tv - c if tv > c else 0.0)


class OpenGroup:
    """The open group's running sums, updated as the kernel updates them (add, remove)."""

    def __init__(self, m):
        self.members, self.counts = [], np.zeros(m, np.int64)
        self.sum_p, self.sum_h = np.zeros(m), 0.0

    def add(self, y, s, priors, ent):
        self.members.append(y)
        self.counts[s[y]] += 1
        self.sum_p, self.sum_h = self.sum_p + priors[y], self.sum_h + ent[y]

    def violation(self, view, t, j, c, ground, extra=None):
        """The violation now, or with ``extra`` = (value, prior, entropy) added, from scratch."""
        counts, sum_p, sum_h, u = self.counts.copy(), self.sum_p, self.sum_h, len(self.members)
        if extra is not None:
            counts[extra[0]] += 1
            sum_p, sum_h, u = sum_p + extra[1], sum_h + extra[2], u + 1
        return _violation(counts, u, sum_p, sum_h, view, t, j, c, ground) if u else np.inf


def greedy_reference(s, priors, view, k, t, j, c, ground, cap, wait):
    """The greedy scan with deferral and cap (docs/algorithms.md §2.2, docs/findings.md
    "defer"), the open group's violation recomputed at every step: (group, aside, closed
    groups, step of the last close)."""
    n, m = priors.shape
    ent = entropies_kernel(priors, 2.0)
    group = np.full(n, UNGROUPED, dtype=np.int64)
    open_, queue, aside = OpenGroup(m), [], []  # queue entries: [position, step deferred, pulled]
    gid, last_close, size = 0, -1, int(view.sum())

    def worsens(x):  # would x push the open group away from (E9)?
        counts, u = open_.counts.copy(), len(open_.members)
        counts[s[x]] += 1
        num, den = EMD(counts, u + 1, view, size, ground)
        if not emd_within.py_func(num, den, t) and (counts[s[x]] - 1) * size >= view[s[x]] * u:
            return True
        js1 = JS_WITH(open_.sum_p, 1.0, priors[x], open_.sum_h + ent[x], u + 1, 2.0)
        if js1 > j and js1 > JS(open_.sum_p, open_.sum_h, u, 2.0):
            return True
        tv1 = TV(counts, open_.sum_p + priors[x], u + 1)
        return c < 1.0 and tv1 > c and tv1 > TV(open_.counts, open_.sum_p, u)

    for step in range(n):
        while queue and (queue[0][2] or step - queue[0][1] > wait):
            if not queue[0][2]:
                aside.append(queue[0][0])
            queue.pop(0)
        if wait > 0 and open_.members and worsens(step):
            queue.append([step, step, False])
        else:
            open_.add(step, s, priors, ent)
        v0, scanned = open_.violation(view, t, j, c, ground), 0
        for entry in reversed(queue):  # the most recent deferred tuples first
            if v0 <= 0.0 or scanned >= _PULL_SCAN:
                break
            if entry[2]:
                continue
            scanned += 1
            y = entry[0]
            v1 = open_.violation(view, t, j, c, ground, (s[y], priors[y], ent[y]))
            if v1 < v0 and not worsens(y):
                open_.add(y, s, priors, ent)
                entry[2], v0 = True, v1
        if len(open_.members) >= k and v0 == 0.0:
            group[open_.members] = gid
            gid, last_close, open_ = gid + 1, step, OpenGroup(m)
        elif cap > 0 and len(open_.members) >= cap:  # set aside the member whose removal helps most
            u, best, best_v = len(open_.members), 0, np.inf
            for a, y in enumerate(open_.members):
                counts = open_.counts.copy()
                counts[s[y]] -= 1
                sums = (open_.sum_p - priors[y], open_.sum_h - ent[y])
                v = _violation(counts, u - 1, *sums, view, t, j, c, ground)
                if v < best_v:
                    best, best_v = a, v
            y = open_.members[best]
            open_.members[best] = open_.members[-1]
            open_.members.pop()
            open_.counts[s[y]] -= 1
            open_.sum_p, open_.sum_h = open_.sum_p - priors[y], open_.sum_h - ent[y]
            aside.append(y)
    aside += [e[0] for e in queue if not e[2]] + open_.members
    return group, aside, gid, last_close


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 60),
    m=st.integers(2, 4),
    k=st.integers(1, 4),
    t=st.sampled_from([0.1, 0.25, 0.4, 1.0]),
    j=st.sampled_from([0.05, 0.2, 0.6, 2.0]),
    c=st.sampled_from([1.0, 0.7, 0.4, 0.2]),
    ground=st.sampled_from([EQUAL, ORDERED]),
    cap=st.sampled_from([0, 2, 3, 6]),
    wait=st.sampled_from([0, 1, 2, 8]),
    seed=st.integers(0, 2**32 - 1),
)
# a deferral right after the cap set a member aside: the step must recompute the violation
@example(n=9, m=2, k=3, t=0.1, j=0.05, c=1.0, ground=EQUAL, cap=2, wait=2, seed=139)
def test_greedy_scan_equals_its_rule_recomputed_at_every_step(n, m, k, t, j, c, ground, cap, wait, seed):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, m, n).astype(np.int64)
    priors = rng.dirichlet(np.full(m, 0.5), n)
    priors[rng.random(n) < 0.2] = np.eye(m)[rng.integers(0, m)]  # some sharp priors: j binds
    view = np.bincount(s, minlength=m).astype(np.int64) + rng.integers(0, 3, m)
    # read-only, as the release passes them (dpriv.kernel_args: the kernel's one signature)
    s, view = kernel_input(s, np.int64), kernel_input(view, np.int64)
    priors = kernel_input(priors, np.float64)
    group = np.full(n, UNGROUPED, dtype=np.int64)
    ent = entropies_kernel(priors, 2.0)
    aside = np.empty(n, np.int64)
    scan = greedy_scan(
        np.arange(n),
        s,
        priors,
        ent,
        view,
        int(view.sum()),
        k,
        t,
        j,
        c,
        ground,
        2.0,
        cap,
        wait,
        group,
        0,
        aside,
    )
    expected, expected_aside, expected_groups, expected_last = greedy_reference(
        s, priors, view, k, t, j, c, ground, cap, wait
    )
    np.testing.assert_array_equal(group, expected)
    np.testing.assert_array_equal(aside[: scan.n_aside], expected_aside)
    assert (scan.next_gid, scan.last_close) == (expected_groups, expected_last)


def attach_reference(stats, s, priors, ent, coords, xpos, view, t, j, c, ground, reach):
    """Each leftover, in order, joins among the ``reach`` groups nearest in Hilbert order
    (nearer first, the left one on a tie) the first of least box growth that keeps t, j and
    RBK-closeness c (when below 1) with it, every EMD computed afresh; returns the assignment
    and the updated statistics."""
    counts, sizes, sum_p, sum_h, lo, hi, pos = (a.copy() for a in stats)
    size, assign = int(view.sum()), np.full(len(s), UNGROUPED, dtype=np.int64)
    for x in range(len(s)):
        walk = sorted(range(len(pos)), key=lambda g: (abs(int(xpos[x]) - int(pos[g])), pos[g] > xpos[x]))
        best, best_cost = -1, np.inf
        for g in walk[:reach]:
            grown = np.maximum(hi[g], coords[x]) - np.minimum(lo[g], coords[x]) - (hi[g] - lo[g])
            cost = 0.0
            for d in grown:  # summed in the QIs' order, as the kernel does
                cost += d
            after = counts[g].copy()
            after[s[x]] += 1
            num, den = EMD(after, sizes[g] + 1, view, size, ground)
            fits = (
                emd_within.py_func(num, den, t)
                and JS_WITH(sum_p[g], 1.0, priors[x], sum_h[g] + ent[x], sizes[g] + 1, 2.0) <= j
                and (c >= 1.0 or TV(after, sum_p[g] + priors[x], sizes[g] + 1) <= c)
            )
            if fits and cost < best_cost:
                best, best_cost = g, cost
        if best >= 0:
            assign[x] = best
            counts[best, s[x]] += 1
            sizes[best] += 1
            sum_p[best] += priors[x]
            sum_h[best] += ent[x]
            lo[best], hi[best] = np.minimum(lo[best], coords[x]), np.maximum(hi[best], coords[x])
    return assign, (counts, sizes, sum_p, sum_h, lo, hi, pos)


@settings(max_examples=200, deadline=None)
@given(
    n_groups=st.integers(1, 12),
    n_left=st.integers(1, 25),
    m=st.integers(2, 4),
    t=st.sampled_from([0.1, 0.25, 0.5, 1.0]),
    j=st.sampled_from([0.05, 0.3, 2.0]),
    c=st.sampled_from([1.0, 0.6, 0.3]),
    ground=st.sampled_from([EQUAL, ORDERED]),
    reach=st.sampled_from([1, 2, 4, 256]),
    seed=st.integers(0, 2**32 - 1),
)
def test_attach_equals_its_rule_with_every_emd_afresh(n_groups, n_left, m, t, j, c, ground, reach, seed):
    rng = np.random.default_rng(seed)
    n_qi = 2
    sizes = rng.integers(1, 6, n_groups).astype(np.int64)
    counts = np.stack([np.bincount(rng.integers(0, m, z), minlength=m) for z in sizes]).astype(np.int64)
    sum_p = np.stack([rng.dirichlet(np.ones(m), z).sum(axis=0) for z in sizes])
    sum_h = rng.random(n_groups) * sizes
    lo = rng.random((n_groups, n_qi)) * 0.5
    hi = lo + rng.random((n_groups, n_qi)) * 0.5
    lo[rng.random(n_groups) < 0.3] = 0.0  # some boxes already cover a leftover: growth 0
    hi[rng.random(n_groups) < 0.3] = 1.0
    every = rng.permutation(n_groups + n_left)  # distinct Hilbert positions
    pos, xpos = np.sort(every[:n_groups]).astype(np.int64), np.sort(every[n_groups:]).astype(np.int64)
    pos = rng.permutation(pos)  # groups in label order, not in Hilbert order
    s = rng.integers(0, m, n_left).astype(np.int64)
    priors = rng.dirichlet(np.full(m, 0.7), n_left)
    coords = np.round(rng.random((n_left, n_qi)), 1)
    view = counts.sum(axis=0) + np.bincount(s, minlength=m) + rng.integers(0, 3, m)
    # read-only, as the repair passes them (dpriv.kernel_args: the kernel's one signature)
    s, view = kernel_input(s, np.int64), kernel_input(view, np.int64)
    priors = kernel_input(priors, np.float64)
    coords, xpos = kernel_input(coords, np.float64), kernel_input(xpos, np.int64)
    ent = entropies_kernel(priors, 2.0)
    stats = (counts, sizes, sum_p, sum_h, lo, hi, pos)
    expected, expected_stats = attach_reference(
        stats, s, priors, ent, coords, xpos, view, t, j, c, ground, reach
    )
    got = tuple(a.copy() for a in stats)
    assign = np.full(n_left, UNGROUPED, dtype=np.int64)
    attach_aside(
        *got, s, priors, ent, coords, xpos, assign, view, int(view.sum()), t, j, c, ground, 2.0, reach
    )
    np.testing.assert_array_equal(assign, expected)
    for a, b in zip(got, expected_stats, strict=True):
        np.testing.assert_array_equal(a, b)
