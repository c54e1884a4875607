"""For each baseline point and seed: the dpriv settings that dominate it (semiperimeter <=,
paper and retrospective max gain <, mean suppression <= 1 %), generalized format and Anatomy."""
import json
from pathlib import Path
import pandas as pd

f = pd.read_csv(Path(__file__).parent / "frontier.csv")
f["anatomy"] = [json.loads(p).get("release_format") == "anatomy" for p in f["params"]]
base = f[f["method"] != "jsreduce"]
ours = f[(f["method"] == "jsreduce") & (f["suppression"] <= 0.01)]
print("| baseline | seed | dominated by (generalized) | dominated by (Anatomy) |\n|---|---|---|---|")
for _, b in base.iterrows():
    o = ours[(ours["seed"] == b["seed"]) & (ours["semi"] <= b["semi"]) & (ours["max_gain_dk"] < b["max_gain_dk"])
             & (ours["max_retro_gain"] < b["max_retro_gain"])]
    gen = o[~o["anatomy"]]["params"].tolist()
    ana = o[o["anatomy"]]["params"].tolist()
    print(f"| {b['method']} {b['params']} | {b['seed']} | {'; '.join(gen) or '-'} | {len(ana)} of 4 |")
