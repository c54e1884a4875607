"""How many present respondents stay in their persistent group, per release (spy on plan_units)."""
import shutil, sys
import numpy as np
import dpriv.generalize as g
from dpriv.policy import ReleasePolicy
from dpriv.datasets import medical_history
from dpriv.release import release_history
orig = g.plan_units
def spy(units, policy, counts):
    p = orig(units, policy, counts)
    from dpriv.criteria import criteria_for
    from dpriv.divergence import js_from_sums
    from dpriv.anonymity.jsreduce import unflat_stats
    crit = {c.name: c for c in criteria_for(policy, "jsreduce", counts)}
    if len(units):
        st = unflat_stats(units.drop(columns=["_label", "_hkey", "_tie", "_mintie"]), np.arange(len(units)))
        big = st.sizes >= 10
        t = np.array([crit["t"].holds_counts(c) for c in st.counts])
        js = np.array([js_from_sums(st.sum_p[i], float(st.sum_h[i]), int(st.sizes[i]), 2.0) for i in range(len(units))])
        print(f"  units>=10: {big.sum()}, t ok {t[big].mean():.2f}, js ok {(js[big] <= policy.j).mean():.2f}, median size {np.median(st.sizes)}")
    kept = p.units["_label"].to_numpy() >= 0
    sizes = units.set_index("_label")["sizes"].reindex(p.units["persist_group"]).to_numpy()
    print(f"units {len(units)} kept {kept.sum()} -> groups {p.n_groups}; rows in units {sizes.sum()} kept {sizes[kept].sum()} of {counts.sum()}", flush=True)
    return p
g.plan_units = spy
extra = eval(sys.argv[1]) if len(sys.argv) > 1 else {}
att = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
mh = medical_history(n_views=8, view_size=2000, seed=0, attendance=att)
pol = ReleasePolicy.from_toml("/work/exp/persist/seed0" + ("" if att == 0.5 else f"-att{att}") + "/data/policy.toml", max_suppression=1.0, persistent_groups=True, **{"t": 0.5, "j": 0.8, **extra})
shutil.rmtree(f"/tmp/punits{att}", ignore_errors=True)
led = release_history(mh.history, pol, f"/tmp/punits{att}")
for i in range(1, 9):
    m = led.read_metrics(i); print(i, m["n_groups"], m["suppression_rate"], round(m["average_semiperimeter"], 3))
