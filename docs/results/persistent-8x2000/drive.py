"""Persistent-group JS-reduce entries at 8 x 2,000 (attendance 0.5), one entry per call: drive.py KEY [SEED]."""
import shutil, sys, time
from pathlib import Path
from dpriv.experiment import ANATOMY, run_experiment

seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
att = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
out = Path(f"/work/exp/persist/seed{seed}" + ("" if att == 0.5 else f"-att{att}"))
P = {"persistent_groups": True}
ENTRIES = {
    "scan-j8": {"t": 0.5, "j": 0.8, "grouping": "scan", **P},
    "td-j8": {"t": 0.5, "j": 0.8, "grouping": "topdown", **P},
    "scan-j4": {"t": 0.5, "j": 0.4, "grouping": "scan", **P},
    "td-j4": {"t": 0.5, "j": 0.4, "grouping": "topdown", **P},
    "an-t3": {**ANATOMY, "t": 0.3, "j": 0.8, **P},
    "td-j8-off": {"t": 0.5, "j": 0.8, "grouping": "topdown"},
    "scan-j4-off": {"t": 0.5, "j": 0.4, "grouping": "scan"},
    "scan-j8-off": {"t": 0.5, "j": 0.8, "grouping": "scan"},
    "td-j4-off": {"t": 0.5, "j": 0.4, "grouping": "topdown"},
    "an-t3-off": {**ANATOMY, "t": 0.3, "j": 0.8},
}
key = sys.argv[1]
p = ENTRIES[key]
parts = out / "parts"
parts.mkdir(parents=True, exist_ok=True)
t0 = time.time()
sub = out / "work" / key
sub.mkdir(parents=True, exist_ok=True)
(out / "data").mkdir(exist_ok=True)
if not (sub / "data").exists():
    (sub / "data").symlink_to(out / "data")
run_experiment(sub, views=8, view_size=2000, attendance=att, seed=seed, grid={"jsreduce": [p]},
               knowledge=("dk",), say=lambda s: print(f"[{time.time()-t0:7.0f}s] {s}", flush=True))
for k in ("runs", "gains", "retro", "frontier"):
    shutil.copy(sub / f"{k}.csv", parts / f"{key}-{k}.csv")
print("done", time.time() - t0, flush=True)
