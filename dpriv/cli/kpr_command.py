"""``dpriv kpr``: the Knowledge Protection Rate of a synthetic or anonymized table against its
original (docs/algorithms.md E21)."""

from __future__ import annotations

from typing import Annotated

import typer

from dpriv.cli.common import Debug, app, command
from dpriv.cli.repeats import comma_names


@app.command()
@command
def kpr(
    original: Annotated[str, typer.Argument(help="Original table.")],
    synthetic: Annotated[str, typer.Argument(help="Synthetic / anonymized table.")],
    known: Annotated[str, typer.Option(help="Variables the attacker knows, comma-separated.")],
    debug: Debug = False,
) -> None:
    """Knowledge Protection Rate (docs/algorithms.md E21), last line "KPR <value>"."""
    from dpriv.errors import InputError
    from dpriv.io import read_table
    from dpriv.metrics.kpr import kpr as run

    names = comma_names(known)
    orig, synth = read_table(original, what="original"), read_table(synthetic, what="synthetic table")
    if len(orig.head(1, npartitions=-1)) == 0:  # before the types: a header-only CSV reads as text
        raise InputError(f"kpr: the original table {original} has no rows; KPR needs n > 0 records")
    if len(synth.head(1, npartitions=-1)) == 0:  # a header-only CSV has no types: take the original's
        synth = synth.astype({c: orig.dtypes[c] for c in names if c in synth.columns and c in orig.columns})
    res = run(orig, synth, names)
    typer.echo(
        f"n={res.n} unique originals={res.n_unique_original} "
        f"unique synthetic profiles={res.n_unique_synthetic_profiles} matched={res.n_matched}"
    )
    if res.note:
        typer.echo(res.note)
    typer.echo(f"KPR {res.kpr:.4f}")
