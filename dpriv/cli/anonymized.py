"""The files ``dpriv anonymize`` writes (the released view, an Anatomy release's sensitive
table, ``OUT.metrics.json`` with the method and its parameters), and what stays of them when
the command is interrupted: one line that is true at any point
(:func:`dpriv.cli.interrupts.stays`), not "nothing was written" once the view is there."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dpriv.cli.interrupts import stays
from dpriv.cli.outputs import write_frame
from dpriv.cli.verify_files import method_record
from dpriv.output_record import record_output

if TYPE_CHECKING:  # dpriv.one_view imports Dask: not for --help
    from dpriv.anonymized import Anonymized


def write_anonymized(result: Anonymized, out: Path, table_out: Path, metrics: Path) -> None:
    """Write ``result``'s released view to ``out``, its sensitive table (Anatomy) to
    ``table_out`` and its metrics to ``metrics``, each recorded as ``anonymize``'s (the caller
    checked the three may be written). Interrupted (KeyboardInterrupt, the CLI's SIGTERM) before
    the last is recorded, the files this call created are removed and the interrupt's line
    names a file it already replaced (``--force``); interrupted later (the summary being
    printed), the files stay and the line says where they are."""
    from dpriv.metrics.record import write_record

    paths = [out, *([table_out] if result.sensitive is not None else []), metrics]
    before = {p: _file_id(p) for p in paths}  # None: new; else what an atomic rename would change
    complete = False
    try:
        write_frame(result.released, out, kind="anonymize", checked=True)
        if result.sensitive is not None:
            write_frame(result.sensitive, table_out, kind="anonymize", checked=True)
        # the method and its parameters after the release's keys: verify reads them back
        recorded = {**dict(result.metrics), **method_record(result.method, result.policy)}
        write_record(metrics, recorded, mode=None)
        record_output(metrics, "anonymize")
        complete = True
        stays(_written(paths))
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM between two files
        if complete:
            stays(_written(paths))
            raise
        for path in paths:
            if before[path] is None:  # created by this command: removed (the others were new)
                path.unlink(missing_ok=True)
        replaced = [p for p in paths if before[p] is not None and _file_id(p) != before[p]]
        if replaced:
            stays(
                f"{' and '.join(map(str, replaced))} {'was' if len(replaced) == 1 else 'were'} already "
                "replaced (--force), the other files not: run the command again with --force to write "
                "them all"
            )
        raise


def _written(paths: list[Path]) -> str:
    """The interrupt's line once every file is written and recorded."""
    return f"the released view was written to {paths[0]} (with {', '.join(map(str, paths[1:]))})"


def _file_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path`` (an atomic write renames a new file there), None
    when there is none."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino
