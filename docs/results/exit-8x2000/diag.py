"""Per release: what the exit guard did: python diag.py js|td|an POLICY_TOML (the run's data/policy.toml)."""

import shutil
import sys

import dpriv.exit_guard as eg
import dpriv.generalize as gen
from dpriv.datasets import medical_history
from dpriv.experiment import ANATOMY
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

log = []
orig = eg.guard_exits


def spy(*a, **k):
    r = orig(*a, **k)
    log.append((r.n_one_kind, r.n_merged, r.n_moved, r.n_swapped, r.n_suppressed))
    return r


gen.guard_exits = spy
key = sys.argv[1]
params = {
    "js": {"t": 0.5, "j": 0.8},
    "td": {"t": 0.5, "j": 0.8, "grouping": "topdown"},
    "an": {**ANATOMY, "t": 0.3, "j": 0.8},
}[key]
mh = medical_history(8, 2000, attendance=0.5, seed=0)
base = ReleasePolicy.from_toml(sys.argv[2]).with_overrides(max_suppression=1.0)
pol = base.with_overrides(**params, exit_values=["deceased", "discharged"])
shutil.rmtree(f"/tmp/diag-{key}", ignore_errors=True)
led = release_history(mh.history, pol, f"/tmp/diag-{key}")
for i, x in enumerate(log, 1):
    print(
        key,
        "release",
        i,
        "one-kind %d merged %d moved %d swapped %d suppressed %d" % x,
        "supp rate",
        led.read_metrics(i)["suppression_rate"],
    )
