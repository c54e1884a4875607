"""Digests of a view's rows: the private content digest that keys the released row order and
the QI-group labels, and the public input fingerprint a ledger records (``input_sha``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv._random import row_hashes

try:  # pandas' combination of a row's column hashes, as hash_pandas_object applies it
    from pandas.core.util.hashing import combine_hash_arrays
except ImportError:  # pragma: no cover - a pandas that moved it: input_fingerprint's plain formula
    combine_hash_arrays = None
from dpriv.domain_codes import codes
from dpriv.int_text_hash import int_text_hashes
from dpriv.policy import ReleasePolicy


def content_digest(part: pd.DataFrame, policy: ReleasePolicy, s_codes: np.ndarray | None = None) -> int:
    """Sum modulo 2**64 of a mixed hash of every row's id, QIs and sensitive value.

    Order-free (partition by partition), the same for pandas and Dask dtypes of the same
    values. It keys the released row order and the QI-group labels (with the seed): they
    cannot be predicted from ids and the seed without every row's sensitive value.
    ``s_codes``: the sensitive column's codes in its domain, when the caller has them.
    """
    cols = [
        part[policy.id].to_numpy(),
        *(
            part[q].to_numpy(dtype=np.float64)
            if policy.kind(q) == "numeric"
            else codes(part[q], policy.domains[q])
            for q in policy.qi
        ),
        codes(part[policy.sensitive], policy.sensitive_domain) if s_codes is None else s_codes,
    ]
    return int(row_hashes(cols).sum(dtype=np.uint64))


def input_fingerprint(part: pd.DataFrame, policy: ReleasePolicy, s_codes: np.ndarray | None = None) -> int:
    """Order-free fingerprint of the policy columns as text (the ledger's ``input_sha``: a
    re-run must bring the same input); sum over partitions modulo 2**64.

    It is the sum of pandas' row hashes of ``part[[id, *qi, sensitive]].astype(str)``
    (``hash_pandas_object(..., index=False)``), computed from the text of each distinct value
    once (:func:`_text_hashes`): ledgers written before keep their fingerprint. ``s_codes``: the
    sensitive column's codes in ``policy.sensitive_domain`` (:func:`dpriv.domain_codes.codes`),
    when the caller has them: text values all in the domain are then hashed by code."""
    cols = [policy.id, *policy.qi, policy.sensitive]
    if combine_hash_arrays is None:  # pandas moved its row combination: the plain formula
        return int(pd.util.hash_pandas_object(part[cols].astype(str), index=False).sum())
    hashes = [_text_hashes(part[c]) for c in cols[:-1]]
    s = part[policy.sensitive]
    by_code = s_codes is not None and _domain_texts(s, policy.sensitive_domain, s_codes)
    hashes.append(by_code.take(s_codes) if by_code is not False else _text_hashes(s))
    rows = combine_hash_arrays(iter(hashes), len(cols))
    return int(rows.sum(dtype=np.uint64))


def _text_hashes(col: pd.Series) -> np.ndarray:
    """pandas' hash (uint64) of each value of ``col.astype(str)``: the distinct values' texts
    are built and hashed once, then taken by code (a 10^6-row view's ids, QIs and sensitive
    values as texts row by row were ~1 s of a release in process). Missing values (whose text
    depends on their kind), dates (formatted over the whole column), nullable and other
    extension types, a float -0.0 (factorized with 0.0) and objects whose texts collide (1 and
    "1") are hashed row by row. Integers are hashed from their digits, no text built
    (:func:`dpriv.int_text_hash.int_text_hashes`, the same values): a view's ids (mostly
    distinct) each, a QI's few values once each, taken by offset from the smallest."""
    if isinstance(col.dtype, np.dtype) and col.dtype.kind in "iu":  # no missing value
        values = col.to_numpy().astype(np.uint64 if col.dtype.kind == "u" else np.int64, copy=False)
        if not len(values):
            return np.empty(0, np.uint64)
        lo, hi = values.min(), values.max()
        if int(hi) - int(lo) <= max(len(values) // 4, 256):  # a QI's few values: each by its offset
            span = lo + np.arange(int(hi) - int(lo) + 1, dtype=values.dtype)
            return int_text_hashes(span).take((values - lo).astype(np.intp))
        return int_text_hashes(values)  # ids, mostly distinct: no factorization
    dtype = col.dtype.categories.dtype if isinstance(col.dtype, pd.CategoricalDtype) else col.dtype
    plain = isinstance(dtype, pd.StringDtype) or (isinstance(dtype, np.dtype) and dtype.kind in "iufbO")
    if plain and dtype.kind == "f":
        values = np.asarray(col, dtype=float)
        plain = not np.signbit(values[values == 0]).any()
    codes, uniques = pd.factorize(col) if plain else (np.array([-1]), None)
    if len(codes) and codes.min() < 0:
        return pd.util.hash_pandas_object(col.astype(str), index=False).to_numpy()
    text = pd.Series(uniques).astype(str).to_numpy(dtype=object)
    # distinct numbers, strings and booleans have distinct texts; other objects may not
    if dtype.kind == "O" and not isinstance(dtype, pd.StringDtype) and not pd.Index(text).is_unique:
        return pd.util.hash_pandas_object(col.astype(str), index=False).to_numpy()
    return pd.util.hash_array(text, categorize=False).take(codes)


def _domain_texts(col: pd.Series, domain: list, s_codes: np.ndarray) -> np.ndarray | bool:
    """pandas' hash of the text of each value of ``domain`` when every value of the text column
    ``col`` is one of them (``s_codes`` >= 0: its text is that value's); False otherwise."""
    text = isinstance(col.dtype, pd.StringDtype) and all(isinstance(d, str) for d in domain)
    if not text or (len(s_codes) and s_codes.min() < 0):
        return False
    return pd.util.hash_array(np.asarray(domain, dtype=object), categorize=False)


def view_digests(
    view: pd.DataFrame, policy: ReleasePolicy, s_codes: np.ndarray | None = None
) -> tuple[int, int]:
    """(:func:`content_digest`, :func:`input_fingerprint`) of a view; (0, 0) when its values
    cannot be hashed (bad rows: validation refuses the view anyway). ``s_codes``: the sensitive
    column's codes in its domain, when the caller has them (computed once)."""
    try:
        return content_digest(view, policy, s_codes), input_fingerprint(view, policy, s_codes)
    except (TypeError, ValueError):
        return 0, 0
