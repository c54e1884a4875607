"""The privacy-utility frontier of `dpriv experiment paper` runs, one folder of seeds (issue 12).

Reads FOLDER/seed<S>/ (one `dpriv experiment paper --seed S` run each): its frontier.csv, or,
where a folder keeps only runs.csv, gains.csv and retro.csv, the frontier computed from them as
the experiment computes it (`dpriv.experiment.frontier`). Writes FOLDER/frontier.csv (every
seed's rows, a `seed` column) and prints the two Markdown tables of FOLDER/README.md: every
setting's figures as the range over the seeds, then, for each baseline point (mondrian-l, -t,
-bt) and seed, the JS-reduce settings that dominate it: mean suppression <= 1 %, mean average
semiperimeter no larger, and a lower largest gain against both the paper adversary (full DK) and
the retrospective one.

    PYTHONPATH=. python docs/results/frontier_table.py FOLDER
"""

import json
import sys
from pathlib import Path

import pandas as pd

from dpriv.experiment import frontier

BASELINES = ("mondrian-l", "mondrian-t", "mondrian-bt")


def seed_frontier(d: Path) -> pd.DataFrame:
    if (d / "frontier.csv").exists():
        f = pd.read_csv(d / "frontier.csv")
    else:
        tables = (pd.read_csv(d / f"{k}.csv") for k in ("runs", "gains", "retro"))
        f = frontier(*tables).drop(columns="views_sha", errors="ignore")
    return f.assign(seed=int(d.name.removeprefix("seed")))


def setting(method: str, params: str) -> str:
    p = json.loads(params)
    words = [f"{k} {'+'.join(v) if isinstance(v, list) else v}" for k, v in p.items()]
    return " ".join([method, ", ".join(words)]).strip()


def span(s: pd.Series, fmt: str, scale: float = 1.0) -> str:
    lo, hi = f"{s.min() * scale:{fmt}}", f"{s.max() * scale:{fmt}}"
    return lo if lo == hi else f"{lo}-{hi}"


def settings_table(allf: pd.DataFrame) -> str:
    rows = [
        "| setting | max gain, paper (full DK) | max gain, retrospective (+ deductions) | "
        "max confident share % paper / retro | mean / max suppression % | mean avg. semiperimeter | "
        "association loss |",
        "|---|---|---|---|---|---|---|",
    ]
    for (method, params), g in allf.groupby(["method", "params"], sort=False):
        cells = [
            setting(method, params),
            span(g["max_gain_dk"], ".3f"),
            span(g["max_retro_gain"], ".3f"),
            span(g["max_share_dk"], ".1f", 100) + " / " + span(g["max_retro_share"], ".1f", 100),
            span(g["suppression"], ".1f", 100) + " / " + span(g["max_suppression"], ".1f", 100),
            span(g["semi"], ".2f"),
            span(g["association_loss"], ".3f"),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def dominators(ours: pd.DataFrame, b: pd.Series) -> pd.DataFrame:
    """The rows of ``ours`` (settings with mean suppression <= 1 %) that dominate the baseline row
    ``b`` on its seed: semiperimeter no larger, both largest gains lower."""
    return ours[
        (ours["seed"] == b["seed"])
        & (ours["semi"] <= b["semi"])
        & (ours["max_gain_dk"] < b["max_gain_dk"])
        & (ours["max_retro_gain"] < b["max_retro_gain"])
    ]


def dominance_table(allf: pd.DataFrame) -> str:
    anatomy = [json.loads(p).get("release_format") == "anatomy" for p in allf["params"]]
    allf = allf.assign(anatomy=anatomy)
    ours = allf[(allf["method"] == "jsreduce") & (allf["suppression"] <= 0.01)]
    n_anatomy = allf[allf["anatomy"]]["params"].nunique()
    rows = [
        "| baseline | seed | dominated by (generalized) | dominated by (Anatomy) |",
        "|---|---|---|---|",
    ]
    won = n = 0
    for _, b in allf[allf["method"].isin(BASELINES)].iterrows():
        o = dominators(ours, b)
        gen = [setting("", p) for p in o[~o["anatomy"]]["params"]]
        ana = int(o["anatomy"].sum())
        n, won = n + 1, won + bool(gen or ana)
        rows.append(
            f"| {b['method']} {b['params']} | {b['seed']} | {'; '.join(gen) or '-'} | {ana} of {n_anatomy} |"
        )
    return "\n".join(rows) + f"\n\n{won} of {n} (baseline point, seed) pairs dominated"


if __name__ == "__main__":
    folder = Path(sys.argv[1])
    seeds = sorted(d for d in folder.glob("seed*") if d.is_dir())
    allf = pd.concat([seed_frontier(d) for d in seeds], ignore_index=True)
    allf.to_csv(folder / "frontier.csv", index=False)
    print(settings_table(allf))
    print()
    print(dominance_table(allf))
