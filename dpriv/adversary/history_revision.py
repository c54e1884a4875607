"""Whole-history revision: (E5) with the weights of (E6) over every full history the model
allows, a forward pass per respondent (issue 11, item 5; docs/algorithms.md §1.4).

The paper adversary's default reading, (E7), revises from the last ``n' = min(n, L)``
posteriors only (:func:`dpriv.knowledge.revision.revise`). The *history* reading sums (E5)
over every past ``λ = (λ_1 .. λ_L)`` of the respondent, each weighted by (E6)
``Π_l PK_l(λ_l)``, but only over the histories the chain of BK^seq allows (first value with
BK^sv > 0, every later one with ``BK^seq(context, λ_l) > 0``, the context being the last
``min(l - 1, n)`` values, exactly as :meth:`MarkovTables.predict` and the generator read a
history), and only over those whose last context is not exited (she is back)::

    RBK_s = Σ_{λ allowed, alive} BK^seq(ctx(λ))_s Π_l PK_l(λ_l)  /  Σ_{λ allowed, alive} Π_l PK_l(λ_l)

That sum is a forward pass over the context states of the last ``n`` values (``α_l(x)``:
the weight of the allowed histories ending in context ``x``), so it costs
``O(L · #states · M)`` per respondent instead of ``M^L``. Where no allowed history has
positive weight, the result is BK^sv (like (E7)); an observation no allowed history
explains restarts the chain from BK^sv there (misspecified knowledge, as in
:mod:`dpriv.adversary.smoothing`).

**Gaps** (a release after her first appearance without her posterior: she had no exam, or
her exam was suppressed). Without ``attendance`` the chain steps once per posterior (gaps
carry no information; (E7) reads a history the same way). With the model's weekly exam
probability ``q`` the reading is time-aware: every missing week is one step of the weekly
chain given that she was not released, ``G = (1 - q)·I + q·σ·T`` on active contexts (no
exam, or an exam the release suppressed with its published share ``σ``) and ``I`` on exited
ones, so a gap of ``g`` weeks applies ``P^gap = G_1 ... G_g`` (one ``σ`` per release). The
same convention as the retrospective adversary's absences.

When they agree: with ``L <= n`` and no gaps (or no ``attendance``), this equals (E7) for
tables whose non-zero rows are exactly the reachable contexts (true of the generator's
exact model; the tests check it).
"""

from __future__ import annotations

import numba
import numpy as np

from dpriv.adversary.compiled import CompiledTables
from dpriv.adversary.fb_steps import next_state
from dpriv.adversary.smoothing import ABS, OBS, attendance_q
from dpriv.errors import InputError


@numba.njit(cache=True, nogil=True)
def _history_kernel(
    start, end, kind, emis, sigma, cls, flat, alive, off, mpow, st_len, st_ctx, order, q, out
):  # pragma: no cover - compiled
    m = flat.shape[1]
    m1 = m + 1
    n_codes = st_len.shape[0]
    cur = np.zeros(n_codes)
    nxt = np.zeros(n_codes)
    seen = np.zeros(n_codes, np.bool_)
    act = np.zeros(n_codes, np.int64)
    act2 = np.zeros(n_codes, np.int64)
    for r in range(start.shape[0]):
        c = cls[r]
        root = off[0] + c * mpow[0]
        n_act = 1
        act[0] = 0
        cur[0] = 1.0
        for st in range(start[r], end[r]):
            n2 = 0
            qs = q * sigma[st]
            for a in range(n_act):
                x = act[a]
                w = cur[x]
                row = off[st_len[x]] + c * mpow[st_len[x]] + st_ctx[x]
                if kind[st] == 0:
                    if not alive[row]:
                        continue
                    for v in range(m):
                        if flat[row, v] > 0.0 and emis[st, v] > 0.0:
                            y = next_state(x, v, m1, n_codes, order)
                            if not seen[y]:
                                seen[y] = True
                                act2[n2] = y
                                n2 += 1
                            nxt[y] += w * emis[st, v]
                else:
                    if not alive[row] or q < 1.0:
                        if not seen[x]:
                            seen[x] = True
                            act2[n2] = x
                            n2 += 1
                        nxt[x] += w if not alive[row] else w * (1.0 - q)
                    if alive[row] and qs > 0.0:
                        for v in range(m):
                            p = flat[row, v]
                            if p > 0.0:
                                y = next_state(x, v, m1, n_codes, order)
                                if not seen[y]:
                                    seen[y] = True
                                    act2[n2] = y
                                    n2 += 1
                                nxt[y] += w * qs * p
            tot = 0.0
            for a in range(n2):
                tot += nxt[act2[a]]
            if not (tot > 0.0) or not np.isfinite(tot):
                for a in range(n2):
                    nxt[act2[a]] = 0.0
                    seen[act2[a]] = False
                n2 = 0
                if kind[st] == 0:  # restart from BK^sv, as a first appearance
                    for v in range(m):
                        if flat[root, v] > 0.0 and emis[st, v] > 0.0:
                            y = next_state(0, v, m1, n_codes, order)
                            if not seen[y]:
                                seen[y] = True
                                act2[n2] = y
                                n2 += 1
                            nxt[y] += emis[st, v]
                else:  # an absence the model cannot explain: ignored
                    for a in range(n_act):
                        x = act[a]
                        seen[x] = True
                        act2[n2] = x
                        n2 += 1
                        nxt[x] = cur[x]
                tot = 0.0
                for a in range(n2):
                    tot += nxt[act2[a]]
            for a in range(n_act):
                cur[act[a]] = 0.0
            for a in range(n2):
                y = act2[a]
                cur[y] = nxt[y] / tot if tot > 0.0 else 0.0
                nxt[y] = 0.0
                seen[y] = False
                act[a] = y
            n_act = n2
        # RBK: the prediction of the alive end contexts, normalised
        den = 0.0
        for v in range(m):
            out[r, v] = 0.0
        for a in range(n_act):
            x = act[a]
            row = off[st_len[x]] + c * mpow[st_len[x]] + st_ctx[x]
            w = cur[x]
            if alive[row] and w > 0.0:
                den += w
                for v in range(m):
                    out[r, v] += w * flat[row, v]
            cur[x] = 0.0
        tot = 0.0
        for v in range(m):
            tot += out[r, v]
        if den > 0.0 and tot > 0.0 and np.isfinite(tot):
            for v in range(m):
                out[r, v] /= tot
        else:
            for v in range(m):
                out[r, v] = flat[root, v]


def revise_history(
    compiled: CompiledTables,
    start: np.ndarray,
    end: np.ndarray,
    kind: np.ndarray,
    posteriors: np.ndarray,
    sigma: np.ndarray,
    cls: np.ndarray,
    *,
    attendance: float | None = None,
) -> np.ndarray:
    """RBK^sv by the whole-history sum (module doc) for many respondents.

    Parameters
    ----------
    compiled : CompiledTables
        The adversary's BK^sv / BK^seq (:class:`CompiledTables` of a :class:`MarkovTables`).
    start, end : ndarray of int64, shape (n,)
        Respondent ``r``'s steps are ``start[r] .. end[r] - 1`` of the step arrays, oldest
        first, from her first posterior on (an empty window gives BK^sv).
    kind : ndarray of int8, shape (n_steps,)
        ``OBS`` (a posterior) or ``ABS`` (a missing week, only with ``attendance``).
    posteriors : ndarray of float64, shape (n_steps, M)
        PK^sv of each OBS step (the (E6) factor); ignored for ABS steps.
    sigma : ndarray of float64, shape (n_steps,)
        Published suppression share of the release of each ABS step, in [0, 1].
    cls : ndarray of int64, shape (n,)
        Knowledge class of each respondent.
    attendance : float in (0, 1], optional
        Weekly exam probability q of the model; required for ABS steps.

    Returns
    -------
    ndarray of float64, shape (n, M)
        RBK^sv of each respondent for her next exam; rows sum to 1.

    Raises
    ------
    InputError
        Mismatched shapes, classes outside the tables, ABS steps without an attendance, or
        an attendance outside (0, 1].
    """
    start = np.ascontiguousarray(start, dtype=np.int64)
    end = np.ascontiguousarray(end, dtype=np.int64)
    kind = np.ascontiguousarray(kind, dtype=np.int8)
    posteriors = np.ascontiguousarray(posteriors, dtype=np.float64)
    sigma = np.ascontiguousarray(sigma, dtype=np.float64)
    cls = np.ascontiguousarray(cls, dtype=np.int64)
    m = compiled.m
    n_steps = kind.size
    if posteriors.shape != (n_steps, m) or sigma.shape != (n_steps,):
        raise InputError(f"posteriors must have shape ({n_steps}, {m}) and sigma ({n_steps},)")
    if start.shape != end.shape or cls.shape != start.shape:
        raise InputError("start, end and cls must have one entry per respondent")
    if start.size and (start.min() < 0 or end.max() > n_steps or (end < start).any()):
        raise InputError("start/end must delimit windows inside the step arrays")
    n_classes = int(compiled.off[1] if compiled.order else compiled.flat.shape[0])
    if cls.size and (cls.min() < 0 or cls.max() >= n_classes):
        raise InputError(f"knowledge classes must lie in 0..{n_classes - 1}")
    q = attendance_q(attendance, kind)
    out = np.zeros((start.size, m))
    if start.size:
        _history_kernel(
            start,
            end,
            kind,
            posteriors,
            sigma,
            cls,
            *compiled.kernel_args,
            q,
            out,
        )
    return out


class PosteriorHistory:
    """Every posterior the paper adversary computed, release by release, for the history
    reading: :meth:`append` after each release, :meth:`revise` before the next.

    Parameters
    ----------
    n_values : int
        M = |D[S]|.
    """

    def __init__(self, n_values: int) -> None:
        self.m = n_values
        self._ids: list[np.ndarray] = []  # sorted respondent ids per release
        self._post: list[np.ndarray] = []  # their posteriors, same order
        self._sigma: list[float] = []

    def append(self, ids: np.ndarray, posteriors: np.ndarray, suppression: float) -> None:
        """Record release ``len(self)``: its kept respondents, their PK^sv (n, M) and the
        published suppression share of the release."""
        ids = np.asarray(ids)
        order = np.argsort(ids, kind="stable")
        self._ids.append(ids[order])
        self._post.append(np.asarray(posteriors, dtype=np.float64)[order])
        self._sigma.append(float(suppression))

    def __len__(self) -> int:
        return len(self._ids)

    def steps(self, ids: np.ndarray, absences: bool) -> tuple[np.ndarray, ...]:
        """Step arrays of the respondents ``ids`` over the recorded releases:
        ``(start, end, kind, posteriors, sigma)`` as :func:`revise_history` takes them; a
        missing release after her first posterior is an ABS step when ``absences``."""
        ids = np.asarray(ids)
        n, p_count = ids.size, len(self)
        present = np.zeros((n, p_count), dtype=bool)
        where = np.zeros((n, p_count), dtype=np.int64)
        for p, known in enumerate(self._ids):
            loc = np.searchsorted(known, ids)
            hit = loc < known.size
            hit[hit] = known[loc[hit]] == ids[hit]
            present[:, p] = hit
            where[:, p] = np.where(hit, loc, 0)
        seen = present.any(axis=1)
        first = np.where(seen, present.argmax(axis=1) if p_count else 0, p_count)
        keep = present | (absences & (np.arange(p_count)[None, :] >= first[:, None]))
        r_idx, p_idx = np.nonzero(keep)  # row-major: sorted by (respondent, release)
        kind = np.where(present[r_idx, p_idx], OBS, ABS).astype(np.int8)
        post = np.zeros((r_idx.size, self.m))
        for p in range(p_count):
            sel = (p_idx == p) & (kind == OBS)
            post[sel] = self._post[p][where[r_idx[sel], p]]
        sigma = np.asarray(self._sigma, dtype=np.float64)[p_idx] if p_count else np.zeros(0)
        start = np.searchsorted(r_idx, np.arange(n)).astype(np.int64)
        end = np.searchsorted(r_idx, np.arange(n), side="right").astype(np.int64)
        return start, end, kind, post, sigma

    def revise(
        self, ids: np.ndarray, cls: np.ndarray, compiled: CompiledTables, attendance: float | None = None
    ) -> np.ndarray:
        """RBK^sv (n, M) of the respondents ``ids`` (classes ``cls``) for the next release,
        by :func:`revise_history` over everything recorded (BK^sv for first-timers)."""
        start, end, kind, post, sigma = self.steps(ids, absences=attendance is not None)
        return revise_history(compiled, start, end, kind, post, sigma, cls, attendance=attendance)
