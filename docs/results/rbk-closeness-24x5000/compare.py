"""RBK-closeness against the unbounded top-down family of the same histories (issue 12).

For each bounded row of FOLDER/frontier.csv (written by docs/results/exit_frontier.py), the
unbounded family's gains at the same mean semiperimeter: linear between the two unbounded
settings of the same seed (top-down, exit guard, j 1.5, any t) whose boxes bracket it, from
docs/results/exit-frontier-24x5000/frontier.csv. Prints the Markdown table of the README.

    PYTHONPATH=. python docs/results/rbk-closeness-24x5000/compare.py
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd

here = Path(__file__).parent
ours = pd.read_csv(here / "frontier.csv").query("method == 'jsreduce'")
family = pd.read_csv(here.parent / "exit-frontier-24x5000" / "frontier.csv").query("method == 'jsreduce'")
params = family["params"].map(json.loads)
family = family[params.map(lambda p: p.get("j") == 1.5 and bool(p.get("exit_values")) and len(p) == 4)]

print("| seed | t, rbk_closeness | mean semiperimeter | max gain paper | unbounded at these boxes | "
      "max gain retrospective | unbounded at these boxes | confident % paper / retro |")
print("|---|---|---|---|---|---|---|---|")
for _, r in ours.sort_values(["seed", "semi"]).iterrows():
    f = family[family["seed"] == r["seed"]].sort_values("semi")
    at = {
        k: np.interp(r["semi"], f["semi"], f[k], left=np.nan, right=np.nan)
        for k in ("max_gain_dk", "max_retro_gain")
    }
    p = json.loads(r["params"])
    print(f"| {r['seed']} | {p['t']}, {p['rbk_closeness']} | {r['semi']:.3f} | "
          f"{r['max_gain_dk']:.3f} | {at['max_gain_dk']:.3f} | "
          f"{r['max_retro_gain']:.3f} | {at['max_retro_gain']:.3f} | "
          f"{100 * r['max_share_dk']:.1f} / {100 * r['max_retro_share']:.1f} |")
print("\nunbounded family (j 1.5, exit guard), per seed: t, semiperimeter, paper, retrospective")
for s, f in family.sort_values("semi").groupby("seed"):
    cells = [f"t {json.loads(p)['t']}: {a:.3f}, {b:.3f}, {g:.3f}" for p, a, b, g in
             zip(f["params"], f["semi"], f["max_gain_dk"], f["max_retro_gain"])]
    print(f"seed {s}: " + "; ".join(cells))
