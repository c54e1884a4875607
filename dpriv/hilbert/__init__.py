"""The Hilbert curve (grid, Skilling's index) and the key of a row of a view."""

from dpriv.hilbert.curve import (
    DEFAULT_BITS_CAP,
    MAX_GRID_BITS,
    default_bits,
    grid_codes,
    grid_coords,
    hilbert_index,
)

#: Names of :mod:`dpriv.hilbert.keys` (the key of a row of a view: pandas, the policy), loaded
#: on first use so that importing the curve alone stays light (NumPy + numba, no pandas).
_KEYS = frozenset(
    {
        "HKEY",
        "TIE",
        "add_keys",
        "balanced_divisions",
        "grid_bits",
        "hilbert_keys",
        "keyed_meta",
        "pandas_divisions",
        "split_ranges",
        "unit_coords",
    }
)


def __getattr__(name: str):
    if name in _KEYS:
        from dpriv.hilbert import keys

        value = globals()[name] = getattr(keys, name)
        return value
    raise AttributeError(f"module 'dpriv.hilbert' has no attribute {name!r}")


__all__ = [
    "DEFAULT_BITS_CAP",
    "HKEY",
    "MAX_GRID_BITS",
    "TIE",
    "add_keys",
    "balanced_divisions",
    "default_bits",
    "grid_bits",
    "grid_codes",
    "grid_coords",
    "hilbert_index",
    "hilbert_keys",
    "keyed_meta",
    "pandas_divisions",
    "split_ranges",
    "unit_coords",
]
