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
    assert (tmp_path / "pywork" / "ledger" / "manifest.json").exists()
    work = tmp_path / "pywork"
    before = {p: p.read_bytes() for p in sorted(work.rglob("*")) if p.is_file()}
    # the comment says re-running is a no-op: a second run succeeds, prints the same, and
    # leaves the generated files and the ledger's releases as they were
    exec(compile(block, "README.md", "exec"), {})
    assert capsys.readouterr().out == out
    after = {p: p.read_bytes() for p in sorted(work.rglob("*")) if p.is_file()}
    assert after == before
    # the Python recipe of `dpriv verify --ledger --view --history`, on that ledger and history
    recipe = re.search(r"--history H` checks, in Python.*?```python\n(.*?)```", text, re.S).group(1)
    names: dict = {}
    exec(compile(block, "README.md", "exec"), names)
    capsys.readouterr()
    exec(compile(recipe, "README.md", "exec"), names)
    assert capsys.readouterr().out == "True []\n"
    assert names["report"].n_rows == names["led"].read_metrics(3)["n_released"]


def _synopsis(command: str) -> str:
    """The README's synopsis of ``dpriv <command>`` (its line and the indented ones after it),
    comments left out."""
    block = re.search(r"## Commands\n```\n(.*?)```", README.read_text(), re.S).group(1)
    lines, inside = [], False
    for line in block.splitlines():
        if line.startswith("dpriv "):
            inside = line.startswith(f"dpriv {command} ")
        if inside:
            lines.append(line.split("#")[0])
    return "\n".join(lines)


@pytest.mark.parametrize("command", ["release", "experiment paper", "report", "demo", "attack", "kpr"])
def test_the_synopsis_lists_every_option_and_brackets_the_optional_ones(command):
    """The drill: release lacked --retro-max-gain, --allow-repeated-view and --npartitions,
    experiment paper --seed, and report showed ``--out report.html|.htm`` as if required."""
    import typer.main

    from dpriv.cli import app

    cmd = typer.main.get_command(app)
    for word in command.split():
        cmd = cmd.commands[word]
    text = _synopsis(command)
    assert text, command
    for param in cmd.params:
        name = param.opts[0]
        if not name.startswith("--") or name == "--debug":
            continue
        found = re.search(re.escape(name) + r"(?![\w-])", text)
        assert found, f"dpriv {command}: the README's synopsis lacks {name}"
        before = text[: found.start()]
        bracketed = before.count("[") > before.count("]")
        assert bracketed == (not param.required), f"dpriv {command} {name}: required {param.required}"
