"""The posterior bound: no kept tuple's Ω posterior reaches ``posterior_bound`` (issue 12).

Why: the adversary of the paper (the defender's model of it) pins 2-3 % of a release's tuples
with a posterior >= 0.9 on their true value at the recommended setting, most of them through
a prior that earlier releases had already made sharp (docs/results/exit-frontier-24x5000,
"Where the confident tuples come from"). The JS requirement (E9) bounds how much the members'
priors differ, not how sharp they are, so it cannot stop this. The bound ``c`` asks, of every
released QI-group:

    max over its members t and the values s it holds of P^Ω_pos(t)_s < c     (Ω: (E14))

It reads only what the adversary holds too: the members' priors (the defender's RBK^sv, the
``p__<value>`` columns) and the group's sensitive counts, never which member holds which
value, so the decision itself discloses nothing beyond the release (unlike a check on the
true values). With ``c = 0.9`` the defender's adversary has no confident claim at all.

How (after the exit guard, before CreateQIG; :func:`guard_posteriors`), the groups over the
bound taken in label order, each:

1. merged into one of the :data:`REACH` groups whose union with it has the smallest QI box,
   when the union keeps the method's criteria (k, t, j exactly, :func:`dpriv.criteria.keeps`)
   and the bound;
2. else merged with the nearest group that keeps the criteria (the union may still be over
   the bound), and step 1 tried again from the union, at most :data:`CHAIN` times;
3. else its members of largest posterior are taken out one at a time until the rest keeps
   the criteria and the bound (at least k members left);
4. else it is dissolved whole.

Each member taken out (steps 3-4) joins, if it can, one of the :data:`REACH` groups whose QI
box grows least by her QIs (by at most :data:`PLACE_GROWTH`), when the group with her keeps the
criteria and the bound; a member no group takes is suppressed.

The release loop checks the bound again on the posteriors of its pk step (:func:`check`): a
release over it is never written. JS-reduce releases on the pandas path only: a history that
would go through Dask, a Mondrian baseline and ``persistent_groups`` are refused before anything
is written (:func:`refuse_unsupported`; on Dask the guard would need every group's members on
the client).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.anonymity.jsreduce import entropies
from dpriv.criteria import criteria_for, keeps
from dpriv.errors import PolicyError, VerificationError
from dpriv.guard_stats import boxes, group_stats, union_cost
from dpriv.knowledge.posterior import omega_posterior
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL, SCODE

__all__ = [
    "CHAIN",
    "PLACE_GROWTH",
    "REACH",
    "PosteriorGuard",
    "check",
    "guard_posteriors",
    "max_posteriors",
    "refuse_unsupported",
]

#: Nearest groups (smallest union QI box) a group over the bound may be merged with.
REACH = 16
#: Merges that keep only the criteria (step 2) before the members are suppressed (step 3).
#: Measured on 24 x 5,000 (seed 0, t 0.45, j 1.5, top-down, exit guard): 0 merges -> 1.74 %
#: mean suppression, 3 -> 1.08 % (docs/results/posterior-bound-24x5000/).
CHAIN = 3
#: How much a member taken out of a group may widen the box of the group she joins: the growth
#: of its semiperimeter (E11, the sum over numeric QIs of width / domain span). Measured on
#: 24 x 5,000 (seeds 0-1, docs/results/posterior-bound-24x5000): without a limit nobody was
#: suppressed but the mean semiperimeter grew 0.05; at 0.1 the suppression halved (seed 0:
#: 1.08 -> 0.50 %) for 0.003-0.028 more semiperimeter; at 0.2, 0.27 % for 0.015.
PLACE_GROWTH = 0.1


@dataclass(frozen=True)
class PosteriorGuard:
    """Result of :func:`guard_posteriors`.

    Attributes
    ----------
    assigned : pandas.DataFrame
        The membership with merged groups relabelled and suppressed tuples removed (same
        columns; the same object when no group was over the bound).
    n_over : int
        Groups over the bound before the guard.
    n_merged : int
        Merges made (steps 1 and 2).
    n_suppressed : int
        Tuples the guard suppressed (steps 3 and 4: members no group took).
    n_moved : int
        Members taken out of a group (steps 3 and 4) that joined another one.
    """

    assigned: pd.DataFrame
    n_over: int
    n_merged: int
    n_suppressed: int
    n_moved: int = 0

    def as_record(self, policy: ReleasePolicy) -> dict | None:
        """``metrics.json``'s ``posterior_guard`` (docs/ledger.md): the bound and the four
        counts; None without ``posterior_bound``."""
        if policy.posterior_bound is None:
            return None
        return {
            "posterior_bound": policy.posterior_bound,
            "n_over": self.n_over,
            "n_merged": self.n_merged,
            "n_suppressed": self.n_suppressed,
            "n_moved": self.n_moved,
        }


def max_posteriors(labels: np.ndarray, s: np.ndarray, priors: np.ndarray) -> np.ndarray:
    """Largest Ω posterior (E14) of each group, over its members and values: float64 (G,),
    groups in sorted label order. ``labels`` (n,) int, ``s`` (n,) codes, ``priors`` (n, M)."""
    if len(labels) == 0:
        return np.zeros(0)
    post = omega_posterior(labels, s, priors).max(axis=1)
    order = np.argsort(labels, kind="stable")
    sl = labels[order]
    starts = np.flatnonzero(np.r_[True, sl[1:] != sl[:-1]])
    return np.maximum.reduceat(post[order], starts)


class _Plan:
    """The guard's state over the group table: members (row positions), counts, boxes."""

    def __init__(self, rows: pd.DataFrame, stats: pd.DataFrame, policy: ReleasePolicy, crit) -> None:
        m = len(policy.sensitive_domain)
        self.c, self.k, self.crit = float(policy.posterior_bound), policy.k, crit
        self.labels = stats[LABEL].to_numpy(np.int64)
        self.cur = stats[[f"c{v}" for v in range(m)]].to_numpy(np.int64, copy=True)
        lo, hi, self.span = boxes(stats, policy)
        self.lo, self.hi = lo.copy(), hi.copy()  # widened by merges
        self.s = rows[SCODE].to_numpy(np.int64)
        self.x = rows[policy.numeric_qi].to_numpy(np.float64).reshape(len(rows), -1)  # QI points
        self.p = rows[[c for c in policy.prior_columns if c in rows.columns]].to_numpy(np.float64)
        self.h = entropies(self.p, float(policy.log_base))
        gid = np.searchsorted(self.labels, rows[LABEL].to_numpy(np.int64))  # rows in (label, id) order
        starts = np.searchsorted(gid, np.arange(len(self.labels) + 1))
        self.mem = [np.arange(starts[g], starts[g + 1]) for g in range(len(self.labels))]
        self.alive = np.ones(len(self.labels), dtype=bool)
        self.n_merged = self.n_moved = 0

    def worst(self, idx: np.ndarray) -> np.ndarray:
        """Each member's largest Ω posterior in the group ``idx`` (row positions, sorted)."""
        return omega_posterior(np.zeros(len(idx), np.int64), self.s[idx], self.p[idx]).max(axis=1)

    def holds(self, idx: np.ndarray, cnt: np.ndarray, bound: bool = True) -> bool:
        """Whether a group of rows ``idx`` and counts ``cnt`` keeps the criteria (and the bound)."""
        idx = np.sort(idx)
        if not keeps(self.crit, cnt, self.p[idx].sum(axis=0), float(self.h[idx].sum())):
            return False
        return not bound or float(self.worst(idx).max()) < self.c

    def nearest(self, g: int) -> np.ndarray:
        other = np.flatnonzero(self.alive)
        other = other[other != g]
        cost = union_cost(self.lo, self.hi, g, other, self.span)
        return other[np.lexsort((self.labels[other], cost))][:REACH]

    def merge(self, into: int, g: int) -> None:
        self.mem[into] = np.concatenate([self.mem[into], self.mem[g]])
        self.cur[into] = self.cur[into] + self.cur[g]
        self.lo[into] = np.minimum(self.lo[into], self.lo[g])
        self.hi[into] = np.maximum(self.hi[into], self.hi[g])
        self.alive[g], self.mem[g] = False, self.mem[g][:0]
        self.n_merged += 1

    def fix(self, g: int) -> None:
        """Steps 1-4 of the module doc for group ``g``."""
        for attempt in range(CHAIN + 1):
            near = self.nearest(g)
            hit = self._first(g, near, bound=True)
            if hit is not None:
                self.merge(hit, g)
                return
            hit = self._first(g, near, bound=False) if attempt < CHAIN else None
            if hit is None:
                break
            self.merge(g, hit)
            if self.worst(np.sort(self.mem[g])).max() < self.c:
                return
        self.peel(g)

    def _first(self, g: int, near: np.ndarray, bound: bool) -> int | None:
        """The first of ``near`` whose union with ``g`` keeps the criteria (and the bound)."""
        for r in near:
            if self.holds(np.r_[self.mem[g], self.mem[r]], self.cur[g] + self.cur[r], bound):
                return int(r)
        return None

    def peel(self, g: int) -> None:
        """Steps 3-4: members out of ``g`` until it holds (or all), each then :meth:`place`-d."""
        idx, cnt = np.sort(self.mem[g]), self.cur[g].copy()
        out = self.mem[g]
        while len(idx) > self.k:
            top = int(np.argmax(self.worst(idx)))  # the first of the largest: rows in id order
            cnt[self.s[idx[top]]] -= 1
            idx = np.delete(idx, top)
            if self.holds(idx, cnt):
                out = np.setdiff1d(self.mem[g], idx)
                self.mem[g], self.cur[g] = idx, cnt
                break
        else:
            self.alive[g], self.mem[g] = False, self.mem[g][:0]
        for r in out:  # a member no group takes stays out: suppressed (no label)
            self.place(int(r))

    def place(self, r: int) -> bool:
        """Row ``r`` into the first of the :data:`REACH` groups whose box her QIs widen least
        (ties: smaller label; at most :data:`PLACE_GROWTH`) that keeps the criteria and the
        bound with her."""
        other = np.flatnonzero(self.alive)
        grow = (np.maximum(self.hi[other], self.x[r]) - np.minimum(self.lo[other], self.x[r])) / self.span
        cost = grow.sum(axis=1) - ((self.hi[other] - self.lo[other]) / self.span).sum(axis=1)
        order = np.lexsort((self.labels[other], cost))
        for h in other[order[cost[order] <= PLACE_GROWTH]][:REACH]:
            cnt = self.cur[h].copy()
            cnt[self.s[r]] += 1
            if self.holds(np.r_[self.mem[h], r], cnt):
                self.mem[h], self.cur[h] = np.r_[self.mem[h], r], cnt
                self.lo[h], self.hi[h] = np.minimum(self.lo[h], self.x[r]), np.maximum(self.hi[h], self.x[r])
                self.n_moved += 1
                return True
        return False


def guard_posteriors(
    assigned: pd.DataFrame, policy: ReleasePolicy, view_counts: np.ndarray
) -> PosteriorGuard:
    """Apply the posterior bound (module doc) to the membership ``assigned`` of one release.

    Parameters
    ----------
    assigned : pandas.DataFrame
        Kept tuples: the policy's id, QIs, ``_s`` (int64 sensitive code), ``_label`` (int64
        QI-group label) and the ``p__<value>`` prior columns (RBK^sv).
    policy : ReleasePolicy
        Resolved; ``posterior_bound`` in (0, 1] or None (then nothing changes).
    view_counts : int64 array (M,)
        Sensitive counts of the whole view (the reference of t).

    Returns
    -------
    PosteriorGuard

    Raises
    ------
    PolicyError
        A Dask ``assigned`` (the bound is applied on the pandas path only).
    """
    if policy.posterior_bound is None:
        return PosteriorGuard(assigned, 0, 0, 0)
    if is_dask(assigned):
        raise PolicyError(
            f"posterior_bound = {policy.posterior_bound} is applied on the pandas path only and this "
            "view went through Dask: for `dpriv anonymize` use --no-cluster (in Python: anonymize a "
            "pandas DataFrame, e.g. view.compute()), or remove posterior_bound from the policy"
        )
    rows = assigned.sort_values([LABEL, policy.id], kind="stable")
    stats = group_stats(rows, policy)
    plan = _Plan(rows, stats, policy, criteria_for(policy, "jsreduce", view_counts))
    worst = max_posteriors(rows[LABEL].to_numpy(np.int64), plan.s, plan.p)
    over = np.flatnonzero(worst >= plan.c)
    if not len(over):
        return PosteriorGuard(assigned, 0, 0, 0)
    for g in over:
        if plan.alive[g] and plan.worst(np.sort(plan.mem[g])).max() >= plan.c:
            plan.fix(int(g))
    label = np.full(len(rows), -1, dtype=np.int64)  # -1: suppressed
    for g in np.flatnonzero(plan.alive):
        label[plan.mem[g]] = plan.labels[g]
    label = pd.Series(label, index=rows.index).reindex(assigned.index).to_numpy()
    out = assigned.assign(**{LABEL: label})[label >= 0]
    return PosteriorGuard(out, len(over), plan.n_merged, int((label < 0).sum()), plan.n_moved)


def refuse_unsupported(policy: ReleasePolicy, sizes: list[int], max_view: int, max_history: int) -> None:
    """PolicyError, before anything is released, when ``posterior_bound`` is set and cannot be
    applied (a Mondrian baseline is refused by :func:`dpriv.criteria.refuse_ignored`): with
    ``persistent_groups`` (whose units the merges would break), or when a view of ``sizes``
    (tuples per view) would go through Dask: a view above ``max_view`` tuples or a history
    above ``max_history`` (the bound of the state's rows) leaves the pandas path."""
    if policy.posterior_bound is None:
        return
    if policy.persistent_groups:
        raise PolicyError(
            "posterior_bound merges QI-groups, which would break persistent_groups' units: "
            "set one of them only"
        )
    if not sizes or (max(sizes) <= max_view and sum(sizes) <= max_history):
        return
    raise PolicyError(
        f"posterior_bound = {policy.posterior_bound} is applied on the pandas path only (views of "
        f"at most {max_view:,} tuples, histories of at most {max_history:,}); this history has "
        f"{max(sizes):,} tuples in its largest view and {sum(sizes):,} in all, released through "
        "Dask even with --no-cluster (in Python: even from a pandas DataFrame): remove posterior_bound "
        "from the policy or release smaller histories"
    )


def check(posteriors: pd.DataFrame, policy: ReleasePolicy, where: str, method: str = "jsreduce") -> None:
    """Raise VerificationError when a posterior of the release's pk step (the ``post__<value>``
    columns of :func:`dpriv.state.posterior_table`, pandas) reaches ``posterior_bound``: the
    guard's decision seen again on the final groups, by the state's own Ω step. JS-reduce
    releases only (:func:`dpriv.criteria.refuse_ignored` refuses the bound with a baseline)."""
    from dpriv.state import post_columns

    if policy.posterior_bound is None or method != "jsreduce" or is_dask(posteriors) or not len(posteriors):
        return
    top = float(np.nanmax(posteriors[post_columns(policy)].to_numpy(np.float64)))
    if top >= policy.posterior_bound:
        raise VerificationError(
            f"{where}: a kept tuple's Ω posterior is {top:.6g} >= posterior_bound = "
            f"{policy.posterior_bound}; the release is not written"
        )
