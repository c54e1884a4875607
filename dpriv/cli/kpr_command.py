"""``dpriv kpr``: the Knowledge Protection Rate of a synthetic or anonymized table against its
original (docs/algorithms.md E21)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from dpriv.cli.common import Debug, app, command
from dpriv.cli.repeats import comma_names


@app.command()
@command
def kpr(
    original: Annotated[
        str, typer.Argument(help="Original table: the records the synthetic table was made from (one view).")
    ],
    synthetic: Annotated[str, typer.Argument(help="Synthetic / anonymized table: microdata, not intervals.")],
    known: Annotated[str, typer.Option(help="Variables the attacker knows, comma-separated.")],
    debug: Debug = False,
) -> None:
    """Knowledge Protection Rate (docs/algorithms.md E21), last line "KPR <value>".

    It compares records with their synthetic version: one view of a history, not the whole
    history (a warning says so when one table has twice the rows of the other or more). A
    released (generalized) view holds intervals: its KPR is in its metrics.json."""
    from dpriv.errors import InputError
    from dpriv.io import read_table
    from dpriv.metrics.kpr import kpr as run
    from dpriv.metrics.kpr_inputs import KPRTableError, ReleasedViewError
    from dpriv.rows import CSV_MISSING, input_file, rows_of

    names = comma_names(known)
    orig, synth = read_table(original, what="original"), read_table(synthetic, what="synthetic table")
    if len(orig.head(1, npartitions=-1)) == 0:  # before the types: a header-only CSV reads as text
        raise InputError(f"kpr: the original table {original} has no rows; KPR needs n > 0 records")
    if len(synth.head(1, npartitions=-1)) == 0:  # a header-only CSV has no types: take the original's
        synth = synth.astype({c: orig.dtypes[c] for c in names if c in synth.columns and c in orig.columns})
    paths = {"original": original, "synthetic": synthetic}
    try:
        res = run(orig, synth, names)
    except KPRTableError as exc:  # its rows by their line in the file of its table
        path = paths[exc.table]
        recorded = _recorded_kpr(path) if isinstance(exc, ReleasedViewError) else ""
        raise InputError(exc.in_file(path) + recorded) from None
    typer.echo(
        f"n={res.n} unique originals={res.n_unique_original} "
        f"unique synthetic profiles={res.n_unique_synthetic_profiles} matched={res.n_matched}"
    )
    if res.note:
        typer.echo(res.note)

    def is_csv(path: str) -> bool:  # as dpriv.rows names a file's rows: by lines, or by rows
        with rows_of(path):
            source = input_file()
        return source is not None and source.csv

    if "is missing in" in res.note and any(map(is_csv, paths.values())):  # "NA" is read as missing too
        typer.echo(f"(a missing value{CSV_MISSING.removeprefix(';')})")
    typer.echo(f"KPR {res.kpr:.4f}")


def _recorded_kpr(path: str) -> str:
    """``"; ... records KPR 99.6500 for this release"`` when the metrics file of the released
    file ``path`` (a ledger's releases/<i>/metrics.json, or OUT.metrics.json) holds its KPR;
    ``""`` otherwise (a URL, a copy without its metrics, a damaged file: the message above
    already says where a release's KPR is)."""
    from dpriv.cli.verify_files import metrics_beside

    if "://" in path:
        return ""
    metrics = metrics_beside(Path(path))
    try:
        value = json.loads(metrics.read_text(encoding="utf-8")).get("kpr")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    return f"; {metrics} records KPR {float(value):.4f} for this release (its QIs known)"
