"""The small view that the ``dpriv verify`` tests release and then check
(tests/test_verify_command.py, tests/test_verify_files.py), and the flags naming its columns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: The view's columns and the release's k and t, as ``dpriv`` flags.
FLAGS = ["--id", "rid", "--qi", "age,sex", "--sensitive", "s", "--k", "4", "--t", "0.5"]


def write_view(folder: Path) -> Path:
    """``folder/v.csv``: 300 tuples (``rid`` 0..299, ``age`` in 20..69, ``sex`` F or M, ``s`` one of
    a..e), drawn with seed 0; returns its path."""
    rng = np.random.default_rng(0)
    n = 300
    view = pd.DataFrame(
        {"rid": range(n), "age": rng.integers(20, 70, n), "sex": rng.choice(["F", "M"], n),
         "s": rng.choice(list("abcde"), n)}
    )  # fmt: skip
    path = folder / "v.csv"
    view.to_csv(path, index=False)
    return path
