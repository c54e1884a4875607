"""The pk step of a release whose state bucket count doubles: the old buckets split where they
lie (issue 13; docs/scaling.md "State by Hilbert range, measured" and what follows it).

Two views of ``--rows`` tuples of the medical history (seed 0, the recommended defense's
domains), a LocalCluster of ``--workers`` single-threaded workers, Dask's task shuffle (as
``dpriv release``). Release 1 (``bench_state_layout.today``) leaves a state of 8 buckets at 10^6
persisted on the workers; release 2's revision and stand-in grouping are persisted once; then its
pk step (``dpriv.pk_graph.pk_graph``, the only step of a release that calls
``dpriv.state_buckets.by_bucket`` with more buckets than it ``held``: 8 -> 16) runs ``--repeat``
times each way, alternated:

* ``today``: ``dpriv.state_buckets.by_bucket``: each of the 16 output buckets a task of its own
  that reads its whole source bucket and keeps its rows;
* ``split``: one task per source bucket cuts it into its output pieces, each output bucket a
  getitem of its source's task (:func:`by_bucket_split`, a prototype: tried, not taken);
* ``pinned``: ``split``'s cut, with each source bucket's cut and each new bucket's merge
  restricted to the worker that holds the source bucket (a prototype, not the release path:
  the release does not know where its state's buckets lie).

Printed per way: best wall seconds, MiB the workers fetched from each other per run (their
transfer logs, by key prefix; a held bucket fetched whole counted apart) and which tasks
fetched which inputs (``placement_log``); split / today and pinned / today as ratios. The
new states are asserted equal, bucket by bucket, row by row. ``--no-stealing`` turns the
scheduler's work stealing off.

    PYTHONPATH=. python benchmarks/bench_bucket_split.py [--rows 1000000] [--repeat 3]
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from unittest import mock

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
from _setup import arguments, local_client, scratch
from bench_state_layout import Setting, grouped, persisted, ranged, today, views
from bench_step_tasks import LOGS, MIB, _logs
from distributed import Client, get_worker, wait
from distributed.utils import key_split
from placement_log import PlacementLog, rows_of

import dpriv.pk_graph as pk_graph_mod
from dpriv._dispatch import shuffle_method, to_dask
from dpriv.first_pass import range_divisions
from dpriv.hilbert.keys import HKEY, hilbert_keys, keyed_meta
from dpriv.pk_graph import merge_bucket, piece, pk_part, tail_row, tail_rows
from dpriv.rbk import revised
from dpriv.state import empty_state
from dpriv.state_buckets import BUCKET, _with_bucket, by_bucket
from dpriv.state_parts import state_nbuckets


def by_bucket_split(frame: dd.DataFrame, column: str, nbuckets: int, *, held: int | None = None):
    """``dpriv.state_buckets.by_bucket`` with a doubling count cut per source bucket: one task
    per held bucket (:func:`split_held`) cuts it into its pieces, output partition j a getitem of
    the task of bucket ``j % held`` (the same rows, order and divisions)."""
    n = max(int(nbuckets), 1)
    if not held or n % held or frame.npartitions != held or held == n:
        return by_bucket(frame, column, nbuckets, held=held)
    split = dask.delayed(split_held, nout=n // held, pure=True)
    cuts = [split(part, column, n, held) for part in frame.to_delayed()]
    meta = _with_bucket(frame._meta, column, n).set_index(BUCKET)
    parts = [cuts[j % held][j // held] for j in range(n)]
    with dask.config.set({"dataframe.convert-string": False}):  # as dpriv.whole_groups.from_delayed_parts
        return dd.from_delayed(parts, meta=meta, divisions=(*range(n), n - 1), verify_meta=False)


def split_held(part: pd.DataFrame, column: str, nbuckets: int, held: int) -> tuple[pd.DataFrame, ...]:
    """Held bucket i (``part``) cut into its ``nbuckets // held`` pieces: item k the rows of bucket
    ``i + k held`` in their order, indexed by that bucket (as ``set_index`` on it gives)."""
    keyed = _with_bucket(part, column, nbuckets).set_index(BUCKET)
    which = keyed.index.to_numpy() // held
    return tuple(keyed[which == k] for k in range(nbuckets // held))


def home(_part) -> str:
    """The address of the worker running this task (with one input, where the input lies)."""
    return get_worker().address


def pinned_pk(client: Client, members: dd.DataFrame, held: dd.DataFrame, s: Setting, n: int, nheld: int):
    """The pk step's tasks (as ``dpriv.pk_graph.pk_graph``'s, old rows cut by ``split_held``)
    with each source bucket's split and each new bucket's merge pinned to the worker holding
    the source bucket (``Client.who_has``): the posteriors' pieces move, the old rows do not."""
    call, policy = dask.delayed(pure=True), s.policy
    sources = held.to_delayed()
    homes = dask.compute(*(call(home)(x) for x in sources))  # one tiny task each, where its input lies
    parts = [call(pk_part)(p, policy, n) for p in members.to_delayed()]
    pieces = [[call(piece)(p, b) for p in parts] for b in range(n)]
    cuts, new = [], []
    for i, source in enumerate(sources):
        with dask.annotate(workers=[homes[i]], allow_other_workers=False):
            cuts.append(call(split_held, nout=n // nheld)(source, policy.id, n, nheld))
    for b in range(n):
        with dask.annotate(workers=[homes[b % nheld]], allow_other_workers=False):
            old = cuts[b % nheld][b // nheld]
            new.append(call(merge_bucket)(old, policy, s.window, 2, *pieces[b]))
    tail = call(tail_rows)([call(tail_row)(p) for p in parts])
    out = dask.persist(*new, tail, optimize_graph=False)
    wait(list(out))
    return list(out[:-1])


def fetched_since(client: Client, t0: float, sources: set) -> Counter:
    """Bytes the workers fetched from each other since epoch ``t0`` (their transfer logs): the
    held state's buckets whole (keys named as ``sources``), the posteriors' pieces, and the
    rest by key prefix (the old rows each output bucket keeps, under whatever task made them)."""
    out: Counter = Counter()
    for logs in client.run(_logs).values():
        for rec in (r for r in logs["in"] if r["start"] >= t0):
            for key, nbytes in rec["keys"].items():
                name = key[0] if isinstance(key, tuple) else key
                # a held bucket, by its own key or through the alias that picks it (session 44)
                whole = name in sources or key_split(key) == "partitions"
                what = "whole source bucket" if whole else key_split(key)
                out[what] += nbytes or 0
    return out


def bucket_digests(buckets: list) -> list[np.ndarray]:
    """Per bucket of a new state, the hash of each row, in order (computed on the workers)."""
    digest = dask.delayed(lambda p: pd.util.hash_pandas_object(p, index=False).to_numpy(), pure=True)
    return list(dask.compute(*(digest(b) for b in buckets)))


def main() -> None:
    ap = arguments(__doc__, rows=1_000_000, workers=2, repeat=3)
    ap.add_argument("--no-stealing", action="store_true", help="the scheduler's work stealing off")
    args = ap.parse_args()
    config = {**LOGS, "distributed.scheduler.work-stealing": not args.no_stealing}
    with scratch("dpriv-split-") as work, local_client(args.workers, config) as client, shuffle_method():
        client.register_plugin(PlacementLog())
        run(client, args, work)


def run(client: Client, args, work: Path) -> None:
    v1, v2, policy, tables = views(args.rows, 0.0, work)
    hist = pd.Series(hilbert_keys(v1, policy)).value_counts()
    s = Setting(policy, tables, tables.order, range_divisions(hist, 8, policy))
    d1, d2 = (to_dask(v, 8) for v in (v1, v2))
    first = today(d1, empty_state(policy, s.window), None, 0, 1, s)
    (held,) = persisted(first.state)
    sources = {k[0] if isinstance(k, tuple) else k for k in held.__dask_keys__()}
    n = state_nbuckets(len(v1) + len(v2))
    (rbk,) = persisted(revised(d2, held, s.tables, policy, s.window, d2.npartitions, first.nbuckets))
    meta = grouped(keyed_meta(rbk._meta, policy).set_index(HKEY), 5, {"number": 0})
    (members,) = persisted(ranged(rbk, s).map_partitions(grouped, policy.k, meta=meta))
    print(
        f"{args.rows} tuples a view, {args.workers} workers: the pk step of release 2, "
        f"state buckets {first.nbuckets} -> {n}{', no work stealing' if args.no_stealing else ''}"
    )

    def with_cut(cut):
        def pk():
            with mock.patch.object(pk_graph_mod, "by_bucket", cut):
                graph = pk_graph_mod.pk_graph(members, held, policy, s.window, 2, n, first.nbuckets)
                *buckets, _ = persisted(*graph.buckets, graph.tail)
            return buckets

        return pk

    ways = {
        "today": with_cut(by_bucket),
        "split": with_cut(by_bucket_split),
        "pinned": lambda: pinned_pk(client, members, held, s, n, first.nbuckets),
    }
    best, fetched, placed, digests = dict.fromkeys(ways, np.inf), {w: [] for w in ways}, {}, {}
    for _ in range(args.repeat):
        for way, pk in ways.items():
            client.run_on_scheduler(lambda dask_scheduler: rows_of(dask_scheduler).clear())
            t0 = time.time()
            start = time.perf_counter()
            buckets = pk()
            best[way] = min(best[way], time.perf_counter() - start)
            fetched[way].append(fetched_since(client, t0, sources))
            placed[way] = Counter()
            for _t, task, dep, nbytes, _root in client.run_on_scheduler(rows_of):
                placed[way][f"{task} <- {dep}"] += nbytes
            digests[way] = bucket_digests(buckets)
            del buckets
    for way in ("split", "pinned"):
        for a, b in zip(digests["today"], digests[way], strict=True):
            assert np.array_equal(a, b), f"the new states differ ({way})"
    load = os.getloadavg()[0]
    print(f"new states equal, bucket by bucket ({n} buckets); load {load:.1f}")
    mib = {w: [sum(c.values()) / MIB for c in got] for w, got in fetched.items()}
    whole = {w: [c["whole source bucket"] / MIB for c in got] for w, got in fetched.items()}
    print(f"{'way':7s} {'wall s, best':>12s}  MiB w->w per run (of which whole source buckets)")
    for way in ways:
        runs = ", ".join(f"{m:.0f} ({b:.0f})" for m, b in zip(mib[way], whole[way], strict=True))
        print(f"{way:7s} {best[way]:12.2f}  {runs}")
        for i, got in enumerate(fetched[way]):
            what = ", ".join(f"{p} {b / MIB:.1f}" for p, b in got.most_common(4) if b >= MIB / 10)
            print(f"{'':9s}run {i + 1}: {what or 'nothing'}")
        tasks = ", ".join(f"{w} {b / MIB:.1f}" for w, b in placed[way].most_common(4) if b >= MIB / 10)
        print(f"{'':9s}tasks that fetched (the last run): {tasks or 'none'}")
    print(
        f"split / today: wall {best['split'] / best['today']:.2f} (best of each), MiB "
        f"{np.mean(mib['split']) / max(np.mean(mib['today']), 1e-9):.2f} (mean of the runs), "
        f"whole source buckets {np.sum(whole['today']):.0f} -> {np.sum(whole['split']):.0f} MiB in all"
    )
    print(
        f"pinned / today: wall {best['pinned'] / best['today']:.2f}, MiB "
        f"{np.mean(mib['pinned']) / max(np.mean(mib['today']), 1e-9):.2f}"
    )


if __name__ == "__main__":
    main()
