"""``python -m dpriv``: the same command line as the ``dpriv`` script (dpriv/cli)."""

from dpriv.cli import app

if __name__ == "__main__":  # pragma: no cover - the command line's own tests run ``app``
    app(prog_name="dpriv")
