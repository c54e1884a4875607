"""Changes of the sensitive value the policy's own model rules out (a drill, s38) were released
without a word: a respondent recorded with an exit value (``deceased``) in an earlier view who is
in a later view again, and a change the sequential knowledge gives probability zero
(``liver_1`` -> ``alzheimer_3``). Each view to release holding them is now warned about (the
view, the counts, the values; never an id) and still released as the data says; on the Dask
path the same counts."""

import re
from unittest import mock

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.value_jumps import value_jumps

EXITS = ["deceased", "discharged"]
EXTRA = {"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}, "release": {"exit_values": EXITS}}
ID_BASE = 90_000  # the returning respondents' rows carry ids no count could be mistaken for


def edited():
    """A 3-view history whose view 3 holds returns after an exit and forbidden changes, the
    generator's tables, and the forbidden pairs (M, M) of their order-1 table."""
    mh = medical_history(n_views=3, view_size=150, seed=0)
    h = mh.history.copy()
    h["respondent_id"] += ID_BASE
    zero = mh.knowledge.tables[1].max(axis=0) == 0
    values = list(mh.values)
    exited = h[(h["view"] < 3) & h["exam_result"].isin(EXITS)]["respondent_id"].unique()[:3]
    back = h[h["view"] == 3].head(len(exited)).copy()
    back["respondent_id"], back["exam_result"] = exited, "liver_1"
    h = pd.concat([h, back], ignore_index=True)
    prev = h[h["view"] == 2].set_index("respondent_id")["exam_result"]
    three = h.index[(h["view"] == 3) & h["respondent_id"].isin(prev.index)]
    target = values.index("alzheimer_3")
    jumps = [r for r in three if zero[values.index(prev[h.at[r, "respondent_id"]]), target]][:4]
    h.loc[jumps, "exam_result"] = "alzheimer_3"
    assert len(exited) == 3 and len(jumps) == 4
    return mh, h, zero, values


def expected(h: pd.DataFrame, zero: np.ndarray, values: list, todo: list[int]) -> dict:
    """(time, exit, prev, cur) -> n, respondent by respondent with plain Python."""
    found: dict = {}
    for _, rows in h.sort_values("view").groupby("respondent_id"):
        seen = []
        for t, s in zip(rows["view"], rows["exam_result"]):
            gone = next((v for _, v in seen if v in EXITS), None)
            key = None
            if gone is not None:
                key = (t, True, values.index(gone), values.index(s))
            elif seen and seen[-1][0] == t - 1 and zero[values.index(seen[-1][1]), values.index(s)]:
                key = (t, False, values.index(seen[-1][1]), values.index(s))
            if key is not None and t in todo:
                found[key] = found.get(key, 0) + 1
            seen.append((t, s))
    return found


def as_dict(frame: pd.DataFrame) -> dict:
    return {(int(t), bool(e), int(p), int(c)): int(n) for t, e, p, c, n in frame.to_numpy()}


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    mh, h, zero, values = edited()
    folder = tmp_path_factory.mktemp("jumps")
    policy_path = write_history(folder, mh, policy_extra=EXTRA)
    return mh, h, zero, values, ReleasePolicy.from_toml(policy_path), folder, policy_path


@pytest.mark.parametrize("todo", [[3], [2, 3], [1, 2, 3]])
def test_the_counts_are_those_of_the_history_in_process_and_on_dask(case, todo):
    mh, h, zero, values, policy, _, _ = case
    want = expected(h, zero, values, todo)
    assert sum(n for (_, e, _, _), n in want.items() if e) == 3
    assert sum(n for (_, e, _, _), n in want.items() if not e) == 4
    assert as_dict(value_jumps(h, policy, todo, mh.knowledge)) == want
    lazy = dd.from_pandas(h.sample(frac=1, random_state=1), npartitions=3)
    assert as_dict(value_jumps(lazy, policy, todo, mh.knowledge)) == want


def test_the_generators_own_history_has_none(case):
    """The generator follows the model: nothing to say, on either path."""
    mh, _, _, _, policy, _, _ = case
    assert value_jumps(mh.history, policy, [2, 3], mh.knowledge).empty
    assert value_jumps(dd.from_pandas(mh.history, npartitions=2), policy, [2, 3], mh.knowledge).empty


def test_a_first_view_alone_is_not_read(case):
    """Releasing view 1 alone: no respondent has an earlier row, so nothing is read or moved."""
    mh, h, _, _, policy, _, _ = case
    lazy = dd.from_pandas(h, npartitions=2)
    with mock.patch("dpriv.value_jumps.by_bucket", side_effect=AssertionError("read")):
        assert value_jumps(lazy, policy, [1], mh.knowledge).empty
    assert as_dict(value_jumps(lazy, policy, [1, 2], mh.knowledge)) == expected(h, *case[2:4], [1, 2])


def test_without_fixed_tables_only_returns_after_an_exit_are_counted(case):
    """IE knowledge is mined from the data: no change is ruled out by it."""
    mh, h, _, _, policy, _, _ = case
    found = as_dict(value_jumps(h, policy, [3], None))
    assert sum(found.values()) == 3 and all(e for (_, e, _, _) in found)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # as the command line has it (dask's, pandas 3.1)
def test_a_release_warns_naming_view_counts_and_values_but_no_id(case):
    mh, h, zero, values, _, folder, policy_path = case
    src = folder / "edited.parquet"
    h.to_parquet(src, index=False)
    led = folder / "L"
    res = CliRunner().invoke(app, ["release", str(src), "--ledger", str(led), "--policy", str(policy_path)])
    assert res.exit_code == 0, res.output
    said = [line for line in res.output.splitlines() if line.startswith("warning: view 3:")]
    assert len(said) == 1, res.output
    text = said[0]
    assert "3 respondent(s) recorded with an exit value ([release] exit_values) in an earlier view" in text
    assert "4 respondent(s) changed value since view 2 in a way the policy's sequential knowledge" in text
    assert " -> 'alzheimer_3' (" in text and " -> 'liver_1' (" in text
    assert "check the export" in text and "the release treats them as the data says" in text
    assert not re.search(rf"\b{ID_BASE // 1000}\d{{3}}\b", text)  # no respondent id
    assert "warning: view 2" not in res.output
    assert [r["index"] for r in Ledger(led).committed()] == [1, 2, 3]  # released as the data says
