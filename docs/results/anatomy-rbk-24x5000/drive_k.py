"""Group size as a lever (python drive_k.py SEED K T J [C]): the Anatomy setting of
dpriv.experiment.ANATOMY with the exit guard, groups of at least K tuples, t T, j J and,
when given, RBK-closeness C, on the paper's history (24 x 5,000, attendance 0.5)."""

import sys

from dpriv.experiment import ANATOMY, EXITS, run_experiment

seed, k, t, j = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
params = {**ANATOMY, "t": t, "j": j, "k": k, "exit_values": EXITS}
if len(sys.argv) > 5:
    params["rbk_closeness"] = float(sys.argv[5])
run_experiment(
    f"seed{seed}-k{k}-t{t}-j{j}" + (f"-c{sys.argv[5]}" if len(sys.argv) > 5 else ""),
    views=24, view_size=5000, attendance=0.5, seed=seed, knowledge=("dk",),
    grid={"jsreduce": [params]},
)
