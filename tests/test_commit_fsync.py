"""A commit's files are on disk before anything names them (docs/ledger.md, "Writing: manifest
last, atomically"): every file of release ``i`` (the view, the state's parts, metrics.json) is
fsync'ed before the record of the commit (``.dpriv-written.json``) and the renames to their
names, and the manifest before its own rename, so a machine that crashes after the manifest
never finds it pointing at a file whose content was still in memory. The state's parts are
written by the workers: the test runs them in this process (an in-process cluster) to see
their fsyncs. A guard for any change that moves the fsyncs to gain time (issue 13: the write
step; tried in session 39, not faster).
"""

import os
from pathlib import Path

import pytest
from distributed import Client, LocalCluster

import dpriv.release as release_mod
import dpriv.state_parts as parts_mod
from dpriv.release import release_history


class DiskLog:
    """Every fsync (the inode synced) and every rename (its target), in the order they happen."""

    def __init__(self, monkeypatch):
        self.events: list[tuple[str, object]] = []
        real_fsync, real_replace = os.fsync, os.replace

        def fsync(fd):
            self.events.append(("fsync", os.fstat(fd).st_ino))
            real_fsync(fd)

        def replace(src, dst, *a, **kw):
            real_replace(src, dst, *a, **kw)
            self.events.append(("replace", Path(dst)))

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "replace", replace)

    def renamed(self, name: str) -> int:
        """Position of the first rename onto a file called ``name``."""
        return next(i for i, (kind, x) in enumerate(self.events) if kind == "replace" and x.name == name)

    def synced_before(self, position: int) -> set[int]:
        return {x for kind, x in self.events[:position] if kind == "fsync"}


@pytest.mark.slow
def test_every_file_of_a_commit_is_synced_before_its_record_and_the_manifest(
    hist_4x300, tmp_path, monkeypatch
):
    """On the Dask path (an in-process cluster: the workers' fsyncs are seen), with the state
    in several parts written by the workers."""
    mh, policy = hist_4x300
    monkeypatch.setattr(release_mod, "SMALL_VIEW_ROWS", -1)
    monkeypatch.setattr(parts_mod, "STATE_PART_ROWS", 150)
    root = tmp_path / "led"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as lc:
        with Client(lc):
            release_history(mh.history[mh.history.view <= 1], policy, root, npartitions=3)
            log = DiskLog(monkeypatch)
            release_history(mh.history[mh.history.view <= 2], policy, root, npartitions=3)
    placed = [*(root / "releases" / "2").iterdir(), *(root / "state" / "2").iterdir()]
    assert {p.name for p in placed} >= {
        "view.parquet",
        "metrics.json",
        "part-00000.parquet",
        "part-00001.parquet",
    }
    record = log.renamed(".dpriv-written.json")
    missing = [p.name for p in placed if p.stat().st_ino not in log.synced_before(record)]
    assert not missing, f"not on disk before the commit's record: {missing}"
    manifest = root / "manifest.json"
    assert manifest.stat().st_ino in log.synced_before(log.renamed("manifest.json"))
