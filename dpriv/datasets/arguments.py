"""Arguments of the data generators checked before anything is generated (one rule for all of
them): a count or a seed is a whole number (an int, a NumPy integer or a float without a
fraction; not a bool, a text or NaN) from its least value up, a parameter a number. Anything
else is an InputError naming the argument and the value, as ``int()`` would have raised a
ValueError or TypeError (``"3"``, None, NaN), truncated 2.5 to 2 or taken True for 1.
"""

from __future__ import annotations

import numpy as np

from dpriv.errors import InputError


def is_number(value: object) -> bool:
    """Whether ``value`` is a Python or NumPy int or float (a bool is not)."""
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def check_whole(name: str, value: object, low: int) -> None:
    """InputError unless ``value`` (the argument ``name``) is a whole number >= ``low``."""
    whole = isinstance(value, int | np.integer) or (
        is_number(value) and np.isfinite(value) and value == int(value)
    )
    if isinstance(value, bool) or not whole or value < low:
        raise InputError(f"{name} must be an integer >= {low}, got {value!r}")
