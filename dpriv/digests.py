"""Digests of a view's rows: the private content digest that keys the released row order and
the QI-group labels, and the public input fingerprint a ledger records (``input_sha``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv._random import row_hashes
from dpriv.domain_codes import codes
from dpriv.policy import ReleasePolicy


def content_digest(part: pd.DataFrame, policy: ReleasePolicy) -> int:
    """Sum modulo 2**64 of a mixed hash of every row's id, QIs and sensitive value.

    Order-free (partition by partition), the same for pandas and Dask dtypes of the same
    values. It keys the released row order and the QI-group labels (with the seed): they
    cannot be predicted from ids and the seed without every row's sensitive value.
    """
    cols = [
        part[policy.id].to_numpy(),
        *(
            part[q].to_numpy(dtype=np.float64)
            if policy.kind(q) == "numeric"
            else codes(part[q], policy.domains[q])
            for q in policy.qi
        ),
        codes(part[policy.sensitive], policy.sensitive_domain),
    ]
    return int(row_hashes(cols).sum(dtype=np.uint64))


def input_fingerprint(part: pd.DataFrame, policy: ReleasePolicy) -> int:
    """Order-free fingerprint of the policy columns as text (the ledger's ``input_sha``: a
    re-run must bring the same input); sum over partitions modulo 2**64."""
    cols = [policy.id, *policy.qi, policy.sensitive]
    return int(pd.util.hash_pandas_object(part[cols].astype(str), index=False).sum())


def view_digests(view: pd.DataFrame, policy: ReleasePolicy) -> tuple[int, int]:
    """(:func:`content_digest`, :func:`input_fingerprint`) of a view; (0, 0) when its values
    cannot be hashed (bad rows: validation refuses the view anyway)."""
    try:
        return content_digest(view, policy), input_fingerprint(view, policy)
    except (TypeError, ValueError):
        return 0, 0
