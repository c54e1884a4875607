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

__all__ = ["Linkage", "exact_qi_linkage", "qi_linkage", "qi_vectors"]

#: :func:`qi_vectors` numbers a row's QI codes as one int64 while their combinations stay below
#: this (a 1-d hash, 1.5x to 3x faster than sorting the rows as records); above, it sorts them.
RADIX_LIMIT = 2.0**62


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


def cell_values(text: object, leaves: Mapping[str, Collection] | None) -> set[str]:
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
        sets = [cell_values(cell, None if leaves is None else leaves.get(q)) for cell in boxes[q]]
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


def exact_qi_linkage(
    qi_table: pd.DataFrame, original: pd.DataFrame, qi: Sequence[str], *, group: str = "qi_group"
) -> Linkage:
    """:func:`qi_linkage` for an Anatomy release, whose QI table publishes every kept tuple's
    EXACT QIs with its group label (docs/released-format.md, "Anatomy").

    Respondents with the same QI vector ``x`` are interchangeable, and one with ``x`` can only
    be a released row with ``x`` or a suppressed tuple, so the feasibility decomposes by ``x``:
    with ``a_x`` respondents and ``b_{x,g}`` rows of group ``g`` carrying ``x``, a respondent
    with ``x`` is pinned iff exactly one group has ``b_{x,g} > 0`` and ``sum_g b_{x,g} = a_x``
    (none of them can be a suppressed one). Exact, and the known price of Anatomy: with
    distinct QI vectors and nothing suppressed, every released respondent is pinned.

    Parameters
    ----------
    qi_table : DataFrame, ``group`` and the QI columns, one row per kept tuple
    original : DataFrame, the QIs of every respondent of ``V_i`` (kept and suppressed)
    qi : the QI names (compared by value, as text for non-numbers)

    Raises
    ------
    InputError
        A missing column, or a QI vector released more often than the original view has it.
    """
    qi = list(qi)
    missing = [c for c in [group, *qi] if c not in qi_table.columns]
    missing += [c for c in qi if c not in original.columns]
    if missing:
        raise InputError(f"QI linkage needs column(s) {missing}; give the QI table and the original QIs")
    n, n_rel = len(original), len(qi_table)
    labels, gidx = np.unique(qi_table[group].to_numpy(), return_inverse=True)
    x_orig, x_rel, n_vec = qi_vectors(original, qi_table, qi)
    a = np.bincount(x_orig, minlength=n_vec)
    b = np.bincount(x_rel, minlength=n_vec)
    if (b > a).any():
        raise InputError(
            "the original QIs do not fit the released QI table (a QI vector is released more often "
            "than the original view has it): give the original view of this release"
        )
    cells = pd.DataFrame({"x": x_rel, "g": gidx}).drop_duplicates()
    n_groups_of_x = np.bincount(cells["x"].to_numpy(), minlength=n_vec)
    only_group = np.full(n_vec, -1, dtype=np.int64)
    only_group[cells["x"].to_numpy()] = cells["g"].to_numpy()
    pinned_x = (n_groups_of_x == 1) & (b == a)
    pinned = pinned_x[x_orig]
    return Linkage(
        n_respondents=n,
        n_released=n_rel,
        n_pinned=int(pinned.sum()),
        n_single_box=int((n_groups_of_x[x_orig] == 1).sum()),
        labels=labels,
        n_boxes=n_groups_of_x[x_orig].astype(np.int64),
        pinned_group=np.where(pinned, only_group[x_orig], -1),
    )


def qi_vectors(original: pd.DataFrame, qi_table: pd.DataFrame, qi: Sequence[str]):
    """Each row's QI vector as one number, shared by the two tables: (int64 (len(original),),
    int64 (len(qi_table),), the number of distinct vectors). Numbers compare by value (53 and
    53.0 alike), anything else by its text."""
    n = len(original)
    both = pd.concat([original[list(qi)], qi_table[list(qi)]], ignore_index=True)
    num = {q: pd.api.types.is_numeric_dtype(both[q]) for q in qi}
    cols = [pd.factorize(both[q] if num[q] else both[q].astype(str))[0].astype(np.int64) for q in qi]
    sizes = [int(c.max()) + 1 if c.size else 1 for c in cols]
    if float(np.prod(sizes, dtype=float)) < RADIX_LIMIT:  # one mixed-radix number per row: a 1-d hash
        key = np.zeros(len(both), dtype=np.int64)
        for c, size in zip(cols, sizes):
            key = key * size + c
        vec = pd.factorize(key)[0].astype(np.int64)
    else:
        vec = np.unique(np.column_stack(cols), axis=0, return_inverse=True)[1].ravel().astype(np.int64)
    return vec[:n], vec[n:], int(vec.max()) + 1 if len(vec) else 0
