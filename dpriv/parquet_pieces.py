"""The rows of a frame as Arrow tables of one Parquet file's schema, in order: what
:func:`dpriv.io.write_parquet` encodes into a ledger file.

Under a distributed client the workers do the conversion: every partition is computed on its
worker, and the pieces of :data:`PIECE_ROWS` rows are cut, reduced to the written columns and
converted to Arrow there, :data:`AHEAD` pieces requested before the one the writer waits for.
The client receives Arrow buffers (no pickled Python strings, no private helper column) and
only encodes. Before, one round trip per partition, and one per piece, each waiting behind the
state parts the workers write meanwhile, and the client's own conversion were most of the
10^6-tuple release's ``write`` step (issue 13). Without a client the partitions are computed
one at a time in this process, as before.

Since session 42 the pieces are cut at the file's row-group boundaries as well as at the
partitions' (:func:`piece_ranges`), so a piece never straddles two row groups: the writer's
buffer empties at every boundary, and a row group that lies inside one partition arrives as
one piece, encoded without the concatenated copy. The partitions' lengths come back from one
graph (``Client.map``, not one ``submit`` per partition), and under a LocalCluster made in this
process the pieces are gathered from the workers directly (:func:`direct_gather`), not through
the scheduler, which runs in this process too and held each piece's bytes a second time.

The schema is the one ``pa.Table.from_pandas(piece, columns=columns, preserve_index=False)``
gives for the first non-empty piece; later pieces are converted to it
(``pa.Table.from_pandas(piece, schema=schema, preserve_index=False)``) and carry its metadata,
so the tables, and the file, are the same whatever the partitioning and wherever they are made.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

import pandas as pd

from dpriv._dispatch import distributed_client, is_dask

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pyarrow as pa

#: Rows of a piece fetched to the client at a time when a Dask frame is written under a
#: distributed client, at most (rounded down to whole row groups, at least one:
#: :func:`piece_step`): the client holds one piece and the row group it is buffered into, not
#: a partition (a partition of a 10^7-tuple view is ~10^6 rows). One ledger row group
#: (:data:`dpriv.io.ROW_GROUP`): a row group inside one partition is one piece.
PIECE_ROWS = 262_144
#: Pieces requested from the workers before the one the writer waits for: they are converted
#: while the client encodes, instead of one round trip at a time.
AHEAD = 3
#: Priority of the piece tasks on the workers: before other queued tasks (the state parts that
#: :func:`dpriv.state_parts.staged_state` has them write meanwhile), so the client, which
#: encodes the view alone, starts at once.
PRIORITY = 10


def to_arrow(part: pd.DataFrame, columns: list, schema: pa.Schema | None) -> pa.Table:
    """``part`` as an Arrow table of ``columns`` (``schema`` None: its own conversion, which
    gives the file's schema) or of ``schema`` (its metadata included). No index."""
    import pyarrow as pa

    if schema is None:
        return pa.Table.from_pandas(part, columns=columns, preserve_index=False)
    return pa.Table.from_pandas(part, schema=schema, preserve_index=False).replace_schema_metadata(
        schema.metadata
    )


def _piece(part: pd.DataFrame, start: int, stop: int, columns: list, schema: pa.Schema | None) -> pa.Table:
    """Rows ``start:stop`` of one partition, converted on the worker (:func:`to_arrow`)."""
    return to_arrow(part.iloc[start:stop], columns, schema)


class Piece(NamedTuple):
    """Rows ``start:stop`` of partition ``partition`` (0-based, ``start < stop``)."""

    partition: int
    start: int
    stop: int


def piece_step(row_group_size: int) -> int:
    """The alignment of the pieces: the largest multiple of ``row_group_size`` (>= 1) that is at
    most :data:`PIECE_ROWS`, or ``row_group_size`` itself when it is larger."""
    return row_group_size * max(1, PIECE_ROWS // row_group_size)


def piece_ranges(lengths: Iterable[int], step: int) -> list[Piece]:
    """The pieces of partitions of ``lengths`` rows (in order), cut at every partition boundary
    and at every multiple of ``step`` rows of the whole frame (``step`` >= 1; a multiple of the
    row group size: :func:`piece_step`), so that none straddles two row groups; empty
    partitions give none. Example: lengths ``[5, 5]``, step 4: ``(0, 0, 4), (0, 4, 5),
    (1, 0, 3), (1, 3, 5)``."""
    pieces, offset = [], 0
    for k, n in enumerate(lengths):
        start = 0
        while start < n:
            stop = min(n, start + step - (offset + start) % step)
            pieces.append(Piece(k, start, stop))
            start = stop
        offset += n
    return pieces


def direct_gather(client) -> bool | None:
    """Whether the pieces are gathered from the workers directly: the client's own setting
    (``distributed.client.direct-to-workers``) when it has one, else True under a LocalCluster
    made in this process (its workers are on this machine, and its scheduler runs in this
    process: through it, each piece's bytes were held twice here), else None (Dask's default:
    through the scheduler, which a client may reach when the workers' addresses are not)."""
    if client.direct_to_workers is not None:
        return client.direct_to_workers
    from distributed import LocalCluster

    return True if isinstance(getattr(client, "cluster", None), LocalCluster) else None


def arrow_pieces(
    frame: pd.DataFrame | dd.DataFrame, columns: list, row_group_size: int = PIECE_ROWS
) -> Iterator[pa.Table]:
    """The non-empty rows of ``frame`` (pandas: one piece; Dask: partition after partition) in
    order as Arrow tables of ``columns``, all of the first one's schema (module doc). Under a
    distributed client the pieces are cut by :func:`piece_ranges` for row groups of
    ``row_group_size`` rows. Nothing when the frame has no row. A partition that fails to
    compute raises here."""
    if not is_dask(frame):
        yield from _converted([frame], columns)
        return
    client = distributed_client()
    if client is None:  # the partitions in this process, one at a time
        yield from _converted((part.compute() for part in frame.to_delayed()), columns)
        return
    yield from _remote(client, frame.to_delayed(), columns, piece_step(row_group_size))


def _converted(parts: Iterable[pd.DataFrame], columns: list) -> Iterator[pa.Table]:
    schema = None
    for part in parts:
        if len(part) == 0:
            continue
        table = to_arrow(part, columns, schema)
        schema = table.schema if schema is None else schema
        del part
        yield table


def _remote(client, parts: list, columns: list, step: int) -> Iterator[pa.Table]:
    """Pieces converted on the workers (module doc): every partition computed where it lies
    (a persisted frame's are already there), their lengths from one graph in one round trip,
    then the pieces (:func:`piece_ranges` of ``step``) requested :data:`AHEAD` at a time, in
    order, each gathered in one round trip (:func:`direct_gather`)."""
    held = client.compute(parts, priority=PRIORITY)
    pending: deque = deque()
    try:
        lengths = client.gather(client.map(len, held, priority=PRIORITY))
        ranges = piece_ranges(lengths, step)
        if not ranges:
            return
        direct = direct_gather(client)
        k, start, stop = ranges[0]
        first = client.gather(
            client.submit(_piece, held[k], start, stop, columns, None, priority=PRIORITY), direct=direct
        )
        schema = first.schema
        yield first
        del first
        rest = iter(ranges[1:])
        while True:
            while len(pending) < AHEAD and (nxt := next(rest, None)) is not None:
                k, start, stop = nxt
                pending.append(
                    client.submit(_piece, held[k], start, stop, columns, schema, priority=PRIORITY)
                )
            if not pending:
                return
            yield client.gather(pending.popleft(), direct=direct)
    finally:  # a failure or an early stop: the requested pieces and partitions are let go
        for future in pending:
            future.release()
        for future in held:
            future.release()
