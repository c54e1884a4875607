"""The partition types of a Dask history read from Parquet, from the files' footers
(dpriv/part_footers.py): the same survey as the computed one (every partition read), so the same
casts and refusals, and no row read.

The oracle is :func:`dpriv.part_types.computed_survey`, which reads each partition and takes its
dtypes, on the same files; :func:`as_data_types` is compared with the footer path forced off.
"""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dask.dataframe.io.parquet.arrow import ArrowDatasetEngine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpriv.part_types as part_types
from dpriv.datasets import medical_history, write_history
from dpriv.inputs import prepared
from dpriv.part_footers import footer_survey
from dpriv.part_types import as_data_types, computed_survey
from dpriv.policy import ReleasePolicy

N = 6  # rows of each file

#: A column's values of one kind (as a week's export may write them), by name: ``n`` rows.
KINDS = {
    "int64": lambda n: np.arange(n, dtype=np.int64),
    "int32": lambda n: np.arange(n, dtype=np.int32),
    "float": lambda n: np.arange(n, dtype=np.float64) + 0.0,
    "float-nan": lambda n: np.where(np.arange(n) == 1, np.nan, np.arange(n) + 0.0),
    "int-none": lambda n: pd.Series([None if i == 1 else i for i in range(n)], dtype=object),
    "Int64-na": lambda n: pd.array([None if i == 1 else i for i in range(n)], dtype="Int64"),
    "bool": lambda n: np.arange(n) % 2 == 0,
    "bool-none": lambda n: pd.Series([None if i == 1 else i % 2 == 0 for i in range(n)], dtype=object),
    "text": lambda n: [f"v{i}" for i in range(n)],
    "text-none": lambda n: [None if i == 1 else f"v{i}" for i in range(n)],
    "digits": lambda n: [str(i) for i in range(n)],
    "stamp": lambda n: pd.date_range("2024-01-01", periods=n, freq="D"),
    "stamp-utc": lambda n: pd.date_range("2024-01-01", periods=n, freq="D", tz="UTC"),
}


def write(folder, frames: list[pd.DataFrame], **kw):
    """``frames`` as ``part.<i>.parquet`` in ``folder`` (pandas' writer, its metadata kept)."""
    folder.mkdir()
    for i, frame in enumerate(frames):
        frame.to_parquet(folder / f"part.{i}.parquet", index=False, **kw)
    return folder


def rows(survey: pd.DataFrame) -> list[tuple[str, str]]:
    return [(c, str(d)) for c, d in zip(survey["column"], survey["dtype"], strict=True)]


def same_survey(history: dd.DataFrame, columns: list[str]) -> list[tuple[str, str]]:
    """The footer survey, asserted decided and equal (partition by partition, dtype objects
    equal) to the computed one."""
    told = footer_survey(history, columns)
    assert told is not None, "the footers should decide here"
    read = computed_survey(history, columns)
    assert rows(told) == rows(read)
    assert all(a == b for a, b in zip(told["dtype"], read["dtype"], strict=True))
    return rows(told)


def computed_only(monkeypatch, history, columns):
    """:func:`as_data_types` with the footer path off (today's compute)."""
    with monkeypatch.context() as mp:
        mp.setattr(part_types, "footer_survey", lambda *a: None)
        return as_data_types(history, columns)


def same_result(monkeypatch, history, columns) -> pd.Series:
    """:func:`as_data_types` through the footers and through the compute: the same meta and the
    same dtypes in every partition of the result; the meta's dtypes."""
    by_footers, by_compute = as_data_types(history, columns), computed_only(monkeypatch, history, columns)
    assert by_footers._meta.dtypes.to_dict() == by_compute._meta.dtypes.to_dict()
    assert rows(computed_survey(by_footers, columns)) == rows(computed_survey(by_compute, columns))
    return by_footers._meta.dtypes


def test_every_kind_in_later_files_surveys_as_the_compute(tmp_path):
    """A column written as each kind by one file (the first file's int64 the meta), another
    column rotated so every kind meets every position: footers and compute agree exactly."""
    names = list(KINDS)
    frames = [
        pd.DataFrame({"v": KINDS[a](N), "w": KINDS[names[(i * 5 + 3) % len(names)]](N)})
        for i, a in enumerate(names)
    ]
    found = same_survey(dd.read_parquet(write(tmp_path / "d", frames)), ["v", "w"])
    held = dict(zip(names, [t for c, t in found if c == "v"], strict=True))  # what each file holds
    assert [held[k] for k in ["int64", "int32", "int-none", "Int64-na", "bool", "bool-none"]] == [
        "int64",
        "int32",
        "float64",
        "Int64",
        "bool",
        "object",
    ]


@pytest.mark.parametrize("backend", ["numpy_nullable", "pyarrow"])
def test_a_read_with_a_dtype_backend_surveys_as_the_compute(tmp_path, backend):
    """The read's own options convert the footers' types too: nullable or Arrow dtypes, where a
    null no longer changes the dtype."""
    names = list(KINDS)
    frames = [pd.DataFrame({"v": KINDS[a](N)}) for a in names]
    found = same_survey(dd.read_parquet(write(tmp_path / "d", frames), dtype_backend=backend), ["v"])
    held = dict(zip(names, [t for _, t in found], strict=True))
    assert held["int-none"] == held["int64"] == ("Int64" if backend == "numpy_nullable" else "int64[pyarrow]")


@pytest.mark.parametrize(
    "change, column, expected",
    [
        (lambda w: w.assign(age=w["age"].astype(float)), "age", "float64"),  # ages written 55.0
        (lambda w: w.assign(respondent_id=w["respondent_id"].astype(float)), "respondent_id", "float64"),
        (lambda w: w.assign(gender=w["gender"].astype(str)), "gender", "object"),  # text in a numeric QI
        (lambda w: w.assign(weight=w["weight"].where(w.index % 3 > 0)), "weight", "float64"),  # NaN
    ],
    ids=["float-ages", "float-ids", "text-qi", "nan-weights"],
)
def test_a_later_week_of_other_types_is_cast_as_by_the_compute(
    base, tmp_path, monkeypatch, change, column, expected
):
    hist, policy = base
    week3 = change(hist[hist["view"] == 3])
    d = write(tmp_path / "weeks", [hist[hist["view"] <= 2], week3])
    history, policy = prepared(dd.read_parquet(d), policy)
    columns = [policy.id, *policy.qi, policy.sensitive, policy.time]
    same_survey(history, columns)
    assert str(same_result(monkeypatch, history, columns)[column]) == expected


def test_text_ids_of_a_later_week_are_prepared_as_by_the_compute(base, tmp_path, monkeypatch):
    """prepare_view's step runs on the footers' types: ids written as text become string[pyarrow]."""
    hist, policy = base
    week3 = hist[hist["view"] == 3]
    week3 = week3.assign(respondent_id=week3["respondent_id"].map(lambda i: f"R{i}"))
    history, policy = prepared(
        dd.read_parquet(write(tmp_path / "w", [hist[hist["view"] <= 2], week3])), policy
    )
    found = dict(same_survey(history, [policy.id])[1:])
    assert found == {policy.id: "string"}
    assert str(same_result(monkeypatch, history, [policy.id])[policy.id]) == "object"


def test_files_without_pandas_metadata_survey_as_the_compute(tmp_path, monkeypatch):
    """pyarrow's own writer (no pandas metadata): ints with a null read as float64, text as text."""
    d = tmp_path / "d"
    d.mkdir()
    pq.write_table(pa.table({"a": pa.array([1, 2, 3]), "s": ["x", "y", "z"]}), d / "part.0.parquet")
    pq.write_table(pa.table({"a": pa.array([1, None, 3]), "s": ["x", None, "z"]}), d / "part.1.parquet")
    assert pq.read_schema(d / "part.0.parquet").pandas_metadata is None
    found = same_survey(dd.read_parquet(d), ["a", "s"])
    assert [t for c, t in found if c == "a"] == ["int64", "float64"]
    assert str(same_result(monkeypatch, dd.read_parquet(d), ["a", "s"])["a"]) == "float64"


@pytest.mark.parametrize("split", [True, False])
def test_row_groups_with_and_without_nulls_survey_as_the_compute(tmp_path, monkeypatch, split):
    """A file of 3 row groups, the middle one holding a null: per row group (``split_row_groups``)
    one partition is float64 and two int64; the whole file is float64."""
    d = tmp_path / "d"
    d.mkdir()
    pq.write_table(pa.table({"a": pa.array([1, 2, 3, None, 5, 6])}), d / "part.0.parquet", row_group_size=2)
    pq.write_table(pa.table({"a": pa.array([7, 8])}), d / "part.1.parquet")
    history = dd.read_parquet(d, split_row_groups=split)
    found = [t for _, t in same_survey(history, ["a"])]
    assert found == (["int64", "float64", "int64", "int64"] if split else ["float64", "int64"])
    assert str(same_result(monkeypatch, history, ["a"])["a"]) == "float64"


@pytest.mark.slow
@given(
    kinds=st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=4),
    groups=st.sampled_from([None, 2]),
)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_files_cast_as_by_the_compute(tmp_path_factory, monkeypatch, kinds, groups):
    """Property: for files of any kinds (row groups of 2 rows or one), the footers' survey and
    as_data_types' result are the compute's."""
    d = write(
        tmp_path_factory.mktemp("h") / "d",
        [pd.DataFrame({"v": KINDS[k](N)}) for k in kinds],
        **({"row_group_size": groups} if groups else {}),
    )
    history = dd.read_parquet(d, split_row_groups=bool(groups))
    same_survey(history, ["v"])
    same_result(monkeypatch, history, ["v"])


def _undecided(tmp_path, case: str):
    """A history whose types the footers cannot tell, and its columns."""
    if case == "categorical":  # the categories are data
        d = write(
            tmp_path / "d", [pd.DataFrame({"v": pd.Categorical(["a", "b"])}), pd.DataFrame({"v": [1, 2]})]
        )
        return dd.read_parquet(d), ["v"]
    if case == "no-null-counts":  # an int column: float64 only if a null is there
        d = tmp_path / "d"
        d.mkdir()
        for i, values in enumerate([[1, 2], [1, None]]):
            pq.write_table(pa.table({"v": pa.array(values)}), d / f"part.{i}.parquet", write_statistics=False)
        return dd.read_parquet(d), ["v"]
    d = write(
        tmp_path / "d",
        [pd.DataFrame({"v": [1, 2], "s": ["x", "y"]}), pd.DataFrame({"v": [3, 4], "s": ["x", "z"]})],
    )
    if case == "filters":  # rows dropped: a null count no longer says what is read
        return dd.read_parquet(d, filters=[("v", ">", 1)]), ["v"]
    if case == "persisted":
        return dd.read_parquet(d).persist(), ["v"]
    if case == "another-step":  # a user's own step between the read and the history
        return dd.read_parquet(d).map_partitions(lambda p: p.assign(v=p["v"] * 1.5)), ["v"]
    if case == "csv":
        (tmp_path / "h.csv").write_text("v,s\n1,x\n2,y\n")
        return dd.read_csv(tmp_path / "h.csv"), ["v"]
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case", ["categorical", "no-null-counts", "filters", "persisted", "another-step", "csv"]
)
def test_what_the_footers_cannot_tell_is_computed(tmp_path, monkeypatch, case):
    history, columns = _undecided(tmp_path, case)
    assert footer_survey(history, columns) is None
    same_result(monkeypatch, history, columns)


def test_object_ids_and_date_qis_are_computed(base, tmp_path):
    """prepare_view converts an object id column (here bytes) and a date QI by their values."""
    hist, policy = base
    d = tmp_path / "w"
    d.mkdir()
    table = pa.Table.from_pandas(hist, preserve_index=False)
    ids = pa.array([f"R{i}".encode() for i in hist[policy.id]], pa.binary())
    pq.write_table(table.set_column(0, policy.id, ids), d / "part.0.parquet")
    history, _ = prepared(dd.read_parquet(d), policy)
    assert history._meta[policy.id].dtype == object
    assert footer_survey(history, [policy.id]) is None
    assert footer_survey(history, [policy.qi[0]]) is not None  # the other columns: told
    stamped = write(tmp_path / "s", [hist.assign(day=pd.Timestamp("2024-01-01"))])
    history, dated = prepared(dd.read_parquet(stamped), policy.with_overrides(qi=[*policy.qi, "day"]))
    assert dated.kinds.get("day") == "date"
    assert footer_survey(history, [policy.qi[0], "day"]) is None
    assert footer_survey(history, [policy.qi[0]]) is not None


class _Reads:
    """Partitions read through Dask's Parquet engine (its ``read_partition``), counted."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = ArrowDatasetEngine.read_partition.__func__

        def counted(cls, *args, **kwargs):
            self.count += 1
            return real(cls, *args, **kwargs)

        monkeypatch.setattr(ArrowDatasetEngine, "read_partition", classmethod(counted))


def test_the_footer_path_reads_no_row(base, tmp_path, monkeypatch):
    """Float ages in week 3 of a weekly folder: the history is cast with no partition read (the
    compute reads each of the 2 once)."""
    hist, policy = base
    week3 = hist[hist["view"] == 3]
    d = write(tmp_path / "weeks", [hist[hist["view"] <= 2], week3.assign(age=week3["age"].astype(float))])
    history, policy = prepared(dd.read_parquet(d), policy)
    columns = [policy.id, *policy.qi, policy.sensitive, policy.time]
    reads = _Reads(monkeypatch)
    with dask.config.set(scheduler="synchronous"):
        cast = as_data_types(history, columns)
        assert reads.count == 0
        assert str(cast._meta["age"].dtype) == "float64"
        computed_only(monkeypatch, history, columns)
    assert reads.count == 2  # the spy sees a computed survey's reads


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A 3-view generated history (int64 ids, ages, gender; text exam results) and its policy."""
    out = tmp_path_factory.mktemp("parts")
    loose = {"privacy": {"k": 5, "t": 0.5, "j": 1.5, "max_suppression": 1.0}}
    write_history(out, medical_history(n_views=3, view_size=60, seed=3), policy_extra=loose)
    hist = pd.read_parquet(out / "history.parquet").sort_values("view", kind="stable").reset_index(drop=True)
    return hist, ReleasePolicy.from_toml(out / "policy.toml")


@pytest.mark.parametrize("error", [AttributeError, KeyError, ImportError])
def test_dask_internals_of_another_shape_fall_back_to_the_compute(tmp_path, monkeypatch, error):
    """The footer path reads Dask's private read plan: where another Dask release gives it
    another shape, the survey is left to the compute (same casts), not a failed release."""
    frames = [pd.DataFrame({"v": KINDS["int64"](N)}), pd.DataFrame({"v": KINDS["float"](N)})]
    history = dd.read_parquet(write(tmp_path / "d", frames))
    assert footer_survey(history, ["v"]) is not None

    def moved(*args):
        raise error("moved")

    monkeypatch.setattr("dpriv.part_footers._read_chain", moved)
    assert footer_survey(history, ["v"]) is None
    assert (
        as_data_types(history, ["v"])._meta.dtypes.to_dict()
        == computed_only(monkeypatch, history, ["v"])._meta.dtypes.to_dict()
    )
