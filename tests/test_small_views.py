"""Small views in process (issue 13, item 5) and incremental IE knowledge (item 3).

A view of at most ``SMALL_VIEW_ROWS`` tuples is released in process (pandas, the same
kernels, no persist/wait per step); a larger one on Dask. The ledger must not tell them
apart: the same history released with the threshold forced both ways (and switching path
half way, as a resumed ledger does) gives the same files, byte for byte, but the timings.
"""

import numpy as np
import pandas as pd
import pytest
from conftest import ledger_files

import dpriv.release as release_mod
from dpriv.knowledge.revision import revise
from dpriv.release import release_history

ALWAYS, NEVER = 10**12, -1  # SMALL_VIEW_ROWS forcing the in-process / the Dask path


def run(history, policy, root, threshold, monkeypatch, **kw):
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", threshold)
    return release_history(history, policy, root, npartitions=3, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("release_format", ["generalized", pytest.param("anatomy", marks=pytest.mark.slow)])
def test_in_process_and_dask_paths_write_the_same_ledger(hist_4x300, tmp_path, monkeypatch, release_format):
    mh, policy = hist_4x300
    policy = policy.with_overrides(release_format=release_format)
    calls = []
    real = release_mod.release_view

    def spy(view, *args, **kwargs):
        calls.append(type(view).__module__.split(".")[0])
        return real(view, *args, **kwargs)

    monkeypatch.setattr(release_mod, "release_view", spy)
    a = run(mh.history, policy, tmp_path / "a", ALWAYS, monkeypatch)
    b = run(mh.history, policy, tmp_path / "b", NEVER, monkeypatch)
    assert calls == ["pandas"] * 4 + ["dask"] * 4  # each path really ran
    fa, fb = ledger_files(a.root), ledger_files(b.root)
    assert len(fa) >= 4 * 3 + 2 and list(fa) == list(fb)
    for name in fa:
        assert fa[name] == fb[name], name
    # something was released and revised (not four empty views)
    assert a.read_metrics(4)["n_original"] - a.read_metrics(4)["n_suppressed"] > 100
    assert a.read_state(4)["n_post"].max() >= 3


@pytest.mark.slow
def test_a_ledger_switching_path_on_resume_equals_an_uninterrupted_one(hist_4x300, tmp_path, monkeypatch):
    mh, policy = hist_4x300
    ref = run(mh.history, policy, tmp_path / "ref", ALWAYS, monkeypatch)
    # two releases in process, then resumed on Dask (the state read back from the ledger)
    run(mh.history, policy, tmp_path / "mix", ALWAYS, monkeypatch, until=2)
    mixed = run(mh.history, policy, tmp_path / "mix", NEVER, monkeypatch, until=3)
    # and back in process for the last one
    mixed = run(mh.history, policy, tmp_path / "mix", ALWAYS, monkeypatch)
    assert ledger_files(mixed.root) == ledger_files(ref.root)


@pytest.mark.slow
def test_string_ids_give_the_same_state_on_both_paths(hist_4x300, tmp_path, monkeypatch):
    mh, policy = hist_4x300
    history = mh.history.assign(respondent_id="r" + mh.history.respondent_id.astype(str))
    history = history[history.view <= 2]
    a = run(history, policy, tmp_path / "a", ALWAYS, monkeypatch)
    b = run(history, policy, tmp_path / "b", NEVER, monkeypatch)
    assert ledger_files(a.root) == ledger_files(b.root)
    ids = a.read_state(2)["respondent_id"]
    assert ids.str.startswith("r").all() and ids.is_unique


def test_the_state_comes_bucket_after_bucket_sorted_by_id(hist_4x300, tmp_path, monkeypatch):
    import dpriv.state_parts as parts_mod
    from dpriv._random import stable_hash

    mh, policy = hist_4x300
    # 4 buckets before release 2: at most 300 + 300 respondents, 200 a part -> 3 -> a power of two
    monkeypatch.setattr(parts_mod, "STATE_PART_ROWS", 200)
    led = run(mh.history[mh.history.view <= 2], policy, tmp_path / "a", ALWAYS, monkeypatch)
    names = [f.name for f in led.state_files(2)]
    assert names == [f"part-0000{b}.parquet" for b in range(4)]
    ids = led.read_state(2)["respondent_id"].to_numpy()
    bucket = (pd.util.hash_array(ids, categorize=False) % 4).astype(int)
    # each part holds one bucket, in order
    assert [set(led.read_state(2).loc[bucket == b, "respondent_id"]) for b in range(4)] == [
        set(pd.read_parquet(f)["respondent_id"]) for f in led.state_files(2)
    ]
    assert np.array_equal(bucket, (stable_hash(ids) % np.uint64(4)).astype(int))
    assert (np.diff(bucket) >= 0).all() and len(np.unique(bucket)) == 4
    for b in range(4):
        assert (np.diff(ids[bucket == b]) > 0).all()


def test_the_revised_prior_of_a_respondent_does_not_depend_on_her_batch(hist_4x300):
    """RBK (E7) of each row alone equals its RBK in a batch, to the last bit (the dense
    contraction is per row; a BLAS product blocked by the batch's shape did not)."""
    mh, _ = hist_4x300
    tables = mh.knowledge
    rng = np.random.default_rng(3)
    n, w, m = 40, tables.order, len(mh.values)
    hist = rng.random((n, w, m)) * (rng.random((n, w, m)) < 0.8)  # dense enough for the dense path
    hist /= hist.sum(axis=2, keepdims=True)
    lengths = np.full(n, w)
    cls = rng.integers(0, tables.tables[0].shape[0], n)
    fallback = tables.tables[0][cls, 0]
    batch = revise(hist, lengths, cls, tables, fallback, method="dense")
    for i in range(n):
        one = slice(i, i + 1)
        alone = revise(hist[one], lengths[one], cls[one], tables, fallback[one], method="dense")
        assert np.array_equal(alone[0], batch[i]), i
    # and it is the (E7) contraction: the order-w table weighted by the joint of the window
    joint = np.einsum("a,b,c->abc", *hist[0]).reshape(-1)
    num = joint @ tables.tables[w][cls[0]]
    if num.sum() > 0:
        np.testing.assert_allclose(batch[0], num / num.sum(), rtol=1e-12, atol=1e-15)


def test_the_threshold_picks_the_path(hist_4x300, monkeypatch):
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", 100)
    monkeypatch.setattr(release_mod, "SMALL_STATE_ROWS", 10)
    assert release_mod.in_process(100, 10) and not release_mod.in_process(101, 10)
    assert not release_mod.in_process(5, 11)


def test_collected_takes_a_small_dask_history_into_the_process(hist_4x300, monkeypatch):
    import dask.dataframe as dd

    history = hist_4x300[0].history
    lazy = dd.from_pandas(history, npartitions=3, sort=False)
    sizes = history.groupby("view").size().tolist()  # 4 views of 300
    got = release_mod.collected(lazy, sizes)
    assert isinstance(got, pd.DataFrame)
    pd.testing.assert_frame_equal(got, lazy.compute().reset_index(drop=True))  # read whole, in order
    assert release_mod.collected(history, sizes) is history  # pandas passes through
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", 299)  # one view too large: stays on Dask
    assert release_mod.collected(lazy, sizes) is lazy
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", 300)
    monkeypatch.setattr(release_mod, "SMALL_STATE_ROWS", 1199)  # the history too large: likewise
    assert release_mod.collected(lazy, sizes) is lazy
    monkeypatch.setattr(release_mod, "SMALL_STATE_ROWS", 1200)
    assert isinstance(release_mod.collected(lazy, sizes), pd.DataFrame)


def test_a_dask_history_gives_the_ledger_of_the_pandas_one(hist_4x300, tmp_path):
    import dask.dataframe as dd

    mh, policy = hist_4x300
    lazy = dd.from_pandas(mh.history, npartitions=3, sort=False)
    release_history(lazy, policy, tmp_path / "dask", until=2)
    release_history(mh.history, policy, tmp_path / "pandas", until=2)
    assert ledger_files(tmp_path / "dask") == ledger_files(tmp_path / "pandas")


# --------------------------------------------------------------------- incremental IE knowledge


def test_ie_tables_counted_view_by_view_equal_the_full_re_mine_at_every_release(hist_4x300):
    from dpriv.sources import defender_knowledge

    mh, policy = hist_4x300
    policy = policy.with_overrides(knowledge={"defender": "ie"})
    knowledge = defender_knowledge(policy)
    assert knowledge.tables is None and knowledge.order == 3
    for start in (1, 3):  # a fresh loop, and a loop resumed before release 3
        tracker = knowledge.tracker(mh.history, policy, start)
        for i in range(start, 6):  # view 5 does not exist: the tables after the last view
            full = knowledge.at(mh.history, policy, i)
            got = tracker.tables()
            assert len(got.tables) == len(full.tables) == 4
            for a, b in zip(got.tables, full.tables):
                assert a.shape == b.shape and np.array_equal(a, b)
            if i < 5:
                tracker.add(mh.history[mh.history.view == i])
    # an independent count: the order-1 table of release 5 from the transitions themselves
    h = mh.history.sort_values(["respondent_id", "view"])
    prev = h.groupby("respondent_id").exam_result.shift()
    pairs = pd.crosstab(prev[prev.notna()], h.exam_result[prev.notna()])
    values = [str(v) for v in policy.sensitive_domain]
    a, b = values.index(pairs.index[0]), values.index(pairs.columns[pairs.iloc[0].argmax()])
    row = got.tables[1][0, a]
    assert row[b] == pytest.approx(pairs.iloc[0].max() / pairs.iloc[0].sum())
    # before any view: uniform BK^sv, no sequential knowledge
    first = knowledge.tracker(mh.history, policy, 1).tables()
    assert np.allclose(first.tables[0], 1 / len(values)) and not first.tables[3].any()


@pytest.mark.slow
def test_ie_release_resumed_equals_uninterrupted_and_never_re_mines(hist_4x300, tmp_path, monkeypatch):
    from dpriv.sources import DefenderKnowledge

    mh, policy = hist_4x300
    policy = policy.with_overrides(knowledge={"defender": "ie"})
    ref = run(mh.history, policy, tmp_path / "ref", ALWAYS, monkeypatch)
    mined = []
    real = DefenderKnowledge.at
    monkeypatch.setattr(DefenderKnowledge, "at", lambda *a, **k: mined.append(1) or real(*a, **k))
    run(mh.history, policy, tmp_path / "r", ALWAYS, monkeypatch, until=2)
    resumed = run(mh.history, policy, tmp_path / "r", NEVER, monkeypatch)
    assert mined == []  # the release loop counts view by view; it never re-mines the past
    assert ledger_files(resumed.root) == ledger_files(ref.root)
    # IE knowledge did revise: returning respondents' priors are not BK^sv
    assert ref.read_state(4)["n_post"].max() >= 3
