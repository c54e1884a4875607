"""Under NUMBA_CACHE_DIR the compiled kernels serve any checkout of the same sources
(dpriv.kernel_cache): a copy of the package elsewhere loads them; a changed kernel module
compiles them again."""

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core import config

from dpriv.hilbert.curve import _hilbert_kernel
from dpriv.kernel_cache import PACKAGE, CheckoutFreeLocator, kernel_sources_digest
from dpriv.numba_cache import KERNEL_MODULES

#: In a subprocess: how many dpriv kernels numba compiles (not loads) for one Hilbert index.
COUNT_COMPILES = """
import numpy as np
from numba.core import event
import dpriv
from dpriv.hilbert.curve import hilbert_index
from dpriv.numba_cache import COMPILE_EVENT, CompileListener
assert dpriv.__file__.startswith({root!r}), dpriv.__file__
found = []
with event.install_listener(COMPILE_EVENT, CompileListener(found.append)):
    assert hilbert_index(np.arange(12).reshape(6, 2), 4).tolist() == [3, 9, 33, 43, 129, 139]
print(len(found))
"""


def test_the_locator_serves_dpriv_modules_under_numba_cache_dir_only(monkeypatch, tmp_path):
    py_file = _hilbert_kernel.py_func.__code__.co_filename
    monkeypatch.setattr(config, "CACHE_DIR", "")
    assert CheckoutFreeLocator.from_function(_hilbert_kernel.py_func, py_file) is None
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path))
    locator = CheckoutFreeLocator.from_function(_hilbert_kernel.py_func, py_file)
    assert locator.get_cache_path() == os.path.join(tmp_path, "dpriv", "hilbert")
    assert locator.get_source_stamp() == kernel_sources_digest()
    assert locator.get_disambiguator() == str(_hilbert_kernel.py_func.__code__.co_firstlineno)
    assert CheckoutFreeLocator.from_function(_compiles, __file__) is None  # not a dpriv module


def test_the_digest_covers_every_module_with_a_kernel():
    # the stamp hashes the modules holding "njit": each module defining cached kernels must
    # (a kernel made another way would keep a stale stamp when its module changes)
    for name in KERNEL_MODULES:
        module = importlib.import_module(name)
        assert b"njit" in Path(module.__file__).read_bytes(), name
    assert len(kernel_sources_digest()) == 64


def _compiles(root: Path, cache: Path) -> int:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", COUNT_COMPILES.format(root=str(root))],
        env=env, capture_output=True, text=True, check=True, cwd=root,
    )  # fmt: skip
    return int(out.stdout.split()[-1])


@pytest.mark.slow
def test_a_copy_of_the_package_elsewhere_loads_the_kernels_a_changed_one_compiles(tmp_path):
    cache = tmp_path / "numba"
    first, second = tmp_path / "a" / "clone", tmp_path / "b" / "other"
    for root in (first, second):  # copies with fresh modification times, like two clones
        shutil.copytree(PACKAGE, root / "dpriv", ignore=shutil.ignore_patterns("__pycache__"))
    assert _compiles(first, cache) == 1  # the Hilbert kernel, compiled and written
    assert _compiles(second, cache) == 0  # another path, the same sources: loaded
    divergence = second / "dpriv" / "divergence.py"
    divergence.write_text(divergence.read_text() + "\n# changed\n")  # not the Hilbert kernel's module
    assert _compiles(second, cache) == 1
