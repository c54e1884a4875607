"""What reaches the client during a Dask release (issue 13, item 1: nothing O(n) on the client).

A spy on the distributed client's gather records the bytes (``dask.sizeof``) of every result
that comes back, with the dpriv functions on the main thread's stack at that moment, while
:func:`dpriv.release.release_view` releases a 100,000-tuple view (10^6, marked slow) on the Dask path. The
release's steps (keys, shuffle, grouping, repair, CreateQIG, verify, PK and the state, the
metrics) must bring back at most 1 % of the view's bytes: the key histogram (bounded by the QI
grid), per-part reports, the number of suppressed tuples, the defender's tail counts, one
record of group sums per part and KPR's scalars. Before this test the repair gathered every
group's statistics and every leftover (56 % of the view's bytes) and CreateQIG its table
(5 %); until the metrics summed the groups per part, the utility group table and the
association loss gathered one row per QI-group (~13 %). Not covered here: the ledger write
(streamed through the client).

No graph may exceed 1 MB (Dask's "Sending large graph" warning, its threshold lowered from
10 MB): the BK^seq tables (19 MB for order 3) travel as one scattered future, the placed
leftovers and the QIG table not at all.
"""

import sys
import threading
import traceback
import warnings

import dask
import pytest
from dask.sizeof import sizeof
from distributed import Client

from dpriv.datasets import medical_history, medical_view_dask, write_history
from dpriv.inputs import prepared
from dpriv.policy import ReleasePolicy
from dpriv.release import release_view
from dpriv.sources import defender_knowledge
from dpriv.state import empty_state
from dpriv.validate import validate_view


def _dpriv_stack() -> list[str]:
    """Names of the dpriv functions on the main thread's stack (the caller of the gather)."""
    frame = sys._current_frames()[threading.main_thread().ident]
    return [f.name for f in traceback.extract_stack(frame) if "/dpriv/" in f.filename]


@pytest.mark.slow
@pytest.mark.parametrize("n", [100_000, pytest.param(1_000_000, marks=pytest.mark.heavy)])
def test_a_dask_release_brings_back_o1_percent_of_the_view_and_sends_no_large_graph(
    client, tmp_path, monkeypatch, n
):
    mh = medical_history(1, 200, seed=0)  # the paper setting's policy (domains, DK tables)
    policy = ReleasePolicy.from_toml(write_history(tmp_path, mh), t=0.5, j=0.8, max_suppression=1.0)
    view = client.persist(medical_view_dask(n, npartitions=4, seed=0).assign(view=1))
    view, policy = prepared(view, policy)
    summary = validate_view(view, policy)
    knowledge = defender_knowledge(policy)
    state = empty_state(policy, knowledge.order, view._meta[policy.id].dtype)
    view_bytes = int(view.memory_usage(deep=True).sum().compute())

    gathered: list[tuple[int, list[str]]] = []
    real = Client._gather

    async def spy(self, futures, *args, **kwargs):
        result = await real(self, futures, *args, **kwargs)
        gathered.append((sizeof(result), _dpriv_stack()))
        return result

    monkeypatch.setattr(Client, "_gather", spy)
    with (
        warnings.catch_warnings(record=True) as caught,
        dask.config.set({"distributed.admin.large-graph-warning-threshold": "1MB"}),
    ):
        warnings.simplefilter("always")
        metrics, released, new_state, _ = release_view(
            view, summary, policy, state, knowledge.tables, knowledge.order, 1, 4
        )
    monkeypatch.undo()

    large = [str(w.message).splitlines()[0] for w in caught if "large graph" in str(w.message)]
    assert large == []
    steps = gathered
    assert len(steps) >= 4  # the spy saw the steps' gathers (histogram, repair, verify, sums + tail, kpr)
    assert any("_repair_on_worker" in stack for _, stack in steps)
    assert any("release_sums_with" in stack for _, stack in steps)  # the sums and the tail: one gather
    total = sum(size for size, _ in steps)
    biggest = sorted(steps, key=lambda s: -s[0])[:3]
    assert total <= 0.01 * view_bytes, (total, view_bytes, biggest)
    # the release is whole: every tuple kept or suppressed, the state one row per kept tuple
    kept = int(released.shape[0].compute())
    assert 0.9 * n < kept == n - metrics.n_suppressed
    assert int(new_state.shape[0].compute()) == kept


@pytest.fixture(scope="module")
def local_cluster():
    """Two single-threaded in-process workers (the default fixture has one): gathers and
    transfers between workers happen as on a cluster."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        yield cluster


@pytest.mark.slow
def test_a_pandas_history_above_the_in_process_size_sends_no_large_graph(client, tmp_path):
    """The notebook drill: release_history of a pandas history of 60,000-tuple views (above
    SMALL_VIEW_ROWS: the Dask path) under the user's client sent each view in the graph (Dask's
    large-graph warning at every release); its row chunks are scattered now."""
    from dpriv.datasets.files import RECOMMENDED_DEFENSE
    from dpriv.release import SMALL_VIEW_ROWS, release_history

    n = 60_000
    assert n > SMALL_VIEW_ROWS
    mh = medical_history(2, n, seed=0)
    policy = ReleasePolicy.from_toml(write_history(tmp_path / "gen", mh, policy_extra=RECOMMENDED_DEFENSE))
    with (
        warnings.catch_warnings(record=True) as caught,
        dask.config.set({"distributed.admin.large-graph-warning-threshold": "1MB"}),
    ):
        warnings.simplefilter("always")
        led = release_history(mh.history, policy, tmp_path / "led")
    large = [str(w.message).splitlines()[0] for w in caught if "large graph" in str(w.message)]
    assert large == []
    assert [led.read_metrics(i)["n_original"] for i in (1, 2)] == [n, n]
