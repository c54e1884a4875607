"""Sparse vs dense (E7) revision timing: ``python benchmarks/bench_revision.py``.

M = 19, order 3, 5,000 respondents, 18 classes, posteriors with 3-6 nonzero entries (a
posterior is supported on its QI-group's values only). Prints both times and the ratio.
"""

from __future__ import annotations

import time

import numpy as np

from dpriv.knowledge.revision import revise
from dpriv.knowledge.tables import ClassMap, MarkovTables


def main(n: int = 5000, m: int = 19, order: int = 3, n_classes: int = 18, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    classes = ClassMap(("c",), (tuple(range(n_classes)),), (False,))
    tabs = []
    for L in range(order + 1):
        t = rng.dirichlet(np.ones(m), size=(n_classes, m**L))
        if L:
            t[rng.random((n_classes, m**L)) < 0.3] = 0.0
        tabs.append(t)
    kn = MarkovTables(tuple(map(str, range(m))), classes, tabs)
    p = rng.dirichlet(np.ones(m), size=(n, order))
    k = rng.integers(3, 7, size=(n, order))
    ranks = np.argsort(rng.random((n, order, m)), axis=-1).argsort(axis=-1)
    p[ranks >= k[..., None]] = 0.0
    p /= p.sum(axis=-1, keepdims=True)
    lengths = np.full(n, order)
    cls = rng.integers(0, n_classes, size=n)
    fb = np.full((n, m), 1.0 / m)

    def best(method: str) -> tuple[float, np.ndarray]:
        times, out = [], None
        for _ in range(3):
            t0 = time.perf_counter()
            out = revise(p, lengths, cls, kn, fb, method=method)
            times.append(time.perf_counter() - t0)
        return min(times), out

    t_dense, d = best("dense")
    t_sparse, s = best("sparse")
    assert np.allclose(d, s, atol=1e-12)
    ratio = t_dense / t_sparse
    print(f"n={n} M={m} order={order} classes={n_classes} nonzeros 3-6")
    print(f"dense  {t_dense * 1e3:8.1f} ms")
    print(f"sparse {t_sparse * 1e3:8.1f} ms")
    print(f"dense/sparse ratio {ratio:.1f}x")
    return ratio


if __name__ == "__main__":
    main()
