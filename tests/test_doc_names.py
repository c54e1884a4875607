"""Every backquoted ``dpriv.x.y`` name and repository path in README.md and docs/ exists, and
every name the scripts of benchmarks/ and docs/ import from dpriv: a function renamed or moved
(``topdown._prefix_sums`` -> ``topdown_sums.prefix_sums``, ``experiment._name`` ->
``experiment_files.setting_name``) leaves no stale name behind."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

_SPAN = re.compile(r"`+([^`]+?)`+")
_DOTTED = re.compile(r"(?<![\w./-])(dpriv(?:\.\w+)+)")
_PATH = re.compile(r"(?<![\w./-])((?:dpriv|tests|benchmarks|docs|deploy|notebooks)/[\w/.-]*\w)")


def _resolves(name: str) -> bool:
    """Whether ``name`` (``dpriv.module.attribute...``) is a module or an attribute of one."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def unresolved(text: str) -> list[str]:
    """The backquoted dotted names and repository paths of ``text`` that do not exist."""
    bad = []
    for span in _SPAN.findall(text):
        bad += [n for n in _DOTTED.findall(span) if not _resolves(n)]
        bad += [p for p in _PATH.findall(span) if not (ROOT / p).exists()]
    return bad


def test_the_checker_finds_stale_names_and_passes_live_ones():
    text = (
        "sums (`dpriv.anonymity.topdown._prefix_sums`, `dpriv.anonymity.topdown_sums.prefix_sums`), "
        "codes `dpriv.policy.codes` or `dpriv.domain_codes.codes(values, domain)`; files "
        "`dpriv/no_such_module.py`, `dpriv/domain_codes.py`, `tests/test_doc_names.py`; dpriv.x unquoted"
    )
    assert unresolved(text) == [
        "dpriv.anonymity.topdown._prefix_sums",
        "dpriv.policy.codes",
        "dpriv/no_such_module.py",
    ]


def test_every_name_and_path_in_the_docs_exists():
    found = {str(doc.relative_to(ROOT)): unresolved(doc.read_text(encoding="utf-8")) for doc in DOCS}
    assert {doc: bad for doc, bad in found.items() if bad} == {}
    assert len(DOCS) >= 8  # README.md and docs/*.md were read


def missing_imports(source: str) -> list[str]:
    """The ``from dpriv... import name`` of the Python ``source`` whose name does not exist."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("dpriv"):
            bad += [f"{node.module}.{a.name}" for a in node.names if not _resolves(f"{node.module}.{a.name}")]
    return bad


def test_the_scripts_import_only_names_that_exist():
    assert missing_imports("from dpriv.experiment import _name, run_experiment\nimport os") == [
        "dpriv.experiment._name"
    ]
    scripts = sorted((ROOT / "benchmarks").rglob("*.py")) + sorted((ROOT / "docs").rglob("*.py"))
    found = {str(s.relative_to(ROOT)): missing_imports(s.read_text(encoding="utf-8")) for s in scripts}
    assert {s: bad for s, bad in found.items() if bad} == {}
    assert len(scripts) >= 10
