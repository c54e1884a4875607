"""Set-up shared by the benchmark scripts that release on a LocalCluster (run as
``python benchmarks/<name>.py``, this folder on ``sys.path``): their command line's whole-number
options, this process set up as the ``dpriv`` command sets its own, a scratch folder, a
LocalCluster with its Client, the recommended defense's policy and the untimed warm-up release
(numba's kernels loaded where the timed release runs). What each script measures stays in it."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from unittest import mock

import dask
import dask.dataframe as dd
import pandas as pd
from distributed import Client, LocalCluster

import dpriv.release as release_mod
from dpriv.allocator import keep_freed_memory, no_huge_page_advice
from dpriv.datasets import write_medical_view
from dpriv.datasets.files import RECOMMENDED_DEFENSE
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


def arguments(doc: str | None, **ints: int) -> argparse.ArgumentParser:
    """A parser described by the first line of ``doc`` (None: no description) with the options
    of :func:`add_ints`; the script adds its other options after."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    add_ints(ap, **ints)
    return ap


def add_ints(ap: argparse.ArgumentParser, **ints: int) -> None:
    """For each keyword in order, an option of ``ap`` taking a whole number, the keyword's value
    its default (``view_size=5000``: ``--view-size``, default 5000)."""
    for name, default in ints.items():
        ap.add_argument("--" + name.replace("_", "-"), type=int, default=default)


def as_dpriv_process(*, huge_page_advice: bool = False) -> None:
    """This process's allocator as the ``dpriv`` command sets it (:mod:`dpriv.allocator`): freed
    memory kept, and unless ``huge_page_advice`` its huge-page advice to the kernel dropped."""
    keep_freed_memory()
    if not huge_page_advice:
        no_huge_page_advice()


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A new temporary folder named ``<prefix>...``, removed with all it holds on the way out."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def local_client(workers: int, config: Mapping[str, Any] | None = None) -> Iterator[Client]:
    """A Client of a LocalCluster of ``workers`` single-threaded worker processes (its dashboard
    on a free port), both made under the Dask ``config`` (e.g. ``dpriv.allocator.worker_config()``;
    None: as the caller's config stands) and closed on the way out."""
    with (
        dask.config.set(dict(config or {})),
        LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0") as lc,
        Client(lc) as client,
    ):
        yield client


def forced_path(in_process: bool):
    """A context in which every view is released in process (``True``: both thresholds of
    :func:`dpriv.release.in_process` lifted) or on the Dask path (``False``)."""
    big = 2**62
    rows = (big, big) if in_process else (0, release_mod.SMALL_STATE_ROWS)
    return mock.patch.multiple(release_mod, SMALL_VIEW_ROWS=rows[0], SMALL_STATE_ROWS=rows[1])


def warm_up(folder: Path, policy: ReleasePolicy, in_process: bool = False) -> None:
    """Release a 20,000-tuple view, not timed, so that numba's kernels are loaded where the
    timed release runs: on every worker (the Dask path forced: a view that small would
    otherwise be released in process, leaving the workers cold) or in this process."""
    write_medical_view(folder, 20_000, npartitions=2, seed=1)
    read = pd.read_parquet if in_process else dd.read_parquet
    with forced_path(in_process):
        release_history(read(folder / "history.parquet"), policy, folder / "ledger", npartitions=2)


def recommended_policy(folder: Path) -> ReleasePolicy:
    """The recommended defense for the ``write_medical_view`` folder ``folder``."""
    policy = ReleasePolicy.from_toml(folder / "policy.toml", **RECOMMENDED_DEFENSE["privacy"])
    return policy.with_overrides(**RECOMMENDED_DEFENSE["release"])


def warm_recommended_view(work: Path, rows: int, npartitions: int) -> ReleasePolicy:
    """A ``write_medical_view`` of ``rows`` tuples in ``npartitions`` files written to ``work``,
    numba warmed on the workers (:func:`warm_up`), and its recommended policy."""
    write_medical_view(work, rows, npartitions=npartitions, seed=0)
    policy = recommended_policy(work)
    warm_up(work / "warm", policy)
    return policy
