"""The window slots of a new state that no respondent has filled yet, held as one NaN column.

A state keeps each respondent's last ``W`` posteriors (``pk<w>__<value>``, oldest first, NaN
before the first: :func:`dpriv.state.empty_state`). After the first release every respondent
has one posterior, so the ``W - 1`` oldest slots are NaN in every row (38 of the 57 float
columns of the paper's setting); after the second, ``W - 2``; and so on. Written out, those
columns were most of the state update's work and of the memory the new state holds until the
ledger is written (~3 GB of NaN at 10^7 respondents). Here they are one read-only block whose
columns share one NaN column (:func:`nan_block`): one column is written and held for them all,
every reader sees NaN columns (the Parquet writer, a Dask transfer and pickling copy them out as
ordinary ones, so the ledger's bytes do not change), and the next release finds them empty
(:func:`all_nan`) and carries them on the same way while they stay so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def nan_block(nrows: int, columns: list[str]) -> pd.DataFrame:
    """A frame of ``nrows`` rows of float64 NaN in ``columns``, held as one read-only block
    whose columns are all the same contiguous NaN array (stride 0 across columns): one column's
    bytes, whatever the number of columns. Contiguous columns, because the Parquet writer
    converts a column of stride 0 along its rows slower than it writes a plain one."""
    values = np.broadcast_to(np.full(nrows, np.nan), (len(columns), nrows))
    return pd.DataFrame(values.T, columns=columns, copy=False)


def all_nan(values: np.ndarray) -> bool:
    """Whether the 1-D float array ``values`` is NaN in every row (False when empty). Reads
    it all only when its first value and a sample of ~1,000 are NaN (a filled window column,
    or one filled for some respondents, stops there)."""
    sample = values[:: max(len(values) // 1000, 1)]
    return bool(len(values) and np.isnan(sample).all() and np.isnan(values).all())


def unfilled_slots(floats: list[str], state: pd.DataFrame, moved: dict, kept: bool, advanced: bool) -> int:
    """How many of the window columns ``floats`` (oldest first), from the first, are NaN in
    every row of the new state (:func:`dpriv.state._next_state_pandas`): in the kept rows
    (``kept``: there are some) the ``state``'s column, in the advanced rows (``advanced``: there
    are some) ``moved[col]``, the name of the state column one slot newer (NaN for a
    first-timer) or the values themselves (not looked into: posteriors). Only a leading run
    counts (the window empties from its oldest slots), so the NaN columns come before the others."""

    def empty(col: str) -> bool:  # the state's column: NaN in every row (a state without rows: no value)
        return not len(state) or all_nan(state[col].to_numpy())

    count = 0
    for col in floats:
        source = moved[col]
        if (kept and not empty(col)) or (advanced and not (isinstance(source, str) and empty(source))):
            break
        count += 1
    return count
