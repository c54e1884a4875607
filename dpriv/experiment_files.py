"""Where ``dpriv experiment paper`` writes (:func:`dpriv.experiment.run_experiment`): the checks
of its folder before any work, and its tables and figures written atomically and recorded as
the experiment's in the folder's ``.dpriv-outputs`` (dpriv/cli/outputs.py), so that a rerun
replaces its own files and never a user's."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from dpriv.errors import InputError
from dpriv.io import not_a_folder
from dpriv.wording import Named, argument_named

#: The files an experiment writes into its folder, besides ``gain_<method>.png`` per method,
#: ``data/`` (:func:`dpriv.datasets.write_history`) and ``ledgers/<setting>/``.
OUTPUTS = ("runs.csv", "gains.csv", "retro.csv", "frontier.csv", "fig3_semiperimeter.png", "frontier.png")


def check_out(
    out: Path, grid: dict[str, list[dict]], ledgers: list[str], named: Named = argument_named
) -> None:
    """Refuse (InputError, before anything is generated or written) an ``out`` that is a file
    or lies inside a release ledger, a table or figure of the experiment there that an earlier
    experiment did not write as it is now (a user's ``runs.csv`` is never replaced; a rerun
    replaces its own), a ``data/`` folder holding only part of a history it did not generate (the
    files an interrupted run generated are replaced), and a
    ``ledgers/<name>`` (one per setting: ``ledgers``) that is neither absent, empty nor a ledger.
    ``named`` words the argument (``out``; the command line's ``--out``)."""
    from dpriv.cli.outputs import check_outside_ledger, written_by
    from dpriv.datasets.generated import GENERATED_FILES

    flag, other = named("out"), f"choose another {named('out')}"
    if (out.exists() or out.is_symlink()) and not out.is_dir():
        raise InputError(
            f"{flag} {out} {not_a_folder(out)}, not a folder: choose a folder for the experiment"
        )
    files = (*OUTPUTS, *(f"gain_{m}.png" for m in grid), *(f"data/{n}" for n in GENERATED_FILES))
    check_outside_ledger(out, *files, flag=flag)  # (its own ledgers/<setting>/ aside)
    data = out / "data"
    have = [n for n in GENERATED_FILES if (data / n).exists() or (data / n).is_symlink()]
    # an interrupted run leaves the files written before policy.toml (the last), recorded: replaced
    interrupted = "policy.toml" not in have and all(written_by(data / n) == "generate" for n in have)
    if have and not interrupted and not {"history.parquet", "policy.toml"} <= set(have):
        missing = sorted({"history.parquet", "policy.toml"} - set(have))
        raise InputError(
            f"{flag} {out}: {data} holds {have} but not {missing}: not a history an experiment "
            f"generated; nothing was written: {other}"
        )
    for name in ["", *ledgers]:  # "": the ledgers/ folder itself
        path = out / "ledgers" / name
        if (path.exists() or path.is_symlink()) and not path.is_dir():
            raise InputError(
                f"{flag} {out}: {path} {not_a_folder(path)}, not a folder: move it away or {other}"
            )
        if name and path.is_dir() and any(path.iterdir()) and not (path / "manifest.json").is_file():
            raise InputError(
                f"{flag} {out}: {path} is not empty and is not a ledger (an experiment releases each "
                f"setting into it): nothing was written; move it away or {other}"
            )
    mine = [(out / n, "experiment") for n in (*OUTPUTS, *(f"gain_{m}.png" for m in grid))]
    for path, kind in [*mine, *([(data / "policy.toml", "generate")] if have else [])]:
        if (path.exists() or path.is_symlink()) and written_by(path) != kind:
            raise InputError(
                f"{flag} {out}: {path} exists and is not as an earlier dpriv {kind} wrote it (changed "
                f"since, or not dpriv's): nothing was written; move it away or {other}"
            )


def check_views(
    history: pd.DataFrame,
    views: int,
    view_size: int,
    grid: dict[str, list[dict]],
    named: Named = argument_named,
) -> None:
    """Refuse a history with a view smaller than k (the generated policy's k, which the
    experiment takes as is) or with fewer distinct sensitive values than the grid's largest l:
    a release would be refused half-way through the grid, after the data were written. The fix
    names ``view_size`` as ``named`` words it (the command line's ``--view-size``)."""
    from dpriv.datasets.files import RECOMMENDED_DEFENSE

    k = RECOMMENDED_DEFENSE["privacy"]["k"]
    by_view = history.groupby("view")
    sizes = by_view.size().reindex(range(1, views + 1), fill_value=0)
    if (smallest := int(sizes.min())) < k:
        raise InputError(
            f"views = {views}, view_size = {view_size}: a view holds only {smallest} tuple(s), fewer "
            f"than the generated policy's k = {k}; nothing was written: give a larger {named('view_size')}"
        )
    l_max = max((int(p.get("l", 0)) for p in grid.get("mondrian-l", [])), default=0)
    values = by_view["exam_result"].nunique().reindex(range(1, views + 1), fill_value=0)
    if (fewest := int(values.min())) < l_max:
        raise InputError(
            f"views = {views}, view_size = {view_size}: a view holds {fewest} distinct sensitive "
            f"value(s), fewer than the grid's l = {l_max} (mondrian-l); nothing was written: give a "
            f"larger {named('view_size')}"
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
