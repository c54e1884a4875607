"""Input checks of the Mondrian kernel (:func:`dpriv.anonymity.mondrian.mondrian_groups`)."""

from __future__ import annotations

import numpy as np

from dpriv.divergence import EQUAL, ORDERED

MODELS = ("k", "l", "t", "bt")


def check_inputs(qi_grid, s, view_counts, widths, *, k, model, l, ground, allowable):  # noqa: E741
    """Checked and normalised inputs of :func:`dpriv.anonymity.mondrian.mondrian_groups`:
    ``(grid, s as int64, counts as int64, widths as float64)``; ValueError as documented there."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model!r}")
    if k < 1 or l < 1:
        raise ValueError(f"k and l must be >= 1, got k = {k}, l = {l}")
    if ground not in (EQUAL, ORDERED):
        raise ValueError(f"ground must be EQUAL ({EQUAL}) or ORDERED ({ORDERED}), got {ground!r}")
    if model == "bt" and not callable(allowable):
        raise ValueError("model 'bt' needs allowable=callable(indices) -> bool ((B,t)-privacy check)")
    grid = np.asarray(qi_grid)
    if grid.ndim != 2 or not (np.issubdtype(grid.dtype, np.number) and grid.dtype != np.bool_):
        raise ValueError(f"qi_grid must be a numeric array of shape (n, m), got {grid.dtype} {grid.shape}")
    if np.issubdtype(grid.dtype, np.floating) and not np.isfinite(grid).all():
        raise ValueError("qi_grid holds NaN or inf; drop or impute these rows first")
    n, m = grid.shape
    s = np.asarray(s)
    if s.shape != (n,) or (n and not np.issubdtype(s.dtype, np.integer)):
        raise ValueError(f"s must be an int array of shape ({n},), got {s.dtype} {s.shape}")
    s = s.astype(np.int64, copy=False)
    counts = np.ascontiguousarray(view_counts, dtype=np.int64)
    if counts.ndim != 1 or counts.shape[0] == 0 or (counts < 0).any():
        raise ValueError(f"view_counts must be non-negative counts of shape (M,), got {counts}")
    if model in ("l", "t") and n and (s.min() < 0 or s.max() >= counts.shape[0]):
        raise ValueError(f"sensitive codes must lie in [0, {counts.shape[0]}), got [{s.min()}, {s.max()}]")
    if model == "t" and counts.sum() == 0:
        raise ValueError("view_counts sum to 0: the view distribution of t-closeness is undefined")
    span = (grid.max(axis=0) - grid.min(axis=0)).astype(np.float64) if n else np.zeros(m)
    if widths is None:
        widths = span
    widths = np.asarray(widths, dtype=np.float64)
    if widths.shape != (m,) or not np.isfinite(widths).all() or (widths < 0).any():
        raise ValueError(f"widths must be finite, >= 0, of shape ({m},), got {widths}")
    bad = np.flatnonzero((widths == 0) & (span > 0))
    if bad.size:
        raise ValueError(
            f"widths is 0 for non-constant QI column(s) {bad.tolist()}: pass the table "
            "ranges (max - min) of the QIs"
        )
    return grid, s, counts, widths
