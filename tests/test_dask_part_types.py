"""A Dask history whose partitions hold other column types than its meta (dpriv/part_types.py).

A fresh user's drill (session 39, H1): ``dd.read_parquet`` of a weekly folder whose week-3 file
wrote ages as floats, ids as floats or gender as text gave a frame whose meta (the first part's
types) said int64, and the resumed-types checks, which read the meta, let release 3 be committed
with float bounds, float ids in the state or text in a numeric QI; the correct data was then
refused. The same rows as a pandas frame were refused. Now the Dask history is refused with the
pandas frame's message, nothing written. M1: a week's file with a column renamed or dropped gave
pandas' raw KeyError; now the folder's message naming both files.
"""

from __future__ import annotations

import hashlib
import os

import dask.dataframe as dd
import pandas as pd
import pytest

from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

LOOSE = {"privacy": {"k": 5, "t": 0.5, "j": 1.5, "max_suppression": 1.0}}
ID = "respondent_id"


def digest(root) -> str:
    """Every file under ``root``: path, bytes and mtime (a refused release must touch nothing)."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(
                str(p.relative_to(root)).encode() + p.read_bytes() + str(os.stat(p).st_mtime_ns).encode()
            )
    return h.hexdigest()


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A 3-view generated history (int64 ids, ages, gender) and a ledger of its views 1 and 2."""
    out = tmp_path_factory.mktemp("parts")
    write_history(out, medical_history(n_views=3, view_size=60, seed=3), policy_extra=LOOSE)
    hist = pd.read_parquet(out / "history.parquet").sort_values("view", kind="stable").reset_index(drop=True)
    policy = ReleasePolicy.from_toml(out / "policy.toml")
    release_history(hist[hist["view"] <= 2], policy, out / "L2")
    return out, hist, policy


def folder(tmp_path, hist: pd.DataFrame, week3: pd.DataFrame):
    """A weekly folder: part.0 = views 1..2 as written, part.1 = ``week3``."""
    d = tmp_path / "weeks"
    d.mkdir()
    hist[hist["view"] <= 2].to_parquet(d / "part.0.parquet", index=False)
    week3.to_parquet(d / "part.1.parquet", index=False)
    return d


def refused(base, tmp_path, change) -> tuple[str, str]:
    """The refusal of a Dask folder whose week 3 is ``change(week 3)`` onto a copy of the ledger
    (asserted unchanged), and that of the same rows as one pandas frame."""
    import shutil

    out, hist, policy = base
    week3 = change(hist[hist["view"] == 3])
    d = folder(tmp_path, hist, week3)
    messages = []
    for name, given in [
        ("dask", dd.read_parquet(d)),
        ("pandas", pd.concat([hist[hist["view"] <= 2], week3])),
    ]:
        root = tmp_path / name
        shutil.copytree(out / "L2", root)
        before = digest(root)
        with pytest.raises(InputError) as exc:
            release_history(given, policy, root)
        assert digest(root) == before
        messages.append(str(exc.value))
    return messages[0], messages[1]


def test_float_ages_in_a_later_part_are_refused_as_the_pandas_frame_is(base, tmp_path):
    on_dask, on_pandas = refused(base, tmp_path, lambda w: w.assign(age=w["age"].astype(float)))
    assert (
        "QI 'age' is float64 in this input where the ledger recorded int64 (releases/2/view.parquet"
        in on_dask
    )
    assert on_dask == on_pandas


def test_float_ids_in_a_later_part_are_refused_as_the_pandas_frame_is(base, tmp_path):
    on_dask, on_pandas = refused(base, tmp_path, lambda w: w.assign(**{ID: w[ID].astype(float)}))
    assert f"id column '{ID}' is float64 in this input where the ledger recorded int64 (state/2/" in on_dask
    assert on_dask == on_pandas


def test_text_given_for_a_numeric_qi_in_a_later_part_is_refused_as_the_pandas_frame_is(base, tmp_path):
    on_dask, on_pandas = refused(base, tmp_path, lambda w: w.assign(gender=w["gender"].astype(str)))
    assert "'gender'" in on_dask and "ledger recorded int64" in on_dask, on_dask
    assert on_dask == on_pandas


@pytest.mark.parametrize("change", ["renamed", "dropped"])
def test_a_column_renamed_or_dropped_in_a_later_part_names_the_files(base, tmp_path, change):
    import shutil

    out, hist, policy = base
    week3 = hist[hist["view"] == 3]
    week3 = week3.rename(columns={"weight": "wt"}) if change == "renamed" else week3.drop(columns="gender")
    d = folder(tmp_path, hist, week3)
    root = tmp_path / "L"
    shutil.copytree(out / "L2", root)
    before = digest(root)
    with pytest.raises(InputError) as exc:
        release_history(dd.read_parquet(d), policy, root)
    assert digest(root) == before
    message = str(exc.value)
    assert "holds Parquet files of different tables" in message and "part.1.parquet" in message, message
    assert ("'wt'" in message) == (change == "renamed")


def test_a_dask_history_of_one_type_releases_as_before(base, tmp_path):
    """No cast, no refusal: the folder of int64 parts releases the bytes of the pandas frame."""
    import shutil

    out, hist, policy = base
    d = folder(tmp_path, hist, hist[hist["view"] == 3])
    roots = []
    for name, given in [("dask", dd.read_parquet(d)), ("pandas", hist)]:
        root = tmp_path / name
        shutil.copytree(out / "L2", root)
        release_history(given, policy, root)
        roots.append(root)
    assert (roots[0] / "releases/3/view.parquet").read_bytes() == (
        roots[1] / "releases/3/view.parquet"
    ).read_bytes()
