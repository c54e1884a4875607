"""The retrospective adversary per partition of respondents on Dask equals the in-process one
exactly (issue 11, performance)."""

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from dpriv.adversary.masks import MasksAsOf
from dpriv.adversary.retro_parts import split
from dpriv.adversary.retrospective import retrospective_attack
from dpriv.attack import attack
from tests.test_adversary_retrospective import ledger_run  # noqa: F401 - the module fixture


def _frame(rows):
    return pd.DataFrame(rows)


@pytest.mark.slow
@pytest.mark.parametrize("partitions", [1, 3, 7])
@pytest.mark.parametrize("attendance", [None, 0.6])
def test_partitions_give_the_same_rows(ledger_run, partitions, attendance):  # noqa: F811
    mh, _, observed = ledger_run
    expected = _frame(retrospective_attack(observed, mh.knowledge, attendance=attendance))
    with dask.config.set(scheduler="sync"):
        got = _frame(
            retrospective_attack(observed, mh.knowledge, attendance=attendance, partitions=partitions)
        )
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert len(got) == 4 * 5 // 2


def test_masks_known_as_of_each_release_on_dask(ledger_run, client):  # noqa: F811
    """Deduction masks that tighten earlier emissions (a callable), on a distributed client."""
    mh, _, observed = ledger_run
    masks = MasksAsOf(observed, mh.knowledge, 1.0)
    expected = _frame(retrospective_attack(observed, mh.knowledge, allowed=masks, attendance=1.0))
    got = _frame(retrospective_attack(observed, mh.knowledge, allowed=masks, attendance=1.0, partitions=4))
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert expected["n_certain"].notna().all()


def test_split_puts_every_respondent_in_one_partition(ledger_run):  # noqa: F811
    _, _, observed = ledger_run
    parts = split(observed, 3)
    owner = {}
    for k, per_release in enumerate(parts):
        for o, pos in zip(observed, per_release):
            for r in o.respondent[pos]:
                assert owner.setdefault(r, k) == k
    for p, o in enumerate(observed):
        got = np.sort(np.concatenate([parts[k][p] for k in range(3)]))
        np.testing.assert_array_equal(got, np.arange(o.respondent.size))
    sizes = [len({r for o, pos in zip(observed, per) for r in o.respondent[pos]}) for per in parts]
    assert max(sizes) - min(sizes) <= 1
    with pytest.raises(Exception, match="partitions must be >= 1"):
        split(observed, 0)


@pytest.mark.slow  # a whole release or CLI run: the default run stays under 5 min of CPU
def test_attack_with_a_dask_history(tmp_path, ledger_run):  # noqa: F811
    """attack() given a Dask history runs the retrospective adversary per partition."""
    from dpriv.datasets import medical_history, write_history
    from dpriv.policy import ReleasePolicy
    from dpriv.release import release_history

    mh = medical_history(n_views=3, view_size=200, seed=3)
    path = write_history(tmp_path, mh, policy_extra={"privacy": {"max_suppression": 1.0}})
    policy = ReleasePolicy.from_toml(path, t=1.0, j=1.0, k=4, npartitions=1, max_suppression=1.0)
    led = release_history(mh.history, policy, tmp_path / "led")
    expected = attack(led, mh.history, policy, "dk", adversary="retrospective")
    with dask.config.set(scheduler="sync"):
        got = attack(led, dd.from_pandas(mh.history, npartitions=3), policy, "dk", adversary="retrospective")
    pd.testing.assert_frame_equal(got, expected, check_exact=True)


def _masks(kind, observed, knowledge):
    if kind is None:
        return None
    masks = MasksAsOf(observed, knowledge, 1.0)
    return masks(len(observed) - 1) if kind == "static" else masks


@pytest.mark.parametrize("kind", [None, "static", "as_of"])
def test_on_a_client_the_graph_holds_no_tables_nor_masks(ledger_run, client, kind):  # noqa: F811
    """The drill: on a distributed client the compiled BK^seq tables (order 3, ~19 MiB) were
    embedded in the graph of any history (Dask's "Sending large graph of size 19.73 MiB" for
    4 x 1,000 tuples), and the masks known as of each release, O(releases^2) tuples (7 MiB
    with the tables scattered, for 12 x 2,000). Both are scattered now: Dask's threshold
    lowered to 100 kB, the graph of these 4 x 300 tuples stays below it (it held ~0.2 MB of
    releases and masks). Same rows as in process."""
    import warnings

    from dpriv.adversary.compiled import CompiledTables

    mh, _, observed = ledger_run
    assert CompiledTables(mh.knowledge).flat.nbytes > 10 * 2**20  # what would make the graph large
    expected = _frame(
        retrospective_attack(
            observed, mh.knowledge, allowed=_masks(kind, observed, mh.knowledge), attendance=1.0
        )
    )
    with (
        warnings.catch_warnings(record=True) as caught,
        dask.config.set({"distributed.admin.large-graph-warning-threshold": "100kB"}),
    ):
        warnings.simplefilter("always")
        allowed = _masks(kind, observed, mh.knowledge)
        got = _frame(
            retrospective_attack(observed, mh.knowledge, allowed=allowed, attendance=1.0, partitions=2)
        )
    large = [str(w.message).splitlines()[0] for w in caught if "large graph" in str(w.message)]
    assert large == []
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert expected["n_certain"].isna().all() == (kind is None)


def test_static_masks_on_dask_without_a_client(ledger_run):  # noqa: F811
    """The same masks for every as-of release, one graph key sliced per as-of (local scheduler)."""
    mh, _, observed = ledger_run
    allowed = _masks("static", observed, mh.knowledge)
    expected = _frame(retrospective_attack(observed, mh.knowledge, allowed=allowed, attendance=1.0))
    with dask.config.set(scheduler="sync"):
        got = _frame(
            retrospective_attack(observed, mh.knowledge, allowed=allowed, attendance=1.0, partitions=3)
        )
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
