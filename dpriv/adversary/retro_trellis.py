"""The stored forward messages of the retrospective adversary's reading (:class:`Trellis`),
over the compiled steps of :mod:`dpriv.adversary.retro_kernels` (storage layout there)."""

from __future__ import annotations

import numpy as np

from dpriv.adversary import retro_kernels as rk
from dpriv.adversary.compiled import CompiledTables


class Trellis:
    """Stored forward messages of every step (module doc) and the calls that use them.

    Parameters
    ----------
    compiled : CompiledTables
    start : ndarray of int64, shape (n_respondents,)
        First step of each respondent.
    kind, emission, sigma, cls
        As :func:`dpriv.adversary.smoothing.forward_backward` (the arrays are read at each
        call, so emissions set between calls are used).
    q : float
        Exam probability (1.0 without absences).
    per_step : float
        Expected states per step (e.g. measured on a previous reading), to size the flat
        arrays; 0: :data:`dpriv.adversary.retro_kernels.STATES_PER_STEP`.
    """

    def __init__(
        self, compiled: CompiledTables, start, kind, emission, sigma, cls, q: float, per_step: float = 0.0
    ) -> None:
        self.compiled, self.q = compiled, float(q)
        self.start = np.ascontiguousarray(start, dtype=np.int64)
        self.kind = np.ascontiguousarray(kind, dtype=np.int8)
        self.emission, self.sigma = emission, np.ascontiguousarray(sigma, dtype=np.float64)
        self.cls = np.ascontiguousarray(cls, dtype=np.int64)
        n_steps = self.kind.size
        self.done = np.zeros(self.start.size, dtype=np.int64)
        self.off = np.zeros(n_steps, dtype=np.int64)
        self.n = np.zeros(n_steps, dtype=np.int64)
        self.restart = np.zeros(n_steps, dtype=np.bool_)
        self.ignored = np.zeros(n_steps, dtype=np.bool_)
        cap = max(rk.MIN_CAPACITY, int((per_step or rk.STATES_PER_STEP) * n_steps))
        # empty, not zeros: the kernel writes every entry before it is read (no page touched
        # before it is needed); codes as int32 (a state code is < n_codes < 2**31)
        self.code, self.alpha, self.fill = np.empty(cap, np.int32), np.empty(cap), np.zeros(1, np.int64)
        self.grown = 0  # times the flat arrays were full
        n_codes = compiled.n_codes
        self._cur, self._seen = np.zeros(n_codes), np.zeros((1, n_codes), np.bool_)
        self._act = np.zeros((1, n_codes), np.int64)
        self._init = (np.zeros(1, np.int32), np.ones(1))

    def _tables(self) -> tuple:
        t = self.compiled
        return t.flat, t.alive, t.off, t.mpow, t.st_len, t.st_ctx, t.order

    def forward(self, rows: np.ndarray, upto: np.ndarray) -> None:
        """Store the steps of respondents ``rows`` (int64) up to ``upto[r]`` (exclusive
        global step, shape (n_respondents,)); steps stored already are kept."""
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        while not rk.forward_kernel(
            rows, self.start, upto, self.done, self.kind, self.emission, self.sigma, self.cls,
            *self._tables(), self.q, self.off, self.n, self.code, self.alpha, self.restart,
            self.ignored, self.fill, self._cur, self._seen, self._act, *self._init,
        ):  # fmt: skip
            self.grown += 1
            used = int(self.fill[0])
            code, alpha = np.empty(2 * self.code.size, np.int32), np.empty(2 * self.code.size)
            code[:used], alpha[:used] = self.code[:used], self.alpha[:used]
            self.code, self.alpha = code, alpha

    def live(self, rows: np.ndarray, upto: np.ndarray, out: np.ndarray) -> None:
        """Alive mass after step ``upto[r] - 1`` into ``out[r]`` for ``r`` in ``rows``."""
        t = self.compiled
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        rk.live_kernel(rows, self.start, upto, self.cls, t.alive, t.off, t.mpow, t.st_len, t.st_ctx,
                 self.off, self.n, self.code, self.alpha, out)  # fmt: skip

    def predict(self, rows: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Forward prediction (len(rows), M) of OBS step ``steps[k]`` of ``rows[k]``."""
        out = np.zeros((len(rows), self.compiled.m))
        t = self.compiled
        rk.predict_kernel(
            np.ascontiguousarray(rows, dtype=np.int64), np.ascontiguousarray(steps, dtype=np.int64),
            self.start, self.cls, t.flat, t.alive, t.off, t.mpow, t.st_len, t.st_ctx, t.order, self.off,
            self.n, self.code, self.alpha, *self._init, out,
        )  # fmt: skip
        return out

    def backward(self, rows: np.ndarray, end: np.ndarray, out: np.ndarray) -> None:
        """Cavities of the OBS steps of ``rows`` over the windows ending at ``end[r]``
        (exclusive, every step stored) into ``out`` (n_steps, M)."""
        n_codes = self.compiled.n_codes
        rk.backward_kernel(
            np.ascontiguousarray(rows, dtype=np.int64), self.start, end, self.kind, self.emission,
            self.sigma, self.cls, *self._tables(), self.q, self.off, self.n, self.code, self.alpha,
            self.restart, self.ignored, *self._init, np.zeros(n_codes), np.zeros(n_codes), out,
        )  # fmt: skip
