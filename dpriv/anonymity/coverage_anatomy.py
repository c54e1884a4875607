"""Does the original view fit an Anatomy release? :mod:`dpriv.anonymity.coverage` for the QI
table and the sensitive table (docs/released-format.md, "Anatomy").

A file-only ``dpriv verify`` of an Anatomy release has no membership either. Its QI table
publishes each kept tuple's exact QIs, so no QI vector may be released more often than the
original holds it, and each QI-group's rows must be tuples of the original whose sensitive
values are the ones its sensitive table counts. Per group that is a transportation problem
(rows of QI vector x -> the group's values s, at most n(x, s) of them: the original's tuples
(x, s)), all groups in one max flow (:func:`dpriv.adversary._assign.transported`); a
(group, value) that fewer rows can carry than it counts is named first. The groups share the
original's tuples, which one more flow over the whole table checks (rows of x -> released
values s, at most n(x, s)). Exact when the original's QI vectors are distinct (the usual case
with several QIs); with repeated vectors the two flows are necessary, not sufficient (two
groups could still lean on one tuple (x, s) between them).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv.adversary._assign import transported
from dpriv.adversary.linkage import qi_vectors
from dpriv.anatomy import COUNT
from dpriv.anonymity.format_check import listed
from dpriv.dates import date_qi, to_days
from dpriv.policy import ReleasePolicy, as_python
from dpriv.released import GROUP
from dpriv.validate import codes
from dpriv.wording import counted

#: What the problems mean and what to do.
WHY = (
    "every row of an Anatomy QI table must be a tuple of the original, and each QI-group's rows "
    "tuples with the sensitive values its sensitive table counts (docs/released-format.md): a row "
    "or a count was changed, or the original is not the view the release was made from"
)


def anatomy_coverage_problems(
    qi_table: pd.DataFrame, sensitive: pd.DataFrame, original: pd.DataFrame, policy: ReleasePolicy
) -> list[str]:
    """Problems when the original does not fit the QI table and sensitive table (module doc).

    Parameters
    ----------
    qi_table : DataFrame, ``qi_group`` and every QI exact (dates as dates or days), one row
        per released tuple.
    sensitive : DataFrame, ``qi_group``, the sensitive column, ``count`` (int >= 1).
    original : DataFrame, the original view (QIs and S as :func:`dpriv.inputs.prepared`
        leaves them: dates as days).
    policy : the resolved policy (the sensitive domain).

    Returns
    -------
    list of str
        Empty when the release fits, or when its format or counts are already wrong (the
        other checks report a missing column, an unknown value, sizes that differ).
    """
    qi, s_name, dom = list(policy.qi), policy.sensitive, policy.sensitive_domain
    if any(c not in qi_table for c in [GROUP, *qi]) or any(c not in original for c in [*qi, s_name]):
        return []
    if any(c not in sensitive for c in (GROUP, s_name, COUNT)) or not 0 < len(qi_table) <= len(original):
        return []
    qi_table = qi_table.assign(**{q: to_days(qi_table[q]) for q in date_qi(policy)})
    x_orig, x_rel, n_vec = qi_vectors(original, qi_table, qi)
    over = np.flatnonzero(np.bincount(x_rel, minlength=n_vec) > np.bincount(x_orig, minlength=n_vec))
    if over.size:
        return [*listed("", [_over(qi_table, x_rel, x_orig, x, qi) for x in over]), WHY]
    m, table = len(dom), _table(qi_table, sensitive, original, policy)
    if table is None:
        return []
    labels, g, pairs, capacity = table
    x_s, n_xs = np.unique(x_orig * m + codes(original[s_name], dom), return_counts=True)
    flows = _Flows(x_rel * labels.size + g, labels.size, x_s, n_xs, pairs, m)
    held = np.bincount(flows.pair, weights=flows.cap, minlength=pairs.size).astype(np.int64)
    lines = [
        f"QI-group {as_python(labels[pairs[i] // m])!r}: {held[i]} of its rows can be tuples of the "
        f"original with {s_name} = {as_python(dom[pairs[i] % m])!r}; its sensitive table counts {capacity[i]}"
        for i in np.flatnonzero(held < capacity)
    ]
    if lines:
        return [*listed("", lines), WHY]
    n_rel = len(qi_table)
    placed = transported(flows.rows, capacity, flows.cell, flows.pair, flows.cap)
    if placed == n_rel:  # each group alone fits; now every group's rows of x share the tuples of x
        s_rel = pairs % m
        demand = np.bincount(s_rel, weights=capacity, minlength=m).astype(np.int64)
        supply = np.bincount(x_rel, minlength=n_vec)
        placed = transported(supply, demand, x_s // m, x_s % m, n_xs)
    if placed == n_rel:
        return []
    return [
        f"no assignment of the QI table's {counted(n_rel, 'row')} to tuples of the original gives "
        f"every QI-group the {s_name} values its sensitive table counts: at most "
        f"{counted(placed, 'row fits', 'rows fit')}",
        WHY,
    ]


def _table(qi_table: pd.DataFrame, sensitive: pd.DataFrame, original: pd.DataFrame, policy: ReleasePolicy):
    """(group labels, each QI row's group index, the sorted (group, value) pairs ``g * M + s``
    of the sensitive table, their counts); None when a value, label or count is unreadable or
    the counts do not add up to the QI rows (the format checks report those)."""
    dom, m = policy.sensitive_domain, len(policy.sensitive_domain)
    s_tab = codes(sensitive[policy.sensitive], dom)
    labels, g = np.unique(qi_table[GROUP].to_numpy(), return_inverse=True)
    named = sensitive[GROUP].to_numpy()
    g_tab = np.minimum(np.searchsorted(labels, named), labels.size - 1)
    count = pd.to_numeric(sensitive[COUNT], errors="coerce").to_numpy()
    bad = (codes(original[policy.sensitive], dom) < 0).any() or (s_tab < 0).any()
    if bad or (labels[g_tab] != named).any() or not (count >= 1).all():
        return None
    pairs, inv = np.unique(g_tab.astype(np.int64) * m + s_tab, return_inverse=True)
    capacity = np.bincount(inv.ravel(), weights=count).astype(np.int64)
    return (labels, g, pairs, capacity) if int(capacity.sum()) == len(qi_table) else None


class _Flows:
    """The per-group transportation problem: supply nodes the (QI vector x, group g) cells of
    the QI table (``rows``: how many rows each), demand nodes the (group, value) ``pairs``;
    an edge (x, g) -> (g, s) of capacity n(x, s), the original's tuples (x, s), when the group
    counts s. ``cells``: ``x * G + g`` of each row; ``x_s``, ``n_xs``: the original's sorted
    ``x * M + s`` and their counts."""

    def __init__(self, cells, n_groups, x_s, n_xs, pairs, m):
        cells, self.rows = np.unique(cells, return_counts=True)
        x, g = cells // n_groups, cells % n_groups
        start, stop = np.searchsorted(x_s // m, x, "left"), np.searchsorted(x_s // m, x, "right")
        length = stop - start
        tail = np.repeat(np.arange(cells.size), length)
        at = start[tail] + np.arange(tail.size) - np.repeat(np.cumsum(length) - length, length)
        code = g[tail] * m + x_s[at] % m
        pair = np.minimum(np.searchsorted(pairs, code), pairs.size - 1)
        ok = pairs[pair] == code
        self.cell, self.pair = tail[ok], pair[ok]
        self.cap = np.minimum(n_xs[at[ok]], self.rows[tail[ok]])


def _over(qi_table: pd.DataFrame, x_rel: np.ndarray, x_orig: np.ndarray, x: int, qi: list[str]) -> str:
    """A QI vector released more often than the original holds it, with its groups."""
    rows = qi_table[x_rel == x]
    shown = ", ".join(f"{q} {as_python(rows[q].iloc[0])!r}" for q in qi)
    groups = ", ".join(str(as_python(v)) for v in pd.unique(rows[GROUP])[:5])
    return (
        f"the QI table holds ({shown}) {len(rows)} times (QI-groups {groups}) where the original "
        f"has it {int((x_orig == x).sum())} times"
    )
