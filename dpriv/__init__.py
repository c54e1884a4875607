"""dpriv: privacy-preserving sequential data release (JS-reduce) on Dask."""

from dpriv.errors import DprivError, InputError, LedgerError, PolicyError, VerificationError

__version__ = "0.1.0"

__all__ = ["DprivError", "InputError", "LedgerError", "PolicyError", "VerificationError"]
