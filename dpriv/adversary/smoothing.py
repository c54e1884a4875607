"""Forward-backward over each respondent's released history under BK^seq (issue 11).

The hidden chain of one respondent is the sequence of her exam results; BK^seq
(:class:`~dpriv.knowledge.tables.MarkovTables`, orders 0..n) gives the next result from the
last ``L = min(#results so far, n)`` ones, exactly like :meth:`MarkovTables.predict` and the
generator (``dpriv.datasets._simulate``: one step per exam, BK^sv for the first one). A
context whose row is all zero is *exited* (e.g. after deceased / discharged): it emits
nothing more and stays where it is.

A respondent's *steps* are the releases from her first appearance on, in order; each is

* ``OBS`` -- she is released at that release; the step draws one result ``v`` from the
  table row and weighs it by the release's *emission* ``e[v]`` (what her QI-group says about
  her, up to a constant; 0 = impossible). Exited contexts cannot be observed (weight 0).
* ``ABS`` -- she is absent (only when absences are modelled, ``attendance`` q given): an
  exited context stays (weight 1); an active one either had no exam (``1 - q``, the chain
  stays) or had an exam that was suppressed (``q * sigma``, one unobserved result drawn from
  the row; ``sigma`` is the release's published suppression share).

The state is the context of the last ``order`` results, coded base ``M + 1`` (digit
``v + 1``, 0 = empty on the left), so a respondent's feasible states are enumerated sparsely
(only contexts the model and the emissions allow) in a compiled loop over respondents.

For every ``OBS`` step ``t`` the kernel returns the *cavity* distribution

    cav_t(s) ∝ Σ_x α_{t-1}(x) T(x, s) β_t(x ⊕ s)

(α: filtered state after the earlier steps, β: likelihood of the later steps), i.e.
P(s_t = s | every step of the window except the emission of step t): the prior that the
retrospective adversary feeds to one Ω step of the group of release t (docs/algorithms.md §3.3,
(E14); Ω depends on each prior's scale, so the cavity is the whole normalised distribution,
not only its part on the emission's support). The enumeration stays sparse: the states kept
at each step are those reachable when at most one emission is ignored (the filtered states
plus the states a cavity needs), with α = 0 on the latter. On the last step of the window
the cavity is the forward prediction.

Infeasible histories (misspecified knowledge: nothing the model allows explains an
observation) restart the chain at that step from BK^sv, as a first appearance; an absence
the model cannot explain (q = 1, sigma = 0, nothing exited) is ignored. With exact knowledge
neither happens.
"""

from __future__ import annotations

import numba
import numpy as np

from dpriv.adversary.compiled import CompiledTables
from dpriv.adversary.fb_steps import (
    beta_at,
    beta_before,
    by_code,
    cavity_sum,
    forward_step,
    write_cavity,
)
from dpriv.errors import InputError, PolicyError

OBS = 0
ABS = 1

#: Largest (#states x (window + 1)) scratch the kernel allocates (float64 x 3 + bool).
MAX_SCRATCH = 60_000_000


def attendance_q(attendance: float | None, kind: np.ndarray) -> float:
    """The weekly exam probability q the kernels use: ``attendance``, or 1 when the model's
    attendance is not given (then every step must be an :data:`OBS`).

    ``kind`` : array-like of int8, shape (n_steps,), :data:`OBS` or :data:`ABS`.

    Raises InputError: ABS steps (absences, missing weeks) without ``attendance``, or an
    attendance outside (0, 1].
    """
    if attendance is None:
        if (np.asarray(kind) == ABS).any():
            raise InputError(
                "absences (ABS steps: missing weeks) need the attendance q of the model: pass attendance"
            )
        return 1.0
    q = float(attendance)
    if not 0.0 < q <= 1.0:
        raise InputError(f"attendance must be in (0, 1], got {attendance!r}")
    return q


@numba.njit(cache=True, nogil=True)
def _fb_kernel(
    rows,
    start,
    end,
    kind,
    emis,
    sigma,
    cls,
    flat,
    alive,
    off,
    mpow,
    st_len,
    st_ctx,
    order,
    q,
    backward,
    out,
    live,
):  # pragma: no cover - compiled
    """Each respondent's whole window from her first step: the steps of
    :mod:`dpriv.adversary.fb_steps` on dense rows (α and β of step ``t`` by state code in
    ``alpha[t]``, ``beta[t]``; its states ``act[t, :nact[t]]``)."""
    m = flat.shape[1]
    n_codes = st_len.shape[0]
    tmax = 0
    for r in rows:
        if end[r] - start[r] > tmax:
            tmax = end[r] - start[r]
    alpha = np.zeros((tmax + 1, n_codes))
    beta = np.zeros((tmax + 1, n_codes))
    seen = np.zeros((tmax + 1, n_codes), np.bool_)
    act = np.zeros((tmax + 1, n_codes), np.int64)
    nact = np.zeros(tmax + 1, np.int64)
    restart = np.zeros(tmax + 1, np.bool_)
    ignored = np.zeros(tmax + 1, np.bool_)
    cav = np.zeros(m)
    for r in rows:
        s0 = start[r]
        T = end[r] - s0
        c = cls[r]
        alpha[0, 0] = 1.0
        seen[0, 0] = True
        act[0, 0] = 0
        nact[0] = 1
        for t in range(1, T + 1):
            st = s0 + t - 1
            _, restart[t], ignored[t] = forward_step(
                act[t - 1, : nact[t - 1]], alpha[t - 1], by_code, kind[st], emis, st, sigma[st], c, flat,
                alive, off, mpow, st_len, st_ctx, order, q, alpha, t, seen, act, nact, t,
            )  # fmt: skip
        # alive mass after the last step
        lm = 0.0
        for a in range(nact[T]):
            x = act[T, a]
            L = st_len[x]
            if alive[off[L] + c * mpow[L] + st_ctx[x]]:
                lm += alpha[T, x]
        live[r] = lm
        # backward messages and cavities
        for a in range(nact[T]):
            beta[T, act[T, a]] = 1.0
        t_lo = 1 if backward else T
        for t in range(T, t_lo - 1, -1):
            st = s0 + t - 1
            pc = act[t - 1, : nact[t - 1]]
            if kind[st] == 0:
                tot = cavity_sum(
                    pc, alpha[t - 1], by_code, restart[t], c, flat, alive, off, mpow, st_len, st_ctx, order,
                    beta[t], beta_at, cav,
                )  # fmt: skip
                write_cavity(cav, tot, c, flat, off, mpow, out[st])
            if t == t_lo:
                break
            beta_before(
                pc, restart[t], ignored[t], kind[st], emis[st], sigma[st], c, flat, alive, off, mpow, st_len,
                st_ctx, order, q, beta[t], beta[t - 1],
            )  # fmt: skip
        # reset the scratch
        for t in range(T + 1):
            for a in range(nact[t]):
                x = act[t, a]
                alpha[t, x] = 0.0
                beta[t, x] = 0.0
                seen[t, x] = False
            nact[t] = 0


def forward_backward(
    compiled: CompiledTables,
    rows: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    kind: np.ndarray,
    emission: np.ndarray,
    sigma: np.ndarray,
    cls: np.ndarray,
    out: np.ndarray,
    *,
    attendance: float | None = None,
    backward: bool = True,
) -> np.ndarray:
    """Cavity distribution of every ``OBS`` step of the given respondents (module doc).

    Parameters
    ----------
    compiled : CompiledTables
        BK^seq tables (:class:`CompiledTables` of a :class:`MarkovTables`).
    rows : ndarray of int64, shape (k,)
        Respondents to process (indices into ``start``/``end``/``cls``).
    start, end : ndarray of int64, shape (n_respondents,)
        Each respondent's window of steps ``start[r] .. end[r] - 1`` in the step arrays
        (her steps in time order; the window must begin at her first appearance, an OBS).
    kind : ndarray of int8, shape (n_steps,)
        :data:`OBS` or :data:`ABS`.
    emission : ndarray of float64, shape (n_steps, M)
        Emission of each OBS step (non-negative, any scale); ignored for ABS steps.
    sigma : ndarray of float64, shape (n_steps,)
        Suppression share of the release of each ABS step, in [0, 1].
    cls : ndarray of int64, shape (n_respondents,)
        Knowledge class of each respondent.
    out : ndarray of float64, shape (n_steps, M)
        Written in place: the cavity of every OBS step in the processed windows (rows sum
        to 1); with ``backward=False`` only the last step of each window (the forward
        prediction). Other rows are left untouched.
    attendance : float in (0, 1], optional
        Exam probability q; required when there are ABS steps.
    backward : bool
        False: forward only (prediction of the last step).

    Returns
    -------
    ndarray of float64, shape (n_respondents,)
        Alive mass after the last step of each processed window (0 elsewhere): the
        probability she has not exited.

    Raises
    ------
    InputError
        ABS steps without ``attendance``, or an attendance outside (0, 1].
    PolicyError
        A window too long for the kernel's dense scratch with this many context states.
    """
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if out.dtype != np.float64 or not out.flags.c_contiguous or out.shape != np.shape(emission):
        raise InputError(f"out must be a C-contiguous float64 array of shape {np.shape(emission)}")
    live = np.zeros(len(start))
    if rows.size == 0:
        return live
    q = attendance_q(attendance, kind)
    tmax = int((end[rows] - start[rows]).max())
    if compiled.n_codes * (tmax + 1) > MAX_SCRATCH:
        raise PolicyError(
            f"forward-backward over {compiled.n_codes} context states x {tmax} steps exceeds the "
            "kernel's scratch; use BK^seq of a lower order"
        )
    _fb_kernel(
        rows,
        np.ascontiguousarray(start, dtype=np.int64),
        np.ascontiguousarray(end, dtype=np.int64),
        np.ascontiguousarray(kind, dtype=np.int8),
        np.ascontiguousarray(emission, dtype=np.float64),
        np.ascontiguousarray(sigma, dtype=np.float64),
        np.ascontiguousarray(cls, dtype=np.int64),
        *compiled.kernel_args,
        q,
        backward,
        out,
        live,
    )
    return live
