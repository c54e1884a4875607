"""Import loops of the package (where code lives, sessions 46 and 47): two modules that import each
other, at module level, inside a function or under ``TYPE_CHECKING`` (a loop hidden from Python is
still a loop), share a piece that belongs in a third. None is left, and a new one fails here.

Each was broken by moving a concept to where it belongs: the results folder
(:func:`dpriv.attack_files.results_folder`, ``report.coverage`` <-> ``report.gains``); the
top-down split (:mod:`dpriv.anonymity.topdown_split`); :class:`dpriv.errors.Loss`, what the
cluster-loss errors carry (``errors`` <-> ``cluster_loss``); :class:`dpriv.gate_record.GateCheck`,
the result its record words (``gate`` <-> ``gate_record``); the exit values' check of a sensitive
domain about to be inferred, in :mod:`dpriv.policy_values` (``inputs`` -> ``input_checks`` ->
``part_footers`` -> ``inputs``); the scheduler probe in :mod:`dpriv.scheduler_address` and the
history's count in :mod:`dpriv.history_size` (both <-> ``cluster``); click's pieces in
:mod:`dpriv.cli.click_parts` (``cli.repeats`` <-> ``path_options``/``usage``); the release run
``demo`` shares in :mod:`dpriv.cli.release_run` (``commands`` <-> ``demo``); and the policy's:
the fingerprint in :meth:`dpriv.policy.ReleasePolicy.fingerprint` (was ``ledger_manifest``), the
hierarchies put to use in :mod:`dpriv.policy_hierarchies`, a policy as an entry point is given it
in :mod:`dpriv.policy_given`, and the checks the model runs on itself typed by what they read
(:class:`dpriv.policy_keys.PolicyFields`)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def import_graph(root: Path, package: str = "dpriv") -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its file (``from a.b import c``
    counts ``a.b.c`` when that is a module, else ``a.b``)."""
    files = {}
    for path in (root / package).rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def module(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in files.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps |= {module(a.name) for a in node.names if a.name.split(".")[0] == package}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] == package:
                    deps |= {module(f"{node.module}.{a.name}") for a in node.names}
        graph[name] = deps - {None, name}
    return graph


def loops(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def test_the_check_finds_a_loop_hidden_in_a_function_and_under_type_checking(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from pkg.c import g\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n")
    (pkg / "d.py").write_text("import pkg.a\nfrom pkg import c\n")  # into the loop, not part of it
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.d"] == {"pkg.a", "pkg.c"}
    assert loops(graph) == [{"pkg.a", "pkg.sub.b", "pkg.c"}]


def test_the_package_has_no_import_loop():
    assert loops(import_graph(ROOT)) == []
