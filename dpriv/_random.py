"""Seeded, partition-free pseudo-random keys (tie-breaks, labels, row shuffles).

Every key is a function of (seed, purpose, a stable per-row key such as the hashed
respondent id), never of a partition number or row position, so that a release is the
same whatever the partitioning (STYLE.md, counter-example of dask_ml/datasets.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

_PURPOSES = {"tie": 1, "label": 2, "order": 3, "draw": 4}


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def stable_hash(values: pd.Series | np.ndarray) -> np.ndarray:
    """uint64 hash of each value (ids of any dtype), independent of seed and position."""
    return pd.util.hash_array(np.asarray(values), categorize=False).astype(np.uint64)


#: The largest policy seed: ``seed * 16 + purpose`` must fit the uint64 salt of :func:`keyed`.
MAX_SEED = 2**60 - 1


def keyed(base: np.ndarray, seed: int, purpose: str) -> np.ndarray:
    """uint64 pseudo-random key per element of ``base`` (uint64) for ``seed`` and ``purpose``."""
    salt = _splitmix64(np.array([seed * 16 + _PURPOSES[purpose]], dtype=np.uint64))[0]
    return _splitmix64(np.asarray(base, dtype=np.uint64) ^ salt)


def row_hashes(columns: list[np.ndarray | pd.Series]) -> np.ndarray:
    """uint64 hash per row of equal-length columns (each hashed by value, then mixed in
    order); sum them for an order-free digest of a frame. A Series of text is hashed as its
    values as Python objects (:func:`text_hashes`)."""
    row = np.zeros(len(columns[0]) if columns else 0, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for col in columns:
            h = (
                text_hashes(col)
                if isinstance(col, pd.Series)
                else pd.util.hash_array(np.asarray(col), categorize=False)
            )
            row = row * np.uint64(0x100000001B3) ^ h
        return (row ^ (row >> np.uint64(31))) * np.uint64(0xBF58476D1CE4E5B9)


def text_hashes(values: pd.Series) -> np.ndarray:
    """pandas' hash (uint64) of each value of ``values`` as a Python object, as
    ``hash_array(values.to_numpy(dtype=object), categorize=False)`` gives it, each distinct
    text hashed once: a released column of value sets or sensitive values holds few distinct
    texts, and pandas 3's Arrow strings as Python objects were ~0.3 s per 10^6 rows. Columns
    with a missing value or a value that is not text are hashed row by row."""
    codes, uniques = pd.factorize(values)
    distinct = np.asarray(uniques, dtype=object)
    if (len(codes) and codes.min() < 0) or not all(isinstance(v, str) for v in distinct):
        return pd.util.hash_array(values.to_numpy(dtype=object), categorize=False)
    return pd.util.hash_array(distinct, categorize=False).take(codes)
