"""The release gate's check: stored forward messages (dpriv.adversary.retro_last) vs the
whole-window path it replaced, on the same inputs in the same process.

Run: python benchmarks/bench_gate.py [--views 24] [--view-size 2000] [--seed 0]
     [--attendance 0.5 | --attendance none] [--no-deductions] [--no-old-read] [--out FILE.json]

A synthetic medical history (``medical_history``, generator attendance 0.5, as ``dpriv
experiment paper``) is released with JS-reduce (t 0.5, j 0.8, max_suppression 1.0) under the
gate (``retro_max_gain`` 1.0: every check runs, none refuses; ``retro_attendance`` as given).
At every check the gate's reading (:meth:`dpriv.gate.RetroGate.read`, the new path) is timed,
then the whole-window path (:func:`dpriv.adversary.retro_last.read_whole_windows`, the old
one; not with ``--no-old-read``) on the same observed releases and masks; the two must give the
same bytes (checked, else the run stops). The deductions are timed the same way: the gate's,
started from the committed releases' (:mod:`dpriv.gate_deductions`), then from scratch as the
gate ran them before, on the same releases (the same masks, checked). Printed per check: the
deductions' time both ways (the masks, the same for both read paths), the new read with its
forward and backward kernel times, the old read, and new / old; then totals and the last check
vs the first. The kernels are compiled on a small world before anything is timed.

Measured 2026-12-06 (branch s35-h1; seed 0, retro_attendance 0.5, ``--no-old-read``; the 2-core
machine shared with 4 other jobs): the deductions of the 24 checks of 24 x 2,000 took 6.7 s
started against 9.9 s from scratch (new / old 0.68; the last check 0.87 s vs 0.99 s; every check
the same masks), 1.19 s vs 1.42 s (0.84) on 8 x 2,000. The read (74 s) stays most of the gate.
On one check alone, best of 3 (release 12 of 12 x 2,000 as of 12): 0.155 s vs 0.305 s (0.51);
the new release re-reads the histories of its members (6,503 of the 21,677 earlier tuples) and
half of the started run is the group counts of the earlier groups they are in.

Measured 2026-12-01 (branch gate; 24 views x 2,000, seed 0; the 2-core machine shared, load
5-10, so read the ratios within one run, both paths timed back to back on the same inputs;
every check gave the same bytes on both paths). Seconds summed over the 24 checks:

| gate setting | deductions | old read | new read | new/old | last check old -> new | new: fwd / bwd |
|---|---|---|---|---|---|---|
| retro_attendance 0.5 | on (default) | 428 s | 80 s | 0.19 | 50.6 s -> 6.3 s (0.125) | 55 s / 20 s |
| retro_attendance unset | on (default) | 141 s | 45 s | 0.32 | 9.2 s -> 1.8 s (0.20) | 26 s / 13 s |
| retro_attendance 0.5 | off | 525 s | 30 s | 0.058 | 122 s -> 6.1 s (0.05) | 9 s / 19 s |

With deductions the whole gate (deductions + read) took 101 s instead of 450 s (attendance
0.5) and 74 s instead of 170 s (unset); the deductions themselves are 21 s and 29 s of that
(about 1.2 s per check at release 24, O(T) per check as well). The new read grows linearly
with the history (last / first check: 24x at attendance 0.5, the old one 168x).
With deductions the masks of every earlier release change at every release (a later release
excludes values of earlier tuples: 47-854 rows per earlier release at check 8 on 8 x 2,000),
and through Ω each changed mask changes the evidence of its whole group and then every later
prediction of its members: 94 % of the respondents are affected by check 8, from release 2.3
on average. So every check reads the history again from release 1 (``reused_as_of_steps``
stays 0): one forward step per respondent and release, not one as-of window per release.
Without deductions each check continues the last one (``reused``: 276 of the 300 as-of steps
of the 24 checks) and the forward part stays flat (0.1-0.3 s per check at releases 10-24);
the backward pass is then most of the check (64 %): it is O(T) per respondent whose window
grew (with absences as evidence: every respondent who may still be in the data), and it is
needed, since the bound is on the gains of all releases 1..i as of i (the backward messages of
every earlier step change with the new release). The last checks (19-24) of that run shared the
machine with the unset-attendance run. Stored messages: 3.5 M states (42 MB, 12 bytes each) at
release 8 with attendance 0.5; 4.8 M states (58 MB) at release 24 without.

Not done, measured: reusing, with deductions, the forward steps of the respondents whose
evidence provably did not change (a changed mask marks its group from that release on, a
marked member marks her later groups) would keep only 11-30 % of the forward steps (checks
4-24 of the same history, attendance 0.5: 88-94 % of the respondents are marked, most from an
early release), so it was left out. The gate alone (this path, no old one beside it): 55 s
over the 24 checks with attendance 0.5, 0.18 s for the first check and 6.8 s for the last.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

import dpriv.adversary.retro_last as rl
import dpriv.adversary.retro_trellis as rt
import dpriv.gate as gate_mod
from dpriv.adversary.deductions import deduce
from dpriv.datasets import medical_history, write_history
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


class _Clock:
    """Seconds spent in the Trellis' forward (incl. prediction) and backward calls."""

    def __init__(self) -> None:
        self.forward = self.backward = 0.0
        self._orig = {n: getattr(rt.Trellis, n) for n in ("forward", "predict", "live", "backward")}
        for name, fn in self._orig.items():
            setattr(rt.Trellis, name, self._timed(name, fn))

    def _timed(self, name, fn):
        clock = self

        def wrapper(*args, **kwargs):
            tick = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = time.perf_counter() - tick
                if name == "backward":
                    clock.backward += dt
                else:
                    clock.forward += dt

        return wrapper

    def take(self) -> tuple[float, float]:
        out = (self.forward, self.backward)
        self.forward = self.backward = 0.0
        return out


def _warm_up() -> None:
    """Compile the kernels of both paths on a small world (3 releases)."""
    from tests.test_gate_incremental import _world

    tables, rels = _world(0, n_rel=3)
    for q in (None, 0.5):
        rl.read_whole_windows(rels, tables, None, q)
        gate_mod.Reading(tables, q).read(rels)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--views", type=int, default=24)
    ap.add_argument("--view-size", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--attendance", default="0.5")
    ap.add_argument("--no-deductions", action="store_true")
    ap.add_argument("--no-old-read", action="store_true", help="time the gate's read only")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    attendance = None if args.attendance == "none" else float(args.attendance)
    if args.no_deductions:
        gate_mod.deductions_available = lambda: False
    _warm_up()
    work = Path(tempfile.mkdtemp(prefix="bench_gate_"))
    mh = medical_history(args.views, args.view_size, attendance=0.5, seed=args.seed)
    policy = ReleasePolicy.from_toml(write_history(work / "h", mh), t=0.5, j=0.8, max_suppression=1.0)
    gated = policy.with_overrides(retro_max_gain=1.0, retro_attendance=attendance)
    clock = _Clock()
    rows = []
    real_read, real_evidence = gate_mod.RetroGate.read, gate_mod.RetroGate.evidence
    spent = {}

    def evidence(self, candidate, tables):
        started = self.deduced.started if self.deduced is not None else 0
        tick = time.perf_counter()
        out = real_evidence(self, candidate, tables)
        spent["deductions"] = time.perf_counter() - tick
        spent["started"] = self.deduced is not None and self.deduced.started > started
        if out[1] is not None:  # the deductions as the gate ran them before issue 13: from scratch
            tick = time.perf_counter()
            scratch = deduce(out[0], tables, attendance=self.policy.retro_attendance).allowed
            spent["scratch"] = time.perf_counter() - tick
            if not all(np.array_equal(a, b) for a, b in zip(out[1], scratch)):
                raise AssertionError(f"check {candidate.index}: the started deductions differ")
        return out

    def read(self, observed, tables, masks):
        clock.take()
        tick = time.perf_counter()
        new = real_read(self, observed, tables, masks)
        t_new = time.perf_counter() - tick
        fwd, bwd = clock.take()
        tick = time.perf_counter()
        old = new if args.no_old_read else rl.read_whole_windows(observed, tables, masks, attendance)
        t_old = float("nan") if args.no_old_read else time.perf_counter() - tick
        clock.take()
        for a, b in zip(new.posteriors, old.posteriors):
            if not np.array_equal(a, b):
                raise AssertionError(f"check {new.as_of}: the two paths differ")
        row = {
            "check": new.as_of,
            "tuples": int(sum(o.respondent.size for o in observed)),
            "deductions_s": round(spent.get("deductions", 0.0), 3),
            "scratch_deductions_s": round(spent.get("scratch", 0.0), 3),
            "started": bool(spent.get("started")),
            "new_s": round(t_new, 3),
            "new_forward_s": round(fwd, 3),
            "new_backward_s": round(bwd, 3),
            "old_s": round(t_old, 3),
            "new/old": round(t_new / t_old, 3) if t_old else None,
            "reused_as_of_steps": self.reading.reused,
            "stored_states": int(self.reading.stored_states),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
        return new

    gate_mod.RetroGate.evidence, gate_mod.RetroGate.read = evidence, read
    tick = time.perf_counter()
    release_history(mh.history, gated, work / "led")
    wall = time.perf_counter() - tick
    for row in rows:  # the check as the gate timed it (metrics.json), without the old path's read
        metrics = json.loads((work / "led" / "releases" / str(row["check"]) / "metrics.json").read_text())
        row["gate_check_s"] = round(metrics["gate"]["seconds"] - np.nan_to_num(row["old_s"]), 3)
    new_total = sum(r["new_s"] for r in rows)
    old_total = sum(r["old_s"] for r in rows)
    ded_total = sum(r["deductions_s"] for r in rows)
    scratch_total = sum(r["scratch_deductions_s"] for r in rows)
    summary = {
        "views": args.views,
        "view_size": args.view_size,
        "attendance": attendance,
        "deductions": not args.no_deductions,
        "release_wall_s (incl. both paths)": round(wall, 1),
        "deductions_total_s": round(ded_total, 2),
        "scratch_deductions_total_s": round(scratch_total, 2),
        "deductions new/scratch": round(ded_total / scratch_total, 3) if scratch_total else None,
        "deductions new/scratch (last check)": round(
            rows[-1]["deductions_s"] / max(rows[-1]["scratch_deductions_s"], 1e-9), 3
        ),
        "new_total_s": round(new_total, 2),
        "old_total_s": round(old_total, 2),
        "new/old total": round(new_total / old_total, 3),
        "gate_total_new_s (deductions + new)": round(ded_total + new_total, 2),
        "gate_total_old_s (deductions + old)": round(ded_total + old_total, 2),
        "gate_total_s (metrics.json, new path)": round(sum(r["gate_check_s"] for r in rows), 2),
        "first_check": rows[0],
        "last_check": rows[-1],
        "last/first new": round(rows[-1]["new_s"] / max(rows[0]["new_s"], 1e-9), 1),
        "last/first old": round(rows[-1]["old_s"] / max(rows[0]["old_s"], 1e-9), 1),
        "last/first gate check": round(rows[-1]["gate_check_s"] / max(rows[0]["gate_check_s"], 1e-9), 1),
        "backward share of new (all checks)": round(
            sum(r["new_backward_s"] for r in rows) / max(new_total, 1e-9), 3
        ),
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "checks": rows}, indent=1))
    return summary


if __name__ == "__main__":
    main()
