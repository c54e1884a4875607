"""An operator's drill (s36, F8): a SIGTERM in the first seconds of ``dpriv`` (its libraries
loading; up to ~2.5 s on a loaded machine) ended the process, exit 143 as a shell reports it,
with nothing on stderr: the job's log said nothing. It now gets one line, as a Ctrl-C there and
a SIGTERM later do (dpriv/__main__.py)."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

STOPPED = textwrap.dedent(
    """
    import os, signal, sys, time
    import dpriv.dask_start

    def term_while_loading(argv):  # as a scheduler's SIGTERM that lands while Dask imports
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)

    dpriv.dask_start.import_dask = term_while_loading
    sys.argv = ["dpriv", "--help"]
    from dpriv.__main__ import main
    main()
    """
)


def test_sigterm_while_the_command_line_loads_is_one_line_exit_143():
    proc = subprocess.run(
        [sys.executable, "-c", STOPPED],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 143, (proc.returncode, proc.stderr)
    assert proc.stderr == "terminated (SIGTERM) while starting: nothing was read or written\n"


def test_once_loaded_a_sigterm_is_the_commands_again(monkeypatch):
    """The start-up's handler is replaced when the command runs: the command's own says what
    stays of it (dpriv/cli/interrupts.py), never "while starting"; after the command, and after
    main, the handlers are those before."""
    import functools

    import dpriv.__main__ as entry
    import dpriv.cli
    from dpriv.cli.interrupts import _interrupt, sigterm_interrupts

    seen = []

    def app(**kwargs):
        with sigterm_interrupts():
            seen.append([signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM)])
        seen.append([signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM)])

    def leave(code):
        raise SystemExit(code)

    monkeypatch.setattr(dpriv.cli, "app", app)
    monkeypatch.setattr(entry, "leave", leave)
    before = [signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM)]
    with pytest.raises(SystemExit):
        entry.main()
    inside, after = seen
    assert all(isinstance(h, functools.partial) and h.func is _interrupt for h in inside)
    assert after == [signal.default_int_handler, signal.SIG_DFL]
    assert [signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM)] == before


PARSING = textwrap.dedent(
    """
    import os, signal, sys
    import typer.core

    # click's Command (a newer typer carries its own click): every command parses through it
    command = next(c for c in typer.core.TyperGroup.__mro__ if c.__name__ == "Command")
    parse, sent = command.parse_args, getattr(signal, sys.argv[1])

    def signalled(self, ctx, args):  # the signal lands while click parses the arguments
        os.kill(os.getpid(), sent)
        return parse(self, ctx, args)

    command.parse_args = signalled
    sys.argv = ["dpriv", "status", "nowhere"]
    from dpriv.__main__ import main
    main()
    """
)


@pytest.mark.slow  # a fresh python process loading dpriv's libraries: ~2.4 s of CPU each
@pytest.mark.parametrize(
    "sig, code, line",
    [
        ("SIGINT", 130, "interrupted (Ctrl-C) while starting: nothing was read or written\n"),
        ("SIGTERM", 143, "terminated (SIGTERM) while starting: nothing was read or written\n"),
    ],
)
def test_a_signal_while_the_arguments_are_parsed_is_one_line(sig, code, line):
    """A Ctrl-C while click parsed the arguments (after the libraries loaded, before the
    command's handler) printed click's "Aborted!", exit 1; a SIGTERM then ended the process with
    nothing on stderr. Both now get the start-up's line and exit code."""
    proc = subprocess.run(
        [sys.executable, "-c", PARSING, sig],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (proc.returncode, proc.stderr) == (code, line)
