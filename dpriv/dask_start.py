"""Dask's config loaded once, before the command line imports anything that uses Dask: a config
value Dask cannot parse (``DASK_DATAFRAME__SHUFFLE=bogus``, a malformed YAML file in
``DASK_CONFIG``) fails inside ``import dask`` itself, so it ended every command, even ``dpriv
--version``, with a traceback and exit 1. It is bad input: one ``error:`` line naming where
Dask's config comes from and what to do, exit 2 (the traceback with ``--debug``)."""

from __future__ import annotations

import os
import re
import sys

#: Dask's user config folder when ``DASK_CONFIG`` is unset, and its system one (dask/config.py).
USER_FOLDER, SYSTEM_FOLDER = "~/.config/dask", "/etc/dask"


def import_dask(argv: list[str]) -> None:
    """Import ``dask`` and ``dask.dataframe``; if that fails on Dask's config (any exception but
    Ctrl-C), print one ``error:`` line and exit 2, or re-raise when ``--debug`` is in ``argv``."""
    try:
        import dask  # noqa: F401
        import dask.dataframe  # noqa: F401
    except ImportError:  # a missing or broken install, not its config: Python's own message
        raise
    except Exception as exc:  # Dask raises whatever its config parsing hits (AttributeError, ValueError)
        if "--debug" in argv:
            raise
        sys.stderr.write(f"error: {config_failure(exc, os.environ)}\n")
        raise SystemExit(2) from None


def config_failure(exc: BaseException, environ: os._Environ[str] | dict[str, str]) -> str:
    """The message for ``exc`` raised while Dask loaded its config from ``environ``: the malformed
    file when Dask names it, else the ``DASK_*`` variables set (names only: a value may be a
    secret, such as a scheduler address with a token) and the config folders, and what to do."""
    found = re.search(r"config file at '([^']*)' is malformed", str(exc))
    if found:
        return (
            f"the Dask config file {found.group(1)} is not valid YAML: fix it or move it out of its "
            "folder, then run the command again (--debug shows Dask's error)"
        )
    names = sorted(name for name in environ if name.startswith("DASK_") and name != "DASK_CONFIG")
    variables = f"the environment variable{'s' * (len(names) > 1)} {', '.join(names)} and " if names else ""
    user = f"{environ['DASK_CONFIG']} (DASK_CONFIG)" if environ.get("DASK_CONFIG") else USER_FOLDER
    return (
        f"Dask could not load its config ({type(exc).__name__}: {exc}): a value is not of the shape "
        f"Dask expects (a plain value where Dask has a section); check {variables}the YAML files in "
        f"{user} and {SYSTEM_FOLDER}: unset or fix the value, then run the command again (--debug "
        "shows Dask's error)"
    )
