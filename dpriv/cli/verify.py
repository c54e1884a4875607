"""``dpriv verify``: check a released view (a file, or a release of a ledger under the ledger's
own policy) against the original it was made from."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated

import typer

from dpriv.cli.common import (
    QI,
    Categorical,
    Dates,
    Debug,
    Hierarchies,
    K,
    PolicyFile,
    Released,
    ReleaseFormat,
    Sensitive,
    T,
    _say,
    app,
    command,
    ledger_view,
    load_effective,
    show_policy,
    with_categorical,
    with_hierarchies,
)
from dpriv.cli.verify_files import (
    LEDGER_METRICS,
    Recorded,
    check_ledger_file,
    ledger_release,
    metrics_beside,
    recorded_beside,
    refuse_not_a_view,
    sensitive_beside,
)


@app.command()
@command
def verify(
    released: Released = None,
    original: Annotated[
        str | None, typer.Option(help="The original view (or history, with --view) it was made from.")
    ] = None,
    ledger: Annotated[
        Path | None, typer.Option(help="Check release --view I of this ledger, under its recorded policy.")
    ] = None,
    history: Annotated[
        str | None, typer.Option(help="With --ledger: the original history (same as --original).")
    ] = None,
    policy: PolicyFile = None,
    id: Annotated[str | None, typer.Option("--id", help="Respondent id column of the original.")] = None,
    add_row_id: Annotated[
        bool, typer.Option(help="The release was made with --add-row-id: number the original's rows.")
    ] = False,
    time: Annotated[str | None, typer.Option("--time", help="Release-index column of a history.")] = None,
    qi: QI = None,
    sensitive: Sensitive = None,
    categorical: Categorical = None,
    hierarchy: Hierarchies = None,
    date: Dates = None,
    k: K = None,
    t: T = None,
    view: Annotated[
        int | None, typer.Option(help="With a history as --original: the release index it was made from.")
    ] = None,
    release_format: ReleaseFormat = None,
    method: Annotated[
        str | None,
        typer.Option(
            help="The method it was released with (jsreduce, mondrian-l, mondrian-t, mondrian-bt, "
            "histogram): its groups are held to what that method promises. Default: the ledger's "
            "recorded method with --ledger, else jsreduce."
        ),
    ] = None,
    debug: Debug = False,
) -> None:
    """Check a released view: k, distinct l and t per QI-group, its tuple count against the
    view's, and that the original's tuples fit the released boxes (exit 2 when one fails).
    With --ledger, each box is held to its own members too (the ledger's state says who they
    are): tight, its bounds their min and max. A file inside a ledger must be the one its
    manifest recorded.
    j, rbk_closeness and posterior_bound need the adversary's priors of the members (private):
    the release checks them before writing (metrics.json), so they are not checked here
    (j_achieved prints None and says why; a note gives the value the release recorded).
    Beside a released file, its recorded tuple count (OUT.metrics.json, or a ledger release's
    metrics.json) is checked too."""
    from dpriv.baselines import METHODS
    from dpriv.errors import InputError
    from dpriv.io import ROW_ID, read_table
    from dpriv.release import verify_view
    from dpriv.rows import rows_of
    from dpriv.wording import flag_named

    if original is not None and history is not None and original != history:
        raise InputError("give the original as --original or --history, not both")
    original = original or history
    if original is None:
        raise InputError("give the original it was made from: --original FILE (--history H with --ledger)")
    if ledger is not None:
        led = ledger_view(ledger, released, view, "check")  # a damaged release: exit 2, named
    elif released is None:
        raise InputError("give the RELEASED view to check, or --ledger L --view I")
    else:
        refuse_not_a_view(Path(released))  # a state or metrics file: before anything is read
    if method is not None and method not in METHODS:
        raise InputError(f"--method {method!r} is not a method; choose one of {', '.join(METHODS)}")
    eff, recorded_method = load_effective(
        policy,
        ledger=ledger,
        id=ROW_ID if add_row_id else id,
        time=time,
        qi=qi,
        sensitive=sensitive,
        k=k,
        t=t,
        release_format=release_format,
    )
    if ledger is not None and method is not None and recorded_method and method != recorded_method:
        raise InputError(
            f"--method {method}: {ledger} was released with {recorded_method}; leave --method out"
        )
    pol = with_hierarchies(eff.policy, hierarchy)
    if method not in (None, "jsreduce") and pol.release_format == "anatomy":  # as the release refuses it
        raise InputError(
            f"--method {method}: an Anatomy release is made by JS-reduce only (the baselines publish "
            "generalized views); leave --method out, or check a generalized view"
        )
    if ledger is None:  # a ledger's file edited after its release: refused before work, as --ledger does
        check_ledger_file(Path(released))
    found = recorded_beside(Path(released)) if ledger is None else None  # damaged: refused before work
    if ledger is not None and policy is not None:  # the releases read with the ledger's columns
        from dpriv.release_check import check_same_columns

        check_same_columns(led.policy(), pol, f"--policy {policy}", ledger)
    if view is not None and pol.time is None:
        raise InputError(
            "--view I needs the release-index column of the history: --time C (or [columns] time)"
        )
    if add_row_id and pol.time is not None:
        raise InputError("--add-row-id numbers the rows of one view, not of a history: give --id C")
    # a bad row of the original is named by its line in the file (dpriv.cli.common.LINE_SOURCES)
    orig = read_table(original, add_row_id=add_row_id, what="history" if history else "original").compute()
    if pol.id in orig.columns:
        from dpriv.validate import check_unique_ids

        check_unique_ids(orig, pol, f"--original {original}")
    rel = led.read_view(view) if ledger is not None else read_table(released, what="released view").compute()
    table = None  # an Anatomy release's sensitive table (docs/released-format.md)
    if ledger is not None:
        from dpriv.release_check import check_released_history

        table = led.read_sensitive(view)
        # the history must hold the view that was released (else a valid release looks broken)
        check_released_history(led, orig, with_categorical(pol, categorical, date), [view])
    elif pol.release_format == "anatomy":
        path = sensitive_beside(Path(released))
        if not path.exists():
            beside = "its ledger wrote" if ledger_release(Path(released)) else "dpriv anonymize wrote"
            raise InputError(
                f"release_format = 'anatomy': the sensitive table {path} of {released} is missing; "
                f"restore the sensitive table {beside} next to it"
            )
        table = read_table(str(path)).compute()
    # the groups are held to what their method promised (a Mondrian l release: k and l)
    method = eff.method = method or (recorded_method if ledger is not None else None) or "jsreduce"
    show_policy(eff)
    if ledger is not None:
        recorded, recorded_in = led.read_metrics(view).n_released, "its metrics.json"
    else:
        recorded, recorded_in = _recorded(Path(released), found)
    from dpriv.criteria import promised

    members = None  # a ledger's state says which respondent each box holds: its boxes are held to them
    if ledger is not None and table is None:
        from dpriv.release_members import release_members

        members = release_members(led.read_state(view), view, pol)

    if method != "jsreduce":
        typer.echo(f"  method: {method} (checked: {', '.join(promised(method))})")
    # a bad row of a generalized release is named in its file (an Anatomy release's checked rows
    # are its sensitive table expanded, no file's)
    shown = (
        (led.release_dir(view) / "view.parquet" if ledger is not None else released)
        if table is None
        else None
    )
    with rows_of(None if shown is None else str(shown), released=True):
        report = verify_view(
            rel,
            orig,
            with_categorical(pol, categorical, date),
            view=view,
            sensitive=table,
            recorded=recorded,
            recorded_in=recorded_in,
            method=method,
            named=flag_named,  # its refusals name the flags: --original, --view <index>
            members=members,
        )
    held = promised(method, pol.rbk_closeness)
    for key, val in report.to_dict().items():
        if not isinstance(val, list | dict):
            typer.echo(f"{key:>12}: {val}{_unchecked(key, val, method, held)}")
    metrics = (
        led.release_dir(view) / LEDGER_METRICS if ledger is not None else (found.path if found else None)
    )
    for name in ("j", "rbk_closeness", "posterior_bound"):
        if getattr(pol, name) is not None and (name != "j" or name in held):
            _say(
                f"note: {name} = {getattr(pol, name)} is not checked here: it needs the members' priors, "
                "which only the release has (it checked them before writing: metrics.json)"
                + _recorded_value(metrics, f"{name}_achieved")
            )
    for p in report.problems:  # each kind already capped at 20 lines and a count of the rest
        typer.echo(f"  FAIL {p}")
    if not report.ok and released:
        _hints(Path(released), table is not None, method, report.problems)
    if not report.ok:
        raise typer.Exit(2)


def _unchecked(key: str, value: object, method: str, held: tuple[str, ...]) -> str:
    """Why an achieved value printed as None is not known here: ``" (...)"``, or ``""``. The
    value line alone read as a failure, or a bug (a drill: ``j_achieved: None``)."""
    if value is not None:
        return ""
    if key == "j_achieved":  # the verifier has the released groups, not the members' priors
        return (
            " (not checked here: it needs the members' private priors; see the note)"
            if "j" in held
            else f" (not checked: {method} does not promise j)"
        )
    if key in ("k_achieved", "l_achieved", "t_achieved"):
        return " (no QI-group released)"
    return ""


def _recorded_value(metrics: Path | None, key: str) -> str:
    """``"; <metrics> records <key> 0.5301"`` when the release's metrics file holds that number
    (what the release checked before writing), else ``""``."""
    try:
        value = json.loads(metrics.read_text(encoding="utf-8")).get(key) if metrics else None
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    return f"; {metrics} records {key} {value:.4f}"


def _recorded(released: Path, found: Recorded | None) -> tuple[int | None, str]:
    """The tuple count ``found`` beside a released file (:func:`recorded_beside`, read before the
    work) and the file's name; a note when there is none."""
    if found is None:
        _say(
            f"note: no {metrics_beside(released)} beside it: the tuple count is not checked (a row "
            "cut from the file cannot be told from a suppressed tuple)"
        )
        return None, ""
    typer.echo(f"  recorded: n_released {found.n_released} ({found.path})")
    return found.n_released, str(found.path)


def _hints(released: Path, anatomy: bool, method: str, problems: list[str]) -> None:
    """What a failed check of a file may mean: a ledger's release (checked under its recorded
    policy and method with --ledger), an Anatomy QI table, another method."""
    lr = ledger_release(released)
    if lr is not None:
        _say(
            f"note: {released} is release {lr.index} of the ledger {lr.root}: check it under the "
            f"ledger's recorded policy and method with dpriv verify --ledger {shlex.quote(str(lr.root))} "
            f"--view {lr.index} --original HISTORY"
        )
    table = sensitive_beside(released)
    if not anatomy and table.exists():
        _say(
            f"note: {table} lies beside it: if this is an Anatomy release, "
            "verify it with --release-format anatomy (or the policy it was released under)"
        )
    if method == "jsreduce" and lr is None and any(" > t = " in p for p in problems):
        _say("note: t is held as JS-reduce promises it; a release of another method: give --method")
