"""The files a generated dataset is written to (:mod:`dpriv.datasets.files`): which may be
written or replaced (:func:`check_generated`), and each written whole and recorded at once
(:func:`put_generated`).

Each file is recorded in ``.dpriv-outputs`` of its folder (dpriv/output_record.py) as soon as it
is in place, not once all are: a command interrupted half-way (Ctrl-C, SIGTERM: a
KeyboardInterrupt, dpriv/cli/interrupts.py) leaves no part of the file being written, and the
files written before it recorded, so that ``--force`` (``overwrite=True``) replaces them; they
had no record before, and neither a re-run nor ``--force`` would touch them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from dpriv.errors import InputError
from dpriv.io import TEMP_SUFFIX, not_a_folder

#: What :func:`dpriv.datasets.write_history` / :func:`dpriv.datasets.write_medical_view` write,
#: relative to ``out_dir`` (``policy.toml`` is written last: a folder with it holds the others).
GENERATED_FILES = (
    "history.parquet",
    "policy.toml",
    "knowledge/dk.npz",
    "knowledge/dk-1.npz",
    "knowledge/dk-2.npz",
    "knowledge/dk-3.npz",
)

#: What :func:`dpriv.datasets.write_pbc` writes, relative to ``out_dir``.
PBC_FILES = ("history.parquet", "policy.toml")

#: The kind of the generated files in ``.dpriv-outputs`` (dpriv/output_record.py).
KIND = "generate"


def refuse_existing(
    out: Path, flag: str = "overwrite=True (CLI: --force)", files: tuple[str, ...] = GENERATED_FILES
) -> None:
    """Raise InputError naming the generated ``files`` that already exist in ``out``."""
    present = [name for name in files if (out / name).exists() or (out / name).is_symlink()]
    if present:
        ledger = " next to a ledger that may pin them by SHA-256" if (out / "ledger").exists() else ""
        raise InputError(
            f"{out} already holds {present}{ledger}; nothing was written: choose another folder, "
            f"or pass {flag} to replace them"
        )


def pinned_note(out: Path, files: tuple[str, ...] = GENERATED_FILES) -> str | None:
    """The note for ``--force`` replacing generated ``files`` of ``out`` beside ``out/ledger``
    (a ledger pins its history and knowledge files by SHA-256); None when there is none."""
    present = [name for name in files if (out / name).exists()]
    if not present or not (out / "ledger").exists():
        return None
    return (
        f"note: --force replaces {present}, from which the ledger {out / 'ledger'} may have been "
        "released: it pins them by SHA-256, so a later dpriv attack or verify of it with the new "
        "files is refused (keep the old ones elsewhere first if you need them)"
    )


def check_generated(
    out: Path,
    *,
    overwrite: bool,
    flag: str = "overwrite=True (CLI: --force)",
    files: tuple[str, ...] = GENERATED_FILES,
) -> None:
    """Refuse (InputError, before anything is written or generated) the generated ``files`` of
    ``out`` (default :data:`GENERATED_FILES`; :data:`PBC_FILES` for :func:`write_pbc`) that
    would land in a release ledger (raw data among its public files, even with ``overwrite``:
    :func:`dpriv.cli.outputs.check_outside_ledger`) or that exist: all of them without
    ``overwrite`` (:func:`refuse_existing`); with it, those dpriv did not write or that changed
    since (a user's edit of ``policy.toml``): only a file recorded in ``.dpriv-outputs`` of its
    folder as written by ``generate`` with these very bytes may be replaced
    (dpriv/output_record.py)."""
    from dpriv.cli.outputs import check_outside_ledger
    from dpriv.output_record import RECORD, written_by

    folder = "--out" if flag == "--force" else "out_dir"  # the command's flag, or the argument
    if (out.exists() or out.is_symlink()) and not out.is_dir():
        raise InputError(
            f"{out} {not_a_folder(out)}, not a folder; choose a folder for the generated files ({folder})"
        )
    check_outside_ledger(out, *files, flag=folder)
    if not overwrite:
        refuse_existing(out, flag, files)
        return
    kept = [
        name
        for name in files
        if ((out / name).exists() or (out / name).is_symlink()) and written_by(out / name) != KIND
    ]
    if kept:
        force = "--force" if flag == "--force" else "overwrite=True"
        it = "them" if len(kept) > 1 else "it"
        raise InputError(
            f"{out} holds {kept}, changed since dpriv wrote {it} or not written by dpriv (no "
            f"matching entry in {RECORD} of {'their' if len(kept) > 1 else 'its'} folder): {force} "
            f"replaces only generated files unchanged since; nothing was written: move {it} away, "
            f"or choose another folder ({folder})"
        )


def put_generated(out: Path, name: str, write: Callable[[Path], None]) -> Path:
    """Write the generated file ``out/name`` whole or not at all, and record it (kind
    ``generate``) as soon as it is in place; return its path.

    ``write(path)`` writes the content to ``path`` (a file, or a Parquet dataset folder); it runs
    in a temp folder ``.<name>.<random>.dpriv-tmp`` beside the target, which is then renamed
    over it (a dataset folder it replaces is removed first: :func:`check_generated` found it
    unchanged since dpriv wrote it). On any exception, a KeyboardInterrupt included, the temp
    folder is removed and the target is as it was, unless the rename was done: the new file is
    then recorded all the same (else ``--force`` could never replace it)."""
    from dpriv.output_record import record_output

    target = out / name
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=TEMP_SUFFIX))
    staged, written = tmp / target.name, False
    try:
        write(staged)
        written = True
        if target.is_dir() and not target.is_symlink():
            remove_dataset(target)
        elif staged.is_dir() and target.exists():  # a dataset over a file: rename() refuses that
            target.unlink()
        os.replace(staged, target)
    finally:
        try:
            if written and not (staged.exists() or staged.is_symlink()):  # renamed into place
                record_output(target, KIND)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # this call's own temp folder
    return target


def remove_dataset(folder: Path) -> None:
    """Delete a Parquet dataset folder :func:`check_generated` found unchanged since dpriv wrote
    it (every file under it is one dpriv recorded; empty subfolders go too)."""
    for f in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        f.rmdir() if f.is_dir() and not f.is_symlink() else f.unlink()
    folder.rmdir()
