"""An operator's drill (s36, F8): the status line of a small history ("600 tuples, no view left to
release: no Dask cluster started") was said before release_history checked the input, and then
the input was refused (duplicate ids within a view; text ids where the ledger holds integers,
counted "703 respondents" of 442 people). It is now held until the input passed the checks
(dpriv/input_checked.py): a refused input gets the refusal alone.
"""

import pytest
from typer.testing import CliRunner

from dpriv.cli import app
from dpriv.datasets import medical_history, write_history

LOOSE = {"privacy": {"k": 3, "t": 0.9, "j": 5, "max_suppression": 1}}

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # as the command line has it


def _said(res) -> list[str]:
    """The lines of stderr and stdout but the effective policy's."""
    return [line for line in res.output.splitlines() if not line.startswith(("  ", "effective policy"))]


@pytest.fixture
def week1(tmp_path):
    """A ledger holding week 1 of a 2-week history (60 tuples a week), and the history."""
    mh = medical_history(n_views=2, view_size=60, seed=0)
    policy = write_history(tmp_path, mh, policy_extra=LOOSE)
    led = tmp_path / "L"
    first = tmp_path / "week1.parquet"
    mh.history[mh.history["view"] == 1].to_parquet(first, index=False)
    res = CliRunner().invoke(app, ["release", str(first), "--ledger", str(led), "--policy", str(policy)])
    assert res.exit_code == 0, res.output
    return mh.history, led, policy


def _release(tmp_path, frame, led, policy):
    path = tmp_path / "in.parquet"
    frame.to_parquet(path, index=False)
    return CliRunner().invoke(app, ["release", str(path), "--ledger", str(led), "--policy", str(policy)])


def test_week_6_renumbered_as_1_is_refused_without_a_status_line_first(tmp_path, week1):
    history, led, policy = week1
    both = history.assign(view=1)  # week 1 and week 2 as one view 1: its ids twice
    res = _release(tmp_path, both, led, policy)
    assert res.exit_code == 2, res.output
    said = _said(res)
    assert len(said) == 1 and said[0].startswith("error: view = 1: duplicate 'respondent_id' within one"), (
        said
    )


def test_text_ids_on_an_integer_ledger_are_refused_without_a_count_of_respondents(tmp_path, week1):
    history, led, policy = week1
    res = _release(tmp_path, history.astype({"respondent_id": str}), led, policy)
    assert res.exit_code == 2, res.output
    said = _said(res)
    assert len(said) == 1 and said[0].startswith("error: id column 'respondent_id' is str"), said


def test_the_status_line_still_comes_before_the_release_and_before_nothing_to_release(tmp_path, week1):
    history, led, policy = week1
    people = history["respondent_id"].nunique()  # distinct ids of the ledger's state and of week 2
    res = _release(tmp_path, history, led, policy)
    assert res.exit_code == 0, res.output
    said = _said(res)
    status = f"120 tuples, one view left to release (60 tuples, {people} respondents): to be released"
    first = next(i for i, line in enumerate(said) if line.startswith("release "))  # the table's header
    assert [i for i, line in enumerate(said) if line.startswith(status)] == [0] and first > 0, said
    again = _said(_release(tmp_path, history, led, policy))
    assert again[0].startswith("120 tuples, no view left to release: no Dask cluster started"), again
    assert again[1] == "nothing to release: the ledger already holds releases 1..2", again
