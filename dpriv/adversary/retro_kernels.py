"""Compiled steps of the forward-backward of :mod:`dpriv.adversary.smoothing`, with the
forward messages kept between calls (the release gate's path, :mod:`dpriv.adversary.retro_last`).

:func:`dpriv.adversary.smoothing._fb_kernel` runs a respondent's whole window from her first
step at every call: the retrospective adversary calls it once per as-of release, so a reading
of ``T`` releases costs O(T^2) steps per respondent. Here the filtered message of every step
(α_t over the sparse set of reached context states, in the order the states were reached,
with the step's restart / ignored flags) is stored once computed
(:class:`dpriv.adversary.retro_trellis.Trellis` holds the arrays and calls these), and

* ``forward_kernel`` extends each respondent's stored steps up to a given end (one step per new
  release, not the whole window again); ``live_kernel`` reads her alive mass after a step;
* ``predict_kernel`` gives the forward prediction of a step from the stored message before it (the
  emission set to 1, nothing stored);
* ``backward_kernel`` runs the backward messages over a window from the stored α and writes every
  OBS step's cavity.

Each computes exactly what ``_fb_kernel`` computes for the same step, with the same floating
point operations in the same order (both run the steps of :mod:`dpriv.adversary.fb_steps`; the
sparse state lists keep the order of the dense kernel's ``act`` lists), so the results are the
same bytes (tests/test_gate_incremental.py checks it against the whole-window kernel).

Storage: for every global step ``s`` (the step arrays of
:class:`dpriv.adversary.retro_parts.Steps`), ``n[s]`` states at ``off[s]`` in the flat arrays
``code`` (int32, state codes) and ``alpha`` (float64, normalised α); ``restart[s]`` and
``ignored[s]`` as in ``_fb_kernel``. ``done[r]``: how many of respondent ``r``'s steps are
stored (her steps ``start[r] .. start[r] + done[r] - 1``). Before her first step her message
is the empty context (code 0) with weight 1.
"""

from __future__ import annotations

import numba
import numpy as np

from dpriv.adversary.fb_steps import (
    beta_at,
    beta_before,
    beta_one,
    by_position,
    cavity_sum,
    forward_step,
    write_cavity,
)

#: First size of the flat arrays: this many states per step (measured 80-120 on the medical
#: model of order 3, 19 values) unless the caller knows better, at least MIN_CAPACITY; they
#: double when full.
STATES_PER_STEP = 64
MIN_CAPACITY = 1024


@numba.njit(cache=True, nogil=True)
def forward_kernel(
    rows, start, upto, done, kind, emis, sigma, cls, flat, alive, off, mpow, st_len, st_ctx, order, q,
    s_off, s_n, s_code, s_alpha, s_restart, s_ignored, fill, cur, seen, act, init_c, init_a,
):  # pragma: no cover - compiled  # fmt: skip
    """Store the steps ``start[r] + done[r] .. upto[r] - 1`` of every ``r`` in ``rows``
    from ``fill[0]`` on in the flat arrays; False when they are full (``done`` and ``fill``
    tell where to resume)."""
    cap = s_code.shape[0]
    used = fill[0]
    nact = np.zeros(1, np.int64)
    cur2 = cur.reshape((1, cur.shape[0]))  # the same memory, as forward_step writes it
    for r in rows:
        c = cls[r]
        for st in range(start[r] + done[r], upto[r]):
            if st == start[r]:
                pc, pa = init_c, init_a
            else:
                o, n = s_off[st - 1], s_n[st - 1]
                pc, pa = s_code[o : o + n], s_alpha[o : o + n]
            n, rs, ig = forward_step(
                pc, pa, by_position, kind[st], emis, st, sigma[st], c, flat, alive, off, mpow, st_len, st_ctx,
                order, q, cur2, 0, seen, act, nact, 0,
            )  # fmt: skip
            if used + n > cap:
                for a in range(n):
                    cur[act[0, a]] = 0.0
                    seen[0, act[0, a]] = False
                return False
            for a in range(n):
                y = act[0, a]
                s_code[used + a] = y
                s_alpha[used + a] = cur[y]
                cur[y] = 0.0
                seen[0, y] = False
            s_off[st], s_n[st] = used, n
            s_restart[st], s_ignored[st] = rs, ig
            used += n
            fill[0] = used
            done[r] += 1
    return True


@numba.njit(cache=True, nogil=True)
def live_kernel(rows, start, upto, cls, alive, off, mpow, st_len, st_ctx, s_off, s_n, s_code, s_alpha, out):  # noqa: E501  # pragma: no cover
    """Alive mass of the stored message at step ``upto[r] - 1`` (``_fb_kernel``'s ``live``)."""
    for r in rows:
        c = cls[r]
        st = upto[r] - 1
        lm = 0.0
        if st >= start[r]:
            o = s_off[st]
            for a in range(s_n[st]):
                x = s_code[o + a]
                L = st_len[x]
                if alive[off[L] + c * mpow[L] + st_ctx[x]]:
                    lm += s_alpha[o + a]
        out[r] = lm


@numba.njit(cache=True, nogil=True)
def predict_kernel(
    rows, steps, start, cls, flat, alive, off, mpow, st_len, st_ctx, order, s_off, s_n, s_code, s_alpha,
    init_c, init_a, out,
):  # pragma: no cover - compiled  # fmt: skip
    """Forward prediction of the OBS step ``steps[k]`` of respondent ``rows[k]`` (the step
    before it stored) into ``out[k]``: ``_fb_kernel`` with the emission of that step set to 1
    and the window ending there. β is then 1 on every state of the step, so the cavity is
    Σ_x α(x) T(x, s) over the alive states x; the step restarts from BK^sv exactly when
    that sum is 0 (its α is the same products w·p·1, all non-negative and finite)."""
    m = flat.shape[1]
    cav = np.zeros(m)
    for k in range(rows.shape[0]):
        r = rows[k]
        st = steps[k]
        c = cls[r]
        if st == start[r]:
            pc, pa = init_c, init_a
        else:
            o, n = s_off[st - 1], s_n[st - 1]
            pc, pa = s_code[o : o + n], s_alpha[o : o + n]
        tot = cavity_sum(
            pc, pa, by_position, False, c, flat, alive, off, mpow, st_len, st_ctx, order, cav, beta_one, cav
        )  # fmt: skip
        if not (tot > 0.0):  # restart from BK^sv
            tot = cavity_sum(
                pc, pa, by_position, True, c, flat, alive, off, mpow, st_len, st_ctx, order, cav, beta_one,
                cav,
            )  # fmt: skip
        write_cavity(cav, tot, c, flat, off, mpow, out[k])


@numba.njit(cache=True, nogil=True)
def backward_kernel(
    rows, start, end, kind, emis, sigma, cls, flat, alive, off, mpow, st_len, st_ctx, order, q,
    s_off, s_n, s_code, s_alpha, s_restart, s_ignored, init_c, init_a, bcur, bprev, out,
):  # pragma: no cover - compiled  # fmt: skip
    """The backward pass of ``_fb_kernel`` over the stored window ``start[r] .. end[r] - 1``:
    the cavity of every OBS step into ``out``."""
    m = flat.shape[1]
    cav = np.zeros(m)
    for r in rows:
        s0 = start[r]
        T = end[r] - s0
        c = cls[r]
        o = s_off[s0 + T - 1]
        for a in range(s_n[s0 + T - 1]):
            bcur[s_code[o + a]] = 1.0
        for t in range(T, 0, -1):
            st = s0 + t - 1
            if t == 1:
                pc, pa = init_c, init_a
            else:
                o, n = s_off[st - 1], s_n[st - 1]
                pc, pa = s_code[o : o + n], s_alpha[o : o + n]
            if kind[st] == 0:
                tot = cavity_sum(
                    pc, pa, by_position, s_restart[st], c, flat, alive, off, mpow, st_len, st_ctx, order,
                    bcur, beta_at, cav,
                )  # fmt: skip
                write_cavity(cav, tot, c, flat, off, mpow, out[st])
            if t == 1:
                break
            # beta of step t - 1 on the states of its message
            beta_before(
                pc, s_restart[st], s_ignored[st], kind[st], emis[st], sigma[st], c, flat, alive, off, mpow,
                st_len, st_ctx, order, q, bcur, bprev,
            )  # fmt: skip
            o = s_off[st]
            for a in range(s_n[st]):
                bcur[s_code[o + a]] = 0.0
            tmp = bcur
            bcur = bprev
            bprev = tmp
        o = s_off[s0]
        for a in range(s_n[s0]):
            bcur[s_code[o + a]] = 0.0
