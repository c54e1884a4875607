"""The notebooks of ``notebooks/`` run top to bottom at the small size (nbclient).

Each notebook reads ``DPRIV_NOTEBOOK_SIZE`` in its ``parameters`` cell; ``small`` keeps it to a
few seconds of work. The kernel is ``python3`` of the interpreter running the tests (ipykernel
must be installed in it: the ``test`` extra brings it), started in a temporary folder where the
notebook writes its files. Any cell error fails the test.
"""

from __future__ import annotations

import html
import json
import re
import time
from pathlib import Path

import pandas as pd
import pytest

nbformat = pytest.importorskip("nbformat", reason="nbformat is in the test extra: pip install -e '.[test]'")
nbclient = pytest.importorskip("nbclient", reason="nbclient is in the test extra: pip install -e '.[test]'")
pytest.importorskip("ipykernel", reason="ipykernel is in the test extra: pip install -e '.[test]'")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def _outputs(nb) -> str:
    """All text output of an executed notebook (stdout and text/plain, text/html results)."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if "text" in out:
                parts.append(out["text"])
            data = out.get("data", {})
            parts += [data[k] for k in ("text/plain", "text/html") if k in data]
    return "\n".join(parts)


def _images(nb) -> int:
    return sum("image/png" in out.get("data", {}) for c in nb.cells for out in c.get("outputs", []))


@pytest.fixture
def run(tmp_path, monkeypatch):
    """Execute a notebook at the small size in ``tmp_path``; returns (notebook, seconds)."""
    monkeypatch.setenv("DPRIV_NOTEBOOK_SIZE", "small")
    monkeypatch.delenv("DPRIV_NOTEBOOK_WORKDIR", raising=False)
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / ".ipython"))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")

    def execute(name: str):
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        client = nbclient.NotebookClient(
            nb,
            kernel_name="python3",
            timeout=600,
            resources={"metadata": {"path": str(tmp_path)}},
        )
        t0 = time.perf_counter()
        client.execute()  # raises CellExecutionError, naming the cell, on any error
        seconds = time.perf_counter() - t0
        print(f"{name}: {seconds:.1f} s")
        return nb, seconds

    return execute


def test_notebooks_have_a_parameters_cell_and_no_outputs():
    names = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert names == ["paper_reproduction.ipynb", "quickstart.ipynb", "real_cohort.ipynb"]
    for name in names:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        nbformat.validate(nb)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1 and "DPRIV_NOTEBOOK_SIZE" in tagged[0].source, name
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), f"{name} has outputs"


def _html(nb) -> list[str]:
    """The text/html outputs of an executed notebook (display updates applied), in order."""
    return [
        out["data"]["text/html"]
        for c in nb.cells
        for out in c.get("outputs", [])
        if "text/html" in out.get("data", {})
    ]


def _srcdoc(outputs: list[str]) -> str:
    """The page inlined by ``show_report`` (the unescaped srcdoc of its one iframe)."""
    frames = [re.search(r'<iframe srcdoc="([^"]*)"', h) for h in outputs]
    frames = [f for f in frames if f]
    assert len(frames) == 1
    return html.unescape(frames[0].group(1))


@pytest.mark.slow
def test_quickstart(run, tmp_path):
    nb, _ = run("quickstart.ipynb")
    text = _outputs(nb)
    assert "dashboard: http" in text
    assert "3 releases in" in text
    assert "KPR of microdata drawn from release 1:" in text
    assert _images(nb) >= 3  # privacy, utility, adversary gain
    out = tmp_path / "quickstart-out"
    assert sorted(p.name for p in (out / "ledger" / "attack").iterdir()) == [
        ".dpriv-outputs",
        "gain_dk.csv",
        "gain_snapshot.csv",
        "kpr.csv",
    ]
    # saved with save_gain: a later dpriv attack may replace them (a hand-written CSV it refuses)
    from dpriv.output_record import written_by

    assert written_by(out / "ledger" / "attack" / "gain_dk.csv") == "attack"
    page = (out / "report.html").read_text()
    assert "KPR (%)" in page and "Adversary gain" in page
    outputs = _html(nb)
    # the dashboard as a clickable link (dpriv's and the Client's own repr)
    link = re.search(r"dashboard: (http\S+/status)", text).group(1)
    assert sum(f'<a href="{link}" target="_blank">' in h for h in outputs) >= 2
    # the progress bar, updated in place to 3 of 3, one row per release with its step seconds
    bars = [h for h in outputs if "<progress" in h]
    assert len(bars) == 1 and '<progress value="3" max="3"' in bars[0]
    assert re.findall(r'<tr data-release="(\d)">', bars[0]) == ["1", "2", "3"]
    for i in (1, 2, 3):
        m = json.loads((out / "ledger" / "releases" / str(i) / "metrics.json").read_text())
        row = re.search(rf'<tr data-release="{i}">(.*?)</tr>', bars[0]).group(1)
        assert f"<td>{m['n_groups']}</td><td>{100 * m['suppression_rate']:.2f} %</td>" in row
        shown = dict(re.findall(r'<span title="([a-z_]+): ([0-9.]+) s"', row))  # one segment per step
        assert len(shown) >= 8 and set(shown) <= set(m["seconds"])
        for step, sec in shown.items():
            assert float(sec) == pytest.approx(m["seconds"][step], abs=0.006)
        slowest = re.search(r"slowest: ([a-z_]+)", row).group(1)
        assert float(shown[slowest]) == max(float(v) for v in shown.values())
    # the report inline: exactly the written page, with its KPR reference line (history given)
    inline = _srcdoc(outputs)
    assert inline == page
    assert 'id="kpr-reference"' in page and "<h1>exam_result by age, gender, weight" in page


@pytest.mark.slow
def test_paper_reproduction(run, tmp_path):
    nb, _ = run("paper_reproduction.ipynb")
    out = tmp_path / "paper-out"
    for name in ("runs.csv", "gains.csv", "frontier.csv", "fig3_semiperimeter.png", "frontier.png"):
        assert (out / name).is_file(), name
    assert "max_gain_dk" in _outputs(nb)
    assert _images(nb) >= 6  # fig. 3, one gain figure per method (4), frontier


@pytest.mark.slow
@pytest.mark.shared_data
def test_real_cohort(run, shared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("DPRIV_SHARED_DATA", str(shared_data))
    nb, _ = run("real_cohort.ipynb")
    text = _outputs(nb)
    assert "SKIPPED" not in text
    assert "3 yearly views released" in text
    out = tmp_path / "pbc-out"
    page = (out / "report.html").read_text()
    assert _srcdoc(_html(nb)) == page and "<h1>stage by age, sex: JS-reduce release" in page
    # sex is released as nodes of the hierarchy written by the notebook, not as value sets
    assert (out / "data" / "sex_hierarchy.csv").read_text() == "female;*\nmale;*\n"
    recorded = json.loads((out / "ledger" / "policy.json").read_text())
    assert set(recorded["hierarchies"]) == {"sex"} and set(recorded["hierarchy_sha256"]) == {"sex"}
    assert "<th>hierarchy of sex</th><td>sex_hierarchy.csv (released as a group" in page
    views = pd.concat(
        [pd.read_parquet(out / "ledger" / "releases" / str(i) / "view.parquet") for i in (1, 2, 3)]
    )
    counts = views["sex"].value_counts()
    assert set(counts.index) <= {"female", "male", "*"} and "*" in counts.index
    shown = re.search(r"sex released as hierarchy nodes: (.*)", text).group(1)
    assert shown == ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))
    # every released tuple is there, one per kept patient (the notebook verified each view)
    n_released = [
        json.loads((out / "ledger" / "releases" / str(i) / "metrics.json").read_text())["n_released"]
        for i in (1, 2, 3)
    ]
    assert len(views) == sum(n_released) > 0


@pytest.mark.slow
def test_real_cohort_skips_without_data(run, tmp_path, monkeypatch):
    monkeypatch.setenv("DPRIV_SHARED_DATA", str(tmp_path / "absent"))
    nb, _ = run("real_cohort.ipynb")
    assert "SKIPPED" in _outputs(nb)
    assert not (tmp_path / "pbc-out").exists()
