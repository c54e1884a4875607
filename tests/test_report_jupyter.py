"""Jupyter helpers of the report (dpriv.report.jupyter): dashboard link, release progress, inline report."""

import html
import re

import pytest

pytest.importorskip(
    "IPython", reason="IPython comes with ipykernel, in the test extra: pip install -e '.[test]'"
)

from dpriv.report.jupyter import ReleaseProgress, dashboard, show_report  # noqa: E402


def test_release_progress_rows_and_step_bars_by_hand():
    progress = ReleaseProgress(total=4, display=False)
    assert '<progress value="0" max="4"' in progress.html() and "0 / 4 releases" in progress.html()
    progress(1, {"n_groups": 7, "suppression_rate": 0.0125, "seconds": {"keys": 1.0, "grouping": 3.0}})
    progress(2, {"n_groups": 5, "suppression_rate": 0.0, "seconds": 2.5})  # anonymize-style total
    page = progress.html()
    assert progress.done == 2 and '<progress value="2" max="4"' in page and "2 / 4 releases" in page
    row1 = re.search(r'<tr data-release="1">(.*?)</tr>', page).group(1)
    assert "<td>7</td><td>1.25 %</td><td>4.00</td>" in row1
    # widths are the step's share of 300 px: 1 s of 4 s -> 75 px, 3 s -> 225 px
    assert re.findall(r'title="(\w+): ([\d.]+) s"[^>]*width:([\d.]+)px', row1) == [
        ("keys", "1.00", "75.0"),
        ("grouping", "3.00", "225.0"),
    ]
    assert "slowest: grouping" in row1
    row2 = re.search(r'<tr data-release="2">(.*?)</tr>', page).group(1)
    assert "<td>5</td><td>0.00 %</td><td>2.50</td>" in row2 and "slowest: total" in row2


def test_show_report_inlines_the_page_exactly(tmp_path):
    page = "<!DOCTYPE html><html><body><h1>a \"b\" &amp; c</h1><p class='x'>&lt;</p></body></html>\n"
    path = tmp_path / "r.html"
    path.write_text(page, encoding="utf-8")
    out = show_report(path, height=300).data
    assert out.startswith('<div class="dpriv-report"><iframe srcdoc="') and "height:300px" in out
    assert html.unescape(re.search(r'srcdoc="([^"]*)"', out).group(1)) == page


def test_dashboard_link_is_clickable_and_escaped():
    class FakeClient:
        dashboard_link = "http://127.0.0.1:8787/status?a=1&b=2"

        def scheduler_info(self):
            return {"workers": {"w1": {}, "w2": {}}}

    out = dashboard(FakeClient()).data
    link = "http://127.0.0.1:8787/status?a=1&amp;b=2"
    assert f'<a href="{link}" target="_blank">{link}</a>' in out and "(2 workers)" in out
