"""Reading views (CSV with a detected delimiter, or Parquet; local path or fsspec URL) and
writing files atomically (:func:`atomic_write`; one Parquet file streamed from a frame:
:func:`write_parquet`)."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import dask.dataframe as dd
import fsspec
import pandas as pd

from dpriv import pending_interrupt
from dpriv._dispatch import meta_of
from dpriv.csv_fields import check_separators
from dpriv.csv_read import (
    CSV_SAMPLE,
    check_id_texts,
    decimal_mark,
    small_csv,
    sniff_delimiter,
    unclosed_quote,
)
from dpriv.cut_csv import check_not_cut
from dpriv.errors import InputError
from dpriv.footer_reads import footers_read_once
from dpriv.input_url import filesystem
from dpriv.parquet_files import check_parquet_footers, is_parquet
from dpriv.parquet_index import stored_index, with_stored_index
from dpriv.parquet_pieces import arrow_pieces
from dpriv.path_args import path_arguments

ROW_ID = "row_id"


def _reason(exc: Exception) -> str:
    """The last line of a reader's error without dask's wrapper ('An error occurred while ...')."""
    text = str(exc).split("Original Message:")[-1]
    text = re.sub(r"\s+", " ", text).strip().rstrip(".")
    return text or type(exc).__name__


def ignore_dask_reset_index() -> None:
    """For the ``dpriv`` commands, which print every warning: drop pandas >= 3.1's deprecation of
    ``reset_index(inplace=True)``, raised by Dask's Parquet reader for every partition that
    :func:`read_table` (``dd.read_parquet``) reads (``dask/dataframe/io/parquet/arrow.py``): the
    call is Dask's, nothing the user changes silences it; it was printed as a ``warning:`` line
    (and failed the command under ``-W error``). Only that warning, from that module."""
    warnings.filterwarnings(
        "ignore",
        message=r"The inplace keyword in DataFrame\.reset_index is deprecated",
        category=DeprecationWarning,  # pandas.errors.Pandas4Warning
        module=r"dask\.dataframe\.io\.parquet\.",
    )


@footers_read_once()  # its stored index and its footers' check read each footer once
@path_arguments(path="a table's file, folder or URL")
def read_table(
    path: str | os.PathLike,
    *,
    add_row_id: bool = False,
    blocksize: str | int = "64MB",
    id_column: str | None = None,
    what: str = "input",
) -> dd.DataFrame:
    """A Dask DataFrame over ``path`` (``.parquet``/``.pq`` or a folder of Parquet, else CSV).

    A Parquet file's named index levels (pandas' ``df.set_index("respondent_id").to_parquet()``)
    are read as ordinary columns, first; unnamed ones (pandas' row labels) are left out.
    ``add_row_id`` adds ``row_id`` (int64, the 0-based data-row number) for tables that
    have no respondent id (e.g. Adult). ``id_column``: the respondent id, which a CSV of at most
    :data:`CSV_SAMPLE` bytes is checked for two ids written differently that read as one number
    (``00012`` and ``12``; :func:`_id_collision`). Raises InputError for a missing or unreadable
    file, for such ids, and for a URL whose scheme is unknown or needs a package not installed
    (:func:`dpriv.input_url.filesystem`; ``what`` names the input there: "history"...).
    """
    path = os.fspath(path)  # a pathlib.Path failed at its first str method
    fs, paths = filesystem(path, what)
    if not paths or not fs.exists(paths[0]):
        raise InputError(
            f"input {path} does not exist: nothing was written; check the path (and that the export "
            "writing it has finished)"
        )
    folder = fs.isdir(paths[0])
    sep = None  # a CSV's separator, once sniffed: a parse error is explained with it
    if folder and fs.exists(f"{paths[0].rstrip('/')}/manifest.json"):  # dpriv.ledger.MANIFEST
        raise InputError(
            f"{path} is a dpriv ledger (it holds manifest.json), not a table: give the file of a "
            f"table; the view of release i is {path.rstrip('/')}/releases/<i>/view.parquet, which "
            "dpriv verify and dpriv export also read as --ledger PATH --view I"
        )
    try:
        if path.rstrip("/").endswith((".parquet", ".pq")) or folder or is_parquet(fs, paths[0]):
            # a named index (df.set_index("respondent_id").to_parquet()) is data: read as columns
            index = stored_index(fs, paths[0])
            check_parquet_footers(fs, paths[0])
            frame = dd.read_parquet(path) if index is None else with_stored_index(path, index)
        else:
            check_one_csv(fs, path, paths)
            sep = sniff_delimiter(path)
            frame = dd.read_csv(
                path,
                sep=sep,
                decimal=decimal_mark(path, sep),
                encoding="utf-8-sig",
                blocksize=blocksize,
                sample=CSV_SAMPLE,
                sample_rows=CSV_SAMPLE // 2,  # dask's default infers the types from 10 rows
                skipinitialspace=True,
            )
            raw = small_csv(fs, paths)  # read once for the three checks below (None: not checked whole)
            for one in paths:  # an export still being written: refused before its rows are checked
                check_not_cut(one if len(paths) > 1 else path, sep, len(frame.columns), fs, raw)
            check_separators(raw, sep, path)  # a week appended with another separator
            if id_column in frame.columns and pd.api.types.is_numeric_dtype(frame._meta[id_column].dtype):
                check_id_texts(raw, sep, id_column, path)
    except InputError:  # a footer's own message (an InputError is a ValueError too)
        raise
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid, pandas' ParserError are ValueErrors
        if sep is not None and isinstance(exc, pd.errors.ParserError):
            # pandas refuses a line of more values than the header ("Expected 11 fields in line
            # 1201, saw 12": a week appended with one more column) before the checks above run
            check_separators(small_csv(fs, paths), sep, path)
        opened = unclosed_quote(fs, paths[0]) if "EOF" in str(exc) and not folder else None
        if opened is not None:
            raise InputError(
                f'cannot read {path}: line {opened} opens a quoted value (") that is never closed, '
                "so the rest of the file would read as one value: close the quote on that line, or "
                "remove it"
            ) from None
        raise InputError(
            f"cannot read {path}: {_reason(exc)}. Is it a complete CSV (UTF-8) or Parquet file?"
        ) from None
    if add_row_id:
        frame = frame.assign(**{ROW_ID: 1})
        frame[ROW_ID] = frame[ROW_ID].cumsum() - 1
    return frame


def check_one_csv(fs: fsspec.AbstractFileSystem, path: str, paths: list[str]) -> None:
    """InputError for a CSV input given as a pattern (``weeks/*.csv``, which fsspec expands to
    ``paths``): a CSV history is one file, and each weekly export carries its own header (and
    Excel's BOM), so the pattern was refused only by fsspec's own words ("The URL contains glob
    characters: you maybe needed to pass expand=True ...")."""
    if len(paths) == 1 and paths[0] == fs._strip_protocol(path):
        return
    shown = ", ".join(p.rsplit("/", 1)[-1] for p in paths[:3]) + (", ..." if len(paths) > 3 else "")
    raise InputError(
        f"{path} is a pattern matching {len(paths)} file(s) ({shown}): dpriv reads a CSV history from "
        "one file (each row with its view's release index), not one file per week: join the weekly "
        "exports into one file that names the columns once (the first week's file whole, then each "
        "later one without its header line) and give that file, or write the weeks as the Parquet "
        "parts of one folder. Nothing was written"
    )


#: The end of every temp file or folder name dpriv writes (``.<name>.<8 random characters>`` and
#: this): a ledger's clean-up removes only names that carry it, never a user's dotfile that
#: merely looks random (``.notes.20241205``).
TEMP_SUFFIX = ".dpriv-tmp"


def atomic_write(path: Path, data: bytes | Callable[[BinaryIO], None], mode: int | None = 0o644) -> None:
    """Write ``path`` whole or not at all: the one atomic writer of the package (ledger
    files, released views, reports).

    The content goes to a temp file ``.<name>.<random>.dpriv-tmp`` in the same folder (so that a
    ledger's clean-up removes what a killed writer left), is fsync'ed, given ``mode`` (None:
    the permissions of an ordinary new file, ``0o666`` less the umask) and renamed over
    ``path``. ``data`` is the content, or a function that writes it to the open temp file (to
    stream a file larger than memory, see :func:`write_parquet`). If writing
    raises, the temp file is removed and ``path`` is left as it was. The rename is a safe point
    of an interrupted command (:mod:`dpriv.pending_interrupt`): an interrupt whose exception was
    discarded is raised there, so no file (a ledger's manifest: its commit) is put in place after it.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as fh:
            if callable(data):
                data(fh)
            else:
                fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, public_mode() if mode is None else mode)
        pending_interrupt.raise_pending()
        os.replace(tmp, path)
    except OSError as exc:
        if exc.filename is None:  # a write or fsync on a full disk names no file: name the target
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def made_folder(folder: Path) -> Iterator[Path]:
    """``folder``, created with its missing parents; when the block raises, the folders this
    call created are removed again if still empty, so that a failed write leaves no empty
    folder behind (dpriv removes only what the same command created)."""
    folder = Path(folder)
    created = []
    missing = folder
    while not missing.exists() and missing != missing.parent:
        created.append(missing)
        missing = missing.parent
    folder.mkdir(parents=True, exist_ok=True)
    try:
        yield folder
    except BaseException:
        for made in created:  # innermost first: a parent is empty only once its child is gone
            with contextlib.suppress(OSError):
                made.rmdir()
        raise


def not_a_folder(path: Path) -> str:
    """What stands at ``path`` where a folder is wanted, for a message: ``"is a file"``, or
    ``"is a broken symbolic link (to X)"`` for a link whose target does not exist."""
    if path.is_symlink() and not path.exists():
        return f"is a broken symbolic link (to {os.readlink(path)})"
    return "is a file"


def broken_link_problem(path: Path, what: str) -> str | None:
    """``"L is a broken symbolic link (to /mnt/share/L), not a ledger folder: ..."`` when ``path``
    is a symbolic link whose target does not exist (``what``: what was wanted there), else None.
    A ledger linked onto a share that is not mounted made ``dpriv release`` exit 1 on
    FileExistsError (a drill, s46); it is not created through the link: the share may come back."""
    if not (path.is_symlink() and not path.exists()):
        return None
    return (
        f"{path} {not_a_folder(path)}, not {what}: mount or create what it points to (a share not "
        "mounted?), or choose another folder; nothing was written"
    )


def public_mode() -> int:
    """Permissions of an ordinary new file: ``0o666`` less the process umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


#: Rows per Parquet row group of a ledger file (the last row group of a file is shorter).
#: Fixed, not derived from the partitioning, so that a file's bytes do not depend on it.
#: A Dask view is written through the client, which buffers up to one row group as Arrow plus
#: the contiguous copy it is encoded from: 2**18 rows keep that near 50 MB for the paper's
#: columns (2**20 rows were ~0.3 GiB of the client's peak at 10^7); a 10^6-tuple view is 1 %
#: larger (4 row groups instead of 1) and writes in the same CPU time.
ROW_GROUP = 262_144
#: Bytes of a column chunk's dictionary page before pyarrow falls back to plain pages for the
#: rest of the chunk (pyarrow's default: 1 MiB, i.e. 131,072 distinct float64 values hashed
#: before giving up). A column of at most 2,048 distinct values keeps its dictionary (counters,
#: the posterior columns of a first release: ~1,300 distinct values in 125,000 rows, the
#: view's bounds and sensitive values); a column of mostly distinct numbers (posteriors after a
#: few releases, ids) falls back early, which is both faster and smaller. Parquet writes (CPU,
#: bytes; pyarrow 26, 2 cores), 1 MiB / 16 KiB / 4 KiB: state after release 24 of the
#: 24 x 5,000 IE history (16,434 x 61): 33.5 / 24.8 / 20.2 ms, 4.73 / 4.33 / 4.25 MB; one
#: 125,240-row part of the 10^6 state after a first release: 46.0 / 42.9 / 60.8 ms,
#: 4.10 / 3.85 / 9.19 MB; the state after release 2 (5,000 x 61): 4.0 ms, 0.24 MB for all.
DICTIONARY_PAGE_LIMIT = 16_384


def write_parquet(
    path: str | Path,
    frame: pd.DataFrame | dd.DataFrame,
    *,
    mode: int = 0o644,
    row_group_size: int = ROW_GROUP,
    drop_private: bool = False,
    use_dictionary: bool = True,
) -> int:
    """Write ``frame`` to ONE Parquet file at ``path`` atomically; return the number of rows.

    ``frame`` is a pandas DataFrame (one part) or a Dask DataFrame: under a distributed client
    its partitions are computed on the workers, which convert pieces of at most
    :data:`dpriv.parquet_pieces.PIECE_ROWS` rows (whole row groups, or one when it is larger),
    cut at the row groups' boundaries, to Arrow, a few ahead of the writer (the client holds
    one piece and fewer than ``row_group_size`` buffered rows;
    :func:`dpriv.parquet_pieces.arrow_pieces`), else they are
    computed in this process, one at a time. The
    rows are re-cut into row groups of exactly ``row_group_size`` rows (the last one shorter;
    one empty row group if there are no rows), each encoded from contiguous arrays, so the
    same rows in the same order with the same dtypes give the same bytes however they are
    partitioned (empty partitions included). The file has one schema,
    ``pa.Table.from_pandas(part, preserve_index=False)`` of the first non-empty part or piece
    (of the Dask meta if all are empty); later ones are converted to it. The index is never
    written: reading the file back gives a RangeIndex frame. ``drop_private`` leaves out the
    columns whose name starts with ``_`` (private helper columns). ``use_dictionary=False``
    writes plain pages (pyarrow's ``use_dictionary``), faster for columns of distinct floats.

    The file is written through :func:`atomic_write` (temp file ``.<name>.<random>`` in the
    same folder, fsync, ``mode``, rename): if a partition fails to compute or the disk fills up,
    ``path`` is left as it was and no temp file remains.

    Note: without a distributed client each Dask partition is computed separately, so work
    shared by all partitions (a shuffle) is repeated per partition; persist such a frame first.
    Limitation: a column of the first non-empty part (piece) with only missing values in an
    object column gets Arrow type ``null``, which later parts with values cannot be converted to.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if row_group_size < 1:
        raise ValueError(f"row_group_size must be a positive integer, not {row_group_size!r}")
    columns = [c for c in frame.columns if not (drop_private and isinstance(c, str) and c.startswith("_"))]
    rows = 0

    def stream(fh: BinaryIO) -> None:
        nonlocal rows
        schema, writer, buffered, n_buffered = None, None, [], 0

        def emit(table: pa.Table) -> None:  # one row group, encoded from contiguous arrays
            nonlocal writer
            if writer is None:
                writer = pq.ParquetWriter(
                    fh, schema, use_dictionary=use_dictionary, dictionary_pagesize_limit=DICTIONARY_PAGE_LIMIT
                )
            writer.write_table(table.combine_chunks(), row_group_size=row_group_size)

        try:
            for table in arrow_pieces(frame, columns, row_group_size):
                schema = table.schema
                buffered.append(table)
                n_buffered += len(table)
                rows += len(table)
                del table
                if n_buffered >= row_group_size:
                    pending = pa.concat_tables(buffered)
                    full = n_buffered - n_buffered % row_group_size
                    for start in range(0, full, row_group_size):
                        emit(pending.slice(start, row_group_size))
                    buffered = [pending.slice(full)] if full < n_buffered else []
                    n_buffered -= full
            if schema is None:  # no rows at all: one empty row group with the frame's columns
                schema = pa.Table.from_pandas(meta_of(frame), columns=columns, preserve_index=False).schema
                emit(schema.empty_table())
            elif n_buffered:
                emit(pa.concat_tables(buffered))
        except BaseException:
            if writer is not None:  # the temp file is discarded: only release the writer
                with contextlib.suppress(Exception):
                    writer.close()
            raise
        writer.close()

    atomic_write(Path(path), stream, mode)
    return rows
