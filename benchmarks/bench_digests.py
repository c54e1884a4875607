"""The digests a release computes, each against the row-by-row formula it must equal, in the
same process (best of 3 each): the ledger's input fingerprint (``input_sha``,
:func:`dpriv.digests.input_fingerprint`; pandas' row hashes of the policy columns as text) and
the released rows' digest (:func:`dpriv.released.rows_digest`; text hashed as Python objects).

    python benchmarks/bench_digests.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
from types import SimpleNamespace

import numpy as np
import pandas as pd
from _timing import best_of

from dpriv._random import row_hashes
from dpriv.digests import input_fingerprint
from dpriv.released import rows_digest


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
    released = pd.DataFrame(
        {
            "qi_group": view["respondent_id"] // 5,
            "age_min": view["age"] - 3,
            "age_max": view["age"] + 3,
            "exam_result": view["exam_result"],
        }
    )
    plain_s, plain = best_of(lambda: row_by_row_digest(released), 3)
    ours_s, ours = best_of(lambda: rows_digest(released), 3)
    assert plain == ours, "released-row digests differ"
    print(
        f"released-row digest of {args.rows} rows: text as objects {plain_s:.3f} s, "
        f"distinct texts {ours_s:.3f} s: {plain_s / ours_s:.2f}x (same value)"
    )


def row_by_row_digest(part: pd.DataFrame) -> int:
    """:func:`rows_digest` with every text cell a Python object (its formula before)."""
    cols = [
        part[c].to_numpy(dtype=np.int64 if pd.api.types.is_integer_dtype(part[c].dtype) else object)
        for c in sorted(part.columns)
    ]
    return int(row_hashes(cols).sum(dtype=np.uint64))


if __name__ == "__main__":
    main()
