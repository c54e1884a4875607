"""dpriv.whole_groups: whole QI-groups per part without a shuffle of the membership, and the
released rows cut into label ranges in their written order."""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv.released import GROUP, LABEL, ORDER, label_divisions
from dpriv.whole_groups import in_label_ranges, whole_groups


def _parts(rng: np.random.Generator, n_parts: int, n_labels: int, spread: float) -> list[pd.DataFrame]:
    """Random membership parts: most labels in one part, a share ``spread`` of the rows elsewhere."""
    labels = rng.integers(0, 2**63 - 1, size=n_labels, dtype=np.int64)
    home = rng.integers(0, n_parts, size=n_labels)
    n = 40 * n_labels
    g = rng.integers(0, n_labels, size=n)
    at = np.where(rng.random(n) < spread, rng.integers(0, n_parts, size=n), home[g])
    rows = pd.DataFrame(
        {
            "id": pd.Series([f"r{i}" for i in range(n)], dtype=object),
            LABEL: labels[g],
            "p__a": rng.random(n),
        }
    )
    return [rows[at == i].reset_index(drop=True) for i in range(n_parts)]


def _frame(parts: list[pd.DataFrame]) -> dd.DataFrame:
    """One Dask part per frame, object text kept (as the release's frames hold it)."""
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.concat([dd.from_pandas(p, npartitions=1, sort=False) for p in parts])


@pytest.mark.parametrize("seed", range(6))
def test_whole_groups_each_label_in_one_part_same_rows(seed):
    rng = np.random.default_rng(seed)
    n_parts = int(rng.integers(1, 6))
    parts = _parts(rng, n_parts, int(rng.integers(1, 30)), spread=float(rng.choice([0.0, 0.05, 0.5])))
    frame = _frame(parts)
    out = [p for p in whole_groups(frame)[0].to_delayed()]
    got = [p.compute() for p in out]
    assert len(got) == frame.npartitions
    seen: dict[int, int] = {}
    for i, p in enumerate(got):
        for lab in np.unique(p[LABEL].to_numpy()):
            assert seen.setdefault(int(lab), i) == i, "a QI-group is in two parts"
    # the same rows (by id), each with its label and prior; object ids stay object
    before = pd.concat(parts).set_index("id").sort_index()
    after = pd.concat(got).set_index("id").sort_index()
    pd.testing.assert_frame_equal(before, after)
    assert all(p["id"].dtype == object for p in got)
    # a group found in one part only does not move
    for i, p in enumerate(parts):
        alone = [
            lab for lab in np.unique(p[LABEL]) if all(lab not in q[LABEL].values for q in parts if q is not p)
        ]
        kept = got[i][got[i][LABEL].isin(alone)]["id"]
        assert set(kept) == set(p[p[LABEL].isin(alone)]["id"])


def test_whole_groups_of_an_empty_membership():
    empty = pd.DataFrame({"id": pd.Series([], dtype=object), LABEL: np.array([], dtype=np.int64)})
    got = [p.compute() for p in whole_groups(_frame([empty, empty.copy()]))[0].to_delayed()]
    assert [len(p) for p in got] == [0, 0]


def test_whole_groups_home_is_the_part_with_most_rows():
    a = pd.DataFrame({"id": ["a", "b", "c"], LABEL: [7, 7, 9]}).astype({"id": object})
    b = pd.DataFrame({"id": ["d", "e", "f", "g"], LABEL: [7, 9, 9, 9]}).astype({"id": object})
    got = [p.compute() for p in whole_groups(_frame([a, b]))[0].to_delayed()]
    assert sorted(got[0]["id"]) == ["a", "b", "d"]
    assert sorted(got[1]["id"]) == ["c", "e", "f", "g"]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_ranges", [1, 3, 8])
def test_in_label_ranges_is_the_written_order(seed, n_ranges):
    rng = np.random.default_rng(seed)
    n_parts = int(rng.integers(1, 5))
    labels = rng.integers(0, 2**63 - 1, size=int(rng.integers(1, 40)), dtype=np.int64)
    home = rng.integers(0, n_parts, size=len(labels))
    n = 15 * len(labels)
    g = rng.integers(0, len(labels), size=n)
    rows = pd.DataFrame(
        {
            GROUP: labels[g],
            "x_min": rng.integers(0, 9, size=n),
            "s": pd.Series([f"v{i % 4}" for i in range(n)], dtype=object),
            ORDER: rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64),
        }
    )
    parts = [rows[home[g] == i] for i in range(n_parts)]  # whole groups per part, any order
    got = [p.compute() for p in in_label_ranges(_frame(parts), n_ranges).to_delayed()]
    assert len(got) == n_ranges
    # reference: every row sorted by label, then by the order key (unique here)
    expected = rows.sort_values([GROUP, ORDER]).reset_index(drop=True)
    pd.testing.assert_frame_equal(pd.concat(got, ignore_index=True), expected)
    div = label_divisions(n_ranges)
    for i, p in enumerate(got):
        assert p["s"].dtype == object
        assert ((p[GROUP] >= div[i]) & ((p[GROUP] < div[i + 1]) | (i == n_ranges - 1))).all()
