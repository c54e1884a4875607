"""Later releases on Dask: the respondent state joined where it lies vs shuffled (issue 13, item 2).

A history of ``--views`` views of ``--rows`` tuples of the paper setting
(``dpriv.datasets.medical_history``, seed 0; k 5, t 0.5, j 0.8) on a LocalCluster of
``--workers`` processes, released on the Dask path. Two ways, alternated ``--repeat`` times
in the same cluster:

* ``held``: what ``dpriv release`` does. The state a Dask release returns is one partition
  per bucket; the next release cuts only the view into those buckets for RBK and, the bucket
  count being a power of two, splits or keeps the state's buckets in place for the state
  update (``dpriv.state_buckets.by_bucket``); a resumed history reads the parts as one partition per
  bucket (the manifest's ``state_buckets``).
* ``shuffled``: the same code told nothing of the state's buckets (``state_buckets=None``):
  a hash join of the view and the state on the id, and the state cut into the new buckets by
  a shuffle, as a state of unknown partitioning must be.

Two cases each: ``chain`` (every view in one ``release_history`` call: the state handed from
release to release in memory) and ``resumed`` (the last view released by a second call on the
ledger of the others, as a weekly batch job does). Printed: the best wall seconds of the
release(s) after the first, the rbk and pk steps of the last release (``metrics.json``), and
held / shuffled. Both ways write the same Parquet bytes (checked).

    python benchmarks/bench_resume.py [--rows 500000] [--views 2] [--workers 2] [--repeat 2]
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from unittest import mock

import dask.dataframe as dd
from _setup import arguments, as_dpriv_process, local_client, scratch

import dpriv.ledger_state as ledger_state_mod  # where Ledger.held_state finds held_state
import dpriv.release as release_mod
from dpriv.allocator import worker_config
from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


def shuffled():
    """A context in which no release is told the state's buckets (the state is shuffled)."""
    view, held = release_mod.release_view, ledger_state_mod.held_state

    def blind_view(*args, **kwargs):
        return view(*args, **{**kwargs, "state_buckets": None})

    def blind_held(files, nbuckets):
        return held(files, None)

    return mock.patch.multiple(release_mod, release_view=blind_view), mock.patch.object(
        ledger_state_mod, "held_state", blind_held
    )


def run(way: str, case: str, src: Path, policy: ReleasePolicy, work: Path, views: int) -> dict:
    """One history released one way; the seconds of the releases after the first."""
    ledger = work / f"{way}-{case}"
    shutil.rmtree(ledger, ignore_errors=True)
    patches = shuffled() if way == "shuffled" else ()
    for p in patches:
        p.start()
    try:
        history = dd.read_parquet(src)
        if case == "resumed":
            release_history(history, policy, ledger, until=views - 1)
            start = time.perf_counter()
            release_history(history, policy, ledger)
        else:
            starts: list[float] = []
            release_history(
                history, policy, ledger, on_release=lambda i, m: starts.append(time.perf_counter())
            )
            start = starts[0]  # after the first release's commit
        wall = time.perf_counter() - start
    finally:
        for p in patches:
            p.stop()
    last = json.loads((Ledger(ledger).release_dir(views) / "metrics.json").read_text())["seconds"]
    return {"wall": wall, "rbk": last["rbk"], "pk": last["pk"], "digest": parquet_digest(ledger)}


def parquet_digest(root: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.parquet")):
        h.update(str(f.relative_to(root)).encode() + f.read_bytes())
    return h.hexdigest()[:16]


def main() -> None:
    args = arguments(__doc__, rows=500_000, views=2, workers=2, repeat=2).parse_args()
    as_dpriv_process(huge_page_advice=True)  # freed memory kept, as the dpriv command does
    with scratch("dpriv-resume-") as work:
        write_history(work, medical_history(args.views, args.rows, seed=0))
        policy = ReleasePolicy.from_toml(work / "policy.toml", t=0.5, j=0.8, max_suppression=1.0)
        warm = work / "warm"
        write_history(warm, medical_history(2, 5_000, seed=1))
        with (
            local_client(args.workers, worker_config()),
            mock.patch.object(release_mod, "SMALL_VIEW_ROWS", 0),  # the Dask path at any size
        ):
            release_history(dd.read_parquet(warm / "history.parquet"), policy, warm / "ledger")
            best: dict[tuple[str, str], dict] = {}
            for _ in range(args.repeat):
                for case in ("chain", "resumed"):
                    for way in ("held", "shuffled"):
                        r = run(way, case, work / "history.parquet", policy, work, args.views)
                        if (way, case) not in best or r["wall"] < best[way, case]["wall"]:
                            best[way, case] = r
        print(f"{args.views} views x {args.rows} tuples, {args.workers} workers, best of {args.repeat}")
        print(f"wall: releases 2..{args.views}; rbk, pk: the last release's steps")
        print(f"{'case':<8} {'way':<9} {'wall s':>7} {'rbk s':>6} {'pk s':>6}")
        for case in ("chain", "resumed"):
            for way in ("held", "shuffled"):
                r = best[way, case]
                print(f"{case:<8} {way:<9} {r['wall']:7.2f} {r['rbk']:6.2f} {r['pk']:6.2f}")
            h, s = best["held", case], best["shuffled", case]
            print(
                f"{case:<8} held / shuffled: wall {h['wall'] / s['wall']:.2f}, rbk + pk "
                f"{(h['rbk'] + h['pk']) / (s['rbk'] + s['pk']):.2f}"
            )
        same = len({r["digest"] for r in best.values()}) == 1
        print(f"same Parquet bytes in every ledger: {same}")


if __name__ == "__main__":
    main()
