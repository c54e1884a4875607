"""The respondent state in the ledger as Parquet parts written by the workers (issue 13, item 4).

``state/<i>/`` holds the state after release ``i`` (docs/ledger.md): one Parquet file per
*bucket* of respondents, ``bucket = stable_hash(id) % nbuckets``
(:func:`dpriv.state_buckets.state_buckets`), rows in the state's own order (bucket after bucket,
sorted by id inside a bucket: :func:`dpriv.state.next_state`). The number of buckets depends
on the data only (:func:`state_nbuckets`: the number of respondents, never the number of
partitions), so the same state gives the same files, byte for byte, on the in-process path and
on Dask with any partitioning in which no bucket spans two partitions (``next_state`` cuts
the state that way):

* one bucket (a state of at most :data:`STATE_PART_ROWS` rows, every small ledger):
  ``state/<i>/state.parquet``, the file every earlier ledger has;
* ``nbuckets > 1``: ``state/<i>/part-<bucket, 5 digits>.parquet``, one per non-empty bucket,
  each written by the worker that holds the bucket (nothing of the state passes through the
  client).

Crash safety: the parts are written into a temp folder ``state/.<i>.<random>/`` that is
renamed to ``state/<i>/`` once every part is on disk; a failure removes the temp folder (a
killed client leaves it to :meth:`dpriv.ledger.Ledger` clean-up), so ``state/<i>/`` is never
half written and the manifest, written after it, still lists the last commit.

Readers (:func:`state_files`) take every ``*.parquet`` of the folder in name order, so a
ledger of any dpriv version (a single ``state.parquet``) reads the same way.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dpriv._dispatch import is_dask, meta_of
from dpriv.io import TEMP_SUFFIX, write_parquet

if TYPE_CHECKING:
    import dask.dataframe as dd

#: Respondents per bucket of the state, at most (about 64 MB in memory with the paper's 61
#: numbers a row): a state of ``n`` rows is cut into the power of two at or above
#: ``ceil(n / STATE_PART_ROWS)`` buckets, one Parquet part each (:func:`state_nbuckets`). It
#: bounds the memory of one pk task and of one part write; the parts are written in parallel
#: by the workers.
STATE_PART_ROWS = 131_072
#: The single-part name (every state of at most :data:`STATE_PART_ROWS` rows; older ledgers).
SINGLE = "state.parquet"
#: Parquet encoding of the state: dictionary pages (pyarrow's default). Plain pages were
#: measured as a lever (docs/scaling.md "Since the measurements above"): CPU seconds of a
#: write of the 10^6-respondent state 1.00 (plain) vs 1.00 (dictionary), of a 262,144-row
#: part 0.28 vs 0.30, but files twice as large (57 vs 28 MiB): not taken.
USE_DICTIONARY = True


def state_nbuckets(n_rows: int) -> int:
    """Buckets of a state of at most ``n_rows`` respondents: the power of two at or above
    ``ceil(n_rows / STATE_PART_ROWS)`` (1, 2, 4, 8, ...). ``n_rows`` is a bound fixed by the
    data (rows of the previous state plus the view's tuples), the same on every release path
    and for any number of partitions. Powers of two because the state only grows: the count
    stays the same for long, and when it doubles each bucket splits in two where it lies
    (a hash modulo 2n is the hash modulo n, or that plus n), so a Dask release never
    shuffles the state it holds (:func:`dpriv.state_buckets.by_bucket`)."""
    need = max(1, math.ceil(int(n_rows) / STATE_PART_ROWS))
    return 1 << (need - 1).bit_length()


def part_name(bucket: int, nbuckets: int) -> str:
    """``state.parquet`` for a one-bucket state, ``part-<bucket:05d>.parquet`` otherwise."""
    return SINGLE if nbuckets <= 1 else f"part-{int(bucket):05d}.parquet"


@dataclass(frozen=True)
class PartWritten:
    """One part of the state on disk: its bucket, its rows and its file name."""

    bucket: int
    rows: int
    name: str


def write_bucket(folder: str, part: pd.DataFrame, bucket: int, nbuckets: int) -> PartWritten:
    """Write the rows of one bucket (pandas, in order) as ``folder/part_name(bucket)``, mode 0600,
    atomically (:func:`dpriv.io.write_parquet`; dictionary pages: :data:`USE_DICTIONARY`)."""
    name = part_name(bucket, nbuckets)
    rows = write_parquet(Path(folder) / name, part, mode=0o600, use_dictionary=USE_DICTIONARY)
    return PartWritten(int(bucket), rows, name)


def _split(part: pd.DataFrame, id_col: str, nbuckets: int) -> list[tuple[int, pd.DataFrame]]:
    """The rows of ``part`` per bucket, buckets in order of first appearance, rows in order."""
    from dpriv.state_buckets import state_buckets

    if len(part) == 0:
        return []
    if nbuckets <= 1:
        return [(0, part)]
    buckets = state_buckets(part[id_col], nbuckets)
    first = np.unique(buckets, return_index=True)[1]
    order = buckets[np.sort(first)]
    if len(order) == 1:
        return [(int(order[0]), part)]
    return [(int(b), part[buckets == b]) for b in order]


def write_partition(part: pd.DataFrame, folder: str, id_col: str, nbuckets: int) -> list[PartWritten]:
    """Write every bucket held by one partition of the state (runs as a task on a worker)."""
    return [write_bucket(folder, rows, b, nbuckets) for b, rows in _split(part, id_col, nbuckets)]


def _check(written: list[PartWritten], state: pd.DataFrame | dd.DataFrame, folder: Path, nbuckets: int):
    seen: set[int] = set()
    for w in written:
        if w.bucket in seen:
            raise ValueError(
                f"bucket {w.bucket} of the state lies in more than one partition; cut the state "
                "by bucket first (dpriv.state.next_state does)"
            )
        seen.add(w.bucket)
    if not written:  # no rows: one empty part with the state's columns
        written = [write_bucket(str(folder), meta_of(state), 0, nbuckets)]
    return sorted(written, key=lambda w: w.bucket)


def _start(folder: Path, state: pd.DataFrame | dd.DataFrame, id_col: str | None, nbuckets: int):
    """Start writing the parts; return a function that waits for them and returns them.

    A Dask state of several buckets: one task per partition, persisted (under a distributed
    client the workers start at once and the client goes on); otherwise the parts are
    written when the returned function is called."""
    if nbuckets <= 1 and not (is_dask(state) and state.npartitions == 1):

        def single() -> list[PartWritten]:
            rows = write_parquet(folder / SINGLE, state, mode=0o600, use_dictionary=USE_DICTIONARY)
            return [PartWritten(0, rows, SINGLE)]

        return single
    if not is_dask(state):
        return lambda: _check(write_partition(state, str(folder), id_col, nbuckets), state, folder, nbuckets)
    import dask

    # absolute: a worker of a user's scheduler may run in another folder than this process
    where = str(folder.absolute())
    tasks = [dask.delayed(write_partition)(p, where, id_col, nbuckets) for p in state.to_delayed()]
    running = dask.persist(*tasks)

    def gather() -> list[PartWritten]:
        try:
            done = dask.compute(*running)
        except BaseException:
            _settle(running)
            raise
        return _check([w for ws in done for w in ws], state, folder, nbuckets)

    gather.settle = lambda: _settle(running)  # type: ignore[attr-defined]
    return gather


def _settle(running) -> None:
    """Wait until every part task has ended (a failed one does not stop the others), so that
    none writes into the temp folder after its removal (distributed futures; a local
    scheduler's tasks have ended when persist returned)."""
    with contextlib.suppress(Exception):
        from distributed import futures_of, wait

        wait(futures_of(running))


def write_state(
    folder: Path, state: pd.DataFrame | dd.DataFrame, id_col: str | None, nbuckets: int
) -> list[PartWritten]:
    """Write ``state`` (pandas or Dask, the columns of :func:`dpriv.state.empty_state`) as the
    parts of ``folder`` (an existing, empty, private folder); return the parts, by bucket.

    A Dask state of more than one bucket, or of one partition, is written by its workers, one
    task per partition (a one-partition state by one task: it never reaches the client);
    each bucket must lie in one partition (ValueError naming the bucket otherwise: a bucket
    split over partitions would be written twice). A one-bucket state is streamed to
    ``state.parquet`` as every ledger file is (:func:`dpriv.io.write_parquet`), streamed
    through the client if it is a Dask frame of several partitions. A state
    with no rows gives one empty ``part_name(0)`` with the frame's columns.
    """
    return _start(folder, state, id_col, nbuckets)()


@contextlib.contextmanager
def staged_state(
    target: Path, state: pd.DataFrame | dd.DataFrame, id_col: str | None, nbuckets: int
) -> Iterator[None]:
    """Write the state into a temp folder beside ``target`` (``.<name>.<random>.dpriv-tmp``, 0700) while
    the body runs (the workers write their parts while the client writes the view), then
    rename it to ``target`` (an uncommitted ``target`` of an earlier attempt is replaced).
    On any failure, of a part or of the body, the running writes are waited for, the temp
    folder is removed and ``target`` is left as it was."""
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(target.parent, 0o700)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=TEMP_SUFFIX))
    finish = None
    try:
        finish = _start(tmp, state, id_col, nbuckets)
        yield
        finish, wait = None, finish
        wait()
        if target.exists():  # an uncommitted attempt's parts only (the ledger refuses other files)
            for f in target.iterdir():
                if f.name == SINGLE or (f.name.startswith("part-") and f.suffix == ".parquet"):
                    f.unlink()
            target.rmdir()  # raises if anything else is left: nothing of the user's is removed
        os.replace(tmp, target)
    except BaseException:
        settle = getattr(finish, "settle", None)  # tasks started: let them end before the removal
        if settle is not None:
            settle()
        raise
    finally:
        for _ in range(5):  # a thread of a local scheduler may still be closing a part
            shutil.rmtree(tmp, ignore_errors=True)
            if not tmp.exists():
                break
            time.sleep(0.05)


def state_files(folder: Path) -> list[Path]:
    """The Parquet parts of a state folder in name order (temp files left out): ``state.parquet``
    alone, or ``part-00000.parquet``, ``part-00001.parquet``, ..."""
    return sorted(p for p in folder.glob("*.parquet") if not p.name.startswith("."))


def read_state_files(files: list[Path]) -> pd.DataFrame:
    """The parts read and concatenated in order (one RangeIndex frame)."""
    if len(files) == 1:
        return pd.read_parquet(files[0])
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)


@dataclass(frozen=True)
class HeldState:
    """A committed state as the next release takes it: ``frame`` (Dask), ``buckets`` (the
    number of buckets its partitions are, partition b holding bucket b; None when they are
    not known to be) and ``rows`` (its number of respondents, from the Parquet footers)."""

    frame: dd.DataFrame
    buckets: int | None
    rows: int


def dask_state(files: list[Path], row_groups: int) -> dd.DataFrame:
    """The state in ``files`` as a Dask DataFrame of ``row_groups`` Parquet row groups per
    partition (:meth:`dpriv.ledger.Ledger.read_state_dask`)."""
    import dask.dataframe as dd

    paths = [str(f.absolute()) for f in files]  # workers may run elsewhere
    return dd.read_parquet(paths, split_row_groups=row_groups, index=False)


def held_state(files: list[Path], nbuckets: int | None) -> HeldState:
    """The state parts ``files`` (:func:`state_files` order) for the next release: one Dask
    partition per bucket when ``nbuckets`` (the count the manifest recorded) is known and the
    files are exactly the parts of buckets ``0..nbuckets-1`` (so the release joins the state
    where it lies, :func:`dpriv.state_buckets.by_bucket`); else row groups of the files, buckets
    unknown (an empty bucket has no file; a ledger written before the count was recorded)."""
    import dask.dataframe as dd
    import pyarrow.parquet as pq

    rows = sum(pq.read_metadata(f).num_rows for f in files)
    if nbuckets is not None and [f.name for f in files] == [part_name(b, nbuckets) for b in range(nbuckets)]:
        meta = pq.read_schema(files[0]).empty_table().to_pandas()
        paths = [str(f.absolute()) for f in files]  # read on workers, which may run in another folder
        return HeldState(dd.from_map(_read_part, paths, meta=meta), nbuckets, rows)
    return HeldState(
        dd.read_parquet([str(f.absolute()) for f in files], split_row_groups=1, index=False), None, rows
    )


def _read_part(path: str) -> pd.DataFrame:
    return pd.read_parquet(path)
