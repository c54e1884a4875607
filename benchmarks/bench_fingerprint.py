"""The ledger's input fingerprint (``input_sha``) of a view: dpriv's per-distinct-value texts
(:func:`dpriv.digests.input_fingerprint`) against the plain formula it must equal, pandas'
row hashes of the policy columns as text, in the same process (best of 3 each).

    python benchmarks/bench_fingerprint.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import numpy as np
import pandas as pd
from _timing import best_of

from dpriv.digests import input_fingerprint


def medical_like(n: int, seed: int = 0) -> pd.DataFrame:
    """A view shaped like the generated medical one: unique int ids, three int QIs, text S."""
    rng = np.random.default_rng(seed)
    stages = np.array(["healthy", "stage 1", "stage 2", "stage 3", "discharged", "deceased"], dtype=object)
    return pd.DataFrame(
        {
            "respondent_id": rng.permutation(4 * n)[:n].astype(np.int64),
            "age": rng.integers(18, 90, n),
            "gender": rng.integers(0, 2, n),
            "weight": rng.integers(40, 150, n),
            "exam_result": pd.Series(rng.choice(stages, n), dtype="string"),
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    view = medical_like(args.rows)
    policy = SimpleNamespace(id="respondent_id", qi=["age", "gender", "weight"], sensitive="exam_result")
    cols = [policy.id, *policy.qi, policy.sensitive]
    plain_s, plain = best_of(
        lambda: int(pd.util.hash_pandas_object(view[cols].astype(str), index=False).sum()), 3
    )
    ours_s, ours = best_of(lambda: input_fingerprint(view, policy), 3)
    assert plain == ours, "fingerprints differ"
    print(
        f"input fingerprint of {args.rows} rows: row-by-row texts {plain_s:.3f} s, "
        f"distinct-value texts {ours_s:.3f} s: {plain_s / ours_s:.2f}x (same value)"
    )


if __name__ == "__main__":
    main()
