"""Arrays handed to dpriv's numba kernels: one compiled signature per kernel, not two.

numba compiles a kernel once per argument *type*, and a read-only array is another type than
a writable one (``Array(int64, 1, 'C', readonly=True)``). Under pandas 3's copy-on-write,
``Series.to_numpy()`` gives read-only arrays; NumPy's own (and pandas 2's) are writable. So the
same kernel was compiled twice, or more with several array arguments (three signatures of
the greedy scan, ~3 s of CPU each on 2 cores, in a fresh checkout's test run). The kernels'
inputs, which they only read, are passed read-only: a view with the flag cleared, never a
copy, so the values, the machine code run on them and the released bytes are unchanged.

Source: numba's typing of arrays (``numba.core.types.Array``, its ``readonly`` flag, and
``typeof`` of a non-writeable ndarray), https://numba.readthedocs.io/en/stable/reference/types.html
"""

from __future__ import annotations

import numpy as np


def read_only(values: np.ndarray) -> np.ndarray:
    """``values`` (an ndarray, any shape, dtype and layout) read-only: itself when it is so
    already, else a view of it with ``flags.writeable`` cleared (the original stays writable;
    no data is copied)."""
    if not values.flags.writeable:
        return values
    view = values.view()
    view.flags.writeable = False
    return view


def kernel_input(values, dtype) -> np.ndarray:
    """``values`` (array-like, any shape) as a read-only C-contiguous ndarray of ``dtype``:
    ``np.ascontiguousarray(values, dtype=dtype)`` (a copy only where the dtype or the layout
    differ) through :func:`read_only`."""
    return read_only(np.ascontiguousarray(values, dtype=dtype))
