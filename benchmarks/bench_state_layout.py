"""The respondent state by Hilbert range against id buckets, a prototype (issue 13, item 2;
docs/scaling.md "State by Hilbert range, measured").

Two views of ``--rows`` tuples of the medical history (seed 0; its QIs are fixed per respondent,
so ``--movers`` re-draws the age and weight of that share of view 2's returners), one LocalCluster,
Dask's task shuffle (as ``dpriv release``), ``--ranges`` Hilbert ranges cut from view 1's keys and
held. Release 2's revision, a stand-in grouping (runs of k in key order, the same everywhere), Ω
and the state update, three ways, each from its own release-1 state:

* ``buckets`` (today): ``dpriv.rbk.revised`` (the view into the state's id buckets), the Hilbert
  shuffle, ``dpriv.pk_graph.pk_graph`` (the posteriors' pieces to their bucket) with the bucket
  count the release picks (here it doubles, 8 -> 16 at 10^6); ``kept``: the state's count kept;
* ``ranges``: state part r holds the respondents whose last QIs lie in range r; the view shuffled
  into the ranges once, each range sends the ids its part lacks to every part, each part sends
  those rows (the movers') to their new range, one chain per range (``revised_view``, grouping,
  Ω, ``merge_advance``) where the part lies; range r's tasks pinned to one worker (unpinned, the
  scheduler moved whole state parts to wherever the shuffle put the view's range).

Printed per way: best wall seconds of ``--repeat`` alternated runs, the bytes the workers fetched
from each other (transfer logs, as ``bench_step_tasks.py``) and the CPU seconds of the workers and
of this process (client, scheduler), ranges / the others. The priors of view 2 and every row of
the new state are asserted equal.

    PYTHONPATH=. python benchmarks/bench_state_layout.py [--rows 1000000] [--movers 0,0.2]
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import psutil
from _setup import arguments, local_client, scratch
from _timing import best_of
from bench_step_tasks import LOGS, MIB, _logs
from distributed import Client, wait
from distributed.utils import key_split
from state_movers import range_of

from dpriv._dispatch import broadcast, shuffle_method, to_dask
from dpriv.datasets import medical_history, write_history
from dpriv.datasets.files import RECOMMENDED_DEFENSE
from dpriv.first_pass import range_divisions
from dpriv.hilbert.keys import HKEY, add_keys, hilbert_keys, key_ordered, keyed_meta
from dpriv.pk_graph import pk_graph
from dpriv.pk_step import posteriors_with_truth, tail_of_posteriors, without_truth
from dpriv.policy import ReleasePolicy
from dpriv.rbk import revised, revised_view
from dpriv.released import LABEL
from dpriv.state import empty_state, merge_advance
from dpriv.state_parts import state_nbuckets


class Setting(NamedTuple):
    """What every step reads: the policy, BK^seq tables, the window and the ranges' divisions."""

    policy: ReleasePolicy
    tables: object  # MarkovTables
    window: int
    divisions: tuple


class Outcome(NamedTuple):
    """A way's release: the members' priors and the new state (Dask frames), the bucket count."""

    members: dd.DataFrame
    state: dd.DataFrame
    nbuckets: int | None


class RangeOut(NamedTuple):
    """One range's release: the members' priors (id, ``p__<value>``), its new state part and
    its defender's tail row (as the pk step's)."""

    members: pd.DataFrame
    state: pd.DataFrame
    tail: pd.DataFrame


def grouped(part: pd.DataFrame, k: int, partition_info=None) -> pd.DataFrame:
    """Stand-in grouping of one Hilbert range: (key, tie) order, runs of k rows, labels unique
    across ranges (range number x 2^32 + run)."""
    rows = key_ordered(part.reset_index())
    labels = (partition_info["number"] << 32) + np.arange(len(rows), dtype=np.int64) // k
    return rows.assign(**{LABEL: labels}).sort_values([LABEL, "respondent_id"], kind="stable")


def ranged(view: dd.DataFrame, s: Setting) -> dd.DataFrame:
    """``view`` keyed (``dpriv.hilbert.keys.add_keys``) and shuffled into the Hilbert ranges."""
    meta = keyed_meta(view._meta, s.policy)
    return view.map_partitions(add_keys, s.policy, meta=meta).set_index(HKEY, divisions=s.divisions)


def persisted(*frames):
    """``frames`` persisted and waited for, as each step of a Dask release is."""
    out = dask.persist(*frames)
    wait(list(out))
    return out


def today(
    view: dd.DataFrame, state, held: int | None, n_state: int, index: int, s: Setting, keep: bool = False
) -> Outcome:
    """Release ``index`` as the release does it: the view into the state's buckets, into Hilbert
    ranges, the posteriors into the new buckets (``keep``: as many as the state has, as in a
    release whose row bound does not cross a power of two; else the release's own count)."""
    nbuckets = held if keep and held else state_nbuckets(n_state + len(view))
    (rbk,) = persisted(revised(view, state, s.tables, s.policy, s.window, view.npartitions, held))
    meta = grouped(keyed_meta(rbk._meta, s.policy).set_index(HKEY), 5, {"number": 0})
    (members,) = persisted(ranged(rbk, s).map_partitions(grouped, s.policy.k, meta=meta))
    graph = pk_graph(members, state, s.policy, s.window, index, nbuckets, held)
    *buckets, _ = persisted(*graph.buckets, graph.tail)
    return Outcome(members[["respondent_id", *s.policy.prior_columns]], graph.state(buckets), nbuckets)


def misses(view: pd.DataFrame, state: pd.DataFrame) -> np.ndarray:
    """Ids of one range's view rows that its state part does not hold (first-timers, movers)."""
    ids = view["respondent_id"].to_numpy()
    return ids[~np.isin(ids, state["respondent_id"].to_numpy())]


def leaving(state: pd.DataFrame, q: int, *missed: np.ndarray) -> list[pd.DataFrame]:
    """State part q cut by where its rows go: item r the rows range r's view asks for, item q
    the rest (the rows that stay)."""
    ids = state["respondent_id"].to_numpy()
    where = np.full(len(ids), q)
    for r, m in enumerate(missed):
        if r != q and len(m):
            where[np.isin(ids, m)] = r
    return [state[where == r] for r in range(len(missed))]


def range_release(view, stay, index, s: Setting, tables, r: int, *incoming) -> RangeOut:
    """One range's release where its state part lies: RBK, grouping, Ω and the state update."""
    state = pd.concat([stay, *incoming], ignore_index=True) if incoming else stay.reset_index(drop=True)
    rbk = revised_view(view.reset_index(), state, tables, s.policy, s.window).set_index(HKEY)
    members = grouped(rbk, s.policy.k, {"number": r})
    posts = posteriors_with_truth(members, s.policy)
    new = merge_advance(state, without_truth(posts), s.policy, s.window, index)
    return RangeOut(
        members[["respondent_id", *s.policy.prior_columns]], new, tail_of_posteriors(posts, s.policy)
    )


def by_range(
    view: dd.DataFrame, parts: list, index: int, s: Setting, home: list[str]
) -> tuple[Outcome, list]:
    """Release ``index`` with the state in Hilbert ranges (``parts``: one per range, part r on
    worker ``home[r]``): one shuffle of the view, the movers' state rows moved; the tasks of range
    r pinned to ``home[r]`` (left to itself the scheduler moved whole state parts to the view's
    range), so only the view's range, the missed ids and the movers' rows travel."""
    (cut,) = persisted(ranged(view, s))
    vparts, n, tables = cut.to_delayed(), len(parts), broadcast(s.tables)  # ~19 MB once per worker
    call, bare = dask.delayed(pure=True), s._replace(tables=None)
    missed, pieces, outs = [], [], []
    for r in range(n):
        with dask.annotate(workers=[home[r]], allow_other_workers=False):
            missed.append(call(misses)(vparts[r], parts[r]))
    for q in range(n):
        with dask.annotate(workers=[home[q]], allow_other_workers=False):
            legs = call(leaving, nout=n)(parts[q], q, *missed)
            pieces.append([legs[r] for r in range(n)])
    for r in range(n):
        incoming = (pieces[q][r] for q in range(n) if q != r)
        with dask.annotate(workers=[home[r]], allow_other_workers=False):
            out = call(range_release)(vparts[r], pieces[r][r], index, bare, tables, r, *incoming)
            outs.append((call(getattr)(out, "members"), call(getattr)(out, "state")))
    done = dask.persist(*(x for pair in outs for x in pair), optimize_graph=False)
    wait(list(done))
    members, states = list(done[0::2]), list(done[1::2])
    members_meta = pd.DataFrame({"respondent_id": pd.Series(dtype="int64")}).assign(
        **{c: pd.Series(dtype="float64") for c in s.policy.prior_columns}
    )
    meta = empty_state(s.policy, s.window)
    both = Outcome(dd.from_delayed(members, meta=members_meta, verify_meta=False), None, None)
    return both._replace(state=dd.from_delayed(states, meta=meta, verify_meta=False)), states


def row_digests(frame: dd.DataFrame) -> pd.Series:
    """Per respondent id, a hash of her whole row (index: id, sorted)."""

    def part(p: pd.DataFrame) -> pd.DataFrame:
        rows = pd.util.hash_pandas_object(p, index=False).to_numpy()
        return pd.DataFrame({"id": p["respondent_id"].to_numpy(), "h": rows})

    got = frame.map_partitions(part, meta={"id": "int64", "h": "uint64"}).compute()
    return got.set_index("id")["h"].sort_index()


def moved_since(client: Client, t0: float) -> Counter:
    """Bytes the workers fetched from each other since epoch ``t0`` (their transfer logs), by
    key prefix (what moved)."""
    out: Counter = Counter()
    for logs in client.run(_logs).values():
        for rec in (r for r in logs["in"] if r["start"] >= t0):
            for key, nbytes in rec["keys"].items():
                out[key_split(key)] += nbytes or 0
    return out


def views(rows: int, movers: float, work) -> tuple[pd.DataFrame, pd.DataFrame, ReleasePolicy, object]:
    mh = medical_history(2, rows, seed=0)
    write_history(work, mh)
    policy = ReleasePolicy.from_toml(work / "policy.toml", **RECOMMENDED_DEFENSE["privacy"])
    policy = policy.with_overrides(**RECOMMENDED_DEFENSE["release"])
    h = mh.history.drop(columns="view")
    v1, v2 = (h[mh.history["view"].to_numpy() == i].reset_index(drop=True) for i in (1, 2))
    back = np.flatnonzero(v2["respondent_id"].isin(v1["respondent_id"]).to_numpy())
    rng = np.random.default_rng(1)
    pick = rng.choice(back, int(round(movers * len(back))), replace=False)
    for q in ("age", "weight"):
        lo, hi = policy.domains[q]
        v2.loc[pick, q] = rng.integers(lo, hi + 1, len(pick)).astype(v2[q].dtype)
    return v1, v2, policy, mh.knowledge


def compare(client: Client, share: float, args, work: Path) -> None:
    """Both ways at one movers' share: release 1 each way (untimed), release 2 alternated."""
    v1, v2, policy, tables = views(args.rows, share, work / f"m{share}")
    hist = pd.Series(hilbert_keys(v1, policy)).value_counts()
    s = Setting(policy, tables, tables.order, range_divisions(hist, args.ranges, policy))
    k1, k2 = (range_of(s.divisions, hilbert_keys(v, policy)) for v in (v1, v2))
    back = v2["respondent_id"].isin(v1["respondent_id"]).to_numpy()
    was = pd.Series(k1, index=v1["respondent_id"]).reindex(v2["respondent_id"][back]).to_numpy()
    d1, d2 = (to_dask(v, max(args.ranges, 2)) for v in (v1, v2))
    nothing = empty_state(policy, s.window)
    first = today(d1, nothing, None, 0, 1, s)
    (held,) = persisted(first.state)
    home = sorted(client.scheduler_info()["workers"])  # range r's state part on worker r mod workers
    home = [home[r % len(home)] for r in range(len(s.divisions) - 1)]
    parts = by_range(d1, [nothing] * len(home), 1, s, home)[1]
    runs = {
        "buckets": lambda: today(d2, held, first.nbuckets, len(v1), 2, s),
        "kept": lambda: today(d2, held, first.nbuckets, len(v1), 2, s, keep=True),
        "ranges": lambda: by_range(d2, parts, 2, s, home)[0],
    }
    best, fetched, last = dict.fromkeys(runs, np.inf), {w: [] for w in runs}, {}
    cpu = {w: [] for w in runs}
    procs = [psutil.Process(), *(psutil.Process(p) for p in client.run(os.getpid).values())]
    for _ in range(args.repeat):
        for way, run in runs.items():
            t0, c0 = time.time(), [sum(p.cpu_times()[:2]) for p in procs]
            secs, last[way] = best_of(run, 1)
            fetched[way].append(moved_since(client, t0))
            cpu[way].append([sum(p.cpu_times()[:2]) - c for p, c in zip(procs, c0)])
            best[way] = min(best[way], secs)
    b = last["ranges"]
    pb = b.members.compute().set_index("respondent_id").sort_index()
    rows = row_digests(b.state)
    for way in ("buckets", "kept"):
        pa = last[way].members.compute().set_index("respondent_id").sort_index()
        assert pa.index.equals(pb.index) and np.array_equal(pa.to_numpy(), pb.to_numpy()), "priors differ"
        assert row_digests(last[way].state).equals(rows), "new states differ"
    mib = {w: min(sum(c.values()) for c in got) / MIB for w, got in fetched.items()}
    print(f"movers {share:.2f} (moved range: {np.mean(was != k2[back]):.3f}), load {os.getloadavg()[0]:.1f}")
    for way, got in fetched.items():
        what = ", ".join(f"{p} {n / MIB:.1f}" for p, n in got[-1].most_common(4) if n >= MIB / 10)
        ratio = f"ranges / {way}: {best['ranges'] / best[way]:.2f} s, {mib['ranges'] / mib[way]:.2f} MiB"
        print(f"  {way:8s} {best[way]:6.2f} s {mib[way]:6.1f} MiB  {ratio if way != 'ranges' else ''}")
        spent = ", ".join(f"{sum(c[1:]):.1f} + {c[0]:.1f}" for c in cpu[way])
        print(f"           MiB per run {[round(sum(c.values()) / MIB, 1) for c in got]}; the last: {what}")
        print(f"           CPU s per run, workers + this process (client, scheduler): {spent}")


def main() -> None:
    ap = arguments(__doc__, rows=1_000_000, ranges=8, workers=2)
    ap.add_argument("--movers", default="0,0.2", help="shares of view 2's returners given new QIs")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with scratch("dpriv-layout-") as work, local_client(args.workers, LOGS) as client, shuffle_method():
        print(f"{args.rows} tuples a view, {args.workers} workers, {args.ranges} ranges:")
        for share in args.movers.split(","):
            compare(client, float(share), args, work)


if __name__ == "__main__":
    main()
