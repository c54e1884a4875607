"""Aggregate the frontier.csv of `dpriv experiment paper` runs (one folder per seed) into
frontier.csv (every seed, a `seed` column) and the Markdown table of README.md.

    python make_table.py SEED_DIR [SEED_DIR ...]   (folders named seed<N>)

A folder without frontier.csv (the seedN/ folders here keep only runs.csv, gains.csv and
retro.csv) has its frontier computed from those three, as the experiment computed it
(`dpriv.experiment.frontier`; the same figures, the columns of today's experiment).
"""

import json
import sys
from pathlib import Path

import pandas as pd

from dpriv.experiment import frontier

here = Path(__file__).parent
frames = []
for d in map(Path, sys.argv[1:]):
    if (d / "frontier.csv").exists():
        f = pd.read_csv(d / "frontier.csv")
    else:
        f = frontier(*(pd.read_csv(d / f"{k}.csv") for k in ("runs", "gains", "retro"))).drop(
            columns="views_sha", errors="ignore"
        )
    frames.append(f.assign(seed=int(d.name.removeprefix("seed"))))
allf = pd.concat(frames, ignore_index=True)
allf.to_csv(here / "frontier.csv", index=False)


def setting(method: str, params: str) -> str:
    p = json.loads(params)
    words = [f"{k} {'+'.join(v) if isinstance(v, list) else v}" for k, v in p.items()]
    return f"{method} " + ", ".join(words)


def span(s: pd.Series, fmt: str, scale: float = 1.0) -> str:
    lo, hi = s.min() * scale, s.max() * scale
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}}-{hi:{fmt}}"


rows = []
for (method, params), g in allf.groupby(["method", "params"], sort=False):
    rows.append(
        "| "
        + " | ".join(
            [
                setting(method, params),
                span(g["max_gain_dk"], ".3f"),
                span(g["max_retro_gain"], ".3f"),
                span(g["max_share_dk"], ".1f", 100) + " / " + span(g["max_retro_share"], ".1f", 100),
                span(g["suppression"], ".1f", 100) + " / " + span(g["max_suppression"], ".1f", 100),
                span(g["semi"], ".2f"),
                span(g["association_loss"], ".3f"),
            ]
        )
        + " |"
    )
head = (
    "| setting | max gain, paper (full DK) | max gain, retrospective (+ deductions) | "
    "max confident share % paper / retro | mean / max suppression % | mean avg. semiperimeter | "
    "association loss |\n|---|---|---|---|---|---|---|"
)
print(head)
print("\n".join(rows))
