"""Exit-channel measurements at 8 x 2,000 (attendance 0.5), one entry per call:
python drive.py KEY SEED [EXTRA_JSON [OUT]], e.g. drive.py js 0 '{"exit_values": ["deceased", "discharged"]}'."""

import json
import shutil
import sys
import time
from pathlib import Path

from dpriv.adversary.exits import exit_deductions
from dpriv.datasets import medical_history
from dpriv.experiment import ANATOMY, run_experiment, setting_policy
from dpriv.experiment_files import setting_name
from dpriv.policy import ReleasePolicy

seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
out = Path(sys.argv[4] if len(sys.argv) > 4 else f"exit-runs/seed{seed}")
EXTRA = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
ENTRIES = {
    # grouping explicit: the policy that `dpriv generate medical` writes now groups top-down
    "js": ("jsreduce", {"t": 0.5, "j": 0.8, "grouping": "scan"}),
    "td": ("jsreduce", {"t": 0.5, "j": 0.8, "grouping": "topdown"}),
    "an": ("jsreduce", {**ANATOMY, "t": 0.3, "j": 0.8}),
    "bt": ("mondrian-bt", {"bt_t": 0.15}),
}
key = sys.argv[1]
method, p = ENTRIES[key]
p = {**p, **EXTRA}
tag = key + "".join(f"-{k}{v}" for k, v in EXTRA.items())
parts = out / "parts"
parts.mkdir(parents=True, exist_ok=True)
t0 = time.time()
sub = out / "work" / tag
sub.mkdir(parents=True, exist_ok=True)
(out / "data").mkdir(exist_ok=True)
if not (sub / "data").exists():
    (sub / "data").symlink_to(out / "data")
run_experiment(
    sub,
    views=8,
    view_size=2000,
    attendance=0.5,
    seed=seed,
    grid={method: [p]},
    knowledge=("dk",),
    say=lambda s: print(f"[{time.time() - t0:7.0f}s] {s}", flush=True),
)
for k in ("runs", "gains", "retro", "frontier"):
    shutil.copy(sub / f"{k}.csv", parts / f"{tag}-{k}.csv")
mh = medical_history(8, 2000, attendance=0.5, seed=seed)
base = ReleasePolicy.from_toml(sub / "data" / "policy.toml").with_overrides(max_suppression=1.0)
pol = setting_policy(base, p)
a = exit_deductions(sub / "ledgers" / setting_name(method, p), mh.history, pol, attendance=0.5)
a.insert(0, "entry", tag)
a.to_csv(parts / f"{tag}-exit.csv", index=False)
print(a[a.as_of == a.as_of.max()].to_string(), flush=True)
print("done", time.time() - t0, flush=True)
