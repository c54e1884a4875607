"""dpriv: privacy-preserving sequential data release (JS-reduce) on Dask."""

from dpriv.errors import DprivError, InputError, LedgerError, PolicyError, VerificationError

# before any kernel is defined: under NUMBA_CACHE_DIR the compiled kernels serve every checkout.
# It hooks numba's private locator list: where a numba release moves it, numba's own per-checkout
# cache applies (slower first runs, nothing else changes), never a failed import of dpriv.
try:
    from dpriv import kernel_cache as _kernel_cache

    _kernel_cache.install()
except (ImportError, AttributeError):  # pragma: no cover - depends on numba's internals
    pass

__version__ = "0.1.0"

__all__ = ["DprivError", "InputError", "LedgerError", "PolicyError", "VerificationError"]
