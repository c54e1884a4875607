"""Frontier of JS-reduce scan vs top-down and the Mondrian baselines, strict and relaxed
(issue 12), on a reduced paper setting; one row per (method, params), appended to a CSV as
each finishes (so a long run can be read while it goes).

    python benchmarks/bench_topdown_frontier.py OUT [VIEWS] [VIEW_SIZE] [SEED] [GRID]

Columns: method, params, max gain under the paper adversary (full DK, dpriv.attack), mean and
max suppression, mean average semiperimeter (of 3), mean group size, seconds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd

from dpriv.attack import attack
from dpriv.datasets import medical_history, write_history
from dpriv.experiment import setting_policy
from dpriv.experiment_files import setting_name
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

GRIDS = {
    "main": [
        ("jsreduce", {"t": 0.5, "j": 0.8, "grouping": "topdown"}),
        ("jsreduce", {"t": 0.5, "j": 0.8}),
        ("jsreduce", {"t": 0.5, "j": 0.4, "grouping": "topdown"}),
        ("jsreduce", {"t": 1.0, "j": 0.4, "grouping": "topdown"}),
        ("mondrian-t", {"t": 0.5}),
        ("mondrian-t", {"t": 0.5, "mondrian_cut": "relaxed"}),
        ("mondrian-bt", {"bt_t": 0.15}),
        ("mondrian-bt", {"bt_t": 0.15, "mondrian_cut": "relaxed"}),
        ("jsreduce", {"t": 0.3, "j": 0.4, "grouping": "topdown"}),
        ("jsreduce", {"t": 1.0, "j": 0.4}),
        ("mondrian-t", {"t": 0.3}),
        ("mondrian-t", {"t": 0.3, "mondrian_cut": "relaxed"}),
        ("mondrian-l", {"l": 3}),
        ("mondrian-l", {"l": 3, "mondrian_cut": "relaxed"}),
        ("jsreduce", {"t": 0.5, "j": 0.6, "grouping": "topdown"}),
        ("jsreduce", {"t": 1.0, "j": 0.2, "grouping": "topdown"}),
    ],
    "pc": [
        ("jsreduce", {"t": 0.5, "j": 0.4, "grouping": "topdown", "topdown_pc": True}),
        ("jsreduce", {"t": 1.0, "j": 0.2, "grouping": "topdown", "topdown_pc": True}),
        ("jsreduce", {"t": 0.5, "j": 0.2, "grouping": "topdown", "topdown_pc": True}),
        ("jsreduce", {"t": 0.5, "j": 0.8, "grouping": "topdown", "topdown_pc": True}),
    ],
    "peel": [
        ("jsreduce", {"t": 0.5, "j": 0.4, "grouping": "topdown", "topdown_pc": True}),
        ("jsreduce", {"t": 0.5, "j": 0.8, "grouping": "topdown"}),
        ("jsreduce", {"t": 1.0, "j": 0.4, "grouping": "topdown", "topdown_pc": True}),
    ],
    "rbk": [
        ("jsreduce", {"t": 0.5, "j": 0.8, "grouping": "topdown", "prior_key": True}),
        ("jsreduce", {"t": 1.0, "j": 0.4, "grouping": "topdown", "prior_key": True}),
        ("jsreduce", {"t": 0.5, "j": 0.8, "grouping": "topdown", "topdown_level": 0}),
        ("jsreduce", {"t": 0.5, "j": 0.4, "grouping": "topdown", "prior_key": True}),
    ],
}


def main(out: str, views: int = 8, size: int = 2000, seed: int = 0, grid: str = "main") -> None:
    out_dir = Path(out)
    mh = medical_history(views, size, attendance=0.5, seed=seed)
    base = ReleasePolicy.from_toml(write_history(out_dir / "data", mh))
    csv = out_dir / "frontier.csv"
    for method, params in GRIDS[grid]:
        t0 = time.perf_counter()
        policy = setting_policy(base, params)
        ledger = out_dir / "ledgers" / setting_name(method, params)
        led = release_history(mh.history, policy, ledger, method=method)
        ms = [led.read_metrics(r["index"]) for r in led.committed()]
        secs = time.perf_counter() - t0
        gains = attack(led, mh.history, policy, "dk")["adversary_gain"]
        row = {
            "method": method,
            "params": json.dumps(params),
            "max_gain_dk": float(gains.max()),
            "suppression": sum(m["suppression_rate"] for m in ms) / len(ms),
            "max_suppression": max(m["suppression_rate"] for m in ms),
            "semi": sum(m["average_semiperimeter"] for m in ms) / len(ms),
            "mean_group": sum(size * (1 - m["suppression_rate"]) / max(m["n_groups"], 1) for m in ms)
            / len(ms),
            "release_seconds": secs,
        }
        pd.DataFrame([row]).to_csv(csv, mode="a", header=not csv.exists(), index=False)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(a[0], *(int(x) for x in a[1:4]), *a[4:5])
