"""Collect the frontier rows of benchmarks/bench_topdown_frontier.py runs into frontier.csv,
frontier.md and frontier.png (python make_table.py OUT CSV...)."""

import json
import sys
from pathlib import Path

import pandas as pd

out = Path(sys.argv[1])
rows = pd.concat([pd.read_csv(p) for p in sys.argv[2:]], ignore_index=True)
rows.to_csv(out / "frontier.csv", index=False)


def label(r):
    p = json.loads(r["params"])
    return r["method"] + " " + ", ".join(f"{k} {v}" for k, v in p.items())


lines = [
    "| method, parameters | max gain (full DK) | mean / max suppression | mean semiperimeter | mean group |",
    "|---|---|---|---|---|",
]
for _, r in rows.iterrows():
    lines.append(
        f"| {label(r)} | {r['max_gain_dk']:.3f} | {100 * r['suppression']:.2f} % / {100 * r['max_suppression']:.1f} % "
        f"| {r['semi']:.2f} | {r['mean_group']:.1f} |"
    )
(out / "frontier.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

fig, ax = plt.subplots(figsize=(8, 5))
for _, r in rows.iterrows():
    p = json.loads(r["params"])
    kind = r["method"] + (" topdown" if p.get("grouping") == "topdown" else "") + (" relaxed" if p.get("mondrian_cut") == "relaxed" else "")
    color = {"jsreduce": "C0", "jsreduce topdown": "C3"}.get(kind, "C2" if "relaxed" in kind else "C7")
    ax.scatter(r["semi"], r["max_gain_dk"], s=20 + 400 * r["suppression"], color=color, alpha=0.7)
    ax.annotate(label(r).replace("jsreduce ", "").replace("grouping topdown", "td"), (r["semi"], r["max_gain_dk"]), fontsize=6)
ax.axhline(0.05, ls=":", color="k")
ax.axvline(0.3, ls=":", color="k")
ax.set(xlabel="mean average semiperimeter (lower = more useful)", ylabel="max gain, full DK (lower = safer)",
       title="8 x 2,000, attendance 0.5, seed 0 (marker area ~ mean suppression; dotted: goal)")
fig.tight_layout()
fig.savefig(out / "frontier.png", dpi=120)
