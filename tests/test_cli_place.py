"""Where ``dpriv release`` and ``dpriv anonymize`` run (issue 13): a history of small views is
released in the command's own process, read once, no cluster started; a large one (or
``--cluster``) on a LocalCluster; ``--scheduler`` always on that scheduler (with
``--no-cluster`` an error). The ledger (or the released view) holds the same bytes either way."""

import contextlib
import socket
import threading
import time

import dask
import dask.dataframe as dd
import pandas as pd
import pytest
from test_small_views import ledger_files
from typer.testing import CliRunner

import dpriv.cluster as cluster_mod
import dpriv.history_size as sizes_mod
import dpriv.one_view as one_view_mod
import dpriv.release as release_mod
import dpriv.scheduler_address as address_mod
from dpriv.cli import app
from dpriv.cluster import (
    HistorySize,
    LedgerStart,
    Placement,
    history_size,
    ledger_start,
    ledger_state_rows,
    release_frame,
    release_place,
)
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy

POLICY = ReleasePolicy(id="rid", time="view", qi=["age"], sensitive="s", k=2, t=1.0, j=10.0)


def small_history() -> pd.DataFrame:
    # views of 3, 2 and 1 tuples; respondents 1, 2, 3 and 7 (four distinct ids in six tuples)
    return pd.DataFrame(
        {
            "rid": [1, 2, 3, 1, 7, 2],
            "view": [1, 1, 1, 2, 2, 3],
            "age": [50, 51, 52, 53, 54, 55],
            "s": ["a", "b", "a", "b", "a", "b"],
        }
    )


def place(frame, **kw) -> tuple:
    got = release_place(frame, POLICY, **{"scheduler": None, "cluster": None, **kw})
    assert isinstance(got, Placement)
    return got.place, got.size


@pytest.mark.parametrize("npartitions", [0, 1, 2])
def test_history_size_counts_tuples_largest_view_and_respondents(npartitions):
    frame = small_history()
    if npartitions:
        frame = dd.from_pandas(frame, npartitions=npartitions, sort=False)
    assert history_size(frame, POLICY) == HistorySize(rows=6, largest_view=3, respondents=4)


@pytest.mark.parametrize("npartitions", [0, 2])
def test_a_resumed_history_counts_the_views_still_to_release(npartitions):
    """Issue 13 item 5 follow-up: view 1 (ids 1, 2, 3) is committed, its respondents are the
    state's; views 2 and 3 (ids 1, 7 and 2) are to release. The run's states hold at most
    {1, 2, 3} | {1, 7, 2} = 4 respondents (the old count, 4 history ids + 3 state rows = 7,
    counted the committed view's respondents twice); the largest view to release has 2 tuples."""
    frame = small_history()
    if npartitions:
        frame = dd.from_pandas(frame, npartitions=npartitions, sort=False)
    start = LedgerStart(frozenset({1}), pd.Index([1, 2, 3]))
    assert history_size(frame, POLICY, start) == HistorySize(rows=6, largest_view=2, respondents=4)
    # the same ledger resumed with a history that leaves the committed view out
    assert history_size(small_history()[lambda d: d.view > 1], POLICY, start) == HistorySize(3, 2, 4)
    # a state with respondents the history no longer has: they are counted (5, 6 and 9)
    start = LedgerStart(frozenset({1, 2}), pd.Index([1, 2, 3, 5, 6, 7, 9]))
    assert history_size(frame, POLICY, start) == HistorySize(rows=6, largest_view=1, respondents=7)
    # state rows whose ids could not be read count as respondents of their own
    unread = LedgerStart(frozenset({1}), unread=3)
    assert history_size(frame, POLICY, unread).respondents == 3 + 3  # ids 1, 7, 2 of views 2-3
    # the status line names what is still to release, and says so when nothing is
    assert HistorySize(6, 2, 4).describe() == (
        "6 tuples, views still to release of at most 2 tuples, at most 4 respondents"
    )
    done = history_size(frame, POLICY, LedgerStart(frozenset({1, 2, 3}), pd.Index([1, 2, 3, 7])))
    assert done.describe() == "6 tuples, no view left to release"


def test_the_status_line_counts_the_views_left_and_reads_right_for_one():
    """A drill: anonymize of one 400-tuple view said "400 tuples, views still to release of at most
    400 tuples, at most 400 respondents"; a weekly run with one week left said the same plural."""
    one = POLICY.without("time")
    view = small_history()[lambda d: d.view == 1].drop(columns="view")
    assert history_size(view, one).describe() == "one view of 3 tuples and 3 respondents"
    start = LedgerStart(frozenset({1, 2}), pd.Index([1, 2, 3, 7]))  # view 3 (id 2) is left
    assert history_size(small_history(), POLICY, start).describe() == (
        "6 tuples, one view left to release (1 tuples, 4 respondents)"
    )
    start = LedgerStart(frozenset({1}), pd.Index([1, 2, 3]))
    assert history_size(small_history(), POLICY, start).describe() == (
        "6 tuples, 2 views still to release of at most 2 tuples, at most 4 respondents"
    )
    said = []
    with release_frame(release_place(view, one, scheduler=None, cluster=None), say=said.append):
        pass
    assert said[0].startswith("one view of 3 tuples and 3 respondents: to be released in this process, "), (
        said
    )


@pytest.mark.parametrize("largest_view", [2, 0])
def test_the_status_line_says_what_will_happen_before_the_release(largest_view):
    """Said before the release starts, so before any refusal: a future, and nothing about
    releasing when no view is left (the line once read "released in this process" above an
    error that released nothing)."""
    said = []
    size = HistorySize(6, largest_view, 4)
    with release_frame(Placement("process", size, small_history()), say=said.append):
        pass
    (line,) = [s for s in said if "tuples" in s]
    assert "no Dask cluster started" in line and ": released in this process" not in line
    assert ("to be released in this process" in line) == bool(largest_view)


def test_the_thresholds_decide_between_process_and_cluster(monkeypatch):
    frame = small_history()
    assert place(frame)[0] == "process"
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", 2)  # the view of 3 is now large
    where, size = place(frame)
    assert (where, size.small) == ("cluster", False)
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", 3)
    monkeypatch.setattr(release_mod, "SMALL_STATE_ROWS", 6)
    state = LedgerStart(frozenset({9}), pd.Index([1, 2, 3, 4, 5, 6]))  # 1, 2, 3 are in the history
    assert place(frame, start=state)[0] == "cluster"  # {1, 2, 3, 7} | {1..6} = 7 respondents
    state = LedgerStart(frozenset({9}), pd.Index([1, 2, 3, 4, 5]))
    assert place(frame, start=state)[0] == "process"  # 6 respondents
    monkeypatch.setattr(sizes_mod, "SMALL_HISTORY_ROWS", 5)  # six tuples: not even counted
    assert history_size(frame, POLICY) == HistorySize(6, None, None)
    assert place(frame)[0] == "cluster"


def test_flags_win_over_the_size():
    frame = small_history()
    assert place(frame, scheduler="tcp://h:8786") == ("scheduler", None)
    with pytest.raises(InputError, match="scheduler and cluster=True contradict"):  # as --cluster
        place(frame, scheduler="tcp://h:8786", cluster=True)
    assert place(frame, cluster=True) == ("cluster", None)
    where, size = place(frame, cluster=False)
    assert where == "process" and size.small


def test_scheduler_implies_a_cluster_and_contradicts_no_cluster():
    """Item 2: --scheduler ADDR implies a cluster (that one): --no-cluster with it is refused
    naming both flags (both arguments in Python: they were named as flags there too); the
    command refuses --cluster with it too, as it parses (dpriv.cli.repeats)."""
    from dpriv.wording import flag_named

    frame = small_history()
    flags = r"^--scheduler and --no-cluster contradict each other: drop --no-cluster to run"
    with pytest.raises(InputError, match=flags):
        place(frame, scheduler="tcp://h:8786", cluster=False, named=flag_named)
    python = (
        r"^scheduler and cluster=False contradict each other: drop cluster=False to run on "
        r"tcp://h:8786, or drop scheduler to release in this process$"
    )
    with pytest.raises(InputError, match=python):
        place(frame, scheduler="tcp://h:8786", cluster=False)


@pytest.fixture(scope="module")
def medical(tmp_path_factory):
    out = tmp_path_factory.mktemp("med")
    mh = medical_history(n_views=2, view_size=300, seed=2)
    policy = write_history(out, mh, policy_extra={"privacy": {"t": 0.5, "j": 0.8, "max_suppression": 1.0}})
    return out / "history.parquet", policy


def release(history, policy, ledger, *extra):
    return CliRunner().invoke(
        app,
        [
            "release",
            str(history),
            "--ledger",
            str(ledger),
            "--policy",
            str(policy),
            "--npartitions",
            "3",
            *extra,
        ],
    )


@pytest.mark.slow
def test_a_small_history_is_released_without_a_cluster_with_the_cluster_bytes(
    medical, tmp_path, monkeypatch, scheduler
):
    history, policy = medical
    started = []

    @contextlib.contextmanager
    def no_cluster(*args, **kwargs):  # the in-process run must not start or join any
        started.append(args)
        raise AssertionError("a cluster was started for a small history")
        yield

    with monkeypatch.context() as m:
        m.setattr(cluster_mod, "dask_client", no_cluster)
        calls = []
        real = release_mod.release_view
        m.setattr(
            release_mod,
            "release_view",
            lambda v, *a, **k: calls.append(type(v).__module__) or real(v, *a, **k),
        )
        res = release(history, policy, tmp_path / "here")
        assert res.exit_code == 0, res.output
        assert "no Dask cluster started" in res.output and started == []
        assert [c.split(".")[0] for c in calls] == ["pandas"] * 2
    # the same history on a cluster, every view forced onto the Dask path (partitions, shuffles)
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", -1)
    res = release(history, policy, tmp_path / "there", "--scheduler", scheduler)
    assert res.exit_code == 0, res.output
    assert "no Dask cluster started" not in res.output
    here, there = ledger_files(tmp_path / "here"), ledger_files(tmp_path / "there")
    assert len(here) >= 2 * 3 + 2 and list(here) == list(there)
    for name in here:
        assert here[name] == there[name], name
    # resuming on the cluster's ledger without a cluster: the recorded releases are a no-op
    monkeypatch.undo()
    res = release(history, policy, tmp_path / "there")
    assert res.exit_code == 0, res.output
    assert "already holds releases 1..2" in res.output
    assert ledger_state_rows(tmp_path / "there") == len(Ledger(tmp_path / "there").read_state(2)) >= 300


def test_cluster_flag_starts_the_local_cluster_for_a_small_history(medical, tmp_path, monkeypatch, scheduler):
    history, policy = medical
    asked = []
    real = cluster_mod.dask_client

    def spy(address=None, **kwargs):
        asked.append(address)
        return real(scheduler, **kwargs)  # the module's in-process cluster stands in for a new one

    monkeypatch.setattr(cluster_mod, "dask_client", spy)
    res = release(history, policy, tmp_path / "l", "--cluster")
    assert res.exit_code == 0, res.output
    assert asked == [None]  # None: a LocalCluster, not a given scheduler


def test_scheduler_and_no_cluster_contradict(medical, tmp_path):
    history, policy = medical
    res = release(history, policy, tmp_path / "l", "--scheduler", "tcp://127.0.0.1:1", "--no-cluster")
    assert res.exit_code == 2
    assert "--scheduler and --no-cluster contradict" in res.output
    assert not (tmp_path / "l").exists()


def test_ledger_state_rows_of_a_new_or_missing_ledger_is_zero(tmp_path):
    assert ledger_state_rows(tmp_path / "nothing") == 0
    Ledger(tmp_path / "new", create=True)
    assert ledger_state_rows(tmp_path / "new") == 0


def test_an_unreachable_scheduler_is_a_clear_input_error():
    """A malformed address fails at once; a well-formed one nobody listens on takes the
    connect timeout (20 s) through the same except (checked by hand: exit 2, nothing written)."""
    address = "notanaddress"
    before = dask.config.get("scheduler", None)
    said = f"^scheduler {address}: cannot reach a Dask scheduler there.*drop scheduler to use"
    with pytest.raises(InputError, match=said):
        with cluster_mod.dask_client(address, say=lambda _: None):
            pass
    assert dask.config.get("scheduler", None) == before  # the failed Client left no default behind


@contextlib.contextmanager
def _server(answer: bytes | None):
    """A TCP port on this machine that accepts connections and then says ``answer`` (or
    nothing at all, holding the connection open)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    held = []

    def serve():
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                held.append(conn)
                if answer is not None:
                    conn.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        for conn in held:
            conn.close()


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (None, "no answer within 1 s"),  # a Client alone waited forever for the handshake
        (b"HTTP/1.1 200 OK\r\n\r\n" + b"<html>not dask</html>" * 50, "not as a Dask scheduler"),
    ],
    ids=["silent", "another-protocol"],
)
def test_a_port_that_is_no_scheduler_is_a_clear_input_error_within_the_timeout(monkeypatch, answer, why):
    """A port that accepts but never answers hung ``--scheduler`` forever; one answering
    another protocol's bytes was an internal MemoryError (a length read from the text)."""
    monkeypatch.setattr(address_mod, "CONNECT_SECONDS", 1.0)
    before = dask.config.get("scheduler", None)
    with _server(answer) as address:
        started = time.monotonic()
        expected = f"^scheduler {address}: cannot reach a Dask scheduler there.*{why}"
        with pytest.raises(InputError, match=expected):
            with cluster_mod.dask_client(address, say=lambda _: None):
                pass
        assert time.monotonic() - started < 10
    assert dask.config.get("scheduler", None) == before


# -- dpriv anonymize: the same decision, the same bytes ----------------------------------------
@pytest.fixture(scope="module")
def one_view(tmp_path_factory):
    out = tmp_path_factory.mktemp("one")
    mh = medical_history(n_views=1, view_size=300, seed=3)
    mh.history.drop(columns=["view"]).to_csv(out / "view.csv", index=False)
    return out / "view.csv"


def anonymize(view, out, *extra):
    args = ["anonymize", str(view), "--out", str(out), "--id", "respondent_id", "--qi", "age,gender,weight"]
    args += ["--sensitive", "exam_result", "--k", "4", "--t", "0.6", "--j", "0.9", "--npartitions", "3"]
    return CliRunner().invoke(app, [*args, *extra])


@pytest.mark.slow
def test_a_small_view_is_anonymized_without_a_cluster_with_the_cluster_bytes(
    one_view, tmp_path, monkeypatch, scheduler
):
    @contextlib.contextmanager
    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started for a small view")
        yield

    calls = []
    real = one_view_mod.generalize_view
    with monkeypatch.context() as m:
        m.setattr(cluster_mod, "dask_client", no_cluster)
        spy = lambda v, *a, **k: calls.append(type(v)) or real(v, *a, **k)  # noqa: E731
        m.setattr(one_view_mod, "generalize_view", spy)
        res = anonymize(one_view, tmp_path / "here.parquet")
    assert res.exit_code == 0, res.output
    assert "300 tuples" in res.output and "no Dask cluster started" in res.output
    assert calls == [pd.DataFrame]  # the kernels on one pandas frame, no task graph
    res = anonymize(one_view, tmp_path / "there.parquet", "--scheduler", scheduler)
    assert res.exit_code == 0, res.output
    assert "no Dask cluster started" not in res.output
    assert (tmp_path / "here.parquet").read_bytes() == (tmp_path / "there.parquet").read_bytes()


@pytest.mark.slow
@pytest.mark.heavy
def test_anonymize_on_a_local_cluster_writes_the_in_process_bytes(one_view, tmp_path):
    """--cluster: two worker processes (~20 s to start here), the Dask path over 3 ranges."""
    assert anonymize(one_view, tmp_path / "here.parquet", "--no-cluster").exit_code == 0
    res = anonymize(one_view, tmp_path / "there.parquet", "--cluster")
    assert res.exit_code == 0, res.output
    assert "local Dask cluster with" in res.output
    assert (tmp_path / "here.parquet").read_bytes() == (tmp_path / "there.parquet").read_bytes()


@pytest.mark.slow  # a whole release or CLI run: the default run stays under 5 min of CPU
def test_anonymize_flags_scheduler_and_cluster_like_release(one_view, tmp_path, monkeypatch, scheduler):
    res = anonymize(one_view, tmp_path / "o.parquet", "--scheduler", "tcp://127.0.0.1:1", "--no-cluster")
    assert res.exit_code == 2
    assert "--scheduler and --no-cluster contradict each other" in res.output
    assert not (tmp_path / "o.parquet").exists()
    asked = []
    real = cluster_mod.dask_client

    def spy(address=None, **kwargs):
        asked.append(address)
        return real(address, **kwargs)

    monkeypatch.setattr(cluster_mod, "dask_client", spy)
    # --cluster starts a local cluster, --scheduler uses that one: refused before connecting (s33)
    res = anonymize(one_view, tmp_path / "o.parquet", "--scheduler", scheduler, "--cluster")
    assert res.exit_code == 2
    assert "--scheduler and --cluster contradict each other" in res.output
    assert asked == [] and not (tmp_path / "o.parquet").exists()


def test_a_small_history_is_read_once(medical, tmp_path, monkeypatch):
    """Item 3: sized, checked and released from one read of each part of the input (before,
    each part was read three times: counted, scanned for its views and ids, collected; and the
    first part once more by the preflight when a text column had no declared domain)."""
    history, policy = medical
    frame = pd.read_parquet(history)
    parts = [frame.iloc[: len(frame) // 2], frame.iloc[len(frame) // 2 :]]
    csv = tmp_path / "history.csv"
    frame.to_csv(csv, index=False)
    reads = []

    def reader(i):
        reads.append(i)
        return parts[i].reset_index(drop=True)

    def read_table(path, **kwargs):
        assert path == str(csv)
        return dd.from_map(reader, [0, 1], meta=frame.iloc[:0], divisions=[None] * 3)

    monkeypatch.setattr("dpriv.io.read_table", read_table)
    res = release(csv, policy, tmp_path / "l")
    assert res.exit_code == 0, res.output
    assert "no Dask cluster started" in res.output
    assert sorted(reads) == [0, 1]
    assert Ledger(tmp_path / "l").last_index() == 2


def test_a_resumed_ledger_starts_from_its_state(medical, tmp_path):
    history, policy = medical
    assert release(history, policy, tmp_path / "l", "--no-cluster").exit_code == 0
    start = ledger_start(tmp_path / "l", "respondent_id")
    state = Ledger(tmp_path / "l").read_state(2)
    assert start.committed == {1, 2} and sorted(start.ids) == sorted(state["respondent_id"])
    other = ledger_start(tmp_path / "l", "other_id")  # not a column of the state
    assert (other.committed, len(other.ids), other.unread) == ({1, 2}, 0, len(state))
    none = ledger_start(tmp_path / "none", "respondent_id")
    assert (none.committed, len(none.ids), none.unread) == (frozenset(), 0, 0)
