"""``dpriv verify``: check a released view (a file, or a release of a ledger under the ledger's
own policy) against the original it was made from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from dpriv.cli.common import (
    QI,
    Categorical,
    Dates,
    Debug,
    Hierarchies,
    K,
    L,
    PolicyFile,
    Released,
    ReleaseFormat,
    Sensitive,
    T,
    app,
    command,
    ledger_view,
    say_err,
    show_policy,
)
from dpriv.cli.policy_flags import load_effective, with_categorical, with_hierarchies
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
from dpriv.cli.verify_recorded import (
    NOTED,
    Asked,
    asked_note,
    held_to_ledger,
    held_to_record,
    say_asked,
    say_recorded,
)
from dpriv.cli.verify_report import print_report

if TYPE_CHECKING:
    import pandas as pd

    from dpriv.anonymity.verify import VerificationReport
    from dpriv.cli.effective import EffectivePolicy
    from dpriv.ledger import Ledger
    from dpriv.policy import ReleasePolicy


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
    l: L = None,  # noqa: E741 - the name of the l-diversity parameter
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
    metrics.json) is checked too, and a file of dpriv anonymize is held to the method and values
    it recorded there (k, t, l, max_suppression, ...) unless --k, --t, --l or the policy file
    asks another value: that is measured, the recorded value printed beside it."""
    from dpriv.io import ROW_ID

    flags = _Flags(
        released=released,
        original=_the_original(original, history),
        from_history=bool(history),
        ledger=ledger,
        policy=policy,
        view=view,
        add_row_id=add_row_id,
        method=method,
        hierarchy=hierarchy,
        categorical=categorical,
        date=date,
    )
    given = {"time": time, "qi": qi, "sensitive": sensitive, "k": k, "t": t, "l": l}
    given["release_format"] = release_format
    settled = _settle(flags, id=ROW_ID if add_row_id else id, **given)
    inputs = _read_inputs(flags, settled)
    # the groups are held to what their method promised (a Mondrian l release: k and l)
    held_to = settled.eff.method = method or settled.recorded_method or "jsreduce"
    show_policy(settled.eff)
    report = _run_checks(flags, settled, inputs, held_to)
    metrics = _metrics_file(settled, view)
    unasked = [name for name in NOTED if name not in settled.eff.sources]
    anatomy = inputs.table is not None
    print_report(
        report, settled.policy, held_to, metrics=metrics, released=released, anatomy=anatomy, unasked=unasked
    )
    if not report.ok:
        where = settled.led.root / "policy.json" if settled.led is not None else metrics
        if settled.asked and where is not None:
            say_err(asked_note(settled.asked, where))
        raise typer.Exit(2)


@dataclass(frozen=True)
class _Flags:
    """The flags of one ``dpriv verify`` that its steps read (``original``: --original or
    --history, ``from_history`` when given as --history)."""

    released: str | None
    original: str
    from_history: bool
    ledger: Path | None
    policy: Path | None
    view: int | None
    add_row_id: bool
    method: str | None
    hierarchy: list[str] | None
    categorical: str | None
    date: str | None


@dataclass(frozen=True)
class _Settled:
    """The flags checked and the policy settled, before any input is read."""

    eff: EffectivePolicy  # the effective policy, each value with its source
    policy: ReleasePolicy  # its policy with the --hierarchy files
    recorded_method: str | None  # the ledger's, or the method recorded beside a released file
    led: Ledger | None  # --ledger's; None for a released file
    found: Recorded | None  # the tuple count beside a released file (read before the work)
    asked: tuple[Asked, ...]  # values asked other than those recorded (checked as asked)


class _Inputs(NamedTuple):
    """The frames the checks read."""

    original: pd.DataFrame
    released: pd.DataFrame
    table: pd.DataFrame | None  # an Anatomy release's sensitive table (docs/released-format.md)


class _Count(NamedTuple):
    """The tuple count the release recorded (None: none found) and the file that says so."""

    n_released: int | None
    recorded_in: str


def _the_original(original: str | None, history: str | None) -> str:
    """The original given as --original or --history; InputError when neither or both differ."""
    from dpriv.errors import InputError

    if original is not None and history is not None and original != history:
        raise InputError("give the original as --original or --history, not both")
    original = original or history
    if original is None:
        raise InputError("give the original it was made from: --original FILE (--history H with --ledger)")
    return original


def _settle(flags: _Flags, **given: Any) -> _Settled:
    """Every refusal of the flags, in the order a user meets them, before any input is read
    (``given``: the policy flags :func:`load_effective` takes); InputError, PolicyError or
    LedgerError name the flag."""
    from dpriv.baselines import METHODS
    from dpriv.errors import InputError

    led = _target(flags)
    method = flags.method
    if method is not None and method not in METHODS:
        raise InputError(f"--method {method!r} is not a method; choose one of {', '.join(METHODS)}")
    eff, recorded_method = load_effective(flags.policy, ledger=flags.ledger, **given)
    if led is not None and method is not None and recorded_method and method != recorded_method:
        raise InputError(
            f"--method {method}: {flags.ledger} was released with {recorded_method}; leave --method out"
        )
    found, asked = None, ()
    if led is not None:  # flags or a policy file over the ledger's policy.json: measured as asked
        asked = held_to_ledger(eff, led.policy(), method or recorded_method or "jsreduce")
    else:  # a ledger's file edited after its release: refused before work, as --ledger does
        check_ledger_file(Path(flags.released))
        found = recorded_beside(Path(flags.released))  # damaged: refused before work
        held = held_to_record(eff, found, method, flags.released)
        recorded_method, asked = held.method, held.asked
    pol = with_hierarchies(eff.policy, flags.hierarchy)
    if method not in (None, "jsreduce") and pol.release_format == "anatomy":  # as the release refuses it
        raise InputError(
            f"--method {method}: an Anatomy release is made by JS-reduce only (the baselines publish "
            "generalized views); leave --method out, or check a generalized view"
        )
    _refuse_other_columns(flags, led, pol)
    return _Settled(eff, pol, recorded_method, led, found, asked)


def _target(flags: _Flags) -> Ledger | None:
    """The ledger whose release is checked (a damaged release: exit 2, named), or None for a
    released file, refused when it is a state or metrics file (before anything is read)."""
    from dpriv.errors import InputError

    if flags.ledger is not None:
        return ledger_view(flags.ledger, flags.released, flags.view, "check")
    if flags.released is None:
        raise InputError("give the RELEASED view to check, or --ledger L --view I")
    refuse_not_a_view(Path(flags.released))
    return None


def _refuse_other_columns(flags: _Flags, led: Ledger | None, pol: ReleasePolicy) -> None:
    """A --policy whose columns are not the ledger's, --view without a history's release-index
    column, --add-row-id on a history: InputError."""
    from dpriv.errors import InputError

    if led is not None and flags.policy is not None:  # the releases read with the ledger's columns
        from dpriv.ledger_checks import check_same_columns

        check_same_columns(led.policy(), pol, f"--policy {flags.policy}", flags.ledger)
    if flags.view is not None and pol.time is None:
        raise InputError(
            "--view I needs the release-index column of the history: --time C (or [columns] time)"
        )
    if flags.add_row_id and pol.time is not None:
        raise InputError("--add-row-id numbers the rows of one view, not of a history: give --id C")


def _read_inputs(flags: _Flags, s: _Settled) -> _Inputs:
    """The original (ids unique), the released view and an Anatomy release's sensitive table;
    a ledger's history must hold the view that was released (else a valid release looks broken)."""
    from dpriv.io import read_table

    pol = s.policy
    # a bad row of the original is named by its line in the file (dpriv.cli.common.LINE_SOURCES)
    what = "history" if flags.from_history else "original"
    orig = read_table(flags.original, add_row_id=flags.add_row_id, what=what).compute()
    if pol.id in orig.columns:
        from dpriv.validate import check_unique_ids

        check_unique_ids(orig, pol, f"--original {flags.original}")
    if s.led is not None:
        from dpriv.ledger_checks import check_released_history

        rel = s.led.read_view(flags.view)
        table = s.led.read_sensitive(flags.view)
        check_released_history(
            s.led, orig, with_categorical(pol, flags.categorical, flags.date), [flags.view]
        )
        return _Inputs(orig, rel, table)
    rel = read_table(flags.released, what="released view").compute()
    return _Inputs(orig, rel, _table_beside(flags.released) if pol.release_format == "anatomy" else None)


def _table_beside(released: str) -> pd.DataFrame:
    """The sensitive table beside an Anatomy release's QI table; InputError when it is missing."""
    from dpriv.errors import InputError
    from dpriv.io import read_table

    path = sensitive_beside(Path(released))
    if not path.exists():
        beside = "its ledger wrote" if ledger_release(Path(released)) else "dpriv anonymize wrote"
        raise InputError(
            f"release_format = 'anatomy': the sensitive table {path} of {released} is missing; "
            f"restore the sensitive table {beside} next to it"
        )
    return read_table(str(path)).compute()


def _run_checks(flags: _Flags, s: _Settled, inputs: _Inputs, method: str) -> VerificationReport:
    """The checks of the released view (:func:`dpriv.release.verify_view`) against the original,
    its recorded tuple count and, for a ledger's generalized release, its members (the ledger's
    state says which respondent each box holds: its boxes are held to them)."""
    from dpriv.criteria import promised
    from dpriv.release import verify_view
    from dpriv.rows import rows_of
    from dpriv.wording import flag_named

    if s.led is not None:
        count = _Count(s.led.read_metrics(flags.view).n_released, "its metrics.json")
        say_asked(s.asked, flags.policy, "the ledger released with", str(s.led.root / "policy.json"))
    else:
        count = _recorded(Path(flags.released), s.found, s.asked, flags.policy)
    members = None
    if s.led is not None and inputs.table is None:
        from dpriv.release_members import release_members

        members = release_members(s.led.read_state(flags.view), flags.view, s.policy)
    if method != "jsreduce":
        typer.echo(f"  method: {method} (checked: {', '.join(promised(method))})")
    with rows_of(_rows_named_in(flags, s, inputs), released=True):
        return verify_view(
            inputs.released,
            inputs.original,
            with_categorical(s.policy, flags.categorical, flags.date),
            view=flags.view,
            sensitive=inputs.table,
            recorded=count.n_released,
            recorded_in=count.recorded_in,
            method=method,
            named=flag_named,  # its refusals name the flags: --original, --view <index>
            members=members,
        )


def _rows_named_in(flags: _Flags, s: _Settled, inputs: _Inputs) -> str | None:
    """The file a bad row of a generalized release is named in (an Anatomy release's checked
    rows are its sensitive table expanded, no file's: None)."""
    if inputs.table is not None:
        return None
    return str(s.led.release_dir(flags.view) / "view.parquet" if s.led is not None else flags.released)


def _metrics_file(s: _Settled, view: int | None) -> Path | None:
    """The release's metrics file, whose recorded figures the notes give (None: none beside
    a released file)."""
    if s.led is not None:
        return s.led.release_dir(view) / LEDGER_METRICS
    return s.found.path if s.found else None


def _recorded(
    released: Path, found: Recorded | None, asked: tuple[Asked, ...], policy: Path | None
) -> _Count:
    """The tuple count ``found`` beside a released file (:func:`recorded_beside`, read before the
    work) and the file's name, said with the values recorded and asked (:func:`say_recorded`);
    a note when there is none."""
    if found is None:
        say_err(
            f"note: no {metrics_beside(released)} beside it: the tuple count is not checked (a row "
            "cut from the file cannot be told from a suppressed tuple)"
        )
        return _Count(None, "")
    say_recorded(found, asked, policy)
    return _Count(found.n_released, str(found.path))
