"""Where ``dpriv experiment paper`` writes (:func:`dpriv.experiment.run_experiment`): the checks
of its folder before any work, and its tables and figures written atomically and recorded as
the experiment's in the folder's ``.dpriv-outputs`` (dpriv/output_record.py), so that a rerun
replaces its own files and never a user's."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd

from dpriv.errors import InputError
from dpriv.io import not_a_folder
from dpriv.path_args import path_arguments
from dpriv.wording import Named, argument_named

#: The experiment's tables, ``<key>.csv`` in its folder, each row stamped (:func:`stamp_tables`).
TABLES = ("runs", "gains", "retro", "frontier")

#: The files an experiment writes into its folder, besides ``gain_<method>.png`` per method,
#: ``data/`` (:func:`dpriv.datasets.write_history`) and ``ledgers/<setting>/``.
OUTPUTS = (*(f"{key}.csv" for key in TABLES), "fig3_semiperimeter.png", "frontier.png")


def setting_name(method: str, params: dict) -> str:
    """The ledger folder of a setting: ``jsreduce_t0.5_j0.8``; a list joins with ``+``."""
    return method + "".join(
        f"_{k}{'+'.join(map(str, v)) if isinstance(v, list | tuple) else v}" for k, v in params.items()
    )


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
    from dpriv.cli.outputs import check_outside_ledger
    from dpriv.datasets.generated import GENERATED_FILES
    from dpriv.output_record import written_by

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
    from dpriv.io import atomic_write
    from dpriv.output_record import record_output

    atomic_write(path, data, mode=None)
    record_output(path, "experiment")


def save_figure(fig, path: Path) -> None:
    """A matplotlib figure as PNG (120 dpi) through :func:`write_output`."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120)
    write_output(path, buf.getvalue())


def _ledger_root(out: Path, method: object, params: object) -> Path | None:
    """``out/ledgers/<setting>/``, the ledger of a table row; None when its params are not the
    JSON object the experiment writes."""
    try:
        return out / "ledgers" / setting_name(str(method), json.loads(str(params)))
    except (ValueError, AttributeError):
        return None


def _expected_stamps(
    frame: pd.DataFrame, out: Path, cache: dict[tuple[str, str], dict[int, str]]
) -> list[str]:
    """Per row of an experiment table, the :data:`dpriv.attack_stamp.STAMP` of the releases of
    its setting's ledger (:func:`_ledger_root`) it was computed on: 1..``as_of`` of a
    retrospective row, 1..``release`` of a run or gain, every release of a frontier row; ``""``
    when the ledger or the release is not there. ``cache``: (method, params) -> digests."""
    from dpriv.attack_stamp import prefix_digests
    from dpriv.ledger import Ledger

    last = "as_of" if "as_of" in frame else "release" if "release" in frame else None
    stamps = []
    for i, key in enumerate(zip(frame["method"].astype(str), frame["params"].astype(str))):
        if key not in cache:
            root = _ledger_root(out, *key)
            cache[key] = prefix_digests(Ledger(root)) if root and (root / "manifest.json").is_file() else {}
        digests = cache[key]
        if last is None:
            index = max(digests, default=None)
        else:  # a blank, fractional or text release names no release
            value = pd.to_numeric(frame[last].iloc[i], errors="coerce")
            index = int(value) if value == value and value % 1 == 0 else None
        stamps.append(digests.get(index, ""))
    return stamps


def stamp_tables(tables: dict[str, pd.DataFrame], out: Path) -> dict[str, pd.DataFrame]:
    """``tables`` (:data:`TABLES`, each with ``method`` and ``params`` columns: a setting of the
    grid, released into ``out/ledgers/<setting>/``) each with a last column ``views_sha`` (text):
    per row the digest of the releases it was computed on (:func:`_expected_stamps`), as
    ``dpriv attack`` stamps its rows, so that :func:`read_tables` refuses a table of another run."""
    from dpriv.attack_stamp import STAMP

    cache: dict[tuple[str, str], dict[int, str]] = {}
    return {
        key: frame.assign(
            **{STAMP: pd.Series(_expected_stamps(frame, out, cache), index=frame.index, dtype=str)}
        )
        for key, frame in tables.items()
    }


@path_arguments(out="the folder run_experiment wrote")
def read_tables(out: str | Path) -> dict[str, pd.DataFrame]:
    """The tables an experiment wrote into ``out`` (``runs.csv``, ``gains.csv``, ``retro.csv``,
    ``frontier.csv``), checked against the ledgers beside them.

    Returns key (:data:`TABLES`) -> the table as written (``params`` and ``views_sha`` text).

    Raises InputError, naming the file (and line), when a table is missing or not a CSV table,
    lacks ``method``, ``params`` or ``views_sha`` (written by a dpriv from before the stamp), or
    holds a row whose ``views_sha`` is blank or not that of its setting's ledger in
    ``out/ledgers/`` (a table copied from another run, or ledgers made again since): tables of
    different runs are never read as one experiment."""
    from dpriv.attack_stamp import STAMP

    out = Path(out)
    again = f"run dpriv experiment paper --out {out} again (it replaces its own tables)"
    cache: dict[tuple[str, str], dict[int, str]] = {}
    tables = {}
    for key in TABLES:
        path = out / f"{key}.csv"
        if not path.is_file():
            raise InputError(f"{path} is missing: not the folder of a finished experiment; {again}")
        try:
            frame = pd.read_csv(path, dtype={"params": str, STAMP: str})
        except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise InputError(f"{path} cannot be read as a CSV table ({exc}); {again}") from None
        if missing := [c for c in ("method", "params", STAMP) if c not in frame]:
            raise InputError(
                f"{path} lacks column(s) {missing}, which tie each row to its setting's ledger "
                f"(a table of a dpriv from before the stamp, or not an experiment's); {again}"
            )
        have = frame[STAMP].fillna("").astype(str).str.strip().to_numpy()
        want = _expected_stamps(frame, out, cache)
        bad = [i for i, (h, w) in enumerate(zip(have, want)) if not h or h != w]
        if bad:
            i = bad[0]
            where = _ledger_root(out, frame["method"].iloc[i], frame["params"].iloc[i]) or out / "ledgers"
            why = (
                "is blank"
                if not have[i]
                else f"is not that of the releases of {where}"
                if want[i]
                else f"names releases that {where} does not hold (or the ledger is missing)"
            )
            raise InputError(
                f"{path} line {i + 2}: its {STAMP} (the releases the row was computed on) {why}: a table "
                f"of another run, or the ledgers made again since; nothing was read: {again}"
            )
        tables[key] = frame
    return tables
