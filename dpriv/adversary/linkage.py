"""Membership from QIs alone (issue 11, item 4).

A weaker adversary than docs/algorithms.md §1.1 (ii): she does not get the QI-group membership,
only everyone's QIs (the original view ``V_i``), the published boxes (per QI-group the
``<qi>_min``/``<qi>_max`` interval of a numeric QI, the value set of a categorical one) and
the group sizes. Which respondents can she still pin to exactly one QI-group?

A respondent can be in group ``g`` only if her QIs fall in ``g``'s box; group ``g`` holds
exactly ``|g|`` of them, and the rest of the view (``|V_i| - |V*_i|``, the suppressed tuples)
is in no group. She is *pinned* when every assignment that respects the boxes and the sizes
puts her in the same group: one max flow and one SCC pass over respondents x (groups + "not
released") (:func:`dpriv.adversary._assign.feasible_edges`). This is exact, and it contains
the simple rule (a respondent inside exactly one box, then a box whose unpinned candidates
number its remaining size pins them all, iterated), which is only sound with nothing
suppressed. Disjoint boxes (Mondrian) pin every released respondent when nothing is
suppressed; overlapping boxes (JS-reduce's Hilbert-ordered groups) pin fewer.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpriv.adversary._assign import feasible_edges
from dpriv.errors import InputError

__all__ = ["Linkage", "qi_linkage"]


@dataclass(frozen=True)
class Linkage:
    """Result of :func:`qi_linkage` for one release.

    Attributes
    ----------
    n_respondents : int
        Respondents whose QIs the adversary knows (rows of the original view).
    n_released : int
        Tuples of the released view (sum of the group sizes).
    n_pinned : int
        Respondents that every assignment puts in one and the same QI-group.
    n_single_box : int
        Respondents whose QIs fall in exactly one box (pinned outright when nothing is
        suppressed; with suppression such a respondent may be a suppressed one).
    labels : ndarray
        The released ``qi_group`` labels, sorted; group index ``g`` is ``labels[g]``.
    n_boxes : int64 ndarray of shape (n_respondents,)
        Boxes that contain each respondent's QIs.
    pinned_group : int64 ndarray of shape (n_respondents,)
        Group index each pinned respondent is in, -1 elsewhere (original row order).
    """

    n_respondents: int
    n_released: int
    n_pinned: int
    n_single_box: int
    labels: np.ndarray
    n_boxes: np.ndarray
    pinned_group: np.ndarray

    @property
    def share_pinned(self) -> float:
        """Pinned respondents per released tuple, in [0, 1]; NaN for an empty release."""
        return self.n_pinned / self.n_released if self.n_released else float("nan")


def _cell_values(text: object, leaves: Mapping[str, Collection] | None) -> set[str]:
    """Values a released categorical cell stands for: a hierarchy node's leaves, else a set."""
    if leaves is not None and str(text) in leaves:
        return {str(v) for v in leaves[str(text)]}
    from dpriv.metrics.utility import parse_value_set

    return set(parse_value_set(str(text)))


def qi_linkage(
    released: pd.DataFrame,
    original: pd.DataFrame,
    *,
    numeric: Sequence[str] = (),
    categorical: Sequence[str] = (),
    group: str = "qi_group",
    leaves: Mapping[str, Mapping[str, Collection]] | None = None,
) -> Linkage:
    """How many respondents the QIs, boxes and group sizes of one release pin to one group.

    Parameters
    ----------
    released : DataFrame
        The released view ``V*_i``: ``group`` plus ``<qi>_min``, ``<qi>_max`` for each
        numeric QI and ``<qi>`` (a value set such as ``{Female,Male}``, or a hierarchy node)
        for each categorical QI; one row per kept tuple.
    original : DataFrame
        The QIs of every respondent of ``V_i`` (kept and suppressed), one row each: what the
        adversary knows. Columns ``numeric`` and ``categorical``.
    numeric, categorical : sequences of str
        QI names by kind.
    group : str
        Group-label column of ``released``.
    leaves : mapping, optional
        Per categorical QI released with a hierarchy: node -> the leaf values under it.

    Returns
    -------
    Linkage

    Raises
    ------
    InputError
        A missing column; more released tuples than respondents; or QIs that no assignment
        fits into the boxes (``original`` is not the released view's).
    """
    numeric, categorical = list(numeric), list(categorical)
    need = [group, *(f"{q}_{e}" for q in numeric for e in ("min", "max")), *categorical]
    missing = [c for c in need if c not in released.columns]
    missing += [c for c in numeric + categorical if c not in original.columns]
    if missing:
        raise InputError(f"QI linkage needs column(s) {missing}; give the released view and the original QIs")
    n = len(original)
    labels, gidx = np.unique(released[group].to_numpy(), return_inverse=True)
    sizes = np.bincount(gidx, minlength=labels.size).astype(np.int64)
    n_rel = int(sizes.sum())
    if n_rel > n:
        raise InputError(f"{n_rel} released tuples but only {n} respondents in the original view")
    first = np.zeros(labels.size, dtype=np.int64)
    first[gidx[::-1]] = np.arange(n_rel)[::-1]  # first row of each group
    boxes = released.iloc[first]

    inside = np.ones((n, labels.size), dtype=bool)
    for q in numeric:
        x = original[q].to_numpy(dtype=float)[:, None]
        lo = boxes[f"{q}_min"].to_numpy(dtype=float)[None, :]
        hi = boxes[f"{q}_max"].to_numpy(dtype=float)[None, :]
        inside &= (lo <= x) & (x <= hi)
    for q in categorical:
        codes, uniq = pd.factorize(original[q].astype(str))
        sets = [_cell_values(cell, None if leaves is None else leaves.get(q)) for cell in boxes[q]]
        member = np.array([[u in s for u in uniq] for s in sets], dtype=bool).reshape(labels.size, uniq.size)
        inside &= member[:, codes].T
    n_boxes = inside.sum(axis=1).astype(np.int64)

    r, g = np.nonzero(inside)
    capacity = sizes
    if n > n_rel:  # "not released": anyone may be one of the suppressed tuples
        r = np.concatenate([r, np.arange(n)])
        g = np.concatenate([g, np.full(n, labels.size)])
        capacity = np.append(sizes, n - n_rel)
    try:
        ok = feasible_edges(r, g, n, capacity)
    except InputError:
        raise InputError(
            "the original QIs do not fit the released boxes and group sizes: give the original "
            "view of this release"
        ) from None
    options = np.bincount(r[ok], minlength=n)
    only = np.full(n, -1, dtype=np.int64)
    only[r[ok]] = g[ok]
    pinned = (options == 1) & (only < labels.size)
    return Linkage(
        n_respondents=n,
        n_released=n_rel,
        n_pinned=int(pinned.sum()),
        n_single_box=int((n_boxes == 1).sum()),
        labels=labels,
        n_boxes=n_boxes,
        pinned_group=np.where(pinned, only, -1),
    )
