"""The notebooks of ``notebooks/`` run top to bottom at the small size (nbclient).

Each notebook reads ``DPRIV_NOTEBOOK_SIZE`` in its ``parameters`` cell; ``small`` keeps it to a
few seconds of work. The kernel is ``python3`` of the interpreter running the tests (ipykernel
must be installed in it: the ``test`` extra brings it), started in a temporary folder where the
notebook writes its files. Any cell error fails the test.
"""

from __future__ import annotations

import time
from pathlib import Path

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


def test_quickstart(run, tmp_path):
    nb, _ = run("quickstart.ipynb")
    text = _outputs(nb)
    assert "dashboard: http" in text
    assert "3 releases in" in text
    assert "KPR of microdata drawn from release 1:" in text
    assert _images(nb) >= 3  # privacy, utility, adversary gain
    out = tmp_path / "quickstart-out"
    assert sorted(p.name for p in (out / "ledger" / "attack").iterdir()) == [
        "gain_dk.csv",
        "gain_snapshot.csv",
        "kpr.csv",
    ]
    page = (out / "report.html").read_text()
    assert "KPR (%)" in page and "Adversary gain" in page


def test_paper_reproduction(run, tmp_path):
    nb, _ = run("paper_reproduction.ipynb")
    out = tmp_path / "paper-out"
    for name in ("runs.csv", "gains.csv", "frontier.csv", "fig3_semiperimeter.png", "frontier.png"):
        assert (out / name).is_file(), name
    assert "max_gain_dk" in _outputs(nb)
    assert _images(nb) >= 6  # fig. 3, one gain figure per method (4), frontier


@pytest.mark.shared_data
def test_real_cohort(run, shared_data, tmp_path, monkeypatch):
    monkeypatch.setenv("DPRIV_SHARED_DATA", str(shared_data))
    nb, _ = run("real_cohort.ipynb")
    text = _outputs(nb)
    assert "SKIPPED" not in text
    assert "3 yearly views released" in text
    assert (tmp_path / "pbc-out" / "report.html").is_file()


def test_real_cohort_skips_without_data(run, tmp_path, monkeypatch):
    monkeypatch.setenv("DPRIV_SHARED_DATA", str(tmp_path / "absent"))
    nb, _ = run("real_cohort.ipynb")
    assert "SKIPPED" in _outputs(nb)
    assert not (tmp_path / "pbc-out").exists()
