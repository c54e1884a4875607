"""The top-down + exit-guard family against the baselines (issue 12), one folder of seeds.

Reads FOLDER/seed<S>/frontier.csv (from `dpriv.experiment.run_experiment`): the family's rows
(method jsreduce) and the baselines' rows (the other methods), the latter also from BASELINES
(a frontier.csv with a `seed` column, e.g. ../frontier-8x2000/frontier.csv: the same histories,
the generator is seeded); writes FOLDER/frontier.csv (every row, a `seed` column),
FOLDER/frontier-seed<S>.png (the experiment's own figure) and prints the two Markdown tables of
FOLDER/README.md.

    PYTHONPATH=. python docs/results/exit_frontier.py FOLDER [BASELINES]
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from dpriv.experiment_plots import frontier_figure  # noqa: E402
from frontier_table import dominators, span  # noqa: E402 - beside this script

here = Path(sys.argv[1])
seeds = sorted(int(d.name.removeprefix("seed")) for d in here.glob("seed*") if d.is_dir())
runs = pd.concat([pd.read_csv(here / f"seed{s}" / "frontier.csv").assign(seed=s) for s in seeds])
extra = [pd.read_csv(a).query("method != 'jsreduce'") for a in sys.argv[2:]]
allf = pd.concat([runs, *extra], ignore_index=True).drop_duplicates(["method", "params", "seed"])
allf = allf[allf["seed"].isin(seeds)]
ours, base = allf[allf["method"] == "jsreduce"], allf[allf["method"] != "jsreduce"]
allf.to_csv(here / "frontier.csv", index=False)
for s, g in allf.groupby("seed"):
    with tempfile.TemporaryDirectory() as tmp:  # the figure writer also leaves its outputs record there
        frontier_figure(g, Path(tmp), plt)
        shutil.move(Path(tmp) / "frontier.png", here / f"frontier-seed{s}.png")


def setting(params: str) -> str:
    p = json.loads(params)
    cut = f", cut {p['topdown_cut']}" if "topdown_cut" in p else ""
    rbk = f", rbk_closeness {p['rbk_closeness']}" if "rbk_closeness" in p else ""
    rbk += f", posterior_bound {p['posterior_bound']}" if "posterior_bound" in p else ""
    return f"t {p['t']}, j {p['j']}{cut}{rbk}" + ("" if p.get("exit_values") else ", no guard")


print("| top-down + exit guard | max gain paper | max gain retrospective | max confident share % paper"
      " | mean / max suppression % | mean semiperimeter |\n|---|---|---|---|---|---|")
for params, g in ours.groupby("params", sort=False):
    print(f"| {setting(params)} | {span(g['max_gain_dk'], '.3f')} | {span(g['max_retro_gain'], '.3f')} | "
          f"{span(g['max_share_dk'], '.1f', 100)} | {span(g['suppression'], '.1f', 100)} / "
          f"{span(g['max_suppression'], '.1f', 100)} | {span(g['semi'], '.2f')} |")

# dominance: semiperimeter <=, both max gains <, mean suppression <= 1 %
ok = ours[ours["suppression"] <= 0.01]


def dominating(b: pd.Series) -> set[str]:
    return {setting(p) for p in dominators(ok, b)["params"]}


print(f"\n| baseline | {' | '.join(f'seed {s}' for s in seeds)} | one setting on every seed |")
print("|---" * (len(seeds) + 2) + "|")
n = won = 0
for (method, params), g in base.groupby(["method", "params"], sort=False):
    found = {int(b["seed"]): dominating(b) for _, b in g.iterrows()}
    n, won = n + len(found), won + sum(map(bool, found.values()))
    common = set.intersection(*found.values()) if len(found) == len(seeds) else set()
    cells = ["; ".join(sorted(found[s])) or "-" if s in found else "not run" for s in seeds]
    print(f"| {method} {params} | {' | '.join(cells)} | {'; '.join(sorted(common)) or '-'} |")
print(f"\n{won} of {n} (baseline point, seed) pairs dominated")
