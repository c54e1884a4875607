"""Where a command's Dask work runs, settled before anything is read (dpriv/scheduler_address.py).

An operator drill (session 33): ``dpriv release --scheduler`` with an address where nothing
listens (``tcp://127.0.0.1:1``, an ssh port, an unknown host) ended after ~23 s with exit 3,
"the Dask cluster lost a worker or its scheduler during release 1 ... run the same command
again to resume", which a scheduled job retries for ever; ``--scheduler ""`` (an unset
``$SCHED``) ran on this machine without a word; Dask's own ``scheduler-address`` config
(``DASK_SCHEDULER_ADDRESS``) was ignored as silently. Now: exit 2 at once, naming the
address and why, before the input is read; an empty address refused; the config used as
``--scheduler`` would be (said on stderr) unless --cluster/--no-cluster says where to run.
"""

from __future__ import annotations

import socket
import time

import dask
import pytest
from typer.testing import CliRunner

import dpriv.io
from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.scheduler_address import chosen_scheduler, tcp_refusal
from dpriv.wording import flag_named


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A 2-view history of 30 tuples a view, and its policy."""
    out = tmp_path_factory.mktemp("sched")
    loose = {"privacy": {"k": 5, "t": 0.5, "j": 1.5, "max_suppression": 1.0}}
    write_history(out, medical_history(n_views=2, view_size=30, seed=1), policy_extra=loose)
    return out


@pytest.fixture
def closed_port() -> str:
    """An address on this machine where nothing listens (a port just given back)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"tcp://127.0.0.1:{port}"


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def release(generated, ledger, *extra):
    return run(
        "release",
        generated / "history.parquet",
        "--ledger",
        ledger,
        "--policy",
        generated / "policy.toml",
        *extra,
    )


@pytest.fixture
def nothing_read(monkeypatch):
    """The input is never read (the scheduler is refused first)."""

    def refuse(*args, **kwargs):
        raise AssertionError("the input was read")

    monkeypatch.setattr(dpriv.io, "read_table", refuse)


def test_release_to_an_address_where_nothing_listens_is_exit_2_at_once(generated, tmp_path, closed_port):
    """The drill: exit 3 after ~23 s ("lost a worker or its scheduler during release 1 ... run
    the same command again"), a ledger folder made. Now exit 2 within seconds, no ledger."""
    started = time.monotonic()
    res = release(generated, tmp_path / "L", "--scheduler", closed_port)
    assert res.exit_code == 2, res.output
    port = closed_port.rsplit(":", 1)[1]
    assert (
        f"error: --scheduler {closed_port}: cannot reach a Dask scheduler there (nothing listens on "
        f"port {port} of 127.0.0.1: connection refused); give the address a running scheduler prints"
    ) in res.output
    assert "lost" not in res.output and "resume" not in res.output
    assert time.monotonic() - started < 10
    assert not (tmp_path / "L").exists()


@pytest.mark.parametrize("command", ["anonymize", "demo", "generate"])
def test_every_command_with_scheduler_refuses_it_at_once(
    generated, tmp_path, closed_port, command, nothing_read
):
    """anonymize, demo and generate medical --partitions took 20 s to say "no answer" (distributed
    retries a refused connection until its timeout)."""
    args = _args(command, generated, tmp_path)
    started = time.monotonic()
    res = run(*args, "--scheduler", closed_port)
    assert res.exit_code == 2, res.output
    assert f"--scheduler {closed_port}: cannot reach a Dask scheduler there (nothing listens" in res.output
    assert time.monotonic() - started < 10
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_host_is_named():
    why = tcp_refusal("tcp://nosuchhost.invalid:8786", 5)
    assert why is not None and why.startswith("unknown host 'nosuchhost.invalid'")
    assert tcp_refusal("inproc://somewhere", 5) is None  # not TCP: distributed's connect decides


@pytest.mark.parametrize("command", ["release", "anonymize", "demo", "generate"])
def test_an_empty_scheduler_address_is_refused(generated, tmp_path, command, nothing_read):
    """``--scheduler "$SCHED"`` with SCHED unset: it ran on this machine, exit 0."""
    args = _args(command, generated, tmp_path)
    res = run(*args, "--scheduler", "")
    assert res.exit_code == 2, res.output
    assert (
        "error: --scheduler is empty (''; an unset shell variable?): give the address a running Dask "
        "scheduler prints (tcp://host:8786), or leave --scheduler out to run on this machine"
    ) in res.output
    assert list(tmp_path.iterdir()) == []


def test_dasks_scheduler_address_config_is_used_as_scheduler_would_be(
    generated, tmp_path, closed_port, nothing_read
):
    """DASK_SCHEDULER_ADDRESS (Dask's ``scheduler-address``) was ignored without a word: the
    release ran on a LocalCluster or in process. Now it is the scheduler, said and probed."""
    with dask.config.set({"scheduler-address": closed_port}):
        res = release(generated, tmp_path / "L")
    assert res.exit_code == 2, res.output
    config = "Dask's scheduler-address config (DASK_SCHEDULER_ADDRESS or a Dask YAML file)"
    assert f"note: {config} names {closed_port}: used as --scheduler {closed_port} would be" in res.output
    assert f"error: {config} names {closed_port}: cannot reach a Dask scheduler there (nothing listens" in (
        res.output
    )
    assert "or unset it (or give --cluster or --no-cluster) to use this machine" in res.output
    assert not (tmp_path / "L").exists()


def test_an_empty_scheduler_address_config_is_unset():
    """DASK_SCHEDULER_ADDRESS="" is Dask's "none" (its Client() starts a local cluster)."""
    said = []
    with dask.config.set({"scheduler-address": " "}):
        assert chosen_scheduler(None, None, said.append) is None
    assert said == []


@pytest.mark.slow  # a whole release
def test_cluster_flags_run_here_whatever_the_config_says(generated, tmp_path, closed_port):
    with dask.config.set({"scheduler-address": closed_port}):
        res = release(generated, tmp_path / "L", "--no-cluster")
    assert res.exit_code == 0, res.output
    assert f"names {closed_port}; not used: --no-cluster runs on this machine" in res.output


@pytest.mark.slow  # a whole release on the module's in-process cluster
def test_the_configured_scheduler_runs_the_release(generated, tmp_path, scheduler):
    with dask.config.set({"scheduler-address": scheduler}):
        res = release(generated, tmp_path / "L")
    assert res.exit_code == 0, res.output
    assert f"connected to {scheduler}" in res.output
    assert (tmp_path / "L" / "releases" / "2" / "view.parquet").is_file()


def _args(command: str, generated, tmp_path) -> list:
    """The command line of ``command`` on the generated history, writing under ``tmp_path``."""
    return {
        "release": ["release", generated / "history.parquet", "--ledger", tmp_path / "L"],
        "anonymize": ["anonymize", generated / "history.parquet", "--out", tmp_path / "o.parquet"]
        + ["--policy", generated / "policy.toml"],
        "demo": ["demo", "--out", tmp_path / "D", "--views", "1", "--view-size", "20"],
        "generate": ["generate", "medical", "--out", tmp_path / "G", "--views", "1", "--partitions", "2"],
    }[command]


def test_the_dashboard_port_is_named_as_such():
    """A fresh user's drill (s40, 8): ``--scheduler HOST:8787`` (the dashboard) waited 20 s and
    said "no answer" without a word of why."""
    from dpriv.scheduler_address import unreachable

    said = str(unreachable("tcp://10.0.0.5:8787", "no answer within 20 s", flag_named))
    assert said.startswith(
        "--scheduler tcp://10.0.0.5:8787: cannot reach a Dask scheduler there (no answer within 20 s; 8787 "
        "is usually the Dask dashboard's port: the scheduler listens on 8786 by default); give the address"
    )
    assert "dashboard" not in str(unreachable("tcp://10.0.0.5:8786", "no answer within 20 s", flag_named))
