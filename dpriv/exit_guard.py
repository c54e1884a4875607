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
a group, when both that group and the rest keep them; else (3) its terminal tuples are
suppressed, when the rest keeps them; else (4) it is suppressed whole. The criteria are checked
exactly: k, l and t on the integer counts, j on the members' priors summed in id order, and
mondrian-bt's (B,t)-privacy on the rows. The decisions read integer statistics and the priors of
the groups involved only, so they do not depend on the partitions:
the same bytes for any number of partitions. Only group statistics and the rows of the groups
involved reach the client. A policy without ``exit_values`` leaves every byte as it was.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask, map_frame
from dpriv.criteria import DistinctL, JSBound, KAnonymity, TCloseness, criteria_for
from dpriv.divergence import js_from_sums
from dpriv.errors import PolicyError
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL

__all__ = ["REACH", "ExitGuard", "exit_codes", "guard_exits", "one_kind_groups"]

#: Complementary groups (smallest union QI box first) a one-kind group may be merged into.
REACH = 8
_S = "_s"


@dataclass(frozen=True)
class ExitGuard:
    """Result of :func:`guard_exits`.

    Attributes
    ----------
    assigned : pandas or Dask DataFrame
        The membership with merged groups relabelled and guarded tuples removed (same columns).
    n_suppressed : int
        Tuples the guard removed (terminal tuples of unmergeable groups, or whole groups).
    n_merged : int
        One-kind groups merged into another group.
    n_one_kind : int
        One-kind groups before the guard.
    n_moved : int
        One-kind groups whose terminal tuples joined a complementary group.
    n_swapped : int
        One-kind groups whose terminal tuples changed places with tuples of a complementary group.
    """

    assigned: pd.DataFrame
    n_suppressed: int
    n_merged: int
    n_one_kind: int
    n_moved: int = 0
    n_swapped: int = 0


def exit_codes(policy: ReleasePolicy) -> np.ndarray:
    """Codes (positions in the sensitive domain) of ``policy.exit_values``, int64 (E,).

    Raises
    ------
    PolicyError
        A value not in the sensitive domain, or fewer than two distinct values (one terminal
        value cannot be hidden among others of its kind).
    """
    dom = [str(v) for v in policy.sensitive_domain]
    vals = list(dict.fromkeys(str(v) for v in policy.exit_values))
    missing = [v for v in vals if v not in dom]
    if missing:
        raise PolicyError(
            f"exit_values {missing} are not values of the sensitive column {policy.sensitive!r} "
            f"(its domain: {dom[:8]}{' ...' if len(dom) > 8 else ''}); list its terminal values"
        )
    if len(vals) < 2:
        raise PolicyError(
            f"exit_values = {vals}: the exit guard needs at least two distinct terminal values (a "
            "group's single kind of exit is pinned on the members never seen again); list them all "
            "or leave exit_values empty"
        )
    return np.array([dom.index(v) for v in vals], dtype=np.int64)


def one_kind_groups(counts: np.ndarray, exits: np.ndarray) -> np.ndarray:
    """bool (G,): groups whose terminal tuples (``counts[:, exits]``) are all of one kind."""
    return (np.asarray(counts)[:, exits] > 0).sum(axis=1) == 1


def _partial_stats(part: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """Per label of one part: size, counts ``c<s>`` per sensitive code, numeric QI min/max."""
    m = len(policy.sensitive_domain)
    lab = part[LABEL].to_numpy(np.int64)
    uniq, inv = np.unique(lab, return_inverse=True)
    out = {LABEL: uniq, "size": np.bincount(inv, minlength=len(uniq)).astype(np.int64)}
    cnt = np.zeros((len(uniq), m), dtype=np.int64)
    np.add.at(cnt, (inv, part[_S].to_numpy(np.int64)), 1)
    for s in range(m):
        out[f"c{s}"] = cnt[:, s]
    for q in policy.numeric_qi:
        v = part[q].to_numpy(np.float64)
        lo = np.full(len(uniq), np.inf)
        hi = np.full(len(uniq), -np.inf)
        np.minimum.at(lo, inv, v)
        np.maximum.at(hi, inv, v)
        out[f"lo_{q}"], out[f"hi_{q}"] = lo, hi
    return pd.DataFrame(out)


def _stats(assigned, policy: ReleasePolicy) -> pd.DataFrame:
    """Per-group statistics (sorted by label), combined over the parts: exact (ints, min/max)."""
    meta = _partial_stats(assigned._meta, policy) if is_dask(assigned) else None
    parts = map_frame(_partial_stats, assigned, policy, meta=meta)
    parts = parts.compute() if is_dask(parts) else parts
    agg = {
        c: ("min" if c.startswith("lo_") else "max" if c.startswith("hi_") else "sum")
        for c in parts
        if c != LABEL
    }
    return parts.groupby(LABEL, sort=True).agg(agg).reset_index()


def _box_cost(lo: np.ndarray, hi: np.ndarray, g: int, h: np.ndarray, span: np.ndarray) -> np.ndarray:
    """Semiperimeter (normalised by the domains) of the union of box ``g`` with each of ``h``."""
    if lo.shape[1] == 0:
        return np.zeros(len(h))
    return ((np.maximum(hi[g], hi[h]) - np.minimum(lo[g], lo[h])) / span).sum(axis=1)


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
    stats = _stats(assigned, policy)
    m = len(policy.sensitive_domain)
    labels = stats[LABEL].to_numpy(np.int64)
    counts = stats[[f"c{s}" for s in range(m)]].to_numpy(np.int64)
    bad = one_kind_groups(counts, exits)
    if not bad.any():
        return ExitGuard(assigned, 0, 0, 0)
    nq = policy.numeric_qi
    lo = stats[[f"lo_{q}" for q in nq]].to_numpy(np.float64).reshape(len(stats), len(nq))
    hi = stats[[f"hi_{q}" for q in nq]].to_numpy(np.float64).reshape(len(stats), len(nq))
    span = np.array([max(float(policy.domains[q][1]) - float(policy.domains[q][0]), 1.0) for q in nq])
    has = counts[:, exits] > 0  # (G, E)
    # candidates of each one-kind group, from the exact statistics before any merge
    cand: dict[int, np.ndarray] = {}
    for g in np.flatnonzero(bad):
        other = np.flatnonzero((has & ~has[g]).any(axis=1))
        cost = _box_cost(lo, hi, g, other, span)
        cand[g] = other[np.lexsort((labels[other], cost))][:REACH]
    crit = criteria_for(policy, method, view_counts)
    js = next((c for c in crit if isinstance(c, JSBound)), None)
    rows = None
    if js is not None or allowable is not None:
        involved = np.unique(np.concatenate([np.flatnonzero(bad), *cand.values()]))
        rows = _Rows.fetch(assigned, policy, labels, involved, exits)
    plan = _Plan(labels, counts, exits, rows, crit, js, float(policy.log_base), allowable)
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
        # many tuples of that group (the closest priors); 4. they are suppressed; 5. all of it
        if rest_ok and any(plan.try_move(g, r) for r in roots):
            continue
        if any(plan.try_swap(g, r) for r in roots):
            continue
        plan.drop(g, whole=not rest_ok)
    return plan.apply(assigned, policy.id)


@dataclass
class _Rows:
    """The rows of the groups involved, sorted by (label, id): ids, group position, sensitive
    code, priors (n, M) and their entropies, index in ``assigned`` (for ``allowable``)."""

    ids: np.ndarray
    group: np.ndarray
    s: np.ndarray
    p: np.ndarray
    h: np.ndarray
    pos: np.ndarray
    term: np.ndarray

    @classmethod
    def fetch(
        cls, assigned, policy: ReleasePolicy, labels: np.ndarray, involved: np.ndarray, exits: np.ndarray
    ):
        want = labels[involved]
        cols = [policy.id, LABEL, _S, *(c for c in policy.prior_columns if c in assigned.columns)]
        sel = assigned[assigned[LABEL].isin(want.tolist())][cols]
        if not is_dask(assigned):
            sel = sel.assign(_pos=sel.index.to_numpy())
        sel = sel.compute() if is_dask(sel) else sel
        sel = sel.sort_values([LABEL, policy.id], kind="stable")
        pc = [c for c in policy.prior_columns if c in sel.columns]
        p = sel[pc].to_numpy(np.float64) if pc else np.zeros((len(sel), 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            h = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1) / np.log(float(policy.log_base))
        s = sel[_S].to_numpy(np.int64)
        return cls(
            ids=sel[policy.id].to_numpy(),
            group=np.searchsorted(labels, sel[LABEL].to_numpy(np.int64)),
            s=s,
            p=p,
            h=h,
            pos=sel["_pos"].to_numpy() if "_pos" in sel else np.arange(len(sel)),
            term=np.isin(s, exits),
        )


class _Plan:
    """The guard's decisions over the group table (positions ``0 .. G - 1``): merges (a
    union-find), moved or exchanged tuples, suppressions; :meth:`apply` carries them out."""

    def __init__(
        self, labels, counts, exits, rows: _Rows | None, crit, js, log_base: float, allowable
    ) -> None:
        self.labels, self.exits, self.rows = labels, exits, rows
        self.crit, self.js, self.log_base, self.allowable = crit, js, log_base, allowable
        self.cur = counts.copy()
        self.parent = np.arange(len(labels))
        self.at = rows.group.copy() if rows is not None else None  # current group of each row
        self.drop_exit: list[int] = []
        self.drop_all: list[int] = []
        self.n_merged = self.n_sup = self.n_moved = self.n_swapped = 0
        self.n_one_kind = int(one_kind_groups(counts, exits).sum())

    def root(self, g: int) -> int:
        while self.parent[g] != g:
            g = int(self.parent[g])
        return g

    @property
    def dropped(self) -> set[int]:
        return set(self.drop_exit) | set(self.drop_all)

    def _rows_of(self, g: int) -> np.ndarray:
        return np.flatnonzero(self.at == g)

    def ok(self, cnt: np.ndarray, idx: np.ndarray | None) -> bool:
        """Whether a group of counts ``cnt`` holding the fetched rows ``idx`` keeps the criteria."""
        for c in self.crit:
            if isinstance(c, KAnonymity | DistinctL | TCloseness) and not c.holds_counts(cnt):
                return False
        if idx is None:
            return True
        idx = np.sort(idx)
        if self.js is not None and cnt.sum() > 1:
            sp, sh = self.rows.p[idx].sum(axis=0), float(self.rows.h[idx].sum())
            if js_from_sums(sp, sh, int(cnt.sum()), self.log_base) > self.js.threshold:
                return False
        if self.allowable is not None:
            return bool(self.allowable(np.sort(self.rows.pos[idx])))
        return True

    def _idx(self, *groups: int, extra: np.ndarray | None = None, without: np.ndarray | None = None):
        if self.rows is None:
            return None
        idx = np.concatenate([self._rows_of(g) for g in groups] + ([extra] if extra is not None else []))
        return np.setdiff1d(idx, without) if without is not None else idx

    def _counts(self, idx: np.ndarray) -> np.ndarray:
        return np.bincount(self.rows.s[idx], minlength=self.cur.shape[1]).astype(np.int64)

    def _mixed(self, cnt: np.ndarray) -> bool:
        return not one_kind_groups(cnt[None], self.exits)[0]

    def try_merge(self, g: int, r: int) -> bool:
        merged = self.cur[g] + self.cur[r]
        if not self._mixed(merged) or not self.ok(merged, self._idx(g, r)):
            return False
        self.parent[g], self.cur[r] = r, merged
        if self.at is not None:
            self.at[self.at == g] = r
        self.n_merged += 1
        return True

    def rest_ok(self, g: int) -> bool:
        rest = self.cur[g].copy()
        rest[self.exits] = 0
        idx = self._idx(g)
        return rest.sum() > 0 and self.ok(rest, None if idx is None else idx[~self.rows.term[idx]])

    def try_move(self, g: int, r: int) -> bool:
        if self.rows is None:
            return False
        x = self._rows_of(g)
        x = x[self.rows.term[x]]
        moved = self._counts(x)
        merged = self.cur[r] + moved
        if not self._mixed(merged) or not self.ok(merged, self._idx(r, extra=x)):
            return False
        self.cur[r], self.cur[g] = merged, self.cur[g] - moved
        self.at[x] = r
        self.n_moved += 1
        return True

    def try_swap(self, g: int, r: int) -> bool:
        """The terminal tuples of ``g`` change places with as many non-terminal tuples of ``r``,
        each the one whose prior is closest (L1; ties by id order)."""
        if self.rows is None:
            return False
        x = self._rows_of(g)
        x = x[self.rows.term[x]]
        pool = self._rows_of(r)
        pool = pool[~self.rows.term[pool]]
        if len(pool) < len(x):
            return False
        z = []
        for i in x:
            d = np.abs(self.rows.p[pool] - self.rows.p[i]).sum(axis=1)
            j = int(np.lexsort((np.arange(len(pool)), d))[0])
            z.append(int(pool[j]))
            pool = np.delete(pool, j)
        z = np.array(z, dtype=np.int64)
        cx, cz = self._counts(x), self._counts(z)
        new_g, new_r = self.cur[g] - cx + cz, self.cur[r] + cx - cz
        if not self._mixed(new_r) or one_kind_groups(new_g[None], self.exits)[0]:
            return False
        if not self.ok(new_g, self._idx(g, extra=z, without=x)) or not self.ok(
            new_r, self._idx(r, extra=x, without=z)
        ):
            return False
        self.cur[g], self.cur[r] = new_g, new_r
        self.at[x], self.at[z] = r, g
        self.n_swapped += 1
        return True

    def drop(self, g: int, whole: bool) -> None:
        """Suppress the terminal tuples of ``g`` (or all of it): no later step may use them."""
        (self.drop_all if whole else self.drop_exit).append(g)
        self.n_sup += int(self.cur[g].sum() if whole else self.cur[g][self.exits].sum())
        if whole:
            self.cur[g] = 0
        else:
            self.cur[g][self.exits] = 0

    def apply(self, assigned, id_column: str) -> ExitGuard:
        lab = self.labels
        remap = {int(lab[g]): int(lab[self.root(g)]) for g in range(len(lab)) if self.root(g) != g}
        moved = {}
        if self.rows is not None:
            for i in np.flatnonzero(self.at != self.rows.group):  # moved, exchanged or merged rows
                moved[self.rows.ids[i]] = int(lab[self.root(int(self.at[i]))])
        gone_exit = {int(lab[g]) for g in self.drop_exit}
        gone_all = {int(lab[g]) for g in self.drop_all}
        meta = assigned._meta if is_dask(assigned) else None
        out = map_frame(_apply, assigned, id_column, remap, moved, gone_exit, gone_all, self.exits, meta=meta)
        return ExitGuard(out, self.n_sup, self.n_merged, self.n_one_kind, self.n_moved, self.n_swapped)


def _apply(
    part: pd.DataFrame,
    id_column: str,
    remap: dict,
    moved: dict,
    gone_exit: set,
    gone_all: set,
    exits: np.ndarray,
) -> pd.DataFrame:
    """One part: drop the guarded tuples, relabel merged groups and moved tuples (rows keep
    their order)."""
    lab = part[LABEL].to_numpy(np.int64)
    term = np.isin(part[_S].to_numpy(np.int64), exits)
    drop = np.isin(lab, list(gone_all)) | (np.isin(lab, list(gone_exit)) & term)
    new = lab.copy()
    for a, b in remap.items():
        new[lab == a] = b
    if moved:  # by id, through positions (a map to float would round 64-bit labels)
        at = pd.Index(list(moved)).get_indexer(part[id_column])
        hit = at >= 0
        new[hit] = np.fromiter(moved.values(), dtype=np.int64, count=len(moved))[at[hit]]
    return part.assign(**{LABEL: new})[~drop]
