"""Table of docs/results/exit-8x2000 from the runs of drive.py (seed 0): python make_table.py OUTDIR."""
import glob, json, sys
from pathlib import Path
import pandas as pd
from dpriv.adversary.exits import exit_deductions
from dpriv.datasets import medical_history
from dpriv.experiment import setting_policy
from dpriv.policy import ReleasePolicy

root = Path(sys.argv[2] if len(sys.argv) > 2 else "/work/exp/exit/seed0")
out = Path(sys.argv[1])
mh = medical_history(8, 2000, attendance=0.5, seed=int(str(root).rstrip("/")[-1]))
rows, per = [], []
for work in sorted((root / "work").iterdir()):
    base = ReleasePolicy.from_toml(work / "data" / "policy.toml").with_overrides(max_suppression=1.0)
    front = pd.read_csv(work / "frontier.csv").iloc[0]
    runs = pd.read_csv(work / "runs.csv")
    params = json.loads(front["params"])
    led = next((work / "ledgers").iterdir())
    pol = setting_policy(base, params)
    ex = exit_deductions(led, mh.history, pol, attendance=0.5)
    ex.insert(0, "entry", work.name)
    per.append(ex)
    last = ex[ex.as_of == ex.as_of.max()]
    gm = lambda c: int(ex.groupby("release")[c].max().sum())  # noqa: E731
    rows.append({
        "entry": work.name, "method": front["method"], "params": front["params"],
        "n_exit (sum over releases, max over as_of)": gm("n_exit"),
        "max n_exit per release": int(ex.n_exit.max()),
        "n_certain (sum)": gm("n_certain"), "max n_certain per release": int(ex.n_certain.max()),
        "n_presence": int(ex.n_presence.max()), "n_exited (sum)": gm("n_exited"),
        "n_exit_worst (sum)": int(last.n_exit_worst.sum()), "true exits (sum)": int(last.n_true_exit.sum()),
        "max gain paper": round(front["max_gain_dk"], 3), "max gain retro": round(front["max_retro_gain"], 3),
        "max share paper": round(front["max_share_dk"], 4), "max share retro": round(front["max_retro_share"], 4),
        "mean suppression": round(front["suppression"], 4), "max suppression": round(front["max_suppression"], 4),
        "mean semi": round(front["semi"], 3),
        "groups (mean)": round(runs["groups"].mean(), 1),
    })
out.mkdir(parents=True, exist_ok=True)
t = pd.DataFrame(rows)
t.to_csv(out / "summary.csv", index=False)
pd.concat(per).to_csv(out / "exit.csv", index=False)
for name in ("runs", "gains", "retro", "frontier"):
    pd.concat([pd.read_csv(w / f"{name}.csv").assign(entry=w.name) for w in sorted((root / "work").iterdir())]).to_csv(out / f"{name}.csv", index=False)
pd.set_option("display.width", 250)
print(t.drop(columns=["params"]).to_string(index=False))
