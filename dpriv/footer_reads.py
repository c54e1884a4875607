"""Each Parquet file's footer read once per command: the checks before a release (the folder's
footers, its stored index, its rows, a file lacking a column, the partitions' types) share them.

Before, a Parquet history's footers were read by each check on its own: :func:`dpriv.io.read_table`
(:func:`~dpriv.parquet_index.stored_index`, :func:`~dpriv.parquet_files.check_parquet_footers`),
the CLI's size (:func:`~dpriv.parquet_files.parquet_rows`), :func:`dpriv.part_types.check_parts`
(once per ``ReadParquet`` operation of the history's graph: 6 times a file for a one-view history)
and the footer survey (:mod:`dpriv.part_footers`). :func:`footers_read_once` opens a scope (one
command, one ``release_history`` call) in which :func:`footer` parses a file's footer on its first
request and hands the same ``pyarrow.parquet.FileMetaData`` to every later one, and
:func:`data_files` lists a folder once. Outside a scope both read as before, every call.

No footer outlives its scope: a ledger resumed later, or a file replaced between two commands,
is read afresh (the scope is a :class:`contextvars.ContextVar` reset when the ``with`` block
ends, and a nested scope uses the outer one's reads).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

_SCOPE: contextvars.ContextVar[_Reads | None] = contextvars.ContextVar("dpriv_footer_reads", default=None)


@dataclass
class _Reads:
    """The footers (``FileMetaData``) and folder listings read in one scope, by file system and
    path; ``reads``: footers parsed (each file once)."""

    footers: dict[tuple[str, int, str], object] = field(default_factory=dict)
    listings: dict[tuple[str, int, str], list[str]] = field(default_factory=dict)
    reads: int = 0


def _key(fs, path: str) -> tuple[str, int, str]:
    """A file's key: its file system (class, and fsspec's hash of its protocol and options) and
    path."""
    return (type(fs).__qualname__, hash(fs), path)


@contextlib.contextmanager
def footers_read_once() -> Iterator[None]:
    """A scope in which each Parquet file's footer is read at most once (module doc); inside
    another scope, that scope's reads are used."""
    if _SCOPE.get() is not None:
        yield
        return
    token = _SCOPE.set(_Reads())
    try:
        yield
    finally:
        _SCOPE.reset(token)


def footer(fs, path: str):
    """The footer (``pyarrow.parquet.FileMetaData``: schema, rows, row groups and their
    statistics) of Parquet file ``path`` on fsspec file system ``fs``; read once per scope
    (:func:`footers_read_once`), every call outside one. Raises what ``fs.open`` and
    ``pyarrow.parquet.read_metadata`` raise (OSError, ``ArrowInvalid``: a ValueError), each
    time it is asked for an unreadable file (nothing is kept for it)."""
    import pyarrow.parquet as pq

    scope = _SCOPE.get()
    key = _key(fs, path)
    if scope is not None and key in scope.footers:
        return scope.footers[key]
    with fs.open(path, "rb") as fh:
        meta = pq.read_metadata(fh)
    if scope is not None:
        scope.footers[key] = meta
        scope.reads += 1
    return meta


def data_files(fs, root: str, listed: Callable[[], list[str]]) -> list[str]:
    """The data files of Parquet folder ``root``, ``listed()`` (:func:`dpriv.parquet_files.
    folder_files`) once per scope; a copy, so a caller may sort it. An InputError ``listed``
    raises is raised on every call (nothing kept)."""
    scope = _SCOPE.get()
    if scope is None:
        return listed()
    key = _key(fs, root)
    if key not in scope.listings:
        scope.listings[key] = listed()
    return list(scope.listings[key])


def reads_in_scope() -> int | None:
    """Footers parsed so far in the current scope (None outside one): for tests and benchmarks."""
    scope = _SCOPE.get()
    return None if scope is None else scope.reads
