"""Where the attack results of a ledger live: ``LEDGER/attack/gain_<knowledge>.csv``, written
atomically, where ``dpriv report`` finds the gain curves (re-exported by :mod:`dpriv.attack`), or
the folder ``dpriv report --attack-dir`` names (:func:`results_folder`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from dpriv.errors import InputError, LedgerError
from dpriv.ledger import ATTACK_DIR, Ledger
from dpriv.ledger_manifest import MANIFEST
from dpriv.path_args import check_path
from dpriv.sources import check_knowledge_name

#: The names of a ledger's attack results in ``attack/``, spelled here only: the paper
#: adversary's gains and the retrospective adversary's results of the knowledge ``<name>``
#: (:func:`gain_path`), and the KPR table.
GAIN_FILE = "gain_{name}.csv"
RETRO_FILE = "retro_{name}.csv"
KPR_FILE = "kpr.csv"


def result_files(template: str) -> re.Pattern[str]:
    """The file names of ``template`` (:data:`GAIN_FILE`, :data:`RETRO_FILE`) as a pattern whose
    group ``name`` is the knowledge (``gain_dk-2.csv`` -> ``dk-2``)."""
    head, tail = template.split("{name}")
    return re.compile(rf"^{re.escape(head)}(?P<name>[A-Za-z0-9_.+-]+){re.escape(tail)}$")


#: What to do about a damaged or edited result: an attack never replaces one, so it goes first.
AGAIN = "move the file away, then run dpriv attack again (an attack never replaces an edited result)"
#: What to do about a result file naming releases the ledger does not hold.
NOT_OURS = (
    "they are not results of this ledger's releases (the ledger made again since the attack?); "
    "move the file out of attack/, then run dpriv attack on this ledger again"
)


def result_name(knowledge: str) -> str:
    """The ``<name>`` of the result files of ``knowledge``: the knowledge as given (``dk``,
    ``dk-2``, ``ie``...), ``spm`` for ``spm:PATH`` and ``snapshot+dk`` for ``snapshot:dk``.

    Raises PolicyError for an unknown knowledge (the message lists the valid ones)."""
    check_knowledge_name(knowledge)
    spec = str(knowledge).strip()
    return "spm" if spec.startswith("spm:") else spec.replace(":", "+")


def gain_path(ledger: Ledger | str | Path, knowledge: str) -> Path:
    """``LEDGER/attack/gain_<name>.csv`` (:data:`GAIN_FILE`, :func:`result_name`), where
    ``dpriv report`` looks for the gain curve of ``knowledge``. PolicyError for an unknown
    knowledge."""
    root = ledger.root if isinstance(ledger, Ledger) else Path(ledger)
    return root / ATTACK_DIR / GAIN_FILE.format(name=result_name(knowledge))


def retro_path(ledger: Ledger | str | Path, knowledge: str) -> Path:
    """``LEDGER/attack/retro_<name>.csv`` (:data:`RETRO_FILE`), where ``dpriv report`` looks for
    the retrospective adversary's results of ``knowledge``. PolicyError for an unknown knowledge."""
    return gain_path(ledger, knowledge).with_name(RETRO_FILE.format(name=result_name(knowledge)))


#: How a Python caller (:func:`save_gain`) writes its frame elsewhere when dpriv refuses the
#: ledger's file; the command line's refusals say ``--out`` instead.
SAVE_ELSEWHERE = "save the frame elsewhere with frame.to_csv(path)"


def check_attack_folder(folder: Path, elsewhere: str = "write the results elsewhere with --out") -> None:
    """Refuse (InputError) a ledger's ``attack/`` that is not a folder (a file, a broken link):
    the results go there, and dpriv does not replace what it did not make. ``elsewhere`` says
    how the caller writes them elsewhere (:data:`SAVE_ELSEWHERE` for a Python call)."""
    from dpriv.io import not_a_folder

    if (folder.exists() or folder.is_symlink()) and not folder.is_dir():
        raise InputError(
            f"{folder} {not_a_folder(folder)}, not the ledger's attack/ folder where the results go: "
            f"nothing was written; move it away, or {elsewhere}"
        )


def check_result_file(path: Path, elsewhere: str | None = None) -> None:
    """Refuse (InputError) to replace ``path`` in a ledger's ``attack/`` folder unless it is
    absent or a result an attack wrote there, unchanged since: the folder's record
    (``attack/.dpriv-outputs``, dpriv/output_record.py) names it as written by ``attack`` with
    these bytes. An edited result, or a file without a record (someone else's file under that
    name, or a result of a dpriv from before the record), is never overwritten; nor is a file
    where the ``attack/`` folder goes (:func:`check_attack_folder`). ``elsewhere`` says how the
    caller writes its result elsewhere (:data:`SAVE_ELSEWHERE` for a Python call; by default
    ``dpriv attack``'s ``--out``)."""
    from dpriv.output_record import RECORD, read_record, written_by

    check_attack_folder(path.parent, *([elsewhere] if elsewhere else []))
    if not (path.exists() or path.is_symlink()):
        return
    entry = (read_record(path.absolute().parent) or {}).get(path.name)
    if entry is not None and written_by(path) == "attack":
        return
    why = (
        f"has changed since dpriv {entry.kind} wrote it (its bytes differ from the record in "
        f"{path.parent / RECORD})"
        if entry is not None
        else f"exists and no dpriv attack recorded writing it (no entry in {path.parent / RECORD})"
    )
    raise InputError(
        f"{path} {why}: dpriv replaces only its own attack/ results as they were written, never "
        "another file; nothing was written: move it away first, or "
        f"{elsewhere or 'write this attack elsewhere with --out'}"
    )


def as_ledger(ledger: Ledger | str | Path, function: str) -> Ledger:
    """``ledger`` itself, or the ledger at that folder: the one reading of a ``ledger`` argument
    of the Python entry points (``attack``, ``save_gain``, the report's). Raises
    PathArgumentError (an InputError), naming ``function``, for anything else than a Ledger or a
    path (:func:`dpriv.path_args.check_path`); LedgerError when the folder is not a ledger."""
    if isinstance(ledger, Ledger):
        return ledger
    check_path(ledger, "ledger", function, "the ledger's folder", ledger=True)
    return Ledger(ledger)


def results_ledger(ledger: Ledger | str | Path, function: str) -> Ledger:
    """The release ledger whose ``attack/`` folder takes the results ``function`` writes: a
    :class:`Ledger`, or a folder holding a dpriv ledger's ``manifest.json``. dpriv writes into
    no other folder (a folder of the user's would get an ``attack/`` folder of results).

    Raises InputError when ``ledger`` is neither a Ledger nor a path; LedgerError when the
    folder does not exist, holds no ``manifest.json``, or one that is not a dpriv ledger's."""
    if isinstance(ledger, str | Path) and not (Path(ledger) / MANIFEST).is_file():
        root = Path(ledger)
        what = "does not exist" if not root.exists() else f"holds no {MANIFEST}"
        raise LedgerError(
            f"{function}: {root} {what}: it is not a ledger folder, and dpriv writes attack results "
            "only into a ledger's attack/ folder; nothing was written: pass the ledger the attack "
            "read (the folder release_history made), or save the frame elsewhere with "
            "frame.to_csv(path)"
        )
    led = as_ledger(ledger, function)
    led.committed()  # a manifest.json that is not a dpriv ledger's: LedgerError
    return led


class ResultsFolder(NamedTuple):
    """Where the report reads attack results: ``path``, and ``label``, how messages name it
    (``attack/`` for the ledger's own, else the folder as given, ending in ``/``)."""

    path: Path
    label: str


def results_folder(led: Ledger, attack_dir: str | Path | None = None) -> ResultsFolder:
    """``LEDGER/attack/``, or ``attack_dir`` (``dpriv report --attack-dir``: the results of
    ``dpriv attack --out DIR/gain_<knowledge>.csv`` on a ledger the auditor cannot write in,
    read and checked as if in ``attack/``). InputError for an ``attack_dir`` that is no folder."""
    if attack_dir is None:
        return ResultsFolder(led.root / ATTACK_DIR, f"{ATTACK_DIR}/")
    folder = Path(attack_dir)
    if not folder.is_dir():
        raise InputError(
            f"--attack-dir {folder}: no such folder; give the folder holding the gain_<knowledge>.csv "
            "files of dpriv attack --out (or omit it to read LEDGER/attack/): nothing was written"
        )
    return ResultsFolder(folder, f"{folder}/")


def save_gain(
    gain: pd.DataFrame,
    ledger: Ledger | str | Path,
    knowledge: str,
    *,
    assume_this_ledger: bool = False,
    adversary: str | None = None,
) -> Path:
    """Write ``gain`` (the frame :func:`attack` returns) where ``dpriv report LEDGER`` draws it,
    atomically, each row stamped with the releases it was computed on
    (:data:`dpriv.attack_stamp.STAMP`); returns the path. The paper adversary's gain curve (one
    row per release) goes to :func:`gain_path`, a retrospective attack's result (one row per
    (release, as_of), :data:`RETRO_NEEDED`) to :func:`retro_path`, as ``dpriv attack`` writes
    them. ``adversary`` (``"paper"`` or ``"retrospective"``) says which the frame is; by default
    a frame with an ``as_of`` column is a retrospective result. The file is the ledger's own
    derived result: a later attack with the same knowledge replaces it (only a result an attack
    wrote, unchanged since: :func:`check_result_file`), and the file is recorded in
    ``attack/.dpriv-outputs``.

    ``gain`` must carry the ``views_sha`` column :func:`attack` gives every row: it proves the
    rows were computed on this ledger's releases. A frame without it (made by hand, or read
    without the column) is stamped only with ``assume_this_ledger=True``: the caller then
    states it was computed on this ledger's releases (its ``n_tuples``, where given, are still
    checked against them).

    Raises InputError when ``gain`` lacks the columns ``release`` and ``adversary_gain`` (of a
    retrospective result: :data:`RETRO_NEEDED`), holds a release (or as_of) that is not a whole
    number >= 1 or this ledger's (blank, 1.5, 99), an as_of before its release, a gain outside
    [-1, 1] or a release (of a retrospective result: a (release, as_of)) twice (the row is
    named), when ``adversary`` is neither kind or does not match the frame's ``as_of`` column,
    has no ``views_sha`` column (without ``assume_this_ledger``), when its rows were computed
    on another ledger's releases or their ``views_sha`` is blank
    (:func:`dpriv.attack_stamp.check_same_releases`), or the file exists and is not an attack
    result; LedgerError when ``ledger`` is not a ledger folder
    (:func:`results_ledger`). Nothing is written then."""
    from dpriv.attack_stamp import STAMP, check_held, check_same_releases, stamped
    from dpriv.io import atomic_write, made_folder
    from dpriv.passed_results import RETRO, checked_gains, checked_result

    retro = _is_retro(gain, adversary)
    needed = RETRO_NEEDED if retro else ("release", "adversary_gain")
    missing = [c for c in needed if c not in gain.columns]
    if missing:
        raise InputError(
            f"the {'retrospective ' if retro else ''}attack result passed to save_gain lacks column(s) "
            f"{missing}; nothing was written: pass the frame dpriv.attack.attack(...) returns"
        )
    led = results_ledger(ledger, "save_gain")
    path = (retro_path if retro else gain_path)(led, knowledge)
    check_result_file(path, SAVE_ELSEWHERE)
    where, fix = "the gains passed to save_gain", "save the gains of this ledger's attack"
    # a blank or fractional release would be stamped as another release's (or fail in int())
    if retro:
        checked = checked_result(gain, f"passed to save_gain for {str(knowledge)!r}", RETRO)
    else:
        checked = checked_gains({knowledge: gain}, "passed to save_gain")[str(knowledge)]  # releases as int64
    check_held(checked, len(led.committed()), led.root, where, fix)
    if STAMP not in gain.columns and not assume_this_ledger:
        raise InputError(
            f"{where} have no {STAMP} column (the digest of the releases each row was computed on, "
            "which dpriv.attack.attack writes on every row), so nothing proves they are this "
            f"ledger's; nothing was written: pass the frame dpriv.attack.attack(...) returned for "
            f"{led.root}, or, if these gains were computed on its releases, save_gain(..., "
            "assume_this_ledger=True)"
        )
    # another ledger's gains (their views_sha, else their n_tuples) are not relabelled as this one's
    check_same_releases(gain, led, where, fix)
    whole = ("release", "as_of") if retro else ("release",)  # checked: 1, 2, ... as written
    gain = gain.assign(**{c: pd.to_numeric(gain[c]).astype("int64") for c in whole})
    from dpriv.ledger_files import writing_results
    from dpriv.output_record import record_output

    with made_folder(path.parent), writing_results(path.parent):
        atomic_write(path, stamped(gain, led).to_csv(index=False).encode(), mode=None)
        record_output(path, "attack")
    return path


#: Columns a retrospective result must have (``dpriv report`` reads them from
#: ``retro_<knowledge>.csv``, :func:`dpriv.report.tail.retro_results`).
RETRO_NEEDED = ("release", "as_of", "adversary_gain", "confident_share")

#: The kinds of adversary whose results :func:`save_gain` writes (``dpriv attack --adversary``).
ADVERSARIES = ("paper", "retrospective")


def _is_retro(gain: object, adversary: str | None) -> bool:
    """Whether :func:`save_gain` writes ``gain`` as a retrospective result: ``adversary`` when
    given (InputError when it is neither kind or contradicts the frame's ``as_of`` column), else
    whether the frame has an ``as_of`` column. InputError when ``gain`` is no DataFrame."""
    if not isinstance(gain, pd.DataFrame):
        raise InputError(
            f"save_gain: the gains are a {type(gain).__name__}, not a DataFrame; nothing was written: "
            "pass the frame dpriv.attack.attack(...) returns"
        )
    if adversary is not None and adversary not in ADVERSARIES:
        raise InputError(
            f"save_gain: adversary must be 'paper' or 'retrospective', not {adversary!r}; nothing was written"
        )
    has_as_of = "as_of" in gain.columns
    if adversary == "paper" and has_as_of:
        raise InputError(
            "save_gain(..., adversary='paper'): the frame has an as_of column, so it is a retrospective "
            "attack's result (one row per (release, as_of)), not a gain curve; nothing was written: "
            "save the whole frame with adversary='retrospective' (or without adversary=), which "
            "writes attack/retro_<knowledge>.csv"
        )
    if adversary == "retrospective" and not has_as_of:
        raise InputError(
            "save_gain(..., adversary='retrospective'): the frame has no as_of column, so it is not a "
            "retrospective attack's result (one row per (release, as_of)); nothing was written: pass the "
            "frame attack(..., adversary='retrospective') returns, or save a paper gain curve "
            "without adversary="
        )
    return adversary == "retrospective" or (adversary is None and has_as_of)


def read_result(
    path: Path,
    columns: list[str],
    where: str,
    whole: tuple[str, ...] = ("release",),
    optional: tuple[str, ...] = (),
    *,
    text: tuple[str, ...] = (),
    unique: tuple[str, ...] = (),
) -> pd.DataFrame:
    """``columns`` of an attack result CSV (``attack/gain_<name>.csv``, ``kpr.csv``...) as
    numbers, and those of ``optional`` that the file has (an older file lacks them; the file is
    read once): the ``whole`` columns (release indices) int64, the others float64 (a blank is
    NaN); then those of ``text`` that the file has, as text (a blank is NaN; a stamp of decimal
    digits keeps its leading zeros). ``where`` names the file in messages (relative to the
    ledger).

    Raises InputError, naming the file, when it cannot be parsed, lacks a column, holds a value
    that is not a number (naming its line and column), or two rows with the same values of
    ``unique`` (naming them and their lines): an edited or damaged result is not shown as
    figures."""
    try:
        frame = pd.read_csv(path, dtype=dict.fromkeys(text, str))
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"{where} cannot be read as a CSV table ({exc}); {AGAIN}") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"{where} lacks column(s) {missing} (the output of dpriv attack)")
    columns = columns + [c for c in optional if c in frame.columns and c not in columns]
    out = frame[columns].apply(pd.to_numeric, errors="coerce")
    for col in columns:
        given = frame[col].notna() if col not in whole else pd.Series(True, index=frame.index)
        bad = given & (out[col].isna() | (col in whole and (out[col] % 1 != 0)))
        if bad.any():
            row = int(bad.to_numpy().argmax())
            value = frame[col].iloc[row]
            value = value.item() if hasattr(value, "item") else value  # a NumPy scalar as Python's
            raise InputError(
                f"{where} line {row + 2}: {col} {value!r} is not "
                f"{'a whole number' if col in whole else 'a number'}; {AGAIN}"
            )
    out = out.astype({c: "int64" for c in whole if c in columns})
    _check_unique(out, unique, where)
    return out.assign(**{c: frame[c] for c in text if c in frame.columns})


def _check_unique(frame: pd.DataFrame, key: tuple[str, ...], where: str) -> None:
    """Refuse (InputError) two rows of ``frame`` (read from the file ``where``) with the same
    values of the ``key`` columns (``release``; ``release``, ``as_of``): an attack writes one row
    for each, and a copy would count twice in the report's means."""
    if not key:
        return
    twice = frame.duplicated(list(key), keep=False).to_numpy()
    if not twice.any():
        return
    first = int(twice.argmax())
    same = (frame[list(key)] == frame[list(key)].iloc[first]).all(axis=1).to_numpy()
    lines = [int(i) + 2 for i in same.nonzero()[0][:2]]  # the header is line 1
    named = "release " + " as of ".join(str(int(frame[c].iloc[first])) for c in key)  # release 2 as of 3
    per = key[0] if len(key) == 1 else f"({', '.join(key)})"
    raise InputError(
        f"{where} holds {named} twice (lines {lines[0]} and {lines[1]}): dpriv attack writes one row "
        f"per {per}; {AGAIN}"
    )
