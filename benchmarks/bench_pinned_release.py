"""A whole later release with each state bucket's merge pinned where its bucket lies, against
today's placement (issue 13; docs/scaling.md "Each bucket's merge where its bucket lies").

A 2-view medical history of ``--rows`` tuples a view (seed 0, the recommended defense, one
Parquet file), released by ``dpriv.release.release_history`` on a LocalCluster of ``--workers``
single-threaded worker processes (dpriv's worker config, numba warmed by a small release first):
release 1 untimed, release 2 timed from release 1's commit to its own (every step, the state
write included; the state bucket count grows 8 -> 16 at 10^6). Two ways, alternated,
``--repeat`` rounds: ``today`` (``dpriv.state_homes.PIN_MERGES`` off: the scheduler places each
merge) and ``pinned`` (the release's default). Per run: wall seconds, CPU seconds of the worker
processes (and per worker, beside the number of held state buckets on it) and of this process
(the client and the LocalCluster's scheduler), MiB the workers
fetched from each other during release 2 (their transfer logs, by step and key prefix), and the
workers' peak memory in release 2: resident (the kernel's high-water mark, reset when release 2
starts; glibc keeps freed memory, so it never falls below release 1's resident memory) and
managed (the bytes of the results a worker holds, sampled every 10 ms: the sum over the workers
of each one's peak, in release 2 and in its rbk step). The two ways' ledgers
are asserted byte-equal (release 2's view and state files).

``--join``: the ways are ``join`` (the pk step's merges and the rbk join of each state bucket
pinned, each bucket's revision placed by the scheduler: session 46, ``dpriv.rbk.PIN_REVISION``
off) and ``pinned`` (the join and the revision of a bucket in one pinned task, session 47, the
default). ``--merges``: ``merges`` (the pk step's merges pinned, the rbk join placed by the
scheduler, as in session 46 before the join was pinned) against ``pinned``. With either, the
rbk step's bytes are printed by key prefix.

``--scaling``: then release 2, pinned, on 1 and on 2 workers (fresh clusters), each with the
machine's ceiling (``bench_scale.ceiling_run``: waves of independent numpy tasks, just before
and after the release) and the 1 -> 2 speed-ups of both.

    PYTHONPATH=. python benchmarks/bench_pinned_release.py [--rows 1000000] [--repeat 3]
        [--join | --merges] [--scaling]
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple
from unittest import mock

import dask
import dask.dataframe as dd
import psutil
from _setup import arguments, as_dpriv_process, local_client, recommended_policy, scratch, warm_up
from bench_scale import CEILING_ROUNDS, calibrated_size, ceiling_run
from bench_step_tasks import LOGS, MIB, _logs, step_of
from distributed import Client
from distributed.utils import key_split

import dpriv.ledger as ledger_mod
import dpriv.pk_graph as pk_graph_mod
import dpriv.rbk as rbk_mod
import dpriv.release as release_mod
import dpriv.state_homes as state_homes_mod
import dpriv.steps as steps_mod
from dpriv.allocator import worker_config
from dpriv.datasets import write_history
from dpriv.datasets.medical import medical_history
from dpriv.release import release_history

#: What each way pins: the pk step's merges, the rbk join, the revision with the join.
WAYS = {
    "today": (False, False, False),
    "merges": (True, False, False),
    "join": (True, True, False),
    "pinned": (True, True, True),
}


class Run(NamedTuple):
    """Release 2 of one run: seconds, CPU seconds (workers, this process), MiB fetched between
    workers and by what (step:key prefix -> bytes), buckets whose merge was pinned, files' digest,
    the workers' peak memory in MiB (resident: the largest worker's and the sum; managed: the
    sum of each worker's peak, in release 2 and in its rbk step); ``balance``: each worker's CPU
    seconds and how many of the held state buckets it holds (the pinned tasks' homes)."""

    wall: float
    workers_cpu: float
    client_cpu: float
    mib: float
    what: Counter
    pinned: int
    digest: str
    rss_max: float
    rss_sum: float
    managed: float
    rbk_managed: float
    balance: str


def start_peaks(dask_worker) -> None:
    """On a worker: reset the kernel's high-water mark of resident memory and sample the bytes of
    the results the worker holds every 10 ms (a daemon thread, stopped by :func:`stop_peaks`)."""
    import threading

    with open(f"/proc/{os.getpid()}/clear_refs", "w") as f:
        f.write("5")
    stop, samples = threading.Event(), []

    def sample():
        while not stop.wait(0.01):
            samples.append((time.time(), dask_worker.state.nbytes))

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    dask_worker.dpriv_peaks = (stop, samples, thread)


def stop_peaks(dask_worker) -> tuple[int, list[tuple[float, int]]]:
    """On a worker: (peak resident bytes since :func:`start_peaks`, the managed bytes sampled:
    (epoch seconds, bytes) pairs)."""
    stop, samples, thread = dask_worker.dpriv_peaks
    stop.set()
    thread.join()
    status = Path(f"/proc/{os.getpid()}/status").read_text()
    hwm = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
    return hwm * 1024, [*samples, (time.time(), dask_worker.state.nbytes)]


def cpu(procs: list[psutil.Process]) -> float:
    """User + system CPU seconds of ``procs``, children's not included."""
    return sum(sum(p.cpu_times()[:2]) for p in procs)


def digest(ledger: Path) -> str:
    """SHA-256 over release 2's files (view, metrics aside: they hold seconds) and state parts."""
    h = hashlib.sha256()
    files = [ledger / "releases" / "2" / "view.parquet", *sorted((ledger / "state" / "2").glob("*.parquet"))]
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def timed(client: Client, src: Path, policy, ledger: Path, way: str, npartitions: int) -> Run:
    """Release the 2-view history at ``src`` into ``ledger`` (removed after), release 2 measured;
    ``way`` one of :data:`WAYS`."""
    pin, join, revision = WAYS[way]
    pids = client.run(os.getpid)  # worker address -> pid
    procs = [psutil.Process(p) for p in pids.values()]
    me = psutil.Process()
    marks: dict[int, tuple[float, float, float, float]] = {}
    each: dict[int, list[float]] = {}
    found, homes_seen = [], []
    real = pk_graph_mod.state_homes

    def spy(state, held):
        homes = real(state, held)
        found.append(0 if homes is None else len(homes.workers))
        homes_seen.append(Counter(() if homes is None else homes.workers))
        return homes

    peaks = []

    def on_release(i, _metrics):
        if i == 1:
            client.run(start_peaks)
        marks[i] = (time.perf_counter(), time.time(), cpu(procs), cpu([me]))
        each[i] = [cpu([w]) for w in procs]
        if i == 2:
            peaks.extend(client.run(stop_peaks).values())

    epochs: list[tuple[str, float]] = []
    lap, commit = steps_mod.Steps.lap, ledger_mod.Ledger.commit

    def marked_lap(self, name):
        lap(self, name)
        epochs.append((name, time.time()))

    def marked_commit(self, *a, **k):
        epochs.append(("(between)", time.time()))
        out = commit(self, *a, **k)
        epochs.append(("write", time.time()))
        return out

    with (
        mock.patch.object(state_homes_mod, "PIN_MERGES", pin),
        mock.patch.object(pk_graph_mod, "state_homes", spy),
        mock.patch.object(steps_mod.Steps, "lap", marked_lap),
        mock.patch.object(ledger_mod.Ledger, "commit", marked_commit),
        mock.patch.object(release_mod, "state_homes", release_mod.state_homes if join else lambda *_: None),
        mock.patch.object(rbk_mod, "PIN_REVISION", revision),
    ):
        release_history(dd.read_parquet(src), policy, ledger, npartitions=npartitions, on_release=on_release)
    (t1, e1, w1, c1), (t2, _, w2, c2) = marks[1], marks[2]
    epochs = [("(release 1)", e1), *((n, e) for n, e in epochs if e > e1)]
    what: Counter = Counter()
    for logs in client.run(_logs).values():
        for rec in (r for r in logs["in"] if r["start"] >= e1):
            step = step_of(rec["stop"], epochs) or "?"
            for key, nbytes in rec["keys"].items():
                what[f"{step}:{key_split(key)}"] += nbytes or 0
    rss = [r / MIB for r, _ in peaks]
    managed = sum(max(b for _, b in samples) for _, samples in peaks) / MIB
    in_rbk = [[b for t, b in samples if step_of(t, epochs) == "rbk"] or [0] for _, samples in peaks]
    out = Run(
        t2 - t1, w2 - w1, c2 - c1, sum(what.values()) / MIB, what, sum(found), digest(ledger),
        max(rss), sum(rss), managed, sum(map(max, in_rbk)) / MIB, balance(list(pids), each, homes_seen),
    )  # fmt: skip
    shutil.rmtree(ledger, ignore_errors=True)
    return out


def balance(workers: list[str], each: dict[int, list[float]], held: list[Counter]) -> str:
    """Release 2's CPU seconds per worker (``each``: release -> CPU seconds per worker at its
    end) and the number of held state buckets on each, e.g. ``6.1 s (5 buckets) / 5.0 s (3 buckets)``."""
    homes = held[-1] if held else Counter()
    return " / ".join(
        f"{b - a:.1f} s ({homes.get(w, 0)} buckets)"
        for w, a, b in zip(workers, each[1], each[2], strict=True)
    )


def compare(args, src: Path, policy, work: Path) -> None:
    """today (or merges, or join) and pinned alternated on one cluster of ``args.workers``."""
    base = "join" if args.join else "merges" if args.merges else "today"
    runs: dict[str, list[Run]] = {base: [], "pinned": []}
    with local_client(args.workers) as client:
        warm_up(work / "warm", policy)
        for r in range(args.repeat):
            order = (base, "pinned") if r % 2 == 0 else ("pinned", base)
            for way in order:
                run = timed(client, src, policy, work / f"ledger-{way}-{r}", way, args.npartitions)
                runs[way].append(run)
                print(
                    f"round {r + 1} {way:6s}: release 2 {run.wall:6.2f} s, "
                    f"workers CPU {run.workers_cpu:6.2f} s, "
                    f"client+scheduler CPU {run.client_cpu:5.2f} s, {run.mib:6.1f} MiB w->w, "
                    f"pinned buckets {run.pinned}, peak MiB resident {run.rss_max:.0f} (max), "
                    f"{run.rss_sum:.0f} (sum), managed {run.managed:.0f} (sum; "
                    f"rbk step {run.rbk_managed:.0f}), load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
                print(f"{'':16s}per worker: {run.balance}")
                top = ", ".join(f"{k} {b / MIB:.1f}" for k, b in run.what.most_common(8) if b >= MIB / 10)
                print(f"{'':16s}moved: {top or 'nothing'}", flush=True)
                steps: Counter = Counter()
                for k, b in run.what.items():
                    steps[k.split(":")[0]] += b
                print(f"{'':16s}by step: " + ", ".join(f"{k} {b / MIB:.0f}" for k, b in steps.most_common()))
                rbk = Counter({k[4:]: b for k, b in run.what.items() if k.startswith("rbk:")})
                moved = ", ".join(f"{k} {b / MIB:.1f}" for k, b in rbk.most_common())
                print(f"{'':16s}rbk step: {moved or 'nothing'}")
    digests = {run.digest for rs in runs.values() for run in rs}
    assert len(digests) == 1, "the ledgers differ between the ways"
    print(f"release 2's view and state files equal in all {2 * args.repeat} runs")
    best = {w: min(r.wall for r in rs) for w, rs in runs.items()}
    fields = ("workers_cpu", "client_cpu", "mib", "rbk_mib", "rss_max", "rss_sum", "managed", "rbk_managed")
    mean = {w: {f: sum(_field(r, f) for r in rs) / len(rs) for f in fields} for w, rs in runs.items()}
    print(
        f"{'way':7s} {'wall best':>9s} {'workers CPU':>11s} {'client CPU':>10s} {'MiB w->w':>8s} "
        f"{'rbk MiB':>7s} {'peak RSS max':>12s} {'RSS sum':>7s} {'managed':>7s} {'rbk managed':>11s}  (means)"
    )
    for w in runs:
        m = mean[w]
        print(
            f"{w:7s} {best[w]:9.2f} {m['workers_cpu']:11.2f} {m['client_cpu']:10.2f} {m['mib']:8.1f} "
            f"{m['rbk_mib']:7.1f} {m['rss_max']:12.0f} {m['rss_sum']:7.0f} {m['managed']:7.0f} "
            f"{m['rbk_managed']:11.0f}"
        )
    t, p = mean[base], mean["pinned"]
    ratios = ", ".join(f"{f} {p[f] / max(t[f], 1e-9):.2f}" for f in fields)
    print(f"pinned / {base}: wall {best['pinned'] / best[base]:.2f} (best); means: {ratios}")


def _field(run: Run, name: str) -> float:
    """A field of ``run``, or ``rbk_mib``: the MiB the workers fetched in the rbk step."""
    if name == "rbk_mib":
        return sum(b for k, b in run.what.items() if k.startswith("rbk:")) / MIB
    return getattr(run, name)


def scaling(args, src: Path, policy, work: Path) -> None:
    """Release 2, pinned, on 1 then 2 workers, the ceiling around each (bench_scale's)."""
    n = calibrated_size(0.15)  # ~ release 2's worker CPU at 10^6 (13-15 s) over 11 waves x 8 tasks
    got = {}
    for workers in (1, 2):
        with local_client(workers) as client:
            warm_up(work / f"warm-s{workers}", policy)
            before = ceiling_run(client, CEILING_ROUNDS, args.npartitions, n)
            run = timed(client, src, policy, work / f"ledger-s{workers}", "pinned", args.npartitions)
            after = ceiling_run(client, CEILING_ROUNDS, args.npartitions, n)
        got[workers] = (run.wall, (before + after) / 2)
        print(
            f"{workers} worker(s): release 2 {run.wall:.2f} s, ceiling {before:.2f}/{after:.2f} s, "
            f"load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    release_x, ceiling_x = got[1][0] / got[2][0], got[1][1] / got[2][1]
    print(
        f"strong scaling 1 -> 2 workers (pinned): release 2 {release_x:.2f}x, ceiling {ceiling_x:.2f}x, "
        f"release / ceiling {release_x / ceiling_x:.2f}"
    )


def main() -> None:
    ap = arguments(__doc__, rows=1_000_000, workers=2, npartitions=8, repeat=3)
    ways = ap.add_mutually_exclusive_group()
    ways.add_argument("--join", action="store_true", help="compare with the revision unpinned (session 46)")
    ways.add_argument("--merges", action="store_true", help="compare with the rbk join unpinned")
    ap.add_argument("--scaling", action="store_true", help="then release 2 pinned on 1 and 2 workers")
    ap.add_argument("--no-compare", action="store_true", help="skip the today / pinned series")
    args = ap.parse_args()
    as_dpriv_process()
    with scratch("dpriv-pinned-") as work:
        write_history(work / "h", medical_history(2, args.rows, seed=0))
        policy = recommended_policy(work / "h")
        print(f"2 views of {args.rows} tuples, release 2 timed, load {os.getloadavg()[0]:.1f}", flush=True)
        with dask.config.set({**worker_config(), **LOGS}):
            if not args.no_compare:
                compare(args, work / "h" / "history.parquet", policy, work)
            if args.scaling:
                scaling(args, work / "h" / "history.parquet", policy, work)


if __name__ == "__main__":
    main()
