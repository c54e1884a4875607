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
import warnings
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import forget_digests
from typer.testing import CliRunner

from dpriv.attack import attack
from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError
from dpriv.metrics.kpr import kpr
from dpriv.metrics.microdata import reference_kpr
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.report import (
    defender_tail,
    describe_knowledge,
    gain_curves,
    release_frame,
    render_report,
    verdicts,
    write_report,
)
from dpriv.report.explain import KNOWLEDGE_TEXT
from dpriv.report.plots import plot_gains

CHROMIUM = Path("/usr/bin/chromium")
HEADINGS = ["Policy", "Verdict", "Releases", "Privacy", "Utility", "KPR", "Adversary gain"]
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


@pytest.mark.slow
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
        for key in ("n_original", "n_groups", "n_released", "n_suppressed", "k_achieved", "l_achieved"):
            assert cells[key][0] == str(m[key]) and int(cells[key][1]) == m[key], key
        assert cells["kpr"][0] == f"{m['kpr']:.4f}"
        for key in ("t_achieved", "j_achieved", "average_semiperimeter", "gcp"):
            assert float(cells[key][1]) == m[key], key  # exact value kept in data-value
            assert cells[key][0] == f"{m[key]:.4f}", key  # shown with 4 decimals
        # suppression in the report's one unit: percent of the view's tuples
        assert float(cells["suppression_rate"][1]) == 100 * m["suppression_rate"]
        assert cells["suppression_rate"][0] == f"{100 * m['suppression_rate']:.2f} %"
        assert m["n_suppressed"] == round(m["suppression_rate"] * m["n_original"])
        assert float(cells["seconds"][1]) == pytest.approx(sum(m["seconds"].values()))


def test_images_are_embedded_and_nothing_external(built):
    page = built[5]
    srcs = re.findall(r'<img [^>]*src="([^"]+)"', page)
    # privacy, utility, KPR, adversary gain; tail risk (attack/gain_snapshot.csv has its columns)
    assert len(srcs) == 5
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


def test_the_gain_figure_draws_each_curve_s_histogram_level(built):
    led, _, _, gains, _, _ = built
    curves = gain_curves(led, gains)
    for name in ("dk", "snapshot"):  # passed in, and read from attack/gain_snapshot.csv
        assert curves[name]["histogram_gain"].notna().all()
    np.testing.assert_array_equal(curves["dk"]["histogram_gain"], gains["dk"]["histogram_gain"])
    fig = plot_gains(curves)  # dotted: dashed is the retrospective adversary's (tail-risk plot)
    dotted = {ln.get_label(): ln.get_ydata() for ln in fig.axes[0].lines if ln.get_linestyle() == ":"}
    assert sorted(dotted) == [
        "dk: histogram level (one QI-group)",
        "snapshot: histogram level (one QI-group)",
    ]
    np.testing.assert_array_equal(dotted["dk: histogram level (one QI-group)"], gains["dk"]["histogram_gain"])
    # a gain file without the column (an older attack) draws its curve alone
    old = {"dk": gains["dk"].drop(columns="histogram_gain")}
    assert "histogram_gain" not in gain_curves(led, old)["dk"]
    assert [line.get_linestyle() for line in plot_gains(old).axes[0].lines] == ["-", "-"]  # + the 0 line


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
    forget_digests(copy, "metrics_sha256")  # (an older ledger: one of today's refuses edited metrics)
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
    with pytest.raises(InputError, match=r"attack/gain_ie\.csv lacks column\(s\) \['adversary_gain'\]"):
        write_report(copy, tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    "name, text, message",
    [
        (
            "gain_ie.csv",
            "release,adversary_gain\n1,0.1\nedited\n",
            r"gain_ie\.csv line 3: release 'edited' is not a whole",
        ),
        (
            "gain_ie.csv",
            "release,adversary_gain\n1,high\n",
            r"gain_ie\.csv line 2: adversary_gain 'high' is not a number",
        ),
        ("gain_ie.csv", "", r"gain_ie\.csv cannot be read as a CSV table"),
        ("kpr.csv", "release,kpr\nx,y\n", r"kpr\.csv line 2: release 'x' is not a whole number"),
        (
            "retro_ie.csv",
            "release,as_of,adversary_gain,confident_share\n1,2.5,0.1,0\n",
            r"as_of 2\.5 is not a whole",
        ),
    ],
)
def test_an_edited_attack_result_is_refused_naming_its_line(built, tmp_path, name, text, message):
    """The drill: a line appended to attack/gain_dk.csv, an empty one, a kpr.csv of text made
    ``dpriv report`` fail with an internal error (exit 1); now exit 2, file and line named."""
    copy = tmp_path / "ledger"
    shutil.copytree(built[0].root, copy, ignore=shutil.ignore_patterns("state"))
    (copy / "attack").mkdir(exist_ok=True)
    (copy / "attack" / name).write_text(text)
    res = CliRunner().invoke(app, ["report", str(copy), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and re.search(message, res.output), res.output
    assert not (tmp_path / "r.html").exists()
    # the advice works when followed: "run dpriv attack again" alone was refused (an attack never
    # replaces an edited result), so the file goes first
    assert "move the file away, then run dpriv attack again" in " ".join(res.output.split())


def test_cli_report(built, tmp_path):
    runner = CliRunner()
    out = tmp_path / "cli" / "report.html"
    out.parent.mkdir()
    res = runner.invoke(app, ["report", str(built[0].root), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "3 release(s)" in res.output and "adversary gains: snapshot" in res.output
    page = out.read_text()
    assert re.findall(r"<h2[^>]*>(.*?)</h2>", page) == HEADINGS
    res = runner.invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "x.html")])
    assert res.exit_code == 2 and "not a ledger" in res.output
    assert not (tmp_path / "x.html").exists()


def test_a_damaged_ledger_is_refused_by_name(built, tmp_path):
    copy = tmp_path / "ledger"
    shutil.copytree(built[0].root, copy, ignore=shutil.ignore_patterns("state"))
    view = copy / "releases" / "3" / "view.parquet"
    frame = pd.read_parquet(view)
    frame.iloc[1:].to_parquet(view, index=False)  # one tuple cut from the last release
    res = CliRunner().invoke(app, ["report", str(copy), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 2, res.output
    assert f"holds {len(frame) - 1} tuples where release 3 recorded {len(frame)}" in res.output
    assert not (tmp_path / "r.html").exists()


def _copy(built, tmp_path, **policy_changes) -> Path:
    """A copy of the fixture's ledger (without its state) whose policy.json has ``policy_changes``,
    as if recorded so (its digest in manifest.json too: an edit alone is refused)."""
    from dpriv.ledger import policy_digest

    copy = tmp_path / "ledger"
    shutil.copytree(built[0].root, copy, ignore=shutil.ignore_patterns("state"))
    path = copy / "policy.json"
    policy = {**json.loads(path.read_text()), **policy_changes}
    path.write_text(json.dumps(policy))
    manifest, digest = json.loads((copy / "manifest.json").read_text()), policy_digest(policy)
    releases = [{**r, "policy_sha256": digest} for r in manifest["releases"]]
    (copy / "manifest.json").write_text(
        json.dumps({**manifest, "releases": releases, "policy_sha256": digest})
    )
    return copy


def _metrics(led) -> list[dict]:
    return [json.loads((led.root / "releases" / str(i) / "metrics.json").read_text()) for i in (1, 2, 3)]


@pytest.mark.slow
def test_title_comes_from_the_policy_not_the_folder(built, tmp_path):
    page = built[5]
    title = "exam_result by age, gender, weight: JS-reduce release (k = 5, t = 0.5, j = 0.8)"
    assert f"<h1>{title}</h1>" in page and f"<title>{title}</title>" in page
    assert "ledger" not in re.findall(r"<h1>(.*?)</h1>", page)[0]
    copy = _copy(built, tmp_path, title="Weekly exams <2024>")
    assert "<h1>Weekly exams &lt;2024&gt;</h1>" in render_report(copy)
    assert "<h1>Chosen</h1>" in render_report(copy, title="Chosen")


def test_verdict_table_is_within_the_fixture_policy(built):
    led, page = built[0], built[5]
    keys, rows = _table(page, "verdict")
    assert keys == ["release", "respondents", "released", "k", "t", "j", "suppression", "verdict"]
    head = re.findall(r'<table id="verdict">.*?</thead>', page, re.S)[0]
    assert "k &ge; 5" in head and "t &le; 0.5" in head and "j &le; 0.8" in head
    assert "suppression &le; 100.00 %" in head  # max_suppression 1.0, in percent
    for row, m in zip(rows, _metrics(led), strict=True):
        cells = dict(zip(keys, row, strict=True))
        assert int(cells["respondents"][1]) == m["n_original"] == 300
        assert int(cells["released"][1]) == m["n_released"]
        assert cells["k"][0] == f"{m['k_achieved']} (within)"
        assert cells["suppression"][0] == f"{100 * m['suppression_rate']:.2f} % (within)"
        assert cells["verdict"][0] == "within the policy"


@pytest.mark.slow
def test_verdict_flips_when_a_threshold_is_crossed(built, tmp_path):
    ms = _metrics(built[0])
    t2 = ms[1]["t_achieved"]  # release 2's largest EMD
    k_min = min(m["k_achieved"] for m in ms)
    supp = max(m["suppression_rate"] for m in ms)
    assert supp > 0  # the fixture suppresses in some release (hand-checked: 72 of 300 in release 3)
    # t just below release 2's: every release with a larger max EMD is beyond on t, only those
    copy = _copy(built, tmp_path / "t", t=t2 - 1e-6, k=k_min + 1, max_suppression=supp - 1e-6)
    keys, rows = _table(render_report(copy), "verdict")
    for row, m in zip(rows, ms, strict=True):
        cells = dict(zip(keys, row, strict=True))
        beyond = [
            name
            for name, crossed in (
                ("k", m["k_achieved"] < k_min + 1),
                ("t", m["t_achieved"] > t2 - 1e-6),
                ("j", False),
                ("suppression", m["suppression_rate"] > supp - 1e-6),
            )
            if crossed
        ]
        want = "within the policy" if not beyond else "beyond the policy: " + ", ".join(beyond)
        assert cells["verdict"][0] == want
        assert cells["t"][0].endswith("(beyond)" if "t" in beyond else "(within)")
    assert "beyond the policy: " in rows[1][-1][0] and "t" in rows[1][-1][0]  # release 2 itself
    # exactly at the threshold is within (t <= threshold, k >= threshold, suppression <= limit)
    copy = _copy(built, tmp_path / "eq", t=max(m["t_achieved"] for m in ms), k=k_min, max_suppression=supp)
    _, rows = _table(render_report(copy), "verdict")
    assert [r[-1][0] for r in rows] == ["within the policy"] * 3


def test_verdicts_by_hand():
    frame = pd.DataFrame(
        {
            "release": [1, 2, 3, 4],
            "respondents": [10, 10, 10, 0],
            "released": [10, 9, 10, 0],
            "k": [5, 4, 5, None],
            "t": [0.3, 0.3, 0.3 + 2e-9, None],
            "j": [0.1, 0.05, 0.1, None],
            "suppression": [0.0, 0.1, 0.0, None],
        }
    )
    policy = {"k": 5, "t": 0.3, "j": 0.1, "max_suppression": 0.05, "method": "jsreduce"}
    got = verdicts(frame, policy)
    assert [v.within for v in got] == [True, False, False, True]
    assert got[1].beyond == ["k", "suppression"] and got[2].beyond == ["t"]
    assert [c.within for c in got[3].checks] == [None] * 4  # an empty release is not judged
    gains = frame.assign(retro_gain=[0.09, 0.1, 0.1 + 1e-6, None])
    gated = verdicts(gains, {**policy, "retro_max_gain": 0.1})
    within = [[c.within for c in v.checks if c.name == "retro_gain"] for v in gated]
    assert within == [[True], [True], [False], [None]]
    assert "retro_gain" in gated[2].beyond
    mondrian = verdicts(frame.iloc[:1].assign(l=[2]), {**policy, "method": "mondrian-l", "l": 3})
    assert mondrian[0].beyond == ["l"]
    assert {c.name: c.enforced for c in mondrian[0].checks} == {
        "k": True, "t": False, "j": False, "l": True, "suppression": True,
    }  # fmt: skip


def test_a_view_smaller_than_k_suppressed_by_the_policy_is_within_it():
    # release 2: 3 tuples, k 5, small_view = "suppress": released empty, as the policy asks
    frame = pd.DataFrame({"release": [1, 2, 3], "respondents": [10, 3, 6], "released": [10, 0, 0]})
    frame["suppression"] = [0.0, 1.0, 1.0]
    policy = {"k": 5, "max_suppression": 0.05, "method": "jsreduce", "small_view": "suppress"}
    assert [v.within for v in verdicts(frame, policy)] == [True, True, False]  # 6 >= k: a breach
    assert [v.within for v in verdicts(frame, {**policy, "small_view": "refuse"})] == [True, False, False]


def test_kpr_section_reference_line_is_the_original_against_itself(built, tmp_path):
    led, history, policy = built[0], built[1], built[2]
    assert 'id="kpr-reference-missing"' in built[5]  # the fixture's report had no history
    page = render_report(led, history=history)
    keys, rows = _table(page, "releases")
    assert "kpr_reference" in keys
    for i, row in enumerate(rows, start=1):
        view = history[history["view"] == i][list(policy.qi)].astype("float64")
        with warnings.catch_warnings():  # gender 1/2 is binned as numeric, as release_kpr does
            warnings.simplefilter("ignore")
            want = kpr(view, view, list(policy.qi)).kpr  # independently: the view against itself
        assert float(row[keys.index("kpr_reference")][1]) == want
    assert 'id="kpr-reference"' in page and "the original view against itself" in page
    assert "the original history was read for the KPR reference line only" in page
    assert "history was read" not in built[5]
    assert "can NOT single out" in page
    # the same values from attack/kpr.csv's optional column, without the history
    copy = _copy(built, tmp_path)
    refs = [float(r[keys.index("kpr_reference")][1]) for r in rows]
    pd.DataFrame({"release": [1, 2, 3], "kpr": [1.0, 2.0, 3.0], "kpr_reference": refs}).to_csv(
        copy / "attack" / "kpr.csv", index=False
    )
    assert release_frame(copy)["kpr_reference"].tolist() == refs
    bad = history.drop(columns="weight")
    with pytest.raises(InputError, match=r"lacks column\(s\) \['weight'\]"):
        render_report(led, history=bad)


def test_reference_kpr_by_hand():
    # categorical QIs only: no binning, so the original against itself matches exactly its
    # unique profiles: KPR = 100 * (1 - |U| / n)
    frame = pd.DataFrame({"sex": ["f", "f", "m", "m", "x"], "zip": ["1", "1", "2", "2", "2"]})
    policy = ReleasePolicy.from_dict(
        {
            "id": "id",
            "qi": ["sex", "zip"],
            "sensitive": "s",
            "kinds": {"sex": "categorical", "zip": "categorical"},
        }
    )
    assert reference_kpr(frame, policy) == pytest.approx(80.0)  # ("x", "2") is the one unique
    assert reference_kpr(frame.iloc[[0, 2, 4]], policy) == 0.0  # every profile unique
    assert reference_kpr(frame.iloc[:0], policy) is None


@pytest.mark.shared_data
def test_wbcd_original_against_itself(shared_data):
    """The figure the KPR reference line exists for: WBCD against itself is far from 0 %."""
    orig = pd.read_csv(shared_data / "avatar_paper" / "WBCD" / "breast_cancer_wisconsin.csv")
    known = ["Clump_Thickness", "Uniformity_of_Cell_Size", "Uniformity_of_Cell_Shape"]
    with warnings.catch_warnings():  # integer scores 1-10: the <= 10 levels hint
        warnings.simplefilter("ignore")
        r = kpr(orig, orig, known)
        four = kpr(orig, orig, [*known, "Bare_Nuclei"])
    # the scores' bins are narrower than 1, so every unique original matches itself: S = U
    assert r.n == 683 and r.n_matched == r.n_unique_original == 129
    assert r.kpr == pytest.approx(100 * (1 - 129 / 683)) and round(r.kpr, 1) == 81.1
    assert four.n_matched == four.n_unique_original == 210 and round(four.kpr, 1) == 69.3


def test_every_adversary_knowledge_and_the_gain_are_explained(built):
    page = built[5]
    keys = re.findall(r'<tr data-knowledge="([^"]+)">', page)
    assert keys == ["snapshot", "dk", "dk-n", "spm", "ie"]
    table = re.findall(r'<table id="knowledge".*?</table>', page, re.S)[0]
    for key, text in KNOWLEDGE_TEXT.items():
        assert html.escape(text[0].upper() + text[1:]) in table, key
    row = dict(re.findall(r'<tr data-knowledge="([^"]+)">.*?<td>[^<]*</td><td>([^<]*)</td>', table))
    assert row == {"snapshot": "snapshot", "dk": "dk", "dk-n": "not attacked", "spm": "not attacked",
                   "ie": "not attacked"}  # fmt: skip
    assert "Adversary gain (E10): the mean, over the released tuples" in page
    assert describe_knowledge("dk-2").startswith(
        "The dk-2 adversary"
    ) and "last 2 value(s)" in describe_knowledge("dk-2")
    assert describe_knowledge("spm:corpus.csv").startswith("The spm:corpus.csv adversary mines")
    assert describe_knowledge("zz") == ""


def test_tail_risk_section_is_present_and_explained(built, tmp_path):
    page = built[5]
    assert '<h3 id="tail-risk">' in page and "at least 0.9" in page
    assert 'id="tail-missing"' not in page  # gain files with confident_share are there
    copy = _copy(built, tmp_path)
    shutil.rmtree(copy / "attack")
    bare = render_report(copy)
    assert '<h3 id="tail-risk">' in bare and 'id="tail-missing"' in bare
    # the defender's own tail (metrics.json) is still drawn
    shares = [m["confident_share"] for m in _metrics(built[0])]
    assert defender_tail(copy)["confident_share"].tolist() == shares
    tail = bare.split('<h3 id="tail-risk">')[1]
    assert tail.count("<img ") == 1


@pytest.mark.slow
def test_cli_report_with_history_and_a_bad_history(built, tmp_path):
    runner = CliRunner()
    hist = tmp_path / "history.parquet"
    built[1].to_parquet(hist)
    out = tmp_path / "r.html"
    res = runner.invoke(app, ["report", str(built[0].root), "--out", str(out), "--history", str(hist)])
    assert res.exit_code == 0, res.output
    assert 'id="kpr-reference"' in out.read_text()
    time = built[2].time

    def report_of(history: pd.DataFrame, name: str):
        history.to_parquet(tmp_path / f"{name}.parquet")
        args = ["report", str(built[0].root), "--out", str(tmp_path / f"{name}.html")]
        return runner.invoke(app, [*args, "--history", str(tmp_path / f"{name}.parquet")])

    res = report_of(built[1].drop(columns="age"), "bad")
    assert res.exit_code == 2 and "age" in res.output
    assert not (tmp_path / "bad.html").exists()
    res = report_of(built[1][built[1][time] != 2], "short")  # views 1 and 3
    assert res.exit_code == 2, res.output
    assert "the history holds no view 2 (its views: 1, 3), but the ledger" in res.output
    assert "released views 1..3: give the history that was released" in res.output
    assert not (tmp_path / "short.html").exists()


@pytest.mark.slow
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
        "--window-size=1200,4800",
        out.resolve().as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert shot.is_file(), f"chromium wrote no screenshot (exit {proc.returncode}): {proc.stderr[-2000:]}"
    import matplotlib.image

    img = matplotlib.image.imread(shot)[..., :3].astype(float)  # floats in [0, 1]
    assert img.shape[:2] == (4800, 1200)
    assert img.std() > 0.05  # not blank
    non_white = (img.min(axis=2) < 0.9).mean()
    assert non_white > 0.03
    # Plot regions: saturated (coloured) pixels. Without its images the same page has ~4,500
    # of them (blue headings) on ~90 rows; with its five plots (privacy, utility, KPR, gain,
    # tail) ~39,800 on ~680 rows, and the page runs to ~3,700 px.
    colored = (img.max(axis=2) - img.min(axis=2)) > 0.3
    assert colored.sum() > 20_000
    rows = colored.sum(axis=1) >= 5
    assert rows.sum() > 450
    content = np.flatnonzero((img.min(axis=2) < 0.9).any(axis=1))
    assert content.max() > 3000  # the sections below the fold rendered too
    assert rows[2400:].sum() > 120  # KPR, adversary gain and tail-risk plots


def test_a_ledger_with_only_retrospective_results_reports_them(built, tmp_path):
    """The report said "no attack results" when attack/ held only retro_<knowledge>.csv."""
    copy = tmp_path / "ledger"
    shutil.copytree(built[0].root, copy, ignore=shutil.ignore_patterns("attack"))  # the attack reads state/
    built[1].to_parquet(tmp_path / "history.parquet")
    args = ["attack", str(copy), "--history", str(tmp_path / "history.parquet"), "--knowledge", "dk"]
    policy = built[0].root.parent / "data" / "policy.toml"
    res = CliRunner().invoke(app, [*args, "--adversary", "retrospective", "--policy", str(policy)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (copy / "attack").glob("*.csv")) == ["retro_dk.csv"]
    retro = pd.read_csv(copy / "attack" / "retro_dk.csv")
    worst = retro.loc[retro["adversary_gain"].idxmax()]
    res = CliRunner().invoke(app, ["report", str(copy), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "no attack results" not in said
    assert (
        f"retrospective adversary: dk (largest gain {worst['adversary_gain']:.4f}: release "
        f"{int(worst['release'])} as of release {int(worst['as_of'])})" in said
    )
    page = (tmp_path / "r.html").read_text()
    assert "No attack results" not in page and 'id="paper-missing"' in page
    row = dict(re.findall(r'<tr data-knowledge="([^"]+)">.*?<td>[^<]*</td><td>([^<]*)</td>', page))
    assert row["dk"] == "dk (retrospective)" and row["snapshot"] == "not attacked"
    _, rows = _table(page, "retro-gains")
    assert re.search(r'<table id="retro-gains">.*?<tbody><tr title="[^"]*"><th>dk</th>', page, re.S)
    for (as_of, largest, at, mean), (n, part) in zip(rows, retro.groupby("as_of"), strict=True):
        assert int(as_of[1]) == n
        assert float(largest[1]) == part["adversary_gain"].max()
        assert int(at[1]) == part.loc[part["adversary_gain"].idxmax(), "release"]
        assert float(mean[1]) == pytest.approx(part["adversary_gain"].mean(), rel=1e-12)
