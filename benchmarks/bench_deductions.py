"""Exact deductions of every prefix of a ledger, in this tree and in another one, alternated.

Run: python benchmarks/bench_deductions.py LEDGER HISTORY [--knowledge dk] [--attendance 0.5]
     [--old-tree DIR] [--repeats 3]

What ``dpriv attack LEDGER --adversary retrospective --attendance 0.5`` deduces: the masks of
every prefix of the releases (``dpriv.adversary.masks.MasksAsOf``, each prefix started from the
one before). The ledger is read once here (``AttackShare``: the releases the adversary observes,
its tables at the last release) and pickled; each timing runs in a child process on one tree
(``PYTHONPATH``), which deduces two releases untimed first (numba compiles or loads its kernels)
and then every prefix, timed: CPU seconds (``time.process_time``, what other jobs on the machine
disturb least) and wall seconds. With ``--old-tree`` (a copy of another commit's ``dpriv``
package, e.g. ``git archive main dpriv | tar -x -C DIR``) the two trees run alternately
(``--repeats`` rounds, the order swapped each round); it prints the best of each, the ratio
new / old, and whether every mask is the same (SHA-256 over their bytes).

Issue 12 tooling (2026-12-07, 2 cores shared with a running ``dpriv experiment paper``, load 7-10;
24 x 5,000 histories of ``dpriv generate medical``, best of 3 alternated; old: main f7d6143, the
NumPy bit-packed chain pass and a SciPy max flow per release; new: the compiled kernels
``dpriv.adversary.chain_kernel`` and ``dpriv.adversary.assign_kernel``); masks identical in
every pair, and so the rounds:

| ledger (release) | adversary's attendance | old CPU / wall | new CPU / wall | ratio (CPU) |
|---|---|---|---|---|
| generator attendance 0.5, recommended policy | 0.5 | 3.85 / 9.3 s | 0.80 / 2.1 s | 0.21 |
| generator attendance 0.5, ``--method mondrian-t --t 0.3`` | 0.5 | 4.42 / 11.5 s | 0.78 / 2.2 s | 0.18 |
| generator attendance 1 (seed 1), recommended policy | 1 (presence) | 4.03 / 10.0 s | 0.74 / 1.8 s | 0.18 |
| the same history, t 0.3, j 0.6, 20-35 % suppressed (hidden steps) | 1 | 2.99 / 7.9 s | 0.54 / 1.4 s | 0.18 |
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def child(path: str, attendance: float | None) -> dict:
    """Deduce every prefix of the pickled releases with the ``dpriv`` on ``sys.path``; seconds,
    rounds and a digest of the masks."""
    from dpriv.adversary.masks import MasksAsOf

    tables, observed = pickle.loads(Path(path).read_bytes())
    MasksAsOf(observed[:2], tables, attendance)(min(1, len(observed) - 1))  # compile / load
    cpu, wall = time.process_time(), time.perf_counter()
    masks = MasksAsOf(observed, tables, attendance)
    for k in range(len(observed)):
        masks(k)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    digest = hashlib.sha256()
    for k in range(len(observed)):
        for a in masks(k):
            digest.update(a.tobytes())
    rounds = sum(masks.deduced(k).rounds for k in range(len(observed)))
    return {"cpu": cpu, "wall": wall, "digest": digest.hexdigest(), "rounds": rounds}


def run(tree: Path, path: str, attendance: float | None) -> dict:
    """:func:`child` in a fresh interpreter on ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [sys.executable, __file__, "--child", path]
    if attendance is not None:
        args += ["--attendance", str(attendance)]
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ledger", nargs="?")
    ap.add_argument("history", nargs="?")
    ap.add_argument("--knowledge", default="dk")
    ap.add_argument("--attendance", type=float, default=0.5)
    ap.add_argument("--old-tree", type=Path, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.attendance)))
        return {}
    from dpriv.attack_share import AttackShare

    if not (args.ledger and args.history):
        ap.error("LEDGER and HISTORY are required")
    share = AttackShare()
    inp = share.input(args.ledger, args.history, None, args.knowledge, None)  # (a CSV or Parquet path)
    tables, observed = share.observed(inp)
    n = sum(len(o.respondent) for o in observed)
    print(f"{len(observed)} releases, {n} tuples; attendance {args.attendance}")
    trees = {"new": HERE} | ({"old": args.old_tree.resolve()} if args.old_tree else {})
    best: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench_deductions_") as tmp:
        path = str(Path(tmp) / "observed.pkl")
        Path(path).write_bytes(pickle.dumps((tables, observed)))
        for rep in range(args.repeats):
            for name in list(trees)[:: 1 if rep % 2 == 0 else -1]:
                got = run(trees[name], path, args.attendance)
                print(f"  {name}: cpu {got['cpu']:.2f} s, wall {got['wall']:.2f} s, {got['rounds']} rounds")
                b = best.setdefault(name, got)
                if b["digest"] != got["digest"]:
                    raise AssertionError(f"{name}: masks differ between runs")
                b["cpu"], b["wall"] = min(b["cpu"], got["cpu"]), min(b["wall"], got["wall"])
    for name, b in best.items():
        print(f"{name}: best cpu {b['cpu']:.2f} s, best wall {b['wall']:.2f} s")
    if "old" in best:
        same = best["old"]["digest"] == best["new"]["digest"]
        print(
            f"ratio new/old: cpu {best['new']['cpu'] / best['old']['cpu']:.2f}, "
            f"wall {best['new']['wall'] / best['old']['wall']:.2f}; masks identical: {same}"
        )
    return best


if __name__ == "__main__":
    main()
