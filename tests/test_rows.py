"""Bad rows are named by their line or row (and view), never by their respondent id (s34): the
messages printed ``line 7 (respondent_id=4081, view=1)`` beside the bad sensitive value, a
respondent id next to what is known of the respondent."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_cli import assert_refused, tree
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history

#: Ids no other part of a message can hold by chance: "QX" then 6 digits.
ID_PATTERN = re.compile(r"QX\d{6}")


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """2 generated views x 60 with ids ``QX100000``..., and their policy."""
    out = tmp_path_factory.mktemp("rows")
    mh = medical_history(n_views=2, view_size=60, seed=0)
    write_history(out, mh, policy_extra={"privacy": {"k": 5, "t": 0.6, "j": 0.9, "max_suppression": 1.0}})
    frame = mh.history.assign(respondent_id="QX" + (mh.history["respondent_id"] + 100_000).astype(str))
    return out, frame


def _bad_sensitive(frame, rows):
    bad = frame.copy()
    bad.loc[rows, "exam_result"] = "cancer_9"  # not in the sensitive domain
    return bad


def _bad_age(frame, rows):
    bad = frame.astype({"age": float})
    bad.loc[rows, "age"] = np.nan
    return bad


@pytest.mark.parametrize("make", [_bad_sensitive, _bad_age])
@pytest.mark.parametrize("form", ["csv", "parquet", "folder"])
def test_no_respondent_id_in_a_bad_row_message(history, tmp_path, make, form):
    out, frame = history
    rows = [5, 70, 71, 72, 73, 74, 75]  # views 1 and 2; more rows than are named
    bad = make(frame, rows)
    if form == "csv":
        path = tmp_path / "h.csv"
        bad.to_csv(path, index=False)
        where = r"\(7 rows: line 7 \(view=1\), line 72 \(view=2\), .* and 2 more of .*h\.csv"
    elif form == "parquet":
        path = tmp_path / "h.parquet"
        bad.to_parquet(path, index=False)
        where = r"\(7 rows: row 6 \(view=1\), row 71 \(view=2\), .* and 2 more of .*h\.parquet"
    else:
        path = tmp_path / "parts"
        path.mkdir()
        bad.iloc[:60].to_parquet(path / "part.0.parquet", index=False)
        bad.iloc[60:].to_parquet(path / "part.1.parquet", index=False)
        where = r"row 6 of .*part\.0\.parquet \(view=1\), row 11 of .*part\.1\.parquet \(view=2\)"
    before = tree(tmp_path)
    res = CliRunner().invoke(
        app, ["release", str(path), "--ledger", str(tmp_path / "led"), "--policy", str(out / "policy.toml")]
    )
    text = assert_refused(res, r"view = 1, 2: ", where)
    assert not ID_PATTERN.search(text), text
    assert tree(tmp_path) == before  # nothing written
