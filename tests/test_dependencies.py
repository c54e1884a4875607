"""Every third-party module dpriv imports is a declared runtime dependency (pyproject.toml).

A module only the test extra installs passes the suite but breaks the README's first command
on a fresh machine (scipy did: `dpriv demo` failed with ModuleNotFoundError)."""

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: import name -> distribution name, where they differ
DISTRIBUTION = {"distributed": "dask", "yaml": "pyyaml", "dask_jobqueue": "dask-jobqueue"}
#: imported only inside a notebook, where IPython is the kernel itself (dpriv/report/jupyter.py)
ENVIRONMENT = {"IPython"}


def _declared() -> set[str]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {re.match(r"[A-Za-z0-9_.-]+", d).group(0).lower() for d in deps}


def _imports() -> dict[str, set[str]]:
    """Top-level third-party modules imported anywhere in dpriv/ -> the files importing them."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / "dpriv").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "dpriv":
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_imported_module_is_a_runtime_dependency():
    declared = _declared()
    imports = _imports()
    assert {"numpy", "pandas", "dask", "scipy"} <= set(imports)  # the scan sees the package
    missing = {
        mod: sorted(files)
        for mod, files in imports.items()
        if mod not in ENVIRONMENT and DISTRIBUTION.get(mod, mod).lower() not in declared
    }
    assert not missing, f"imported by dpriv but not in [project] dependencies: {missing}"
