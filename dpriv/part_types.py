"""The column types a Dask history's partitions hold, not only those of its meta.

A Dask frame's dtypes (its ``_meta``) are those of its first part: ``dd.read_parquet`` of a
weekly folder whose week-5 file writes ages as ``55.0``, ids as floats or a numeric QI as text
gives a frame that claims int64 while one partition holds float64 or text. Every type check
before a release reads the meta (:mod:`dpriv.resume_types`: "column type changed between
weeks"), so such a history was released with the changed types and the ledger then refused the
correct data. :func:`as_data_types` looks at what each partition holds (one pass over the
policy's columns) and gives the history the type pandas gives the same rows concatenated
(int64 and float64: float64; numbers and text: object), each partition cast to it: the checks
that follow then refuse or accept it exactly as they do the same data given as a pandas frame.
"""

from __future__ import annotations

import dask.dataframe as dd
import pandas as pd
from pandas.core.dtypes.cast import find_common_type

from dpriv._dispatch import is_dask, meta_of

#: One row per partition and column: the dtype the partition holds (an object, not its name:
#: ``category`` or ``datetime64[ns, UTC]`` would lose what a cast needs).
_SURVEY_META = pd.DataFrame({"column": pd.Series(dtype=object), "dtype": pd.Series(dtype=object)})


def as_data_types(history: pd.DataFrame | dd.DataFrame, columns: list[str]) -> pd.DataFrame | dd.DataFrame:
    """``history`` with each of ``columns`` of the type its partitions hold (pandas: unchanged).

    Dask: one compute reads ``columns`` of every partition; when a partition's dtype differs
    from the meta's, every partition (and the meta) is cast, lazily, to the dtype pandas'
    ``concat`` of the partitions would give. Categorical columns are left as they are (their
    partitions may hold other categories, of one type)."""
    if not is_dask(history):
        return history
    meta = meta_of(history)
    cols = [c for c in dict.fromkeys(columns) if c in meta.columns]
    found = history[cols].map_partitions(_dtypes, meta=_SURVEY_META).compute()
    cast = {}
    for c in cols:
        now = meta[c].dtype
        held = list({str(d): d for d in found.loc[found["column"] == c, "dtype"]}.values())
        if isinstance(now, pd.CategoricalDtype) or all(d == now for d in held):
            continue
        cast[c] = find_common_type([now, *held])
    if not cast:
        return history
    return history.map_partitions(_cast, cast, meta=meta.astype(cast))


def _dtypes(part: pd.DataFrame) -> pd.DataFrame:
    """The dtype of each column of ``part`` (one row each)."""
    return pd.DataFrame(
        {"column": list(part.columns), "dtype": list(part.dtypes)}, columns=["column", "dtype"]
    )


def _cast(part: pd.DataFrame, dtypes: dict) -> pd.DataFrame:
    """``part`` with its columns of ``dtypes`` cast to them (unchanged where they already are)."""
    return part.astype({c: d for c, d in dtypes.items() if part[c].dtype != d})
