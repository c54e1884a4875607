"""CreateQIG on Dask parts of whole QI-groups, cut into label ranges in their written order.

The qig step of a Dask release (issue 13): each part of the membership holds whole QI-groups
(:func:`dpriv.whole_groups.whole_groups`); its released rows (:func:`dpriv.released.create_qig`)
are built already in their written order (:func:`dpriv.released.in_release_order`: by label,
then ``_order``), so the label ranges (:func:`dpriv.released.label_divisions`) are contiguous
slices of them, with no mask per range. A range then only merges its pieces, each sorted and
holding groups no other piece holds: a stable sort on the label of runs already in order
(timsort), not the two-key sort of every row. What the released rows hold, their dtypes and
their order are those of CreateQIG per part cut by :func:`dpriv.whole_groups.in_label_ranges`.
"""

from __future__ import annotations

from dataclasses import dataclass

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._random import keyed, stable_hash
from dpriv.policy import ReleasePolicy
from dpriv.released import GROUP, LABEL, ORDER, bound_dtype, is_text_dtype, label_divisions, qig_table
from dpriv.row_order import in_order, increasing_positions, then_by
from dpriv.whole_groups import from_delayed_parts


def released_ranges(
    assigned: dd.DataFrame, policy: ReleasePolicy, npartitions: int, meta: pd.DataFrame
) -> dd.DataFrame:
    """The released rows of ``assigned`` (Dask membership, each part whole QI-groups,
    ``_label`` int64 >= 0) in ``npartitions`` label ranges, each in its written order: the
    parts in order are the released view with its private ``_order`` column. ``meta``: the
    released columns and dtypes (:func:`dpriv.released.released_meta`); an empty range is
    ``meta``. The same rows, dtypes and order as ``create_qig`` per part followed by
    :func:`dpriv.whole_groups.in_label_ranges`."""
    n = max(npartitions, 1)
    divisions = np.asarray(label_divisions(n), dtype=np.int64)
    parts = assigned.to_delayed()
    split = [dask.delayed(sorted_pieces, nout=n, pure=True)(p, policy, divisions) for p in parts]
    merged = [
        dask.delayed(merged_range, pure=True)([split[j][i] for j in range(len(parts))], meta)
        for i in range(n)
    ]
    return from_delayed_parts(merged, meta)


@dataclass
class Piece:
    """Released rows of one part in one label range, in their written order: NumPy
    ``columns`` (the released columns, views of the part's), the text column ``coded`` (if
    any) as int32 codes into ``values`` (its distinct cells, object): a worker sends buffers,
    not one pickled string per row."""

    columns: dict[str, np.ndarray]
    coded: str | None = None
    values: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.columns[GROUP])


def sorted_pieces(part: pd.DataFrame, policy: ReleasePolicy, divisions: np.ndarray) -> tuple:
    """CreateQIG of ``part`` (grouped rows holding whole groups, pandas), its released rows
    sorted by (label, ``_order``) (ties in their order in ``part``) and cut into the label
    ranges of ``divisions``: a :class:`Piece` per range (piece ``i``: ``divisions[i] <= label <
    divisions[i + 1]``, the last one closed), columns as :func:`dpriv.released.apply_qig`'s."""
    label = part[LABEL].to_numpy(dtype=np.int64)
    keys = np.sort(pd.unique(label))  # the groups' labels, sorted as in qig_table
    rank = np.searchsorted(keys, label)  # each row's group: its label's rank
    order = keyed(stable_hash(part[policy.id]), policy.seed, "order")
    pos = written_positions(rank, order, len(keys))
    rank = rank[pos]
    columns = {GROUP: label[pos].astype(part[LABEL].dtype, copy=False)}
    columns.update({c: v[rank] for c, v in group_bounds(part, policy, keys, pos, rank).items()})
    cells, values = cell_codes(part[policy.sensitive])
    columns[policy.sensitive] = cells[pos]
    columns[ORDER] = order[pos]
    coded = policy.sensitive if values is not None else None
    # labels in order: range i starts at the first label >= divisions[i] (range 0 at the start)
    edges = [0, *np.searchsorted(label[pos], divisions[1:-1], side="left").tolist(), len(part)]
    return tuple(
        Piece({c: v[a:b] for c, v in columns.items()}, coded, values) for a, b in zip(edges[:-1], edges[1:])
    )


def group_bounds(
    part: pd.DataFrame, policy: ReleasePolicy, keys: np.ndarray, pos: np.ndarray, rank: np.ndarray
) -> dict[str, np.ndarray]:
    """The CreateQIG table of ``part`` (:func:`dpriv.released.qig_table`) as one array per
    column, one value per group of ``keys`` (its sorted labels): ``pos`` and ``rank`` (sorted)
    are the rows' written positions and their groups' ranks. When every QI is numeric of a NumPy
    integer dtype, the bounds are the min and max of each run of a group's rows (no groupby);
    any other policy asks :func:`dpriv.released.qig_table`."""
    integers = all(
        isinstance(part[q].dtype, np.dtype) and part[q].dtype.kind in "iu" for q in policy.numeric_qi
    )
    if policy.categorical_qi or not integers or not len(part):
        table = qig_table(part, policy)
        if not np.array_equal(table.index.to_numpy(dtype=np.int64), keys):
            raise RuntimeError("QIG table disagrees on the QI-groups; please report this bug")
        return {c: table[c].to_numpy() for c in table.columns}
    starts = np.searchsorted(rank, np.arange(len(keys)))  # each group's first row in order
    bounds = {}
    for q in policy.numeric_qi:
        values = part[q].to_numpy().astype(bound_dtype(part[q].dtype), copy=False)[pos]
        bounds[f"{q}_min"] = np.minimum.reduceat(values, starts)
        bounds[f"{q}_max"] = np.maximum.reduceat(values, starts)
    return bounds


def merged_range(pieces: list[Piece], meta: pd.DataFrame) -> pd.DataFrame:
    """One label range from the pieces of :func:`sorted_pieces` (one per part, in part order),
    in its written order on a fresh RangeIndex, with ``meta``'s columns and dtypes (one block
    per column); ``meta`` if empty."""
    pieces = [p for p in pieces if len(p)]
    if not pieces:
        return meta
    coded = pieces[0].coded
    columns = {c: np.concatenate([p.columns[c] for p in pieces]) for c in pieces[0].columns}
    if coded is not None:  # every piece's codes into the values of all pieces
        shift = np.cumsum([0, *(len(p.values) for p in pieces[:-1])])
        columns[coded] = np.concatenate([p.columns[coded] + k for p, k in zip(pieces, shift)])
    label = columns[GROUP]
    if not in_order([label]):  # runs of whole groups, each sorted: stable on the label alone
        at = np.argsort(label, kind="stable")
        columns = {c: v[at] for c, v in columns.items()}
    if not in_order([columns[GROUP], columns[ORDER]]):
        # a group in several pieces (never after whole_groups): the full two-key order
        at = written_positions(pd.factorize(columns[GROUP], sort=True)[0], columns[ORDER], 2**63)
        columns = {c: v[at] for c, v in columns.items()}
    if coded is not None:
        columns[coded] = np.concatenate([p.values for p in pieces])[columns[coded]]
    out = _frame(columns, pd.RangeIndex(len(label)))
    differ = {c: t for c, t in meta.dtypes.items() if out[c].dtype != t}
    return out.astype(differ) if differ else out


def _frame(columns: dict[str, np.ndarray], index: pd.RangeIndex) -> pd.DataFrame:
    """A frame of the NumPy ``columns`` as they are (one block each, no copy, no inferred
    dtype: pandas 3 would infer "str" from object strings; the meta says object)."""
    series = {c: pd.Series(v, dtype=v.dtype, index=index, copy=False) for c, v in columns.items()}
    return pd.DataFrame(series, index=index, copy=False)


def written_positions(rank: np.ndarray, order: np.ndarray, n_ranks: int) -> np.ndarray:
    """Positions (int64) of rows in stable (``rank``, ``order``) order, what a stable sort on
    both keys gives: ``rank`` int64 in ``[0, n_ranks)``, ``order`` uint64. Two passes (the
    order, then the rank, both stable); the order's pass is NumPy's quicksort unless two rows
    share an ``_order`` (a hash of distinct ids: almost never)."""
    first = increasing_positions(order)
    if first is None:  # ties: keep their row order
        first = np.argsort(order, kind="stable")
    return then_by(first, rank, n_ranks)


def cell_codes(cells: pd.Series) -> tuple[np.ndarray, np.ndarray | None]:
    """``cells.to_numpy()`` as (codes, values) with ``values[codes]`` equal to it: a text column
    (a pandas string dtype) as int32 codes into its distinct cells (object, missing values as
    that ``to_numpy`` gives them), converted once per distinct value; any other column as
    (``cells.to_numpy()``, None)."""
    if not is_text_dtype(cells.dtype):
        return cells.to_numpy(), None
    codes, uniques = pd.factorize(cells.array, use_na_sentinel=False)
    return codes.astype(np.int32), np.asarray(uniques.to_numpy())
