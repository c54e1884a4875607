"""The first pass of Generalize over the Hilbert ranges of a Dask view (docs/architecture.md).

Each range is grouped by the range kernel of ``policy.grouping`` (:func:`range_kernel`), which
leaves the rows it cannot close yet to the next range:

* the greedy scan (:func:`dpriv.anonymity.jsreduce.scan_range`) hands on its open group,
  which depends on how the range was scanned: every range is scanned alone at once, then a
  short chain puts each range's first rows back in step with the rows carried in
  (:func:`resynced_scan`, :mod:`dpriv.anonymity.resync`); with deferral (``defer_wait`` > 0),
  which keeps tuples waiting across groups, the ranges run as a chain (:func:`chained_scan`),
  one after the other;
* the top-down split (:func:`topdown_range`: :func:`dpriv.anonymity.topdown.topdown_groups`
  over the range's complete blocks) hands on the rows of its last block (a Hilbert sub-cube may
  straddle a range boundary), which the keys alone decide: each range's carried rows are cut
  from the ranges before it, and every range runs at once
  (:func:`side_by_side`). Each range gets the same rows as in the chain, so the same groups.
"""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv.anonymity.jsreduce import RangeResult, scan_range
from dpriv.anonymity.resync import resync, scan_alone, spliced
from dpriv.anonymity.topdown import split_coords, topdown_groups
from dpriv.criteria import criteria_for
from dpriv.divergence import GROUNDS
from dpriv.hilbert.keys import (
    HKEY,
    TIE,
    add_keys,
    balance_targets,
    balanced_divisions,
    grid_bits,
    key_dims,
    key_ordered,
)
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL, SCODE, group_labels
from dpriv.row_order import in_order


def range_kernel(policy: ReleasePolicy):
    """The first pass over one Hilbert range for ``policy.grouping``: :func:`scan_range`
    (greedy scan) or :func:`topdown_range` (top-down split); same contract."""
    return topdown_range if policy.grouping == "topdown" else scan_range


def first_pass(
    ranges: dd.DataFrame,
    view_meta: pd.DataFrame,
    policy: ReleasePolicy,
    view_counts: np.ndarray,
    ends: list | None = None,
) -> dd.DataFrame:
    """The range kernel over the Hilbert ranges of ``ranges`` (indexed by the key, in key
    order): every row with its ``_label`` (-1: a leftover for the repair), one partition per
    range. Top-down ranges run side by side, scan ranges alone and then resynced (as a chain
    with deferral). ``ends``: each range's first and last block (:func:`range_ends`) when the
    caller knows them, else computed from the ranges (top-down only)."""
    kernel = range_kernel(policy)
    # the meta is the kernel's output on the empty view (ids keep their dtype through the
    # state join, see dpriv.state)
    meta = kernel(add_keys(view_meta, policy).set_index(HKEY), None, policy, view_counts, True)[0]
    parts = ranges.to_delayed()
    if policy.grouping == "topdown":
        links = side_by_side(parts, policy, view_counts, ends)
    else:
        links = (chained_scan if policy.defer_wait > 0 else resynced_scan)(parts, policy, view_counts)
    # verify_meta=False: Dask's check of each link against the meta is a task marked as a data
    # producer, which the distributed scheduler places like a root task (on the least busy
    # worker, wherever its link lies), so whole ranges (55-110 MiB at 10^6) moved between the
    # workers; without it each part is an alias of its link, computed where the link is
    return dd.from_delayed(links, meta=meta, verify_meta=False)


def range_divisions(histogram: pd.Series, npartitions: int, policy: ReleasePolicy) -> tuple:
    """Divisions (uint64 keys as ints) of at most ``npartitions`` Hilbert ranges from the exact
    key histogram (key -> count): :func:`dpriv.hilbert.keys.balanced_divisions`; for the
    top-down split each cut moved to the block start (:func:`block_ids`) nearest to it in rows.
    A range then holds whole blocks and carries no rows to the next: unaligned, a range's last
    block, split by the next range, is handed on whole (about a range's rows at 8 ranges of
    10^6 with 8 blocks) and the last range grouped twice its share. The groups are those of the
    blocks, so the same for any cuts."""
    if policy.grouping != "topdown":
        return balanced_divisions(histogram, npartitions)
    keys, cum, targets = balance_targets(histogram, npartitions)
    blocks = block_ids(keys, policy)
    starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])  # each block's first key
    before = np.r_[0, cum][starts]  # rows before it (increasing)
    right = np.minimum(np.searchsorted(before, targets), len(starts) - 1)
    left = np.maximum(right - 1, 0)
    nearest = np.where(np.abs(before[left] - targets) <= np.abs(before[right] - targets), left, right)
    cuts = [int(k) for k in np.unique(keys[starts[nearest]]) if keys[0] < k]
    return (int(keys[0]), *cuts, int(keys[-1]))


def resynced_scan(parts: list, policy: ReleasePolicy, view_counts: np.ndarray) -> list:
    """The chain's outputs over ``parts`` (greedy scan, no deferral): each range scanned alone
    at once, a chain of :func:`dpriv.anonymity.resync.resync` over the few rows where the
    carried rows change the groups, the splices at once."""
    alone = dask.delayed(scan_alone, nout=3, pure=True)
    again = dask.delayed(resync, nout=3, pure=True)
    splice = dask.delayed(spliced, pure=True)
    links, carry = [], None
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        done, tail, closes = alone(part, policy, view_counts, last)
        fix, upto, carry = again(done, tail, closes, carry, policy, view_counts, last)
        links.append(splice(done, fix, upto))
    return links


def chained_scan(parts: list, policy: ReleasePolicy, view_counts: np.ndarray) -> list:
    """The kernel's delayed outputs over ``parts``, each link handing its open tail to the next."""
    kernel = dask.delayed(range_kernel(policy), nout=2, pure=True)
    links, carry = [], None
    for i, part in enumerate(parts):
        link = kernel(part, carry, policy, view_counts, i == len(parts) - 1)
        links.append(link[0])
        carry = link[1]
    return links


def range_ends(histogram: pd.Series, divisions: tuple, policy: ReleasePolicy) -> list[tuple[int, int] | None]:
    """Each Hilbert range's first and last block (:func:`block_ids` of its smallest and largest
    key; None for an empty range), read off the key histogram (key -> count > 0) the ranges
    were shuffled from: range ``i`` holds the keys ``divisions[i] <= key < divisions[i + 1]``
    (the last one closed), as set_index cuts them. What :func:`side_by_side` would otherwise
    compute from the ranges themselves, in a graph and a round trip of its own."""
    keys = np.sort(histogram.index.to_numpy(np.uint64))
    cuts = np.searchsorted(keys, np.asarray(divisions[1:-1], dtype=np.uint64), side="left")
    ends = []
    for a, b in zip([0, *cuts.tolist()], [*cuts.tolist(), len(keys)]):
        if a == b:
            ends.append(None)
            continue
        first, last = block_ids(keys[[a, b - 1]], policy)
        ends.append((int(first), int(last)))
    return ends


def side_by_side(
    parts: list, policy: ReleasePolicy, view_counts: np.ndarray, ends: list | None = None
) -> list:
    """:func:`topdown_range` over ``parts`` at once. The rows a range receives are the rows of
    the last block seen so far (keys are in order, blocks are key prefixes): those of the
    ranges before it whose last block it is. A range whose last block the next non-empty range
    does not continue (ranges cut at block starts, :func:`range_divisions`) groups that block
    itself and hands nothing on. ``ends``: each part's first and last block (:func:`range_ends`);
    None: one small compute of them first."""
    kernel = dask.delayed(topdown_range, nout=2, pure=True)
    cut = dask.delayed(_block_rows, pure=True)
    if ends is None:
        ends = dask.compute(*[dask.delayed(_end_blocks, pure=True)(p, policy) for p in parts])
    links, open_block, holders = [], None, []
    for i, (part, end) in enumerate(zip(parts, ends)):
        carry = (
            dask.delayed(_joined, pure=True)([cut(parts[j], open_block, policy) for j in holders])
            if holders
            else None
        )
        after = next((e[0] for e in ends[i + 1 :] if e is not None), None)  # the next range's first block
        closes = after is None or (end is not None and end[1] != after)
        links.append(kernel(part, carry, policy, view_counts, closes)[0])
        if closes:  # its last block is whole: grouped here
            holders, open_block = [], None
        elif end is not None:  # an empty range hands on what it received
            holders = [*holders, i] if end[1] == open_block else [i]
            open_block = end[1]
    return links


def _keyed(part: pd.DataFrame) -> pd.DataFrame:
    """A range with its key as a column (ranges come indexed by it)."""
    return part if HKEY in part.columns else part.rename_axis(HKEY).reset_index()


def _end_blocks(part: pd.DataFrame, policy: ReleasePolicy) -> tuple[int, int] | None:
    """The blocks (:func:`block_ids`) of the range's smallest and largest keys; None for an
    empty range."""
    keys = _keyed(part)[HKEY].to_numpy(np.uint64)
    if not len(keys):
        return None
    first, last = block_ids(np.array([keys.min(), keys.max()], dtype=np.uint64), policy)
    return int(first), int(last)


def _block_rows(part: pd.DataFrame, block: int, policy: ReleasePolicy) -> pd.DataFrame:
    """The range's rows in ``block``, key as a column, in the range's order."""
    rows = _keyed(part)
    ids = block_ids(rows[HKEY].to_numpy(np.uint64), policy)
    if in_order([ids]):  # key-sorted (as the shuffle hands ranges on): the block is a slice
        return rows.iloc[np.searchsorted(ids, block, "left") : np.searchsorted(ids, block, "right")]
    return rows[ids == np.uint64(block)]


def _joined(pieces: list[pd.DataFrame]) -> pd.DataFrame:
    """The carried rows in (key, tie) order, as the chain's kernel hands them on."""
    # one piece (the usual case) is not copied by a concat before its sort
    return key_ordered(pieces[0] if len(pieces) == 1 else pd.concat(pieces, ignore_index=True))


def block_ids(keys: np.ndarray, policy: ReleasePolicy) -> np.ndarray:
    """uint64 block of every Hilbert key: its leading ``topdown_level * d`` bits (0 = one block)."""
    d = key_dims(policy)
    bits = grid_bits(policy)
    level = min(policy.topdown_level, bits)
    shift = np.uint64(d * (bits - level))
    keys = np.asarray(keys, dtype=np.uint64)
    return keys >> shift if level > 0 else np.zeros(len(keys), dtype=np.uint64)


def topdown_range(
    part: pd.DataFrame, carry: pd.DataFrame | None, policy: ReleasePolicy, view_counts: np.ndarray, last: bool
) -> RangeResult:
    """The top-down split over the complete blocks of one Hilbert range (after the carried
    block of the previous range); same contract as :func:`dpriv.anonymity.jsreduce.scan_range`
    (the carried rows: the last block, empty when ``last``)."""
    head, tail = _in_key_order(carry, _keyed(part))
    blocks = block_ids(
        np.concatenate([head[HKEY].to_numpy(np.uint64), tail[HKEY].to_numpy(np.uint64)]), policy
    )
    n = len(blocks)
    # blocks are key prefixes and the rows in key order: the carried last block is a suffix,
    # cut by slicing (no take of every column)
    end = int(np.searchsorted(blocks, blocks[-1])) if (n and not last) else n
    rows, rest = _cut_at(head, tail, end)
    th = {c.name: c.threshold for c in criteria_for(policy, "jsreduce")}
    group = topdown_groups(
        split_coords(rows, policy),
        rows[SCODE].to_numpy(),
        rows[policy.prior_columns].to_numpy(dtype=np.float64),
        view_counts,
        k=th["k"],
        t=th["t"],
        j=th["j"],
        ground=GROUNDS[policy.emd_ground],
        log_base=policy.log_base,
        blocks=blocks[:end],
        pc=policy.topdown_pc,
        cut=policy.topdown_cut,
        c=th.get("rbk_closeness", 1.0),
    )
    done = rows.assign(**{LABEL: group_labels(rows[TIE].to_numpy(np.uint64), group, policy.seed)})
    return RangeResult(done.reset_index(drop=True), rest)


def _in_key_order(carry: pd.DataFrame | None, part: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The carried rows and the range's (keyed) as two frames whose rows, one after the other,
    are ``key_ordered(pd.concat([carry, part]))``: the range's rows alone are sorted when the
    carried rows come before them, in (key, tie) order and with the same dtypes (as the ranges
    before hand them on); else the whole concatenation (and no rows after it)."""
    if carry is None or not len(carry):
        return key_ordered(part), part.iloc[:0]
    tail = key_ordered(part)
    ends = [
        np.concatenate([carry[c].to_numpy(np.uint64), tail[c].to_numpy(np.uint64)[:1]]) for c in (HKEY, TIE)
    ]
    if carry.dtypes.equals(part.dtypes) and in_order(ends):
        return carry.reset_index(drop=True), tail
    return key_ordered(pd.concat([carry, part], ignore_index=True)), part.iloc[:0]


def _cut_at(head: pd.DataFrame, tail: pd.DataFrame, end: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The first ``end`` rows of ``head`` then ``tail`` and the rest, each with a fresh index."""
    if not len(tail):
        return head.iloc[:end], head.iloc[end:].reset_index(drop=True)
    if end >= len(head):
        rows = pd.concat([head, tail.iloc[: end - len(head)]], ignore_index=True)
        return rows, tail.iloc[end - len(head) :].reset_index(drop=True)
    return head.iloc[:end], pd.concat([head.iloc[end:], tail], ignore_index=True)
