"""A week whose ids are written in another format (dpriv/new_ids.py, dpriv/id_format.py).

An operator drill (session 33): a ledger of text ids (``'3977'``) got a week 4 whose ids were
``'R003977'``; ``dpriv release`` exited 0 without a word, every respondent of week 4 was
released as a first-timer (state 5,448 -> 10,448; max JS 0.55 instead of 1.25). Numeric ids
turned text were refused, but with advice (``pd.to_numeric``) that fails on ``'R3977'`` and
without naming the view. Now such a view is refused (exit 2, nothing written) naming the view,
the counts and the ids' shapes (never an id), unless ``--allow-new-ids``.
"""

from __future__ import annotations

import shutil

import dask.dataframe as dd
import pandas as pd
import pytest
from typer.testing import CliRunner

import dpriv.new_ids as new_ids
from dpriv.cli import app
from dpriv.datasets import medical_history, write_history
from dpriv.id_format import SAMPLE, sample, shape_of
from dpriv.ledger import Ledger
from dpriv.new_ids import EXPECTED_KNOWN, KnownIds, Overlap, new_per_view, overlaps
from dpriv.policy import ReleasePolicy
from dpriv.state_buckets import state_buckets

LOOSE = {"privacy": {"k": 5, "t": 0.5, "j": 1.5, "max_suppression": 1.0}}
ID = "respondent_id"


def snapshot(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def release(history, root, base, *extra):
    args = ["release", str(history), "--ledger", str(root), "--policy", str(base / "policy.toml"), *extra]
    return CliRunner().invoke(app, args)


def renamed(hist: pd.DataFrame, view: int = 4) -> pd.DataFrame:
    """``hist`` with the ids of ``view`` written 'R' + 6 digits (the drill's new export)."""
    out = hist.astype({ID: str})
    at = out["view"] == view
    out.loc[at, ID] = "R" + out.loc[at, ID].str.zfill(6)
    return out


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A generated 4-view history (60 tuples a view, text ids) and a ledger of its views 1..3."""
    out = tmp_path_factory.mktemp("newids")
    write_history(out, medical_history(n_views=4, view_size=60, seed=3), policy_extra=LOOSE)
    hist = pd.read_parquet(out / "history.parquet").astype({ID: str})
    hist.to_parquet(out / "text.parquet", index=False)
    hist[hist["view"] <= 3].to_parquet(out / "first3.parquet", index=False)
    renamed(hist).to_parquet(out / "renamed.parquet", index=False)
    res = release(out / "first3.parquet", out / "L3", out)
    assert res.exit_code == 0, res.output
    return out


def test_a_week_of_ids_in_another_format_is_refused_naming_view_counts_and_shapes(base, tmp_path):
    """The drill: exit 0, week 4 released as if nobody had a history. Now exit 2, nothing written."""
    root = tmp_path / "L"
    shutil.copytree(base / "L3", root)
    before = snapshot(root)
    res = release(base / "renamed.parquet", root, base)
    assert res.exit_code == 2, res.output
    known = Ledger(root).held_state(3).rows
    assert (
        f"error: view 4: none of its 60 ids is among the {known} respondents known (the ledger's "
        "state), where "
    ) in res.output
    assert (
        "% of the tuples of views 2..3 were of respondents seen before; its ids look like 1 letter + 6 "
        in (res.output)
    )
    assert "digits, the known ones like 1-2 digits. Were the ids of view 4 written in another format?" in (
        res.output
    )
    assert "the sequential defense would be off for view 4. Nothing was released; give view 4 the ids" in (
        res.output
    )
    assert "run again with --allow-new-ids (release_history(..., allow_new_ids=True))" in res.output
    assert "R0" not in res.output  # no id printed, only their shape
    assert snapshot(root) == before


def test_allow_new_ids_releases_them_as_new_respondents(base, tmp_path):
    root = tmp_path / "L"
    shutil.copytree(base / "L3", root)
    res = release(base / "renamed.parquet", root, base, "--allow-new-ids")
    assert res.exit_code == 0, res.output
    led = Ledger(root)
    assert led.held_state(4).rows == led.held_state(3).rows + 60  # every one of them new


def test_the_same_history_released_in_one_run_is_refused_before_any_release(base, tmp_path):
    res = release(base / "renamed.parquet", tmp_path / "L", base)
    assert res.exit_code == 2, res.output
    assert "error: view 4: none of its 60 ids is among the " in res.output
    assert "respondents known (views 1..3 of this run)" in res.output
    assert not (tmp_path / "L").exists()


def test_the_week_in_the_earlier_format_is_released(base, tmp_path):
    root = tmp_path / "L"
    shutil.copytree(base / "L3", root)
    res = release(base / "text.parquet", root, base)
    assert res.exit_code == 0, res.output
    assert (root / "releases" / "4" / "view.parquet").is_file()


@pytest.mark.parametrize("attendance", [1.0, 0.5, 0.2])
def test_the_generators_histories_are_never_refused(attendance):
    """The rule's bounds against the medical generator's overlap (24 views): at attendance 1.0
    each view shares 87-100 % of its ids with the views before it, 50-94 % at 0.5, 19-93 % at
    0.2 (docs/ledger.md "New ids"); none comes near "fewer than 1 %"."""
    hist = medical_history(n_views=24, view_size=200, attendance=attendance, seed=2).history
    policy = ReleasePolicy(id=ID, time="view", qi=["age"], sensitive="exam_result")
    sizes = hist.groupby("view").size().to_dict()
    todo = list(range(1, 25))
    found = overlaps(sizes, new_per_view(hist, policy, todo, None), set(), 0, todo)
    assert not any(o.suspicious for o in found)
    shares = [o.shared / o.ids for o in found[1:]]
    assert min(shares) > 0.15  # 15 x the refusal bound


def test_the_rule():
    """Refused: almost nothing known after views that overlapped. Not: the second view (no
    earlier overlap to judge by), views that never overlapped, a view too small to tell."""
    assert Overlap(4, 500, 563, 0, 470, 500).suspicious
    assert Overlap(4, 500, 563, 4, 470, 500).suspicious  # 4 < 1 % of 500
    assert not Overlap(4, 500, 563, 5, 470, 500).suspicious
    assert not Overlap(2, 500, 500, 0, 0, 0).suspicious  # view 2: nothing before to compare
    assert not Overlap(
        4, 500, 1500, 0, 10, 1000
    ).suspicious  # earlier views shared 1 %: a fresh sample each week
    small = 2 * EXPECTED_KNOWN - 1  # at a 50 % earlier share: fewer than 10 expected known
    assert not Overlap(4, small, 563, 0, 250, 500).suspicious
    assert Overlap(4, small + 1, 563, 0, 250, 500).suspicious
    # committed views 1..3 of 60 tuples and a state of 70 respondents: 110 of 120 returned
    (o,) = overlaps({1: 60, 2: 60, 3: 60, 4: 60}, {4: 60}, {1, 2, 3}, 70, [4])
    assert (o.known, o.shared, o.returned, o.earlier) == (70, 0, 110, 120) and o.suspicious


def test_the_count_on_dask_matches_the_count_in_process(base, tmp_path, monkeypatch):
    """The Dask path (a large state, or a Dask history): the views' ids cut into the state's
    buckets, counts per view and bucket to the client; the same counts as in process."""
    led = Ledger(base / "L3")
    policy = led.policy()
    hist = renamed(pd.read_parquet(base / "text.parquet"))
    hist.loc[(hist["view"] == 4).to_numpy().nonzero()[0][:3], ID] = hist[ID].iloc[0]  # 3 known ids
    known = KnownIds.of(led, led.held_state(3))
    here = new_per_view(hist, policy, [4], known)
    monkeypatch.setattr(new_ids, "SMALL_STATE", 0)
    assert new_per_view(dd.from_pandas(hist, npartitions=3), policy, [4], known) == here == {4: 57}
    assert new_per_view(hist, policy, [4], known) == here  # a pandas history, a large state
    unknown = KnownIds(known.files, known.rows, None)  # parts that are not known to be buckets
    assert new_per_view(dd.from_pandas(hist, npartitions=3), policy, [4], unknown) == here
    ids = pd.concat([pd.read_parquet(f, columns=[ID]) for f in known.files], ignore_index=True)
    parts = []  # the state in 3 buckets of the id, one part each, as a larger release writes it
    for b in range(3):
        parts.append(tmp_path / f"part-{b}.parquet")
        ids[state_buckets(ids[ID], 3) == b].to_parquet(parts[-1], index=False)
    bucketed = KnownIds(parts, known.rows, 3)
    assert new_per_view(dd.from_pandas(hist, npartitions=2), policy, [4], bucketed) == here
    everything = list(range(1, 5))
    first_run = new_per_view(dd.from_pandas(hist, npartitions=3), policy, everything, None)
    assert first_run == new_per_view(hist, policy, everything, None)
    assert first_run[1] == 60 and first_run[4] == 57


@pytest.mark.slow  # a distributed cluster
def test_the_count_runs_on_a_distributed_cluster(base, client):
    led = Ledger(base / "L3")
    hist = dd.from_pandas(renamed(pd.read_parquet(base / "text.parquet")), npartitions=3)
    known = KnownIds.of(led, led.held_state(3))
    assert new_per_view(hist, led.policy(), [4], known) == {4: 60}


@pytest.mark.parametrize("as_dask", [False, True])
@pytest.mark.parametrize("as_text", [False, True])
def test_the_shape_spans_every_id_not_only_the_first(as_dask, as_text):
    """A drill: ids 1..4081 (sorted, as a state is) were described as "1-2 digits", the shape of
    the first 20; the sample now holds the shortest and longest of every partition."""
    ids = pd.Series(range(1, 4082))
    ids = ids.astype(str) if as_text else ids
    col = dd.from_pandas(ids, npartitions=3) if as_dask else ids
    assert shape_of(sample(col)) == ("1-4 digits" if as_text else "integers of 1-4 digits")
    assert len(sample(col)) <= 2 * SAMPLE  # a sample, not the column


def test_the_known_ids_shape_spans_every_id_of_the_state(base, tmp_path):
    """A drill: a ledger of ids of 1-4 digits was said to know ids "like 1-2 digits" (the first
    ids of its state). One respondent's id has 4 digits here: the refusal names 1-4 digits."""
    hist = pd.read_parquet(base / "text.parquet")
    top = hist.loc[hist["view"] <= 3, ID].astype(int).max()
    hist[ID] = hist[ID].replace({str(top): str(top + 9000)})  # the only id of 4 digits
    hist[hist["view"] <= 3].to_parquet(tmp_path / "first3.parquet", index=False)
    renamed(hist).to_parquet(tmp_path / "renamed.parquet", index=False)
    root = tmp_path / "L"
    assert release(tmp_path / "first3.parquet", root, base).exit_code == 0
    known = Ledger(root).state_files(3)
    assert str(top + 9000) in set(pd.concat(pd.read_parquet(f, columns=[ID]) for f in known)[ID])
    res = release(tmp_path / "renamed.parquet", root, base)
    assert res.exit_code == 2, res.output
    assert "its ids look like 1 letter + 6 digits, the known ones like 1-4 digits. Were" in res.output
    assert str(top + 9000) not in res.output


def test_shapes_say_how_ids_are_written_without_an_id():
    assert shape_of(["R003977", "R000012"]) == "1 letter + 6 digits"
    assert shape_of(["3977", "12", "5"]) == "1-4 digits"
    assert shape_of([3977, 12]) == "integers of 2-4 digits"
    assert shape_of(["0b6f5e3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"]) == "36 characters: '-', digits and letters"
    assert shape_of(["AB-12", "AB-3", "7"]) == "2 letters + '-' + 1-2 digits or 1 digit"
