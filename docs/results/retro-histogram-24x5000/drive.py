"""The retrospective histogram level (histogram_gain per (release, as_of)) next to the
retrospective gain of four settings on the paper's history (python drive.py SEED)."""

import sys

from dpriv.experiment import ANATOMY, EXITS, run_experiment

seed = int(sys.argv[1])
grid = {
    "jsreduce": [
        {"grouping": "topdown", "t": 0.45, "j": 1.5, "exit_values": EXITS},
        {**ANATOMY, "t": 0.4, "j": 0.7, "rbk_closeness": 0.3, "exit_values": EXITS},
    ],
    "mondrian-t": [{"t": 0.2}],
    "histogram": [{}],
}
run_experiment(f"seed{seed}", views=24, view_size=5000, attendance=0.5, seed=seed, knowledge=("dk",), grid=grid)
