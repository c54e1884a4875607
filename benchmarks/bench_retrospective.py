"""Retrospective (smoothing) adversary vs the paper's adversary on the same ledger.

Run: python benchmarks/bench_retrospective.py [--views 24] [--view-size 5000] [--seed 0]
     [--data-attendance 0.5] [--method jsreduce mondrian-l] [--t 0.5] [--j 0.8] [--workdir DIR]
     [--attendance Q] [--deductions] [--partitions 2 4] [--history-revision]
     [--setting JSON] [--experiment [--repeats 2]]

The synthetic medical history (``medical_history``, attendance ``--data-attendance``, default
0.5 as ``dpriv experiment paper``, det 0.9; policy from ``write_history`` with max_suppression
lifted to 1.0 as the experiment does) is released with
each ``--method`` (JS-reduce: k = 5, t, j; Mondrian-l with the policy's defaults); then the
paper adversary (``dpriv.attack.attack_steps``, full DK) and the retrospective adversary
(``dpriv.adversary.retrospective``, same exact model) attack it. It prints per release the
paper gain and the retrospective gain of that release as of the last release, the confident
share and precision of each, then the times and the ratio retrospective / paper (reading the
ledger excluded: the paper time is the sum of its per-release revision + Ω + state update;
the retrospective time covers every (release, as_of) pair). Issue 11 asks for ratio <= 3 at
24 x 5,000. With ``--workdir`` the history and ledgers are reused. ``--deductions`` masks the
retrospective adversary with the exact deductions known as of each release (their time is
included). The kernels are compiled (numba) on two releases before anything is timed.
``--partitions N ...`` also runs the retrospective adversary on Dask (threads) over N
partitions of respondents, checks its rows equal the in-process ones and prints its time;
``--history-revision`` times the paper adversary with the whole-history revision too.
``--setting '{"grouping": "topdown", "exit_values": ["deceased", "discharged"]}'`` overrides
the policy as a grid entry of ``dpriv experiment paper`` does (``setting_policy``).

``--experiment`` (issue 12) times, instead, every attack ``dpriv experiment paper`` makes of the
ledger (``dpriv.experiment.attack_setting``: the pinned shares, the paper adversary under the four
knowledge kinds, the retrospective adversary with deductions and attendance 0.5, its exit counts)
the old way (``shared=False``: each attack reads the ledger and deduces on its own) and the new way
(one reading, the retrospective deductions reused for the exit counts), alternately ``--repeats``
times after one untimed call of each (numba compilation), checks that the frames are equal and
prints the best time of each, the ratio new / old and the floor: reading the ledger once.
Both ways use the paper adversary's array state (``dpriv.adversary.window_state``), which the
ratio therefore leaves out.

Issue 12 (2026-12-07, 24 x 5,000, seed 0, t 0.45, j 1.5, top-down, exit guard; 2 cores at load
3.5-6 from other jobs): old 37.6 s, new 28.1 s, ratio 0.75; floor (one reading) 1.9 s. A whole
``run_experiment`` of that one setting (release, attacks, CSVs, plots), main df140bd against
the branch, alternated: 150 / 115 / 82 s -> 71 / 77 / 51 s (load 6-9.5); mondrian-t t 0.3:
96 / 72 s -> 70 / 51 s; the four CSVs identical byte for byte in every pair.

Measured (2 cores shared with two other jobs, seed 0, JS-reduce t 0.5, j 0.8, 24 x 5,000,
attendance 1 in the generator): paper 313 s, retrospective 66 s (300 (release, as_of) pairs),
ratio 0.21; with deductions and attendance 1 (``dpriv.attack.attack``, both adversaries
masked): 202 s vs 61 s, ratio 0.30.

Issue 11 (2026-12-01, generator attendance 0.5, max_suppression 1.0, the adversary given
``--attendance 0.5``, no deductions; the 2-core machine at load 15-29, so absolute times vary
by several x between runs, the ratios within one run are what to read):

| code | paper (E7) | retrospective | ratio | Dask, 2 partitions (threads) |
|---|---|---|---|---|
| before (main a990874) | 251 s | 217 s | 0.86 | - |
| after (branch adv) | 2121 s (load 29) | 269 s | 0.13 | 230 s, rows identical |

Without ``--attendance`` (before, load ~15): paper 175 s, retrospective 26.5 s, ratio 0.15
(plus 24 s of one-time numba compilation). The paper adversary with ``revision="history"``
took 18 s in the same run as the 2121 s window one: the (E7) path (pandas state merges and a
BLAS contraction) is the one that suffers from an oversubscribed machine.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import pandas as pd
from _timing import best_of

from dpriv.adversary.masks import MasksAsOf
from dpriv.adversary.reading import observed_from_steps
from dpriv.adversary.retrospective import retrospective_attack
from dpriv.adversary.tail import tail_risk
from dpriv.attack import attack_steps
from dpriv.attack_share import AttackShare
from dpriv.datasets import medical_history, write_history
from dpriv.experiment import attack_setting, setting_policy
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--views", type=int, default=24)
    ap.add_argument("--view-size", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--method", nargs="+", default=["jsreduce"])
    ap.add_argument("--t", type=float, default=0.5)
    ap.add_argument("--j", type=float, default=0.8)
    ap.add_argument("--attendance", type=float, default=None)
    ap.add_argument("--data-attendance", type=float, default=0.5)
    ap.add_argument("--partitions", nargs="*", type=int, default=[])
    ap.add_argument("--history-revision", action="store_true")
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--deductions", action="store_true")
    ap.add_argument("--setting", type=json.loads, default={})
    ap.add_argument("--experiment", action="store_true")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_retro_"))
    work.mkdir(parents=True, exist_ok=True)
    mh = medical_history(args.views, args.view_size, attendance=args.data_attendance, seed=args.seed)
    path = work / "data" / "policy.toml"
    if not path.exists():
        path = write_history(work / "data", mh)
    print(
        f"history: {args.views} views x {args.view_size}, attendance {args.data_attendance}, "
        f"seed {args.seed}, {mh.n_respondents} respondents"
    )
    results = {}
    for method in args.method:
        base = ReleasePolicy.from_toml(path, t=args.t, j=args.j, k=5, max_suppression=1.0)
        policy = setting_policy(base, args.setting)
        t0 = time.perf_counter()
        led = release_history(mh.history, policy, work / f"led-{method}", method=method)
        print(f"\n== {method} (t {args.t}, j {args.j}, k 5): released in {time.perf_counter() - t0:.1f} s")
        if args.experiment:
            results[method] = experiment_attacks(led, mh.history, policy, args.repeats)
            continue
        steps = list(attack_steps(led, mh.history, policy, "dk", deductions=False))
        paper_s = sum(s.seconds for s in steps)
        observed = observed_from_steps(
            steps, mh.history, policy.id, policy.time, mh.knowledge.classes, len(mh.values)
        )
        retrospective_attack(observed[:2], mh.knowledge, attendance=args.attendance)  # compile
        if args.history_revision:
            t0 = time.perf_counter()
            hist_steps = list(
                attack_steps(led, mh.history, policy, "dk", deductions=False, revision="history")
            )
            hist_s = sum(s.seconds for s in hist_steps)
            print(f"paper adversary, whole-history revision: {hist_s:.2f} s (window: {paper_s:.2f} s)")
            for w, h in zip(steps, hist_steps):
                gw, gh = w.adversary_gain, h.adversary_gain
                print(f"   release {w.release:2d}: gain window {gw:.4f}, history {gh:.4f}")
        t0 = time.perf_counter()
        masks = MasksAsOf(observed, mh.knowledge, args.attendance) if args.deductions else None
        rows = pd.DataFrame(
            retrospective_attack(observed, mh.knowledge, allowed=masks, attendance=args.attendance)
        )
        retro_s = time.perf_counter() - t0
        last = rows[rows["as_of"] == rows["as_of"].max()].set_index("release")
        table = []
        for st, o in zip(steps, observed):
            p = tail_risk(st.posteriors, o.truth, o.frequencies())
            r = last.loc[st.release]
            table.append(
                {
                    "release": st.release,
                    "n": p.n_tuples,
                    "paper_gain": p.adversary_gain,
                    "retro_gain_last": r["adversary_gain"],
                    "retro_gain_max": rows.loc[rows["release"] == st.release, "adversary_gain"].max(),
                    "paper_conf": p.confident_share,
                    "paper_prec": p.confident_precision,
                    "retro_conf": r["confident_share"],
                    "retro_prec": r["confident_precision"],
                    "retro_n_conf": r["n_confident"],
                }
            )
        table = pd.DataFrame(table)
        print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        ratio = retro_s / paper_s if paper_s else float("nan")
        print(
            f"time: paper adversary {paper_s:.2f} s, retrospective {retro_s:.2f} s "
            f"({len(rows)} (release, as_of) pairs); ratio retrospective / paper = {ratio:.2f}"
        )
        for n_parts in args.partitions:
            import dask

            t0 = time.perf_counter()
            with dask.config.set(scheduler="threads"):
                got = pd.DataFrame(
                    retrospective_attack(
                        observed, mh.knowledge, allowed=masks, attendance=args.attendance, partitions=n_parts
                    )
                )
            dask_s = time.perf_counter() - t0
            same = got.equals(pd.DataFrame(rows))
            print(
                f"retrospective on Dask (threads), {n_parts} partitions: {dask_s:.2f} s, ratio to paper "
                f"{dask_s / paper_s:.2f}; rows identical to in-process: {same}"
            )
        results[method] = {
            "table": table,
            "rows": rows,
            "paper_s": paper_s,
            "retro_s": retro_s,
            "ratio": ratio,
        }
    return results


def experiment_attacks(led, history: pd.DataFrame, policy: ReleasePolicy, repeats: int) -> dict:
    """``attack_setting`` old (``shared=False``) and new, alternately; the best seconds of each,
    their ratio and the floor (one reading of the ledger). AssertionError if the frames differ."""
    floor, _ = best_of(lambda: AttackShare().input(led, history, policy, "snapshot", None), repeats)
    seconds: dict[bool, float] = {False: float("inf"), True: float("inf")}
    got: dict[bool, object] = {}
    for rep in range(repeats + 1):  # the first round compiles what the kernels need: not timed
        for shared in (False, True):
            t0 = time.perf_counter()
            got[shared] = attack_setting(led, history, policy, attendance=0.5, shared=shared)
            if rep:
                seconds[shared] = min(seconds[shared], time.perf_counter() - t0)
    old, new = got[False], got[True]
    assert old.pinned == new.pinned and old.gains.keys() == new.gains.keys()
    for kind in old.gains:
        pd.testing.assert_frame_equal(old.gains[kind], new.gains[kind], check_exact=True)
    pd.testing.assert_frame_equal(old.retro, new.retro, check_exact=True)
    ratio = seconds[True] / seconds[False]
    print(
        f"experiment's attacks of this ledger (best of {repeats}, alternated): old (each attack reads and "
        f"deduces) {seconds[False]:.2f} s, new (shared) {seconds[True]:.2f} s, ratio new/old {ratio:.2f}; "
        f"floor (one reading) {floor:.2f} s, new/floor {seconds[True] / floor:.1f}; frames identical"
    )
    return {"old_s": seconds[False], "new_s": seconds[True], "ratio": ratio, "floor_s": floor}


if __name__ == "__main__":
    main()
