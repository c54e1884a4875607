"""A QI mixing numbers and numbers stored as text counts only its text cells (a fresh user's drill,
session 39, L2): every row of the column was named ("2000 rows") where 286 held text."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpriv.errors import InputError
from dpriv.one_view import anonymize
from dpriv.policy import ReleasePolicy


def test_only_the_text_cells_of_a_mixed_int_and_str_qi_are_counted_and_named():
    rng = np.random.default_rng(5)
    n = 40
    view = pd.DataFrame(
        {
            "rid": np.arange(n),
            "age": rng.integers(20, 60, n),
            "sex": pd.Series(rng.integers(1, 3, n), dtype=object),
            "disease": rng.choice(["flu", "hiv", "none"], n),
        }
    )
    text_rows = [3, 10, 17, 30]
    for r in text_rows:
        view.loc[r, "sex"] = str(view.loc[r, "sex"])
    policy = ReleasePolicy.from_dict({"id": "rid", "qi": ["age", "sex"], "sensitive": "disease", "k": 3})
    with pytest.raises(InputError) as exc:
        anonymize(view, policy)
    said = str(exc.value)
    assert "QI 'sex' holds numbers stored as text" in said, said
    assert "(4 rows: row 3, row 10, row 17, row 30)" in said, said
    assert "mixes str and numbers" in said
