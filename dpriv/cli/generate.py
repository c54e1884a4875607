"""``dpriv generate medical|pbc`` and ``dpriv experiment paper``: data sets and the paper's run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dpriv.cli.common import Attendance, Debug, Seed, Views, ViewSize, command, say_err
from dpriv.cli.repeats import App

generate_app = App(help="Generate synthetic histories.", no_args_is_help=True)


@generate_app.command("medical")
@command
def generate_medical(
    out: Annotated[Path, typer.Option(help="Folder for history.parquet, policy.toml, knowledge/.")],
    partitions: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Build the view partition by partition in Dask (needs --views 1; for large "
            "--view-size) and write history.parquet as a Parquet folder of this many files "
            "(fewer if the view has fewer 65,536-row blocks).",
        ),
    ] = None,
    views: Views = 24,
    view_size: ViewSize = 5000,
    attendance: Attendance = 1.0,
    seed: Seed = 0,
    scheduler: Annotated[
        str | None,
        typer.Option(
            help="With --partitions: address of an existing Dask scheduler (default: Dask's "
            "scheduler-address config, DASK_SCHEDULER_ADDRESS, when set)."
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            help="Replace history.parquet, policy.toml and knowledge/ files an earlier "
            "dpriv generate or demo wrote into --out, if unchanged since (an edited or foreign "
            "file is refused)."
        ),
    ] = False,
    debug: Debug = False,
) -> None:
    """The paper-setting history (docs/algorithms.md §2.5) with its exact knowledge files."""
    from dpriv.cli.outputs import check_folder
    from dpriv.datasets import medical_history, write_history
    from dpriv.datasets.files import RECOMMENDED_DEFENSE

    check_folder(out)
    if partitions is not None:
        _generate_medical_partitioned(out, views, view_size, attendance, seed, partitions, scheduler, force)
        return
    if scheduler is not None:
        from dpriv.errors import InputError

        raise InputError("--scheduler goes with --partitions (the default build runs in this process)")
    from dpriv.datasets.generated import check_generated

    check_generated(out, overwrite=force, flag="--force")  # before the (long) generation
    _note_pinned(out, force)
    mh = medical_history(views, view_size, attendance=attendance, seed=seed)
    policy_path = write_history(out, mh, policy_extra=RECOMMENDED_DEFENSE, overwrite=force)
    typer.echo(
        f"{len(mh.history)} tuples of {mh.n_respondents} respondents over {views} views; "
        f"policy: {policy_path}"
    )
    sizes = mh.history.groupby("view").size().reindex(range(1, views + 1), fill_value=0)
    _warn_small_views(sizes.tolist(), RECOMMENDED_DEFENSE["privacy"]["k"])


def _warn_small_views(sizes: list[int], k: int) -> None:
    """A warning when a generated view holds fewer than the written policy's k tuples:
    ``dpriv release`` with that policy.toml as is refuses such a view."""
    small = [i for i, n in enumerate(sizes, start=1) if n < k]
    if small:
        shown = ", ".join(f"view {i}: {sizes[i - 1]}" for i in small[:5]) + (" ..." if len(small) > 5 else "")
        say_err(
            f"warning: {len(small)} view(s) hold fewer tuples than the policy's k = {k} ({shown}); "
            "dpriv release refuses them with this policy.toml: give a larger --view-size, or set "
            'small_view = "suppress" in its [privacy] table'
        )


def _generate_medical_partitioned(
    out: Path,
    views: int,
    view_size: int,
    attendance: float,
    seed: int,
    partitions: int,
    scheduler: str | None,
    force: bool,
) -> None:
    """``generate medical --partitions N``: one view built and written by Dask workers."""
    from dpriv.cluster import dask_client
    from dpriv.datasets import write_medical_view
    from dpriv.datasets.files import RECOMMENDED_DEFENSE
    from dpriv.datasets.generated import check_generated
    from dpriv.errors import InputError
    from dpriv.scheduler_address import chosen_scheduler
    from dpriv.wording import flag_named

    if views != 1:
        raise InputError(
            f"--partitions builds one view (a first release): use --views 1, not {views}; "
            "several views are generated in this process (drop --partitions)"
        )
    scheduler = chosen_scheduler(scheduler, None, say_err)  # before any file is looked at
    check_generated(out, overwrite=force, flag="--force")
    _note_pinned(out, force)
    _warn_small_views([view_size], RECOMMENDED_DEFENSE["privacy"]["k"])
    with dask_client(scheduler, say=say_err, named=flag_named, config=False):  # the config was read above
        policy_path = write_medical_view(
            out,
            view_size,
            npartitions=partitions,
            seed=seed,
            attendance=attendance,
            overwrite=force,
            policy_extra=RECOMMENDED_DEFENSE,
        )
    n_files = len(list((out / "history.parquet").glob("*.parquet")))
    typer.echo(
        f"{view_size} tuples of {view_size} respondents in 1 view, {n_files} Parquet files in "
        f"{out / 'history.parquet'}; policy: {policy_path}"
    )


experiment_app = App(help="Reproduce the paper's experiment.", no_args_is_help=True)


@experiment_app.command("paper")
@command
def experiment_paper(
    out: Annotated[Path, typer.Option(help="Folder for the CSV tables, figures and ledgers.")],
    views: Views = 24,
    view_size: ViewSize = 5000,
    attendance: Attendance = 0.5,  # docs/findings.md: the defense needs q < 1
    seed: Seed = 0,
    debug: Debug = False,
) -> None:
    """Every method over its parameter grid, attacked under each knowledge kind (Fig. 3-6)."""
    from dpriv.cli.outputs import check_folder
    from dpriv.experiment import run_experiment

    check_folder(out)  # an existing folder dpriv can write in holds --out (as for dpriv generate)
    from dpriv.wording import flag_named

    tables = run_experiment(
        out, views=views, view_size=view_size, attendance=attendance, seed=seed, say=say_err, named=flag_named
    )
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
    force: Annotated[
        bool,
        typer.Option(
            help="Replace history.parquet and policy.toml that an earlier dpriv generate pbc wrote "
            "into --out, if unchanged since (an edited or foreign file is refused)."
        ),
    ] = False,
    debug: Debug = False,
) -> None:
    """The Mayo Clinic PBC cohort as yearly views (visit year -> view), ready for release."""
    from dpriv.cli.outputs import check_folder
    from dpriv.datasets import write_pbc
    from dpriv.datasets.generated import PBC_FILES, check_generated

    check_folder(out)
    check_generated(out, overwrite=force, flag="--force", files=PBC_FILES)  # before reading the cohort
    _note_pinned(out, force, PBC_FILES)
    policy_path = write_pbc(out, path, keep=keep, drop_missing=drop_missing, overwrite=force)
    typer.echo(f"history and policy written: {policy_path}")


def _note_pinned(out: Path, force: bool, files: tuple[str, ...] | None = None) -> None:
    """With --force (checked: every file it replaces is an earlier generate's), say on stderr
    that a ledger beside them pins the files being replaced."""
    from dpriv.datasets.generated import GENERATED_FILES, pinned_note

    if force and (note := pinned_note(out, files or GENERATED_FILES)):
        say_err(note)
