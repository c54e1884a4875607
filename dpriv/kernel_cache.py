"""Where numba caches dpriv's kernels when ``NUMBA_CACHE_DIR`` is set: one folder for every
checkout, valid while the kernels' sources are the same.

numba files a kernel's machine code under a hash of the absolute path of its source folder and
accepts it only while the source file's stamp is unchanged (its modification time and size in
numba 0.59, the oldest dpriv allows; a hash of its bytes in 0.68). A fresh clone, or the same
code at another path, therefore compiles every kernel again (CI clones afresh each time, into a
folder that moves). With
:class:`CheckoutFreeLocator` (installed by ``dpriv/__init__.py`` before any kernel is defined)
the kernels of the module ``dpriv/a/b.py`` go to ``$NUMBA_CACHE_DIR/dpriv/a`` whatever the
checkout's path, stamped with :func:`kernel_sources_digest`: a hash of every dpriv module that
mentions ``njit`` (each kernel's own module and the modules of the kernels and constants it
calls). Any change to one of them makes every dpriv kernel compile again, also where only a
kernel it calls changed, which numba's per-file stamp misses. numba still keys each compiled
signature on the function's bytecode, the CPU and numba's version. Without
``NUMBA_CACHE_DIR`` numba's own places apply (``__pycache__`` beside the sources, else
``~/.cache/numba``).

Source: numba's cache locators (``numba.core.caching._CacheLocator``, ``CacheImpl``: the
first locator class whose ``from_function`` returns one is used), numba 0.59-0.68;
https://numba.readthedocs.io/en/stable/developer/caching.html
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from numba.core import caching, config

#: The dpriv package folder (the kernels' modules are under it).
PACKAGE = Path(__file__).resolve().parent


@functools.cache
def kernel_sources_digest() -> str:
    """sha256 (hex) of the relative path and bytes of every ``dpriv/**/*.py`` holding ``njit``,
    in path order: the stamp of every cached kernel (read once per process)."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_bytes()
        if b"njit" in text:
            digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + text + b"\0")
    return digest.hexdigest()


class CheckoutFreeLocator(caching._CacheLocator):
    """numba cache locator of the kernels of dpriv's modules under ``NUMBA_CACHE_DIR``."""

    def __init__(self, py_func, py_file: str, folder: Path) -> None:
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(config.CACHE_DIR, "dpriv", *folder.parts)

    def get_cache_path(self) -> str:
        return self._cache_path

    def get_source_stamp(self) -> str:
        return kernel_sources_digest()

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file: str) -> CheckoutFreeLocator | None:
        """A locator for a function of a dpriv module when ``NUMBA_CACHE_DIR`` is set, else None
        (numba's next locator class decides)."""
        if not config.CACHE_DIR:
            return None
        try:
            folder = Path(py_file).resolve().parent.relative_to(PACKAGE)
        except ValueError:  # not one of dpriv's modules
            return None
        return cls(py_func, py_file, folder)


def install() -> None:
    """Put :class:`CheckoutFreeLocator` first among numba's locator classes (once)."""
    classes = caching.CacheImpl._locator_classes
    if CheckoutFreeLocator not in classes:
        classes.insert(0, CheckoutFreeLocator)
