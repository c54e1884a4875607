"""The kernels' inputs are read-only views (dpriv.kernel_args): no copy, the values unchanged, and
one compiled signature whether the caller's arrays are writable (NumPy, pandas 2) or read-only
(pandas 3's copy-on-write)."""

import numpy as np
import pandas as pd

from dpriv.anonymity.generalize import entropies_kernel, greedy_scan
from dpriv.anonymity.jsreduce import Params, entropies, first_pass
from dpriv.group_table import _js_all, js_per_group
from dpriv.kernel_args import kernel_input, read_only


def test_read_only_is_a_view_of_the_same_values_and_leaves_the_original_writable():
    a = np.arange(12.0).reshape(3, 4)
    v = read_only(a)
    assert not v.flags.writeable and a.flags.writeable
    assert np.shares_memory(a, v)
    np.testing.assert_array_equal(v, a)
    assert read_only(v) is v  # read-only already: itself


def test_kernel_input_converts_dtype_and_layout_only_where_needed():
    f = np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    c = kernel_input(f, np.int64)
    assert c.dtype == np.int64 and c.flags.c_contiguous and not c.flags.writeable
    np.testing.assert_array_equal(c, [[0, 1, 2], [3, 4, 5]])
    same = np.arange(5, dtype=np.int64)
    assert np.shares_memory(kernel_input(same, np.int64), same)  # right already: no copy
    series = pd.Series([1.0, 2.0])
    np.testing.assert_array_equal(kernel_input(series, np.float64), [1.0, 2.0])


def _grows(kernel, call, inputs) -> int:
    """How many signatures ``kernel`` gains over ``call`` on writable, then read-only, ``inputs``."""
    call(*inputs)
    before = len(kernel.signatures)
    call(*(read_only(a) if isinstance(a, np.ndarray) else a for a in inputs))
    call(*(a.copy() if isinstance(a, np.ndarray) else a for a in inputs))
    return len(kernel.signatures) - before


def test_writable_and_read_only_inputs_run_one_compiled_signature():
    rng = np.random.default_rng(3)
    n, m = 40, 4
    s = rng.integers(0, m, n)
    priors = rng.dirichlet(np.ones(m), n)
    view = np.bincount(s, minlength=m)
    params = Params(k=3, t=0.4, j=0.8, cap=12, wait=3)
    assert _grows(entropies_kernel, entropies, (priors,)) == 0
    assert _grows(greedy_scan, lambda *a: first_pass(*a, params), (s, priors, view)) == 0
    labels = np.repeat(np.arange(n // 4), 4)
    assert _grows(_js_all, lambda p: js_per_group(p, labels, 2.0), (priors,)) == 0
    # and the values do not depend on the flag
    np.testing.assert_array_equal(
        first_pass(s, priors, view, params), first_pass(read_only(s), read_only(priors), view, params)
    )
