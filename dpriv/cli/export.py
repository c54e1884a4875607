"""``dpriv export``: a released view in the interchange conventions of ARX and pyCANON
(:mod:`dpriv.interchange`; docs/released-format.md "Interchange export")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from dpriv.cli.common import (
    Debug,
    PolicyFile,
    Released,
    app,
    check_out,
    check_suffix,
    command,
    ledger_view,
    say_err,
    sensitive_out,
)
from dpriv.cli.policy_flags import load_policy
from dpriv.errors import InputError
from dpriv.output_record import record_output

#: ``--sep`` choices: the delimiter as typed -> the character written.
SEPARATORS = {",": ",", ";": ";", "tab": "\t", "\t": "\t"}
#: ``--spelling`` choices (:func:`dpriv.interchange.to_interchange`'s ``spelling``) -> how they write.
SPELLINGS = {"arx": "45-52, 45, Male", "dpriv": "[45-52], [45-45], {Male}"}


@app.command()
@command
def export(
    released: Released = None,
    out: Annotated[
        Path,
        typer.Option(
            help="The export: a .csv file (refused if it exists, unless --force and an earlier "
            "dpriv export wrote it)."
        ),
    ] = ...,
    ledger: Annotated[Path | None, typer.Option(help="Export release --view I of this ledger.")] = None,
    view: Annotated[int | None, typer.Option(help="With --ledger: the release index.")] = None,
    policy: PolicyFile = None,
    metrics: Annotated[
        Path | None,
        typer.Option(
            help="The release's metrics.json (its n_suppressed); default RELEASED.metrics.json (what "
            "dpriv anonymize writes), or metrics.json beside a ledger's releases/<i>/view.parquet."
        ),
    ] = None,
    suppressed: Annotated[
        str, typer.Option(help="mark: one row of '*' per suppressed tuple (ARX); omit: leave them out.")
    ] = "mark",
    sep: Annotated[str, typer.Option(help="Field delimiter: ',' (default), ';' or 'tab'.")] = ",",
    spelling: Annotated[
        str,
        typer.Option(
            help="arx: ranges and values as ARX writes them (45-52, 45, Male); dpriv: the spelling of "
            "exports before December 2026 ([45-52], [45-45], {Male}), for scripts that read it."
        ),
    ] = "arx",
    force: Annotated[
        bool, typer.Option(help="Replace an existing --out file that an earlier dpriv export wrote.")
    ] = False,
    debug: Debug = False,
) -> None:
    """Write a released view as ARX and pyCANON read it: ranges lo-hi (45-52) and values alone
    (45, Male; {F,M} for several) in the QI columns, '*' rows for suppressed tuples, short G001
    group labels. --spelling dpriv writes the earlier [45-52], [45-45] and {Male}."""
    from dpriv.cli.outputs import check_outside_ledger
    from dpriv.dates import date_qi
    from dpriv.interchange import layout_of, to_interchange
    from dpriv.io import atomic_write, made_folder, read_table
    from dpriv.ledger import SENSITIVE
    from dpriv.rows import rows_of

    if sep not in SEPARATORS:
        raise InputError(f"--sep {sep!r}: choose ',', ';' or 'tab'")
    if spelling not in SPELLINGS:
        raise InputError(
            f"--spelling {spelling!r}: choose {' or '.join(f'{k} ({v})' for k, v in SPELLINGS.items())}"
        )
    check_suffix(out, "export")  # CSV, the file ARX and pyCANON read (the release is the Parquet file)
    check_outside_ledger(out)  # not even its attack/ folder, which takes attack results only
    if ledger is not None:
        led = ledger_view(ledger, released, view, "export")
        source = str(led.release_dir(view) / "view.parquet")
        pol = led.policy() if policy is None else load_policy(policy)
        metrics = metrics or led.release_dir(view) / "metrics.json"
    else:
        if released is None:
            raise InputError("give the RELEASED view to export, or --ledger L --view I")
        if view is not None:
            raise InputError("--view I goes with --ledger L (a release of a ledger)")
        source = released
        pol = load_policy(policy) if policy is not None else None
        if metrics is None and "://" not in released:
            metrics = _beside(Path(released))
    anatomy = (led.release_dir(view) / SENSITIVE) if ledger is not None else sensitive_out(Path(source))
    if (pol is not None and pol.release_format == "anatomy") or ("://" not in source and anatomy.exists()):
        raise InputError(
            f"{source} is an Anatomy release (exact QIs; the sensitive values in {anatomy.name}): it has "
            "no generalized QIs to export; its two tables are read as they are (docs/released-format.md)"
        )
    check_out(out, source, kind="export", force=force)
    n_suppressed = None
    table = read_table(source, what="released view")
    qi, sensitive = (None, None) if pol is None else (list(pol.qi), pol.sensitive)
    try:  # a released view at all? (a history has no metrics: their absence is not what is wrong)
        layout_of(list(table.columns), qi, sensitive)
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None
    frame = table.compute()
    if suppressed == "mark" and metrics is not None:
        try:
            record = json.loads(Path(metrics).read_text())
            if not isinstance(record, dict) or "n_suppressed" not in record:
                raise TypeError("not a JSON object with n_suppressed")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(
                f"cannot read n_suppressed from {metrics} ({type(exc).__name__}: {exc}); give the "
                "release's metrics.json (--metrics F), or leave the suppressed tuples out (--suppressed omit)"
            ) from None
        n_suppressed = _suppressed_count(record, metrics, len(frame))
        own = {
            "n_released": len(frame),
            "n_groups": int(frame["qi_group"].nunique()) if "qi_group" in frame else None,
        }
        if ledger is not None:
            own["release"] = view
        wrong = [k for k, v in own.items() if v is not None and record.get(k, v) != v]
        if wrong:  # its suppressed count would become '*' rows of this release
            shown = ", ".join(f"{k} {record[k]} (this view: {own[k]})" for k in wrong)
            raise InputError(
                f"{metrics} records {shown}: these are another release's metrics; give this "
                "release's metrics.json (--metrics F), or leave the suppressed tuples out (--suppressed omit)"
            )
    with rows_of(source):  # a bad row named by its line or row in the file (read whole, in order)
        result = to_interchange(
            frame,
            qi=qi,
            sensitive=sensitive,
            n_suppressed=n_suppressed,
            suppressed=suppressed,  # type: ignore[arg-type]
            dates=None if pol is None else date_qi(pol),
            spelling=spelling,  # type: ignore[arg-type]
            hierarchies=None if pol is None else list(pol.hierarchies),  # node names written as named
        )
    lay = result.layout
    say_err(
        f"export, {spelling} spelling ({SPELLINGS[spelling]}): QIs {lay.qi} (numeric: {lay.numeric}), "
        f"sensitive {lay.sensitive!r}; "
        f"{result.n_kept} released rows in {result.n_groups} QI-groups"
        + (
            f", {result.n_marked} suppressed rows marked '*'"
            if suppressed == "mark"
            else ", suppressed rows left out"
        )
    )
    if result.n_text_classes < result.n_groups:
        say_err(
            f"note: {result.n_groups - result.n_text_classes} QI-group(s) share their generalized QI "
            f"text with another group: a tool that groups rows by the QI columns (pyCANON) sees "
            f"{result.n_text_classes} classes where dpriv released {result.n_groups}; group by "
            "qi_group to check dpriv's own groups"
        )
    delim = SEPARATORS[sep]
    with made_folder(out.parent):
        atomic_write(out, lambda fh: result.table.to_csv(fh, index=False, sep=delim), mode=None)
        record_output(out, "export")
    typer.echo(f"export written to {out}")


def _suppressed_count(record: dict, metrics, n_released: int) -> int:
    """The metrics' ``n_suppressed`` checked against the view's size they record: a whole
    number equal to ``n_original - n_released`` (every dpriv metrics.json records both; JSON
    ``true``, ``2.5``, ``"3"`` or 10**12 would become that many ``*`` rows); InputError
    otherwise."""
    n, n_original = record["n_suppressed"], record.get("n_original")  # present: checked on reading
    if isinstance(n, int) and not isinstance(n, bool) and n >= 0 and n == (n_original or 0) - n_released:
        return n
    size = "no n_original" if n_original is None else f"n_original {n_original!r}"
    raise InputError(
        f"{metrics} records n_suppressed {n!r} and {size}, but this release holds {n_released} "
        "tuples: not the number of tuples it left out; give the release's own metrics.json (--metrics "
        "F), or leave the suppressed tuples out (--suppressed omit)"
    )


def _beside(released: Path) -> Path | None:
    """The metrics of a released view given by path, where dpriv put them: ``RELEASED.metrics.json``
    (dpriv anonymize), or ``metrics.json`` beside a ledger's ``releases/<i>/view.parquet``; None
    when neither is there."""
    from dpriv.cli.verify_files import metrics_beside

    path = metrics_beside(released)
    return path if path.is_file() else None
