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
    """The start-up's handler is dropped before the command runs: the command's own says what
    stays of it (dpriv/cli/interrupts.py), never "while starting"."""
    import dpriv.__main__ as entry
    import dpriv.cli

    seen = []

    def app(**kwargs):
        seen.append(signal.getsignal(signal.SIGTERM))

    def leave(code):
        raise SystemExit(code)

    monkeypatch.setattr(dpriv.cli, "app", app)
    monkeypatch.setattr(entry, "leave", leave)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit):
        entry.main()
    assert seen == [before] and signal.getsignal(signal.SIGTERM) == before
