"""A fresh user's drill (s38), the wording of three messages:

1. text in a numeric QI was given the same example whatever the column ("e.g. 72 for '72kg'",
   said of an age holding 'unknown'): the example is now the column's own text holding a
   number, or none;
2. ``input X does not exist`` said neither that nothing was written nor what to check;
3. ``dpriv attack --help`` did not say that --policy is optional (the ledger's recorded policy
   is used by default).
"""

import re

import pandas as pd
import pytest
from test_cli import assert_refused
from typer.testing import CliRunner

from dpriv.cli import app

ARGS = ["--qi", "age,weight", "--sensitive", "disease", "--k", "2", "--t", "1", "--j", "10", "--no-cluster"]


def anonymize(tmp_path, age, weight):
    frame = pd.DataFrame(
        {"respondent_id": range(1, 7), "age": age, "weight": weight, "disease": ["flu", "cold"] * 3}
    )
    src = tmp_path / "in.csv"
    frame.to_csv(src, index=False)
    policy = tmp_path / "p.toml"  # declared numeric domains: the text is a typo of a number
    policy.write_text("[domains]\nage = [20, 90]\nweight = [40, 150]\n")
    out = str(tmp_path / "o.csv")
    return CliRunner().invoke(app, ["anonymize", str(src), "--out", out, "--policy", str(policy), *ARGS])


@pytest.mark.parametrize(
    "age, weight, example",
    [
        (["30", "31", "unknown", "33", "34", "35"], list(range(60, 66)), None),
        (["30", "31", "45 y", "33", "34", "35"], list(range(60, 66)), "45 for '45 y'"),
        (list(range(30, 36)), ["60", "n/k", "81.5 kg", "63", "64", "65"], "81.5 for '81.5 kg'"),
    ],
)
def test_the_example_of_a_text_in_a_numeric_qi_is_the_columns_own(tmp_path, age, weight, example):
    res = anonymize(tmp_path, age, weight)
    out = assert_refused(res, r"numeric QI '(age|weight)' holds text that is not a number")
    assert "72kg" not in out
    if example is None:
        assert "correct each to a number or drop the rows" in out and "e.g." not in out
    else:
        assert f"correct each to a number (e.g. {example}) or drop the rows" in out
    assert not (tmp_path / "o.csv").exists()


def test_an_input_that_does_not_exist_says_nothing_was_written_and_what_to_check(tmp_path):
    res = CliRunner().invoke(
        app, ["anonymize", str(tmp_path / "week.csv"), "--out", str(tmp_path / "o.csv"), *ARGS]
    )
    assert_refused(
        res,
        rf"error: input {re.escape(str(tmp_path / 'week.csv'))} does not exist: nothing was written; check "
        r"the path \(and that the export writing it has finished\)",
    )
    assert list(tmp_path.iterdir()) == []


def test_attack_help_says_policy_is_optional():
    res = CliRunner().invoke(app, ["attack", "--help"], terminal_width=200)
    assert res.exit_code == 0
    text = " ".join(re.sub(r"[│\s]+", " ", res.output).split())
    assert "Optional: by default the policy the ledger recorded with its releases is used" in text
