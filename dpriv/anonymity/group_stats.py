"""The prior sums of QI-groups read column by column (the repair's range statistics).

:func:`dpriv.anonymity.jsreduce.range_stats` needs, per QI-group, the sum of its members'
priors (G, M) and of their entropies, the rows taken in (Hilbert key, tie) order. Reading the
priors as one (n, M) row-major matrix gathered in that order cost two full copies of them
(pandas interleaving the prior columns of a fragmented frame, then the gather). Here each prior
column is copied once, contiguously, and the compiled loop visits the rows in order: range_stats
0.76-0.85 s instead of 0.98-1.13 s at 10^6 tuples in process (docs/scaling.md, session 20).
It adds the rows in the same order, and computes each row's entropy with the same function over
the same values, as
:meth:`dpriv.anonymity.jsreduce.GroupStats.of` does on the gathered matrix: the same bits
(``tests/test_generalize.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numba import njit

from dpriv.divergence import entropy


def prior_columns(rows: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """The ``columns`` of ``rows`` as one float64 (M, n) C-contiguous array, a column a row."""
    out = np.empty((len(columns), len(rows)))
    for v, c in enumerate(columns):
        out[v] = rows[c].to_numpy(dtype=np.float64)
    return out


@njit(cache=True, nogil=True)
def column_sums(g, order, cols, log_base, n_groups):  # pragma: no cover - compiled
    """Per group of ``g`` (int64 (n,), the group of row ``order[i]``, in ``0..n_groups-1``):
    the sums of the priors ``cols[:, order[i]]`` (G, M), rows added in ``i`` order, and each
    row's entropy (n,) in units of ``log_base``."""
    m = cols.shape[0]
    sum_p = np.zeros((n_groups, m))
    ent = np.empty(len(order))
    row = np.empty(m)
    for i in range(len(order)):
        r, c = order[i], g[i]
        for v in range(m):
            row[v] = cols[v, r]
            sum_p[c, v] += row[v]
        ent[i] = entropy(row, log_base)
    return sum_p, ent
