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

The schema is the one ``pa.Table.from_pandas(piece, columns=columns, preserve_index=False)``
gives for the first non-empty piece; later pieces are converted to it
(``pa.Table.from_pandas(piece, schema=schema, preserve_index=False)``) and carry its metadata,
so the tables, and the file, are the same whatever the partitioning and wherever they are made.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import pandas as pd

from dpriv._dispatch import distributed_client, is_dask

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pyarrow as pa

#: Rows of a piece fetched to the client at a time when a Dask frame is written under a
#: distributed client: the client holds at most :data:`AHEAD` + 1 pieces, not a partition (a
#: partition of a 10^7-tuple view is ~10^6 rows, a visible share of the client's peak memory).
PIECE_ROWS = 131_072
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


def arrow_pieces(frame: pd.DataFrame | dd.DataFrame, columns: list) -> Iterator[pa.Table]:
    """The non-empty rows of ``frame`` (pandas: one piece; Dask: partition after partition) in
    order as Arrow tables of ``columns``, all of the first one's schema (module doc). Nothing
    when the frame has no row. A partition that fails to compute raises here."""
    if not is_dask(frame):
        yield from _converted([frame], columns)
        return
    client = distributed_client()
    if client is None:  # the partitions in this process, one at a time
        yield from _converted((part.compute() for part in frame.to_delayed()), columns)
        return
    yield from _remote(client, frame.to_delayed(), columns)


def _converted(parts: Iterable[pd.DataFrame], columns: list) -> Iterator[pa.Table]:
    schema = None
    for part in parts:
        if len(part) == 0:
            continue
        table = to_arrow(part, columns, schema)
        schema = table.schema if schema is None else schema
        del part
        yield table


def _remote(client, parts: list, columns: list) -> Iterator[pa.Table]:
    """Pieces converted on the workers (module doc): every partition computed where it lies
    (a persisted frame's are already there), their lengths in one round trip, then the pieces
    requested :data:`AHEAD` at a time, in order."""
    held = client.compute(parts, priority=PRIORITY)
    lengths = client.gather([client.submit(len, h, priority=PRIORITY) for h in held])
    ranges = [
        (k, start, min(start + PIECE_ROWS, n))
        for k, n in enumerate(lengths)
        for start in range(0, n, PIECE_ROWS)
    ]
    if not ranges:
        return
    k, start, stop = ranges[0]
    first = client.submit(_piece, held[k], start, stop, columns, None, priority=PRIORITY).result()
    schema = first.schema
    yield first
    del first
    pending: deque = deque()
    rest = iter(ranges[1:])
    try:
        while True:
            while len(pending) < AHEAD and (nxt := next(rest, None)) is not None:
                k, start, stop = nxt
                pending.append(
                    client.submit(_piece, held[k], start, stop, columns, schema, priority=PRIORITY)
                )
            if not pending:
                return
            yield pending.popleft().result()
    finally:  # a failure or an early stop: the requested pieces and partitions are let go
        for future in pending:
            future.release()
        for future in held:
            future.release()
