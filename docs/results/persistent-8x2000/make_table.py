"""Merge the per-entry CSVs of /work/exp/persist/drive.py into runs/gains/retro/frontier.csv here
and print the README table: python make_table.py PARTS_DIR [PARTS_DIR ...] (one per code variant,
given as DIR=LABEL), baseline rows from ../retrospective-8x2000/frontier.csv."""

import json
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
BASE = [
    ("jsreduce", '{"t": 0.5, "j": 0.8, "defender": "dk"}'),
    ("mondrian-bt", '{"bt_t": 0.15}'),
    ("mondrian-t", '{"t": 0.3}'),
    ("jsreduce", '{"t": 1.0, "j": 0.4}'),
]


def load(spec):
    folder, _, variant = spec.partition("=")
    out = {}
    for kind in ("runs", "gains", "retro", "frontier"):
        frames = []
        for f in sorted(Path(folder).glob(f"*-{kind}.csv")):
            frames.append(pd.read_csv(f).assign(variant=variant, entry=f.name[: -len(f"-{kind}.csv")]))
        out[kind] = pd.concat(frames, ignore_index=True)
    return out


tables = [load(s) for s in sys.argv[1:]]
KINDS = ("runs", "gains", "retro", "frontier")
merged = {k: pd.concat([t[k] for t in tables], ignore_index=True) for k in KINDS}
base = pd.read_csv(HERE.parent / "retrospective-8x2000" / "frontier.csv")
base = pd.concat([base[(base.method == m) & (base.params == p)] for m, p in BASE]).assign(
    variant="measured before (retrospective-8x2000)", entry="baseline"
)
merged["frontier"] = pd.concat([merged["frontier"], base], ignore_index=True)
for k, f in merged.items():
    f.to_csv(HERE / f"{k}.csv", index=False)
fr = merged["frontier"]
print(
    "| variant | option | method, parameters | max gain paper | max gain retro | "
    "confident share paper / retro | mean / max suppression | mean semiperimeter |"
)
print("|---|---|---|---|---|---|---|---|")
for _, r in fr.iterrows():
    p = json.loads(r.params)
    on = "persistent" if p.get("persistent_groups") else "off"
    hidden = ("persistent_groups", "topdown_pc", "defender")
    p = ", ".join(f"{k} {v}" for k, v in p.items() if k not in hidden)
    print(
        f"| {r.variant} | {on} | {r.method} {p} | {r.max_gain_dk:.3f} | {r.max_retro_gain:.3f} | "
        f"{100 * r.max_share_dk:.2f} % / {100 * r.max_retro_share:.2f} % | "
        f"{100 * r.suppression:.2f} % / {100 * r.max_suppression:.1f} % | {r.semi:.2f} |"
    )
