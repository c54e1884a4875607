"""Knowledge-aware cut choice inside the top-down split (issue 12, direction 2), 8 x 2,000.

Run:   PYTHONPATH=. python docs/results/topdown_cut.py run OUT SEED VARIANT [VARIANT ...] [T:J,T:J]
       (one `dpriv.experiment.run_experiment` per variant into OUT/seedS/VARIANT/: views 8,
       view size 2,000, attendance 0.5, knowledge ("dk",), every setting of SETTINGS)
Big:   PYTHONPATH=. python docs/results/topdown_cut.py big OUT T J VARIANT
       (24 views of 5,000, seed 0, one setting, into OUT/VARIANT_tT_jJ/)
Table: PYTHONPATH=. python docs/results/topdown_cut.py table OUT [BASELINES]
       (reads OUT/**/seed*/*/frontier.csv, writes OUT/frontier.csv with `seed` and `variant`
       columns, frontier-cut.png, and prints the Markdown tables of OUT/README.md; with
       BASELINES, e.g. docs/results/frontier-8x2000/frontier.csv, also which baseline points
       each cut rule dominates)

Every setting is JS-reduce, `grouping = "topdown"`, k 5, the exit guard on
(`exit_values = dpriv.experiment.EXITS`); a variant adds the policy fields of VARIANTS.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from dpriv.experiment import EXITS, run_experiment

#: (t, j) measured for every variant.
SETTINGS = [(t, j) for j in (1.5, 1.0) for t in (0.35, 0.45, 0.6)]
#: variant -> the policy fields it adds to the top-down + exit-guard setting.
VARIANTS = {
    "median": {},
    "slack": {"topdown_cut": "slack"},
    "slack-pc": {"topdown_cut": "slack", "topdown_pc": True},
    "median-pk": {"prior_key": True},
    "slack-pk": {"topdown_cut": "slack", "prior_key": True},
    "box": {"topdown_cut": "box"},
    "slack-widest": {"topdown_cut": "slack-widest"},
    "gini": {"topdown_cut": "gini"},
    "gini-pc": {"topdown_cut": "gini", "topdown_pc": True},
    "median-bounds": {"posterior_bound": 0.9, "retro_posterior_bound": 0.9, "retro_attendance": 0.5},
    "gini-bounds": {
        "topdown_cut": "gini",
        "posterior_bound": 0.9,
        "retro_posterior_bound": 0.9,
        "retro_attendance": 0.5,
    },
    "gini-pc-bounds": {
        "topdown_cut": "gini",
        "topdown_pc": True,
        "posterior_bound": 0.9,
        "retro_posterior_bound": 0.9,
        "retro_attendance": 0.5,
    },
}


def grid(variant: str, settings=SETTINGS) -> dict[str, list[dict]]:
    extra = VARIANTS[variant]
    return {
        "jsreduce": [
            {"t": t, "j": j, "grouping": "topdown", "exit_values": EXITS, **extra} for t, j in settings
        ]
    }


def run(out: Path, seed: int, variants: list[str], settings=SETTINGS) -> None:
    for v in variants:
        run_experiment(
            out / f"seed{seed}" / v,
            views=8,
            view_size=2000,
            attendance=0.5,
            seed=seed,
            grid=grid(v, settings),
            knowledge=("dk",),
            say=lambda msg, v=v: print(f"seed {seed} {v}: {msg}", flush=True),
        )


def table(out: Path) -> pd.DataFrame:
    rows = []
    for f in sorted(out.glob("**/seed*/*/frontier.csv")):
        fr = pd.read_csv(f)
        fr["seed"] = int(f.parent.parent.name[4:])
        fr["variant"] = f.parent.name
        p = fr["params"].map(json.loads)
        fr["t"], fr["j"] = p.map(lambda d: d["t"]), p.map(lambda d: d["j"])
        rows.append(fr)
    front = pd.concat(rows, ignore_index=True)
    front.to_csv(out / "frontier.csv", index=False)
    return front


def span(v: pd.Series, fmt: str, scale: float = 1.0) -> str:
    lo, hi = format(v.min() * scale, fmt), format(v.max() * scale, fmt)
    return lo if lo == hi else f"{lo}-{hi}"


def show(front: pd.DataFrame) -> None:
    order = list(VARIANTS)
    print("| t | j | cut | seeds | max gain paper | max gain retrospective | mean / max suppression % "
          "| mean semiperimeter |\n|---|---|---|---|---|---|---|---|")
    for (j, t), g in front.groupby(["j", "t"], sort=False):
        for v in sorted(g["variant"].unique(), key=order.index):
            h = g[g["variant"] == v]
            seeds = ",".join(map(str, sorted(h["seed"])))
            print(f"| {t} | {j} | {v} | {seeds} | {span(h['max_gain_dk'], '.3f')} | "
                  f"{span(h['max_retro_gain'], '.3f')} | {span(h['suppression'], '.1f', 100)} / "
                  f"{span(h['max_suppression'], '.1f', 100)} | {span(h['semi'], '.3f')} |")
    # per seed against the median cut at the same (t, j): semiperimeter and gains
    base = front[front["variant"] == "median"].set_index(["seed", "t", "j"])
    rows, wins = [], {}
    for _, r in front[front["variant"] != "median"].sort_values(["variant", "j", "t", "seed"]).iterrows():
        key = (r["seed"], r["t"], r["j"])
        if key not in base.index:
            continue
        b = base.loc[key]
        win = (r["semi"] < b["semi"]) and (r["max_gain_dk"] <= b["max_gain_dk"]) and (
            r["max_retro_gain"] <= b["max_retro_gain"]) and r["suppression"] <= max(b["suppression"], 0.01)
        wins.setdefault(r["variant"], []).append((r["t"], r["j"], r["seed"], win))
        rows.append(f"| {r['variant']} | {r['t']} | {r['j']} | {r['seed']} | "
                    f"{b['semi']:.3f} -> {r['semi']:.3f} | {b['max_gain_dk']:.3f} -> "
                    f"{r['max_gain_dk']:.3f} | {b['max_retro_gain']:.3f} -> "
                    f"{r['max_retro_gain']:.3f} | {'yes' if win else 'no'} |")
    print("\n| cut | (setting, seed) pairs won against the median cut | settings won on every seed run |\n"
          "|---|---|---|")
    for v, w in wins.items():
        by = pd.DataFrame(w, columns=["t", "j", "seed", "win"]).groupby(["t", "j"])["win"].all()
        every = "; ".join(f"t {t}, j {j}" for (t, j), ok in by.items() if ok) or "-"
        print(f"| {v} | {sum(x[3] for x in w)} of {len(w)} | {every} |")
    print("\n| cut | t | j | seed | semi (median -> cut) | paper gain | retrospective gain | wins |\n"
          "|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


def at_same_semi(front: pd.DataFrame) -> None:
    """Each variant's point against the median cut's curve of the same seed and j: the median's
    gains interpolated (linearly, in semiperimeter, between its t points) at the variant's
    semiperimeter; below both = a better frontier at that point (outside the median's range: -)."""
    print("\n| cut | t | j | seed | semi | paper gain (median's at that semi) | "
          "retrospective gain (median's at that semi) | below the median's curve |")
    print("|---" * 8 + "|")
    med = front[front["variant"] == "median"]
    for _, r in front[front["variant"] != "median"].sort_values(["variant", "j", "t", "seed"]).iterrows():
        m = med[(med["seed"] == r["seed"]) & (med["j"] == r["j"])].sort_values("semi")
        inside = len(m) > 1 and m["semi"].min() <= r["semi"] <= m["semi"].max()
        gp = np.interp(r["semi"], m["semi"], m["max_gain_dk"]) if inside else np.nan
        gr = np.interp(r["semi"], m["semi"], m["max_retro_gain"]) if inside else np.nan
        below = "-" if not inside else ("yes" if r["max_gain_dk"] < gp and r["max_retro_gain"] < gr else "no")
        gp, gr = ("-" if np.isnan(v) else format(v, ".3f") for v in (gp, gr))
        print(f"| {r['variant']} | {r['t']} | {r['j']} | {r['seed']} | {r['semi']:.3f} | "
              f"{r['max_gain_dk']:.3f} ({gp}) | {r['max_retro_gain']:.3f} ({gr}) | {below} |")


def dominance(front: pd.DataFrame, baselines: Path) -> None:
    """Per cut rule: the (baseline point, seed) pairs of ``baselines`` (a frontier.csv with a
    ``seed`` column) that one of its settings dominates on that seed: mean suppression <= 1 %,
    a mean semiperimeter no larger, a lower max gain against both adversaries (as in
    docs/results/exit_frontier.py)."""
    base = pd.read_csv(baselines)
    base = base[(base["method"] != "jsreduce") & base["seed"].isin(front["seed"].unique())]
    order = list(VARIANTS)
    print("\n| cut | (baseline, seed) pairs dominated | which |\n|---|---|---|")
    for v in sorted(front["variant"].unique(), key=order.index):
        ok = front[(front["variant"] == v) & (front["suppression"] <= 0.01)]
        seeds = set(front.loc[front["variant"] == v, "seed"])
        hits, n = [], 0
        for _, b in base[base["seed"].isin(seeds)].iterrows():
            n += 1
            o = ok[(ok["seed"] == b["seed"]) & (ok["semi"] <= b["semi"])]
            o = o[(o["max_gain_dk"] < b["max_gain_dk"]) & (o["max_retro_gain"] < b["max_retro_gain"])]
            if len(o):
                hits.append(f"{b['method']} {b['params']} seed {b['seed']}")
        print(f"| {v} | {len(hits)} of {n} | {'; '.join(hits)} |")


def plot(front: pd.DataFrame, out: Path) -> None:
    """frontier-cut.png: semiperimeter against the largest gain per adversary, one line per
    (cut, seed, j) along t; the issue's goals dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpriv.experiment_plots import GOALS

    panels = [("max_gain_dk", "paper adversary", GOALS["paper"]),
              ("max_retro_gain", "retrospective adversary", GOALS["retrospective"])]
    fig, axes = plt.subplots(1, 2, figsize=(13, 5))
    colors = dict(zip(VARIANTS, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    for ax, (col, who, goal) in zip(axes, panels):
        for (v, seed, j), g in front.groupby(["variant", "seed", "j"]):
            g = g.sort_values("t")
            ax.plot(g["semi"], g[col], marker="o" if j == 1.5 else "s", color=colors[v], alpha=0.7,
                    label=f"{v} j {j}" if seed == front["seed"].min() else None)
        ax.axhline(goal, color="grey", linestyle=":", linewidth=1)
        ax.axvline(GOALS["semi"], color="grey", linestyle=":", linewidth=1)
        ax.set(xlabel="mean average semiperimeter", ylabel=f"{col} (max over releases)", title=who)
        ax.legend(fontsize=7)
    fig.suptitle("Top-down cut rules along t (0.35-0.6), seeds 0-2: one line per cut, seed and j")
    fig.tight_layout()
    fig.savefig(out / "frontier-cut.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    cmd, out = sys.argv[1], Path(sys.argv[2])
    if cmd == "big":  # big OUT T J VARIANT: the paper's size, seed 0, one setting
        t, j, v = float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
        run_experiment(out / f"{v}_t{t}_j{j}", views=24, view_size=5000, attendance=0.5, seed=0,
                       grid=grid(v, [(t, j)]), knowledge=("dk",))
    elif cmd == "run":  # a last argument "t:j,t:j" replaces SETTINGS
        args = sys.argv[4:]
        tjs = SETTINGS
        if ":" in args[-1]:
            tjs = [tuple(map(float, x.split(":"))) for x in args.pop().split(",")]
        run(out, int(sys.argv[3]), args, tjs)
    else:
        front = table(out)
        show(front)
        at_same_semi(front)
        if len(sys.argv) > 3:  # the baselines' frontier.csv (with a seed column)
            dominance(front, Path(sys.argv[3]))
        plot(front, out)
