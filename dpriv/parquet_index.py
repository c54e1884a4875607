"""The index a pandas ``to_parquet`` stored in a Parquet file or folder, read back as ordinary
columns (:func:`with_stored_index`): ``df.set_index("respondent_id").to_parquet(...)`` keeps the
ids, which Dask's reader drops or cannot read (pandas >= 3.1 stores a consecutive integer index
only as a range in the file's pandas metadata, and Dask then fails at compute)."""

from __future__ import annotations

import re

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv.errors import InputError
from dpriv.footer_reads import footer
from dpriv.parquet_files import folder_files

#: pandas' name for an unnamed index level, and Dask's (``ddf.to_parquet(folder)`` of a frame whose
#: index has no name): row labels, not data (not read, as before; Dask's was taken for a named
#: level that its own reader then dropped, an internal KeyError).
_UNNAMED = re.compile(r"__index_level_\d+__|__null_dask_index__")


def _named(entry: str | dict) -> str | None:
    """The name of a named index level (``str``: a stored column; ``dict``: a range kept only as
    metadata), None for an unnamed one."""
    name = entry.get("name") if isinstance(entry, dict) else entry
    return None if name is None or _UNNAMED.fullmatch(str(name)) else str(name)


def stored_index(fs, root: str) -> list[tuple[str, list[str | dict], int]] | None:
    """For each Parquet file of ``root`` (a file, or a folder's files in Dask's order), its path,
    the ``index_columns`` of its pandas metadata and its rows; None when no file has a NAMED
    index level (the table is read as it always was) or a footer is unreadable (left to
    :func:`dpriv.parquet_files.check_parquet_footers` to report). InputError when the files store
    their index levels differently (pandas writes a part whose ids are consecutive as a range,
    another as a column)."""
    from dask.utils import natural_sort_key

    files = sorted(folder_files(fs, root), key=natural_sort_key) if fs.isdir(root) else [root]
    out = []
    try:
        for f in files:
            meta = footer(fs, f)
            pandas = meta.schema.to_arrow_schema().pandas_metadata or {}
            out.append((f, list(pandas.get("index_columns", [])), meta.num_rows))
    except (OSError, ValueError):
        return None
    if not any(_named(e) for _, entries, _ in out for e in entries):
        return None
    kinds = [[(_named(e), isinstance(e, dict)) for e in entries] for _, entries, _ in out]
    for (f, _, _), kind in zip(out, kinds, strict=True):
        if kind != kinds[0]:  # pandas writes a part whose ids are consecutive as a range, another as a column
            raise InputError(
                f"{root}: the files store their index differently ({f} and {out[0][0]}), so it cannot be "
                "read as columns of one table: write each part with the index as a column "
                "(df.reset_index().to_parquet(...))"
            )
    return out


def with_stored_index(path: str, files: list[tuple[str, list[str | dict], int]]) -> dd.DataFrame:
    """The table at ``path`` with its named index levels as ordinary columns, first (as
    ``reset_index()`` puts them), unnamed levels left out. ``files``: :func:`stored_index`. A
    level kept as a range (``{"kind": "range", "start", "step"}``) becomes an int64 column of
    ``start + step * row`` within each file."""
    levels = [_named(e) for e in files[0][1]]
    frame = dd.read_parquet(path, index=False)
    frame = frame[[c for c in frame.columns if not _UNNAMED.fullmatch(str(c))]]
    ranges = {_named(e): i for i, e in enumerate(files[0][1]) if isinstance(e, dict) and _named(e)}
    if ranges:
        counts = np.array([rows for _, _, rows in files])
        firsts = np.cumsum([0, *counts[:-1]])
        row = frame.assign(_row=1)["_row"].cumsum() - 1  # the 0-based row of the whole table
        for name, i in ranges.items():
            starts = np.array([entries[i]["start"] for _, entries, _ in files])
            steps = np.array([entries[i].get("step", 1) for _, entries, _ in files])
            frame[name] = row.map_partitions(
                _range_values, firsts, starts, steps, meta=pd.Series([], dtype="int64", name=name)
            )
    names = [n for n in levels if n is not None]
    return frame[[*names, *(c for c in frame.columns if c not in names)]]


def _range_values(row: pd.Series, firsts, starts, steps) -> pd.Series:
    """``start + step * (row - first row of its file)`` for each 0-based table row."""
    f = np.searchsorted(firsts, row.to_numpy(), side="right") - 1
    return pd.Series(starts[f] + steps[f] * (row.to_numpy() - firsts[f]), index=row.index, dtype="int64")
