"""The release ledger: a folder that makes scheduled batch releases resumable (docs/ledger.md).

```
ledger/
  policy.json                 the policy's fingerprint; another policy is refused
  manifest.json               committed releases; written last, atomically (temp + rename)
  releases/<i>/view.parquet   V*_i (public; no ``_``-prefixed helper column); Anatomy: the QI table
  releases/<i>/sensitive.parquet  Anatomy only: qi_group, S, count per group and value (public)
  releases/<i>/metrics.json   achieved k, l, t, j, suppression, utility, timings (public)
  state/<i>/                  per-respondent posteriors and QI-group labels (SENSITIVE): one
                              state.parquet, or part-<b>.parquet per bucket (dpriv.state_parts)
```
A committed state is read by the methods :class:`~dpriv.ledger_state.StateReaders` gives
:class:`Ledger` (``read_state``, ``read_state_dask``, ``held_state``).
``state/`` links respondents to posteriors over their sensitive values: it is created
readable by its owner only (0700 folders, 0600 files) and must never be published.
A release counts only once ``manifest.json`` lists it; files of a release that was not
committed are removed by the next attempt (those its writer recorded: dpriv.ledger_written),
so a crash leaves the ledger as it was.

Views and states may be pandas or Dask DataFrames: :func:`dpriv.io.write_parquet` streams a Dask frame
partition by partition into one Parquet file, so the client never holds the whole frame, and
the file's bytes depend only on the rows and their order, not on how they were partitioned.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dpriv import pending_interrupt
from dpriv.errors import LedgerError
from dpriv.io import ROW_GROUP, atomic_write, broken_link_problem, write_parquet  # noqa: F401 (ROW_GROUP: part of the ledger's vocabulary)
from dpriv.ledger_digests import released_digests
from dpriv.ledger_files import (
    ATTACK_DIR,  # noqa: F401 (re-exported: where the ledger keeps attack results)
    LOCK,
    check_place,
    drop_lock,
    hold_lock,
    is_temp,
    read_json,
    remove_temp,
    restore_file,
)
from dpriv.ledger_manifest import (
    MANIFEST,
    TAKE_UP,
    change_hint,
    field_change,
    policy_diff,
    policy_digest,
    read_manifest,
    recorded_digest,
    release_index,
)
from dpriv.ledger_state import StateReaders
from dpriv.ledger_written import forget_written, place, refuse_foreign, remove_written, staged
from dpriv.metrics.record import ReleaseRecord, write_record
from dpriv.path_args import check_path
from dpriv.private_repr import ledger_repr
from dpriv.released import read_released
from dpriv.state_parts import staged_state

if TYPE_CHECKING:
    import dask.dataframe as dd

POLICY = "policy.json"
#: The sensitive table of an Anatomy release (dpriv.anatomy.SENSITIVE_FILE).
SENSITIVE = "sensitive.parquet"


class Ledger(StateReaders):
    """A release ledger on the local file system (see module doc); its state readers
    (:meth:`read_state`, :meth:`read_state_dask`, :meth:`held_state`...) are
    :class:`dpriv.ledger_state.StateReaders`'."""

    def __init__(
        self, root: str | Path, *, create: bool = False, prepare: bool = True, lock: bool = False
    ) -> None:
        """Open the ledger at ``root``; ``create`` makes it when new (LedgerError inside another
        ledger: :func:`~dpriv.ledger_files.nested_problem`) and removes what a killed writer left
        (temp files; the policy.json of a first commit killed before its manifest), with ``prepare``
        the next release's folders too (:meth:`prepare_next`). A caller that may have nothing to
        release passes ``prepare=False`` and calls :meth:`prepare_next` once it knows a release will
        be written: a run with nothing to write neither refuses nor touches a file of the user's there.
        ``lock``: hold ``.dpriv-lock`` until :meth:`unlock` (LedgerError while another holds it)."""
        check_path(root, "root", "Ledger", "the ledger's folder")  # Ledger(5): named, not pathlib's TypeError
        check_place(root, create=create)
        self.root = Path(root)
        self._lock: int | None = None
        if create and (broken := broken_link_problem(self.root, "a ledger folder")):
            raise LedgerError(broken)
        if create and self.root.exists() and not self.root.is_dir():
            raise LedgerError(f"{self.root} is a file, not a ledger folder: choose a new or empty folder")
        if create:
            held = list(self.root.iterdir()) if self.root.exists() else []
            if [p for p in held if not is_temp(p) and p.name != LOCK] and not (self.root / MANIFEST).exists():
                raise LedgerError(
                    f"{self.root} is not empty and is not a ledger (no {MANIFEST}); "
                    "choose an empty or new folder"
                )
            self.root.mkdir(parents=True, exist_ok=True)
            if lock:  # a writer (dpriv release): held until unlock(), one writer at a time
                self._lock = hold_lock(self.root)
            if not (self.root / MANIFEST).exists():
                self._write_manifest({"releases": []})
            remove_temp(self.root)  # what a killed writer left
            forget_written(self.root, self.last_index())  # killed just after its commit
            if not self.committed() and (self.root / POLICY).is_file():  # a first commit killed half-way:
                (self.root / POLICY).unlink()  # it would pin a policy nothing was released under
            if prepare:
                self.prepare_next()
        elif not (self.root / MANIFEST).is_file():
            missing = "does not exist" if not self.root.exists() else f"is not a ledger (no {MANIFEST})"
            raise LedgerError(f"{self.root} {missing}")

    def unlock(self) -> None:
        """Let another writer open the ledger (the lock taken by ``create``)."""
        drop_lock(self._lock)
        self._lock = None

    def prepare_next(self) -> None:
        """Ready the folders of the release after the last commit (``releases/<j>/``,
        ``state/<j>/``, ``j`` = last + 1: commits are sequential, so no writer ever left a later
        one): remove what a killed writer of release ``j`` recorded writing there
        (:mod:`dpriv.ledger_written`), then those folders if empty. LedgerError, nothing removed,
        when they hold a file no such record names (a user's, even one named ``view.parquet``)."""
        nxt = self.last_index() + 1
        self._refuse_foreign(nxt)
        remove_written(self.root, nxt, self._folders(nxt))

    def _folders(self, index: int) -> tuple[Path, Path]:  # releases/<index>/, state/<index>/
        return self.release_dir(index), self.state_dir(index)

    def _refuse_foreign(self, index: int) -> None:
        """LedgerError naming what ``releases/<index>/`` and ``state/<index>/`` hold that dpriv
        did not write there (:func:`dpriv.ledger_written.refuse_foreign`)."""
        refuse_foreign(self.root, index, self._folders(index))

    # -- manifest -----------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        """``manifest.json``, read now and checked (:func:`dpriv.ledger_manifest.read_manifest`):
        ``releases`` (one dict per committed release, see :meth:`committed`) and, once a policy
        is committed, ``policy_sha256``. LedgerError when it is unreadable or malformed."""
        return read_manifest(self.root)

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        atomic_write(self.root / MANIFEST, json.dumps(manifest, indent=2).encode())

    def committed(self) -> list[dict[str, Any]]:
        """The manifest's entries of the committed releases, in order: ``index`` (1, 2, ...),
        ``input_sha`` and the optional digests and ``state_buckets`` (docs/ledger.md#manifestjson).
        LedgerError as :meth:`manifest`."""
        return self.manifest()["releases"]

    def last_index(self) -> int:
        """The index of the last committed release; 0 when none is (LedgerError as :meth:`manifest`)."""
        releases = self.committed()
        return releases[-1]["index"] if releases else 0

    __repr__ = ledger_repr  # root and count only (dpriv.private_repr)

    # -- policy -------------------------------------------------------------------------
    def check_policy(self, fingerprint: dict[str, Any], files: dict[str, str] | None = None) -> None:
        """Refuse a policy other than the recorded one; a new ledger records it with its
        first commit (so a first release that fails leaves no policy behind). ``files``: the
        file behind a digest field (``knowledge_sha256``...), named when only files changed."""
        path = self.root / POLICY
        if not path.exists():
            self._pending_policy = fingerprint
            return
        stored = self.stored_policy()
        given = json.loads(json.dumps(fingerprint, sort_keys=True))
        taken_up = {k: v for k, v in TAKE_UP.items() if given.get(k) == v and stored.get(k) != v}
        if taken_up:  # recorded with the next commit
            stored, self._pending_policy = stored | taken_up, given
        if diff := policy_diff(stored, given):
            if files and set(diff) <= set(files):  # the same policy, a file behind it changed
                raise LedgerError(
                    f"{' and '.join(files[k] for k in diff)} changed since this ledger recorded it "
                    f"(its SHA-256 is no longer {', '.join(diff)} of {self.root / POLICY}): a ledger "
                    "keeps the files it was released with; put the original file back, or start a "
                    "new ledger for the new file"
                )
            shown = "; ".join(field_change(stored, given, k) for k in diff[:6])
            raise LedgerError(
                f"the policy differs from the one this ledger was started with (fields {diff}: "
                f"{shown}); {change_hint(diff, stored, given)}"
            )

    def policy(self):
        """The ReleasePolicy this ledger was started with (knowledge and hierarchy paths as
        recorded), its relative paths resolved from the folder the ledger recorded them in, else
        from the ledger's parent folder (as ``dpriv release`` without --policy and
        ``attack(policy=None)`` read them): the policy works from any working folder. Left
        relative to the working folder when neither holds them. LedgerError when nothing was
        released into it yet, or its policy.json is damaged."""
        from dpriv.policy import ReleasePolicy
        from dpriv.policy_base import recorded_base

        if not (self.root / POLICY).exists() and self.last_index() == 0:
            raise LedgerError(
                f"{self.root} holds no release yet (no {POLICY}): release into it first "
                f"(dpriv release HISTORY --ledger {shlex.quote(str(self.root))})"
            )
        pinned = ("method", "knowledge_sha256", "hierarchy_sha256")  # recorded beside the policy's fields
        policy = ReleasePolicy.from_dict({k: v for k, v in self.stored_policy().items() if k not in pinned})
        near = [self.root.parent]
        base = recorded_base(self.root, policy.knowledge, policy.hierarchies, near, strict=False)
        return policy if base is None else policy.with_overrides(base_dir=base)

    def check_policy_file(self) -> None:
        """LedgerError when policy.json was changed, or removed, after ``manifest.json``
        recorded its digest (a ledger committed without a policy has neither)."""
        manifest = self.manifest()
        if (self.root / POLICY).exists() or recorded_digest(manifest, self.root) is not None:
            self.stored_policy(manifest)

    def stored_policy(self, manifest: dict[str, Any] | None = None) -> dict[str, Any]:
        """policy.json, refused (LedgerError) when its content no longer has the digest
        ``manifest.json`` recorded (``manifest``: that file already read, else read here): a
        hand edit would otherwise change every later release."""
        path = self.root / POLICY
        stored = read_json(path)
        recorded = recorded_digest(self.manifest() if manifest is None else manifest, self.root)
        if recorded is not None and (not isinstance(stored, dict) or policy_digest(stored) != recorded):
            raise LedgerError(
                f"{path} was changed after the ledger recorded it (its content no longer has the "
                "digest manifest.json holds as policy_sha256): the ledger is damaged; restore "
                "policy.json from a backup (a ledger keeps one policy: start a new ledger for a "
                "new policy)"
            )
        return stored

    # -- one release --------------------------------------------------------------------
    def release_dir(self, index: int) -> Path:
        """``releases/<index>/`` (whether or not it exists). InputError unless ``index`` is an
        int (:func:`dpriv.ledger_manifest.release_index`: ``"1"`` is refused)."""
        return self.root / "releases" / str(release_index(index))

    def commit(
        self,
        index: int,
        view: pd.DataFrame | dd.DataFrame,
        metrics: Mapping[str, Any],
        state: pd.DataFrame | dd.DataFrame,
        entry: dict[str, Any],
        *,
        drop_private: bool = True,
        sensitive: pd.DataFrame | None = None,
        state_split: tuple[str, int] | None = None,
    ) -> Mapping[str, Any]:
        """Write release ``index`` then list it in the manifest (the commit point); returns the
        metrics as written (with the write step's own ``seconds.write`` when ``metrics["seconds"]``
        is a dict).

        ``view`` (the released tuples, n_i rows) and ``state`` (one row per respondent seen so
        far) are pandas or Dask DataFrames; a Dask frame is computed one partition at a time
        and streamed to its file (:func:`dpriv.io.write_parquet`), never gathered whole on the client.
        With ``drop_private`` the view's ``_``-prefixed helper columns (``_order``, ``_label``,
        ...) are not written: they link tuples to internal groups or orders and are not part
        of V*_i. The state is written as given. ``metrics.json`` (a
        :class:`~dpriv.metrics.record.ReleaseRecord`, or any mapping of its keys) comes last,
        with the seconds of this write under ``seconds.write`` when ``metrics["seconds"]`` is
        a dict (:func:`~dpriv.metrics.record.write_record`). A failure before the manifest is
        rewritten leaves the ledger at release ``index - 1``.
        An Anatomy release (docs/released-format.md) passes its QI table as ``view`` and its
        ``sensitive`` table, written to ``releases/<i>/sensitive.parquet``.
        ``state_split`` = (id column, number of buckets) writes the state as one Parquet part
        per bucket, by the workers for a Dask state while the client writes the view
        (:func:`dpriv.state_parts.staged_state`); default: one bucket, ``state/<i>/state.parquet``.
        """
        if index != self.last_index() + 1:
            raise LedgerError(f"release {index} cannot follow release {self.last_index()}")
        self._refuse_foreign(index)
        tick = time.perf_counter()
        rdir = self.release_dir(index)
        made = not rdir.exists()
        rdir.mkdir(parents=True, exist_ok=True)
        id_col, nbuckets = state_split or (None, 1)
        pending = getattr(self, "_pending_policy", None)  # a new ledger's policy, or one taken up
        before = (self.root / POLICY).read_bytes() if pending and (self.root / POLICY).exists() else None
        finals = [rdir / "view.parquet", *([rdir / SENSITIVE] if sensitive is not None else [])]
        finals += [rdir / "metrics.json", self.state_dir(index)]
        try:  # each under a temp name, then recorded and renamed (dpriv.ledger_written)
            with staged_state(staged(self.state_dir(index)), state, id_col, nbuckets):  # workers write parts
                write_parquet(staged(finals[0]), view, drop_private=drop_private)
                if sensitive is not None:
                    write_parquet(staged(rdir / SENSITIVE), sensitive, drop_private=drop_private)
            if isinstance(metrics.get("seconds"), dict):  # the write step's own time, last
                seconds = {**metrics["seconds"], "write": round(time.perf_counter() - tick, 4)}
                metrics = {**metrics, "seconds": seconds}
            write_record(staged(rdir / "metrics.json"), metrics)
            place(self.root, index, finals)
            if pending is not None:
                atomic_write(self.root / POLICY, json.dumps(pending, indent=2, sort_keys=True).encode())
            manifest = self.manifest()
            if "policy_sha256" not in manifest and (self.root / POLICY).exists():  # first commit
                manifest["policy_sha256"] = policy_digest(read_json(self.root / POLICY))
            # each release also records the digest it was committed under: removing the
            # manifest's own then reads as damage, not as an earlier ledger without one
            digest = {"policy_sha256": manifest["policy_sha256"]} if "policy_sha256" in manifest else {}
            manifest["releases"].append({"index": index, **entry, **digest, **released_digests(rdir)})
            with pending_interrupt.deferred():  # the commit point: an interrupt waits until it is whole
                self._write_manifest(manifest)
                self._committed(index)
            return metrics
        except BaseException:  # an interrupt or a failed write
            listed = self._lists(index)
            if listed is not False:  # committed after all (an interrupt raised just after the rename)
                if listed:  # or the manifest cannot be read: kept, the next run tells (module doc)
                    self._committed(index)
                raise
            remove_written(self.root, index, self._folders(index), keep=None if made else rdir)
            if pending is not None:  # the policy as it was before this commit
                restore_file(self.root / POLICY, before)
            raise

    def _committed(self, index: int) -> None:
        """Release ``index`` is listed in the manifest: its files are the release's now."""
        self._pending_policy = None
        forget_written(self.root)

    def _lists(self, index: int) -> bool | None:
        """Whether the manifest on disk lists release ``index`` (None: it cannot be read). A
        commit's clean-up asks it, never removing the files of a committed release."""
        try:
            return any(r["index"] == index for r in self.committed())
        except (OSError, LedgerError):
            return None

    def check_committed(self, index: int) -> None:
        """LedgerError unless release ``index`` is committed (names the ones that are)."""
        held = [int(r["index"]) for r in self.committed()]
        if index not in held:
            span = f"releases {held[0]}..{held[-1]}" if held else "no release yet"
            raise LedgerError(f"{self.root} has no release {index!r}: it holds {span}")

    def read_view(self, index: int) -> pd.DataFrame:
        """The released view V*_i of release ``index`` as written, one row per kept tuple
        (docs/released-format.md): ``qi_group`` (int64); per numeric QI ``<q>_min``, ``<q>_max`` (int64,
        float64, or ``datetime.date`` for a date QI); per categorical QI ``<q>``, a value set ``{a,b}`` or a
        hierarchy node; the sensitive column as released. Text columns are ``object`` (Python ``str``) on
        pandas 2 and 3 alike (:func:`dpriv.released.read_released`). An Anatomy release gives its QI table
        (exact QIs, ``qi_group``; S: :meth:`read_sensitive`). InputError for an index that is not an int;
        LedgerError when release ``index`` is not committed (naming those that are) or its file is missing."""
        path = self.release_dir(index) / "view.parquet"
        if not path.is_file():
            self.check_committed(index)
            raise LedgerError(f"{path} is missing: the ledger is damaged; restore it from a backup")
        return read_released(path)

    def read_sensitive(self, index: int) -> pd.DataFrame | None:
        """The sensitive table of an Anatomy release ``index`` (``qi_group``, S, ``count``; text ``object``
        as in :meth:`read_view`); None for a generalized release (its view holds S)."""
        path = self.release_dir(index) / SENSITIVE
        return read_released(path) if path.exists() else None

    def read_metrics(self, index: int) -> ReleaseRecord:
        """``releases/<index>/metrics.json`` as a :class:`~dpriv.metrics.record.ReleaseRecord`; LedgerError
        when it is missing, not JSON, not a JSON object, or not the ``metrics_sha256`` committed."""
        path = self.release_dir(index) / "metrics.json"
        if not path.is_file():
            self.check_committed(index)
        record = read_json(path, next((e for e in self.committed() if e["index"] == index), None))
        problem = (
            "not a JSON object" if not isinstance(record, dict) else ReleaseRecord.number_problem(record)
        )
        if problem:
            raise LedgerError(
                f"ledger file {path} holds no release's metrics ({problem}): "
                "the ledger is damaged; restore the file from a backup"
            )
        return ReleaseRecord.from_dict(record)
