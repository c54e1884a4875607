"""A first release's priors looked up after Generalize's shuffle (:mod:`dpriv.first_priors`):
the shuffle carries no prior column and the release is the one of priors attached before."""

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpriv.release as release_mod
from dpriv.first_priors import FirstPriors, deferred, with_first_priors
from dpriv.generalize import generalize_view
from dpriv.hilbert.keys import HKEY, TIE, add_keys
from dpriv.rbk import revised_view
from dpriv.released import SCODE
from dpriv.state import empty_state
from dpriv.validate import validate_view

WINDOW = 3


def first_view(mh, n: int | None = None) -> pd.DataFrame:
    """View 1 of the history, rows in a shuffled order under a non-default index (as after a filter)."""
    view = mh.history[mh.history["view"] == 1]
    view = view.iloc[np.random.default_rng(3).permutation(len(view))]
    return view if n is None else view.iloc[:n]


def test_priors_land_where_revised_view_puts_them(hist_4x300):
    """Looked up on key-sorted rows (any index), the priors are the columns and bits
    :func:`revised_view` gives the same rows, in the same place (before the key columns)."""
    mh, policy = hist_4x300
    view = first_view(mh)
    state = empty_state(policy, WINDOW)
    expected = add_keys(revised_view(view, state, mh.knowledge, policy, WINDOW), policy)
    frame, priors = deferred(view, state, mh.knowledge, policy, WINDOW)
    assert not set(policy.prior_columns) & set(frame.columns)
    keyed = add_keys(frame, policy).sort_values([HKEY, TIE], kind="stable")
    got = with_first_priors(keyed, mh.knowledge, policy)
    pd.testing.assert_frame_equal(got, expected.loc[keyed.index], check_exact=True)
    assert list(got.columns[-3:]) == [HKEY, TIE, SCODE]
    # the priors vary with the class: a lookup in the wrong row order would be seen
    assert len(np.unique(got[policy.prior_columns].to_numpy(), axis=0)) > 1


@pytest.mark.parametrize("on_dask", [False, True])
@pytest.mark.parametrize("npartitions", [1, 4])
def test_generalize_with_priors_after_the_shuffle_is_the_same_release(hist_4x300, on_dask, npartitions):
    mh, policy = hist_4x300
    view = first_view(mh)
    state = empty_state(policy, WINDOW)
    summary = validate_view(view, policy)
    before = revised_view(view, state, mh.knowledge, policy, WINDOW)
    frame, priors = deferred(view, state, mh.knowledge, policy, WINDOW)
    if on_dask:
        before, frame = (dd.from_pandas(f, npartitions=npartitions, sort=False) for f in (before, frame))
    results = []
    with dask.config.set(scheduler="sync"):
        for f, p in ((before, None), (frame, priors)):
            r = generalize_view(f, policy, summary, npartitions=npartitions, priors=p)
            results.append((r, *dask.compute(r.released, r.assigned)))
    (old, old_released, old_assigned), (new, new_released, new_assigned) = results
    assert new.n_suppressed == old.n_suppressed and new.divisions == old.divisions
    pd.testing.assert_frame_equal(new_released, old_released, check_exact=True)
    pd.testing.assert_frame_equal(new_assigned, old_assigned, check_exact=True)
    assert set(policy.prior_columns) <= set(new_assigned.columns)
    assert len(new_released) > len(view) // 2


def spy_generalize(monkeypatch) -> list:
    """The columns of each frame :func:`dpriv.release.release_view` hands to Generalize."""
    seen, real = [], release_mod.generalize_view

    def spy(frame, *args, **kwargs):
        seen.append((list(frame.columns), kwargs.get("priors")))
        return real(frame, *args, **kwargs)

    monkeypatch.setattr(release_mod, "generalize_view", spy)
    return seen


def test_a_first_release_shuffles_no_prior_column(hist_4x300, tmp_path, monkeypatch):
    """Release 1 (empty state) hands Generalize the view without priors and their lookup;
    release 2 (a state: revised priors) the priors themselves."""
    mh, policy = hist_4x300
    seen = spy_generalize(monkeypatch)
    release_mod.release_history(mh.history, policy, tmp_path / "ledger", until=2)
    (first, lookup), (second, none) = seen
    assert isinstance(lookup, FirstPriors) and none is None
    assert not set(policy.prior_columns) & set(first)
    assert set(policy.prior_columns) <= set(second)


@pytest.mark.parametrize(
    "change", [{"prior_key": True}, {"release_format": "anatomy"}, "state", "view_priors"]
)
def test_priors_are_attached_first_when_something_reads_them_before(hist_4x300, change):
    """A Hilbert key on the prior, the Anatomy order, a state with rows or a view that holds
    prior columns already: no deferral (the priors are needed before the shuffle, or revised)."""
    mh, policy = hist_4x300
    view, state = first_view(mh, 40), empty_state(policy, WINDOW)
    assert deferred(view, state, mh.knowledge, policy, WINDOW) is not None
    if isinstance(change, dict):
        policy = policy.with_overrides(**change)
    elif change == "state":
        state = state.reindex([0])  # one respondent seen before
    else:
        view = view.assign(**{policy.prior_columns[0]: 1.0})
    assert deferred(view, state, mh.knowledge, policy, WINDOW) is None
