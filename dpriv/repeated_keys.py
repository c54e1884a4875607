"""Whether the key of a Dask frame (a respondent per view: time and id) may occur twice, found
on the workers from one 64-bit hash per row (:func:`may_repeat`).

The exact count per key (a groupby of every key of the history into one task) was the largest
part of a 10^6-row history's input checks (issue 13); it now runs only when two rows share a
hash. Equal keys always have equal hashes, so a "no" is exact; a "maybe" (a true repeat or a
hash collision) leaves the answer to the exact count (:func:`dpriv.validate._duplicates`), which
names the rows. Only one boolean reaches the client.
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd


def _hashable(dtype) -> bool:
    """Whether equal values of ``dtype`` (as a groupby finds them) always hash alike: integers
    and text. Not floats (``-0.0`` and ``0.0`` hash apart) nor objects (``1`` and ``1.0`` are
    one key but two texts): their keys are counted exactly."""
    if isinstance(dtype, pd.StringDtype):
        return True
    return pd.api.types.is_integer_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)


def _row_hashes(part: pd.DataFrame) -> pd.DataFrame:
    """uint64 hash of each row of ``part`` (its key columns), in column ``h``: frames, which the
    reduction stacks (Series would be taken as rows)."""
    return pd.DataFrame({"h": pd.util.hash_pandas_object(part, index=False).to_numpy(dtype=np.uint64)})


def _any_twice(hashes: pd.DataFrame) -> bool:
    """Whether some hash occurs twice over all parts (one sort, on a worker)."""
    every = np.sort(hashes["h"].to_numpy(dtype=np.uint64))
    return bool((every[1:] == every[:-1]).any())


def may_repeat(keys: dd.DataFrame) -> dd.Scalar | bool:
    """Lazily (a Dask Scalar, to compute with other checks): False when no two rows of ``keys``
    (the key columns of a Dask frame) are equal, True when some may be. Key columns of other
    dtypes than integers and text are always "maybe" (plain True: counted exactly)."""
    if not all(_hashable(t) for t in keys.dtypes):
        return True
    return keys.reduction(_row_hashes, aggregate=_any_twice, split_every=False, meta=(None, bool))
