"""A scale model of one large release (issue 13, item 6): per-step seconds and bytes moved at
several sizes, how each step grows (log-log slope), and an extrapolation.

For each ``--rows`` (one view of the paper setting, k = 5, t = 0.5, j = 0.8, a first release)
on a LocalCluster of ``--workers`` single-threaded worker processes:

* the input is built on the workers (``write_medical_view``, a Parquet folder);
* the floor (``bench_scale.floor_run``: read Parquet + Hilbert key + sort + write Parquet);
* the release (``dpriv.release.release_history``, what ``dpriv release`` runs on a cluster);
  seconds per step from the release's own ``metrics.json``;
* bytes moved, from the workers' own counters (deltas over the release): ``transfer`` (task
  results fetched from another worker), ``p2p-shards`` (what the P2P shuffles sent),
  ``disk-write`` (what the P2P shuffles buffered on disk); bytes written: the ledger's view
  and state files; CPU seconds of the client and of all workers (psutil);
* peak RSS of the client and of the largest worker (``bench_scale.Sampler``).

Results accumulate in ``--json`` (one entry per size, a later run of a size replaces the
earlier one), so the largest size can run alone, later, when the machine is quiet:

    python benchmarks/bench_scale_model.py --rows 100000 1000000 --json scale.json
    python benchmarks/bench_scale_model.py --rows 10000000 --json scale.json
    python benchmarks/bench_scale_model.py --fit scale.json      # the table and the fit only

The fit: per step, the least-squares slope of log(seconds) on log(rows) over the measured
sizes (1 = linear); extrapolated to ``--target-rows`` on ``--target-workers`` with each step
divided by the worker ratio unless it runs on the client (:data:`CLIENT_STEPS`).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import psutil
from _setup import add_ints, local_client, warm_up
from bench_scale import Sampler, floor_run
from distributed import Client

from dpriv.datasets import write_medical_view
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

#: Steps whose work is done on the client, serially, whatever the number of workers
#: (docs/scaling.md): the global repair of the leftovers and the per-release metrics
#: (computed from gathered group statistics), the ledger write (the view streamed through the
#: client; the state's parts are written by the workers, dpriv.state_parts, meanwhile).
CLIENT_STEPS = ("repair", "metrics", "write")
MIB = 2**20


def _counters(dask_worker) -> dict[str, float]:
    """Bytes a worker moved so far: transfers to other workers and, per activity, the
    byte digests of its P2P shuffles (``p2p-shards``, ``disk-write``...)."""
    out = {"transfer": float(dask_worker.transfer_outgoing_bytes_total)}
    for key, value in dask_worker.digests_total.items():
        if isinstance(key, tuple) and len(key) >= 2 and key[-1] == "bytes":
            out[str(key[-2])] = out.get(str(key[-2]), 0.0) + float(value)
    return out


def _moved(client: Client) -> dict[str, float]:
    total: dict[str, float] = {}
    for counts in client.run(_counters).values():
        for k, v in counts.items():
            total[k] = total.get(k, 0.0) + v
    return total


def _cpu(client: Client) -> dict[str, float]:
    """CPU seconds (user + system) so far of this process (the client) and of all workers:
    less sensitive than wall time to other jobs on a shared machine."""
    me = psutil.Process(os.getpid()).cpu_times()
    workers = [psutil.Process(p).cpu_times() for p in client.run(os.getpid).values()]
    return {"client": me.user + me.system, "workers": sum(w.user + w.system for w in workers)}


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) if path.exists() else 0


def measure(rows: int, workers: int, npartitions: int, work: Path, k: int, t: float, j: float) -> dict:
    """One size: input, floor, release; returns the entry stored in the JSON."""
    with local_client(workers) as client:
        src_dir = work / f"in{rows}"
        start = time.perf_counter()
        write_medical_view(src_dir, rows, npartitions=npartitions, seed=0)
        generate = time.perf_counter() - start
        policy = ReleasePolicy.from_toml(src_dir / "policy.toml", k=k, t=t, j=j)
        src = src_dir / "history.parquet"
        warm_up(work / f"warm{rows}", policy)  # numba's kernels on every worker, not timed
        floor = floor_run(src, work / f"floor{rows}", policy, npartitions)
        before, cpu_before = _moved(client), _cpu(client)
        sampler = Sampler(client)
        start = time.perf_counter()
        ledger = work / f"ledger{rows}"
        led = release_history(dd.read_parquet(src), policy, ledger, npartitions=npartitions)
        wall = time.perf_counter() - start
        peak = sampler.close()
        after, cpu_after = _moved(client), _cpu(client)
    metrics = led.read_metrics(1)
    moved = {k: round((after.get(k, 0.0) - before.get(k, 0.0)) / MIB, 1) for k in after}
    return {
        "rows": rows,
        "workers": workers,
        "npartitions": npartitions,
        "generate_s": round(generate, 2),
        "floor_s": round(floor, 2),
        "release_s": round(wall, 2),
        "release_over_floor": round(wall / floor, 2),
        "steps_s": metrics["seconds"],
        "cpu_s": {k: round(cpu_after[k] - cpu_before[k], 2) for k in cpu_after},
        "moved_mib": {k: v for k, v in moved.items() if v},
        "written_mib": {
            "input": round(_size(src) / MIB, 1),
            "view": round(_size(ledger / "releases") / MIB, 1),
            "state": round(_size(ledger / "state") / MIB, 1),
        },
        "peak_gib": peak,
        "load_1min": round(os.getloadavg()[0], 1),  # of the shared machine, at the end
        "n_groups": metrics["n_groups"],
        "suppression": metrics["suppression_rate"],
    }


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of log(y) on log(x); None with fewer than two positive points."""
    pts = [(x, y) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return None
    lx, ly = np.log10([p[0] for p in pts]), np.log10([p[1] for p in pts])
    return float(np.polyfit(lx, ly, 1)[0])


def fit(entries: list[dict], target_rows: int, target_workers: int) -> list[dict]:
    """Per step: seconds at each size, slope, seconds extrapolated to ``target_rows`` on the
    measured workers (from the largest size along the slope) and on ``target_workers``
    (divided by the worker ratio unless a client step)."""
    entries = sorted(entries, key=lambda e: e["rows"])
    steps = list(dict.fromkeys(s for e in entries for s in e["steps_s"]))
    rows = [e["rows"] for e in entries]
    out = []
    for step in [*steps, "release (wall)", "floor"]:
        if step == "release (wall)":
            secs = [e["release_s"] for e in entries]
        elif step == "floor":
            secs = [e["floor_s"] for e in entries]
        else:
            secs = [e["steps_s"].get(step, 0.0) for e in entries]
        b = slope(rows, secs)
        last, workers = secs[-1], entries[-1]["workers"]
        at_target = last * (target_rows / rows[-1]) ** b if b is not None else None
        parallel = step not in CLIENT_STEPS and step != "release (wall)"
        scaled = None
        if at_target is not None and step != "release (wall)":
            scaled = at_target / (target_workers / workers) if parallel else at_target
        out.append(
            {"step": step, "seconds": secs, "slope": b, "at_target": at_target, "on_target_workers": scaled}
        )
    return out


def report(entries: list[dict], target_rows: int, target_workers: int) -> str:
    entries = sorted(entries, key=lambda e: e["rows"])
    head = "| step | " + " | ".join(f"{e['rows']:.0e} (s)" for e in entries)
    lines = [
        head + f" | slope | {target_rows:.0e} on {entries[-1]['workers']} (s) | on {target_workers} (s) |"
    ]
    lines.append("|---" * (len(entries) + 4) + "|")
    total = 0.0
    for r in fit(entries, target_rows, target_workers):
        f = lambda v, p=1: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
        cells = " | ".join(f(s, 2) for s in r["seconds"])
        lines.append(
            f"| {r['step']} | {cells} | {f(r['slope'], 2)} | {f(r['at_target'])} "
            f"| {f(r['on_target_workers'])} |"
        )
        if r["step"] not in ("release (wall)", "floor") and r["on_target_workers"] is not None:
            total += r["on_target_workers"]
    lines.append(
        f"\nsum of the steps extrapolated to {target_rows:.0e} tuples on {target_workers} workers: "
        f"{total:.0f} s"
    )
    lines.append(
        "\n| rows | release (s) | floor (s) | release/floor | CPU client / workers (s) | moved between "
        "workers: transfer / P2P shards / P2P disk (MiB) | written: view / state (MiB) | peak RSS "
        "client / worker (GiB) |"
    )
    lines.append("|---" * 8 + "|")
    for e in entries:
        mv, wr, pk, cpu = e["moved_mib"], e["written_mib"], e["peak_gib"], e.get("cpu_s", {})
        lines.append(
            f"| {e['rows']:.0e} | {e['release_s']} | {e['floor_s']} | {e['release_over_floor']} | "
            f"{cpu.get('client', '-')} / {cpu.get('workers', '-')} | {mv.get('transfer', 0)} / "
            f"{mv.get('p2p-shards', 0)} / {mv.get('disk-write', 0)} | {wr['view']} / {wr['state']} | "
            f"{pk['client']} / {pk['worker_max']} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="*", default=[100_000, 1_000_000])
    add_ints(ap, workers=2, npartitions=8)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--t", type=float, default=0.5)
    ap.add_argument("--j", type=float, default=0.8)
    ap.add_argument("--json", default="", help="accumulate the measurements here")
    ap.add_argument("--fit", default="", help="only print the table and the fit of this JSON")
    ap.add_argument("--target-rows", type=int, default=10**8)
    ap.add_argument("--target-workers", type=int, default=32)
    ap.add_argument("--work", default="", help="working folder (default: a temp folder)")
    args = ap.parse_args()
    path = Path(args.fit or args.json) if (args.fit or args.json) else None
    entries = json.loads(path.read_text()) if path and path.exists() else []
    if not args.fit:
        work = Path(args.work or tempfile.mkdtemp(prefix="dpriv-scale-model-"))
        for rows in args.rows:
            entry = measure(rows, args.workers, args.npartitions, work, args.k, args.t, args.j)
            print(json.dumps(entry), flush=True)
            entries = [e for e in entries if e["rows"] != rows] + [entry]
            if path:
                path.write_text(json.dumps(sorted(entries, key=lambda e: e["rows"]), indent=1))
        print(f"working files left in {work} (inputs, floors, ledgers): remove them when done")
    print(report(entries, args.target_rows, args.target_workers))


if __name__ == "__main__":
    main()
