"""``dpriv verify`` holds a file ``dpriv anonymize`` wrote to the k (and t) it recorded in
``OUT.metrics.json`` (``anonymity_parameters``, session 46), as it holds it to the method's own
parameters: a file made with ``--k 7`` and verified without ``--k`` was checked at the default
k 5, a weaker check than the file promises. Since session 47 also ``max_suppression`` (and, with
t, ``emd_ground``), and a value asked (``--k 8``, the policy file's) is measured as asked, the
recorded one printed beside it (session 46 refused it).

The hand case: 28 people whose age and zip rise together, diseases flu cold hiv in turn. Strict
Mondrian-l with k 7 cuts them at the medians: ids 1..7, 8..14, 15..21, 22..28 (a 7 cannot split
into two groups of 7), each with all three diseases (l 3). A row dropped from the file (and its
tuple count lowered with it, as one editing the file would; 1 of 28 is within max_suppression
0.05) leaves a class of 6: fine at k 5, a failure at the recorded 7.
"""

import json
from collections import Counter

import pandas as pd
import pytest

DISEASES = ("flu", "cold", "hiv")
ROWS = [(i, 20 + i, 100 + i, DISEASES[i % 3]) for i in range(1, 29)]
COLS = ["--id", "id", "--qi", "age,zip", "--sensitive", "disease"]
POLICY = '[columns]\nid = "id"\nqi = ["age", "zip"]\nsensitive = "disease"\n'


@pytest.fixture
def made(cli, tmp_path):
    """The original, the mondrian-l release at k 7 and its metrics file."""
    table = tmp_path / "people.csv"
    pd.DataFrame(ROWS, columns=["id", "age", "zip", "disease"]).to_csv(table, index=False)
    out = tmp_path / "k7.csv"
    res = cli("anonymize", table, "--out", out, *COLS, "--k", "7", "--method", "mondrian-l")
    assert res.exit_code == 0, res.output
    return table, out, tmp_path / "k7.csv.metrics.json"


def _cut_a_row(out, metrics) -> None:
    """Drop the released file's first row and lower its recorded tuple count to match."""
    rel = pd.read_csv(out)
    assert sorted(rel.groupby("qi_group").size()) == [7, 7, 7, 7]  # the hand case's groups
    rel.iloc[1:].to_csv(out, index=False)
    data = json.loads(metrics.read_text())
    metrics.write_text(json.dumps({**data, "n_released": data["n_released"] - 1}))


def test_anonymize_records_k_beside_the_method_parameters(made):
    _, _, metrics = made
    data = json.loads(metrics.read_text())
    assert data["method"] == "mondrian-l" and data["method_parameters"] == {"l": 3}
    # mondrian-l promises k and l, not t (so no emd_ground); every method its suppression
    assert data["anonymity_parameters"] == {"k": 7, "max_suppression": 0.05}


def test_a_k7_file_with_a_class_of_6_fails_verify_without_k(cli, made):
    table, out, metrics = made
    ok = cli("verify", out, "--original", table, *COLS)
    assert ok.exit_code == 0, ok.output
    assert "k=7 [recorded in k7.csv.metrics.json]" in ok.stderr, ok.stderr
    assert "recorded: method mondrian-l (l 3, k 7, max_suppression 0.05)" in ok.stdout
    _cut_a_row(out, metrics)
    bad = cli("verify", out, "--original", table, *COLS)
    assert bad.exit_code == 2 and "FAIL" in bad.stdout, bad.output
    assert "k_achieved: 6" in bad.stdout and "k = 7" in bad.stdout, bad.stdout
    # given as it was recorded: the same verdict
    assert cli("verify", out, "--original", table, *COLS, "--k", "7").exit_code == 2


def test_another_k_given_is_measured_with_the_recorded_one_beside_it(cli, made, tmp_path):
    """An explicit k is a question asked of the file (session 47; session 46 refused it): the
    groups of 7 are 5-anonymous (ok) and not 8-anonymous (FAIL: each of the 4 groups, 7 < 8)."""
    table, out, metrics = made
    made_with = "the file was made with k 7, recorded in k7.csv.metrics.json)"
    ok = cli("verify", out, "--original", table, *COLS, "--k", "5")
    assert ok.exit_code == 0 and "ok: True" in ok.stdout, ok.output
    assert f"  checked at: k 5 (asked by --k 5; {made_with}" in ok.stdout.splitlines(), ok.stdout
    assert "k=5 [flag]" in ok.stderr
    bad = cli("verify", out, "--original", table, *COLS, "--k", "8")
    assert bad.exit_code == 2, bad.output
    assert f"  checked at: k 8 (asked by --k 8; {made_with}" in bad.stdout.splitlines(), bad.stdout
    fails = [line for line in bad.stdout.splitlines() if line.startswith("  FAIL")]
    assert len(fails) == 4 and all(line.endswith("size 7 < k = 8") for line in fails), fails
    assert f"note: checked at k 8 (made with 7) as asked, not at the values {metrics} records" in bad.stderr
    # the policy file asks too (a class of 6 after a cut row: k 6 holds, the recorded 7 does not)
    _cut_a_row(out, metrics)
    policy = tmp_path / "p.toml"
    policy.write_text('[columns]\nid = "id"\nqi = ["age", "zip"]\nsensitive = "disease"\n[privacy]\nk = 6\n')
    by_file = cli("verify", out, "--original", table, "--policy", policy)
    assert by_file.exit_code == 0 and "k_achieved: 6" in by_file.stdout, by_file.output
    assert f"checked at: k 6 (asked by --policy {policy}; {made_with}" in by_file.stdout
    assert cli("verify", out, "--original", table, *COLS).exit_code == 2  # at the recorded 7


def test_jsreduce_records_k_and_t_and_an_asked_t_is_measured(cli, tmp_path):
    """JS-reduce with k 4 (j 1: no JS bound) groups the 28 rising people 4 by 4 in id order; the
    largest EMD (equal ground: total variation) of a group to the view's 9 flu, 10 cold, 9 hiv
    is 5/28 (ids 5..8: hiv flu cold hiv). Asked t 0.18 holds, 0.17 fails; the recorded 0.6 holds."""
    table = tmp_path / "people.csv"
    pd.DataFrame(ROWS, columns=["id", "age", "zip", "disease"]).to_csv(table, index=False)
    out = tmp_path / "js.csv"
    res = cli("anonymize", table, "--out", out, *COLS, "--k", "4", "--t", "0.6", "--j", "1")
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "js.csv.metrics.json").read_text())
    assert data["method_parameters"] == {}
    assert data["anonymity_parameters"] == {"k": 4, "t": 0.6, "max_suppression": 0.05, "emd_ground": "equal"}
    rel = pd.read_csv(out)
    blocks = [sorted(int(a) for a in g.age_min) for _, g in rel.groupby("qi_group")]
    assert sorted(blocks) == [[21 + 4 * b] * 4 for b in range(7)]  # ids 1..4, 5..8, ...: ages 21..24 ...
    assert max(_block_tv(b) for b in range(7)) == pytest.approx(5 / 28)
    ok = cli("verify", out, "--original", table, *COLS)
    assert ok.exit_code == 0, ok.output
    assert "k=4 [recorded in js.csv.metrics.json] t=0.6 [recorded in js.csv.metrics.json]" in ok.stderr
    held = cli("verify", out, "--original", table, *COLS, "--t", "0.18")
    assert held.exit_code == 0 and "ok: True" in held.stdout, held.output
    assert "checked at: t 0.18 (asked by --t 0.18; the file was made with t 0.6, recorded in" in held.stdout
    bad = cli("verify", out, "--original", table, *COLS, "--t", "0.17")
    assert bad.exit_code == 2 and "> t = 0.17" in bad.stdout, bad.output
    assert "checked at: t 0.17 (asked by --t 0.17; the file was made with t 0.6" in bad.stdout


def _block_tv(block: int) -> float:
    """Total variation between the diseases of ids 4 * block + 1 .. 4 * block + 4 and the view's."""
    group = Counter(DISEASES[i % 3] for i in range(4 * block + 1, 4 * block + 5))
    whole = Counter(d for *_, d in ROWS)
    return 0.5 * sum(abs(group[d] / 4 - whole[d] / len(ROWS)) for d in DISEASES)


def test_a_file_recorded_before_k_was_is_checked_at_the_default(cli, made):
    table, out, metrics = made
    _cut_a_row(out, metrics)
    data = json.loads(metrics.read_text())
    del data["anonymity_parameters"]  # as session 45 wrote it
    metrics.write_text(json.dumps(data))
    old = cli("verify", out, "--original", table, *COLS)
    assert old.exit_code == 0, old.output
    assert "k=5 [default]" in old.stderr


@pytest.mark.parametrize(
    "edited",
    [
        {"k": 0},
        {"k": "7"},
        {"k": 7, "t": 0.3},
        {},
        {"k": 7, "max_suppression": 1.5},
        {"k": 7, "max_suppression": "0.1"},
        {"k": 7, "emd_ground": "equal"},  # mondrian-l checks no t
    ],
)
def test_an_edited_record_of_k_is_refused(cli, made, edited):
    table, out, metrics = made
    data = json.loads(metrics.read_text())
    metrics.write_text(json.dumps({**data, "anonymity_parameters": edited}))
    bad = cli("verify", out, "--original", table, *COLS)
    assert bad.exit_code == 2 and "FAIL" not in bad.stdout, bad.output
    assert str(metrics) in bad.stderr and "damaged or edited" in bad.stderr, bad.stderr


def test_a_file_made_with_max_suppression_0_1_is_checked_at_it(cli, tmp_path):
    """The hand case released at k 7 under max_suppression 0.1; a row cut from two groups (and
    the tuple count lowered: 26 of 28) leaves 2/28 = 7.1 % missing, classes 6, 6, 7, 7, checked at
    an asked k 5: within the recorded 0.1, above the default 0.05 of a file that records none."""
    table = tmp_path / "people.csv"
    pd.DataFrame(ROWS, columns=["id", "age", "zip", "disease"]).to_csv(table, index=False)
    made = tmp_path / "made.toml"
    made.write_text(POLICY + "[privacy]\nk = 7\nmax_suppression = 0.1\n")
    out, metrics = tmp_path / "s.csv", tmp_path / "s.csv.metrics.json"
    res = cli("anonymize", table, "--out", out, "--policy", made, "--method", "mondrian-l")
    assert res.exit_code == 0, res.output
    data = json.loads(metrics.read_text())
    assert data["anonymity_parameters"] == {"k": 7, "max_suppression": 0.1}
    rel = pd.read_csv(out)
    rel.drop(index=[rel.index[rel.age_min == 21][0], rel.index[rel.age_min == 28][0]]).to_csv(
        out, index=False
    )
    metrics.write_text(json.dumps({**data, "n_released": 26}))
    ok = cli("verify", out, "--original", table, *COLS, "--k", "5")
    assert ok.exit_code == 0 and "k_achieved: 6" in ok.stdout, ok.output
    assert "max_suppression=0.1 [recorded in s.csv.metrics.json]" in ok.stderr
    # asked by a policy file: measured at 0.05, the recorded 0.1 said beside it
    asked = tmp_path / "asked.toml"
    asked.write_text(POLICY + "[privacy]\nk = 5\nmax_suppression = 0.05\n")
    bad = cli("verify", out, "--original", table, "--policy", asked)
    assert bad.exit_code == 2, bad.output
    assert (
        "FAIL 2 of the view's 28 tuples (7.1%) are missing from the release, above max_suppression 0.05"
        in (bad.stdout)
    )
    assert (
        f"checked at: max_suppression 0.05 (asked by --policy {asked}; the file was made with "
        "max_suppression 0.1, recorded in s.csv.metrics.json)"
    ) in bad.stdout
    # a file as session 46 wrote it (k recorded, max_suppression not): the default 0.05, as before
    metrics.write_text(json.dumps({**data, "n_released": 26, "anonymity_parameters": {"k": 7}}))
    old = cli("verify", out, "--original", table, *COLS, "--k", "5")
    assert old.exit_code == 2 and "above max_suppression 0.05" in old.stdout, old.output
    assert "max_suppression=0.05 [default]" in old.stderr


def test_a_file_made_with_the_ordered_ground_is_checked_with_it(cli, tmp_path):
    """emd_ground "ordered" recorded with t: verify measures t_achieved with the ordered EMD
    (D[S] cold < flu < hiv: the mean absolute cumulative difference, over |D[S]| - 1 = 2), here
    computed from the released groups by hand, not with dpriv's EMD."""
    table = tmp_path / "people.csv"
    pd.DataFrame(ROWS, columns=["id", "age", "zip", "disease"]).to_csv(table, index=False)
    made = tmp_path / "made.toml"
    made.write_text(POLICY + '[privacy]\nk = 4\nt = 0.6\nj = 1.0\nemd_ground = "ordered"\n')
    out = tmp_path / "o.csv"
    assert cli("anonymize", table, "--out", out, "--policy", made).exit_code == 0
    data = json.loads((tmp_path / "o.csv.metrics.json").read_text())
    assert data["anonymity_parameters"] == {
        "k": 4,
        "t": 0.6,
        "max_suppression": 0.05,
        "emd_ground": "ordered",
    }
    order, whole = ["cold", "flu", "hiv"], Counter(d for *_, d in ROWS)
    worst = 0.0
    for _, g in pd.read_csv(out).groupby("qi_group"):
        mine, gap, total = Counter(g.disease), 0.0, 0.0
        for d in order[:-1]:
            gap += mine[d] / len(g) - whole[d] / len(ROWS)
            total += abs(gap)
        worst = max(worst, total / (len(order) - 1))
    ok = cli("verify", out, "--original", table, *COLS)
    assert ok.exit_code == 0 and "emd_ground=ordered [recorded in o.csv.metrics.json]" in ok.stderr, ok.output
    achieved = float(ok.stdout.split("t_achieved: ")[1].split()[0])
    assert achieved == pytest.approx(worst) and worst > 0
