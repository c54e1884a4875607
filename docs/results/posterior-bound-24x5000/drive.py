"""One setting of the posterior-bound measurement (README.md here): the paper's history of one
seed, released and attacked by `dpriv.experiment.run_experiment`; prints the frontier row.

    PYTHONPATH=. python docs/results/posterior-bound-24x5000/drive.py SEED VIEWS VIEW_SIZE OUT 'PARAMS-JSON'
"""

import json
import sys
import time

from dpriv.experiment import run_experiment

seed, views, size, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
params = json.loads(sys.argv[5])
start = time.time()
tables = run_experiment(
    out,
    views=views,
    view_size=size,
    attendance=0.5,
    seed=seed,
    grid={"jsreduce": [params]},
    knowledge=("dk",),
)
row = tables["frontier"].iloc[0]
cols = [
    "suppression",
    "max_suppression",
    "semi",
    "max_gain_dk",
    "max_share_dk",
    "max_retro_gain",
    "max_retro_share",
]
print(
    json.dumps(
        {
            "seed": seed,
            **params,
            **{c: round(float(row[c]), 4) for c in cols},
            "s": round(time.time() - start),
        }
    )
)
