"""``dpriv verify`` holds a file ``dpriv anonymize`` wrote to the k (and t) it recorded in
``OUT.metrics.json`` (``anonymity_parameters``, session 46), as it holds it to the method's own
parameters: a file made with ``--k 7`` and verified without ``--k`` was checked at the default
k 5, a weaker check than the file promises.

The hand case: 28 people whose age and zip rise together, diseases flu cold hiv in turn. Strict
Mondrian-l with k 7 cuts them at the medians: ids 1..7, 8..14, 15..21, 22..28 (a 7 cannot split
into two groups of 7), each with all three diseases (l 3). A row dropped from the file (and its
tuple count lowered with it, as one editing the file would; 1 of 28 is within max_suppression
0.05) leaves a class of 6: fine at k 5, a failure at the recorded 7.
"""

import json

import pandas as pd
import pytest

DISEASES = ("flu", "cold", "hiv")
ROWS = [(i, 20 + i, 100 + i, DISEASES[i % 3]) for i in range(1, 29)]
COLS = ["--id", "id", "--qi", "age,zip", "--sensitive", "disease"]


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
    assert data["anonymity_parameters"] == {"k": 7}  # mondrian-l promises k and l, not t


def test_a_k7_file_with_a_class_of_6_fails_verify_without_k(cli, made):
    table, out, metrics = made
    ok = cli("verify", out, "--original", table, *COLS)
    assert ok.exit_code == 0, ok.output
    assert "k=7 [recorded in k7.csv.metrics.json]" in ok.stderr, ok.stderr
    assert "recorded: method mondrian-l (l 3, k 7)" in ok.stdout
    _cut_a_row(out, metrics)
    bad = cli("verify", out, "--original", table, *COLS)
    assert bad.exit_code == 2 and "FAIL" in bad.stdout, bad.output
    assert "k_achieved: 6" in bad.stdout and "k = 7" in bad.stdout, bad.stdout
    # given as it was recorded: the same verdict
    assert cli("verify", out, "--original", table, *COLS, "--k", "7").exit_code == 2


def test_another_k_given_is_refused_naming_both(cli, made, tmp_path):
    table, out, _ = made
    bad = cli("verify", out, "--original", table, *COLS, "--k", "5")
    assert bad.exit_code == 2 and "FAIL" not in bad.stdout, bad.output
    assert "--k 5:" in bad.stderr and "made with k = 7" in bad.stderr, bad.stderr
    policy = tmp_path / "p.toml"
    policy.write_text('[columns]\nid = "id"\nqi = ["age", "zip"]\nsensitive = "disease"\n[privacy]\nk = 6\n')
    by_file = cli("verify", out, "--original", table, "--policy", policy)
    assert by_file.exit_code == 2, by_file.output
    assert f"--policy {policy} (k = 6)" in by_file.stderr and "made with k = 7" in by_file.stderr
    assert f"remove k from {policy}" in by_file.stderr


def test_jsreduce_records_k_and_t(cli, tmp_path):
    table = tmp_path / "people.csv"
    pd.DataFrame(ROWS, columns=["id", "age", "zip", "disease"]).to_csv(table, index=False)
    out = tmp_path / "js.csv"
    res = cli("anonymize", table, "--out", out, *COLS, "--k", "4", "--t", "0.6", "--j", "1")
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "js.csv.metrics.json").read_text())
    assert (data["method_parameters"], data["anonymity_parameters"]) == ({}, {"k": 4, "t": 0.6})
    ok = cli("verify", out, "--original", table, *COLS)
    assert ok.exit_code == 0, ok.output
    assert "k=4 [recorded in js.csv.metrics.json] t=0.6 [recorded in js.csv.metrics.json]" in ok.stderr
    bad = cli("verify", out, "--original", table, *COLS, "--t", "0.3")
    assert bad.exit_code == 2 and "--t 0.3:" in bad.stderr and "made with t = 0.6" in bad.stderr


def test_a_file_recorded_before_k_was_is_checked_at_the_default(cli, made):
    table, out, metrics = made
    _cut_a_row(out, metrics)
    data = json.loads(metrics.read_text())
    del data["anonymity_parameters"]  # as session 45 wrote it
    metrics.write_text(json.dumps(data))
    old = cli("verify", out, "--original", table, *COLS)
    assert old.exit_code == 0, old.output
    assert "k=5 [default]" in old.stderr


@pytest.mark.parametrize("edited", [{"k": 0}, {"k": "7"}, {"k": 7, "t": 0.3}, {}])
def test_an_edited_record_of_k_is_refused(cli, made, edited):
    table, out, metrics = made
    data = json.loads(metrics.read_text())
    metrics.write_text(json.dumps({**data, "anonymity_parameters": edited}))
    bad = cli("verify", out, "--original", table, *COLS)
    assert bad.exit_code == 2 and "FAIL" not in bad.stdout, bad.output
    assert str(metrics) in bad.stderr and "damaged or edited" in bad.stderr, bad.stderr
