"""Parquet files and folders as dpriv reads them, from their footers only (no data read): every
footer checked before a computation starts, rows counted, a row of a folder placed in its file
(:func:`dpriv.io.read_table` reads the data)."""

from __future__ import annotations

import re

from dpriv.column_hints import renamed_hint
from dpriv.errors import InputError
from dpriv.footer_reads import data_files, footer
from dpriv.input_url import filesystem


def check_parquet_footers(fs, root: str) -> None:
    """Read the footer of every Parquet file now, so a truncated one is an InputError that
    names it instead of a failure in the middle of a computation; in a folder, also refuse a
    file that is not Parquet (a CSV beside the parts would be left out silently) and parts
    whose columns differ (e.g. an original and a released view side by side), and a file with
    no row that is not a writer's part (:func:`_no_row`; a single file with none is refused as
    a header without rows once it is read)."""
    folder = fs.isdir(root)
    files = folder_files(fs, root) if folder else [root]
    first = None
    for f in files:
        try:
            meta = footer(fs, f)
        except (OSError, ValueError) as exc:
            raise InputError(_unreadable(f, exc)) from None
        names = meta.schema.names
        if folder and meta.num_rows == 0 and not WRITER_PART.match(f.rsplit("/", 1)[-1]):
            raise InputError(_no_row(f))
        if first is None:
            first = (f, names)
        elif sorted(names) != sorted(first[1]):
            lacks = [c for c in first[1] if c not in names]  # a column renamed in a later week?
            more = [c for c in names if c not in first[1]]
            hint = renamed_hint(lacks, more)
            raise InputError(
                f"{root} holds Parquet files of different tables: {f} has columns {names}, {first[0]} "
                f"has {first[1]}{hint or _difference(f, lacks, more)}; a folder is read as the parts of "
                "one table: keep one table's parts in it"
                + (", its columns named alike in every file" if hint else ", the same columns in every file")
            )


def _difference(path: str, lacks: list[str], more: list[str]) -> str:
    """The columns the file ``path`` has more and lacks, said (a week's export that added a
    column, e.g. ``bmi``, is told which one instead of two lists to compare)."""
    said = [f"{path} has {more} more" if more else "", f"lacks {lacks}" if lacks else ""]
    return f" ({', '.join(s for s in said if s)})" if any(said) else ""


#: The name of a part that Dask (``part.0.parquet``), pyarrow (``part-0.parquet``) or Spark
#: (``part-00000-<uuid>.snappy.parquet``) writes: one of the partitions of one table, empty where
#: the partition held no row (a filter left it nothing), never a week of its own.
WRITER_PART = re.compile(r"part[.\-_]\d+")


def _no_row(path: str) -> str:
    """Why a folder's file ``path`` with no row (and not a writer's part) is refused, and what to
    do. A weekly job puts one file per week in its folder: an empty one is most often an export
    that found nothing or failed, which read as part of the folder added no view and the release
    said ``nothing to release`` (exit 0), so the failure went unseen. A week with no data has no
    view (docs/ledger.md#a-week-with-no-data)."""
    return (
        f"{path} holds no row (its columns only), so it adds no view to the history in its folder: "
        "if its export failed or found nothing by mistake, export that week again; if the week really "
        "had no data, a week with no data has no view: move the file out of the folder (the weeks "
        "after it numbered without a gap, docs/ledger.md#a-week-with-no-data). Empty parts that Dask, "
        "pyarrow or Spark write (part.0.parquet, part-00000-...) are read as parts. Nothing was written"
    )


def _unreadable(path: str, exc: OSError | ValueError) -> str:
    """Why the footer of Parquet file ``path`` cannot be read, and what to do: pyarrow's reason
    ends with a period of its own, and a file cut short is most often still being written."""
    reason = str(exc).strip().rstrip(".")
    if isinstance(exc, PermissionError):
        return (
            f"cannot read {path} ({reason}): let the user running dpriv read it, then run the command again"
        )
    return (
        f"cannot read {path} as Parquet ({reason}): it was cut short (its writer not done yet, or a copy "
        "or download that stopped) or is not a Parquet file; nothing was written: wait until it is "
        "written whole, or export or copy it again, then run the command again"
    )


def parquet_rows(fs, root: str) -> int:
    """Rows of the Parquet file or folder ``root`` counted from its footers (no data read, and
    no Dask meta: ``len()`` of a Dask frame builds a sample row of each column, which pyarrow
    cannot cast for a narrow decimal such as ``decimal128(1, 1)``)."""
    return sum(footer(fs, f).num_rows for f in (folder_files(fs, root) if fs.isdir(root) else [root]))


def folder_rows(path: str, positions: list[int]) -> list[tuple[str, int]] | None:
    """For each 0-based row ``positions`` of the Parquet folder ``path`` read as one table, the
    file holding it (``path``/name) and the row's 0-based position in it: the files in Dask's
    order (natural order of the names: ``part.2`` before ``part.10``), rows counted from the
    footers. None when ``path`` is no folder, a footer is unreadable or a row lies past the end."""
    import numpy as np
    from dask.utils import natural_sort_key

    try:
        fs, paths = filesystem(path)
        root = paths[0].rstrip("/")
        if not fs.isdir(root):
            return None
        files = sorted(folder_files(fs, root), key=natural_sort_key)
        counts = [footer(fs, f).num_rows for f in files]
    except (OSError, ValueError):  # InputError is a ValueError: a file that is no longer Parquet
        return None
    starts = np.cumsum([0, *counts])
    out = []
    for p in positions:
        i = int(np.searchsorted(starts, p, side="right")) - 1
        if not 0 <= i < len(files):
            return None
        out.append((f"{path.rstrip('/')}/{files[i][len(root) + 1 :]}", int(p - starts[i])))
    return out


def folder_files(fs, root: str) -> list[str]:
    """The data files of a Parquet folder (sorted; names starting with ``.`` or ``_`` are
    metadata and markers: ``_metadata``, ``_SUCCESS``, ``.crc``); InputError for one that is
    not Parquet. Listed once per :func:`dpriv.footer_reads.footers_read_once` scope."""
    return data_files(fs, root, lambda: _listed(fs, root))


def _listed(fs, root: str) -> list[str]:
    """:func:`folder_files` of ``root``, listed now."""
    files = []
    for f in sorted(fs.find(root)):
        if any(part.startswith((".", "_")) for part in f[len(root.rstrip("/")) + 1 :].split("/")):
            continue
        if not f.endswith((".parquet", ".pq")) and not is_parquet(fs, f):
            raise InputError(
                f"{root} holds {f}, which is not a Parquet file: a folder is read as the Parquet parts "
                "of one table; move that file out of it (a CSV is read as a file of its own)"
            )
        files.append(f)
    return files


def is_parquet(fs, path: str) -> bool:
    """A Parquet file whatever its name: it starts with the magic bytes ``PAR1``."""
    with fs.open(path, "rb") as fh:
        return fh.read(4) == b"PAR1"
