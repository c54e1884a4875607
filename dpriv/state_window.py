"""The window slots of a new state that no respondent has filled yet, held without their bytes.

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


def unfilled_slots(floats: list[str], kept_nan, moved_nan) -> int:
    """How many of the window columns ``floats`` (oldest first), from the first, are NaN in
    every row of the new state: ``kept_nan(col)`` says the kept rows' values are, and
    ``moved_nan(col)`` that the advanced rows' values are (both known without reading them).
    Only a leading run counts (the window empties from its oldest slots), so the NaN columns
    stay one block before the others."""
    count = 0
    for col in floats:
        if not (kept_nan(col) and moved_nan(col)):
            break
        count += 1
    return count
