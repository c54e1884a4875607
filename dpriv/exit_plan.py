"""The exit guard's decisions over one release's group table (:mod:`dpriv.exit_guard`).

:class:`ExitGuard`: the guard's result; :func:`one_kind_groups`: the groups it acts on.
:class:`Rows`: the rows of the groups involved (one-kind groups and their candidates), sorted
by (label, id) so that every sum is taken in an order that does not depend on the partitions.
:class:`Plan`: merges (a union-find over group positions), moved or exchanged tuples and
suppressions, each accepted only when the groups it changes keep the method's criteria
(k, l, t exactly on integer counts; j on the priors summed in id order; ``allowable`` on the
rows); :meth:`Plan.apply` carries them out part by part (:func:`apply_plan`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask, map_frame
from dpriv.criteria import keeps
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL, SCODE


@dataclass(frozen=True)
class ExitGuard:
    """Result of :func:`dpriv.exit_guard.guard_exits` (:meth:`Plan.apply`).

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


def one_kind_groups(counts: np.ndarray, exits: np.ndarray) -> np.ndarray:
    """bool (G,): groups whose terminal tuples (``counts[:, exits]``) are all of one kind."""
    return (np.asarray(counts)[:, exits] > 0).sum(axis=1) == 1


@dataclass
class Rows:
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
        cols = [policy.id, LABEL, SCODE, *(c for c in policy.prior_columns if c in assigned.columns)]
        sel = assigned[assigned[LABEL].isin(want.tolist())][cols]
        if not is_dask(assigned):
            sel = sel.assign(_pos=sel.index.to_numpy())
        sel = sel.compute() if is_dask(sel) else sel
        sel = sel.sort_values([LABEL, policy.id], kind="stable")
        pc = [c for c in policy.prior_columns if c in sel.columns]
        p = sel[pc].to_numpy(np.float64) if pc else np.zeros((len(sel), 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            h = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1) / np.log(float(policy.log_base))
        s = sel[SCODE].to_numpy(np.int64)
        return cls(
            ids=sel[policy.id].to_numpy(),
            group=np.searchsorted(labels, sel[LABEL].to_numpy(np.int64)),
            s=s,
            p=p,
            h=h,
            pos=sel["_pos"].to_numpy() if "_pos" in sel else np.arange(len(sel)),
            term=np.isin(s, exits),
        )


class Plan:
    """The guard's decisions over the group table (positions ``0 .. G - 1``): merges (a
    union-find), moved or exchanged tuples, suppressions; :meth:`apply` carries them out."""

    def __init__(self, labels, counts, exits, rows: Rows | None, crit, allowable) -> None:
        self.labels, self.exits, self.rows = labels, exits, rows
        self.crit, self.allowable = crit, allowable
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
        if idx is None:
            return keeps(self.crit, cnt)
        idx = np.sort(idx)
        if not keeps(self.crit, cnt, self.rows.p[idx].sum(axis=0), float(self.rows.h[idx].sum())):
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

    def try_rest_merge(self, g: int, r: int) -> bool:
        """Suppress the terminal tuples of ``g`` and merge the rest into ``r`` (any group; its
        terminal values do not change)."""
        rest = self.cur[g].copy()
        rest[self.exits] = 0
        if not self._mixed(self.cur[r]) and self.cur[r][self.exits].any():
            return False  # an unsettled one-kind group may still be suppressed
        merged = rest + self.cur[r]
        idx = self._idx(g, r)
        if idx is not None:
            idx = idx[~(self.rows.term[idx] & (self.at[idx] == g))]
        if rest.sum() == 0 or not self.ok(merged, idx):
            return False
        self.drop(g, whole=False)
        self.parent[g], self.cur[r], self.cur[g] = r, merged, 0
        if self.at is not None:
            self.at[self.at == g] = r
        self.n_merged += 1
        return True

    def drop(self, g: int, whole: bool) -> None:
        """Suppress the terminal tuples of ``g`` (or all of it): no later step may use them."""
        (self.drop_all if whole else self.drop_exit).append(g)
        self.n_sup += int(self.cur[g].sum() if whole else self.cur[g][self.exits].sum())
        if self.at is not None:  # the suppressed rows count nowhere any more
            self.at[(self.at == g) & (True if whole else self.rows.term)] = -1
        if whole:
            self.cur[g] = 0
        else:
            self.cur[g][self.exits] = 0

    def apply(self, assigned, id_column: str) -> ExitGuard:
        """The plan carried out on ``assigned`` (the membership, pandas or Dask: ``_label`` int64,
        ``_s`` the sensitive code, the respondent id ``id_column``), part by part
        (:func:`apply_plan`): merged groups relabelled to their root's label, moved rows to their
        new group's, the suppressed tuples dropped; rows keep their order, columns and dtypes.
        The labels, moves and suppressions go to the parts as int64 arrays (the merged labels
        sorted: each part looks them up by bisection). Returns the result with the guard's
        counts (:class:`ExitGuard`); lazy on Dask."""
        lab = np.asarray(self.labels, dtype=np.int64)
        roots = _roots(self.parent)
        merged = np.flatnonzero(roots != np.arange(len(roots)))
        order = np.argsort(lab[merged], kind="stable")  # apply_plan looks labels up by bisection
        remap = (lab[merged][order], lab[roots[merged]][order])
        moved = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        if self.rows is not None:
            i = np.flatnonzero((self.at != self.rows.group) & (self.at >= 0))  # moved/merged rows
            moved = (self.rows.ids[i], lab[roots[self.at[i]]])
        gone_exit, gone_all = (
            lab[np.asarray(self.drop_exit, dtype=np.int64)],
            lab[np.asarray(self.drop_all, dtype=np.int64)],
        )
        meta = assigned._meta if is_dask(assigned) else None
        out = map_frame(
            apply_plan, assigned, id_column, remap, moved, gone_exit, gone_all, self.exits, meta=meta
        )
        return ExitGuard(out, self.n_sup, self.n_merged, self.n_one_kind, self.n_moved, self.n_swapped)


def _roots(parent: np.ndarray) -> np.ndarray:
    """int (G,): the root of every position of the union-find ``parent`` (what
    :meth:`Plan.root` finds one at a time), by pointer jumping."""
    roots = np.asarray(parent, dtype=np.int64).copy()
    while True:
        up = roots[roots]
        if np.array_equal(up, roots):
            return roots
        roots = up


def apply_plan(
    part: pd.DataFrame,
    id_column: str,
    remap: tuple[np.ndarray, np.ndarray],
    moved: tuple[np.ndarray, np.ndarray],
    gone_exit: np.ndarray,
    gone_all: np.ndarray,
    exits: np.ndarray,
) -> pd.DataFrame:
    """One part: drop the guarded tuples, relabel merged groups and moved tuples (rows keep
    their order).

    ``remap``: int64 labels of merged groups, sorted and unique, and (same length) the label
    each merges into (applied once: a chain is not followed). ``moved``: unique ids and
    (int64) the label each row of that id now has; it wins over ``remap``. ``gone_all``,
    ``gone_exit``: int64 labels of the groups suppressed whole, and of those whose terminal
    tuples (sensitive code in ``exits``) are suppressed."""
    lab = part[LABEL].to_numpy(np.int64)
    term = np.isin(part[SCODE].to_numpy(np.int64), exits)
    drop = np.isin(lab, gone_all) | (np.isin(lab, gone_exit) & term)
    new = lab.copy()
    src, dst = remap
    if len(src):  # one sorted lookup, not a pass over the part per merged group
        at = np.minimum(np.searchsorted(src, lab), len(src) - 1)
        hit = src[at] == lab
        new[hit] = dst[at[hit]]
    ids, to = moved
    if len(ids):  # by id, through positions (a map to float would round 64-bit labels)
        at = pd.Index(ids).get_indexer(part[id_column])
        hit = at >= 0
        new[hit] = np.asarray(to, dtype=np.int64)[at[hit]]
    return part.assign(**{LABEL: new})[~drop]
