"""A column the policy does not use (s34): never released, and it must not change what is released
nor make the Dask path fail where pandas passes.

A narrow decimal (Parquet ``decimal128(1, 1)``) beside the medical columns failed with an
internal ArrowInvalid when the history or view came as a Dask frame (Dask builds a sample value
1.0 of every column to count rows, which does not fit one digit after the point), while the
same file read by pandas released.
"""

from __future__ import annotations

import decimal
import warnings

import dask
import dask.dataframe as dd
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpriv.datasets import medical_history, write_history
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize, release_history


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """2 generated views x 120 with a ``decimal128(1, 1)`` column ``x`` no policy names, written
    as one Parquet file and as a folder of 3 files; the generated policy."""
    out = tmp_path_factory.mktemp("unused")
    mh = medical_history(n_views=2, view_size=120, seed=0)
    write_history(out, mh, policy_extra={"privacy": {"k": 5, "t": 0.6, "j": 0.9, "max_suppression": 1.0}})
    table = pa.Table.from_pandas(mh.history, preserve_index=False)
    n = table.num_rows
    x = pa.array([decimal.Decimal("0.5"), decimal.Decimal("0.1")] * (n // 2), pa.decimal128(1, 1))
    table = table.append_column("x", x)
    pq.write_table(table, out / "one.parquet")
    (out / "parts").mkdir()
    third = n // 3
    for i in range(3):
        part = table.slice(i * third, third if i < 2 else n - 2 * third)
        pq.write_table(part, out / "parts" / f"p{i}.parquet")
    return out, ReleasePolicy.from_toml(out / "policy.toml")


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings(), dask.config.set(scheduler="sync"):
        warnings.simplefilter("ignore")  # the "not released: column(s) ['x']" warning
        return fn(*args, **kwargs)


def test_a_decimal_column_outside_the_policy_releases_the_same_bytes_from_pandas_and_dask(history):
    out, policy = history
    inputs = {
        "led-pandas": pd.read_parquet(out / "one.parquet"),
        "led-1": dd.read_parquet(out / "one.parquet"),
        "led-3": dd.read_parquet(out / "parts"),
    }
    assert inputs["led-3"].npartitions == 3
    for name, history_input in inputs.items():
        _quiet(release_history, history_input, policy, out / name)
    paths = {name: out / name for name in inputs}
    for i in (1, 2):
        views = {name: (p / "releases" / str(i) / "view.parquet").read_bytes() for name, p in paths.items()}
        assert len(set(views.values())) == 1, f"release {i} differs between {list(views)}"
        released = pd.read_parquet(paths["led-pandas"] / "releases" / str(i) / "view.parquet")
        assert "x" not in released.columns and len(released) > 0


def test_a_decimal_column_outside_the_policy_of_a_dask_view_is_left_out_and_said(history):
    out, policy = history
    frame = pd.read_parquet(out / "one.parquet")
    one = frame[frame["view"] == 1].drop(columns="view")
    view_policy = ReleasePolicy(
        id="respondent_id", qi=["age", "gender", "weight"], sensitive="exam_result", k=5, t=0.9, j=5
    )
    src = out / "view1"
    src.mkdir()
    table = pa.Table.from_pandas(one, preserve_index=False)
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half), src / "a.parquet")
    pq.write_table(table.slice(half), src / "b.parquet")
    want = _quiet(anonymize, one, view_policy)
    said = r"not released: column\(s\) \['x'\]"
    with dask.config.set(scheduler="sync"), pytest.warns(UserWarning, match=said):
        got = anonymize(dd.read_parquet(src), view_policy)
    pd.testing.assert_frame_equal(got.released.reset_index(drop=True), want.released.reset_index(drop=True))
    assert any("['x']" in n for n in got.notes)
