"""Persistent QI-groups across releases (issue 12; the idea of m-invariance, Xiao & Tao 2007).

With ``policy.persistent_groups`` a respondent is grouped with the same respondents at every
release she attends, so that later releases add little about any single member (the
retrospective adversary intersects co-members that change from release to release,
docs/algorithms.md §1.6). Each respondent's *persistent group* (an int64 id, -1 = none) is
kept in the respondent state (column :data:`PGROUP`, :mod:`dpriv.state`).

One view:

1. **Units**: the present members of each persistent group form one unit; its statistics are
   those of a QI-group (:func:`dpriv.anonymity.jsreduce.range_stats`, counts of S, sums of the
   members' RBK^sv and of their entropies, box, first (key, tie) in Hilbert order = its anchor).
2. **Plan** (client, O(units)): units in the Hilbert order of their anchors; a unit that
   satisfies (E9) (``|Q| >= k``, EMD to the view ``<= t`` decided exactly on counts, JS of the
   members' RBK ``<= j`` from the sums, (E8)) is a QI-group as it is; one that does not is
   merged with the following units in anchor order until the union satisfies (E9); while the
   open union's JS exceeds j its oldest units are *dissolved* (their members are grouped with
   the newcomers; what is left closes at once when it satisfies (E9)). A last open union
   joins the previous group if that keeps (E9), else it is dissolved.
3. Respondents seen for the first time (and members of dissolved units) are grouped as
   without the option (the policy's scan or top-down kernel over Hilbert ranges); the repair
   then places every leftover into any group, persistent ones included, keeping (E9).
4. Each kept respondent's next persistent group (:data:`PNEXT`): her own when her unit was
   kept (alone or merged: merges are re-done at every release, along the anchor order, which
   is stable while the QIs are, so absent members are never split off), the anchor unit's when
   the repair placed her into a unit group, else the release label of her group (a new group).

The published box is the present members' box (the CreateQIG of every QI-group). Unit
statistics are sums over each unit's rows in Hilbert order (the Dask path first hashes the
rows by persistent group, so each unit is whole in one part), and the merged groups' sums
are taken unit by unit in anchor order: the same bits for any number of partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpriv._random import keyed
from dpriv.anonymity.jsreduce import range_stats, unflat_stats
from dpriv.criteria import criteria_for
from dpriv.divergence import js_from_sums
from dpriv.hilbert.keys import HKEY, TIE
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL

#: Respondent-state column (int64, -1 = none) and joined-view column (nullable Int64) of the
#: persistent group of each respondent.
PGROUP = "persist_group"
#: Private column of the assigned rows: the persistent group after this release (int64).
PNEXT = "_pnext"
_MINTIE = "_mintie"


def persistent_ids(rows: pd.DataFrame) -> np.ndarray:
    """int64 (n,): the persistent group of each row, -1 where none (or no such column)."""
    if PGROUP not in rows.columns:
        return np.full(len(rows), -1, dtype=np.int64)
    return rows[PGROUP].astype("Int64").fillna(-1).to_numpy(dtype=np.int64)


def unit_stats(rows: pd.DataFrame, policy: ReleasePolicy) -> pd.DataFrame:
    """Per unit (the rows of one persistent group, whole in ``rows``): the columns of
    :func:`range_stats` with ``_label`` = the persistent group, plus ``_mintie`` (uint64,
    the smallest tie-break key of its members). Rows with no persistent group are ignored."""
    ids = persistent_ids(rows)
    keyed_rows = rows[ids >= 0].assign(**{LABEL: ids[ids >= 0]})
    stats = range_stats(keyed_rows, policy)
    mintie = keyed_rows.groupby(LABEL)[TIE].min()
    ties = mintie.reindex(stats[LABEL].to_numpy()).to_numpy(np.uint64)
    ties = ties if len(stats) else np.zeros(0, np.uint64)
    return stats.assign(**{_MINTIE: ties})


@dataclass
class UnitPlan:
    """The decision of :func:`plan_units`.

    ``units``: one row per unit, columns ``persist_group`` (int64), ``_label`` (int64 release
    label of its QI-group, -1 = dissolved); ``stats``: one row per unit group in the columns of
    :func:`range_stats` (for the repair); ``next_of``: release label -> next persistent group
    (int64 Series) of the unit groups.
    """

    units: pd.DataFrame
    stats: pd.DataFrame
    next_of: pd.Series

    @property
    def n_groups(self) -> int:
        return len(self.stats)


def plan_units(units: pd.DataFrame, policy: ReleasePolicy, view_counts: np.ndarray) -> UnitPlan:
    """Keep, merge or dissolve the units (step 2 of the module doc); ``units`` is the
    concatenation of :func:`unit_stats` over parts holding whole units (any row order)."""
    units = units.sort_values([HKEY, TIE], kind="stable").reset_index(drop=True)
    crit = {c.name: c for c in criteria_for(policy, "jsreduce", view_counts)}
    st = unflat_stats(units.drop(columns=[LABEL, HKEY, TIE, _MINTIE]), np.arange(len(units)))

    def js(acc) -> float:
        return js_from_sums(acc[2], acc[3], acc[1], policy.log_base)

    def holds(counts: np.ndarray, size: int, sum_p: np.ndarray, sum_h: float) -> bool:
        if size < policy.k or not crit["t"].holds_counts(counts):
            return False
        if "rbk_closeness" in crit and not crit["rbk_closeness"].holds_sums(counts, sum_p):
            return False
        return js((counts, size, sum_p, sum_h)) <= policy.j

    def row(u: int) -> tuple:
        return (st.counts[u], int(st.sizes[u]), st.sum_p[u], float(st.sum_h[u]))

    groups: list[list[int]] = []
    buf: list[int] = []
    acc = None
    for u in range(len(units)):
        acc = row(u) if not buf else tuple(a + b for a, b in zip(acc, row(u)))
        buf.append(u)
        if holds(*acc):
            groups.append(buf)
            buf = []
            continue
        while len(buf) > 1 and js(acc) > policy.j:  # too unlike: the oldest units are dissolved
            acc = tuple(a - b for a, b in zip(acc, row(buf.pop(0))))
            if holds(*acc):  # what is left may hold now
                groups.append(buf)
                buf = []
                break
    if buf and groups:  # the last open union: into the previous group if (E9) still holds
        prev = groups[-1]
        total = [st.counts[prev + buf].sum(0), int(st.sizes[prev + buf].sum())]
        sum_p = _ordered_sum(st.sum_p, prev + buf)
        if holds(total[0], total[1], sum_p, float(_ordered_sum(st.sum_h, prev + buf))):
            groups[-1] = prev + buf
    return _plan(units, st, groups, policy)


def _ordered_sum(arr: np.ndarray, idx: list[int]):
    """The sum of ``arr[idx]`` taken one unit after another (the same bits on every path)."""
    out = arr[idx[0]].copy() if arr.ndim > 1 else float(arr[idx[0]])
    for i in idx[1:]:
        out = out + arr[i]
    return out


def _plan(units: pd.DataFrame, st, groups: list[list[int]], policy: ReleasePolicy) -> UnitPlan:
    labels = np.full(len(units), -1, dtype=np.int64)
    pg = units[LABEL].to_numpy(np.int64)
    ties = units[_MINTIE].to_numpy(np.uint64)
    rows, nxt = [], {}
    for members in groups:
        smallest = np.array([ties[members].min()], np.uint64)  # as group_labels: the smallest tie
        label = int(keyed(smallest, policy.seed, "label")[0] >> np.uint64(1))
        labels[members] = label
        nxt[label] = int(pg[members[0]])
        first = members[0]  # sorted by anchor: the group's first (key, tie)
        row = {LABEL: label, HKEY: units[HKEY].iat[first], TIE: units[TIE].iat[first]}
        counts = st.counts[members].sum(0)
        row.update({f"counts{i}": c for i, c in enumerate(counts)})
        row["sizes"] = int(st.sizes[members].sum())
        row.update({f"sum_p{i}": v for i, v in enumerate(_ordered_sum(st.sum_p, members))})
        row["sum_h"] = _ordered_sum(st.sum_h, members)
        row.update({f"lo{i}": v for i, v in enumerate(st.lo[members].min(0))})
        row.update({f"hi{i}": v for i, v in enumerate(st.hi[members].max(0))})
        rows.append(row)
    stats_cols = [c for c in units.columns if c != _MINTIE]
    stats = pd.DataFrame(rows, columns=stats_cols) if rows else units.iloc[:0][stats_cols]
    stats = stats.astype(units[stats_cols].dtypes.to_dict())
    plan_units_frame = pd.DataFrame({PGROUP: pg, LABEL: labels})
    next_of = pd.Series(nxt, dtype=np.int64, name=PNEXT)
    return UnitPlan(plan_units_frame, stats, next_of)


def apply_plan(part: pd.DataFrame, units: pd.DataFrame) -> pd.DataFrame:
    """``part`` plus ``_label`` (int64): its unit group's release label, -1 for a newcomer or
    a member of a dissolved unit (left to the scan). Row-wise, runs per Dask partition."""
    ids = persistent_ids(part)
    at = pd.Index(units[PGROUP].to_numpy(np.int64)).get_indexer(ids)
    labels = units[LABEL].to_numpy(np.int64)
    found = labels[np.maximum(at, 0)] if len(labels) else np.full(len(ids), -1, np.int64)
    return part.assign(**{LABEL: np.where((ids >= 0) & (at >= 0), found, -1)})


def with_next(assigned: pd.DataFrame, plan: UnitPlan) -> pd.DataFrame:
    """``assigned`` plus :data:`PNEXT` (int64): the persistent group of each kept row after
    this release. A member of a unit kept in a unit group keeps her own (a merge is re-done at
    every release from the stable anchor order, so absent members are not split off); a row
    placed into a unit group by the repair joins its anchor unit's; any other row starts a new
    persistent group, its release label. Row-wise, runs per Dask partition."""
    labels = assigned[LABEL].to_numpy(np.int64)
    own = persistent_ids(assigned)
    at = pd.Index(plan.units[PGROUP].to_numpy(np.int64)).get_indexer(own)
    unit_label = plan.units[LABEL].to_numpy(np.int64)
    stays = (own >= 0) & (at >= 0)
    stays[stays] = unit_label[at[stays]] == labels[stays]
    anchor = pd.Index(plan.next_of.index.to_numpy(np.int64)).get_indexer(labels)
    nxt = labels.copy()
    nxt[anchor >= 0] = plan.next_of.to_numpy(np.int64)[anchor[anchor >= 0]]
    return assigned.assign(**{PNEXT: np.where(stays, own, nxt)})
