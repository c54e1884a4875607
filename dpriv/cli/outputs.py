"""The output files of the ``dpriv`` commands (one helper for every ``--out FILE``): the suffix
each command writes and what ``--force`` may replace, by the record of the files dpriv wrote
(:mod:`dpriv.output_record`).

dpriv never overwrites a file it did not create. An existing ``--out`` is replaced, and only
with ``--force``, when that record says the same command wrote exactly these bytes (size and
SHA-256 of the content): never a command's input, never a file of a release ledger other than
its ``attack/`` folder, never a file another command wrote, a file without a record, a file
changed since, or a symbolic link. Inside a ledger only the ``attack/`` folder keeps a record:
``dpriv attack`` without ``--out`` writes the ledger's own ``attack/gain_<knowledge>.csv`` or
``attack/retro_<knowledge>.csv`` and re-writes it only while it is as an attack wrote it
(:func:`dpriv.attack_files.check_result_file`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dpriv.errors import InputError
from dpriv.input_url import file_url_path, url_scheme
from dpriv.ledger_files import check_place, enclosing_ledger, writing_results
from dpriv.output_record import RECORD, read_record, record_output, written_by

#: Output suffixes of a table (released view, gains): Parquet or CSV.
TABLE_SUFFIXES = {".parquet": "Parquet", ".pq": "Parquet", ".csv": "CSV"}


@dataclass(frozen=True)
class OutputKind:
    """What one command writes with ``--out FILE``: ``command`` (its name, also the ``kind``
    in the record) and ``suffixes`` (suffix -> format, lower case)."""

    command: str
    suffixes: dict[str, str]

    def names(self) -> str:
        """``"Parquet (.parquet, .pq) or CSV (.csv)"``: the formats and suffixes a message offers."""
        seen: dict[str, list[str]] = {}
        for suffix, fmt in self.suffixes.items():
            seen.setdefault(fmt, []).append(suffix)
        parts = [f"{f} ({', '.join(s)})" for f, s in seen.items()]
        return " or ".join(parts) if len(parts) < 3 else ", ".join(parts[:-1]) + " or " + parts[-1]


KINDS = {
    "anonymize": OutputKind("anonymize", TABLE_SUFFIXES),
    "attack": OutputKind("attack", TABLE_SUFFIXES),
    "export": OutputKind("export", {".csv": "CSV"}),
    "report": OutputKind("report", {".html": "HTML", ".htm": "HTML"}),
}


def check_not_input(out: Path, *inputs: str) -> None:
    """Refuse (InputError, even with ``--force``) an output that is one of the ``inputs`` (the
    same file under any spelling: relative, ``..``, symlink, ``~``, ``file://``) or a file of a release ledger
    other than its ``attack/`` folder (where ``dpriv attack`` writes): dpriv never overwrites
    its input or the ledger's record of what was released."""
    target = out.resolve()
    for given in inputs:
        local = file_url_path(given) if url_scheme(given) else given  # file:///x is the file /x
        if local is None:  # a remote input is never a local output
            continue
        src = Path(local).expanduser()  # as fsspec reads it
        same = src.resolve() == target or (src.exists() and out.exists() and src.samefile(out))
        if same:
            raise InputError(
                f"--out {out} is the input file {given}: dpriv never overwrites its input; "
                "choose another output file"
            )
    check_outside_ledger(out, attack=True)


#: The release ledger a path lies in (re-exported: its callers' name).
ledger_of = enclosing_ledger


def check_outside_ledger(out: Path, *names: str, attack: bool = False, flag: str = "--out") -> None:
    """Refuse (InputError, before any work) an output that would land in a release ledger, whose
    files are the record of what was released: the file ``out``; or, given the ``names`` of the
    files a command writes into the folder ``out`` (``history.parquet``, ``knowledge/dk.npz``),
    any of them (``out`` a ledger, inside one, or ``out/knowledge`` a ledger). ``attack``: the
    ledger's ``attack/`` folder takes results (what ``dpriv attack`` and ``report`` write; not
    ``dpriv export``'s copy of a view). A folder that merely holds a ledger further down is not
    refused."""
    for path in [out / name for name in names] or [out]:
        ledger = ledger_of(path)
        if ledger is None or (attack and path.resolve().is_relative_to(ledger / "attack")):
            continue
        fix = f"choose a {'folder' if names else 'path'} outside the ledger"
        if out.resolve() == ledger:
            where = f"is the release ledger {ledger}"
        elif out.resolve().is_relative_to(ledger):
            where = f"lies inside the release ledger {ledger}"
        else:
            where = f"would put {path.relative_to(out)} inside the release ledger {ledger}"
            fix = "choose another folder"
        results = not attack and path.resolve().is_relative_to(ledger / "attack")  # say what it is for
        raise InputError(
            f"{flag} {out} {where}, whose files are the record of what was released"
            + (" (only its attack/ folder takes results)" if attack else "")
            + (" (its attack/ folder takes only the results of dpriv attack and report)" if results else "")
            + f": nothing was written; {fix}"
        )


def check_suffix(out: Path, kind: str, flag: str = "--out") -> None:
    """Refuse (InputError) an ``--out`` (``flag``) whose suffix is not one the command ``kind``
    writes (``dpriv report --out x.csv`` would put HTML into a .csv file), or a folder."""
    spec = KINDS[kind]
    if out.suffix.lower() not in spec.suffixes:
        raise InputError(
            f"{flag} {out}: unknown file type {out.suffix or '(no suffix)'!r}; dpriv {kind} writes "
            f"{spec.names()}: name the output file with one of these suffixes"
        )
    if out.is_dir():
        raise InputError(f"{flag} {out} is a folder: give a file name ending in {spec.names()}")


def check_folder(out: Path, flag: str = "--out") -> None:
    """Refuse (InputError) an output whose folder does not exist: dpriv creates no folder a
    user did not ask for (``--out nodir/x.csv`` with a mistyped ``nodir``), but a ledger's
    ``attack/`` folder (where results go, made on first use)."""
    folder = Path(out).parent
    ledger = ledger_of(Path(out))
    if ledger is not None and folder.resolve() == (ledger / "attack").resolve():
        from dpriv.attack_files import check_attack_folder

        check_attack_folder(folder)  # a file there is not replaced
        return  # a ledger's attack/ folder: part of the ledger's layout, made on first use
    if folder.exists() and not folder.is_dir():
        raise InputError(
            f"{flag} {out}: {folder} is a file, not a folder; choose another {flag}: nothing was written"
        )
    if not folder.is_dir():
        raise InputError(
            f"{flag} {out}: folder {folder} does not exist; create it first (mkdir -p {folder}) "
            "or choose an existing folder: nothing was written"
        )
    check_writable(folder, flag)


def check_ledger_folder(ledger: Path | None) -> None:
    """Refuse (LedgerError / InputError, before any work) a missing ``--ledger`` (older typer
    releases pass None for a missing required option), a file, or a folder (or, for a new
    ledger, its parent) dpriv cannot write in."""
    from dpriv.errors import LedgerError
    from dpriv.io import broken_link_problem

    if ledger is None:
        raise LedgerError("give the ledger folder: --ledger DIR (created if new)")
    check_place(ledger, "--ledger")
    if broken := broken_link_problem(ledger, "a ledger folder"):
        raise LedgerError(f"--ledger {broken}")
    if ledger.exists() and not ledger.is_dir():
        raise LedgerError(f"--ledger {ledger} is a file, not a ledger folder: choose a new or empty folder")
    check_writable(ledger if ledger.is_dir() else ledger.absolute().parent, "--ledger")


def check_writable(folder: Path, flag: str = "--out", fix: str = "choose a folder you can write to") -> None:
    """Refuse (InputError) a folder this process cannot create a file in, before any work: a
    probe file is created and removed (permission bits alone do not tell: root, read-only
    mounts, immutable folders). ``flag`` names where the folder comes from, ``fix`` what to do."""
    import errno
    import os
    import tempfile

    try:
        before = os.stat(folder)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".dpriv-probe-"):
            pass
        os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))  # the folder as it was
    except OSError as exc:  # ENOENT for a folder that exists: /proc, /sys make no new files
        why = "its file system takes no new files" if exc.errno == errno.ENOENT and folder.is_dir() else ""
        raise InputError(
            f"{flag}: dpriv cannot write in folder {folder} ({why or exc.strerror or exc}); {fix}: "
            "nothing was written"
        ) from None


def check_replaceable(
    path: Path,
    kind: str,
    *,
    force: bool,
    out: Path | None = None,
    flag: str = "--out",
    replacer: str = "--force",
) -> None:
    """Refuse (InputError) to write ``path`` when it exists, unless ``force`` and
    :func:`~dpriv.output_record.written_by` says the command ``kind`` wrote it as it is now.
    ``out`` (the ``--out`` that ``path`` belongs to, e.g. for ``OUT.metrics.json``) only words
    the message, as do ``flag`` (how the caller gave ``out``: ``out_html`` in Python) and
    ``replacer`` (what replaces a file dpriv wrote: ``--force``, or a Python function that
    always does, such as ``write_report``)."""
    if not (path.exists() or path.is_symlink()):
        return
    what = f"{flag} {path}" if out is None or out == path else f"{flag} {out}: {path}"
    if not force:
        other = (
            "choose another output file"
            if what == f"{flag} {path}"
            else f"move it away, choose another {flag}"
        )
        raise InputError(
            f"{what} exists already; nothing was written: {other}, or pass --force to replace it "
            f"(--force replaces only a file an earlier dpriv {kind} wrote)"
        )
    if path.is_symlink() or not path.is_file():
        why = "a symbolic link" if path.is_symlink() else "not a regular file"
        raise InputError(
            f"{what} is {why}; {replacer} replaces only a file an earlier dpriv {kind} wrote: "
            "nothing was written; choose another output file"
        )
    owner = written_by(path)
    if owner == kind:
        return
    entry = (read_record(path.absolute().parent) or {}).get(path.name)
    if owner is not None:
        why = f"was written by dpriv {owner}, not by dpriv {kind}"
    elif entry is not None:
        why = f"has changed since dpriv {entry.kind} wrote it (its bytes differ from the record in {RECORD})"
    elif ledger_of(path) is not None:  # LEDGER/attack/: a result of an older dpriv, not recorded
        where = f"the release ledger {ledger_of(path)}"
        why = f"is a result file of {where} (its attack/ folder) without a record"
    else:
        why = f"was not written by dpriv (no record of it in {path.absolute().parent / RECORD})"
    raise InputError(
        f"{what} {why}: {replacer} replaces only a file an earlier dpriv {kind} wrote, never "
        "another file; nothing was written: choose another output file, or move it away first"
    )


def check_out(
    out: Path,
    *inputs: str,
    kind: str,
    force: bool = False,
    companions: tuple[str, ...] = (),
    also: tuple[Path, ...] = (),
) -> None:
    """Refuse (InputError, before any work) an ``--out`` the command ``kind`` must not write:
    one of the ``inputs`` or a ledger's file (:func:`check_not_input`, even with ``force``); a
    suffix it does not write or a folder (:func:`check_suffix`); an existing ``out``,
    companion ``out`` + suffix in ``companions`` (e.g. ``.metrics.json``) or path in ``also``,
    unless ``force`` and dpriv ``kind`` wrote it as it is (:func:`check_replaceable`); a folder
    that does not exist (:func:`check_folder`)."""
    check_not_input(out, *inputs)  # first: the gravest (an input, the ledger's record)
    check_suffix(out, kind)
    check_folder(out)
    paths = [out, *(out.with_name(out.name + c) for c in companions), *also]
    existing = [p for p in paths if p.exists() or p.is_symlink()]
    if not force and len(existing) > 1:
        names = ", ".join(map(str, existing))
        raise InputError(
            f"--out {out}: {names} exist already; nothing was written: choose another output "
            f"file, or pass --force to replace them (--force replaces only files an earlier dpriv "
            f"{kind} wrote)"
        )
    for p in existing:
        check_replaceable(p, kind, force=force, out=out)


def write_frame(
    frame: pd.DataFrame,
    out: Path,
    *,
    kind: str,
    force: bool = False,
    checked: bool = False,
    own: bool = False,
) -> None:
    """Write Parquet (``.parquet``/``.pq``) or CSV (``.csv``) atomically
    (:func:`dpriv.io.atomic_write`), with the permissions of an ordinary new file (a released
    view is public), and record it as written by ``kind``. ``out`` is checked first
    (:func:`check_out`) unless ``checked`` (the caller checked it before its work). ``own``: the
    ledger's own ``attack/`` file (``dpriv attack`` without ``--out``, checked by the caller with
    :func:`dpriv.attack_files.check_result_file`)."""
    from dpriv.io import atomic_write, made_folder

    if not (checked or own):
        check_out(out, kind=kind, force=force)
    with made_folder(out.parent), writing_results(out.parent) if own else contextlib.nullcontext():
        if out.suffix.lower() in (".parquet", ".pq"):
            atomic_write(out, lambda fh: frame.to_parquet(fh, index=False), mode=None)
        else:
            atomic_write(out, lambda fh: frame.to_csv(fh, index=False), mode=None)
        record_output(out, kind)
