"""Each new state bucket's merge pinned to the worker that holds its old bucket (dpriv.state_homes,
issue 13): the restriction reaches the scheduler, loose, on the worker ``who_has`` names, for the
merges and for a growing bucket count's cuts; the new state equals the unpinned one row for
row; nothing is pinned without a client, on one worker, or for a state not persisted. The rbk
step's join of each bucket, and with it the bucket's revision (one task), run where the state
bucket lies and give the unpinned rows."""

from __future__ import annotations

from typing import NamedTuple

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from dask.delayed import Delayed
from distributed import Client, LocalCluster, futures_of, wait
from distributed.utils import key_split
from test_next_state import random_tables
from test_pk_graph import POLICY, WINDOW, members

import dpriv.rbk as rbk_mod
import dpriv.state_homes as state_homes_mod
from dpriv.pk_graph import pk_graph
from dpriv.rbk import revised, with_state
from dpriv.state import empty_state
from dpriv.state_homes import state_homes

HELD = 4


def restrictions(dask_scheduler) -> list[tuple[str, str, list[str], bool, list[str]]]:
    """Per task of the scheduler: (key, prefix, worker restrictions, loose, dependency keys)."""
    return [
        (str(k), key_split(k), sorted(ts.worker_restrictions or ()), ts.loose_restrictions,
         [str(d.key) for d in ts.dependencies])
        for k, ts in dask_scheduler.tasks.items()
    ]  # fmt: skip


def spec_dependencies(dask_scheduler, keys: list[str]) -> list[list[str]]:
    """The keys each task of ``keys`` reads, from its spec (a finished task's dependencies on the
    scheduler lose the keys its client has released since, such as a scattered future's)."""
    return [sorted(map(str, dask_scheduler.tasks[k].run_spec.dependencies)) for k in keys]


class Histories(NamedTuple):
    """Release 1's new state (``buckets``, 4, pandas), release 2's members, and release 2's new
    state of 4 and of 8 buckets computed with no client at all (the in-process reference)."""

    buckets: tuple[pd.DataFrame, ...]
    second: dd.DataFrame
    reference: dict[int, list[pd.DataFrame]]


def histories(rng) -> Histories:
    first = members(rng, rng.permutation(400)[:150], nparts=3)
    second = members(rng, rng.permutation(400)[:170], nparts=4)
    with dask.config.set(scheduler="sync"):
        buckets = dask.compute(*pk_graph(first, empty_state(POLICY, WINDOW), POLICY, WINDOW, 1, HELD).buckets)
        whole = pd.concat(buckets)
        ref = {n: list(dask.compute(*pk_graph(second, whole, POLICY, WINDOW, 2, n).buckets)) for n in (4, 8)}
    return Histories(buckets, second, ref)


def placed(client: Client, buckets) -> tuple[dd.DataFrame, list[str]]:
    """Release 1's state put on the two workers in an order no rule of thumb guesses (w1, w0,
    w0, w1), as a frame over the persisted buckets like the release's own
    (:meth:`dpriv.pk_graph.PkGraph.state`), and the bucket keys' workers."""
    w = sorted(client.scheduler_info()["workers"])
    where = [w[1], w[0], w[0], w[1]]
    futures = [client.scatter(b, workers=[a]) for b, a in zip(buckets, where, strict=True)]
    parts = [Delayed(f.key, {f.key: f}) for f in futures]
    return dd.from_delayed(parts, meta=buckets[0].iloc[:0], verify_meta=False), where


class Run(NamedTuple):
    """Release 2's new state, gathered, and per task of its graph (key: prefix, worker
    restrictions, loose, dependency keys) as the scheduler held it."""

    buckets: list[pd.DataFrame]
    keys: list[str]
    tasks: dict[str, tuple[str, list[str], bool, list[str]]]


def new_state(client: Client, second, state, n: int) -> Run:
    """Release 2's state of ``n`` buckets, persisted as the release does (``dask.persist``)."""
    graph = pk_graph(second, state, POLICY, WINDOW, 2, n, state_buckets=HELD)
    out = dask.persist(*graph.buckets)
    wait(list(out))
    tasks = {k: (p, r, loose, deps) for k, p, r, loose, deps in client.run_on_scheduler(restrictions)}
    return Run(list(dask.compute(*out)), [str(o.key) for o in out], tasks)


@pytest.mark.slow  # a 2-worker cluster and 3 pk steps: ~3 s
def test_merges_run_where_their_old_bucket_lies_and_give_the_unpinned_state(monkeypatch):
    h = histories(np.random.default_rng(13))
    second = h.second
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as lc,
        Client(lc) as client,
    ):
        state, where = placed(client, h.buckets)
        homes = state_homes(state, HELD)
        assert homes is not None and homes.workers == where
        for n in (HELD, 2 * HELD):  # the count kept, then doubled (each old bucket cut where it lies)
            got = new_state(client, second, state, n)
            for b, key in enumerate(got.keys):
                prefix, workers, loose, _ = got.tasks[key]
                assert (prefix, workers, loose) == ("merge_bucket", [where[b % HELD]], True), b
            cuts = [t for t in got.tasks.values() if t[0] == "bucket_rows"]
            assert len(cuts) == (n if n > HELD else 0)
            source_of = {str(s.key): a for s, a in zip(homes.sources, where, strict=True)}
            for _, workers, loose, deps in cuts:  # each cut on the worker of the bucket it reads
                assert loose and [source_of[d] for d in deps if d in source_of] == workers
            monkeypatch.setattr(state_homes_mod, "PIN_MERGES", False)
            plain = new_state(client, second, state, n)
            monkeypatch.setattr(state_homes_mod, "PIN_MERGES", True)
            assert all(not plain.tasks[k][1] for k in plain.keys)  # today's merges: unrestricted
            assert sum(map(len, got.buckets)) == len(set(pd.concat(got.buckets)[POLICY.id])) > 150
            for a, b, c in zip(got.buckets, plain.buckets, h.reference[n], strict=True):
                pd.testing.assert_frame_equal(a, b)
                pd.testing.assert_frame_equal(a, c)
        # the release's own persisted state is found the same way (one future per bucket)
        graph = pk_graph(second, state, POLICY, WINDOW, 2, HELD, state_buckets=HELD)
        persisted = dask.persist(*graph.buckets)
        wait(list(persisted))
        found = state_homes(graph.state(list(persisted)), HELD)
        assert found is not None and [s.key for s in found.sources] == [p.key for p in persisted]
        assert state_homes(graph.state(list(persisted)), 2 * HELD) is None  # partitions are not its buckets


def test_nothing_is_pinned_without_a_client_or_with_one_worker():
    rng = np.random.default_rng(5)
    state = dd.from_pandas(pd.DataFrame({POLICY.id: rng.permutation(40)}), npartitions=HELD)
    with dask.config.set(scheduler="sync"):
        assert state_homes(state, HELD) is None
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as lc,
        Client(lc),
    ):
        persisted = state.persist()
        wait(persisted)
        assert state_homes(persisted, HELD) is None


@pytest.mark.slow  # a 2-worker cluster: ~2 s
def test_each_rbk_join_runs_where_its_state_bucket_lies_and_gives_the_unpinned_rows():
    h = histories(np.random.default_rng(17))
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as lc,
        Client(lc) as client,
    ):
        state, where = placed(client, h.buckets)
        homes = state_homes(state, HELD)
        pinned_join = with_state(h.second, state, POLICY, 3, HELD, homes)
        futures = futures_of(pinned_join)
        wait(futures)
        tasks = {k: (p, r, loose) for k, p, r, loose, _ in client.run_on_scheduler(restrictions)}
        assert [tasks[str(f.key)] for f in futures] == [("join_bucket", [w], True) for w in where]
        plain = with_state(h.second, state, POLICY, 3, HELD)
        assert pinned_join.npartitions == plain.npartitions == HELD
        for b in range(HELD):  # the same rows, in the same order, in the same partition
            got, want = (f.partitions[b].compute() for f in (pinned_join, plain))
            pd.testing.assert_frame_equal(got, want)
        assert sum(len(pinned_join.partitions[b].compute()) for b in range(HELD)) == 170


def partitions(frame: dd.DataFrame) -> list[pd.DataFrame]:
    return [frame.partitions[b].compute() for b in range(frame.npartitions)]


@pytest.mark.slow  # a 2-worker cluster: ~2 s
def test_each_bucket_is_revised_in_its_pinned_join_task_and_gives_the_unpinned_rows(monkeypatch):
    """Join then revision of a bucket in one task on its state's worker (dpriv.rbk.revised): no
    separate join future, the tables one scattered future every task reads; the revised
    partitions equal those of the join pinned alone then revised by the scheduler, of the
    unpinned path, and RBK equals the in-process step's bit for bit."""
    rng = np.random.default_rng(19)
    h = histories(rng)
    view = h.second.assign(age=h.second[POLICY.id] % 10)
    tables = random_tables(rng, POLICY)
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as lc,
        Client(lc) as client,
    ):
        state, where = placed(client, h.buckets)
        homes = state_homes(state, HELD)
        got = revised(view, state, tables, POLICY, WINDOW, 3, HELD, homes)
        futures = futures_of(got)
        wait(futures)
        tasks = {k: (p, r, loose, deps) for k, p, r, loose, deps in client.run_on_scheduler(restrictions)}
        mine = [tasks[str(f.key)] for f in futures]
        assert [t[:3] for t in mine] == [("revised_bucket", [w], True) for w in where]
        assert not [t for t in tasks.values() if t[0] == "join_bucket"]  # no joined frame of its own
        specs = client.run_on_scheduler(spec_dependencies, keys=[str(f.key) for f in futures])
        common = set.intersection(*map(set, specs))  # the tables: one future, every task's argument
        assert [key_split(k) for k in common] == ["MarkovTables"]
        monkeypatch.setattr(rbk_mod, "PIN_REVISION", False)  # session 46: the join alone pinned
        joined_alone = revised(view, state, tables, POLICY, WINDOW, 3, HELD, homes)
        plain = revised(view, state, tables, POLICY, WINDOW, 3, HELD)
        want = partitions(plain)
        assert got.npartitions == joined_alone.npartitions == HELD
        for a, b, c in zip(partitions(got), partitions(joined_alone), want, strict=True):
            pd.testing.assert_frame_equal(a, c, check_exact=True)  # same rows, order, index, bits
            pd.testing.assert_frame_equal(b, c, check_exact=True)
    whole = pd.concat(want).sort_values(POLICY.id).reset_index(drop=True)
    with dask.config.set(scheduler="sync"):
        alone = revised(view.compute(), pd.concat(h.buckets), tables, POLICY, WINDOW, 1)
    alone = alone.sort_values(POLICY.id).reset_index(drop=True)
    assert len(whole) == 170 and (whole[POLICY.id].isin(pd.concat(h.buckets)[POLICY.id])).any()
    cols = [POLICY.id, *POLICY.prior_columns]
    pd.testing.assert_frame_equal(whole[cols], alone[cols], check_exact=True)
