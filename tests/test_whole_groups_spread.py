"""The homes of QI-groups spread over several parts are found once (dpriv.whole_groups).

Until s37 the labels of every part were counted twice when groups were spread: once in a
compute of the number of spread groups, then again by the split graph, which found the homes
anew (a persisted home was lost with the function's reference to it, "lost dependencies").
The homes are now persisted on the workers and held by the release until its qig step has
persisted. A small view whose groups ARE spread (4 Hilbert ranges and the repair's placed
leftovers) is released on Dask under a distributed client: each view's labels are counted
once per part, homes found once, and the ledger's bytes are those of the in-process release.
"""

import numpy as np
import pandas as pd
import pytest
from conftest import ledger_files
from distributed import get_task_stream

import dpriv.release as release_mod
from dpriv.release import release_history
from dpriv.released import LABEL
from dpriv.whole_groups import whole_groups

ALWAYS, NEVER = 10**12, -1  # SMALL_VIEW_ROWS forcing the in-process / the Dask path


def _names(stream) -> list[str]:
    """The function name of each task the stream recorded (a delayed call's key ``name-token``)."""
    names = []
    for task in stream.data:
        key = task["key"]
        key = key[0] if isinstance(key, tuple) else key
        names.append(str(key).rsplit("-", 1)[0])
    return names


@pytest.mark.slow
def test_a_view_of_spread_groups_counts_its_labels_once_and_gives_the_in_process_bytes(
    hist_4x300, client, tmp_path, monkeypatch
):
    mh, policy = hist_4x300
    history = mh.history[mh.history.view <= 2]
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", ALWAYS)
    a = release_history(history, policy, tmp_path / "a", npartitions=4)
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", NEVER)
    with get_task_stream(client) as stream:
        b = release_history(history, policy, tmp_path / "b", npartitions=4)
    names = _names(stream)
    assert names.count("_split") > 0  # the groups were spread: rows moved to their homes
    n_parts = names.count("_split") // 2  # per view: one split per part of the membership
    assert names.count("_homes") == 2, names.count("_homes")  # once per view, not twice
    assert names.count("_label_counts") == 2 * n_parts
    fa, fb = ledger_files(a.root), ledger_files(b.root)
    assert len(fa) >= 2 * 3 + 2 and list(fa) == list(fb)
    for name in fa:
        assert fa[name] == fb[name], name
    assert a.read_metrics(2)["n_original"] - a.read_metrics(2)["n_suppressed"] > 100


def test_whole_groups_finds_the_homes_once_under_a_client(client, monkeypatch):
    """whole_groups alone: the homes persisted and handed to the splits, nothing counted twice,
    and only the number of spread groups comes back to the client (not the homes: O(groups))."""
    import dask
    import dask.dataframe as dd
    from dask.sizeof import sizeof
    from distributed import Client

    rng = np.random.default_rng(0)
    n, n_labels = 4000, 1000
    rows = pd.DataFrame({"id": np.arange(n), LABEL: rng.integers(0, n_labels, size=n).astype(np.int64)})
    parts = [rows.iloc[i::4].reset_index(drop=True) for i in range(4)]  # groups spread over parts
    frame = dd.concat([dd.from_pandas(p, npartitions=1, sort=False) for p in parts])
    gathered: list[int] = []
    real = Client._gather

    async def spy(self, futures, *args, **kwargs):
        result = await real(self, futures, *args, **kwargs)
        gathered.append(sizeof(result))
        return result

    monkeypatch.setattr(Client, "_gather", spy)
    with get_task_stream(client) as stream:
        whole, held = whole_groups(frame)
        assert sum(gathered) < 1_000, gathered  # the homes of ~1,000 spread groups: ~16 KB
        (whole,) = dask.persist(whole)
        del held
    monkeypatch.undo()
    names = _names(stream)
    assert names.count("_homes") == 1 and names.count("_label_counts") == 4
    got = [whole.get_partition(i).compute() for i in range(4)]
    assert sorted(pd.concat(got)["id"]) == list(range(n))
    labels = [set(p[LABEL]) for p in got]  # each group in one part
    assert sum(len(s) for s in labels) == len(set().union(*labels)) == rows[LABEL].nunique()
