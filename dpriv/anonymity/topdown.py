"""Top-down JS-reduce grouping: a Mondrian-style split under k, t and j (issue 12, direction 1).

Where the greedy scan (:mod:`dpriv.anonymity.jsreduce`) grows groups along the Hilbert order
(overlapping, often large boxes), this grouping cuts boxes of the QI space (plus, with
``policy.prior_key``, the expected rank of S under each tuple's prior RBK^sv, as one more
dimension) into non-overlapping halves, Mondrian-like (docs/algorithms.md §4.4), and stops where
no cut keeps both halves valid under (E9): ``|Q| >= k``, ``EMD(P_Q, P_V) <= t`` against the
WHOLE view and ``JS(RBK of Q) <= j`` (E8). The thresholds are those of
:func:`dpriv.criteria.criteria_for` (the one table of criteria); EMD is decided exactly on
integer counts (:meth:`~dpriv.criteria.TCloseness.holds_counts`), JS with
:func:`~dpriv.divergence.js_from_sums`.

A node (a set of tuples, a box)

* that satisfies (E9) is cut, with ``cut = "median"`` (Mondrian, the default), at the boundary
  between distinct values closest to the median of its widest dimension (normalised span; the
  next widest if none works) whose two halves both satisfy (E9); with ``cut = "slack"``, among
  all boundaries of all dimensions whose two halves satisfy (E9), at the one whose halves have
  the most slack under (E9): the smallest size-weighted load ``(|L| l(L) + |R| l(R)) / |Q|``,
  ``l = max(JS / j, EMD / t)`` (a threshold of 0 counts 0; ties: closest to the median, then
  the widest dimension), so that the halves can be cut further (issue 12, direction 2; with
  ``pc`` the principal knowledge axis is a candidate too); with ``cut = "box"``, among the same
  cuts, at the one with the smallest size-weighted box of the halves ``|L| s(L) + |R| s(R)``,
  ``s`` the summed span of the split coordinates (ties as for ``"slack"``: a greedy step on
  the semiperimeter (E11) itself); with ``cut = "slack-widest"``, in Mondrian's dimension (the
  widest with a valid cut), at the position with the most slack among those leaving at least a
  quarter of the node on each side (any position if none does); with ``cut = "gini"``, among
  the same cuts as ``"slack"``, at the one whose halves are purest in S, the smallest
  size-weighted Gini impurity ``|L| (1 - sum f_L^2) + |R| (1 - sum f_R^2)`` (the split rule of
  classification trees, as in workload-aware Mondrian; a greedy step on the grouping's part of
  the gain (E10), docs/algorithms.md §2.4); with no such cut it becomes one QI-group;
* that breaks (E9) (JS is not monotone under merge, so a large box usually does) must be cut:
  among all boundaries of all dimensions leaving ``>= k`` tuples on each side, the one with the
  smallest size-weighted violation ``|L| v(L) + |R| v(R)``, ``v = max(0, JS - j) +
  max(0, EMD - t)`` (ties: closest to the median, then the widest dimension); with no such
  boundary (fewer than 2k tuples) it sheds, one at a time, the member whose removal lowers the
  violation most until (E9) holds; the shed members (or all, if fewer than k remain) are
  *leftovers*.

With ``policy.rbk_closeness`` set, "(E9)" above also asks RBK-closeness of every set: its
sensitive distribution within that total variation of the mean of its members' priors (a term
``max(0, TV - c)`` in the violation, ``TV / c`` in the load; docs/algorithms.md).

Leftovers go to the same repair as the scan's (attach to a nearby group that keeps (E9), scan
the rest greedily, attach again, suppress what remains), so every kept group satisfies (E9).

Partition independence: the roots are *blocks*, the sub-cubes of the Hilbert curve at
``policy.topdown_level`` (the key's leading ``level * d`` bits, d the key dimensions; level 0
= the whole view). A Hilbert range processes its complete blocks and carries the last one
(possibly cut by the range boundary) to the next range, like the scan's open tail; so the
groups depend only on the view, never on the number of partitions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv.anonymity.topdown_levels import median_groups
from dpriv.anonymity.topdown_split import Split
from dpriv.hilbert.keys import grouping_coords, is_anatomy
from dpriv.policy import ReleasePolicy

UNGROUPED = -1


def topdown_groups(
    x: np.ndarray,
    s: np.ndarray,
    priors: np.ndarray,
    view_counts: np.ndarray,
    *,
    k: int,
    t: float,
    j: float,
    ground: int = 0,
    log_base: float = 2.0,
    blocks: np.ndarray | None = None,
    pc: bool = False,
    cut: str = "median",
    c: float = 1.0,
) -> np.ndarray:
    """Top-down QI-groups of ``n`` tuples (module doc).

    Parameters
    ----------
    x : float (n, d), the split coordinates (QIs scaled to [0, 1]; optionally the prior rank)
    s : int (n,), sensitive codes in [0, M)
    priors : float (n, M), each tuple's RBK^sv (rows sum to 1)
    view_counts : int (M,), counts of S over the WHOLE original view (P_V of (E9))
    k, t, j, ground, log_base : the (E9) thresholds (``ground``: ``EQUAL`` or ``ORDERED``)
    blocks : int (n,), the root each tuple belongs to (default: one root); groups never
        cross blocks.
    pc : a node that breaks (E9) may also be cut along the first principal axis of its
        priors in Hellinger coordinates (a knowledge cut; the halves' boxes may overlap); with
        ``cut = "slack"`` a node that satisfies (E9) may be cut along it too.
    cut : how a node that satisfies (E9) is cut: ``"median"`` (Mondrian), ``"slack"``, ``"box"``,
        ``"slack-widest"`` or ``"gini"`` (module doc).
    c : RBK-closeness, in [0, 1]: every group also keeps its sensitive distribution within this
        total variation of the mean of its members' priors (1.0, the default: off).

    Returns
    -------
    int64 (n,): group number in [0, G) (blocks in order of first appearance), -1 for a
    leftover (a tuple the split could not place in a group satisfying (E9)).
    """
    split = Split(
        x, s, priors, view_counts, k=k, t=t, j=j, ground=ground, log_base=log_base, pc=pc, cut=cut, c=c
    )
    n = len(split.s)
    out = np.full(n, UNGROUPED, dtype=np.int64)
    if n == 0:
        return out
    if blocks is None:
        roots = [np.arange(n, dtype=np.int64)]
    else:  # each block's positions (increasing), blocks in order of first appearance
        order = np.argsort(np.asarray(blocks), kind="stable")
        sb = np.asarray(blocks)[order]
        ends = np.flatnonzero(sb[1:] != sb[:-1]) + 1
        roots = sorted(np.split(order, ends), key=lambda rows: rows[0])
    if cut == "median" and not pc:  # the recommended policy's: one depth level at a time
        groups = median_groups(split, roots)
    else:
        groups = [kept for root in roots for kept in split.groups(root)]
    for g, kept in enumerate(groups):
        out[kept] = g
    return out


def split_coords(part: pd.DataFrame, policy: ReleasePolicy) -> np.ndarray:
    """The split dimensions of keyed rows: the QIs on [0, 1] and, with ``prior_key``, the
    expected rank of S under the prior (the same summary the Hilbert key uses)."""
    x = grouping_coords(part, policy)
    if policy.prior_key and not is_anatomy(policy):
        prior = part[policy.prior_columns].to_numpy(dtype=np.float64)
        m = prior.shape[1]
        rank = prior @ np.linspace(0.0, 1.0, m) if m > 1 else np.zeros(len(part))
        x = np.column_stack([x, rank])
    return x
