"""Reading views (CSV with a detected delimiter, or Parquet; local path or fsspec URL)."""

from __future__ import annotations

import csv

import dask.dataframe as dd
import fsspec

from dpriv.errors import InputError

ROW_ID = "row_id"


def sniff_delimiter(path: str) -> str:
    """Delimiter of a CSV file from its first 64 KiB (``,``, ``;``, tab or ``|``)."""
    with fsspec.open(path, "r", newline="") as fh:
        sample = fh.read(65536)
    if not sample.strip():
        raise InputError(f"{path} is empty: there is no header and no row to read")
    try:
        return csv.Sniffer().sniff(sample.splitlines()[0], delimiters=",;\t|").delimiter
    except csv.Error:
        return ","


def read_table(path: str, *, add_row_id: bool = False, blocksize: str | int = "64MB") -> dd.DataFrame:
    """A Dask DataFrame over ``path`` (``.parquet``/``.pq`` or a folder of Parquet, else CSV).

    ``add_row_id`` adds ``row_id`` (int64, the 0-based data-row number) for tables that
    have no respondent id (e.g. Adult). Raises InputError for a missing or unreadable file.
    """
    fs, _, paths = fsspec.get_fs_token_paths(path)
    if not paths or not fs.exists(paths[0]):
        raise InputError(f"input {path} does not exist")
    try:
        if path.rstrip("/").endswith((".parquet", ".pq")) or fs.isdir(paths[0]):
            frame = dd.read_parquet(path)
        else:
            frame = dd.read_csv(
                path,
                sep=sniff_delimiter(path),
                blocksize=blocksize,
                skipinitialspace=True,
            )
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise InputError(f"cannot read {path}: {exc}. Is it a complete CSV or Parquet file?") from None
    if add_row_id:
        frame = frame.assign(**{ROW_ID: 1})
        frame[ROW_ID] = frame[ROW_ID].cumsum() - 1
    return frame
