"""Priors for tests of the Ω posterior and the pk step: half the rows peaked on their true value
(so that some posteriors pass 0.9), the others flat-ish (Dirichlet(1))."""

from __future__ import annotations

import numpy as np


def peaked_priors(rng: np.random.Generator, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``(s, prior)``: n true codes in [0, m) and an (n, m) float64 prior, rows summing to 1."""
    s = rng.integers(0, m, n)
    prior = rng.dirichlet(np.ones(m), n)
    peaked = rng.random(n) < 0.5
    prior[peaked] = 0.001
    prior[peaked, s[peaked]] = 1.0
    prior /= prior.sum(axis=1, keepdims=True)
    return s, prior
