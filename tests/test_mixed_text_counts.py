"""A QI mixing numbers and numbers stored as text counts only its text cells (a fresh user's drill,
session 39, L2): every row of the column was named ("2000 rows") where 286 held text."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _kinds_cell_by_cell(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """The oracle: each cell asked with isinstance (text: a str; a number: an int, float or NumPy
    number that is not a bool; a missing value neither), as dpriv did before it asked pandas."""
    values = col.to_numpy(dtype=object)
    text = np.array([isinstance(v, str) for v in values], dtype=bool)
    numbers = np.array(
        [isinstance(v, int | float | np.number) and not isinstance(v, bool | np.bool_) for v in values],
        dtype=bool,
    )
    return text, numbers & col.notna().to_numpy()


#: Cells of every kind a column of a user's file can hold, text and numbers, missing values of
#: every spelling, and the look-alikes that are neither (bools, a Decimal, bytes, a complex).
_CELLS = [
    "45", "x", np.str_("46"), "", 45, -3, np.int64(7), np.int8(2), 4.5, np.float32(1.5), np.inf,
    np.nan, None, pd.NA, pd.NaT, True, np.bool_(False), Decimal("4.5"), b"45", 1 + 2j,
]  # fmt: skip


@pytest.mark.parametrize(
    "cells",
    [
        ["45", "46", None, np.nan],  # text alone: one infer_dtype call
        [45, 46.5, np.int64(3), None, np.nan, pd.NA],  # numbers alone
        [None, np.nan, pd.NA],  # nothing present
        ["45", 46, None],  # the mix that is refused
        [True, 1, "1"],  # a bool is neither
        [np.bool_(True), 2.0],
        ["a", pd.NaT, 3],  # NaT: missing, neither
        [Decimal("1"), 2, "3"],
        [1 + 2j, np.complex128(1), "x"],  # a NumPy complex is a np.number, a Python complex not
        [b"45", "45"],
    ],
)
def test_the_kinds_of_the_cells_are_the_cell_by_cell_answer(cells):
    from dpriv.text_numbers import _kinds

    col = pd.Series(cells, dtype=object)
    got, want = _kinds(col), _kinds_cell_by_cell(col)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist(), cells


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(range(len(_CELLS))), max_size=12), st.sampled_from(["object", "category"]))
def test_any_column_of_mixed_cells_gets_the_cell_by_cell_answer(picks, dtype):
    from dpriv.text_numbers import _kinds

    cells = [_CELLS[i] for i in picks]
    col = pd.Series(cells, dtype=object)
    if dtype == "category":  # categories of one Python type only (pandas sorts them)
        if len({type(c) for c in cells if not pd.isna(c)}) > 1:
            return
        col = col.astype("category")
    got, want = _kinds(col), _kinds_cell_by_cell(col)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist(), cells


def test_a_column_of_pandas_string_dtype_is_text_where_present():
    from dpriv.text_numbers import _kinds

    col = pd.Series(["45", None, "x"], dtype="string")
    text, numbers = _kinds(col)
    assert text.tolist() == [True, False, True] and numbers.tolist() == [False, False, False]
