"""The column types each partition of a Dask history read from Parquet holds, told by the files'
footers alone (no row read).

:func:`dpriv.part_types.as_data_types` surveys what every partition of a Dask history holds; for a
history of several views (not persisted) a computed survey reads the policy columns of every file.
A history that ``dd.read_parquet`` reads (``release_history(path)``, ``dpriv release``, a user's
``dd.read_parquet(folder)``) tells the same from each file's footer: its Arrow schema (with its
pandas metadata) and its row groups' null counts.

Each partition's dtypes are those of Dask's own Arrow-to-pandas conversion (its Parquet engine's
``_arrow_table_to_pandas`` with the read's options: strings, dtype backend, the file's pandas
metadata) of its file's schema, once with no row and once with one null row: where the two differ
(an integer column holding a null reads as float64, a boolean one as object) the null counts of
the partition's row groups choose. The history's :func:`dpriv.inputs.prepare_view` step is then run
on an empty frame of those dtypes, so the survey gives the rows a computed one gives.

The footers do not tell (:func:`footer_survey` gives None, the caller computes) for any other
frame (CSV, pandas, a persisted one-view history, ``filesystem="arrow"``), for an operation other
than a column selection or ``prepare_view`` between the read and the history, and for what the
values decide: filters, hive partitions, files aggregated into one partition, categorical
(dictionary) columns (their categories are data), an ``object`` id column or a date QI
(``prepare_view`` converts them by their values), a column missing from a file or stored as its
index, a null count not written where it decides.
"""

from __future__ import annotations

import inspect
from typing import NamedTuple

import dask.dataframe as dd
import pandas as pd

from dpriv.inputs import prepare_part


class _Undecided(Exception):
    """The footers cannot tell a partition's dtypes: its rows would have to be read."""


def footer_survey(history: dd.DataFrame, columns: list[str]) -> pd.DataFrame | None:
    """One row per partition of ``history`` and column of ``columns`` (all in its meta), its
    ``"column"`` name and the ``"dtype"`` (object) that partition holds, from the Parquet footers
    only; None when they cannot tell (module doc). Reads each file's footer once, no row; files
    of one schema are converted once (a weekly folder's usually are)."""
    try:
        return _survey(history, columns)
    except _Undecided:
        return None
    except (OSError, ValueError, NotImplementedError):  # a footer unreadable here: the read reports it
        return None
    except (ImportError, AttributeError, KeyError, TypeError, IndexError):
        # Dask's private read plan or Arrow conversion has another shape (another Dask release):
        # the computed survey, which reads the rows, decides
        return None


def _survey(history: dd.DataFrame, columns: list[str]) -> pd.DataFrame | None:
    """:func:`footer_survey`'s rows; raises :class:`_Undecided` where the footers cannot tell."""
    chain = _read_chain(history.expr)
    if chain is None:
        return None
    read, prepares = chain
    footers: dict[str, object] = {}
    converted: dict[bytes, _Converted] = {}
    held: dict[tuple, list] = {}  # the dtypes of each (schema, columns holding a null) met
    found = []
    for part in read._plan["parts"]:
        path, groups = _piece(part)
        if path not in footers:  # a file split into row groups: one footer read
            footers[path] = _footer(read, path)
        meta = footers[path]
        sub = _schema(meta, columns)
        key = sub.serialize().to_pybytes()
        if key not in converted:
            converted[key] = _convert(read, sub)
        empty, nulls, differ = converted[key]
        groups = range(meta.num_row_groups) if groups is None else groups
        nulled = tuple(c for c in differ if _has_nulls(meta, groups, c))
        if (key, nulled) not in held:
            frame = pd.DataFrame({c: (nulls if c in nulled else empty)[c].iloc[:0] for c in columns})
            for args, kwargs in prepares:  # the innermost step first, as the graph runs them
                frame = _prepared(frame, args, kwargs)
            held[key, nulled] = list(frame.dtypes)
        found += zip(columns, held[key, nulled], strict=True)
    return pd.DataFrame(found, columns=["column", "dtype"], dtype=object)


def one_value(history: dd.DataFrame, column: str) -> bool:
    """Whether the Parquet footers under ``history`` (a ``dd.read_parquet`` and only the steps
    :func:`footer_survey` follows) tell that ``column`` holds one value and no null in every row:
    each row group's statistics of it written, with no null and its minimum equal to its maximum,
    one value in all. False when they cannot tell (no such read, a statistic not written, a
    column stored as the index: :func:`_schema`'s cases) or tell otherwise, and for a ``column``
    that is not one of ``history``'s (no footer read). No row read."""
    if column not in history.columns:  # said here, not left to a footer's schema or a KeyError
        return False
    try:
        return _one_value(history, column)
    except (_Undecided, OSError, ValueError, NotImplementedError):
        return False
    except (ImportError, AttributeError, KeyError, TypeError, IndexError):  # another Dask's read plan
        return False


def _one_value(history: dd.DataFrame, column: str) -> bool:
    """:func:`one_value`; raises :class:`_Undecided` where the footers cannot tell."""
    chain = _read_chain(history.expr)
    if chain is None:
        return False
    read = chain[0]
    values = set()
    for part in read._plan["parts"]:
        path, groups = _piece(part)
        meta = _footer(read, path)
        _schema(meta, [column])  # the column is stored as a column of the file (not its index)
        for i in range(meta.num_row_groups) if groups is None else groups:
            group = meta.row_group(i)
            chunks = [group.column(j) for j in range(group.num_columns)]
            stats = next((ch.statistics for ch in chunks if ch.path_in_schema == column), None)
            if group.num_rows == 0:
                continue
            if stats is None or not stats.has_min_max or not stats.has_null_count or stats.null_count:
                return False
            values |= {stats.min, stats.max}
    return len(values) == 1


class _Converted(NamedTuple):
    """A schema's columns as the read converts them: with no row, with one null row (empty
    frames both), and the columns whose dtype a null changes."""

    empty: pd.DataFrame
    nulls: pd.DataFrame
    differ: list[str]


def _read_chain(expr) -> tuple[object, list[tuple[list, dict]]] | None:
    """The ``dd.read_parquet`` expression under ``expr`` and the arguments of its
    :func:`~dpriv.inputs.prepare_view` steps (innermost first), when only those and column
    selections lie between; else None."""
    from dask.dataframe.dask_expr._expr import MapPartitions, Projection
    from dask.dataframe.dask_expr.io.parquet import ReadParquetFSSpec

    prepares = []
    while True:
        if isinstance(expr, Projection):  # a column selection keeps each column's dtype
            expr = expr.frame
        elif isinstance(expr, MapPartitions) and expr.func is prepare_part:
            prepares.append((list(expr.args[1:]), dict(expr.operand("kwargs") or {})))
            expr = expr.frame
        else:
            break
    if not isinstance(expr, ReadParquetFSSpec) or not _plain_read(expr):
        return None
    return expr, prepares[::-1]


def _plain_read(read) -> bool:
    """A read whose partitions are whole files or row groups of one file, each read as it is:
    no filter (rows dropped change what a null count says), no hive partition columns, no
    partition selection, a frame (not a series), an engine that converts as assumed here."""
    info = read._dataset_info
    return (
        read.operand("filters") is None
        and not info.get("partitions")
        and not read._filtered
        and not read._series
        and not read._plan["empty"]
        and hasattr(read.engine, "_arrow_table_to_pandas")
    )


def _piece(part) -> tuple[str, list[int] | None]:
    """The file and row groups (None: all) of partition ``part`` of a read's plan."""
    if isinstance(part, list):  # files aggregated into one partition: concatenated as read
        if len(part) != 1:
            raise _Undecided
        part = part[0]
    path, row_groups, keys = part["piece"]
    if keys or part.get("kwargs"):
        raise _Undecided
    if row_groups is None:
        return path, None
    return path, list(row_groups) if isinstance(row_groups, list | tuple) else [row_groups]


def _footer(read, path: str):
    """The footer (``pyarrow.parquet.FileMetaData``) of file ``path`` of ``read``
    (:func:`dpriv.footer_reads.footer`: the checks before it read the same)."""
    from dpriv.footer_reads import footer

    return footer(read._dataset_info["fs"], path)


def _schema(meta, columns: list[str]):
    """The Arrow schema of ``columns`` in a footer ``meta`` (with the file's metadata, which the
    conversion reads); _Undecided for a column missing, stored as the index or categorical."""
    import pyarrow as pa

    schema = meta.schema.to_arrow_schema()
    index = set(map(str, (schema.pandas_metadata or {}).get("index_columns", [])))
    if any(c not in schema.names or c in index for c in columns):
        raise _Undecided
    fields = [schema.field(c) for c in columns]
    if any(pa.types.is_dictionary(f.type) for f in fields):
        raise _Undecided
    return pa.schema(fields, metadata=schema.metadata)


def _convert(read, schema) -> _Converted:
    """:class:`_Converted` of ``schema``; _Undecided for a column read as categorical (the
    read's ``categories=``: its categories are data)."""
    import pyarrow as pa

    empty = _to_pandas(read, schema.empty_table())
    nulls = _to_pandas(read, pa.Table.from_arrays([pa.nulls(1, f.type) for f in schema], schema=schema))
    if any(isinstance(d, pd.CategoricalDtype) for d in empty.dtypes):
        raise _Undecided
    differ = [c for c in schema.names if empty[c].dtype != nulls[c].dtype]
    return _Converted(empty, nulls.iloc[:0], differ)


def _to_pandas(read, table) -> pd.DataFrame:
    """``table`` converted as the read converts a partition's table (its engine's
    ``read_partition``: the plan's common options, less those that pick rows or files)."""
    options = dict(read._plan["common_kwargs"])
    categories = options.pop("categories", None) or ()
    for name in ("partitions", "filters", "schema"):
        options.pop(name, None)
    options["arrow_to_pandas"] = dict(options.get("arrow_to_pandas") or {})  # updated in place there
    return read.engine._arrow_table_to_pandas(table, categories, **options)


def _has_nulls(meta, groups, column: str) -> bool:
    """Whether ``column`` holds a null in row groups ``groups`` of the file whose footer is
    ``meta``; _Undecided when a null count was not written."""
    for i in groups:
        group = meta.row_group(i)
        chunks = [group.column(j) for j in range(group.num_columns)]
        stats = next((ch.statistics for ch in chunks if ch.path_in_schema == column), None)
        if stats is None or not stats.has_null_count:
            raise _Undecided
        if stats.null_count > 0:
            return True
    return False


def _prepared(frame: pd.DataFrame, args: list, kwargs: dict) -> pd.DataFrame:
    """:func:`~dpriv.inputs.prepare_view`'s step on the empty ``frame``, where its dtypes alone
    decide its result: a date QI is converted by its values (a missing one leaves the column as
    it is), an ``object`` id column by whether its values are text."""
    given = inspect.signature(prepare_part).bind(frame, *args, **kwargs).arguments
    id_col = given.get("id_col")
    if any(c in frame.columns for c in given.get("dates", ())):
        raise _Undecided
    if id_col in frame.columns and pd.api.types.is_object_dtype(frame[id_col].dtype):
        raise _Undecided
    return prepare_part(frame, *args, **kwargs)
