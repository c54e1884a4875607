"""``dpriv`` and ``python -m dpriv``: the command line (dpriv/cli), started so that a Ctrl-C while
its libraries load (pandas, Dask: about a second) ends as one line, exit 130, like a Ctrl-C
anywhere later, instead of a traceback from an import (a SIGTERM then: one line, exit 143); and
left without the interpreter's teardown (:func:`leave`)."""

import signal
import sys
from typing import NoReturn


def _terminated_starting(signum: int, frame: object) -> NoReturn:
    """SIGTERM while the libraries load: the one line a SIGTERM later gets, exit 143; without it
    a job stopped in its first seconds (a loaded machine: up to ~2.5 s) ended with nothing in its
    log. Nothing is open for writing yet, so the process ends at once."""
    import os

    sys.stderr.write("terminated (SIGTERM) while starting: nothing was read or written\n")
    sys.stderr.flush()
    os._exit(143)


#: The line of a Ctrl-C before a command's own handler runs (dpriv/cli/interrupts.py).
STARTING_INTERRUPTED = "interrupted (Ctrl-C) while starting: nothing was read or written\n"


def main() -> None:
    """The ``dpriv`` script's entry point."""
    default = signal.signal(signal.SIGTERM, _terminated_starting)
    try:
        from dpriv.dask_start import import_dask

        import_dask(sys.argv)  # a Dask config Dask cannot load: exit 2, named, not a traceback
        from dpriv.cli import app
    except KeyboardInterrupt:
        sys.stderr.write(STARTING_INTERRUPTED)
        raise SystemExit(130) from None
    finally:  # the command's own handler says what stays (dpriv/cli/interrupts.py)
        signal.signal(signal.SIGTERM, default)
    try:
        app(prog_name="dpriv")
    except SystemExit as exc:
        leave(exc.code)
    except KeyboardInterrupt:
        # Ctrl-C while typer builds the command from its functions' signatures, before the
        # command's handler (which ends every later interrupt with its own line) runs
        sys.stderr.write(STARTING_INTERRUPTED)
        leave(130)
    leave(0)


def leave(code: object) -> NoReturn:
    """End the process with ``code`` (as ``SystemExit(code)`` would) once the Python exit
    handlers have run (Dask's, logging's) and the standard streams are flushed, but without the
    interpreter's teardown and the C++ static destructors: a pyarrow thread pool destroyed there
    while its threads still run aborts the process ("terminate called without an active
    exception", exit 134; apache/arrow#34314), which turned about one refusal in fifteen (exit 2)
    into 134. Every file dpriv writes is closed before a command returns."""
    import atexit
    import os

    if isinstance(code, str):  # SystemExit("message"): printed, exit 1
        sys.stderr.write(code + "\n")
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (dpriv ... | head) or a closed stream
            pass
    os._exit(0 if code is None else int(code))


if __name__ == "__main__":  # pragma: no cover - the command line's own tests run ``app``
    main()
