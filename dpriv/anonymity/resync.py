"""The greedy scan's Hilbert ranges scanned at once, then put back in step with the chain.

The greedy scan (:func:`dpriv.anonymity.jsreduce.scan_range`) hands each range the open group
of the range before it, so a chain scans the ranges one after the other. Without deferral
(``defer_wait = 0``) the scan keeps nothing once a group closes: two scans of the same rows
that both close a group at the same row make the same decisions from there on. So each range
is first scanned alone, from an empty group (:func:`scan_alone`, every range at once); then,
range after range, the rows carried in are scanned again with the range's first rows until that
scan closes a group at a row where the lone scan closed one (:func:`resync`: a few hundred rows
on the paper's data, so the chain moves little); the rows up to there take the new groups, the
rest keep the lone scan's (:func:`spliced`, every range at once). Each range gets the groups,
labels and carried rows it gets in the chain, so the release has the same bytes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from dpriv.anonymity.jsreduce import labelled, scan_groups
from dpriv.hilbert.keys import HKEY, key_ordered
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL

#: Rows of a range scanned again with its carried rows at first (then 4x as many, up to all).
FIRST_ROWS = 1024


def close_steps(group: np.ndarray) -> np.ndarray:
    """Sorted int64 rows at which the scan closed a group: the last member of each group
    (>= 0). Without deferral members join in scan order, so a group closes at its last row."""
    kept = np.flatnonzero(group >= 0)
    if not len(kept):
        return np.zeros(0, dtype=np.int64)
    last = np.full(int(group[kept].max()) + 1, -1, dtype=np.int64)
    np.maximum.at(last, group[kept], kept)
    return np.sort(last[last >= 0])


class LoneScan(NamedTuple):
    """A range scanned from an empty group (a tuple: Dask's ``nout=3`` splits it)."""

    #: the rows with ``_label``, in (key, tie) order up to the last close
    done: pd.DataFrame
    #: the open tail, empty for the last range
    tail: pd.DataFrame
    #: the rows where groups closed (:func:`close_steps`)
    closes: np.ndarray


class Resynced(NamedTuple):
    """A lone scan put in step with the chain (a tuple: Dask's ``nout=3`` splits it)."""

    #: the rows that replace the lone scan's first ``upto`` rows, labelled as in the chain;
    #: None when nothing is carried in
    fix: pd.DataFrame | None
    upto: int
    #: the open tail to hand on
    carry: pd.DataFrame


def scan_alone(part: pd.DataFrame, policy: ReleasePolicy, view_counts: np.ndarray, last: bool) -> LoneScan:
    """The range scanned from an empty group."""
    if HKEY not in part.columns:
        part = part.rename_axis(HKEY).reset_index()
    rows = key_ordered(part)
    group = scan_groups(rows, policy, view_counts, last)
    done, tail = labelled(rows, group, policy)
    return LoneScan(done, tail, close_steps(group))


def resync(
    done: pd.DataFrame,
    tail: pd.DataFrame,
    closes: np.ndarray,
    carry: pd.DataFrame | None,
    policy: ReleasePolicy,
    view_counts: np.ndarray,
    last: bool,
) -> Resynced:
    """Put the lone scan of a range (``done``, ``tail``, ``closes`` of :func:`scan_alone`)
    in step with the chain, given the rows ``carry`` handed on by the range before."""
    if carry is None or not len(carry):
        return Resynced(None, 0, tail)
    n, c = len(done) + len(tail), len(carry)
    length = FIRST_ROWS
    while True:
        whole = length >= n
        head = pd.concat([carry, _prefix(done, tail, min(length, n))], ignore_index=True)
        group = scan_groups(head, policy, view_counts, last and whole)
        met = np.intersect1d(close_steps(group) - c, closes)
        if len(met):  # both scans closed a group at this row: the same decisions after it
            cut = c + int(met[0]) + 1
            return Resynced(labelled(head.iloc[:cut], group[:cut], policy).rows, int(met[0]) + 1, tail)
        if whole:
            fix, carried = labelled(head, group, policy)
            return Resynced(fix, n, carried)
        length *= 4


def _prefix(done: pd.DataFrame, tail: pd.DataFrame, length: int) -> pd.DataFrame:
    """The range's first ``length`` rows (``done`` then ``tail``) without their label: only
    those rows are copied (the chain of :func:`resync` moves little)."""
    head = done.iloc[:length].drop(columns=LABEL)
    if length <= len(done):
        return head
    return pd.concat([head, tail.iloc[: length - len(done)]], ignore_index=True)


def spliced(done: pd.DataFrame, fix: pd.DataFrame | None, upto: int) -> pd.DataFrame:
    """The range's rows as the chain labels them: ``fix`` in place of the first ``upto``."""
    if fix is None:
        return done
    if upto >= len(done):
        return fix
    return pd.concat([fix, done.iloc[upto:]], ignore_index=True)
