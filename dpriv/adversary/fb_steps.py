"""The steps of the forward-backward of :mod:`dpriv.adversary.smoothing` (one home for both
kernels that run it: the whole-window ``_fb_kernel`` and the stored-message kernels of
:mod:`dpriv.adversary.retro_kernels`).

A *message* of a step is the sparse list of reached context states ``pc`` (int codes, in the
order they were reached) with their normalised forward weights ``pa`` (float64), read by the
compiled function ``weight``: :func:`by_position` (``pa[a]`` belongs to ``pc[a]``, the stored
messages of :mod:`dpriv.adversary.retro_kernels`) or :func:`by_code` (``pa[pc[a]]``, the
whole-window kernel's dense α rows); before a respondent's first step it is the empty context
(code 0) with weight 1. β messages are dense by state code (float64, shape (n_codes,)).
Passing the accessors as functions (each its own type to numba) compiles each kernel with its
own, with no branch in the loops; the helpers are inlined (``inline="always"``): measured, a
branch on a flag or a call per step cost the whole-window kernel 5-13 %.

* :func:`forward_step`: α of the next step from a message (the emission of an OBS step, or an
  absence), with the restart from BK^sv / ignored absence of the module doc of
  :mod:`dpriv.adversary.smoothing`;
* :func:`cavity_sum` / :func:`write_cavity`: the cavity of an OBS step (E14's prior),
  Σ_x α_{t-1}(x) T(x, s) β_t(x ⊕ s), then normalised into a row of the output;
* :func:`beta_before`: β of step t - 1 on the states of its message, from β of step t.

Both kernels call exactly these, so their floating point operations run in the same order and
their results are the same bytes (tests/test_gate_incremental.py checks it).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def next_state(x, v, m1, n_codes, order):  # pragma: no cover - compiled
    """The context state after state ``x`` draws value ``v`` (codes base ``m1``)."""
    if order == 0:
        return 0
    return (x * m1) % n_codes + v + 1


@numba.njit(cache=True, nogil=True, inline="always")
def _add(t, y, seen, act, nact):  # pragma: no cover - compiled
    """Make state ``y`` active at step ``t`` (once): the sparse set of reached states."""
    if not seen[t, y]:
        seen[t, y] = True
        act[t, nact[t]] = y
        nact[t] += 1


@numba.njit(cache=True, nogil=True, inline="always")
def by_position(pa, a, x):  # pragma: no cover - compiled
    """The weight of the ``a``-th state ``x`` of a message stored by position."""
    return pa[a]


@numba.njit(cache=True, nogil=True, inline="always")
def by_code(pa, a, x):  # pragma: no cover - compiled
    """The weight of the ``a``-th state ``x`` of a message dense by state code."""
    return pa[x]


@numba.njit(cache=True, nogil=True, inline="always")
def beta_at(beta, y):  # pragma: no cover - compiled
    """β of state ``y`` (dense by code)."""
    return beta[y]


@numba.njit(cache=True, nogil=True, inline="always")
def beta_one(beta, y):  # pragma: no cover - compiled
    """β = 1 on every state (a forward prediction: the window ends at the step)."""
    return 1.0


@numba.njit(cache=True, nogil=True, inline="always")
def forward_step(
    pc, pa, weight, kd, emis, st, sg, c, flat, alive, off, mpow, st_len, st_ctx, order, q, cur, crow, seen,
    act, nact, t,
):  # pragma: no cover - compiled  # fmt: skip
    """One forward step from the message (``pc``, ``pa``, ``weight``) of class ``c``: OBS
    (``kd`` 0, emission ``emis[st]``, float64 (M,)) or ABS (``kd`` 1, suppression share ``sg``,
    attendance ``q``).

    Writes the normalised α of the step into ``cur[crow]`` (float64 (n_codes,), zero on entry;
    dense by code) on the states ``act[t, :n]`` (int64 (>t, n_codes)); ``seen[t]`` (bool (>t,
    n_codes), False on entry) marks them; ``nact[t]`` (int64 (>t,)) gets ``n``. The caller
    reads and clears ``cur`` and ``seen`` on those states. Returns (n, restart, ignored): the
    step restarted from BK^sv (an OBS nothing explains), or ignored (an ABS nothing explains)."""
    m = flat.shape[1]
    m1 = m + 1
    n_codes = st_len.shape[0]
    nact[t] = 0
    restart = False
    ignored = False
    qs = q * sg
    for a in range(pc.shape[0]):
        x = pc[a]
        w = weight(pa, a, x)  # 0: a state reached by ignoring one emission
        L = st_len[x]
        row = off[L] + c * mpow[L] + st_ctx[x]
        if kd == 0:
            if not alive[row]:
                continue
            for v in range(m):
                p = flat[row, v]
                e = emis[st, v]
                if p > 0.0 and (w > 0.0 or e > 0.0):
                    y = next_state(x, v, m1, n_codes, order)
                    _add(t, y, seen, act, nact)
                    cur[crow, y] += w * p * e
        else:
            stay = w if not alive[row] else w * (1.0 - q)
            if not alive[row] or q < 1.0:
                _add(t, x, seen, act, nact)
                cur[crow, x] += stay
            if alive[row] and qs > 0.0:
                for v in range(m):
                    p = flat[row, v]
                    if p > 0.0:
                        y = next_state(x, v, m1, n_codes, order)
                        _add(t, y, seen, act, nact)
                        cur[crow, y] += w * qs * p
    n = nact[t]
    tot = 0.0
    for a in range(n):
        tot += cur[crow, act[t, a]]
    if not (tot > 0.0) or not np.isfinite(tot):
        for a in range(n):
            cur[crow, act[t, a]] = 0.0
            seen[t, act[t, a]] = False
        nact[t] = 0
        if kd == 0:  # restart from BK^sv (a first appearance)
            restart = True
            for v in range(m):
                p = flat[off[0] + c * mpow[0], v]
                if p > 0.0:
                    y = next_state(0, v, m1, n_codes, order)
                    _add(t, y, seen, act, nact)
                    cur[crow, y] += p * emis[st, v]
        else:  # an absence the model cannot explain: ignore it
            ignored = True
            for a in range(pc.shape[0]):
                x = pc[a]
                seen[t, x] = True
                act[t, a] = x
                cur[crow, x] = weight(pa, a, x)
            nact[t] = pc.shape[0]
        n = nact[t]
        tot = 0.0
        for a in range(n):
            tot += cur[crow, act[t, a]]
    if tot > 0.0:
        for a in range(n):
            cur[crow, act[t, a]] /= tot
    return n, restart, ignored


@numba.njit(cache=True, nogil=True, inline="always")
def cavity_sum(
    pc, pa, weight, restart, c, flat, alive, off, mpow, st_len, st_ctx, order, beta, at, cav
):  # pragma: no cover - compiled  # fmt: skip
    """Unnormalised cavity of an OBS step into ``cav`` (float64 (M,)) from the message before
    it (``pc``, ``pa``, ``weight``) and β of the step (``at(beta, code)``: :func:`beta_at`, or
    :func:`beta_one` for a forward prediction); from BK^sv when the step ``restart``-ed.
    Returns its sum."""
    m = flat.shape[1]
    m1 = m + 1
    n_codes = st_len.shape[0]
    for v in range(m):
        cav[v] = 0.0
    if restart:
        row = off[0] + c * mpow[0]
        for v in range(m):
            p = flat[row, v]
            if p > 0.0:
                cav[v] += p * at(beta, next_state(0, v, m1, n_codes, order))
    else:
        for a in range(pc.shape[0]):
            x = pc[a]
            L = st_len[x]
            row = off[L] + c * mpow[L] + st_ctx[x]
            if not alive[row]:
                continue
            w = weight(pa, a, x)
            for v in range(m):
                p = flat[row, v]
                if p > 0.0:
                    cav[v] += w * p * at(beta, next_state(x, v, m1, n_codes, order))
    tot = 0.0
    for v in range(m):
        tot += cav[v]
    return tot


@numba.njit(cache=True, nogil=True, inline="always")
def write_cavity(cav, tot, c, flat, off, mpow, out_row):  # pragma: no cover - compiled
    """``out_row`` (float64 (M,)) = ``cav / tot``; BK^sv of class ``c`` when ``tot`` is not a
    positive finite number."""
    m = flat.shape[1]
    if tot > 0.0 and np.isfinite(tot):
        for v in range(m):
            out_row[v] = cav[v] / tot
    else:
        for v in range(m):
            out_row[v] = flat[off[0] + c * mpow[0], v]


@numba.njit(cache=True, nogil=True, inline="always")
def beta_before(
    pc, restart, ignored, kd, erow, sg, c, flat, alive, off, mpow, st_len, st_ctx, order, q, bnext, bprev
):  # pragma: no cover - compiled
    """β of the step before a step (on its message's states ``pc``) into ``bprev`` (dense by
    code), from β of the step (``bnext``, dense by code) and the step's kind ``kd``, emission
    ``erow``, suppression share ``sg`` and restart / ignored flags; normalised by its largest
    value (when positive)."""
    m = flat.shape[1]
    m1 = m + 1
    n_codes = st_len.shape[0]
    bt = 0.0
    for a in range(pc.shape[0]):
        x = pc[a]
        if restart:
            b = 1.0
        elif ignored:
            b = bnext[x]
        else:
            L = st_len[x]
            row = off[L] + c * mpow[L] + st_ctx[x]
            b = 0.0
            if kd == 0:
                if alive[row]:
                    for v in range(m):
                        p = flat[row, v] * erow[v]
                        if p > 0.0:
                            b += p * bnext[next_state(x, v, m1, n_codes, order)]
            else:
                if not alive[row]:
                    b = bnext[x]
                else:
                    b = (1.0 - q) * bnext[x] if q < 1.0 else 0.0
                    qs = q * sg
                    if qs > 0.0:
                        for v in range(m):
                            p = flat[row, v]
                            if p > 0.0:
                                b += qs * p * bnext[next_state(x, v, m1, n_codes, order)]
        bprev[x] = b
        if b > bt:
            bt = b
    if bt > 0.0:
        for a in range(pc.shape[0]):
            bprev[pc[a]] /= bt
