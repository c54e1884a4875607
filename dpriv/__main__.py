"""``dpriv`` and ``python -m dpriv``: the command line (dpriv/cli), started so that a Ctrl-C while
its libraries load (pandas, Dask: about a second) ends as one line, exit 130, like a Ctrl-C
anywhere later, instead of a traceback from an import; and left without the interpreter's
teardown (:func:`leave`)."""

import sys
from typing import NoReturn


def main() -> None:
    """The ``dpriv`` script's entry point."""
    try:
        from dpriv.dask_start import import_dask

        import_dask(sys.argv)  # a Dask config Dask cannot load: exit 2, named, not a traceback
        from dpriv.cli import app
    except KeyboardInterrupt:
        sys.stderr.write("interrupted (Ctrl-C) while starting: nothing was read or written\n")
        raise SystemExit(130) from None
    try:
        app(prog_name="dpriv")
    except SystemExit as exc:
        leave(exc.code)
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
