"""BK^seq tables (:class:`~dpriv.knowledge.tables.MarkovTables`) flattened for the
forward-backward kernel of :mod:`dpriv.adversary.smoothing`: one row per (class, context)
and a code per context state."""

from __future__ import annotations

import numpy as np

from dpriv.errors import InputError
from dpriv.knowledge.tables import MarkovTables

__all__ = ["CompiledTables"]


class CompiledTables:
    """MarkovTables flattened for the kernel.

    Attributes
    ----------
    flat : ndarray of float64, shape (R, M)
        ``tables[0..n]`` stacked; row of class ``c``, context length ``L`` and base-M code
        ``k`` at ``off[L] + c * M**L + k``.
    alive : ndarray of bool, shape (R,)
        Row not all zero.
    off, mpow : ndarray of int64, shape (n + 1,)
    st_len, st_ctx : ndarray of int64, shape ((M + 1) ** n,)
        Context length and base-M code of each state code (unused codes: length -1).
    """

    def __init__(self, tables: MarkovTables) -> None:
        m, n = tables.n_values, tables.order
        self.m, self.order = m, n
        flat = np.concatenate([t.reshape(-1, m) for t in tables.tables])
        self.flat = np.ascontiguousarray(flat, dtype=np.float64)
        if not np.isfinite(self.flat).all() or (self.flat < 0).any():
            raise InputError("BK^seq tables must be finite and non-negative")
        self.alive = self.flat.sum(axis=1) > 0
        sizes = [t.shape[0] * t.shape[1] for t in tables.tables]
        self.off = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
        self.mpow = (m ** np.arange(n + 1)).astype(np.int64)
        n_codes = (m + 1) ** n
        codes = np.arange(n_codes, dtype=np.int64)
        digits = np.zeros((n_codes, n), dtype=np.int64)
        for p in range(n):
            digits[:, p] = (codes // (m + 1) ** (n - 1 - p)) % (m + 1)
        nonempty = digits > 0
        length = nonempty.sum(axis=1)
        # valid codes: the empty digits are all on the left (the context is a suffix)
        valid = (nonempty == (np.arange(n)[None, :] >= (n - length)[:, None])).all(axis=1)
        ctx = np.zeros(n_codes, dtype=np.int64)
        for p in range(n):
            ctx = np.where(nonempty[:, p], ctx * m + (digits[:, p] - 1), ctx)
        self.st_len = np.where(valid, length, -1).astype(np.int64)
        self.st_ctx = ctx
        self.n_codes = n_codes

    @property
    def kernel_args(self) -> tuple:
        """``(flat, alive, off, mpow, st_len, st_ctx, order)``: the tables as the compiled
        kernels take them (positional, in that order)."""
        return self.flat, self.alive, self.off, self.mpow, self.st_len, self.st_ctx, self.order
