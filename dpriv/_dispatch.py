"""The one pandas-or-Dask dispatch (STYLE.md: a thin dispatcher, a pandas kernel per step).

Every step is written as a pandas kernel; on a Dask collection it runs once per partition
(``map_partitions``, with the meta the caller states), on pandas it is called directly. No
function here computes anything.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import dask
import pandas as pd


def is_dask(obj: Any) -> bool:
    """Whether ``obj`` is a Dask collection (DataFrame, Series, Array, ...), not pandas/NumPy."""
    return dask.is_dask_collection(obj)


def meta_of(frame: Any) -> pd.DataFrame | pd.Series:
    """The empty pandas frame (or series) with ``frame``'s columns and dtypes; no compute."""
    return frame._meta if is_dask(frame) else frame.iloc[:0]


def map_frame(kernel: Callable[..., Any], frame: Any, *args: Any, meta: Any = None, **kwargs: Any) -> Any:
    """``kernel(frame, *args, **kwargs)`` on pandas; one lazy task per partition on Dask.

    ``meta`` (the kernel's output on an empty input: pandas frame/series, or a dict of column
    dtypes) is required on Dask, where it is the promised output type; it is ignored on pandas.
    """
    if is_dask(frame):
        if meta is None:
            raise TypeError(f"map_frame({kernel.__name__}) on a Dask collection needs meta")
        return frame.map_partitions(kernel, *args, meta=meta, **kwargs)
    return kernel(frame, *args, **kwargs)


def to_pandas(obj: Any) -> Any:
    """``obj.compute()`` for a Dask collection, ``obj`` itself otherwise (for the places that
    collect a small result on the client anyway)."""
    return obj.compute() if is_dask(obj) else obj


def shared(obj: Any, frame: Any) -> Any:
    """``obj`` as an argument of tasks over ``frame``: under a distributed client and for a
    Dask ``frame``, a future of ``obj`` scattered once to every worker (the graph then holds
    its key, not its bytes: BK^seq tables of order 3 are ~19 MB, which Dask would embed and
    warn about as a large graph); ``obj`` itself otherwise (pandas, or no distributed client)."""
    return broadcast(obj) if is_dask(frame) else obj


def broadcast(obj: Any) -> Any:
    """``obj`` scattered once to every worker of the current distributed client (a future,
    which tasks take as an argument: the graph holds its key, not its bytes), or ``obj``
    itself without a distributed client (Dask's local schedulers share the process's memory),
    or when the Dask config names another scheduler for the graph (a future cannot be read
    there: ``dask.config.set(scheduler="sync")`` while a client exists)."""
    client = distributed_client()
    if client is None or getattr(dask.base.get_scheduler(), "__self__", None) is not client:
        return obj
    return client.scatter(obj, broadcast=True, hash=True)


def to_dask(frame: pd.DataFrame, npartitions: int) -> Any:
    """A pandas ``frame`` as a Dask DataFrame of ``npartitions`` consecutive row chunks, as
    ``dd.from_pandas(frame, npartitions, sort=False)`` makes it. Under a distributed client the
    chunks are scattered to the workers first, so the graph holds their keys, not their bytes
    (a pandas history of 200,000-row views sent ~11 MiB per release, with Dask's large-graph
    warning); the dtypes are those ``from_pandas`` would give (object strings as Dask's string
    dtype where it converts them). A frame of no rows in one partition (a first release's empty
    state) is put in the graph, as ``from_pandas`` does: a scatter would cost a round trip to the
    cluster for nothing kept out of the graph."""
    import dask.dataframe as dd
    import numpy as np

    client = distributed_client()
    if client is None or (not len(frame) and npartitions <= 1):
        return dd.from_pandas(frame, npartitions=npartitions, sort=False)
    meta = dd.from_pandas(frame.iloc[:0], npartitions=1, sort=False)._meta
    changed = {c: t for c, t in meta.dtypes.items() if t != frame[c].dtype}
    bounds = np.linspace(0, len(frame), max(int(npartitions), 1) + 1).astype(np.int64)
    parts = [frame.iloc[a:b].astype(changed) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return dd.from_delayed(client.scatter(parts), meta=meta, verify_meta=False)


def distributed_client() -> Any:
    """The current ``distributed.Client``, or None (no distributed client: Dask's local
    schedulers run the tasks in this process)."""
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


#: Dask's shuffle method for dpriv's steps (set_index on the Hilbert key and on the label, the
#: joins on the id) when the user's Dask config names none: ``"tasks"``. Dask's own default
#: under a distributed client, ``"p2p"``, cost more per shuffle at the sizes measured on 2
#: workers (10^6 tuples, the recommended defense: the Hilbert shuffle step 2.5-2.7 s against
#: 0.9-1.0 s, the release 14.3-14.6 s against 12.6 s, on 1 worker 20.5-20.9 s against 15.6-17.5
#: s; 10^7: 215 s against 198 s; docs/scaling.md).
SHUFFLE_METHOD = "tasks"


@contextlib.contextmanager
def shuffle_method() -> Iterator[str]:
    """Within the block, Dask shuffles use :data:`SHUFFLE_METHOD` unless the Dask config
    (``dataframe.shuffle.method``, e.g. ``DASK_DATAFRAME__SHUFFLE__METHOD=p2p``) names one,
    which is then kept (but ``"p2p"`` without a distributed client, where it cannot run:
    ``"tasks"`` then); yields the method in use. The bytes released are the same under
    either (each step orders its rows itself). ConfigError for a method Dask does not have
    (:func:`dpriv.dask_config.check_dask_config`)."""
    from dpriv.dask_config import check_dask_config

    check_dask_config()
    chosen = dask.config.get("dataframe.shuffle.method", None)
    if chosen is None or (chosen == "p2p" and distributed_client() is None):
        chosen = SHUFFLE_METHOD
    with dask.config.set({"dataframe.shuffle.method": chosen}):
        yield chosen
