"""``small_view = "suppress"`` with k larger than every view (a new-user drill, s41): each
release was written fully suppressed, nothing published, and only a per-release line said so.
The policy asked for such views to be released empty, so it is no refusal; a warning before
the first release names the largest view, its size and k and the fix (in Python too, a
UserWarning), and ``dpriv release``'s closing lines say which releases published nothing.
"""

from __future__ import annotations

import pandas as pd
import pytest
from loose_history import release, write_loose

from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

EVERY = (
    "k = 500 exceeds every view of the history (the largest, view = {i}, holds 100 tuples): with "
    'small_view = "suppress" every view is released empty (every tuple suppressed, nothing published); '
    "choose k of at most 100 ([privacy] k or --k) to publish them"
)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return write_loose(tmp_path_factory.mktemp("hist"), n_views=2, view_size=100).folder


def test_k_above_every_view_under_suppress_warns_first_and_sums_up(history, tmp_path):
    largest = pd.read_parquet(history / "history.parquet")["view"].value_counts()
    assert set(largest) == {100}  # both views hold 100 tuples: the first is named the largest
    ledger = tmp_path / "L"
    res = release(history, ledger, "--k", "500", "--small-view", "suppress")
    assert res.exit_code == 0, res.output
    warning = f"warning: {EVERY.format(i=largest.index.min())}"
    assert warning in res.stderr, res.stderr
    assert res.stderr.index(warning) < res.stderr.index("release 1 has 100 tuple(s)")  # before any release
    assert (
        "published nothing: every release of this run (1, 2) had fewer tuples than k = 500, released "
        'fully suppressed (small_view = "suppress")\nledger: '
    ) in res.stdout
    led = Ledger(ledger)
    assert [led.read_metrics(i).n_released for i in (1, 2)] == [0, 0]  # what was said
    again = release(history, ledger, "--k", "500", "--small-view", "suppress")
    assert again.exit_code == 0, again.output
    assert "exceeds every view" not in again.stderr  # nothing left to release: nothing to warn of
    assert "published nothing" not in again.stdout


def test_the_same_warning_in_python(history, tmp_path):
    frame = pd.read_parquet(history / "history.parquet")
    policy = ReleasePolicy.from_toml(history / "policy.toml").with_overrides(k=500, small_view="suppress")
    with pytest.warns(UserWarning) as caught:
        led = release_history(frame, policy, tmp_path / "L")
    said = [str(w.message) for w in caught if "exceeds every view" in str(w.message)]
    assert said == [EVERY.format(i=1)]
    assert led.last_index() == 2 and led.read_metrics(2).small_view == "suppressed"


def test_one_small_view_is_summed_up_without_the_every_view_warning(history, tmp_path):
    frame = pd.read_parquet(history / "history.parquet")
    view2 = frame[frame["view"] == 2]
    frame = pd.concat([frame[frame["view"] == 1], view2.head(10)])  # view 2: 10 tuples
    frame.to_parquet(history / "h_small2.parquet", index=False)
    res = release(history, tmp_path / "L", "--k", "20", "--small-view", "suppress", data="h_small2.parquet")
    assert res.exit_code == 0, res.output
    assert "exceeds every view" not in res.stderr
    assert "warning: release 2 has 10 tuple(s), fewer than k = 20" in res.stderr
    assert (
        "published nothing of release(s) 2: fewer tuples than k = 20, released fully suppressed "
        '(small_view = "suppress")'
    ) in res.stdout
    assert Ledger(tmp_path / "L").read_metrics(1).n_released > 0


def test_k_above_every_view_is_still_refused_by_default(history, tmp_path):
    res = release(history, tmp_path / "L", "--k", "500")
    assert res.exit_code == 2
    assert "k = 500 exceeds every view of the history" in res.stderr
    assert "choose k of at most 100 ([privacy] k or --k); small_view" in res.stderr
    assert not (tmp_path / "L").exists()
