"""The ``dpriv`` command (README.md "Commands"). Exit status: 0 ok, 2 bad input or a policy
that cannot be met (message on stderr, no traceback unless ``--debug``), 3 the Dask cluster
lost a worker or its scheduler (run again to resume), 130 Ctrl-C, 143 SIGTERM, 1 internal error.

* ``common``: the app, option types, the error-to-exit mapping, policy loading, the writer;
* ``failures``: a lost Dask worker or scheduler (exit 3) and Dask's logging of it;
* ``commands``: anonymize, release (``release_run``: its run, shared with ``demo``); ``demo``;
  ``kpr_command``: kpr; ``audit``: attack, report; ``verify``: dpriv verify; ``export``: dpriv
  export (the ARX / pyCANON interchange CSV);
* ``effective``: the effective policy and where each value came from (printed to stderr);
* ``generate``: generate medical|pbc, experiment paper.
"""

import sys

from dpriv.cli.commands import app  # importing it registers every command

__all__ = ["app", "main"]


def main() -> None:  # pragma: no cover
    sys.exit(app())
