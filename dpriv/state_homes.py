"""Where each bucket of a persisted respondent state lies, so that the pk step's merge of a bucket
runs on that worker (issue 13; docs/scaling.md, "Each bucket's merge where its bucket lies").

A Dask release hands the next one its new state as a frame over the persisted buckets
(:meth:`dpriv.pk_graph.PkGraph.state`): partition b is one future on one worker. Left to
itself, the scheduler puts each new bucket's merge (its old rows, ~30 MiB at 10^6 on 2 workers,
and its posteriors from every part) on whichever worker is less busy, and the old rows cross
(session 45: 1-8 buckets a run). :func:`state_homes` finds the futures and the worker holding
each (``Client.who_has``, one round trip); :func:`pinned` restricts a task to a worker LOOSELY
(``allow_other_workers=True``: a lost worker never stalls a release, the scheduler runs the
task elsewhere). Same tasks, same inputs: the rows and bytes do not change, only where a task
runs. The rbk step's join of the view with the state (:func:`dpriv.rbk.with_state`) is pinned
the same way, one task per held bucket, and with it the revision of the joined rows
(:func:`dpriv.rbk.revised`: join then revision in one task).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, NamedTuple

import dask
import pandas as pd
from dask.core import get_dependencies
from dask.delayed import Delayed

from dpriv._dispatch import distributed_client, is_dask
from dpriv.state_buckets import bucket_rows

#: Pin the merges (the release's default); a benchmark turns it off to compare
#: (``benchmarks/bench_pinned_release.py``).
PIN_MERGES = True


class Homes(NamedTuple):
    """The persisted buckets of a state: ``sources[i]`` bucket i of ``held`` (a Delayed over its
    future, no alias between), ``workers[i]`` the address of a worker holding it."""

    sources: list[Delayed]
    workers: list[str]

    def olds(self, column: str, nbuckets: int) -> list[Any]:
        """The state's rows of each of ``nbuckets`` buckets (a multiple of ``len(sources)``):
        held bucket b itself, or the rows of bucket b cut from held bucket ``b % held`` by a task
        pinned to its worker (the doubling's split where its bucket lies); rows in their held
        order, as :func:`dpriv.state_buckets.by_bucket` gives them (index aside: the merge drops it)."""
        held = len(self.sources)
        if nbuckets == held:
            return list(self.sources)
        cut = dask.delayed(bucket_rows, pure=True)
        out = []
        for b in range(nbuckets):
            with pinned(self.workers[b % held]):
                out.append(cut(self.sources[b % held], column, nbuckets, b))
        return out

    def worker(self, bucket: int) -> str:
        """The worker to run new bucket ``bucket``'s merge on: the one holding its source."""
        return self.workers[bucket % len(self.workers)]


@contextlib.contextmanager
def pinned(worker: str | None) -> Iterator[None]:
    """Tasks built in this block (Delayed calls) are restricted to ``worker``, loosely; None:
    no restriction (a plain block)."""
    if worker is None:
        yield
        return
    with dask.annotate(workers=[worker], allow_other_workers=True):
        yield


def state_homes(state: pd.DataFrame | Any, held: int | None) -> Homes | None:
    """The persisted buckets of a Dask ``state`` whose ``held`` partitions are its buckets, and
    their workers; None when there is nothing to pin to: no distributed client, fewer than 2
    workers, a pandas state, a state not persisted one future per partition (a resumed history
    reads its state from the ledger's Parquet parts), or a future no worker holds."""
    client = distributed_client() if PIN_MERGES else None
    if client is None or not is_dask(state) or not held or state.npartitions != held:
        return None
    futures = _partition_futures(state)
    if futures is None or len(client.nthreads()) < 2:
        return None
    who = client.who_has(futures)
    workers = [sorted(who.get(f.key) or ())[:1] for f in futures]
    if not all(workers):
        return None
    sources = [Delayed(f.key, {f.key: f}) for f in futures]
    return Homes(sources, [w[0] for w in workers])


def _partition_futures(frame: Any) -> list[Any] | None:
    """The one future each partition of ``frame`` reads (through aliases), in partition order,
    or None when a partition reads none or several."""
    from distributed import Future, futures_of

    if len(futures_of(frame)) != frame.npartitions:  # cheap refusal: not a frame of persisted parts
        return None
    graph = dict(frame.__dask_graph__())
    out = []
    for key in frame.__dask_keys__():
        found, seen, todo = [], set(), [key]
        while todo:
            k = todo.pop()
            if k in seen:
                continue
            seen.add(k)
            value = graph.get(k)
            if isinstance(value, Future):
                found.append(value)
            elif value is not None:
                todo.extend(get_dependencies(graph, k))
        if len(found) != 1:
            return None
        out.append(found[0])
    return out
