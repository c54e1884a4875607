"""The digests keep the values earlier releases recorded: the ledger's ``input_sha``
(:func:`dpriv.digests.input_fingerprint`, pandas' row hashes of the policy columns as text) and
the released rows' digest (:func:`dpriv.released.rows_digest`) are computed from each distinct
value's text once, and checked here against the row-by-row formulas themselves."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dpriv.digests import input_fingerprint

POLICY = SimpleNamespace(id="rid", qi=["a", "b"], sensitive="s")


def row_by_row(frame: pd.DataFrame) -> int:
    """The fingerprint as the ledgers of earlier releases computed it."""
    return int(pd.util.hash_pandas_object(frame[["rid", "a", "b", "s"]].astype(str), index=False).sum())


floats = st.sampled_from([0.0, -0.0, 1.5, np.nan, np.inf, 1e16, 3.0, -2.25])
texts = st.sampled_from(["x", "y", "1", "élan", "", None, 1, 2.0, np.nan])


def column(kind: str, draw_values: list) -> pd.Series:
    if kind == "int":
        return pd.Series(np.asarray(draw_values, dtype=np.int64))
    if kind == "float":
        return pd.Series(np.asarray(draw_values, dtype=np.float64))
    if kind == "category":
        return pd.Series([str(v) for v in draw_values], dtype="category")
    if kind == "string":
        return pd.Series([str(v) for v in draw_values], dtype="string")
    if kind == "bool":
        return pd.Series([bool(v) for v in draw_values])
    if kind == "date":
        return pd.Series(pd.to_datetime(np.asarray(draw_values, dtype=np.int64) % 50, unit="D"))
    if kind == "nullable":
        return pd.Series(draw_values, dtype="Int64").mask(pd.Series(draw_values) % 3 == 0)
    return pd.Series(draw_values, dtype=object)  # mixed objects


def drawn_column(data, kinds: list[str], n: int) -> pd.Series:
    """A column of ``n`` values of a kind drawn from ``kinds`` (:func:`column`)."""
    kind = data.draw(st.sampled_from(kinds))
    values = {"float": floats, "object": texts}.get(kind, st.integers(-3, 3))
    return column(kind, data.draw(st.lists(values, min_size=n, max_size=n)))


@settings(max_examples=150, deadline=None)
@given(data=st.data(), n=st.integers(0, 12))
def test_fingerprint_equals_the_row_by_row_texts(data, n):
    kinds = ["int", "float", "category", "string", "bool", "date", "nullable", "object"]
    frame = {"rid": pd.Series(np.arange(n, dtype=np.int64) * 7 - 3)}
    for name in ("a", "b", "s"):
        frame[name] = drawn_column(data, kinds, n)
    frame = pd.DataFrame(frame, index=np.arange(n) * 2 + 5)
    assert input_fingerprint(frame, POLICY) == row_by_row(frame)


def test_fingerprint_of_a_large_view_and_of_its_parts():
    rng = np.random.default_rng(0)
    n = 20_000
    frame = pd.DataFrame(
        {
            "rid": rng.permutation(n).astype(np.int64),
            "a": rng.integers(0, 90, n),
            "b": rng.normal(70, 10, n).round(1),
            "s": rng.choice(np.array(["flu", "cold", "1", "x y"], dtype=object), n),
        }
    )
    whole = input_fingerprint(frame, POLICY)
    assert whole == row_by_row(frame)
    parts = sum(input_fingerprint(frame.iloc[i : i + 3_000], POLICY) for i in range(0, n, 3_000))
    assert parts % 2**64 == whole % 2**64
    # a different value in one row changes it
    frame.loc[17, "a"] += 1
    assert input_fingerprint(frame, POLICY) != whole


def rows_digest_row_by_row(part: pd.DataFrame) -> int:
    """:func:`dpriv.released.rows_digest` as earlier releases computed it (text as objects)."""
    from dpriv._random import row_hashes

    cols = []
    for c in sorted(c for c in part.columns if not str(c).startswith("_")):
        x = part[c]
        if pd.api.types.is_integer_dtype(x.dtype):
            cols.append(x.to_numpy(dtype=np.int64))
        else:
            cols.append(x.to_numpy(dtype=np.float64 if pd.api.types.is_float_dtype(x.dtype) else object))
    return int(row_hashes(cols).sum(dtype=np.uint64))


@settings(max_examples=100, deadline=None)
@given(data=st.data(), n=st.integers(0, 10))
def test_rows_digest_equals_the_row_by_row_hashes(data, n):
    from dpriv.released import rows_digest

    frame = {"qi_group": pd.Series(np.arange(n, dtype=np.int64) % 3), "_order": np.arange(n, dtype=np.uint64)}
    for name in ("age_min", "city", "s"):
        frame[name] = drawn_column(data, ["int", "float", "category", "string", "object"], n)
    frame = pd.DataFrame(frame)
    assert rows_digest(frame) == rows_digest_row_by_row(frame)


def text_hash_reference(values: np.ndarray) -> np.ndarray:
    """pandas' hash of each value's text, the texts built (what the fingerprint hashed before)."""
    return pd.util.hash_array(pd.Series(values).astype(str).to_numpy(dtype=object), categorize=False)


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]),
    data=st.data(),
)
def test_integer_text_hashes_equal_pandas_hash_of_the_texts(dtype, data):
    """Integers' texts hashed without building them: every width and sign, the extremes, texts
    of every length 1..20 (SipHash's 8-byte blocks and the tail) and a leading minus."""
    from dpriv.int_text_hash import int_text_hashes

    info = np.iinfo(dtype)
    edges = [info.min, info.max, 0, 1, -1, 9, 10, 99999999, 100000000, -100000000]
    values = data.draw(st.lists(st.integers(int(info.min), int(info.max)), max_size=40))
    values += [v for v in edges if info.min <= v <= info.max]
    values += [int(v) for v in (10 ** np.arange(20, dtype=np.uint64)) if v <= info.max]
    array = np.asarray(values, dtype=dtype)
    assert (int_text_hashes(array) == text_hash_reference(array)).all()


def test_integer_ids_fingerprint_as_their_texts():
    """A view of distinct int64 ids (negative ones too) and unsigned QIs: the same fingerprint as
    the row-by-row texts."""
    rng = np.random.default_rng(3)
    n = 5_000
    frame = pd.DataFrame(
        {
            "rid": rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64),
            "a": rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True),
            "b": rng.integers(-5, 5, n).astype(np.int8),
            "s": rng.choice(np.array(["flu", "cold"], dtype=object), n),
        }
    )
    assert input_fingerprint(frame, POLICY) == row_by_row(frame)


@settings(max_examples=80, deadline=None)
@given(data=st.data(), n=st.integers(0, 12), dtype=st.sampled_from(["string", "object", "string[pyarrow]"]))
def test_fingerprint_with_the_sensitive_codes_equals_the_row_by_row_texts(data, n, dtype):
    """The summaries' kernel hands the sensitive codes it found to the fingerprint: values all
    in the domain are hashed by code, others (outside it, missing, not text) by their texts."""
    from dpriv.domain_codes import codes

    domain = ["flu", "cold", "1", "élan", ""]
    policy = SimpleNamespace(id="rid", qi=["a", "b"], sensitive="s", sensitive_domain=domain)
    s = data.draw(st.lists(st.sampled_from([*domain, "x", "flu ", None]), min_size=n, max_size=n))
    frame = pd.DataFrame(
        {
            "rid": np.arange(n, dtype=np.int64) * 7 - 3,
            "a": np.asarray(data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), np.uint64)
            + np.uint64(2**64 - 6),  # the largest unsigned values: offsets from the smallest
            "b": np.asarray(data.draw(st.lists(st.integers(-128, 127), min_size=n, max_size=n)), np.int8),
            "s": pd.Series(s, dtype=dtype),
        }
    )
    assert input_fingerprint(frame, policy, codes(frame["s"], domain)) == row_by_row(frame)
    assert input_fingerprint(frame, policy) == row_by_row(frame)
