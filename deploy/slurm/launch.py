"""Start a SLURM Dask cluster from ``jobqueue.yaml`` and run ``dpriv release`` on it.

    python deploy/slurm/launch.py [--config deploy/slurm/jobqueue.yaml] [--jobs 2] \
        [--wait-workers 16] [--timeout 1800] -- HISTORY --ledger DIR [--policy F ...]

Everything after ``--`` is passed to ``dpriv release`` (the ``dpriv`` beside this
interpreter, else the one on PATH) with ``--scheduler <address>`` of the cluster appended.
The release loop (client) runs in this process's job and writes the ledger; the workers read
the history and the previous respondent state (``ledger/state/``) themselves, so the history
and the ledger must be at the same path on every node (a shared filesystem). Exit status:
that of ``dpriv release`` (0 also when the ledger already holds every view: re-runs are
no-ops). deploy/slurm/local-cluster.sh starts a one-node SLURM to try it on (deploy/README.md).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent


def load_config(path: str | Path) -> dict:
    """The ``jobqueue.slurm`` table of the YAML file as ``SLURMCluster`` keywords (None dropped;
    the config's ``name``, the SLURM job name, is the ``job_name`` keyword)."""
    doc = yaml.safe_load(Path(path).read_text()) or {}
    conf = (doc.get("jobqueue") or {}).get("slurm") or {}
    kw = {key.replace("-", "_"): value for key, value in conf.items() if value is not None}
    if "name" in kw:
        kw["job_name"] = kw.pop("name")
    return kw


def build_cluster(config: str | Path = HERE / "jobqueue.yaml", **overrides):
    """A ``SLURMCluster`` configured by ``config``; ``overrides`` win. Building it starts the
    scheduler in this process but submits nothing: jobs are submitted by ``scale``."""
    from dask_jobqueue import SLURMCluster

    return SLURMCluster(**{**load_config(config), **overrides})


def dpriv_command() -> str:
    """The ``dpriv`` script of this interpreter's environment (the launcher's virtualenv, the
    one the workers run), else the first ``dpriv`` on PATH."""
    beside = Path(sys.executable).with_name("dpriv")
    return str(beside) if beside.is_file() else "dpriv"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ours, release_args = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=str(HERE / "jobqueue.yaml"))
    ap.add_argument("--jobs", type=int, default=2, help="SLURM worker jobs to submit")
    ap.add_argument("--wait-workers", type=int, default=0, help="workers to wait for (default: all)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds to wait for the workers")
    ap.add_argument("--dry-run", action="store_true", help="print the worker job script and exit")
    args = ap.parse_args(ours)
    if not release_args and not args.dry_run:
        ap.error("give the dpriv release arguments after --: HISTORY --ledger DIR [--policy F]")
    from distributed import Client

    with build_cluster(args.config) as cluster:
        if args.dry_run:
            print(cluster.job_script())
            return 0
        cluster.scale(jobs=args.jobs)
        per_job = max(cluster._dummy_job.worker_processes, 1)
        with Client(cluster) as client:
            client.wait_for_workers(args.wait_workers or args.jobs * per_job, timeout=args.timeout)
            print(
                f"SLURM Dask cluster {cluster.scheduler_address}; dashboard {client.dashboard_link}",
                flush=True,
            )
            cmd = ["dpriv", "release", *release_args, "--scheduler", cluster.scheduler_address]
            cmd[0] = dpriv_command()
            return subprocess.run(cmd, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
