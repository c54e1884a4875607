"""Where a release's confident tuples come from (issue 12): the release, or what came before it.

For each release of a ledger, the paper's adversary (full DK, `dpriv.attack.attack_steps`) gives
every kept tuple a prior (its revised background knowledge RBK before this release, built from the
releases before it and the model) and a posterior (after this release). A tuple is *confident*
when its posterior on the true value is >= 0.9 (the tail-risk threshold of `dpriv attack`). This
script splits the confident share into the tuples that the prior alone already put at >= 0.9 and
the ones this release pushed over; next to the gain (E10) it prints the same mean with the prior
in place of the posterior (how much of the gain the adversary held before the release).

    PYTHONPATH=. python docs/results/confident_sources.py OUT.csv SEED=LEDGER,HISTORY,POLICY ...
"""

import sys

import numpy as np
import pandas as pd

from dpriv.adversary.tail import CONFIDENT
from dpriv.attack import attack_steps
from dpriv.policy import ReleasePolicy


def sources(ledger: str, history: str, policy_file: str) -> pd.DataFrame:
    """One row per release: shares of the kept tuples (in [0, 1]) and the two mean gains."""
    policy = ReleasePolicy.from_toml(policy_file)
    rows = []
    for step in attack_steps(ledger, pd.read_parquet(history), policy, "dk"):
        n = step.s_true.size
        if n == 0:
            continue
        row = step.row()  # gain, confident share and their prior forms, as `dpriv attack` writes them
        confident = step.posteriors[np.arange(n), step.s_true] >= CONFIDENT
        before = step.priors[np.arange(n), step.s_true] >= CONFIDENT
        rows.append(
            {
                **{c: row[c] for c in ("release", "n_tuples", "confident_share", "prior_confident_share")},
                "confident_from_prior": (confident & before).mean(),
                "confident_from_release": (confident & ~before).mean(),
                **{c: row[c] for c in ("adversary_gain", "prior_gain")},
            }
        )
    return pd.DataFrame(rows)


if __name__ == "__main__":
    frames = []
    for arg in sys.argv[2:]:
        seed, files = arg.split("=", 1)
        frames.append(sources(*files.split(",")).assign(seed=int(seed)))
    table = pd.concat(frames, ignore_index=True)
    table.round(6).to_csv(sys.argv[1], index=False)
    summary = table.groupby("seed").agg(
        max_confident=("confident_share", "max"),
        max_prior_confident=("prior_confident_share", "max"),
        max_from_release=("confident_from_release", "max"),
        mean_from_prior=("confident_from_prior", "mean"),
        mean_from_release=("confident_from_release", "mean"),
        max_gain=("adversary_gain", "max"),
        max_prior_gain=("prior_gain", "max"),
    )
    print((summary * [100, 100, 100, 100, 100, 1, 1]).round(3).to_string())  # shares in %
