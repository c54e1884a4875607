"""Whole QI-groups per part of a Dask membership, moving only the rows that must move.

After the grouping, the repair and the guards, almost every QI-group already lies in one part
(a Hilbert range); only the groups that the repair, a guard or a range boundary spread over
several parts need their rows brought together. :func:`whole_groups` gives each such group a
home part (the part holding most of its rows) and moves only its rows held elsewhere: the wide
membership (id, QIs, sensitive code, label and every prior column) is not shuffled whole, as a
range shuffle on the label would (issue 13, the qig step). The parts then hold whole groups in
no particular label order; :func:`in_label_ranges` then cuts the released rows of those parts
into label ranges (:func:`dpriv.released.label_divisions`), each sorted in
:func:`dpriv.released.in_release_order`: the parts in their written order, with no Dask shuffle
(its set_index, sort and casts cost as much for the narrow released rows as for the membership).
"""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from dask.delayed import Delayed

from dpriv.released import GROUP, LABEL, in_release_order, label_divisions


def whole_groups(assigned: dd.DataFrame) -> tuple[dd.DataFrame, Delayed]:
    """``assigned`` (Dask, ``_label`` int64 >= 0) with every QI-group's rows in one part, and
    the homes the result's graph reads (persisted): the caller holds them until it has
    persisted the result, or a later compute of it finds them gone ("lost dependencies").

    The same number of parts, columns and dtypes; a part keeps its rows (in their order), less
    those leaving, followed by the rows arriving from the other parts in part order. One small
    compute: the labels and their row counts per part meet in one task on a worker, whose homes
    of the spread groups (:func:`_homes`) stay there, persisted, for the parts' splits; only the
    number of spread groups comes back to the client. Every group whole: ``assigned`` itself.
    """
    n = assigned.npartitions
    parts = assigned.to_delayed()
    # the homes are found on a worker and handed to the splits there: a list of labels per
    # part is O(groups), too much to bring to the client (tests/test_client_bytes.py); persisted,
    # so that the splits read them rather than count every part's labels again
    counted = [dask.delayed(_label_counts, pure=True)(p) for p in parts]
    (home,) = dask.persist(dask.delayed(_homes, pure=True)(counted))
    if not dask.compute(dask.delayed(_n_spread, pure=True)(home))[0]:  # every group whole: nothing moves
        return assigned, home
    split = [dask.delayed(_split, nout=n, pure=True)(p, home, i, n) for i, p in enumerate(parts)]
    pieces = [[split[j][i] for j in range(n)] for i in range(n)]
    joined = [dask.delayed(_joined, pure=True)(i, pieces[i]) for i in range(n)]
    return from_delayed_parts(joined, assigned._meta), home


def in_label_ranges(released: dd.DataFrame, npartitions: int) -> dd.DataFrame:
    """Released rows (Dask, parts of whole QI-groups, ``qi_group`` int64 >= 0) cut into
    ``npartitions`` label ranges (:func:`dpriv.released.label_divisions`, as a range shuffle
    on the label would), each part in :func:`dpriv.released.in_release_order`: the parts in
    order are the released rows in their written order. Columns and dtypes as ``released``'s;
    an empty range is ``released``'s meta."""
    n = max(npartitions, 1)
    divisions = np.asarray(label_divisions(n), dtype=np.int64)
    parts = released.to_delayed()
    split = [dask.delayed(_cut, nout=n, pure=True)(p, divisions) for p in parts]
    ranged = [
        dask.delayed(_ranged, pure=True)([split[j][i] for j in range(len(parts))], released._meta)
        for i in range(n)
    ]
    return from_delayed_parts(ranged, released._meta)


def from_delayed_parts(parts: list, meta: pd.DataFrame) -> dd.DataFrame:
    """A Dask frame of delayed ``parts`` of ``meta``'s dtypes, as they are: Dask would convert
    object text columns to Arrow strings (``dataframe.convert-string``), which a
    ``map_partitions`` of the same kernels does not, and the bytes released would change."""
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_delayed(parts, meta=meta, verify_meta=False)


def _cut(part: pd.DataFrame, divisions: np.ndarray) -> tuple:
    """``part`` cut into the label ranges of ``divisions`` (range ``i``: ``divisions[i] <= label
    < divisions[i + 1]``, the last one closed), rows in their order."""
    n = len(divisions) - 1
    dest = (np.searchsorted(divisions, part[GROUP].to_numpy(np.int64), side="right") - 1).clip(0, n - 1)
    return tuple(part[dest == i] for i in range(n))


def _ranged(pieces: list[pd.DataFrame], meta: pd.DataFrame) -> pd.DataFrame:
    """One label range of the released rows from its pieces, in their written order."""
    rows = [p for p in pieces if len(p)]
    if not rows:
        return meta
    rows = in_release_order(pd.concat(rows) if len(rows) > 1 else rows[0])
    # the meta's dtypes, as a range shuffle's cast would give them: a text column that came in
    # as a pandas string dtype (the membership was never shuffled) is released as the meta says
    differ = {c: t for c, t in meta.dtypes.items() if rows[c].dtype != t}
    return rows.astype(differ) if differ else rows


def _label_counts(part: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct labels of a part and their row counts (int64, int64)."""
    labels, counts = np.unique(part[LABEL].to_numpy(np.int64), return_counts=True)
    return labels, counts.astype(np.int64)


def _homes(counted) -> tuple[np.ndarray, np.ndarray]:
    """Home part of each label found in more than one part: (labels, parts), int64, sorted by
    label; the part holding most of its rows, the first such part on a tie."""
    labels = np.concatenate([c[0] for c in counted])
    counts = np.concatenate([c[1] for c in counted])
    part = np.concatenate([np.full(len(c[0]), i, dtype=np.int64) for i, c in enumerate(counted)])
    # by label, then most rows first, then the first part: the first row of each label wins
    order = np.lexsort((part, -counts, labels))
    labels, part = labels[order], part[order]
    same = labels[1:] == labels[:-1]  # (an empty membership has no label at all)
    first, followed = np.ones(len(labels), dtype=bool), np.zeros(len(labels), dtype=bool)
    first[1:], followed[:-1] = ~same, same
    keep = first & followed  # the home of a label found in several parts
    return labels[keep], part[keep]


def _n_spread(homes: tuple[np.ndarray, np.ndarray]) -> int:
    """How many QI-groups :func:`_homes` found spread over several parts."""
    return len(homes[0])


def _split(part: pd.DataFrame, homes: tuple[np.ndarray, np.ndarray], me: int, n: int) -> tuple:
    """``part`` cut into ``n`` pieces: piece ``i`` its rows whose group's home (``homes``:
    :func:`_homes`) is part ``i`` (piece ``me``: the rows staying, every group not spread and
    those at home here)."""
    keys, home = homes
    lab = part[LABEL].to_numpy(np.int64)
    at = np.searchsorted(keys, lab).clip(0, max(len(keys) - 1, 0))
    dest = np.where(keys[at] == lab, home[at], me) if len(keys) else np.full(len(lab), me)
    if (dest == me).all():
        return tuple(part if i == me else part.iloc[:0] for i in range(n))
    return tuple(part[dest == i] for i in range(n))


def _joined(me: int, pieces: list[pd.DataFrame]) -> pd.DataFrame:
    """Part ``me`` of the result: its own rows, then those arriving, in part order."""
    arriving = [p for i, p in enumerate(pieces) if i != me and len(p)]
    if not arriving:
        return pieces[me]
    return pd.concat([pieces[me], *arriving])
