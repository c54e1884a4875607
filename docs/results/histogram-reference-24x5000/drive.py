"""The histogram reference at the paper's size (python drive.py SEED): every view released as
one QI-group (``method="histogram"``), the paper's history (24 x 5,000, attendance 0.5, k 5),
attacked by the paper adversary (full DK) and the retrospective one; then the retrospective
attack again with absences ignored (``attendance=None``), its largest gain per lag
(as_of - release) printed beside the modelled one's."""

import json
import sys
from pathlib import Path

import pandas as pd

from dpriv.attack import attack
from dpriv.experiment import run_experiment
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy

seed = int(sys.argv[1])
out = Path(f"seed{seed}")
run_experiment(out, views=24, view_size=5000, attendance=0.5, seed=seed, knowledge=("dk",),
               grid={"histogram": [{}]})
history = pd.read_parquet(out / "data" / "history.parquet")
policy = ReleasePolicy.from_toml(out / "data" / "policy.toml").with_overrides(max_suppression=1.0)
ledger = Ledger(out / "ledgers" / "histogram")
lags = {}
for attendance in (0.5, None):
    r = attack(ledger, history, policy, "dk", adversary="retrospective", deductions=False, attendance=attendance)
    lags[str(attendance)] = r.assign(lag=r.as_of - r.release).groupby("lag")["adversary_gain"].max().round(4).tolist()
(out / "lags.json").write_text(json.dumps(lags) + "\n")
print(json.dumps({k: [v[i] for i in (0, 1, 2, 3, 5, 10, 20)] + [max(v)] for k, v in lags.items()}))
