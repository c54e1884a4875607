"""Collect the Anatomy runs of `run_experiment` (8 x 2,000) into the files of this folder.

python make_table.py OUT BASELINE_FRONTIER RUN_DIR...   (each RUN_DIR holds frontier.csv,
runs.csv, gains.csv, retro.csv of one run_experiment call; its name ends with -seed<N> or seed<N>)

Writes OUT/frontier.csv (every (seed, params) row), OUT/frontier.md (the table of the README),
OUT/runs.csv, OUT/gains.csv, OUT/retro.csv (rows of every run, with a seed column) and
OUT/frontier.png (semiperimeter and association loss vs the max gain of the paper and the
retrospective adversary; the baselines of BASELINE_FRONTIER, docs/results/retrospective-8x2000).
"""

import json
import re
import sys
from pathlib import Path

import pandas as pd

out, baseline = Path(sys.argv[1]), pd.read_csv(sys.argv[2])
tables = {k: [] for k in ("frontier", "runs", "gains", "retro")}
for run in map(Path, sys.argv[3:]):
    seed = int(re.search(r"seed(\d+)$", run.name).group(1))
    for k in tables:
        tables[k].append(pd.read_csv(run / f"{k}.csv").assign(seed=seed))
tables = {k: pd.concat(v, ignore_index=True) for k, v in tables.items()}
for k, v in tables.items():
    v.to_csv(out / f"{k}.csv", index=False)
front = tables["frontier"]


def label(params: str) -> str:
    p = json.loads(params)
    return f"t {p['t']}, j {p['j']}"


lines = [
    "| setting (Anatomy, top-down + pc) | seed | max gain, paper (full DK) | max gain, retrospective "
    "(+ deductions) | max confident share, paper / retro | mean / max suppression | mean avg. "
    "semiperimeter | association loss (E27) | group QI span | max share pinned from QIs |",
    "|---|---|---|---|---|---|---|---|---|---|",
]
for _, r in front.sort_values(["params", "seed"]).iterrows():
    lines.append(
        f"| {label(r['params'])} | {r['seed']} | {r['max_gain_dk']:.3f} | {r['max_retro_gain']:.3f} | "
        f"{100 * r['max_share_dk']:.1f} % / {100 * r['max_retro_share']:.1f} % | "
        f"{100 * r['suppression']:.1f} % / {100 * r['max_suppression']:.1f} % | {r['semi']:.2f} | "
        f"{r['association_loss']:.3f} | {r['group_qi_span']:.2f} | {100 * r['max_pinned_share']:.0f} % |"
    )
(out / "frontier.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
for ax, col, name in ((axes[0], "max_gain_dk", "paper adversary (full DK)"),
                      (axes[1], "max_retro_gain", "retrospective adversary (+ deductions)")):
    for method, g in baseline.groupby("method"):
        ax.scatter(g["semi"], g[col], s=20 + 400 * g["suppression"], alpha=0.6, label=method)
    a = front[front["seed"] == 0]
    size = 20 + 400 * a["suppression"]
    ax.scatter(a["semi"], a[col], s=size, marker="*", c="k", label="jsreduce+anatomy (seed 0)")
    for _, r in a.iterrows():
        at = (r["semi"], r[col])
        ax.annotate(label(r["params"]), at, fontsize=6, xytext=(4, 0), textcoords="offset points")
    ax.set(xlabel="mean average semiperimeter (Anatomy: 0 by construction)", title=name)
axes[0].set_ylabel("max gain (E10), lower = safer")
axes[0].legend(fontsize=7)
fig.suptitle("8 x 2,000, attendance 0.5 (marker area ~ mean suppression)")
fig.tight_layout()
fig.savefig(out / "frontier.png", dpi=120)
