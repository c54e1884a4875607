"""The pieces a Dask view is fetched in (:mod:`dpriv.parquet_pieces`): cut at the partitions' and
the row groups' boundaries, and gathered from the workers directly under a LocalCluster."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dpriv.parquet_pieces import Piece, direct_gather, piece_ranges, piece_step


def test_pieces_by_hand():
    assert piece_ranges([5, 5], 4) == [Piece(0, 0, 4), Piece(0, 4, 5), Piece(1, 0, 3), Piece(1, 3, 5)]
    assert piece_ranges([0, 3, 0, 2], 2) == [Piece(1, 0, 2), Piece(1, 2, 3), Piece(3, 0, 1), Piece(3, 1, 2)]
    assert piece_ranges([], 4) == [] and piece_ranges([0, 0], 4) == []


def test_the_step_is_whole_row_groups_of_at_most_piece_rows(monkeypatch):
    import dpriv.parquet_pieces as pieces

    monkeypatch.setattr(pieces, "PIECE_ROWS", 10)
    assert [piece_step(r) for r in (1, 3, 4, 5, 10, 11, 100)] == [10, 9, 8, 10, 10, 11, 100]


@given(st.lists(st.integers(0, 30), max_size=8), st.integers(1, 12))
def test_pieces_cover_the_rows_in_order_and_never_straddle_a_step(lengths, step):
    """Against the rows one by one: a piece is a maximal run of rows of one partition and of
    one window ``[m * step, (m + 1) * step)`` of the whole frame."""
    got = piece_ranges(lengths, step)
    part = np.repeat(np.arange(len(lengths)), lengths)
    local = np.concatenate([np.arange(n) for n in lengths]) if lengths else np.zeros(0, int)
    window = np.arange(len(part)) // step
    starts = [i for i in range(len(part)) if i == 0 or (part[i], window[i]) != (part[i - 1], window[i - 1])]
    ends = [*starts[1:], len(part)]
    assert got == [Piece(int(part[a]), int(local[a]), int(local[b - 1]) + 1) for a, b in zip(starts, ends)]


class _Client:
    def __init__(self, direct, cluster):
        self.direct_to_workers, self.cluster = direct, cluster


def test_direct_gather_under_a_local_cluster_only(local_cluster):
    assert direct_gather(_Client(None, local_cluster)) is True
    assert direct_gather(_Client(None, None)) is None  # a scheduler's address: Dask's default
    assert direct_gather(_Client(None, object())) is None  # another kind of cluster
    assert direct_gather(_Client(False, local_cluster)) is False  # the user's setting wins
