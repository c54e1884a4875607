"""All dpriv exceptions. The CLI maps :class:`DprivError` subclasses to exit status 2."""


class DprivError(Exception):
    """Base class of the errors a user can fix (bad input, bad policy)."""


class InputError(DprivError, ValueError):
    """The data do not match the policy: missing column, NaN, value outside a domain, ..."""


class PolicyError(DprivError, ValueError):
    """The policy is invalid, or cannot be met by the data (e.g. k larger than the view)."""


class KnowledgeFileError(PolicyError):
    """A knowledge table file the policy names does not exist (a relative path read from
    another folder than the policy's: the CLI then advises ``--policy FILE``)."""


class LedgerError(DprivError, RuntimeError):
    """The release ledger is missing, corrupt, or refuses the operation asked for."""


class VerificationError(DprivError, RuntimeError):
    """A released view failed the independent verification; nothing was written."""


class ClusterError(RuntimeError):
    """The Dask cluster cannot run the work (no worker): not bad input, not dpriv's bug; the
    CLI ends with exit 3 as for a lost worker (dpriv/cli/failures.py)."""
