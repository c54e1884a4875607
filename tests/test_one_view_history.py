"""A one-view command given a history (respondents in several views of the policy's time column)
says how many views the input holds and which, and names no respondent (s46 drill: the message
was "respondent 1247 has tuples in more than one view ...")."""

import dask.dataframe as dd
import pandas as pd
import pytest

from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize

POLICY = ReleasePolicy(id="rid", time="week", qi=["age"], sensitive="s", k=2, t=1.0, j=10.0)


def history(weeks) -> pd.DataFrame:
    rows = [{"rid": 9000 + r, "week": w, "age": 30 + r, "s": "ab"[r % 2]} for w in weeks for r in range(4)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("dask", [False, True])
@pytest.mark.parametrize(
    ("weeks", "said"),
    [
        ([1, 2], "holds 2 views of the time column 'week' (1, 2), with respondents in more than one"),
        ([3, 1, 2, 5, 4], "holds 5 views of the time column 'week' (1..5)"),
    ],
)
def test_a_history_given_to_anonymize_is_said_to_be_one(weeks, said, dask):
    frame = history(weeks)
    given = dd.from_pandas(frame, npartitions=2) if dask else frame
    with pytest.raises(InputError) as info:
        anonymize(given, POLICY)
    msg = str(info.value)
    assert said in msg, msg
    assert f"keep the rows of one view (e.g. week = {max(weeks)})" in msg, msg
    assert "dpriv release" in msg
    assert not any(str(rid) in msg for rid in frame["rid"]), msg  # no respondent's id
