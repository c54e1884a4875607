"""The warnings a ``dpriv`` command prints (one ``warning:`` line each) are dpriv's or the user's
to act on (s34): with pandas >= 3.1 every Parquet input printed ``warning: The inplace keyword in
DataFrame.reset_index is deprecated ... (PDEP-8)``, pandas' deprecation of a call inside Dask's
Parquet reader (and ``python -W error -m dpriv release`` failed with an internal error). The
commands drop that one warning, from that module only."""

import warnings

import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.io import ignore_dask_reset_index

MESSAGE = "The inplace keyword in DataFrame.reset_index is deprecated and will be removed (PDEP-8)."


def test_only_the_reset_index_deprecation_of_dasks_parquet_reader_is_dropped():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ignore_dask_reset_index()
        for module in ("dask.dataframe.io.parquet.arrow", "dpriv.release", "dask.dataframe.core"):
            warnings.warn_explicit(MESSAGE, DeprecationWarning, "f.py", 1, module=module)
        warnings.warn_explicit(
            "another deprecation", DeprecationWarning, "f.py", 1, module="dask.dataframe.io.parquet.arrow"
        )
    assert [(str(w.message), w.category) for w in seen] == [
        (MESSAGE, DeprecationWarning),  # dpriv's own call would be printed (and fixed)
        (MESSAGE, DeprecationWarning),  # another Dask module's too
        ("another deprecation", DeprecationWarning),
    ]


@pytest.mark.parametrize("action", ["always", "error"])
def test_a_parquet_history_prints_no_warning_of_dasks_reader(tmp_path, action):
    # as dpriv generate writes it (pyarrow, no pandas index: pandas' own file takes another path)
    write_history(tmp_path, medical_history(n_views=2, view_size=100, seed=3))
    args = ["release", str(tmp_path / "history.parquet"), "--ledger", str(tmp_path / "L"), "--no-cluster"]
    args += [
        "--id",
        "respondent_id",
        "--time",
        "view",
        "--qi",
        "age,gender,weight",
        "--sensitive",
        "exam_result",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter(action, DeprecationWarning)  # as pytest or python -W error::DeprecationWarning
        res = CliRunner().invoke(app, [*args, "--k", "2", "--t", "1", "--j", "10"])
    assert res.exit_code == 0, res.output
    assert "reset_index" not in res.output and "internal error" not in res.output, res.output
    assert sorted(p.name for p in (tmp_path / "L" / "releases").iterdir()) == ["1", "2"]
