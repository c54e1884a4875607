"""dpriv.qig_ranges: CreateQIG per part of whole QI-groups, cut into label ranges in their written
order, against a row-by-row reference written from docs/released-format.md (bounds = a group's
min and max, value sets in domain order, rows by label then ``_order``)."""

from __future__ import annotations

import bisect

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv._random import keyed, stable_hash
from dpriv.policy import ReleasePolicy
from dpriv.qig_ranges import cell_codes, merged_range, released_ranges, sorted_pieces, written_positions
from dpriv.released import GROUP, LABEL, ORDER, label_divisions, released_meta

CITIES = ["Lyon", "Metz", "Paris, FR"]
VALUES = ["a", "b", "c,d"]


def _policy(with_city: bool) -> ReleasePolicy:
    qi = ["age", "w", "city"] if with_city else ["age", "w"]
    domains = {"age": [0, 99], "w": [-50, 50], "s": VALUES, **({"city": CITIES} if with_city else {})}
    return ReleasePolicy(id="rid", qi=qi, sensitive="s", k=2, t=1.0, j=5.0, domains=domains, seed=11)


def _parts(rng: np.random.Generator, n_parts: int, text: str, with_city: bool) -> list[pd.DataFrame]:
    """Random membership parts holding whole groups (a label's rows in one part, any row order)."""
    n_labels = int(rng.integers(1, 30))
    labels = rng.integers(0, 2**63 - 1, size=n_labels, dtype=np.int64)
    home = rng.integers(0, n_parts, size=n_labels)
    n = int(rng.integers(n_labels, 12 * n_labels + 1))
    g = rng.integers(0, n_labels, size=n)
    s = np.array(VALUES, dtype=object)[rng.integers(0, 3, size=n)]
    if text == "string-na":
        s[rng.random(n) < 0.2] = None
    rows = pd.DataFrame(
        {
            "rid": rng.permutation(10 * n)[:n].astype(np.int64),
            "age": rng.integers(0, 99, size=n).astype(np.int32),
            "w": rng.integers(-50, 50, size=n).astype(np.int64),
            "city": pd.Series(np.array(CITIES, dtype=object)[rng.integers(0, 3, size=n)], dtype=object),
            "s": pd.Series(s, dtype=object if text == "object" else "string"),
            LABEL: labels[g],
            "p__a": rng.random(n),
        }
    )
    if not with_city:
        rows = rows.drop(columns="city")
    return [rows[home[g] == i].reset_index(drop=True) for i in range(n_parts)]


def _reference(parts: list[pd.DataFrame], policy: ReleasePolicy, n_ranges: int) -> list[pd.DataFrame]:
    """The released rows, row by row: each group's min/max per numeric QI and value set of the
    city (domain order, escaped), the sensitive cell as is, sorted by (label, _order) in Python,
    then cut at the label divisions."""
    rows = pd.concat(parts, ignore_index=True)
    order = keyed(stable_hash(rows["rid"]), policy.seed, "order")
    groups: dict[int, list[int]] = {}
    for i, lab in enumerate(rows[LABEL].tolist()):
        groups.setdefault(lab, []).append(i)
    out = []
    for i in sorted(range(len(rows)), key=lambda i: (int(rows[LABEL].iat[i]), int(order[i]))):
        members = groups[int(rows[LABEL].iat[i])]
        rec = {GROUP: int(rows[LABEL].iat[i])}
        for q in ("age", "w"):
            vals = [int(rows[q].iat[m]) for m in members]
            rec[f"{q}_min"], rec[f"{q}_max"] = min(vals), max(vals)
        if "city" in policy.qi:
            present = {rows["city"].iat[m] for m in members}
            rec["city"] = "{" + ",".join(c.replace(",", "\\,") for c in CITIES if c in present) + "}"
        rec["s"] = rows["s"].iat[i]
        rec[ORDER] = order[i]
        out.append(rec)
    div = label_divisions(n_ranges)
    ranges: list[list[dict]] = [[] for _ in range(n_ranges)]
    for rec in out:
        ranges[min(max(bisect.bisect_right(div, rec[GROUP]) - 1, 0), n_ranges - 1)].append(rec)
    frames = [pd.DataFrame(r) for r in ranges]
    for f, r in zip(frames, ranges):  # the cells as they are (the frame would turn pd.NA into NaN)
        if len(r):
            f["s"] = pd.Series([rec["s"] for rec in r], dtype=object)
    return frames


def _meta(policy: ReleasePolicy, parts: list[pd.DataFrame]) -> pd.DataFrame:
    return released_meta(policy, parts[0]["s"].to_numpy().dtype, parts[0].dtypes.to_dict())


def _same(x, y) -> bool:
    return x is y if x is pd.NA or y is pd.NA else bool(x == y)


def _check(got: list[pd.DataFrame], expected: list[pd.DataFrame], meta: pd.DataFrame) -> None:
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert list(g.columns) == list(meta.columns)
        assert g.dtypes.to_dict() == meta.dtypes.to_dict()
        assert isinstance(g.index, pd.RangeIndex) and g.index.start == 0
        assert len(g) == len(e)
        if not len(e):
            continue
        for c in meta.columns:
            if c == "s":  # missing cells as the membership's to_numpy() gives them (pd.NA)
                assert [_same(x, y) for x, y in zip(g[c].to_numpy(), e[c].to_numpy())] == [True] * len(e)
            else:
                assert g[c].tolist() == e[c].tolist(), c


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n_ranges", [1, 3, 8])
def test_sorted_pieces_merged_are_the_written_order(seed, n_ranges):
    rng = np.random.default_rng(seed)
    text = ["string", "string-na", "object"][seed % 3]
    policy = _policy(with_city=seed % 2 == 1)  # a categorical QI: the qig_table path
    parts = _parts(rng, int(rng.integers(1, 5)), text, "city" in policy.qi)
    parts.append(parts[0].iloc[:0])  # an empty part
    meta = _meta(policy, parts)
    div = np.asarray(label_divisions(n_ranges), dtype=np.int64)
    pieces = [sorted_pieces(p, policy, div) for p in parts]
    got = [merged_range([pc[i] for pc in pieces], meta) for i in range(n_ranges)]
    _check(got, _reference(parts, policy, n_ranges), meta)


@pytest.mark.parametrize("seed", range(3))
def test_released_ranges_on_dask_is_the_reference(seed):
    rng = np.random.default_rng(100 + seed)
    policy = _policy(with_city=seed == 1)
    parts = _parts(rng, 3, "string", "city" in policy.qi)
    meta = _meta(policy, parts)
    with dask.config.set({"dataframe.convert-string": False}):
        frame = dd.concat([dd.from_pandas(p, npartitions=1, sort=False) for p in parts])
    got = [p.compute() for p in released_ranges(frame, policy, 4, meta).to_delayed()]
    _check(got, _reference(parts, policy, 4), meta)


def test_merged_range_of_a_group_in_two_pieces_is_still_sorted():
    """Pieces of one label from two parts (never after whole_groups): still (label, _order)."""
    policy = _policy(with_city=False)
    a = pd.DataFrame(
        {"rid": [1, 2, 3], "age": [5, 6, 7], "w": [0, 1, 2], "s": ["a", "b", "a"], LABEL: [9, 9, 4]}
    )
    b = pd.DataFrame({"rid": [4, 5], "age": [8, 9], "w": [3, 4], "s": ["b", "b"], LABEL: [9, 4]})
    a, b = a.astype({"s": "string"}), b.astype({"s": "string"})
    meta = _meta(policy, [a, b])
    div = np.asarray(label_divisions(1), dtype=np.int64)
    got = merged_range([sorted_pieces(a, policy, div)[0], sorted_pieces(b, policy, div)[0]], meta)
    order = keyed(stable_hash(pd.Series([1, 2, 3, 4, 5])), policy.seed, "order")
    lab = [9, 9, 4, 9, 4]
    assert list(zip(got[GROUP], got[ORDER])) == sorted(zip(lab, order.tolist()))
    assert got["s"].tolist() == [
        ["a", "b", "a", "b", "b"][i] for i in sorted(range(5), key=lambda i: (lab[i], int(order[i])))
    ]


@pytest.mark.parametrize("seed", range(5))
def test_written_positions_is_a_stable_two_key_sort(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    rank = rng.integers(0, 7, size=n)
    order = rng.integers(0, 5 if seed % 2 else 2**64 - 1, size=n, dtype=np.uint64)  # ties when odd
    expected = sorted(range(n), key=lambda i: (int(rank[i]), int(order[i])))  # Python's sort is stable
    for n_ranks in (7, 2**20):
        assert written_positions(rank, order, n_ranks).tolist() == expected


@pytest.mark.parametrize("dtype", ["string", "object", "int64"])
def test_cell_codes_give_the_cells_back(dtype):
    cells = pd.Series(["x", None, "y", "x", None] if dtype != "int64" else [3, 1, 3, 2, 1], dtype=dtype)
    codes, values = cell_codes(cells)
    back = codes if values is None else values[codes]
    want = cells.to_numpy()
    assert back.dtype == want.dtype
    assert [_same(u, v) for u, v in zip(back, want)] == [True] * len(want)
    if dtype == "string":
        assert values is not None and len(values) == 3  # x, NA, y: one conversion each
