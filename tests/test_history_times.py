"""The time column's check of a history (:func:`dpriv.input_checks.check_history`) on Dask: the
distinct times are found per partition, then over the parts (no shuffle)."""

import dask.dataframe as dd
import pandas as pd
import pytest

from dpriv.errors import InputError
from dpriv.input_checks import check_history
from dpriv.policy import ReleasePolicy

POLICY = ReleasePolicy(id="rid", qi=["age"], sensitive="s", time="view", k=2, t=1, j=10)


def outcome(data) -> list[int] | str:
    try:
        return check_history(data, POLICY)
    except InputError as exc:
        return str(exc)


@pytest.mark.parametrize(
    ("views", "want"),
    [
        ([1, 2, 3, 2, 1, 3], [1, 2, 3]),
        ([3, 1, 2, 2], [1, 2, 3]),
        ([1, 3, 3, 1], "must hold consecutive release indices 1..n; found [1, 3]"),
        ([2.0, 1.0, 2.0, 1.0], "write them as whole numbers (1, not 1.0)"),
    ],
)
def test_a_dask_history_s_indices_and_refusals_are_the_pandas_ones(views, want):
    """The indices (sorted) or the refusal of a gap or of floats, as for the pandas frame, on 1
    to 4 partitions (a view's rows spread over several). A guard: the shuffle of before gave the
    same."""
    frame = pd.DataFrame({"rid": range(len(views)), "view": views, "age": 30, "s": "a"})
    expected = outcome(frame)
    assert expected == want if isinstance(want, list) else want in expected
    for n in (1, 2, 3, 4):
        assert outcome(dd.from_pandas(frame, npartitions=n, sort=False)) == expected
