"""pandas' hash of integers written as text, without writing them: the ledger's ``input_sha``
hashes the id column as text (:func:`dpriv.digests.input_fingerprint`), and a view's ids are
mostly distinct, so building and hashing 10^6 Python strings was most of that fingerprint
(~0.25 s of CPU per 10^6 ids, issue 13).

:func:`int_text_hashes` gives, for an integer array ``a``, exactly
``pd.util.hash_array(pd.Series(a).astype(str).to_numpy(dtype=object), categorize=False)``:
pandas' SipHash-2-4 (key ``"0123456789123456"``, pandas' ``hash_key``) of each value's UTF-8
decimal text (``-`` and the digits), then pandas' 64-bit mix of every hash
(``pandas.core.util.hashing._hash_ndarray``). The decimal digits are made and hashed in a numba
kernel, one value at a time.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: pandas' default ``hash_key`` as SipHash's two 64-bit key words (little-endian).
_K0 = np.uint64(int.from_bytes(b"01234567", "little"))
_K1 = np.uint64(int.from_bytes(b"89123456", "little"))


@njit(cache=True, inline="always")
def _rotl(x, b):
    return (x << np.uint64(b)) | (x >> np.uint64(64 - b))


@njit(cache=True, inline="always")
def _rounds(v0, v1, v2, v3, n):
    for _ in range(n):
        v0 += v1
        v1 = _rotl(v1, 13)
        v1 ^= v0
        v0 = _rotl(v0, 32)
        v2 += v3
        v3 = _rotl(v3, 16)
        v3 ^= v2
        v0 += v3
        v3 = _rotl(v3, 21)
        v3 ^= v0
        v2 += v1
        v1 = _rotl(v1, 17)
        v1 ^= v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


@njit(cache=True)
def _siphash(buf, n, k0, k1):
    """SipHash-2-4 of the first ``n`` bytes of ``buf`` (uint8)."""
    v0 = np.uint64(0x736F6D6570736575) ^ k0
    v1 = np.uint64(0x646F72616E646F6D) ^ k1
    v2 = np.uint64(0x6C7967656E657261) ^ k0
    v3 = np.uint64(0x7465646279746573) ^ k1
    full = n - n % 8
    for start in range(0, full, 8):
        m = np.uint64(0)
        for j in range(8):
            m |= np.uint64(buf[start + j]) << np.uint64(8 * j)
        v3 ^= m
        v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 2)
        v0 ^= m
    b = np.uint64(n) << np.uint64(56)
    for j in range(n - full):
        b |= np.uint64(buf[full + j]) << np.uint64(8 * j)
    v3 ^= b
    v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 2)
    v0 ^= b
    v2 ^= np.uint64(0xFF)
    v0, v1, v2, v3 = _rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


@njit(cache=True)
def _hashes(values, negative, k0, k1):
    """The hash of each value's decimal text; ``values`` holds magnitudes (uint64), ``negative``
    whether a ``-`` comes first."""
    out = np.empty(values.size, dtype=np.uint64)
    digits = np.empty(24, dtype=np.uint8)
    text = np.empty(24, dtype=np.uint8)
    ten = np.uint64(10)
    for i in range(values.size):
        m = values[i]
        k = 0
        while True:  # digits from the last
            digits[k] = np.uint8(48 + m % ten)
            m //= ten
            k += 1
            if m == 0:
                break
        n = 0
        if negative[i]:
            text[0] = np.uint8(45)
            n = 1
        for j in range(k):
            text[n + j] = digits[k - 1 - j]
        h = _siphash(text, n + k, k0, k1)
        # pandas' mix of every hash (_hash_ndarray)
        h ^= h >> np.uint64(30)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(27)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(31)
        out[i] = h
    return out


def int_text_hashes(values: np.ndarray) -> np.ndarray:
    """uint64 array, one per value of the integer (signed or unsigned, any width) array
    ``values``: pandas' hash of the value's text (module doc). TypeError for other dtypes."""
    values = np.asarray(values)
    if values.dtype.kind not in "iu":
        raise TypeError(f"int_text_hashes takes integers, not {values.dtype}")
    if values.dtype.kind == "u":
        magnitude, negative = values.astype(np.uint64), np.zeros(values.size, dtype=np.bool_)
    else:
        signed = values.astype(np.int64)
        negative = signed < 0
        # |v| as uint64 (two's complement: right for -2**63 too)
        magnitude = np.where(negative, -signed.view(np.uint64), signed.view(np.uint64))
    return _hashes(np.ascontiguousarray(magnitude), negative, _K0, _K1)
