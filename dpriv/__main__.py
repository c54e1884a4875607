"""``dpriv`` and ``python -m dpriv``: the command line (dpriv/cli), started so that a Ctrl-C while
its libraries load (pandas, Dask: about a second) or its arguments are parsed ends as one line,
exit 130, like a Ctrl-C anywhere later, instead of a traceback from an import or click's
"Aborted!" (a SIGTERM then: one line, exit 143); and left without the interpreter's teardown
(:func:`leave`)."""

import signal
import sys
from typing import NoReturn

#: The line of a Ctrl-C before a command's own handler runs (dpriv/cli/interrupts.py).
STARTING_INTERRUPTED = "interrupted (Ctrl-C) while starting: nothing was read or written\n"
#: The line of a SIGTERM then.
STARTING_TERMINATED = "terminated (SIGTERM) while starting: nothing was read or written\n"


def _starting(signum: int, frame: object) -> NoReturn:
    """Ctrl-C or SIGTERM before a command's own handler runs (the libraries loading, the command
    line being parsed): the one line an interrupt later gets, exit 130 or 143. Without it a job
    stopped in its first seconds (a loaded machine: up to ~2.5 s) ended with nothing in its log
    (SIGTERM) or with click's "Aborted!", exit 1 (Ctrl-C while the arguments were parsed).
    Nothing is open for writing yet, so the process ends at once."""
    import os

    term = signum == signal.SIGTERM
    sys.stderr.write(STARTING_TERMINATED if term else STARTING_INTERRUPTED)
    sys.stderr.flush()
    os._exit(143 if term else 130)


# the command's own handler takes over from it, and puts the default back after the command
# (dpriv.cli.interrupts.sigterm_interrupts): a mark, not the function, as `python -m dpriv`
# runs this file as __main__ (another function object than dpriv.__main__._starting)
_starting.dpriv_starting = True  # type: ignore[attr-defined]


def main() -> None:
    """The ``dpriv`` script's entry point."""
    # until the command's own handler runs (then, after the command, the defaults: see _starting)
    previous = {n: signal.signal(n, _starting) for n in (signal.SIGINT, signal.SIGTERM)}
    try:
        from dpriv.dask_start import import_dask

        import_dask(sys.argv)  # a Dask config Dask cannot load: exit 2, named, not a traceback
        from dpriv.cli import app
    except KeyboardInterrupt:  # raised where no handler of ours was called (an import's own)
        sys.stderr.write(STARTING_INTERRUPTED)
        raise SystemExit(130) from None
    try:
        try:
            app(prog_name="dpriv")
        finally:  # the process ends now (leave): no start-up line for an interrupt of its exit
            for signum, handler in previous.items():
                signal.signal(signum, handler)
    except SystemExit as exc:
        leave(exc.code)
    except KeyboardInterrupt:
        # a KeyboardInterrupt raised before the command's handler runs, not by a signal's handler
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
