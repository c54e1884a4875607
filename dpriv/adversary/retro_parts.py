"""The per-respondent side of the retrospective adversary (:mod:`dpriv.adversary.retrospective`):
respondents split into partitions, each running the forward-backward of its own respondents.

A :class:`Part` holds, for its respondents only, their steps (one per release from the first
appearance; :class:`Steps`), the emission of every released step and the cavities of the last
pass. Per as-of release ``a`` it answers two calls:

1. :meth:`Part.predict` -- the forward prediction of its members of release ``a`` (their
   priors for the Ω step of ``a``'s groups);
2. :meth:`Part.absorb` -- given its members' emissions at ``a`` (Ω posterior / prediction,
   computed by the caller from every member of each group), the forward-backward of the
   respondents whose window grew, and the cavity of every one of its tuples of releases
   ``<= a``.

The kernel processes each respondent on her own, so a tuple's prediction and cavity do not
depend on which partition holds her: the caller assembles them in release order and runs
Ω on whole groups, and the result is the same bytes for any partitioning.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpriv.adversary.compiled import CompiledTables
from dpriv.adversary.observed import ObservedRelease
from dpriv.adversary.smoothing import ABS, OBS, forward_backward
from dpriv.errors import InputError


class Steps:
    """Every respondent's steps (one per release from her first appearance), sorted by
    (respondent, release); OBS where she is released, ABS where absent (if modelled)."""

    def __init__(self, observed: Sequence[ObservedRelease], absences: bool) -> None:
        p_count = len(observed)
        rid = np.concatenate([o.respondent for o in observed])
        self.ids, inv = np.unique(rid, return_inverse=True)
        n_r = self.ids.size
        sizes = [o.respondent.size for o in observed]
        pos = np.repeat(np.arange(p_count), sizes)
        tup = np.concatenate([np.arange(s) for s in sizes]) if sizes else np.zeros(0, np.int64)
        present = np.zeros((n_r, p_count), dtype=bool)
        present[inv, pos] = True
        if present.sum() != rid.size:
            raise InputError("a respondent appears twice in one release")
        first = present.argmax(axis=1)
        self.cls = np.zeros(n_r, dtype=np.int64)
        cls_all = np.concatenate([o.cls for o in observed]).astype(np.int64)
        at_first = pos == first[inv]
        self.cls[inv[at_first]] = cls_all[at_first]
        grid = np.arange(p_count)[None, :] >= first[:, None]
        keep = grid & (present | absences)
        r_idx, p_idx = np.nonzero(keep)  # row-major: sorted by (respondent, release)
        self.resp, self.pos = r_idx.astype(np.int64), p_idx.astype(np.int64)
        self.kind = np.where(present[r_idx, p_idx], OBS, ABS).astype(np.int8)
        self.start = np.searchsorted(self.resp, np.arange(n_r)).astype(np.int64)
        self.key = self.resp * p_count + self.pos
        self.p_count = p_count
        # step index and respondent of every released tuple, per release (tuple order)
        self.tuple_step, self.tuple_resp = [], []
        for p in range(p_count):
            r = inv[pos == p][np.argsort(tup[pos == p])]
            self.tuple_step.append(np.searchsorted(self.key, r * p_count + p).astype(np.int64))
            self.tuple_resp.append(r)

    def end_at(self, p: int) -> np.ndarray:
        """Exclusive end of each respondent's window of steps at releases <= position p."""
        r = np.arange(self.ids.size, dtype=np.int64)
        return np.searchsorted(self.key, r * self.p_count + p, side="right").astype(np.int64)

    def end_before(self, a: int) -> np.ndarray:
        return self.end_at(a - 1) if a > 0 else self.start.copy()


def split(observed: Sequence[ObservedRelease], n_parts: int) -> list[list[np.ndarray]]:
    """Tuple positions of each partition in each release: respondents (sorted ids) cut into
    ``n_parts`` contiguous ranges of about equal size; ``out[k][p]`` (int64, sorted)."""
    if n_parts < 1:
        raise InputError(f"partitions must be >= 1, got {n_parts}")
    ids = np.unique(np.concatenate([o.respondent for o in observed])) if observed else np.zeros(0)
    cuts = ids[(np.arange(1, n_parts) * ids.size) // n_parts] if ids.size else np.zeros(0)
    out: list[list[np.ndarray]] = [[] for _ in range(n_parts)]
    for o in observed:
        part = np.searchsorted(cuts, o.respondent, side="right")
        for k in range(n_parts):
            out[k].append(np.flatnonzero(part == k).astype(np.int64))
    return out


def subset(o: ObservedRelease, rows: np.ndarray) -> ObservedRelease:
    """The tuples ``rows`` of a release (counts and suppression stay the whole release's)."""
    return ObservedRelease(
        o.index, o.respondent[rows], o.group[rows], o.counts, o.cls[rows], o.truth[rows], o.n_suppressed
    )


class Part:
    """One partition's respondents (module doc).

    Parameters
    ----------
    observed : sequence of ObservedRelease
        Its tuples of every release (:func:`subset`), in release order.
    sigma : sequence of float
        Published suppression share of every release.
    compiled : CompiledTables
    attendance : float or None
    """

    def __init__(
        self,
        observed: Sequence[ObservedRelease],
        sigma: Sequence[float],
        compiled: CompiledTables,
        attendance: float | None,
    ) -> None:
        self.steps = Steps(observed, absences=attendance is not None)
        self.compiled, self.attendance = compiled, attendance
        n_steps, m = self.steps.resp.size, compiled.m
        self.sigma = np.asarray(sigma, dtype=np.float64)[self.steps.pos] if n_steps else np.zeros(0)
        self.emission = np.zeros((n_steps, m))
        self.cavity = np.zeros((n_steps, m))
        self.live = np.ones(self.steps.ids.size)
        self.stale = np.zeros(self.steps.ids.size, dtype=bool)

    def _passes(self, rows: np.ndarray, end: np.ndarray, backward: bool) -> np.ndarray:
        s = self.steps
        return forward_backward(
            self.compiled,
            rows,
            s.start,
            end,
            s.kind,
            self.emission,
            self.sigma,
            s.cls,
            self.cavity,
            attendance=self.attendance,
            backward=backward,
        )

    def predict(self, a: int, masks: Sequence[np.ndarray] | None = None) -> np.ndarray:
        """Forward prediction (n_a_part, M) of its members of release position ``a``.

        ``masks``: its rows of the masks of releases ``0 .. a - 1`` as known after ``a``; a
        mask that tightens an earlier emission marks the respondent for the next pass."""
        s = self.steps
        self.stale[:] = False
        if masks is not None:
            for i in range(a):
                idx = s.tuple_step[i]
                new = self.emission[idx] * masks[i]
                changed = (new != self.emission[idx]).any(axis=1)
                self.emission[idx] = new
                self.stale[s.tuple_resp[i][changed]] = True
        at_a = s.tuple_step[a]
        self.emission[at_a] = 1.0
        self._passes(s.tuple_resp[a], s.end_at(a), backward=False)
        return self.cavity[at_a].copy()

    def absorb(self, a: int, emission: np.ndarray) -> list[np.ndarray]:
        """Set its members' emissions at ``a`` (n_a_part, M), run the forward-backward of the
        respondents with a step at ``a`` (absent ones while they may be active) and of the
        stale ones; the cavities (n_i_part, M) of its tuples of releases ``0 .. a``."""
        s = self.steps
        self.emission[s.tuple_step[a]] = emission
        end = s.end_at(a)
        active = self.live > 0
        active[s.tuple_resp[a]] = True
        rows = np.flatnonzero(((end > s.end_before(a)) & active) | self.stale)
        live_new = self._passes(rows, end, backward=True)
        self.live[rows] = live_new[rows]
        return [self.cavity[s.tuple_step[i]].copy() for i in range(a + 1)]


def _predict(part: Part, a: int, masks) -> tuple[Part, np.ndarray]:
    return part, part.predict(a, masks)


def _absorb(part: Part, a: int, emission: np.ndarray) -> tuple[Part, list[np.ndarray]]:
    return part, part.absorb(a, emission)


#: Task functions for a Dask graph: they return the (mutated) partition with the result, so
#: that each partition's calls form one chain.
TASKS = {"predict": _predict, "absorb": _absorb}
