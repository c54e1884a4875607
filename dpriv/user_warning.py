"""Warnings attributed to the line of the user's code that called dpriv.

``warnings.warn(..., stacklevel=2)`` names the caller's caller, which is a file of dpriv when a
public function is reached through another, ``contextlib.py`` when it is decorated with a
``@contextlib.contextmanager`` (:func:`dpriv._dispatch.shuffle_method`), and pydantic's
``main.py`` for a policy's validators. Python 3.12's ``skip_file_prefixes`` does the walk below;
dpriv supports Python 3.11 too.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings

import pydantic

#: Files whose frames a warning is never attributed to: dpriv's, contextlib's and pydantic's.
SKIPPED = (
    os.path.dirname(__file__) + os.sep,
    os.path.dirname(pydantic.__file__) + os.sep,
    contextlib.__file__,
)


def warn_user(message: str | Warning, category: type[Warning] = UserWarning) -> None:
    """Issue ``warnings.warn(message, category)`` (a ``message`` that is a Warning is issued as
    it is, ``category`` unused) attributed to the innermost calling frame
    outside dpriv, ``contextlib`` and pydantic: its ``filename`` and ``lineno`` (and the
    once-per-place filters) are those of the user's line (the outermost frame when every one
    is skipped; a ``dpriv`` command prints the message alone)."""
    level, frame = 2, sys._getframe(1)  # stacklevel 2: the caller of this function
    while frame.f_back is not None and frame.f_code.co_filename.startswith(SKIPPED):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)
