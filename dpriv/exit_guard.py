"""The exit guard: no QI-group holds a single kind of terminal value (issue 12, direction 5).

The exit channel (docs/algorithms.md §1.1 "Exact deductions"): a terminal value (``deceased``,
``discharged``) ends a respondent's history, so a member of a QI-group who is *seen in a later
release* certainly does not hold one. Once every other member of a group has come back, the
group's terminal values fall on the members never seen again; if those values are all of one
kind (one ``deceased`` and no ``discharged``, say), each of those members is pinned to it with
certainty (:func:`dpriv.adversary.deductions.deduce`, ``n_exit``). The defender cannot keep the
other members away from later releases, so the guard assumes the worst future (every member who
did not exit comes back) and makes sure that even then the value stays open:

    every QI-group that holds a terminal value holds at least two distinct terminal values
    (policy ``exit_values``: the values that end a history, at least two of them).

Then the members never seen again can be given any of the group's terminal values (in the
generator's model every stage can lead to each of them), so none is certain. The fact *that*
they left is not hidden (docs/results/exit-8x2000/ reports it as ``n_exited``).

How (after the grouping, before CreateQIG; :func:`guard_exits`): the groups holding one kind of
terminal value ("one-kind groups") are taken in label order; each is (1) merged into a group
holding a terminal value of another kind, among the ``REACH`` such groups with the smallest
union QI box, when the union keeps the method's criteria; else (2) its terminal tuples join such
a group, when both that group and the rest keep them; else (3) they change places with as many
non-terminal tuples of such a group (the closest priors); else (4) they are suppressed, when the
rest keeps the criteria, or (5) suppressed with the rest merged into one of the ``REACH`` nearest
groups whose terminal values are settled; else (6) it is suppressed whole. The criteria are checked
exactly: k, l and t on the integer counts, j on the members' priors summed in id order, and
mondrian-bt's (B,t)-privacy on the rows. The decisions read integer statistics and the priors of
the groups involved only, so they do not depend on the partitions:
the same bytes for any number of partitions. Only group statistics and the rows of the groups
involved reach the client. A policy without ``exit_values`` leaves every byte as it was.
"""

from __future__ import annotations

import numpy as np

from dpriv.criteria import JSBound, criteria_for
from dpriv.exit_plan import ExitGuard, Plan, Rows, one_kind_groups
from dpriv.guard_stats import boxes, group_stats, union_cost
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL

__all__ = ["REACH", "ExitGuard", "exit_codes", "guard_exits", "one_kind_groups"]

#: Complementary groups (smallest union QI box first) a one-kind group may be merged into.
REACH = 8


def exit_codes(policy: ReleasePolicy) -> np.ndarray:
    """Codes (positions in the sensitive domain) of ``policy.exit_values``, int64 (E,).

    The values are checked where the policy is built (:class:`dpriv.policy.ReleasePolicy`:
    at least two distinct ones, each in the sensitive domain once it is known).
    """
    dom = [str(v) for v in policy.sensitive_domain]
    vals = list(dict.fromkeys(str(v) for v in policy.exit_values))
    return np.array([dom.index(v) for v in vals], dtype=np.int64)


def guard_exits(
    assigned, policy: ReleasePolicy, view_counts: np.ndarray, method: str = "jsreduce", allowable=None
) -> ExitGuard:
    """Apply the exit guard (module doc) to the membership ``assigned`` of one release.

    Parameters
    ----------
    assigned : pandas or Dask DataFrame
        Kept tuples: the policy's id, QIs, ``_s`` (int64 sensitive code), ``_label`` (int64
        QI-group label) and, for JS-reduce, the ``p__<value>`` prior columns.
    policy : ReleasePolicy
        Resolved (domains known); ``exit_values`` lists the terminal values.
    view_counts : int64 array (M,)
        Sensitive counts of the whole view (the reference of t).
    method : str
        The release method whose criteria (:data:`dpriv.criteria.GUARANTEES`) a merged or
        thinned group must keep.
    allowable : callable, optional
        ``allowable(rows) -> bool`` on sorted row positions of a pandas ``assigned`` (its
        index): a further check of a merged group (mondrian-bt's (B,t)-privacy,
        :func:`dpriv.baselines.bt_allowable`).

    Returns
    -------
    ExitGuard
        ``assigned`` unchanged (the same object) when ``exit_values`` is empty.

    Raises
    ------
    PolicyError
        ``exit_values`` not in the sensitive domain, or fewer than two of them.
    """
    if not policy.exit_values:
        return ExitGuard(assigned, 0, 0, 0)
    exits = exit_codes(policy)
    stats = group_stats(assigned, policy)
    m = len(policy.sensitive_domain)
    labels = stats[LABEL].to_numpy(np.int64)
    counts = stats[[f"c{s}" for s in range(m)]].to_numpy(np.int64)
    bad = one_kind_groups(counts, exits)
    if not bad.any():
        return ExitGuard(assigned, 0, 0, 0)
    lo, hi, span = boxes(stats, policy)
    has = counts[:, exits] > 0  # (G, E)
    # candidates of each one-kind group, from the exact statistics before any merge
    cand: dict[int, np.ndarray] = {}
    near: dict[int, np.ndarray] = {}
    for g in np.flatnonzero(bad):
        other = np.flatnonzero((has & ~has[g]).any(axis=1))
        cost = union_cost(lo, hi, g, other, span)
        cand[g] = other[np.lexsort((labels[other], cost))][:REACH]
        every = np.delete(np.arange(len(labels)), g)  # for the rest of a group that loses its exits
        near[g] = every[np.lexsort((labels[every], union_cost(lo, hi, g, every, span)))][:REACH]
    crit = criteria_for(policy, method, view_counts)
    js = next((c for c in crit if isinstance(c, JSBound)), None)
    rows = None
    if js is not None or allowable is not None:
        involved = np.unique(np.concatenate([np.flatnonzero(bad), *cand.values(), *near.values()]))
        rows = Rows.fetch(assigned, policy, labels, involved, exits)
    plan = Plan(labels, counts, exits, rows, crit, allowable)
    for g in np.flatnonzero(bad):
        if plan.root(g) != g or not one_kind_groups(plan.cur[g : g + 1], exits)[0]:
            continue  # already merged into, or fixed by, an earlier step
        roots = [
            r for r in dict.fromkeys(plan.root(int(h)) for h in cand[g]) if r != g and r not in plan.dropped
        ]
        # 1. merge the whole group into a complementary one
        if any(plan.try_merge(g, r) for r in roots):
            continue
        rest_ok = plan.rest_ok(g)
        # 2. its terminal tuples join a complementary group; 3. they change places with as
        # many tuples of that group (the closest priors); 4. they are suppressed, the rest kept
        # or (5.) merged into a nearby group; 6. the group is suppressed
        if rest_ok and any(plan.try_move(g, r) for r in roots):
            continue
        if any(plan.try_swap(g, r) for r in roots):
            continue
        if not rest_ok:  # 5. the rest joins a nearby group, the terminal tuples suppressed
            nearby = [r for r in dict.fromkeys(plan.root(int(h)) for h in near[g]) if r != g]
            if any(plan.try_rest_merge(g, r) for r in nearby if r not in plan.dropped):
                continue
        plan.drop(g, whole=not rest_ok)
    return plan.apply(assigned, policy.id)
