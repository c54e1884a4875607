"""The README's Python example runs as printed (in a temporary folder)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow
def test_python_example_runs(tmp_path, monkeypatch, capsys):
    text = README.read_text()
    block = re.search(r"## Python\n```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "adversary_gain" in out
    assert (tmp_path / "work" / "ledger" / "manifest.json").exists()
    work = tmp_path / "work"
    before = {p: p.read_bytes() for p in sorted(work.rglob("*")) if p.is_file()}
    # the comment says re-running is a no-op: a second run succeeds, prints the same, and
    # leaves the generated files and the ledger's releases as they were
    exec(compile(block, "README.md", "exec"), {})
    assert capsys.readouterr().out == out
    after = {p: p.read_bytes() for p in sorted(work.rglob("*")) if p.is_file()}
    assert after == before
