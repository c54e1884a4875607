"""The two parts of the adversary gain (E10) per release (docs/algorithms.md, "What the grouping
decides in (E10)"): the knowledge term (the mean prior on the true value, from `dpriv attack`'s
prior_gain) and B, the mean frequency of a tuple's own value in its QI-group, which only the
grouping decides; B at t = 0 is the sum of the squared frequencies of the released view.

    PYTHONPATH=. python docs/results/gini-cut/gain_parts.py LEDGER GAIN_CSV SENSITIVE

GAIN_CSV: the output of `dpriv attack LEDGER --history H --knowledge dk --out GAIN_CSV`.
"""

import sys

import pandas as pd

ledger, gain, sensitive = sys.argv[1], pd.read_csv(sys.argv[2]).set_index("release"), sys.argv[3]
rows = []
for i in gain.index:
    view = pd.read_parquet(f"{ledger}/releases/{i}/view.parquet", columns=["qi_group", sensitive])
    counts = view.groupby(["qi_group", sensitive], observed=True).size()
    sizes = counts.groupby(level=0).transform("sum")
    b = float((counts**2 / sizes).sum() / len(view))
    b0 = float((view[sensitive].value_counts(normalize=True) ** 2).sum())
    prior = float(gain.loc[i, "prior_gain"])
    rows.append((i, prior + b, b, b0, prior, float(gain.loc[i, "adversary_gain"])))
cols = ["release", "knowledge term", "B", "B at t = 0", "prior gain", "adversary gain"]
print(pd.DataFrame(rows, columns=cols).round(4).to_string(index=False))
