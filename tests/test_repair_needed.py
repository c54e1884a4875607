"""The repair's group statistics (dpriv.generalize): a pass over every grouped part that only
placing leftovers needs, so it is skipped when no range left one (issue 13: at 10^6 tuples
the top-down split usually leaves none) and taken, with the same result, when one did."""

import dask
import dask.dataframe as dd
import pytest

import dpriv.generalize as gen
from dpriv.datasets import medical_history, write_history
from dpriv.datasets.files import RECOMMENDED_DEFENSE
from dpriv.generalize import generalize_view
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL
from dpriv.state import attach_priors
from dpriv.validate import validate_view


@pytest.fixture(scope="module")
def first_view(tmp_path_factory):
    folder = tmp_path_factory.mktemp("repair")
    mh = medical_history(n_views=1, view_size=600, seed=3)
    policy = ReleasePolicy.from_toml(write_history(folder, mh, RECOMMENDED_DEFENSE))
    view = mh.history.drop(columns="view").reset_index(drop=True)
    policy, _ = policy.resolve(view)
    summary = validate_view(view, policy)
    return attach_priors(view, policy, "class", n_rows=summary.n_rows, notes=[]), policy, summary


def _run(view, policy, summary, monkeypatch, lazy: bool):
    """generalize_view on 2 ranges, counting the parts whose statistics were taken."""
    calls = []

    def spy(part, pol):
        calls.append(len(part))
        return stats(part, pol)

    stats = gen.range_stats
    monkeypatch.setattr(gen, "range_stats", spy)
    with dask.config.set(scheduler="sync"):
        data = dd.from_pandas(view, npartitions=2) if lazy else view
        out = generalize_view(data, policy, summary, npartitions=2)
        assigned = out.assigned.compute() if lazy else out.assigned
    monkeypatch.undo()
    return out, assigned, calls


@pytest.mark.parametrize("lazy", [False, True], ids=["pandas", "dask"])
def test_statistics_are_taken_only_for_leftovers(first_view, monkeypatch, lazy):
    view, policy, summary = first_view
    # t = 1, j = 1: every split half keeps (E9), the split leaves nothing to repair
    loose = policy.with_overrides(t=1.0, j=1.0)
    out, assigned, calls = _run(view, loose, summary, monkeypatch, lazy)
    assert calls == [] and out.n_suppressed == 0
    assert len(assigned) == len(view) and (assigned[LABEL] >= 0).all()
    # tighter thresholds leave 165 of the 600 (35 of them suppressed): statistics are taken
    tight = policy.with_overrides(t=0.3, j=0.6)
    plain = generalize_view(view, tight, summary, npartitions=2)
    out, assigned, calls = _run(view, tight, summary, monkeypatch, lazy)
    assert sum(calls) == len(view) and out.n_suppressed == 35  # every grouped row, once
    want = plain.assigned.sort_values(policy.id)[[policy.id, LABEL]].reset_index(drop=True)
    got = assigned.sort_values(policy.id)[[policy.id, LABEL]].reset_index(drop=True)
    assert got.equals(want) and out.n_suppressed == plain.n_suppressed


def test_a_part_for_placed_leftovers_only_when_some_were_placed(first_view):
    """The placed leftovers join the membership as one more part only when the repair placed
    some: no empty part for every later step (qig, pk, metrics) to visit."""
    view, policy, summary = first_view
    with dask.config.set(scheduler="sync"):
        data = dd.from_pandas(view, npartitions=2)
        loose = generalize_view(data, policy.with_overrides(t=1.0, j=1.0), summary, npartitions=2)
        tight = generalize_view(data, policy.with_overrides(t=0.3, j=0.6), summary, npartitions=2)
        sizes = tight.assigned.map_partitions(len).compute().tolist()
    assert loose.assigned.npartitions == 2  # the two ranges, nothing placed
    # two ranges and the 165 - 35 = 130 leftovers placed (the parts then hold whole groups: the
    # placed rows moved to the parts of their groups, so the count is over all three parts)
    assert tight.assigned.npartitions == 3 and sum(sizes) == len(view) - 35


@pytest.mark.parametrize("lazy", [False, True], ids=["pandas", "dask"])
def test_the_repair_is_one_typed_result_on_both_paths(first_view, monkeypatch, lazy):
    """The client's repair (pandas) and the worker task's (Dask) are one function with a named
    result: of the 165 leftovers of the tight case, 35 suppressed and 130 placed, each placed
    row labelled."""
    view, policy, summary = first_view
    seen = []
    real = gen._repair

    def spy(*args):
        seen.append(out := real(*args))
        return out

    monkeypatch.setattr(gen, "_repair", spy)
    tight = policy.with_overrides(t=0.3, j=0.6)
    with dask.config.set(scheduler="sync"):
        data = dd.from_pandas(view, npartitions=2) if lazy else view
        generalize_view(data, tight, summary, npartitions=2)
    (repair,) = seen
    assert isinstance(repair, gen.Repair)
    assert (repair.n_suppressed, repair.n_placed, len(repair.placed)) == (35, 130, 130)
    assert (repair.placed[LABEL] >= 0).all()
