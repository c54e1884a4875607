"""The ``dpriv`` commands that anonymize, release, verify, measure, attack and report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dpriv.cli import audit as _audit  # noqa: F401 - registers ``dpriv attack`` and ``dpriv report``
from dpriv.cli import export as _export  # noqa: F401 - registers ``dpriv export``
from dpriv.cli import status as _status  # noqa: F401 - registers ``dpriv status``
from dpriv.cli import verify as _verify  # noqa: F401 - registers ``dpriv verify``
from dpriv.cli.anonymized import write_anonymized
from dpriv.cli.common import (
    QI,
    BtB,
    BtT,
    Categorical,
    Cluster,
    Dates,
    Debug,
    Hierarchies,
    J,
    K,
    L,
    Partitions,
    PolicyFile,
    ReleaseFormat,
    Scheduler,
    Sensitive,
    T,
    app,
    check_out,
    command,
    method_option,
    print_summary,
    say_err,
    sensitive_out,
    show_policy,
)
from dpriv.cli.generate import experiment_app, generate_app
from dpriv.cli.new_ledger import checked_ledger
from dpriv.cli.policy_flags import load_effective, with_categorical, with_hierarchies
from dpriv.cli.release_run import run_release
from dpriv.cli.verify_files import METRICS_SUFFIX
from dpriv.errors import PolicyError
from dpriv.scheduler_address import chosen_scheduler
from dpriv.wording import flag_named


@app.command()
@command
def anonymize(
    input: Annotated[str, typer.Argument(help="CSV (delimiter detected) or Parquet, path or URL.")],
    out: Annotated[Path, typer.Option(help="Released view: .parquet or .csv.")],
    policy: PolicyFile = None,
    id: Annotated[str | None, typer.Option("--id", help="Respondent id column.")] = None,
    qi: QI = None,
    sensitive: Sensitive = None,
    categorical: Categorical = None,
    hierarchy: Hierarchies = None,
    date: Dates = None,
    method: method_option("jsreduce") = None,
    k: K = None,
    t: T = None,
    j: J = None,
    l: L = None,  # noqa: E741 - the name of the l-diversity parameter
    bt_b: BtB = None,
    bt_t: BtT = None,
    seed: Annotated[int | None, typer.Option(help="Seed of every random choice.")] = None,
    prior: Annotated[str, typer.Option(help="Priors: class (empirical per QI class) or uniform.")] = "class",
    add_row_id: Annotated[bool, typer.Option(help="Add a row_id column and use it as the id.")] = False,
    npartitions: Partitions = None,
    scheduler: Scheduler = None,
    cluster: Cluster = None,
    release_format: ReleaseFormat = None,
    force: Annotated[
        bool, typer.Option(help="Replace an existing --out file (and its OUT.metrics.json).")
    ] = False,
    debug: Debug = False,
) -> None:
    """Generalize one view under k-anonymity, t-closeness and the JS threshold j (with
    --release-format anatomy: OUT is the QI table, OUT.sensitive.<ext> the sensitive table);
    with --method, by a Mondrian baseline instead (mondrian-l: k and l; mondrian-t: k and t;
    mondrian-bt: k and (B,t)-privacy) or as one QI-group (histogram)."""
    from dpriv.baselines import check_method_name
    from dpriv.io import ROW_ID, read_table

    if add_row_id and id is not None:
        raise PolicyError("--add-row-id numbers the rows as the id: give it or --id C, not both")
    method = method or "jsreduce"
    check_method_name(method)  # before the policy is printed and the input read, as release does
    check_out(out, input, kind="anonymize", force=force, companions=(METRICS_SUFFIX,))
    scheduler = chosen_scheduler(scheduler, cluster, say_err)  # probed before the input is read
    eff, _ = load_effective(
        policy,
        id=ROW_ID if add_row_id else id,
        qi=qi,
        sensitive=sensitive,
        k=k,
        t=t,
        j=j,
        l=l,
        bt_b=bt_b,
        bt_t=bt_t,
        seed=seed,
        npartitions=npartitions,
        release_format=release_format,
    )
    eff.method = method  # a field only another method uses is printed so
    table_out = sensitive_out(out)
    if eff.policy.release_format == "anatomy":  # its sensitive table is written there too
        check_out(out, input, kind="anonymize", force=force, also=(table_out,))
    view = read_table(input, add_row_id=add_row_id, id_column=eff.policy.id)
    pol = with_hierarchies(with_categorical(show_policy(eff), categorical, date), hierarchy)
    if method != "jsreduce":  # as release says it (the default is not said: one view, JS-reduce)
        say_err(f"  method: {method}")
    if pol.time is not None and pol.time not in view.columns:  # a history's policy, one view
        say_err(f"note: the policy's time column {pol.time!r} is not in {input}: released as one view")
        pol = type(pol).from_dict({**pol.model_dump(), "time": None})
    from dpriv.cluster import release_frame, release_place

    # checked, then read once into this process when small (no cluster), as in `dpriv release`
    placement = release_place(view, pol, scheduler=scheduler, cluster=cluster, source=input, named=flag_named)
    from dpriv.input_columns import UNUSED, said_unused, unused_note
    from dpriv.release import anonymize as run

    said_unused()  # one of its notes, printed below

    with release_frame(placement, scheduler=scheduler, say=say_err, named=flag_named) as frame:
        result = run(frame, pol, prior=prior, method=method)
    for note in result.notes:  # the unused columns' note in the command line's words (--qi)
        say_err(unused_note(view.columns, result.policy, flag_named) if note.startswith(UNUSED) else note)
    also = (table_out,) if result.sensitive is not None else ()
    # created meanwhile?
    check_out(out, input, kind="anonymize", force=force, companions=(METRICS_SUFFIX,), also=also)
    # an interrupt from here on names what is written (dpriv/cli/anonymized.py)
    write_anonymized(result, out, table_out, out.with_name(out.name + METRICS_SUFFIX))
    if result.sensitive is not None:
        typer.echo(f"sensitive table written to {table_out}")
    print_summary(result.metrics, method)
    typer.echo(f"released view written to {out}")


app.add_typer(generate_app, name="generate")


@app.command()
@command(ledger="ledger")  # an interrupted release names its last committed release
def release(
    history: Annotated[str, typer.Argument(help="History: id, time (1..n), QIs, sensitive.")],
    ledger: Annotated[Path, typer.Option(help="Ledger folder (created if new).")],
    method: method_option("the ledger's recorded method, else jsreduce") = None,
    policy: PolicyFile = None,
    id: Annotated[str | None, typer.Option("--id", help="Respondent id column.")] = None,
    time: Annotated[str | None, typer.Option("--time", help="Release-index column (1..n).")] = None,
    qi: QI = None,
    sensitive: Sensitive = None,
    categorical: Categorical = None,
    hierarchy: Hierarchies = None,
    date: Dates = None,
    k: K = None,
    t: T = None,
    j: J = None,
    l: L = None,  # noqa: E741 - the name of the l-diversity parameter
    bt_b: BtB = None,
    bt_t: BtT = None,
    small_view: Annotated[
        str | None,
        typer.Option(
            help='A view with fewer than k tuples: "refuse" (default) or "suppress" it and go on '
            '("merge" is refused: docs/policy.md).'
        ),
    ] = None,
    release_format: ReleaseFormat = None,
    retro_max_gain: Annotated[
        float | None,
        typer.Option(
            help="Release gate, a mean gain in (0, 1]: before each release i is written, the "
            "retrospective adversary attacks releases 1..i; above this bound release i is regrouped "
            "(retro_lever of the policy: j halved by default, at most retro_retries times), then "
            "refused (docs/policy.md#release-gate).",
        ),
    ] = None,
    allow_repeated_view: Annotated[
        bool,
        typer.Option(
            "--allow-repeated-view",
            help="Release a view that holds exactly the rows of an earlier one (refused by default: "
            "an earlier week's file sent again).",
        ),
    ] = False,
    allow_new_ids: Annotated[
        bool,
        typer.Option(
            "--allow-new-ids",
            help="Release a view whose ids are almost all unknown after views whose respondents "
            "came back (refused by default: ids written in another format; docs/ledger.md#new-ids).",
        ),
    ] = False,
    existing_ledger: Annotated[
        bool,
        typer.Option(
            "--existing-ledger",
            help="Refuse (exit 2, nothing written) a --ledger that holds no committed release (a missing "
            "or empty folder: a share not mounted, $LEDGER unset), and a history whose views stop before "
            "the ledger's last release (otherwise a warning). For scheduled runs after the first week.",
        ),
    ] = False,
    npartitions: Partitions = None,
    scheduler: Scheduler = None,
    cluster: Cluster = None,
    progress: Annotated[
        bool | None,
        typer.Option(
            "--progress/--no-progress", help="Dask progress bars on stderr (default: when it is a terminal)."
        ),
    ] = None,
    debug: Debug = False,
) -> None:
    """Release the views of a history not yet in the ledger, in order (resumable); without
    --policy an existing ledger's recorded policy and method are used (flags over them)."""
    # a new ledger said (after the checks), or refused with --existing-ledger; one it cannot
    # write: refused by run_release if it has work
    note = checked_ledger(ledger, existing_ledger)
    scheduler = chosen_scheduler(scheduler, cluster, say_err)  # probed before anything is read
    eff, recorded_method = load_effective(
        policy,
        ledger=ledger if ledger.is_dir() else None,
        knowledge_dirs=[Path(history).parent] if "://" not in history else [],
        id=id,
        time=time,
        qi=qi,
        sensitive=sensitive,
        k=k,
        t=t,
        j=j,
        l=l,
        bt_b=bt_b,
        bt_t=bt_t,
        small_view=small_view,
        release_format=release_format,
        retro_max_gain=retro_max_gain,
    )
    method = eff.method = method or recorded_method or "jsreduce"
    from dpriv.baselines import check_method_name

    check_method_name(method)  # before the policy is printed and the history read
    run_release(
        history, ledger, eff, scheduler, npartitions, method, progress, categorical, hierarchy, date, cluster,
        allow_repeated_view, allow_new_ids, existing_ledger, note,
    )  # fmt: skip


from dpriv.cli import demo as _demo  # noqa: E402, F401 - registers ``dpriv demo`` (after release in --help)
from dpriv.cli import kpr_command as _kpr  # noqa: E402, F401 - registers ``dpriv kpr`` (after demo in --help)

app.add_typer(experiment_app, name="experiment")
