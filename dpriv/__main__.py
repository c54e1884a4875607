"""``dpriv`` and ``python -m dpriv``: the command line (dpriv/cli), started so that a Ctrl-C while
its libraries load (pandas, Dask: about a second) ends as one line, exit 130, like a Ctrl-C
anywhere later, instead of a traceback from an import."""

import sys


def main() -> None:
    """The ``dpriv`` script's entry point."""
    try:
        from dpriv.cli import app
    except KeyboardInterrupt:
        sys.stderr.write("interrupted (Ctrl-C) while starting: nothing was read or written\n")
        raise SystemExit(130) from None
    app(prog_name="dpriv")


if __name__ == "__main__":  # pragma: no cover - the command line's own tests run ``app``
    main()
