"""Messages that name rows print no sensitive value and no id (drill of session 35): an id
column of ints and text is described by the shape of each type's ids; a sensitive value outside
the declared domain, or of another type than the column's others, is named by its row only."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpriv.errors import InputError
from dpriv.release import anonymize, release_history

POLICY = {"id": "rid", "qi": ["age", "weight"], "sensitive": "s", "k": 3, "t": 1.0, "j": 10.0}


def view(n: int = 30, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "rid": np.arange(n),
            "age": rng.integers(40, 60, n),
            "weight": rng.integers(60, 90, n),
            "s": rng.choice(["a", "b", "c"], n),
        }
    )


def test_ids_of_two_types_are_described_by_their_shapes_never_printed(tmp_path):
    hist = pd.concat([view(30).assign(v=1), view(30, 1).assign(v=2), view(30, 2).assign(v=3)])
    hist = hist.reset_index(drop=True)
    hist["rid"] = pd.Series([*range(100, 160), *(f"SECRETID{i}" for i in range(100, 130))], dtype=object)
    with pytest.raises(InputError) as err:
        release_history(hist, {**POLICY, "time": "v"}, tmp_path / "led")
    said = str(err.value)
    assert "SECRETID" not in said and "100" not in said, said
    assert "holds values of several types (int: integers of 3 digits; str: 8 letters + 3 digits)" in said
    assert not (tmp_path / "led").exists()


def run(cli, tmp_path, text: str, *extra: str):
    (tmp_path / "in.csv").write_text(text)
    out = tmp_path / "out.parquet"
    flags = ("--id", "rid", "--qi", "age,weight", "--sensitive", "s", "--k", "3", "--t", "1", "--j", "10")
    res = cli("anonymize", tmp_path / "in.csv", "--out", out, *flags, *extra)
    assert res.exit_code == 2 and not out.exists(), res.output
    return res.output


def test_a_sensitive_value_is_never_printed_beside_its_row(cli, tmp_path):
    v = view()
    v.loc[2, "s"] = "hiv_secret"  # line 4 of the file (the header is line 1)
    policy = tmp_path / "policy.toml"
    policy.write_text('[domains]\ns = ["a", "b", "c"]\n')
    said = run(cli, tmp_path, v.to_csv(index=False), "--policy", policy)
    assert "hiv_secret" not in said, said
    assert "sensitive column 's' has values (not printed beside their rows: see the rows named)" in said
    assert "not in its declared domain ['a', 'b', 'c']" in said and "1 row: line 4 of" in said, said
    v = view().astype({"s": object})
    v.loc[3, "s"] = 7  # Python API: one int among text (a CSV reads every cell of it as text)
    with pytest.raises(InputError) as err:
        release_history(v.assign(v=1), {**POLICY, "time": "v"}, tmp_path / "led")
    said = str(err.value)
    assert "holds values of several types (str, and int in some rows)" in said and "row 3" in said, said
    assert "e.g." not in said and "7 (int)" not in said, said


def test_a_sensitive_list_is_named_by_its_row_without_its_value():
    v = view().astype({"s": object})
    v.at[4, "s"] = ["hiv_secret", "a"]  # a Parquet list cell
    with pytest.raises(InputError) as err:
        anonymize(v, POLICY)
    said = str(err.value)
    assert "sensitive column 's' holds lists or arrays, not one value per row" in said and "row 4" in said
    assert "hiv_secret" not in said, said


def test_a_generalized_sensitive_value_is_named_by_its_row_without_its_value():
    """A value set in the sensitive column may hold true values (``{hiv_secret,a}``); a QI's
    generalized value is still quoted."""
    v = view().astype({"s": object})
    v.at[5, "s"] = "{hiv_secret,a}"
    with pytest.raises(InputError) as err:
        anonymize(v, POLICY)
    said = str(err.value)
    assert "column 's' holds a value, a generalized or placeholder value" in said and "row 5" in said
    assert "hiv_secret" not in said, said
    v = view().astype({"age": object})
    v.at[5, "age"] = "[45-52]"
    with pytest.raises(InputError, match=r"column 'age' holds '\[45-52\]', a generalized"):
        anonymize(v, POLICY)
