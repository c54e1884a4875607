"""Every module of the package imports, and every ``from dpriv.x import name`` in the package, the
tests and the benchmarks names something that ``dpriv.x`` has (a moved function leaves no caller
behind: ruff does not see it, and a lazy import inside a function fails only when it runs)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
from pathlib import Path

import pytest

import dpriv

ROOT = Path(__file__).resolve().parent.parent


def _imports_of_dpriv(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of each ``from dpriv... import name`` in ``path``, at any depth."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] == "dpriv"
        ):
            found += [(node.lineno, node.module, a.name) for a in node.names if a.name != "*"]
    return found


@pytest.mark.slow  # ~4 s alone: every module imported
def test_every_module_of_the_package_imports():
    names = [m.name for m in pkgutil.walk_packages(dpriv.__path__, "dpriv.")]
    assert "dpriv.release_stops" in names and "dpriv.anonymity.generalize" in names  # the walk reached down
    failed = {}
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - every failure listed, not the first
            failed[name] = f"{type(exc).__name__}: {exc}"
    assert not failed, failed


@pytest.mark.slow  # ~4 s alone: ~450 files parsed
def test_every_from_dpriv_import_resolves():
    files = [p for d in ("dpriv", "tests", "benchmarks") for p in sorted((ROOT / d).rglob("*.py"))]
    unresolved = []
    for path in files:
        for line, module, name in _imports_of_dpriv(path):
            try:
                mod = importlib.import_module(module)
            except ModuleNotFoundError:
                unresolved.append(f"{path.relative_to(ROOT)}:{line}: no module {module}")
                continue
            if not hasattr(mod, name) and importlib.util.find_spec(f"{module}.{name}") is None:
                unresolved.append(f"{path.relative_to(ROOT)}:{line}: {module} has no {name}")
    assert not unresolved, "\n".join(unresolved)
    assert len(files) > 400  # the three folders were read
