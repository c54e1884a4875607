"""What a release costs along a long IE history (issue 13, item 3): release 24 vs release 2.

24 views of 5,000 tuples of the paper setting (``dpriv.datasets.medical_history``, seed 0;
k = 5, t = 0.5, j = 0.8, max_suppression = 1) released in process with IE knowledge
(``[knowledge] defender = "ie"``).

First, the least noisy figure: releases 2, 4 and 24 each rerun alone from captured inputs
(:func:`isolated`: ``release_view`` and the ledger's two Parquet writes), interleaved, best
CPU time (``time.process_time``) of ``--repeat``. Then the whole history ``--repeat`` times
(:func:`one_history`); per release the best CPU and wall seconds, the IE update
(``KnowledgeTracker.add`` + ``tables``) and the respondent state's rows; per step (from
``metrics.json``) release 2 against release 24, with the sums over all steps and over all but
the ledger write.

Release 24 over release 4 tells the growth with the history apart from the growth of the
revision: from release 4 on, (E7) reads the model's full order (3 posteriors per respondent,
K^3 M products for K nonzero values per posterior; 1 posterior, K M, at release 2), which
no longer grows; what still grows after release 4 is the respondent state (every respondent
seen so far: 5,000 rows after release 1, 16,434 after release 24).

With ``--attack``: ``dpriv attack --knowledge ie`` over that ledger, its IE tables counted
once along the releases against the former re-mine before each release (:func:`attack_seconds`).

    python benchmarks/bench_ie_history.py [--repeat 5] [--views 24] [--view-size 5000] [--isolated-only]
    python benchmarks/bench_ie_history.py --attack [--repeat 3]
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import dask
from _setup import arguments

import dpriv.release as release_mod
import dpriv.sources as sources
from dpriv.datasets import medical_history, write_history
from dpriv.io import write_parquet
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


def one_history(n_views: int, view_size: int, defender: str) -> list[dict[str, float]]:
    """Release the history once; per release: cpu, wall, ie (s), state rows and step seconds."""
    work = Path(tempfile.mkdtemp())
    ie_seconds: list[float] = []
    add, tables = sources.KnowledgeTracker.add, sources.KnowledgeTracker.tables

    def timed(f):
        def call(*args, **kwargs):
            tick = time.process_time()
            try:
                return f(*args, **kwargs)
            finally:
                ie_seconds.append(time.process_time() - tick)
        return call

    try:
        mh = medical_history(n_views, view_size, seed=0)
        policy = ReleasePolicy.from_toml(write_history(work, mh), t=0.5, j=0.8, max_suppression=1.0)
        policy = policy.with_overrides(knowledge={"defender": defender})
        marks = [(time.process_time(), time.perf_counter(), 0)]

        def mark(i, m):
            marks.append((time.process_time(), time.perf_counter(), len(ie_seconds)))

        sources.KnowledgeTracker.add, sources.KnowledgeTracker.tables = timed(add), timed(tables)
        try:
            with dask.config.set(scheduler="threads"):
                release_history(mh.history, policy, work / "ledger", on_release=mark)
        finally:
            sources.KnowledgeTracker.add, sources.KnowledgeTracker.tables = add, tables
        ledger = Ledger(work / "ledger")
        out = []
        for i, (a, b) in enumerate(zip(marks, marks[1:]), start=1):
            steps = json.loads((ledger.release_dir(i) / "metrics.json").read_text())["seconds"]
            row = {"cpu": b[0] - a[0], "wall": b[1] - a[1], "ie": sum(ie_seconds[a[2]:b[2]]),
                   "state_rows": float(len(ledger.read_state(i)))}
            out.append({**row, **{f"step:{k}": v for k, v in steps.items()}})
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def isolated(n_views: int, view_size: int, defender: str, releases: tuple[int, ...], repeat: int) -> dict:
    """CPU seconds of release ``i`` alone, for each ``i`` of ``releases``, best of ``repeat``
    runs interleaved (i after i, so that a burst of load hits every release alike): the
    inputs of :func:`dpriv.release.release_view` are captured during one run of the history
    (the view, the state after release i - 1, the IE tables mined from views < i), then the
    release and the ledger's two Parquet writes (view and state, to a temp folder) are rerun."""
    work = Path(tempfile.mkdtemp())
    captured: dict[int, tuple] = {}
    real = release_mod.release_view

    def spy(*args, **kwargs):
        if kwargs.get("index") in releases:
            captured[kwargs["index"]] = (args, kwargs)
        return real(*args, **kwargs)

    try:
        mh = medical_history(n_views, view_size, seed=0)
        policy = ReleasePolicy.from_toml(write_history(work, mh), t=0.5, j=0.8, max_suppression=1.0)
        policy = policy.with_overrides(knowledge={"defender": defender})
        release_mod.release_view = spy
        try:
            with dask.config.set(scheduler="threads"):
                release_history(mh.history, policy, work / "ledger", until=max(releases))
        finally:
            release_mod.release_view = real
        best = {i: float("inf") for i in releases}
        for _ in range(repeat):
            for i in releases:
                args, kwargs = captured[i]
                tick = time.process_time()
                _, released, state, _ = real(*args, **kwargs)
                write_parquet(work / "view.parquet", released, drop_private=True)
                write_parquet(work / "state.parquet", state)
                best[i] = min(best[i], time.process_time() - tick)
        return best
    finally:
        shutil.rmtree(work, ignore_errors=True)


def attack_seconds(n_views: int, view_size: int, repeat: int) -> dict[str, tuple[float, float]]:
    """``dpriv attack --knowledge ie`` (paper adversary, no deductions) over the ledger of the
    history: CPU seconds of the whole attack and of its IE tables (``tables_before``), best of
    ``repeat``, with the incremental counter (:class:`dpriv.sources.IECounter`) and with the
    former re-mine of views 1..i-1 before each release i (:meth:`DefenderKnowledge.at`)."""
    from dpriv.attack import attack
    from dpriv.sources import AdversaryKnowledge

    work = Path(tempfile.mkdtemp())
    counted = AdversaryKnowledge.tables_before
    spent: list[float] = []

    def timed(f):
        def call(*args):
            tick = time.process_time()
            try:
                return f(*args)
            finally:
                spent.append(time.process_time() - tick)
        return call

    ways = {"counted": counted, "re-mined": lambda self, h, p, i: self.source.at(h, p, i)}
    best = {k: (float("inf"), float("inf")) for k in ways}
    try:
        mh = medical_history(n_views, view_size, seed=0)
        policy = ReleasePolicy.from_toml(write_history(work, mh), t=0.5, j=0.8, max_suppression=1.0)
        policy = policy.with_overrides(knowledge={"defender": "ie"})
        with dask.config.set(scheduler="threads"):
            ledger = release_history(mh.history, policy, work / "ledger")
        for _ in range(repeat):
            for name, way in ways.items():
                AdversaryKnowledge.tables_before = timed(way)
                spent.clear()
                tick = time.process_time()
                try:
                    attack(ledger, mh.history, policy, "ie", deductions=False)
                finally:
                    AdversaryKnowledge.tables_before = counted
                total = time.process_time() - tick
                best[name] = (min(best[name][0], total), min(best[name][1], sum(spent)))
        return best
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = arguments(__doc__, repeat=5, views=24, view_size=5000)
    ap.add_argument("--defender", default="ie", help='"ie" or a table entry of the policy ("dk")')
    ap.add_argument("--isolated-only", action="store_true", help="only the releases alone")
    ap.add_argument("--attack", action="store_true", help="only the IE adversary: counted vs re-mined")
    args = ap.parse_args()
    one_history(2, 200, args.defender)  # warm-up: numba caches loaded, imports done
    if args.attack:
        best = attack_seconds(args.views, args.view_size, args.repeat)
        print(f"attack --knowledge ie over {args.views} x {args.view_size}, CPU s, best of {args.repeat}")
        print(f"{'IE tables':<10} {'attack':>8} {'tables':>8}")
        for name, (total, tables) in best.items():
            print(f"{name:<10} {total:8.3f} {tables:8.3f}")
        return
    picked = (2, 4, args.views)
    best = isolated(args.views, args.view_size, args.defender, picked, args.repeat)
    print("release alone (release_view + the two Parquet writes), CPU s, best of "
          f"{args.repeat} interleaved: " + ", ".join(f"{i}: {best[i]:.3f}" for i in picked))
    print(f"release {args.views} / release 2: {best[args.views] / best[2]:.2f} (target <= 1.5); "
          f"release {args.views} / release 4: {best[args.views] / best[4]:.2f}")
    if args.isolated_only:
        return
    runs = [one_history(args.views, args.view_size, args.defender) for _ in range(args.repeat)]
    keys = list(runs[0][0])
    med = [{k: min(r[i].get(k, 0.0) for r in runs) for k in keys} for i in range(args.views)]
    print(f"{args.views} x {args.view_size}, defender {args.defender}, best of {args.repeat} runs")
    print("release   cpu s  wall s    ie s  state rows")
    for i, row in enumerate(med, start=1):
        print(f"{i:>7} {row['cpu']:7.3f} {row['wall']:7.3f} {row['ie']:7.4f} {row['state_rows']:11.0f}")
    first, last = med[1], med[-1]
    print(f"release {args.views} / release 2: cpu {last['cpu'] / first['cpu']:.2f}, "
          f"wall {last['wall'] / first['wall']:.2f} (target <= 1.5)")
    print(f"{'step (wall s, best)':<22} {'release 2':>10} {f'release {args.views}':>11} {'ratio':>7}")
    steps = [k for k in keys if k.startswith("step:")]
    for k in steps:
        a, b = first[k], last[k]
        print(f"{k[5:]:<22} {a:10.4f} {b:11.4f} {b / a if a else float('nan'):7.2f}")
    for name, chosen in (("all steps", steps), ("all but write", [k for k in steps if k != "step:write"])):
        a, b = sum(first[k] for k in chosen), sum(last[k] for k in chosen)
        print(f"{name:<22} {a:10.4f} {b:11.4f} {b / a:7.2f}")
    fourth = med[min(3, args.views - 1)]
    # from release 4 on, (E7) revises with the model's full order 3 (release 2: order 1)
    print(f"release {args.views} / release 4: cpu {last['cpu'] / fourth['cpu']:.2f}")


if __name__ == "__main__":
    main()
