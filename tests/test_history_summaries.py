"""history_summaries: every view's size, sensitive counts and digests in one pass over a history,
equal to validate_view of each view (the per-view oracle), on pandas and on Dask whatever the
partitions; k larger than a view is refused naming the view."""

import dask.dataframe as dd
import numpy as np
import pytest

from dpriv.errors import PolicyError
from dpriv.input_checks import history_summaries, resolve_policy
from dpriv.ledger_checks import check_views
from dpriv.validate import validate_view


@pytest.fixture(scope="module")
def resolved(hist_4x300):
    mh, policy = hist_4x300
    history = mh.history.sample(frac=1.0, random_state=3).reset_index(drop=True)  # views interleaved
    policy, _ = resolve_policy(history, policy)
    return history, policy


def _oracle(history, policy, i):
    view = history[history[policy.time] == i].reset_index(drop=True)
    return validate_view(view, policy)


@pytest.mark.parametrize("npartitions", [None, 1, 3, 7])
def test_summaries_equal_validate_view_of_each_view(resolved, npartitions):
    history, policy = resolved
    data = history if npartitions is None else dd.from_pandas(history, npartitions=npartitions, sort=False)
    got = history_summaries(data, policy, [1, 2, 3, 4])
    assert sorted(got) == [1, 2, 3, 4]
    for i, s in got.items():
        want = _oracle(history, policy, i)
        assert s.n_rows == want.n_rows == int((history[policy.time] == i).sum())
        np.testing.assert_array_equal(s.s_counts, want.s_counts)
        assert s.s_counts.sum() == s.n_rows
        assert (s.content, s.input_sha) == (want.content, want.input_sha)
    assert len({s.content for s in got.values()}) == 4  # the views differ, so do their digests


def test_k_larger_than_a_view_names_the_view(resolved, tmp_path):
    history, policy = resolved
    small = history[(history[policy.time] != 3) | (history.index % 50 == 0)]  # view 3: 6 or so rows
    n3 = int((small[policy.time] == 3).sum())
    strict = policy.with_overrides(k=n3 + 1)
    got = history_summaries(small, strict, [1, 2, 3, 4])
    assert got[3].n_rows == n3
    with pytest.raises(PolicyError, match=rf"^view = 3: k = {n3 + 1} is larger than the view \({n3} rows\)"):
        check_views(tmp_path / "no-ledger", got, strict)
    check_views(tmp_path / "no-ledger", got, strict.with_overrides(small_view="suppress"))
