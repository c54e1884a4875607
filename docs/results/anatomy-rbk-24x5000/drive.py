"""The runs of this folder, one setting per call (python drive.py SEED T J C [NAME]): the Anatomy
setting of dpriv.experiment.ANATOMY (top-down grouping with the knowledge axis, exact QIs) with
the exit guard and RBK-closeness c, on the paper's history (24 x 5,000, attendance 0.5)."""

import sys

from dpriv.experiment import ANATOMY, EXITS, run_experiment

seed, t, j, c = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
name = sys.argv[5] if len(sys.argv) > 5 else f"seed{seed}-t{t}-j{j}-c{c}"
run_experiment(
    name, views=24, view_size=5000, attendance=0.5, seed=seed, knowledge=("dk",),
    grid={"jsreduce": [{**ANATOMY, "t": t, "j": j, "rbk_closeness": c, "exit_values": EXITS}]},
)
