"""Reading the committed state of a ledger: the readers :class:`dpriv.ledger.Ledger` inherits.

``state/<i>/`` holds the per-respondent posteriors and QI-group labels after release ``i``
(SENSITIVE; one ``state.parquet`` or one part per bucket, :mod:`dpriv.state_parts`). These
methods find its parts, check that their Parquet footers read (a damaged part is named) and
give the state whole (pandas), in row groups (Dask), or one partition per bucket as the next
release takes it. They write nothing; the state is written by :meth:`dpriv.ledger.Ledger.commit`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpriv.errors import LedgerError, check_count
from dpriv.io import ROW_GROUP
from dpriv.ledger_files import open_parquet
from dpriv.ledger_manifest import release_index
from dpriv.state_parts import HeldState, dask_state, held_state, read_state_files, state_files

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd


class StateReaders:
    """The state's places and readers of a ledger at ``root`` (a mixin of
    :class:`dpriv.ledger.Ledger`, which gives :meth:`committed` and :meth:`check_committed`)."""

    root: Path

    if TYPE_CHECKING:  # given by dpriv.ledger.Ledger

        def committed(self) -> list[dict[str, Any]]: ...

        def check_committed(self, index: int) -> None: ...

    def state_path(self, index: int) -> Path:
        """``state/<index>/state.parquet``: the file of a one-part state (:meth:`state_files`)."""
        return self.state_dir(index) / "state.parquet"

    def state_dir(self, index: int) -> Path:
        """``state/<index>/`` (SENSITIVE; whether or not it exists). InputError unless ``index``
        is an int (:func:`dpriv.ledger_manifest.release_index`)."""
        return self.root / "state" / str(release_index(index))

    def state_files(self, index: int) -> list[Path]:
        """The Parquet parts of the state after release ``index``, in order
        (:func:`dpriv.state_parts.state_files`); LedgerError when there is none."""
        files = state_files(self.state_dir(index))
        if not files:
            self.check_committed(index)
            if not (self.root / "state").exists():  # all of it gone: a public copy, not one lost part
                raise LedgerError(absent_state(self.root))
            raise LedgerError(
                f"{self.state_dir(index)} holds no state (no .parquet file): the ledger is damaged "
                f"(release {index} is committed in its manifest); restore the folder from a backup, "
                "or start a new ledger"
            )
        return files

    def read_state(self, index: int) -> pd.DataFrame:
        """The state after release ``index``, whole, as a pandas DataFrame (RangeIndex)."""
        return read_state_files(self._readable_state(index))

    def read_state_dask(self, index: int, row_groups: int = 1) -> dd.DataFrame:
        """The state after release ``index`` as a Dask DataFrame, ``row_groups`` Parquet row
        groups (:data:`~dpriv.io.ROW_GROUP` rows each, the last one shorter) per partition.

        For states too large for one process: a later release can read them in partitions of
        bounded size. There are no known divisions; a file with no rows gives one empty
        partition. Strings may come back as Arrow-backed strings (Dask's ``convert-string``).
        InputError for a ``row_groups`` that is not a whole number >= 1, before any file is read.
        """
        check_count("row_groups", row_groups, f"Parquet row groups of {ROW_GROUP:,} rows per partition")
        return dask_state(self._readable_state(index), int(row_groups))

    def held_state(self, index: int) -> HeldState:
        """The state after release ``index`` as the next release takes it: a Dask DataFrame of
        one partition per bucket when the manifest records its bucket count (``state_buckets``)
        and every bucket has its part, with that count and the number of rows
        (:func:`dpriv.state_parts.held_state`)."""
        entry = next((r for r in self.committed() if r["index"] == index), {})
        return held_state(self._readable_state(index), entry.get("state_buckets"))

    def _readable_state(self, index: int) -> list[Path]:
        """:meth:`state_files` whose footers read (LedgerError naming a damaged part)."""
        files = self.state_files(index)
        for f in files:
            open_parquet(f)
        return files


def absent_state(root: Path) -> str:
    """The message for a ledger at ``root`` without any ``state/`` folder: most likely a copy of
    its public files (state/ is the sensitive part, docs/ledger.md "What to hand an auditor"),
    so it names the commands that need the state and those that do not, rather than calling the
    ledger damaged (a fresh user's drill, s40)."""
    return (
        f"{root} has no state/ folder (the sensitive per-respondent state, absent altogether: a copy of "
        "the ledger's public files?): dpriv release, status, attack and verify --ledger need it; "
        f"dpriv report {root} and dpriv verify RELEASED --original ORIGINAL do not. Run those "
        "commands on the ledger that holds state/, or, if this is that ledger, restore state/ from a backup"
    )
