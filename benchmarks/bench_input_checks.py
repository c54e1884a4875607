"""The input checks of a 10^6-row history before its release (issue 13): paired ratios of an
older dpriv tree's row checks (:func:`dpriv.validate.check_rows`: missing/out-of-domain values,
then a respondent twice in one view) and summaries (:func:`dpriv.input_checks.history_summaries`:
sizes, sensitive counts, digests) against this tree's, in ONE process and one 2-worker cluster,
on one persisted history (``write_medical_view``, the recommended defense), old and new
alternately (the machine may be shared: absolute seconds mean little). The older tree's modules
are loaded beside this one's and sent to the workers by value; their results must be the same.

    git archive <base> | tar -x -C /tmp/old
    python benchmarks/bench_input_checks.py --old /tmp/old [--rows 1000000] [--pairs 7] [--work DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path

import cloudpickle
import dask
import dask.dataframe as dd
from distributed import Client, LocalCluster, wait

import dpriv.input_checks as checks
import dpriv.validate as validate
from dpriv.allocator import worker_config
from dpriv.datasets import write_medical_view
from dpriv.datasets.files import RECOMMENDED_DEFENSE
from dpriv.inputs import as_frame, prepared
from dpriv.policy import ReleasePolicy


def load(name: str, path: Path):
    """The module at ``path`` as ``name``, pickled by value (the workers cannot import it)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    cloudpickle.register_pickle_by_value(module)
    return module


def old_tree(root: Path):
    """(check_rows, history_summaries) of the tree at ``root`` (its digests and summary kernel)."""
    d = load("old_digests", root / "dpriv/digests.py")
    s = load("old_view_summary", root / "dpriv/view_summary.py")
    s.view_digests = d.view_digests
    v = load("old_validate", root / "dpriv/validate.py")
    i = load("old_input_checks", root / "dpriv/input_checks.py")
    i.counts_and_digest, i.counts_meta = s.counts_and_digest, s.counts_meta
    return v.check_rows, i.history_summaries


def pairs(name: str, old, new, args: tuple, n: int) -> float:
    """``n`` alternate timings of ``old(*args)`` and ``new(*args)``; prints each ratio old/new."""
    old(*args), new(*args)  # warm
    ratios = []
    for k in range(n):
        t = {}
        for j in (0, 1) if k % 2 == 0 else (1, 0):
            start = time.perf_counter()
            (old, new)[j](*args)
            t[j] = time.perf_counter() - start
        ratios.append(t[0] / t[1])
        print(f"{name} pair {k}: old {t[0]:.3f} s, new {t[1]:.3f} s, old/new {ratios[-1]:.2f}", flush=True)
    med = statistics.median(ratios)
    print(f"{name}: median old/new {med:.2f}")
    return med


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="an older dpriv tree (git archive ... | tar -x -C DIR)")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--work", default="", help="a folder holding (or to hold) the history")
    args = ap.parse_args()
    old_rows, old_summaries = old_tree(Path(args.old))
    work = Path(args.work or tempfile.mkdtemp(prefix="dpriv-checks-"))
    with (
        dask.config.set(worker_config()),
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as lc,
        Client(lc),
    ):
        if not (work / "history.parquet").exists():
            write_medical_view(work, args.rows, npartitions=8, seed=0)
        policy = ReleasePolicy.from_toml(work / "policy.toml", **RECOMMENDED_DEFENSE["privacy"])
        policy = policy.with_overrides(**RECOMMENDED_DEFENSE["release"])
        history = as_frame(dd.read_parquet(work / "history.parquet"), "bench", "history", policy.id, policy)
        history, policy = prepared(history, policy)
        checked = checks.checked_history(history, policy)  # one view: persisted
        history, views = checked.history, checked.indices
        wait(history)
        a, b = old_summaries(history, policy, views), checks.history_summaries(history, policy, views)
        same = [(s.n_rows, s.s_counts.tolist(), s.content, s.input_sha) for s in (a[1], b[1])]
        assert same[0] == same[1], same
        pairs("check_rows", old_rows, validate.check_rows, (history, policy), args.pairs)
        pairs(
            "history_summaries", old_summaries, checks.history_summaries, (history, policy, views), args.pairs
        )


if __name__ == "__main__":
    main()
