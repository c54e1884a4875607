"""The HTML release report (``dpriv.report``, ``dpriv report``): content, safety, rendering.

One small ledger (3 views of 300 exams, t = 0.5, j = 0.8) is released once per module; its
respondent ids are remapped to distinctive 10-digit numbers so that a leak would be seen.
The rendering test opens the page in headless Chromium and reads the screenshot.
"""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.attack import attack
from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.report import gain_curves, release_frame, render_report, write_report

CHROMIUM = Path("/usr/bin/chromium")
HEADINGS = ["Policy", "Releases", "Privacy", "Utility", "Adversary gain"]
ID_OFFSET = 7_300_000_000


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(ledger, history, policy, gains, report path, report text)."""
    root = tmp_path_factory.mktemp("report")
    mh = medical_history(n_views=3, view_size=300, seed=0)
    history = mh.history.copy()
    history["respondent_id"] = history["respondent_id"].astype("int64") * 7919 + ID_OFFSET
    policy = ReleasePolicy.from_toml(write_history(root / "data", mh), t=0.5, j=0.8, max_suppression=1.0)
    led = release_history(history, policy, root / "ledger")
    gains = {"dk": attack(led, history, policy, "dk", deductions=False)}
    (root / "ledger" / "attack").mkdir()
    snapshot = attack(led, history, policy, "snapshot", deductions=False)
    snapshot.to_csv(root / "ledger" / "attack" / "gain_snapshot.csv", index=False)
    out = write_report(led, root / "site" / "report.html", gains=gains)
    return led, history, policy, gains, out, out.read_text(encoding="utf-8")


class _Table(HTMLParser):
    """Rows of ``<table id=...>`` as lists of (text, data-value) cells, with the header keys."""

    def __init__(self, table_id: str) -> None:
        super().__init__()
        self.table_id, self.inside, self.keys, self.rows = table_id, False, [], []
        self._cell: list | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("id") == self.table_id:
            self.inside = True
        elif self.inside and tag == "th" and "data-key" in a:
            self.keys.append(a["data-key"])
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag == "td":
            self._cell = ["", a.get("data-value")]

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False
        elif tag == "td" and self._cell is not None:
            self.rows[-1].append(tuple(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[0] += data


def _table(page: str, table_id: str) -> tuple[list[str], list[list[tuple[str, str]]]]:
    parser = _Table(table_id)
    parser.feed(page)
    return parser.keys, [r for r in parser.rows if r]


def _text_only(page: str) -> str:
    """The page without its embedded images."""
    return re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)


def test_headings_in_order(built):
    page = built[5]
    found = re.findall(r"<h2[^>]*>(.*?)</h2>", page)
    assert found == HEADINGS
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")


def test_policy_states_t_ground_and_j_unit(built):
    page = built[5]
    assert "Earth Mover&#x27;s Distance with the equal ground distance" in page
    assert "0.8 bits" in page and ">0.5 -- " in page
    assert "age, gender, weight" in page and "exam_result (19 values)" in page


def test_release_table_equals_metrics_json(built):
    led, page = built[0], built[5]
    keys, rows = _table(page, "releases")
    assert keys[0] == "release" and "kpr" in keys  # every release's metrics.json has its KPR
    assert len(rows) == len(led.committed()) == 3
    for row in rows:
        cells = dict(zip(keys, row, strict=True))
        m = json.loads((led.root / "releases" / cells["release"][1] / "metrics.json").read_text())
        for key in ("n_groups", "n_released", "n_suppressed", "k_achieved", "l_achieved"):
            assert cells[key][0] == str(m[key]) and int(cells[key][1]) == m[key], key
        assert cells["kpr"][0] == f"{m['kpr']:.4f}"
        for key in ("suppression_rate", "t_achieved", "j_achieved", "average_semiperimeter", "gcp"):
            assert float(cells[key][1]) == m[key], key  # exact value kept in data-value
            assert cells[key][0] == f"{m[key]:.4f}", key  # shown with 4 decimals
        assert float(cells["seconds"][1]) == pytest.approx(sum(m["seconds"].values()))


def test_images_are_embedded_and_nothing_external(built):
    page = built[5]
    srcs = re.findall(r'<img [^>]*src="([^"]+)"', page)
    # privacy, utility, adversary gain; tail risk (attack/gain_snapshot.csv has its columns)
    assert len(srcs) == 4
    for src in srcs:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    text = _text_only(page).lower()
    for bad in ("<script", "<link", "<iframe", "url(", "http://", "https://", 'src="/', "@import"):
        assert bad not in text, bad


def test_no_absolute_paths_or_respondent_ids(built):
    led, history, _, _, out, page = built
    text = _text_only(page)
    for path in (led.root, led.root.resolve(), out.parent, Path.home(), Path.cwd()):
        assert str(path) not in text
    assert not re.search(r"(?<![\w<])/(tmp|home|work|root|usr|var|private|Users)/", text)
    assert "file:" not in text
    ids = set(history["respondent_id"].astype(str))
    assert not ids & set(re.findall(r"\d{6,}", text))
    assert "state.parquet" not in text


def test_gain_files_and_passed_gains(built):
    led, _, _, gains, _, page = built
    curves = gain_curves(led, gains)
    assert list(curves) == ["dk", "snapshot"]  # passed + attack/gain_snapshot.csv
    keys, rows = _table(page, "gains")
    names = re.findall(r'<table id="gains">.*?</table>', page, re.S)[0]
    assert "<th>dk</th>" in names and "<th>snapshot</th>" in names
    worst = gains["dk"].loc[gains["dk"]["adversary_gain"].idxmax()]
    assert float(rows[0][0][1]) == worst["adversary_gain"] and int(rows[0][1][1]) == worst["release"]


def test_text_from_data_is_escaped(built):
    led, gains = built[0], built[3]
    evil = '<script>alert("x")</script>&'
    page = render_report(led, gains={evil: gains["dk"]})
    assert evil not in page and "<script" not in page
    assert html.escape(evil) in page


def test_kpr_column_from_attack_folder(built, tmp_path):
    led = built[0]
    copy = tmp_path / "ledger"
    shutil.copytree(led.root, copy, ignore=shutil.ignore_patterns("state"))
    for path in copy.glob("releases/*/metrics.json"):  # a ledger whose metrics carry no KPR
        path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "kpr"}))
    pd.DataFrame({"release": [1], "kpr": [87.5]}).to_csv(copy / "attack" / "kpr.csv", index=False)
    frame = release_frame(copy)
    assert frame["kpr"].iloc[0] == 87.5 and np.isnan(frame["kpr"].iloc[1])
    keys, rows = _table(render_report(copy), "releases")
    assert "kpr" in keys and rows[0][keys.index("kpr")][0] == "87.5000"
    assert rows[1][keys.index("kpr")][0] == "-"


def test_bad_gain_file_is_refused_by_name(built, tmp_path):
    copy = tmp_path / "ledger"
    shutil.copytree(built[0].root, copy, ignore=shutil.ignore_patterns("state"))
    (copy / "attack" / "gain_ie.csv").write_text("release,gain\n1,0.1\n")
    with pytest.raises(InputError, match=r"attack/gain_ie\.csv lack column\(s\) \['adversary_gain'\]"):
        write_report(copy, tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def test_cli_report(built, tmp_path):
    runner = CliRunner()
    out = tmp_path / "cli" / "report.html"
    res = runner.invoke(app, ["report", str(built[0].root), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "3 release(s)" in res.output and "adversary gains: snapshot" in res.output
    page = out.read_text()
    assert re.findall(r"<h2[^>]*>(.*?)</h2>", page) == HEADINGS
    res = runner.invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "x.html")])
    assert res.exit_code == 2 and "not a ledger" in res.output
    assert not (tmp_path / "x.html").exists()


def test_renders_in_headless_chromium(built, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent: install it (apt-get install -y chromium), as .ci/run does")
    out, shot = built[4], tmp_path / "report.png"
    cmd = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={shot}",
        "--window-size=1200,2400",
        out.resolve().as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert shot.is_file(), f"chromium wrote no screenshot (exit {proc.returncode}): {proc.stderr[-2000:]}"
    import matplotlib.image

    img = matplotlib.image.imread(shot)[..., :3].astype(float)  # floats in [0, 1]
    assert img.shape[:2] == (2400, 1200)
    assert img.std() > 0.05  # not blank
    non_white = (img.min(axis=2) < 0.9).mean()
    assert non_white > 0.03
    # Plot regions: saturated (coloured) pixels. Without its images the same page has ~4,500
    # of them (blue headings) on ~90 rows; with the three plots ~34,000 on ~490 rows.
    colored = (img.max(axis=2) - img.min(axis=2)) > 0.3
    assert colored.sum() > 15_000
    assert (colored.sum(axis=1) >= 5).sum() > 250
