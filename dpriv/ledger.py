"""The release ledger: a folder that makes scheduled batch releases resumable (DESIGN.md).

```
ledger/
  policy.json                 the policy's fingerprint; another policy is refused
  manifest.json               committed releases; written last, atomically (temp + rename)
  releases/<i>/view.parquet   V*_i (public)
  releases/<i>/metrics.json   achieved k, l, t, j, suppression, utility, timings (public)
  state/<i>/state.parquet     per-respondent posteriors and QI-group labels (SENSITIVE)
```
``state/`` links respondents to posteriors over their sensitive values: it is created
readable by its owner only (0700 folders, 0600 files) and must never be published.
A release counts only once ``manifest.json`` lists it; files of a release that was not
committed are overwritten by the next attempt, so a crash leaves the ledger as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from dpriv.errors import LedgerError

MANIFEST, POLICY = "manifest.json", "policy.json"


def _atomic_write(path: Path, data: bytes, mode: int = 0o644) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class Ledger:
    """A release ledger on the local file system (see module doc)."""

    def __init__(self, root: str | Path, *, create: bool = False) -> None:
        self.root = Path(root)
        if create:
            leftovers = [p for p in self.root.iterdir() if not _is_temp(p)] if self.root.exists() else []
            if leftovers and not (self.root / MANIFEST).exists():
                raise LedgerError(
                    f"{self.root} is not empty and is not a ledger (no {MANIFEST}); "
                    "choose an empty or new folder"
                )
            self.root.mkdir(parents=True, exist_ok=True)
            if not (self.root / MANIFEST).exists():
                self._write_manifest({"releases": []})
            self._clean()
        elif not (self.root / MANIFEST).is_file():
            raise LedgerError(f"{self.root} is not a ledger (no {MANIFEST})")

    def _clean(self) -> None:
        """Remove what a killed writer left: temp files and releases after the last commit."""
        last = self.last_index()
        for p in sorted(self.root.rglob(".*"), reverse=True):
            if _is_temp(p) and p.is_file():
                p.unlink()
        for sub in ("releases", "state"):
            for d in (self.root / sub).glob("*"):
                if d.is_dir() and d.name.isdigit() and int(d.name) > last:
                    shutil.rmtree(d)

    # -- manifest -----------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        try:
            return json.loads((self.root / MANIFEST).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise LedgerError(f"cannot read {self.root / MANIFEST}: {exc}") from None

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        _atomic_write(self.root / MANIFEST, json.dumps(manifest, indent=2).encode())

    def committed(self) -> list[dict[str, Any]]:
        return self.manifest()["releases"]

    def last_index(self) -> int:
        releases = self.committed()
        return releases[-1]["index"] if releases else 0

    # -- policy -------------------------------------------------------------------------
    def check_policy(self, fingerprint: dict[str, Any]) -> None:
        """Record the policy on first use; refuse a different one later."""
        path = self.root / POLICY
        if not path.exists():
            _atomic_write(path, json.dumps(fingerprint, indent=2, sort_keys=True).encode())
            return
        stored = json.loads(path.read_text())
        if stored != json.loads(json.dumps(fingerprint, sort_keys=True)):
            diff = sorted(k for k in set(stored) | set(fingerprint) if stored.get(k) != fingerprint.get(k))
            raise LedgerError(
                f"the policy differs from the one this ledger was started with (fields {diff}); "
                "a ledger keeps one policy: start a new ledger for a new policy"
            )

    def policy(self):
        """The ReleasePolicy this ledger was started with (knowledge paths as recorded)."""
        from dpriv.policy import ReleasePolicy

        stored = json.loads((self.root / POLICY).read_text())
        stored.pop("method", None)
        return ReleasePolicy.from_dict(stored)

    # -- one release --------------------------------------------------------------------
    def release_dir(self, index: int) -> Path:
        return self.root / "releases" / str(index)

    def state_path(self, index: int) -> Path:
        return self.root / "state" / str(index) / "state.parquet"

    def commit(
        self,
        index: int,
        view: pd.DataFrame,
        metrics: dict[str, Any],
        state: pd.DataFrame,
        entry: dict[str, Any],
    ) -> None:
        """Write release ``index`` then list it in the manifest (the commit point)."""
        if index != self.last_index() + 1:
            raise LedgerError(f"release {index} cannot follow release {self.last_index()}")
        rdir = self.release_dir(index)
        rdir.mkdir(parents=True, exist_ok=True)
        _atomic_write(rdir / "view.parquet", _parquet_bytes(view))
        _atomic_write(rdir / "metrics.json", json.dumps(metrics, indent=2, default=_json_default).encode())
        sdir = self.state_path(index).parent
        for d in (sdir.parent, sdir):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(d, 0o700)
        _atomic_write(self.state_path(index), _parquet_bytes(state), mode=0o600)
        manifest = self.manifest()
        manifest["releases"].append({"index": index, **entry})
        self._write_manifest(manifest)

    def read_state(self, index: int) -> pd.DataFrame:
        return pd.read_parquet(self.state_path(index))

    def read_view(self, index: int) -> pd.DataFrame:
        return pd.read_parquet(self.release_dir(index) / "view.parquet")

    def read_metrics(self, index: int) -> dict[str, Any]:
        return json.loads((self.release_dir(index) / "metrics.json").read_text())


def _is_temp(path: Path) -> bool:
    """A temp file of :func:`_atomic_write` (``.<name>.<random>``)."""
    return path.name.startswith(".") and path.name.count(".") >= 2


def _parquet_bytes(frame: pd.DataFrame) -> bytes:
    import io

    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "item"):
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)
