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
A partition lacking one of the policy's columns (a column renamed or dropped in a later week's
file) is refused naming it, as the folder given as a path is.
"""

from __future__ import annotations

import dask.dataframe as dd
import pandas as pd
from pandas.core.dtypes.cast import find_common_type

from dpriv._dispatch import is_dask, meta_of
from dpriv.column_hints import renamed_hint
from dpriv.errors import InputError
from dpriv.part_footers import footer_survey

#: One row per partition and column: the dtype the partition holds (an object, not its name:
#: ``category`` or ``datetime64[ns, UTC]`` would lose what a cast needs).
_SURVEY_META = pd.DataFrame({"column": pd.Series(dtype=object), "dtype": pd.Series(dtype=object)})


def as_data_types(
    history: pd.DataFrame | dd.DataFrame, columns: list[str], *, read_rows: bool = True
) -> pd.DataFrame | dd.DataFrame:
    """``history`` with each of ``columns`` of the type its partitions hold (pandas: unchanged).

    Dask: what each partition holds is told by the Parquet footers of a ``dd.read_parquet``
    history (:func:`dpriv.part_footers.footer_survey`, no row read), else by one compute that
    reads ``columns`` of every partition (:func:`computed_survey`); when a partition's dtype
    differs from the meta's, every partition (and the meta) is cast, lazily, to the dtype pandas'
    ``concat`` of the partitions would give. Categorical columns are left as they are (their
    partitions may hold other categories, of one type). ``read_rows=False``: only what the
    footers tell (a frame they cannot tell is returned as it is, no row read)."""
    if not is_dask(history):
        return history
    meta = meta_of(history)
    cols = [c for c in dict.fromkeys(columns) if c in meta.columns]
    found = footer_survey(history, cols)
    if found is None and not read_rows:  # one view (dpriv anonymize): no pass over the rows for this
        return history
    if found is None:
        found = computed_survey(history, cols)
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


def computed_survey(history: dd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """One row per partition of ``history`` and column of ``columns`` (all in its meta): its
    ``"column"`` name and the ``"dtype"`` (object) that partition holds; one compute, which
    reads those columns of every partition."""
    return history[columns].map_partitions(_dtypes, meta=_SURVEY_META).compute()


def _dtypes(part: pd.DataFrame) -> pd.DataFrame:
    """The dtype of each column of ``part`` (one row each)."""
    return pd.DataFrame(
        {"column": list(part.columns), "dtype": list(part.dtypes)}, columns=["column", "dtype"]
    )


def _cast(part: pd.DataFrame, dtypes: dict) -> pd.DataFrame:
    """``part`` with its columns of ``dtypes`` cast to them (unchanged where they already are)."""
    return part.astype({c: d for c, d in dtypes.items() if part[c].dtype != d})


def check_parts(history: pd.DataFrame | dd.DataFrame, columns: list[str]) -> None:
    """InputError (before anything is computed) for a Dask history read from Parquet
    (``dd.read_parquet``) one of whose files lacks one of ``columns`` (present in its meta: the
    first file's): the folder's message naming both files (:func:`dpriv.parquet_files.
    check_parquet_footers`, footers only), where the read would fail in the middle of a
    computation with pandas' ``KeyError: "['weight'] not in index"``. Other frames: nothing."""
    if not is_dask(history):
        return
    from dask.dataframe.dask_expr.io.parquet import ReadParquet

    from dpriv.input_url import filesystem
    from dpriv.parquet_files import check_parquet_footers, folder_files

    meta = set(meta_of(history).columns)
    wanted = [c for c in dict.fromkeys(columns) if c in meta]
    reads = {}  # the graph holds one ReadParquet per projection of a read (6 for a one-view history)
    for op in history.expr.find_operations(ReadParquet):
        given = op.operand("path")
        reads[tuple(map(str, given if isinstance(given, list | tuple) else [given]))] = None
    for roots in reads:
        parts = []  # (filesystem, its folder or None, file), every file of the read in order
        for root in roots:
            fs, paths = filesystem(root, "history")
            for path in paths:
                folder = fs.isdir(path)
                parts += [(fs, path, f) for f in folder_files(fs, path)] if folder else [(fs, None, path)]
        try:
            held = [_columns(fs, f) for fs, _, f in parts]
        except OSError:  # unreadable here: the read itself reports it
            continue
        # a column no file stores (an id kept as a RangeIndex in the pandas metadata) is not a
        # difference between the files
        stored = [c for c in wanted if any(c in names for names in held)]
        for (fs, folder, f), names in zip(parts, held):
            lacks = [c for c in stored if c not in names]
            if lacks:
                if folder is not None:
                    check_parquet_footers(fs, folder)  # the folder's own words, both files named
                hint = renamed_hint(lacks, names - meta)
                holder = next(p[2] for p, n in zip(parts, held) if lacks[0] in n)
                raise InputError(
                    f"{f} lacks column(s) {lacks} that {holder} holds{hint}: "
                    "the files read as one history must be parts of one table (a column renamed or "
                    "dropped in a later week?): name the columns alike in every file"
                )


def _columns(fs, path: str) -> set[str]:
    """The (top-level) column names in the footer of Parquet file ``path``: a list column is one
    name, not its leaves (``city.list.element``)."""
    from dpriv.footer_reads import footer

    return set(footer(fs, path).schema.to_arrow_schema().names)
