"""deploy/: every config parses, has the fields its tool needs, and calls dpriv as documented.

Nothing is submitted: the SLURMCluster is built from deploy/slurm/jobqueue.yaml (which needs no
sbatch) and only its rendered job script is read; Kubernetes manifests, the Containerfile and
the cron/systemd units are checked as text.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
YAML_FILES = sorted([*DEPLOY.rglob("*.yaml"), *DEPLOY.rglob("*.yml")])
TOML_FILES = sorted(DEPLOY.rglob("*.toml"))


def _docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _launcher():
    spec = importlib.util.spec_from_file_location("dpriv_slurm_launch", DEPLOY / "slurm" / "launch.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _release_argv(command: str) -> list[str]:
    """The argv of the ``dpriv release`` call in a shell command line."""
    words = shlex.split(command)
    i = next(n for n, w in enumerate(words) if w.endswith("dpriv") and words[n + 1 : n + 2] == ["release"])
    end = next((n for n in range(i, len(words)) if words[n] in (">>", ">", "&&", "|", ";")), len(words))
    return words[i:end]


def _check_release_argv(argv: list[str], scheduled: bool = True) -> None:
    assert argv[1] == "release"
    assert not argv[2].startswith("-"), "the history comes first"
    assert "--ledger" in argv and not argv[argv.index("--ledger") + 1].startswith("-")
    assert "--policy" in argv
    # a scheduled run (cron, systemd): a share not mounted is refused, not taken for a new ledger
    assert ("--existing-ledger" in argv) == scheduled


def test_deploy_layout():
    for path in [
        "README.md",
        "slurm/jobqueue.yaml",
        "slurm/launch.py",
        "slurm/release.sbatch",
        "kubernetes/daskcluster.yaml",
        "kubernetes/release-job.yaml",
        "container/Containerfile",
        "schedule/dpriv-release.cron",
        "schedule/dpriv-release.service",
        "schedule/dpriv-release.timer",
    ]:
        assert (DEPLOY / path).is_file(), path
    assert YAML_FILES, "no YAML file found: test_yaml_parses would run no case"


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_yaml_parses(path):
    docs = _docs(path)
    assert docs and all(isinstance(d, dict) for d in docs)


def test_config_files_parse():
    """Every YAML and TOML file under deploy/ parses to a mapping; the loop is never empty."""
    configs = [*YAML_FILES, *TOML_FILES]
    names = {str(p.relative_to(DEPLOY)) for p in configs}
    assert {"slurm/jobqueue.yaml", "kubernetes/daskcluster.yaml", "kubernetes/release-job.yaml"} <= names
    for path in configs:
        text = path.read_text()
        docs = [tomllib.loads(text)] if path.suffix == ".toml" else _docs(path)
        assert docs and all(isinstance(d, dict) and d for d in docs), path


def test_readme_names_every_file():
    text = (DEPLOY / "README.md").read_text()
    for path in DEPLOY.rglob("*"):
        if path.is_file() and path.name != "README.md" and "__pycache__" not in path.parts:
            assert path.name in text, f"deploy/README.md does not mention {path.name}"
    assert "could not be run" in text.lower()


# -- Kubernetes ------------------------------------------------------------------------------------
def test_daskcluster_manifest():
    (cluster,) = _docs(DEPLOY / "kubernetes" / "daskcluster.yaml")
    assert cluster["apiVersion"] == "kubernetes.dask.org/v1"
    assert cluster["kind"] == "DaskCluster"
    name = cluster["metadata"]["name"]
    spec = cluster["spec"]
    assert spec["worker"]["replicas"] >= 1
    (worker,) = spec["worker"]["spec"]["containers"]
    assert worker["args"][:2] == ["dask", "worker"] and "$(DASK_WORKER_NAME)" in worker["args"]
    assert worker["args"][worker["args"].index("--nthreads") + 1] == "1"
    assert worker["resources"]["limits"]["memory"]
    (sched,) = spec["scheduler"]["spec"]["containers"]
    assert sched["args"][:2] == ["dask", "scheduler"]
    assert {p["containerPort"] for p in sched["ports"]} == {8786, 8787}
    assert sched["image"] == worker["image"], "scheduler and workers must run the same image"
    service = spec["scheduler"]["service"]
    assert service["selector"] == {"dask.org/cluster-name": name, "dask.org/component": "scheduler"}
    assert 8786 in {p["port"] for p in service["ports"]}


def test_release_job_manifest():
    docs = _docs(DEPLOY / "kubernetes" / "release-job.yaml")
    kinds = {d["kind"]: d for d in docs}
    assert set(kinds) == {"PersistentVolumeClaim", "Job"}
    job = kinds["Job"]
    assert job["apiVersion"] == "batch/v1"
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] in ("Never", "OnFailure")
    (container,) = pod["containers"]
    argv = container["command"] + container.get("args", [])
    assert argv[0] == "dpriv"
    _check_release_argv(argv, scheduled=False)  # applied by hand: its volume is always there
    (cluster,) = _docs(DEPLOY / "kubernetes" / "daskcluster.yaml")
    scheduler = argv[argv.index("--scheduler") + 1]
    assert scheduler == f"tcp://{cluster['metadata']['name']}-scheduler:8786"
    assert container["image"] == cluster["spec"]["worker"]["spec"]["containers"][0]["image"]
    (mount,) = container["volumeMounts"]
    claim = {v["name"]: v for v in pod["volumes"]}[mount["name"]]["persistentVolumeClaim"]["claimName"]
    assert claim == kinds["PersistentVolumeClaim"]["metadata"]["name"]
    assert all(a.startswith(mount["mountPath"]) for a in (argv[2], argv[argv.index("--ledger") + 1]))


# -- SLURM -----------------------------------------------------------------------------------------
def test_jobqueue_yaml_keys_are_slurmcluster_keys():
    pytest.importorskip("dask_jobqueue")
    import dask_jobqueue

    conf = _docs(DEPLOY / "slurm" / "jobqueue.yaml")[0]["jobqueue"]["slurm"]
    defaults = yaml.safe_load((Path(dask_jobqueue.__file__).parent / "jobqueue.yaml").read_text())
    known = set(defaults["jobqueue"]["slurm"])
    assert set(conf) <= known, f"unknown jobqueue.slurm keys: {set(conf) - known}"
    assert conf["cores"] >= conf["processes"] >= 1


@pytest.fixture(scope="module")
def slurm_cluster():
    pytest.importorskip("dask_jobqueue")
    cluster = _launcher().build_cluster(
        DEPLOY / "slurm" / "jobqueue.yaml", scheduler_options={"dashboard_address": ":0", "port": 0}
    )
    yield cluster
    cluster.close()


def test_slurm_cluster_job_script(slurm_cluster):
    conf = _docs(DEPLOY / "slurm" / "jobqueue.yaml")[0]["jobqueue"]["slurm"]
    script = slurm_cluster.job_script()
    assert script.startswith("#!/usr/bin/env bash")
    assert f"#SBATCH -J {conf['name']}" in script
    assert f"#SBATCH -p {conf['queue']}" in script
    assert f"#SBATCH --cpus-per-task={conf['cores']}" in script
    assert re.search(r"#SBATCH --mem=\d+G", script)
    h, m, s = conf["walltime"].split(":")
    assert f"#SBATCH -t {h}:{m}:{s}" in script
    for directive in conf["job-extra-directives"]:
        assert f"#SBATCH {directive}" in script
    for line in conf["job-script-prologue"]:
        assert line in script
    assert conf["python"] in script and "distributed.cli.dask_worker" in script
    assert f"--nworkers {conf['processes']}" in script and "--nthreads 1" in script
    assert "--memory-limit 4.00GiB" in script
    assert slurm_cluster.scheduler_address.startswith("tcp://")
    assert slurm_cluster._dummy_job.worker_processes == conf["processes"]


def test_jobqueue_yaml_as_dask_config_gives_the_same_job():
    """Copied to ~/.config/dask/, the file configures a plain SLURMCluster() the same way."""
    dask_jobqueue = pytest.importorskip("dask_jobqueue")
    import dask

    doc = _docs(DEPLOY / "slurm" / "jobqueue.yaml")[0]
    with dask.config.set(dask.config.update(copy.deepcopy(dask.config.config), doc, priority="new")):
        with dask_jobqueue.SLURMCluster(scheduler_options={"dashboard_address": ":0", "port": 0}) as cluster:
            script = cluster.job_script()
    assert "#SBATCH -J dpriv-worker" in script and "#SBATCH --cpus-per-task=8" in script
    assert "--nworkers 8" in script and "--memory-limit 4.00GiB" in script


def test_slurm_launcher_dry_run(capsys):
    pytest.importorskip("dask_jobqueue")
    assert _launcher().main(["--dry-run"]) == 0
    assert "#SBATCH -J dpriv-worker" in capsys.readouterr().out


def test_slurm_launcher_needs_release_args(capsys):
    pytest.importorskip("dask_jobqueue")
    with pytest.raises(SystemExit):
        _launcher().main(["--jobs", "1"])
    assert "dpriv release arguments" in capsys.readouterr().err


def test_release_sbatch():
    text = (DEPLOY / "slurm" / "release.sbatch").read_text()
    assert text.startswith("#!/usr/bin/env bash")
    for d in ("--job-name", "--cpus-per-task", "--mem", "--time"):
        assert re.search(rf"^#SBATCH {d}=\S+", text, re.M), d
    assert "launch.py" in text and "jobqueue.yaml" in text
    assert re.search(r'--ledger "\$LEDGER"', text) and re.search(r'--policy "\$POLICY"', text)
    launcher = (DEPLOY / "slurm" / "launch.py").read_text()
    assert '"dpriv", "release"' in launcher and '"--scheduler", cluster.scheduler_address' in launcher


@pytest.mark.parametrize("first", [False, True])
def test_release_sbatch_passes_existing_ledger_but_the_first_week(tmp_path, first):
    """The scheduled job made a new ledger in a missing $LEDGER (a share not mounted)."""
    home = tmp_path / "home"
    (home / "deploy" / "slurm").mkdir(parents=True)
    (home / ".venv" / "bin").mkdir(parents=True)
    # a stand-in python that prints the launcher's argv instead of running it
    fake = home / ".venv" / "bin" / "python"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    fake.chmod(0o755)
    (home / ".venv" / "bin" / "activate").write_text(f'PATH="{fake.parent}:$PATH"\n')
    env = {
        "PATH": os.environ["PATH"], "DPRIV_HOME": str(home), "HISTORY": "/d/h.parquet",
        "LEDGER": "/d/ledger", "POLICY": "/d/p.toml", **({"DPRIV_NEW_LEDGER": "1"} if first else {}),
    }  # fmt: skip
    done = subprocess.run(
        ["bash", DEPLOY / "slurm" / "release.sbatch"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    argv = done.stdout.splitlines()
    assert argv[argv.index("--") + 1 :] == [
        "/d/h.parquet",
        "--ledger",
        "/d/ledger",
        "--policy",
        "/d/p.toml",
    ] + ([] if first else ["--existing-ledger"])


def test_scheduled_recipes_tell_the_exporter_to_rename_the_history_into_place():
    """A CSV picked up while the exporter was still writing it (cut at a row boundary) released
    a partial week for good; nothing in deploy/ said to write it elsewhere and rename it."""
    readme = (DEPLOY / "README.md").read_text()
    i = readme.index("under a temporary name, then rename it into place")
    said = readme[i : readme.index("\n## ", i)]
    # the rename is shown as a command: a temp name that is no history, mv'ed over HISTORY
    tmp, final = re.search(r"> (\S+\.tmp) && mv \1 (\S+)$", said, re.M).groups()
    assert final.endswith((".csv", ".parquet")) and tmp.startswith(final)
    assert "os.replace(tmp, path)" in said and re.search(r"same\s+file system", said)
    for recipe in ("schedule/dpriv-release.cron", "schedule/dpriv-release.service", "slurm/release.sbatch"):
        comments = " ".join(ln for ln in (DEPLOY / recipe).read_text().splitlines() if ln.startswith("#"))
        assert "under a temporary name and mv it into place (deploy/README.md)" in comments, recipe


# -- container and schedule -------------------------------------------------------------------------
def test_containerfile_installs_the_project():
    lines = [ln.strip() for ln in (DEPLOY / "container" / "Containerfile").read_text().splitlines()]
    code = [ln for ln in lines if ln and not ln.startswith("#")]
    assert code[0].startswith("FROM ") and "python:3.1" in code[0]
    copies = " ".join(ln for ln in code if ln.startswith("COPY "))
    assert "pyproject.toml" in copies and "dpriv" in copies
    text = "\n".join(code)
    assert re.search(r"pip install (--no-deps )?\.", text), "the image must install the project"
    assert any(ln.startswith("USER ") and "root" not in ln for ln in code)


def test_cron_line_is_weekly_dpriv_release():
    lines = [
        ln
        for ln in (DEPLOY / "schedule" / "dpriv-release.cron").read_text().splitlines()
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    (line,) = lines
    minute, hour, dom, month, dow, user, command = line.split(None, 6)
    assert (dom, month) == ("*", "*") and re.fullmatch(r"[0-7]|mon|sun", dow.lower())
    assert minute.isdigit() and hour.isdigit() and user != "root"
    _check_release_argv(_release_argv(command))


def _unit(path: Path) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    current = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
        else:
            key, _, value = line.partition("=")
            current[key.strip()] = value.strip()
    return sections


def test_systemd_service_runs_dpriv_release():
    unit = _unit(DEPLOY / "schedule" / "dpriv-release.service")
    service = unit["Service"]
    assert service["Type"] == "oneshot"
    assert service.get("User") not in (None, "root")
    assert service.get("UMask") == "0077"
    argv = shlex.split(service["ExecStart"])
    assert argv[0].startswith("/") and argv[0].endswith("/dpriv")
    _check_release_argv(argv)


def test_systemd_timer_is_weekly():
    unit = _unit(DEPLOY / "schedule" / "dpriv-release.timer")
    timer = unit["Timer"]
    cal = timer["OnCalendar"]
    # "weekly", or one weekday with a fixed time: Mon *-*-* 03:00:00
    assert cal == "weekly" or re.fullmatch(r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \*-\*-\* \d\d:\d\d(:\d\d)?", cal)
    assert timer["Unit"] == "dpriv-release.service"
    assert timer.get("Persistent") == "true"
    assert unit["Install"]["WantedBy"] == "timers.target"


def test_slurm_launcher_runs_the_dpriv_of_its_environment():
    pytest.importorskip("dask_jobqueue")
    import sys

    beside = Path(sys.executable).with_name("dpriv")
    assert _launcher().dpriv_command() == (str(beside) if beside.is_file() else "dpriv")


# -- deploy/slurm/local-cluster.sh (the real cluster is started in tests/test_slurm.py) -------------
LOCAL_SLURM = DEPLOY / "slurm" / "local-cluster.sh"


def _local_slurm(*args) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", LOCAL_SLURM, *args], capture_output=True, text=True, timeout=60)


def test_local_slurm_refuses_a_folder_it_did_not_make(tmp_path):
    (tmp_path / "data.csv").write_text("a\n1\n")
    done = _local_slurm("start", tmp_path)
    assert done.returncode == 2
    assert f"{tmp_path} exists and was not made by local-cluster.sh" in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["data.csv"], "nothing may be written there"


def test_local_slurm_stop_and_usage_on_a_folder_without_a_cluster(tmp_path):
    folder = tmp_path / "never-started"
    done = _local_slurm("stop", folder)
    assert (done.returncode, done.stdout.strip()) == (0, f"no local SLURM in {folder}: nothing to stop")
    assert not folder.exists()
    done = _local_slurm("restart", folder)
    assert done.returncode == 2 and "usage:" in done.stderr and not folder.exists()
