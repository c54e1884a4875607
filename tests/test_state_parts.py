"""The state in the ledger as Parquet parts written by the workers (issue 13, item 4).

``state/<i>/`` holds one part per bucket of respondents (``stable_hash(id) % nbuckets``, the
number of buckets fixed by the number of respondents): the same files on both release paths
and for any partitioning, written into a temp folder renamed last (a failing part write
leaves the ledger at its last commit), and a ledger of an earlier version (one
``state.parquet``) still resumes to the same bytes.
"""

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from conftest import ledger_files

import dpriv.release as release_mod
import dpriv.state_parts as parts_mod
from dpriv._random import stable_hash
from dpriv.attack import attack
from dpriv.ledger import Ledger
from dpriv.release import release_history
from dpriv.state_parts import part_name, state_nbuckets, write_state

ALWAYS, NEVER = 10**12, -1  # SMALL_VIEW_ROWS forcing the in-process / the Dask path
PART = 150  # STATE_PART_ROWS of these tests: 2 to 8 buckets for views of 300 tuples


def run(history, policy, root, threshold, monkeypatch, **kw):
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", threshold)
    monkeypatch.setattr(parts_mod, "STATE_PART_ROWS", PART)
    return release_history(history, policy, root, npartitions=3, **kw)


def test_the_number_of_buckets_follows_the_respondents_not_the_partitions():
    assert [state_nbuckets(n) for n in (0, 1, 131_072, 131_073, 10**6)] == [1, 1, 1, 2, 8]
    # powers of two: a growing state keeps its count, or doubles it (each bucket splits in place)
    assert [state_nbuckets(k * 131_072 + 1) for k in (2, 3, 4, 8, 9)] == [4, 4, 8, 16, 16]
    assert part_name(0, 1) == "state.parquet" and part_name(12, 40) == "part-00012.parquet"


@pytest.mark.slow
def test_both_paths_write_the_same_parts(hist_4x300, tmp_path, monkeypatch):
    mh, policy = hist_4x300
    a = run(mh.history, policy, tmp_path / "a", ALWAYS, monkeypatch)
    b = run(mh.history, policy, tmp_path / "b", NEVER, monkeypatch)
    fa, fb = ledger_files(a.root), ledger_files(b.root)
    assert list(fa) == list(fb)
    for name in fa:
        assert fa[name] == fb[name], name
    # release 4: its state bound is (rows of state 3) + 300 > 4 * PART -> 8 parts on disk
    bound = len(a.read_state(3)) + 300
    parts = [f.name for f in a.state_files(4)]
    assert parts == [part_name(i, state_nbuckets(bound)) for i in range(state_nbuckets(bound))]
    assert bound > 4 * PART and len(parts) == 8
    # each part holds exactly the respondents of its bucket, sorted by id
    for i, f in enumerate(a.state_files(4)):
        ids = pd.read_parquet(f)["respondent_id"].to_numpy()
        assert (stable_hash(ids) % np.uint64(len(parts)) == i).all() and (np.diff(ids) > 0).all()
    assert sum(len(pd.read_parquet(f)) for f in a.state_files(4)) == len(a.read_state(4))
    assert len(b.read_state_dask(4).compute()) == len(a.read_state(4))
    # what a resumed CLI release starts from: every part's ids, not one file's
    from dpriv.cluster import ledger_start

    start = ledger_start(a.root, "respondent_id")
    assert start.committed == frozenset({1, 2, 3, 4})
    assert sorted(start.ids) == sorted(a.read_state(4)["respondent_id"])


def _cut(state: pd.DataFrame, nbuckets: int, empty_too: bool = True) -> dd.DataFrame:
    """A Dask frame of ``state`` (rows bucket after bucket) with one partition per bucket."""
    bucket = stable_hash(state["respondent_id"]) % np.uint64(nbuckets)
    pieces = [state[bucket == b] for b in range(nbuckets)]
    if empty_too:
        pieces.insert(1, state.iloc[:0])
    return dd.concat([dd.from_pandas(p, npartitions=1, sort=False) for p in pieces])


def test_the_parts_do_not_depend_on_the_partitions(hist_4x300, tmp_path, monkeypatch):
    mh, policy = hist_4x300
    led = run(mh.history[mh.history.view <= 2], policy, tmp_path / "led", ALWAYS, monkeypatch)
    state = led.read_state(2)
    nb = len(led.state_files(2))
    assert nb >= 3
    written = {}
    frames = {
        "pandas": state,
        "dask-1": dd.from_pandas(state, npartitions=1, sort=False),
        f"dask-{nb}": _cut(state, nb),
    }
    for name, frame in frames.items():
        folder = tmp_path / name
        folder.mkdir()
        parts = write_state(folder, frame, "respondent_id", nb)
        assert [p.bucket for p in parts] == list(range(nb)) and sum(p.rows for p in parts) == len(state)
        written[name] = {f.name: f.read_bytes() for f in sorted(folder.iterdir())}
    assert written["pandas"] == written["dask-1"] == written[f"dask-{nb}"]
    assert written["pandas"] == {f.name: f.read_bytes() for f in led.state_files(2)}
    # a bucket split over two partitions would be written twice: refused
    (tmp_path / "split").mkdir()
    with pytest.raises(ValueError, match="bucket .* more than one partition"):
        write_state(tmp_path / "split", dd.from_pandas(state, npartitions=5, sort=False), "respondent_id", nb)


@pytest.mark.slow
def test_a_failing_part_write_leaves_the_last_commit(hist_4x300, tmp_path, monkeypatch):
    mh, policy = hist_4x300
    clean = run(mh.history, policy, tmp_path / "clean", NEVER, monkeypatch)
    root = tmp_path / "led"
    run(mh.history, policy, root, NEVER, monkeypatch, until=1)
    manifest = (root / "manifest.json").read_bytes()
    real, seen = parts_mod.write_bucket, []

    def failing(folder, part, bucket, nbuckets):
        seen.append(real(folder, part, bucket, nbuckets))  # the part is on disk, then the crash
        if bucket == 1:
            raise OSError("disk full")
        return seen[-1]

    monkeypatch.setattr(parts_mod, "write_bucket", failing)
    with pytest.raises(OSError, match="disk full"):
        run(mh.history, policy, root, NEVER, monkeypatch)
    assert any(w.bucket == 1 for w in seen)  # a part was written before the failure
    assert Ledger(root).last_index() == 1 and (root / "manifest.json").read_bytes() == manifest
    assert sorted(p.name for p in (root / "state").iterdir()) == ["1"]  # no state/2, no temp folder
    # a killed client leaves its temp folder behind: the next run removes it
    stale = root / "state" / ".2.k1lled00.dpriv-tmp"
    stale.mkdir()
    (stale / "part-00000.parquet").write_bytes(b"half")
    monkeypatch.setattr(parts_mod, "write_bucket", real)
    resumed = run(mh.history, policy, root, NEVER, monkeypatch)
    assert not stale.exists()
    assert ledger_files(resumed.root) == ledger_files(clean.root)


@pytest.mark.slow
def test_a_failing_view_write_while_the_parts_are_written_leaves_no_state(hist_4x300, tmp_path, monkeypatch):
    import dpriv.ledger as ledger_mod

    mh, policy = hist_4x300
    root = tmp_path / "led"
    run(mh.history, policy, root, NEVER, monkeypatch, until=1)
    manifest = (root / "manifest.json").read_bytes()
    real, parts = ledger_mod.write_parquet, []

    def failing(path, frame, **kw):
        if "view.parquet" in path.name:  # written under a temp name (dpriv.ledger_written.staged)
            raise OSError("disk full")
        parts.append(path.name)
        return real(path, frame, **kw)

    monkeypatch.setattr(ledger_mod, "write_parquet", failing)  # the view
    monkeypatch.setattr(parts_mod, "write_parquet", failing)  # the state's parts
    with pytest.raises(OSError, match="disk full"):
        run(mh.history, policy, root, NEVER, monkeypatch, until=2)
    assert parts and all(p.startswith("part-") for p in parts)  # the parts were being written
    assert Ledger(root).last_index() == 1 and (root / "manifest.json").read_bytes() == manifest
    assert sorted(p.name for p in (root / "state").iterdir()) == ["1"]


@pytest.mark.slow
@pytest.mark.parametrize("threshold", [ALWAYS, NEVER])
def test_a_ledger_with_one_state_file_resumes_to_the_same_bytes(hist_4x300, tmp_path, monkeypatch, threshold):
    """An earlier dpriv wrote ``state/<i>/state.parquet`` (dictionary pages, the rows in its own
    bucket order); resuming from it gives the files of an uninterrupted ledger."""
    mh, policy = hist_4x300
    ref = run(mh.history, policy, tmp_path / "ref", ALWAYS, monkeypatch)
    root = tmp_path / "old"
    run(mh.history, policy, root, ALWAYS, monkeypatch, until=2)
    state = Ledger(root).read_state(2)
    for f in Ledger(root).state_files(2):
        f.unlink()
    old = state.iloc[np.argsort(stable_hash(state["respondent_id"]) % np.uint64(7), kind="stable")]
    old.to_parquet(root / "state" / "2" / "state.parquet", index=False)  # as pandas writes it
    led = Ledger(root)
    pd.testing.assert_frame_equal(led.read_state(2), old.reset_index(drop=True))
    assert len(led.read_state_dask(2).compute()) == len(state)
    resumed = run(mh.history, policy, root, threshold, monkeypatch)
    got, want = ledger_files(resumed.root), ledger_files(ref.root)
    assert set(got) - set(want) == {"state/2/state.parquet"}
    for name in want:
        if not name.startswith("state/2/"):
            assert got[name] == want[name], name
    # the adversary reads the old state like the new one (the membership it assumes known)
    a = resumed.read_state(2).sort_values("respondent_id").reset_index(drop=True)
    b = ref.read_state(2).sort_values("respondent_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    if threshold == ALWAYS:
        gain = attack(resumed, mh.history, policy, "dk", deductions=False)
        pd.testing.assert_frame_equal(gain, attack(ref, mh.history, policy, "dk", deductions=False))
        assert gain["adversary_gain"].notna().all() and len(gain) == 4


def test_the_workers_write_the_parts_and_nothing_of_the_state_reaches_the_client(hist_4x300, tmp_path):
    """Under a distributed client the parts are written by the tasks holding them: the client
    gathers only the list of parts (bucket, rows, name), a tiny fraction of the state."""
    from dask.sizeof import sizeof
    from distributed import Client, LocalCluster

    from dpriv.state import empty_state
    from dpriv.state_parts import staged_state

    _, policy = hist_4x300
    n, nb = 20_000, 4
    rng = np.random.default_rng(2)
    state = empty_state(policy, 3).reindex(range(n))
    state["respondent_id"] = rng.permutation(10 * n)[:n]
    for c in state.columns[1:]:
        state[c] = rng.random(n) if state[c].dtype == float else rng.integers(0, 9, n)
    bucket = stable_hash(state["respondent_id"]) % np.uint64(nb)
    state = state.iloc[np.lexsort((state["respondent_id"].to_numpy(), bucket))].reset_index(drop=True)
    state = state.astype(empty_state(policy, 3).dtypes.to_dict())
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as lc:
        with Client(lc) as client:
            frame = client.persist(_cut(state, nb, empty_too=False))
            gathered = []
            real = Client.gather

            def spy(self, futures, *a, **k):
                out = real(self, futures, *a, **k)
                if not k.get("asynchronous") and not getattr(self, "asynchronous", False):
                    gathered.append(sizeof(out))
                return out

            Client.gather = spy
            try:
                with staged_state(tmp_path / "state" / "1", frame, "respondent_id", nb):
                    pass
            finally:
                Client.gather = real
    files = sorted((tmp_path / "state" / "1").iterdir())
    assert [f.name for f in files] == [part_name(b, nb) for b in range(nb)]
    back = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    pd.testing.assert_frame_equal(back, state)
    assert sum(gathered) < 0.01 * state.memory_usage(deep=True).sum(), gathered
    assert [p.name for p in (tmp_path / "state").iterdir()] == ["1"]  # no temp folder left


@pytest.mark.slow
def test_a_resumed_history_takes_the_state_where_it_lies(hist_4x300, tmp_path, monkeypatch):
    """The manifest records each state's bucket count: a resumed release reads the parts as one
    partition per bucket (partition b = bucket b) and joins them where they lie; the ledger is
    the uninterrupted one, byte for byte. Without the count (a ledger of an earlier dpriv) or
    with a bucket's part missing, the state is read by row groups, its buckets unknown."""
    mh, policy = hist_4x300
    ref = run(mh.history, policy, tmp_path / "ref", NEVER, monkeypatch)
    root = tmp_path / "resumed"
    run(mh.history, policy, root, NEVER, monkeypatch, until=3)
    led = Ledger(root)
    n = led.committed()[-1]["state_buckets"]
    assert n == state_nbuckets(len(led.read_state(2)) + 300) == len(led.state_files(3)) >= 4
    held = led.held_state(3)
    assert (held.buckets, held.rows, held.frame.npartitions) == (n, len(led.read_state(3)), n)
    for b, part in enumerate(held.frame.to_delayed()):
        ids = part.compute()["respondent_id"].to_numpy()
        assert len(ids) and (stable_hash(ids) % np.uint64(n) == b).all()
    import dpriv.rbk as rbk_mod

    joined = []  # the held counts the rbk join was given
    real = rbk_mod.by_bucket
    monkeypatch.setattr(
        rbk_mod, "by_bucket", lambda *a, **kw: joined.append(kw.get("held")) or real(*a, **kw)
    )
    resumed = run(mh.history, policy, root, NEVER, monkeypatch)
    assert joined[:2] == [n, None]  # release 4: the state where it lies, the view cut into its buckets
    got, want = ledger_files(resumed.root), ledger_files(ref.root)
    assert list(got) == list(want)
    for name in want:
        assert got[name] == want[name], name
    # no count recorded, or a bucket without its part: buckets unknown, the same rows
    assert parts_mod.held_state(led.state_files(3), None).buckets is None
    assert parts_mod.held_state(led.state_files(3)[1:], n).buckets is None
    rows = parts_mod.held_state(led.state_files(3), None).frame.compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(rows, held.frame.compute().reset_index(drop=True), check_dtype=False)
