"""dpriv: privacy-preserving sequential data release (JS-reduce) on Dask."""

from dpriv import kernel_cache as _kernel_cache
from dpriv.errors import DprivError, InputError, LedgerError, PolicyError, VerificationError

# before any kernel is defined: under NUMBA_CACHE_DIR the compiled kernels serve every checkout
_kernel_cache.install()

__version__ = "0.1.0"

__all__ = ["DprivError", "InputError", "LedgerError", "PolicyError", "VerificationError"]
