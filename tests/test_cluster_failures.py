"""A Dask cluster that fails under a command, and input URLs fsspec cannot read (a new cluster
user's drill). A worker killed mid-release (its results gone: ``already forgotten``) or a
killed scheduler (``scheduler-connection-lost``) ended as exit 1 ``internal error:
FuturesCancelledError: ...`` with Dask's raw text and, for the scheduler, ``distributed.client
- ERROR`` tracebacks on stderr; it is exit 3 now, naming the release being made and the
releases the ledger holds, and the same command resumes. ``s3://`` without s3fs and an unknown
``foo://`` were internal errors too; they are bad input (exit 2) naming the package or the scheme.
"""

from __future__ import annotations

import asyncio
import errno
import importlib.util
import logging
import os
import signal
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import typer
from conftest import start_cluster, stop_cluster
from distributed.client import (
    CancelledFuturesGroup,
    ClosedClientError,
    FutureCancelledError,
    FuturesCancelledError,
)
from distributed.comm.core import CommClosedError
from distributed.scheduler import KilledWorker
from loose_history import release, write_loose
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.cli.common import Debug, Scheduler, command
from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger

KEY = ("sum-tree-a4c6", 0)


def _forgotten() -> FuturesCancelledError:
    errors = [FutureCancelledError(("astype-ac26", i), "already forgotten") for i in range(4)]
    return FuturesCancelledError([CancelledFuturesGroup(errors, "already forgotten")])


def _connection_lost() -> FuturesCancelledError:
    msg = "Client lost the connection to the scheduler. Please check your connection and re-run your work."
    errors = [FutureCancelledError(("getitem-4e9f", 0), "scheduler-connection-lost", msg)]
    return FuturesCancelledError([CancelledFuturesGroup(errors, "scheduler-connection-lost")])


def _written_through(cause: BaseException) -> OSError:
    """As dpriv.io.atomic_write re-raises a failure while it streams a file: an OSError naming
    the file, the failure its cause."""
    try:
        raise cause
    except BaseException as exc:
        try:
            raise OSError(None, None, "/ledger/releases/2/view.parquet") from exc
        except OSError as wrapped:
            return wrapped


def _app(raising: BaseException, log: str | None = None) -> typer.Typer:
    """A one-command app whose command runs through :func:`dpriv.cli.common.command` and raises
    ``raising`` (after logging ``log`` to ``distributed.client`` at ERROR, as a lost scheduler does)."""
    one = typer.Typer()

    @one.command()
    @command
    def anonymize(scheduler: Scheduler = None, debug: Debug = False) -> None:
        if log:
            logging.getLogger("distributed.client").error(log)
        raise raising

    @one.command()
    def other() -> None:  # two commands: typer then takes the command's name as an argument
        pass

    return one


LOST = [
    (
        FutureCancelledError(KEY, "already forgotten"),
        "lost a worker",
        "results that a lost worker held are gone",
    ),
    (_forgotten(), "lost a worker", "(Dask: 'already forgotten')"),
    (_connection_lost(), "lost its scheduler", "the connection to the scheduler was lost"),
    (
        KilledWorker(KEY, SimpleNamespace(address="tcp://10.0.0.7:40000"), 3),
        "lost a worker",
        "every worker that ran task ('sum-tree-a4c6', 0) died running it, out of memory?",
    ),
    (
        CommClosedError("in <TCP (closed)>: Stream is closed"),
        "lost a worker or its scheduler",
        "CommClosedError",
    ),
    (ClosedClientError("Client is closed. Can't send update-graph message."), "lost its scheduler", "again"),
    (
        OSError("Timed out trying to connect to tcp://10.0.0.7:8786 after 30 s"),
        "lost a worker or its",
        "Timed",
    ),
    (asyncio.CancelledError(), "lost a worker or its scheduler", "CancelledError"),
    (
        _written_through(CommClosedError("Stream is closed")),
        "lost a worker or its scheduler",
        "CommClosedError",
    ),
]


IDS = ["future", "futures", "scheduler", "killed", "comm", "closed-client", "connect", "asyncio", "written"]


@pytest.mark.parametrize(("raised", "lost", "why"), LOST, ids=IDS)
def test_a_lost_worker_or_scheduler_is_exit_3_in_words(raised, lost, why):
    """The drill: exit 1, ``internal error: FutureCancelledError: ('sum-tree-a4c6…', 0) cancelled
    for reason: already forgotten.``; Dask's names differ across distributed versions."""
    res = CliRunner().invoke(_app(raised), ["anonymize", "--scheduler", "tcp://10.0.0.7:8786"])
    assert res.exit_code == 3, res.output
    assert res.stderr.startswith(f"error: the Dask cluster {lost}"), res.stderr
    assert why in res.stderr and "internal error" not in res.stderr and "Traceback" not in res.stderr
    assert "Nothing was written: run the same command again" in res.stderr
    assert res.stderr.count("\n") == 1  # one line, Dask's multi-line text left out


def test_a_lost_scheduler_names_it_and_what_to_check():
    res = CliRunner().invoke(_app(_connection_lost()), ["anonymize", "--scheduler", "tcp://10.0.0.7:8786"])
    assert res.exit_code == 3
    assert "check that the scheduler at tcp://10.0.0.7:8786 runs (restart it and its workers)" in res.stderr


def test_other_errors_keep_their_exit_status():
    """Only the cluster's failures are exit 3: a dpriv bug stays exit 1, a full disk exit 2."""
    res = CliRunner().invoke(_app(ValueError("a bug")), ["anonymize"])
    assert res.exit_code == 1 and res.stderr.startswith("internal error: ValueError: a bug")
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/x/o.csv")
    res = CliRunner().invoke(_app(full), ["anonymize"])
    assert res.exit_code == 2 and "no space left on device writing /x/o.csv" in res.stderr


def test_debug_shows_the_traceback_and_still_exits_3():
    res = CliRunner().invoke(_app(_forgotten()), ["anonymize", "--debug"])
    assert res.exit_code == 3
    assert "Traceback" in res.stderr and "FuturesCancelledError" in res.stderr
    assert "error: the Dask cluster lost a worker" in res.stderr


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


@pytest.mark.parametrize("debug", [False, True])
def test_dask_client_errors_are_kept_off_stderr_during_a_command_unless_debug(debug):
    """The drill: two ``distributed.client - ERROR`` tracebacks (asyncio CancelledError) before
    the message when the scheduler was killed; --debug lets them through. The filter is the
    command's: removed after it."""
    client_log, handler = logging.getLogger("distributed.client"), _Records()
    filters_before = list(client_log.filters)
    client_log.addHandler(handler)
    try:
        said = "Failed to reconnect to scheduler after 20.00 seconds, closing client"
        res = CliRunner().invoke(_app(_connection_lost(), log=said), ["anonymize", *(["--debug"] * debug)])
        assert res.exit_code == 3
        assert handler.seen == ([said] if debug else [])
        assert client_log.filters == filters_before
        client_log.error("after the command")  # not the command's: not filtered
        assert handler.seen[-1] == "after the command"
    finally:
        client_log.removeHandler(handler)


# -- dpriv release: which release was being made, the ledger, resuming -----------------------------
@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return write_loose(tmp_path_factory.mktemp("hist"), n_views=3, view_size=100).folder


def _files(ledger: Path) -> dict[str, bytes]:
    led = Ledger(ledger)
    return {
        f"{r['index']}/{name}": (led.release_dir(r["index"]) / name).read_bytes()
        for r in led.committed()
        for name in ("view.parquet",)
    } | {f"{r['index']}/state": led.state_path(r["index"]).read_bytes() for r in led.committed()}


@pytest.mark.parametrize(
    ("lost_at", "raised", "said"),
    [
        (2, _forgotten(), "lost a worker during release 2: results that a lost worker held are gone"),
        (
            3,
            _connection_lost(),
            "lost its scheduler during release 3: the connection to the scheduler was lost",
        ),
    ],
)
def test_a_release_whose_cluster_fails_names_the_release_and_resumes(
    history, tmp_path, monkeypatch, lost_at, raised, said
):
    """The drill: the ledger was safe but the message was an internal error with Dask's text."""
    import dpriv.release

    reference = tmp_path / "reference"
    assert release(history, reference).exit_code == 0
    real = dpriv.release.release_view

    def losing(view, summary, *args, index, **kwargs):
        if index == lost_at:  # as a lost worker's results surface in the release loop
            raise raised
        return real(view, summary, *args, index=index, **kwargs)

    monkeypatch.setattr(dpriv.release, "release_view", losing)
    ledger = tmp_path / "L"
    res = release(history, ledger)
    assert res.exit_code == 3, res.output
    holds = "release 1" if lost_at == 2 else "releases 1..2"
    assert f"error: the Dask cluster {said}" in res.stderr
    assert (
        f"Nothing of release {lost_at} was committed; the ledger {ledger} holds {holds}: run "
        f"the same command again to resume at release {lost_at}." in res.stderr
    ), res.stderr
    assert "internal error" not in res.stderr and "Traceback" not in res.stderr
    assert Ledger(ledger).last_index() == lost_at - 1
    monkeypatch.setattr(dpriv.release, "release_view", real)
    resumed = release(history, ledger)
    assert resumed.exit_code == 0, resumed.output
    assert _files(ledger) == _files(reference)  # what an uninterrupted run wrote


def test_a_first_release_whose_cluster_fails_says_the_ledger_holds_none(history, tmp_path, monkeypatch):
    import dpriv.release

    def losing(*args, **kwargs):
        raise KilledWorker(KEY, SimpleNamespace(address="tcp://10.0.0.7:40000"), 3)

    monkeypatch.setattr(dpriv.release, "release_view", losing)
    res = release(history, tmp_path / "L")
    assert res.exit_code == 3
    assert "lost a worker during release 1: every worker that ran task" in res.stderr
    assert "holds no release yet: run the same command again to resume at release 1" in res.stderr


# -- a real scheduler killed mid-release -------------------------------------------------------------
@pytest.mark.slow
def test_a_scheduler_killed_mid_release_is_exit_3_naming_the_release(tmp_path, monkeypatch):
    """A `dask scheduler` process killed (SIGKILL) once release 1 is committed: exit 3 naming
    release 2, no ``distributed.client - ERROR`` line, the ledger at release 1; the client's
    reconnect wait (CONNECT_SECONDS) is cut to 2 s here."""
    import dpriv.scheduler_address

    monkeypatch.setattr(dpriv.scheduler_address, "CONNECT_SECONDS", 2.0)
    mh = medical_history(n_views=3, view_size=60_000, seed=0)  # over SMALL_VIEW_ROWS: on the cluster
    policy = write_history(tmp_path, mh, policy_extra={"privacy": {"max_suppression": 1.0}})
    (tmp_path / "cluster").mkdir()
    address, sched, workers = start_cluster(tmp_path / "cluster", 1, 1)
    ledger = tmp_path / "L"
    killed = threading.Event()

    def kill_after_release_1() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not killed.is_set():
            if (ledger / "manifest.json").exists() and Ledger(ledger).last_index() >= 1:
                os.kill(sched.pid, signal.SIGKILL)
                killed.set()
                return
            time.sleep(0.01)

    watcher = threading.Thread(target=kill_after_release_1, daemon=True)
    watcher.start()
    try:
        args = ["release", tmp_path / "history.parquet", "--ledger", ledger, "--policy", policy]
        res = CliRunner().invoke(app, [*map(str, args), "--scheduler", address, "--no-progress"])
    finally:
        killed.set()
        stop_cluster([sched, *workers])
    assert res.exit_code == 3, res.output
    assert "error: the Dask cluster lost its scheduler during release 2" in res.stderr, res.stderr
    assert f"check that the scheduler at {address} runs" in res.stderr
    assert "distributed.client - ERROR" not in res.stderr and "Traceback" not in res.stderr
    assert Ledger(ledger).last_index() == 1


# -- input URLs -----------------------------------------------------------------------------------
def _missing_backend() -> tuple[str, str]:
    """A URL scheme whose fsspec package is not installed here, and that package."""
    for scheme, package in (("s3", "s3fs"), ("gs", "gcsfs"), ("az", "adlfs"), ("oci", "ocifs")):
        if importlib.util.find_spec(package) is None:
            return scheme, package
    pytest.skip("s3fs, gcsfs, adlfs and ocifs are all installed: no URL lacks its package here")


@pytest.mark.parametrize(
    ("command", "what"),
    [
        (["release", "{url}", "--ledger", "{tmp}/L", "--policy", "{policy}"], "history"),
        (["anonymize", "{url}", "--out", "{tmp}/o.csv", "--policy", "{policy}"], "input"),
        (["export", "{url}", "--out", "{tmp}/e.csv"], "released view"),
        (["kpr", "{url}", "{url}", "--known", "age"], "original"),
    ],
)
def test_a_url_whose_package_is_missing_is_bad_input_naming_it(history, tmp_path, command, what):
    """The drill: ``internal error: ImportError: Install s3fs to access S3``, exit 1."""
    scheme, package = _missing_backend()
    url = f"{scheme}://bucket/hfold"
    args = [a.format(url=url, tmp=tmp_path, policy=history / "policy.toml") for a in command]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert res.stderr.strip().splitlines()[-1] == (
        f"error: the {what} {url} needs the {package} package to be read (pip install {package}), on this "
        "machine and on any Dask workers that read it"
    )
    assert not (tmp_path / "L").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["release", "foo://x/hfold", "--ledger", "{tmp}/L", "--policy", "{policy}"],
        ["verify", "{tmp}/r.parquet", "--original", "foo://x/hfold", "--policy", "{policy}"],
    ],
)
def test_a_url_of_an_unknown_scheme_is_bad_input_naming_it(history, tmp_path, command):
    """The drill: ``internal error: ValueError: Protocol not known: foo``, exit 1."""
    args = [a.format(tmp=tmp_path, policy=history / "policy.toml") for a in command]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert res.stderr.strip().splitlines()[-1] == (
        "error: unknown URL scheme 'foo' in foo://x/hfold: give a local path or a URL fsspec knows "
        "(file://, s3://, gs://, az://, https://, ...)"
    )


def test_the_python_api_refuses_such_a_url_as_input_error(history):
    from dpriv.errors import InputError
    from dpriv.policy import ReleasePolicy
    from dpriv.release import release_history

    pol = ReleasePolicy.from_toml(history / "policy.toml")
    with pytest.raises(InputError, match=r"^unknown URL scheme 'foo' in foo://x/h\.parquet"):
        release_history("foo://x/h.parquet", pol, history / "L")
    assert not (history / "L").exists()


def test_a_local_path_and_a_file_url_still_read(history):
    from dpriv.io import read_table

    path = history / "history.parquet"
    assert len(read_table(str(path))) == len(read_table(path.as_uri())) == 300
