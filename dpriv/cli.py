"""The ``dpriv`` command (DESIGN.md "CLI"). Exit status: 0 ok, 2 bad input or a policy
that cannot be met (message on stderr, no traceback unless ``--debug``), 1 internal error."""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import sys
import tempfile
import traceback
import warnings
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
import typer

from dpriv.errors import DprivError, LedgerError, PolicyError
from dpriv.policy import ReleasePolicy

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Privacy-preserving sequential data release (JS-reduce) on Dask.",
)

Debug = Annotated[bool, typer.Option("--debug", help="Show tracebacks.")]
K = Annotated[int | None, typer.Option(min=1, help="QI-group size (>= 1).")]
T = Annotated[float | None, typer.Option(min=0.0, max=1.0, help="EMD threshold in [0, 1].")]
J = Annotated[float | None, typer.Option(min=0.0, help="JS threshold (bits, >= 0).")]
Scheduler = Annotated[str | None, typer.Option(help="Address of an existing Dask scheduler.")]
Views = Annotated[int, typer.Option(help="Number of weekly views.")]
ViewSize = Annotated[int, typer.Option(help="Tuples per view.")]
PolicyFile = Annotated[Path | None, typer.Option("--policy", help="Policy TOML (DESIGN.md).")]


def _say(msg: str) -> None:
    typer.echo(msg, err=True)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    _say(f"warning: {message}")


#: Dask's routine chatter (P2P shuffle start/stop, slow worker shutdown) is not for users.
QUIET_LOGGERS = ("distributed.shuffle", "distributed.nanny", "distributed.worker", "distributed.core")


def command(fn):
    """Map dpriv errors (and unreadable input) to exit 2 and anything else to exit 1, tracebacks
    only with --debug; warnings print as one "warning: ..." line."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        debug = kwargs.get("debug", False)
        if not debug:
            for name in QUIET_LOGGERS:
                logging.getLogger(name).setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings():
                warnings.showwarning = _show_warning
                if not debug:  # the knowledge tables (~19 MiB) travel with each release's graph
                    warnings.filterwarnings("ignore", message="Sending large graph")
                return fn(*args, **kwargs)
        except (DprivError, pd.errors.ParserError, UnicodeDecodeError) as exc:
            if debug:
                traceback.print_exc()
            prefix = "" if isinstance(exc, DprivError) else "cannot parse the input: "
            _say(f"error: {prefix}{exc}".rstrip())
            raise typer.Exit(2) from None
        except typer.Exit:
            raise
        except Exception as exc:  # noqa: BLE001 - the CLI's last resort
            if debug:
                traceback.print_exc()
            _say(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)")
            raise typer.Exit(1) from None

    return wrapper


def load_policy(policy: Path | None, **flags: Any) -> ReleasePolicy:
    """Policy from the TOML file and/or flags (flags win)."""
    if isinstance(flags.get("qi"), str):
        flags["qi"] = [q.strip() for q in flags["qi"].split(",") if q.strip()]
    if policy is not None:
        return ReleasePolicy.from_toml(policy, **flags)
    missing = [f"--{k}" for k in ("qi", "sensitive") if not flags.get(k)]
    if missing:
        raise PolicyError(f"no policy file: give --policy FILE or at least {' and '.join(missing)}")
    return ReleasePolicy.from_dict({k: v for k, v in flags.items() if v is not None})


def write_frame(frame: pd.DataFrame, out: Path) -> None:
    """Write Parquet (``.parquet``) or CSV atomically: a temp file renamed into place, with the
    permissions of an ordinary new file (a released view is public)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.")
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    try:
        if out.suffix in (".parquet", ".pq"):
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def print_summary(metrics: dict) -> None:
    keys = [
        "n_original",
        "n_groups",
        "n_suppressed",
        "suppression_rate",
        "k_achieved",
        "l_achieved",
        "t_achieved",
        "j_achieved",
        "average_semiperimeter",
        "largest_group",
        "seconds",
    ]
    for key in keys:
        if key in metrics:
            val = metrics[key]
            typer.echo(f"{key:>22}: {val:.4f}" if isinstance(val, float) else f"{key:>22}: {val}")


@app.command()
@command
def anonymize(
    input: Annotated[str, typer.Argument(help="CSV (delimiter detected) or Parquet, path or URL.")],
    out: Annotated[Path, typer.Option(help="Released view: .parquet or .csv.")],
    policy: PolicyFile = None,
    id: Annotated[str | None, typer.Option("--id", help="Respondent id column.")] = None,
    qi: Annotated[str | None, typer.Option(help="QI columns, comma-separated.")] = None,
    sensitive: Annotated[str | None, typer.Option(help="Sensitive column.")] = None,
    k: K = None,
    t: T = None,
    j: J = None,
    seed: Annotated[int | None, typer.Option(help="Seed of every random choice.")] = None,
    prior: Annotated[str, typer.Option(help="Priors: class (empirical per QI class) or uniform.")] = "class",
    add_row_id: Annotated[bool, typer.Option(help="Add a row_id column and use it as the id.")] = False,
    npartitions: Annotated[int | None, typer.Option(help="Hilbert ranges (Dask partitions).")] = None,
    scheduler: Scheduler = None,
    debug: Debug = False,
) -> None:
    """Generalize one view under k-anonymity, t-closeness and the JS threshold j."""
    from dpriv.cluster import dask_client
    from dpriv.io import ROW_ID, read_table
    from dpriv.release import anonymize as run

    pol = load_policy(
        policy,
        id=ROW_ID if add_row_id else id,
        qi=qi,
        sensitive=sensitive,
        k=k,
        t=t,
        j=j,
        seed=seed,
        npartitions=npartitions,
    )
    view = read_table(input, add_row_id=add_row_id)
    with dask_client(scheduler, say=_say):
        result = run(view, pol, prior=prior)
    for note in result.notes:
        _say(note)
    write_frame(result.released, out)
    out.with_name(out.name + ".metrics.json").write_text(json.dumps(result.metrics, indent=2, default=str))
    print_summary(result.metrics)
    typer.echo(f"released view written to {out}")


def main() -> None:  # pragma: no cover
    sys.exit(app())


generate_app = typer.Typer(help="Generate synthetic histories.", no_args_is_help=True)
app.add_typer(generate_app, name="generate")


@generate_app.command("medical")
@command
def generate_medical(
    out: Annotated[Path, typer.Option(help="Folder for history.parquet, policy.toml, knowledge/.")],
    views: Views = 24,
    view_size: ViewSize = 5000,
    attendance: Annotated[float, typer.Option(help="Probability of an exam in a given week.")] = 1.0,
    seed: Annotated[int, typer.Option(help="Seed.")] = 0,
    partitions: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Build the view partition by partition in Dask (needs --views 1; for large "
            "--view-size) and write history.parquet as a Parquet folder of this many files "
            "(fewer if the view has fewer 65,536-row blocks).",
        ),
    ] = None,
    scheduler: Annotated[
        str | None, typer.Option(help="With --partitions: address of an existing Dask scheduler.")
    ] = None,
    debug: Debug = False,
) -> None:
    """The paper-setting history (ALGORITHMS.md §2.5) with its exact knowledge files."""
    from dpriv.datasets import medical_history, write_history

    if partitions is not None:
        _generate_medical_partitioned(out, views, view_size, attendance, seed, partitions, scheduler)
        return
    if scheduler is not None:
        from dpriv.errors import InputError

        raise InputError("--scheduler goes with --partitions (the default build runs in this process)")
    mh = medical_history(views, view_size, attendance=attendance, seed=seed)
    policy_path = write_history(out, mh)
    typer.echo(
        f"{len(mh.history)} tuples of {mh.n_respondents} respondents over {views} views; "
        f"policy: {policy_path}"
    )


def _generate_medical_partitioned(
    out: Path,
    views: int,
    view_size: int,
    attendance: float,
    seed: int,
    partitions: int,
    scheduler: str | None,
) -> None:
    """``generate medical --partitions N``: one view built and written by Dask workers."""
    from dpriv.cluster import dask_client
    from dpriv.datasets import write_medical_view
    from dpriv.errors import InputError

    if views != 1:
        raise InputError(
            f"--partitions builds one view (a first release): use --views 1, not {views}; "
            "several views are generated in this process (drop --partitions)"
        )
    with dask_client(scheduler, say=_say):
        policy_path = write_medical_view(
            out, view_size, npartitions=partitions, seed=seed, attendance=attendance
        )
    n_files = len(list((out / "history.parquet").glob("*.parquet")))
    typer.echo(
        f"{view_size} tuples of {view_size} respondents in 1 view, {n_files} Parquet files in "
        f"{out / 'history.parquet'}; policy: {policy_path}"
    )


def _release_table_row(index: int, m: dict) -> str:
    f = lambda v, p=4: "-" if v is None else (f"{v:.{p}f}" if isinstance(v, float) else str(v))  # noqa: E731
    secs = sum(m["seconds"].values()) if isinstance(m.get("seconds"), dict) else m.get("seconds")
    return (
        f"{index:>7} {f(m.get('n_groups')):>7} {f(m.get('suppression_rate')):>11} "
        f"{f(m.get('t_achieved')):>8} {f(m.get('j_achieved')):>8} {f(m.get('average_semiperimeter')):>8} "
        f"{f(secs, 2):>7}"
    )


RELEASE_HEADER = " ".join(
    f"{h:>{w}}"
    for h, w in [
        ("release", 7),
        ("groups", 7),
        ("suppression", 11),
        ("max_emd", 8),
        ("max_js", 8),
        ("semi", 8),
        ("seconds", 7),
    ]
)


def _run_release(
    history_path: str,
    ledger: Path,
    pol: ReleasePolicy,
    scheduler: str | None,
    npartitions: int | None,
    method: str = "jsreduce",
    progress: bool | None = None,
) -> None:
    from dpriv import steps
    from dpriv.cluster import dask_client
    from dpriv.io import read_table
    from dpriv.release import release_history

    steps.SHOW_PROGRESS = sys.stderr.isatty() if progress is None else progress

    if ledger.exists() and not ledger.is_dir():
        raise LedgerError(f"--ledger {ledger} is a file, not a ledger folder: choose a new or empty folder")
    frame = read_table(history_path)
    released: list[int] = []

    def on_release(i: int, m: dict) -> None:
        released.append(i)
        typer.echo(_release_table_row(i, m))
        if m.get("n_groups") == 0:
            _say(f"warning: release {i} suppressed every tuple (nothing published): relax k, t or j")

    with dask_client(scheduler, say=_say):
        history = frame.persist()  # on the workers: each view is a filter of it, never collected
        typer.echo(RELEASE_HEADER)
        led = release_history(
            history, pol, ledger, npartitions=npartitions, on_release=on_release, method=method
        )
    if not released:
        typer.echo(f"nothing to release: the ledger already holds releases 1..{led.last_index()}")
    typer.echo(f"ledger: {ledger} (releases/<i>/view.parquet are public; state/ is sensitive)")


@app.command()
@command
def release(
    history: Annotated[str, typer.Argument(help="History: id, time (1..n), QIs, sensitive.")],
    ledger: Annotated[Path, typer.Option(help="Ledger folder (created if new).")],
    policy: PolicyFile = None,
    method: Annotated[
        str, typer.Option(help="jsreduce, or a Mondrian baseline: mondrian-l, mondrian-t, mondrian-bt.")
    ] = "jsreduce",
    k: K = None,
    t: T = None,
    j: J = None,
    npartitions: Annotated[int | None, typer.Option(help="Hilbert ranges per view.")] = None,
    scheduler: Scheduler = None,
    progress: Annotated[
        bool | None,
        typer.Option(
            "--progress/--no-progress", help="Dask progress bars on stderr (default: when it is a terminal)."
        ),
    ] = None,
    debug: Debug = False,
) -> None:
    """Release the views of a history not yet in the ledger, in order (resumable)."""
    pol = load_policy(policy, k=k, t=t, j=j)
    _run_release(history, ledger, pol, scheduler, npartitions, method, progress)


@app.command()
@command
def demo(
    out: Annotated[Path, typer.Option(help="Working folder.")] = Path("demo-out"),
    views: Views = 24,
    view_size: ViewSize = 5000,
    scheduler: Scheduler = None,
    debug: Debug = False,
) -> None:
    """Generate the paper-setting history and release it with JS-reduce on a local cluster."""

    from dpriv.datasets import medical_history, write_history

    mh = medical_history(views, view_size, seed=0)
    if (out / "ledger").exists():
        shutil.rmtree(out / "ledger")
    policy_path = write_history(out, mh, policy_extra=DEMO_PRIVACY)
    typer.echo(f"generated {len(mh.history)} tuples of {mh.n_respondents} respondents; policy {policy_path}")
    policy = ReleasePolicy.from_toml(policy_path)
    _run_release(str(out / "history.parquet"), out / "ledger", policy, scheduler, None)
    from dpriv.attack import attack as run_attack

    gain = run_attack(out / "ledger", mh.history, policy, "dk")
    gain.to_csv(out / "gain_dk.csv", index=False)
    worst = gain.loc[gain["adversary_gain"].idxmax()]
    typer.echo(
        f"adversary with the generator's exact knowledge (full DK): largest gain "
        f"{worst['adversary_gain']:.3f} at release {int(worst['release'])} (E10); per release in "
        f"{out / 'gain_dk.csv'}"
    )


#: The demo's privacy parameters (see README: the paper's t = 0.3, j = 0.1 suppress most tuples).
DEMO_PRIVACY = {"privacy": {"k": 5, "t": 0.5, "j": 0.8}}


@app.command()
@command
def verify(
    released: Annotated[str, typer.Argument(help="Released view (Parquet or CSV).")],
    original: Annotated[str, typer.Option(help="The original view it was made from.")],
    policy: PolicyFile = None,
    qi: Annotated[str | None, typer.Option(help="QI columns, comma-separated.")] = None,
    sensitive: Annotated[str | None, typer.Option(help="Sensitive column.")] = None,
    k: K = None,
    t: T = None,
    view: Annotated[
        int | None, typer.Option(help="With a history as --original: the release index it was made from.")
    ] = None,
    debug: Debug = False,
) -> None:
    """Check a released view: k, distinct l and t per QI-group (exit 2 when one fails)."""
    from dpriv.anonymity.verify import verify_release
    from dpriv.errors import InputError
    from dpriv.io import read_table
    from dpriv.validate import codes, resolve_policy

    pol = load_policy(policy, qi=qi, sensitive=sensitive, k=k, t=t)
    orig = read_table(original).compute()
    if pol.time and pol.time in orig.columns:
        times = sorted(orig[pol.time].unique().tolist())
        if view is None and len(times) > 1:
            raise InputError(
                f"--original holds {len(times)} views ({pol.time} = {times[0]}..{times[-1]}); t is "
                f"checked against the view a release was made from: pass --view <index>"
            )
        if view is not None:
            orig = orig[orig[pol.time] == view]
            if orig.empty:
                raise InputError(f"--original has no rows with {pol.time} = {view}; it holds {times[:10]}")
    pol, _ = resolve_policy(orig, pol)
    rel = read_table(released).compute()
    c = codes(orig[pol.sensitive], pol.sensitive_domain)
    report = verify_release(rel, pol, view_counts=np.bincount(c[c >= 0], minlength=len(pol.sensitive_domain)))
    for key, val in report.to_dict().items():
        if not isinstance(val, list | dict):
            typer.echo(f"{key:>12}: {val}")
    for p in report.problems[:20]:
        typer.echo(f"  FAIL {p}")
    if len(report.problems) > 20:
        typer.echo(f"  ... and {len(report.problems) - 20} more problems")
    if not report.ok:
        raise typer.Exit(2)


@app.command()
@command
def kpr(
    original: Annotated[str, typer.Argument(help="Original table.")],
    synthetic: Annotated[str, typer.Argument(help="Synthetic / anonymized table.")],
    known: Annotated[str, typer.Option(help="Variables the attacker knows, comma-separated.")],
    debug: Debug = False,
) -> None:
    """Knowledge Protection Rate (ALGORITHMS.md E21), last line "KPR <value>"."""
    from dpriv.io import read_table
    from dpriv.metrics.kpr import kpr as run

    res = run(read_table(original), read_table(synthetic), [k.strip() for k in known.split(",")])
    typer.echo(
        f"n={res.n} unique originals={res.n_unique_original} "
        f"unique synthetic profiles={res.n_unique_synthetic_profiles} matched={res.n_matched}"
    )
    if res.note:
        typer.echo(res.note)
    typer.echo(f"KPR {res.kpr:.4f}")


@app.command()
@command
def attack(
    ledger: Annotated[Path, typer.Argument(help="A release ledger.")],
    history: Annotated[str, typer.Option(help="The original history that was released.")],
    knowledge: Annotated[
        str, typer.Option(help="snapshot, dk, dk-1, dk-2, dk-3, spm:PATH (external corpus) or ie.")
    ],
    out: Annotated[Path, typer.Option(help="CSV: release, adversary_gain, n_tuples.")],
    policy: PolicyFile = None,
    debug: Debug = False,
) -> None:
    """Attack a ledger as the adversary of §1.1 would; adversary gain (E10) per release."""
    from dpriv.attack import attack as run
    from dpriv.io import read_table
    from dpriv.ledger import Ledger

    pol = load_policy(policy) if policy is not None else Ledger(ledger).policy()
    try:
        gain = run(ledger, read_table(history).compute(), pol, knowledge)
    except PolicyError as exc:
        if policy is not None:
            raise
        raise PolicyError(f"{exc}; pass --policy FILE (knowledge paths are relative to it)") from None
    write_frame(gain, out)
    typer.echo(gain.to_string(index=False))
    typer.echo(f"adversary gain per release written to {out}")


experiment_app = typer.Typer(help="Reproduce the paper's experiment.", no_args_is_help=True)
app.add_typer(experiment_app, name="experiment")


@experiment_app.command("paper")
@command
def experiment_paper(
    out: Annotated[Path, typer.Option(help="Folder for the CSV tables, figures and ledgers.")],
    views: Views = 24,
    view_size: ViewSize = 5000,
    attendance: Annotated[float, typer.Option(help="Weekly exam probability (FINDINGS: q < 1).")] = 0.5,
    seed: Annotated[int, typer.Option(help="Seed of the generated history.")] = 0,
    debug: Debug = False,
) -> None:
    """Every method over its parameter grid, attacked under each knowledge kind (Fig. 3-6)."""
    from dpriv.experiment import run_experiment

    tables = run_experiment(out, views=views, view_size=view_size, attendance=attendance, seed=seed, say=_say)
    typer.echo(tables["frontier"].to_string(index=False))
    typer.echo(f"tables and figures in {out}")


@generate_app.command("pbc")
@command
def generate_pbc(
    path: Annotated[str, typer.Option(help="survival_pbcseq.csv (Rdatasets) or pbc2.csv (JM).")],
    out: Annotated[Path, typer.Option(help="Folder for history.parquet and policy.toml.")],
    keep: Annotated[str, typer.Option(help="Visit kept when a year has several: last or first.")] = "last",
    drop_missing: Annotated[
        bool, typer.Option(help="Drop visits without a stage (default: refuse).")
    ] = False,
    debug: Debug = False,
) -> None:
    """The Mayo Clinic PBC cohort as yearly views (visit year -> view), ready for release."""
    from dpriv.cohorts import write_pbc

    policy_path = write_pbc(out, path, keep=keep, drop_missing=drop_missing)
    typer.echo(f"history and policy written: {policy_path}")


@app.command()
@command
def report(
    ledger: Annotated[Path, typer.Argument(help="A release ledger.")],
    out: Annotated[Path, typer.Option(help="The HTML page to write (self-contained).")] = Path("report.html"),
    debug: Debug = False,
) -> None:
    """One self-contained HTML page: policy, per-release metrics, privacy and utility plots, and
    the adversary gains found in LEDGER/attack/gain_<knowledge>.csv (dpriv attack --out there)."""
    from dpriv.ledger import Ledger
    from dpriv.report import gain_curves, write_report

    led = Ledger(ledger)
    path = write_report(led, out)
    curves = gain_curves(led)
    typer.echo(
        f"report of {len(led.committed())} release(s) written to {path}"
        + (f"; adversary gains: {', '.join(curves)}" if curves else "; no attack results in attack/")
    )
