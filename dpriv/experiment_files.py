"""Where ``dpriv experiment paper`` writes (:func:`dpriv.experiment.run_experiment`): the checks
of its folder before any work, and its tables and figures written atomically and recorded as
the experiment's in the folder's ``.dpriv-outputs`` (dpriv/cli/outputs.py), so that a rerun
replaces its own files and never a user's."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from dpriv.errors import InputError

#: The files an experiment writes into its folder, besides ``gain_<method>.png`` per method,
#: ``data/`` (:func:`dpriv.datasets.write_history`) and ``ledgers/<setting>/``.
OUTPUTS = ("runs.csv", "gains.csv", "retro.csv", "frontier.csv", "fig3_semiperimeter.png", "frontier.png")


def check_out(out: Path, grid: dict[str, list[dict]]) -> None:
    """Refuse (InputError, before anything is generated or written) an ``out`` that is a file
    or lies inside a release ledger, a table or figure of the experiment there that an earlier
    experiment did not write as it is now (a user's ``runs.csv`` is never replaced; a rerun
    replaces its own), and a ``data/`` folder holding only part of a generated history."""
    from dpriv.cli.outputs import ledger_of, written_by

    if (out.exists() or out.is_symlink()) and not out.is_dir():
        raise InputError(f"--out {out} is a file, not a folder: choose a folder for the experiment")
    ledger = ledger_of(out / "runs.csv")
    if ledger is not None:
        raise InputError(
            f"--out {out} lies inside the release ledger {ledger}, whose files are the record of what "
            "was released: nothing was written; choose a folder outside the ledger"
        )
    data = out / "data"
    have = [n for n in ("history.parquet", "policy.toml") if (data / n).exists()]
    if len(have) == 1:
        raise InputError(
            f"--out {out}: {data} holds {have[0]} but not "
            f"{({'history.parquet', 'policy.toml'} - set(have)).pop()}: not a history an experiment "
            "generated; nothing was written: choose another --out"
        )
    mine = [(out / n, "experiment") for n in (*OUTPUTS, *(f"gain_{m}.png" for m in grid))]
    for path, kind in [*mine, *([(data / "policy.toml", "generate")] if have else [])]:
        if (path.exists() or path.is_symlink()) and written_by(path) != kind:
            raise InputError(
                f"--out {out}: {path} exists and is not as an earlier dpriv {kind} wrote it (changed "
                "since, or not dpriv's): nothing was written; move it away or choose another --out"
            )


def check_views(history: pd.DataFrame, views: int, view_size: int) -> None:
    """Refuse a history with a view smaller than k (the generated policy's k, which the
    experiment takes as is): every release would be refused, after the data were written."""
    from dpriv.datasets.files import RECOMMENDED_DEFENSE

    k = RECOMMENDED_DEFENSE["privacy"]["k"]
    sizes = history.groupby("view").size().reindex(range(1, views + 1), fill_value=0)
    smallest = int(sizes.min())
    if smallest < k:
        raise InputError(
            f"views = {views}, view_size = {view_size}: a view holds only {smallest} tuple(s), fewer "
            f"than the generated policy's k = {k}; nothing was written: give a larger --view-size "
            "(or --attendance)"
        )


def write_output(path: Path, data: bytes) -> None:
    """One table or figure of the experiment, atomically, recorded as the experiment's."""
    from dpriv.cli.outputs import record_output
    from dpriv.io import atomic_write

    atomic_write(path, data, mode=None)
    record_output(path, "experiment")


def save_figure(fig, path: Path) -> None:
    """A matplotlib figure as PNG (120 dpi) through :func:`write_output`."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    write_output(path, buf.getvalue())
