"""``metrics.json``: the typed record of one release, its one writer and its one reader.

A ledger writes ``releases/<i>/metrics.json`` per release (docs/ledger.md) and ``dpriv
anonymize --out OUT`` writes ``OUT.metrics.json`` (docs/released-format.md); both hold a
:class:`ReleaseRecord`, written by :func:`write_record` and read back by :func:`read_record`.
The JSON keys are an interface (DESIGN.md "Interfaces"): a field's name is its key, and the
keys keep the order they always had (the release, the verification, the measures, the
defender's tail, the seconds).

A record reads like the dict it is written from (``record["n_groups"]``, ``record.get(...)``,
``dict(record)``), so code that read the JSON keys reads the record unchanged.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class DefenderTail:
    """Tail risk of the defender's own posteriors (:func:`dpriv.metrics.defender_tail.combine_tail`).

    ``confident_share`` (float in [0, 1]) and ``confident_precision`` (float in [0, 1]) are
    None when undefined (no kept tuple, no confident claim); ``n_confident`` (int) counts the
    confident tuples; ``max_posterior`` (float in [0, 1] or None) is the largest posterior on
    a true value.
    """

    confident_share: float | None
    confident_precision: float | None
    n_confident: int
    max_posterior: float | None


#: Keys of :class:`DefenderTail` in ``metrics.json`` (release loop only).
TAIL_KEYS = tuple(f.name for f in fields(DefenderTail))


@dataclass(frozen=True, eq=False)
class ReleaseRecord(Mapping[str, Any]):
    """What ``metrics.json`` holds for one release, one field per JSON key.

    Verification (:meth:`dpriv.anonymity.verify.VerificationReport.to_dict`): ``ok``,
    ``k_achieved``/``l_achieved`` (int or None), ``t_achieved``/``j_achieved`` (float or
    None), ``n_rows``, ``n_groups``, ``problems`` (list of str); ``rbk_closeness_achieved``
    (float) only with ``policy.rbk_closeness``, kept in ``extra``. Measures
    (:class:`dpriv.metrics.release.ReleaseMetrics`: utility E11, E24-E26 and KPR E21):
    ``n_original``, ``n_released``, ``n_suppressed``, ``m`` (number of QIs),
    ``suppression_rate``, ``min_group_size``, ``largest_group``, ``average_semiperimeter``,
    ``gcp``, ``gcp_kept``, ``discernibility``, ``c_avg``, the QI-S association measures of
    :mod:`dpriv.metrics.anatomy` (``association_loss``, ``association_loss_view``,
    ``group_qi_span``; both release formats), ``kpr`` (percent); None where undefined.
    ``seconds``: per step (dict, release loop) or in total (float, anonymize).
    Present only where set: ``release`` (the ledger's index, first key), ``tail`` (its four
    keys flattened, :data:`TAIL_KEYS`), ``small_view`` (``"suppressed"``), ``gate`` (the release gate's check,
    :meth:`dpriv.gate_record.GateCheck.as_record`, with ``policy.retro_max_gain``), ``posterior_guard``
    (:meth:`dpriv.posterior_guard.PosteriorGuard.as_record`, with ``policy.posterior_bound``). ``extra``: keys
    of another writer (an older ledger, a test), kept as read, written last.
    """

    ok: bool | None = None
    k_achieved: int | None = None
    l_achieved: int | None = None
    t_achieved: float | None = None
    j_achieved: float | None = None
    n_rows: int | None = None
    n_groups: int | None = None
    problems: list[str] = field(default_factory=list)
    n_original: int | None = None
    n_released: int | None = None
    n_suppressed: int | None = None
    m: int | None = None
    suppression_rate: float | None = None
    min_group_size: int | None = None
    largest_group: int | None = None
    average_semiperimeter: float | None = None
    gcp: float | None = None
    gcp_kept: float | None = None
    discernibility: int | None = None
    c_avg: float | None = None
    association_loss: float | None = None
    association_loss_view: float | None = None
    group_qi_span: float | None = None
    kpr: float | None = None
    seconds: dict[str, float] | float | None = None
    release: int | None = None
    tail: DefenderTail | None = None
    small_view: str | None = None
    gate: dict[str, Any] | None = None
    posterior_guard: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def number_problem(cls, data: Mapping[str, Any]) -> str | None:
        """The first number field of ``data`` (a ``metrics.json``) that holds something else
        (``t_achieved = 'x'``), as a message; None when every one is a number or absent."""
        numbers = [f.name for f in fields(cls) if f.type in ("int | None", "float | None")]
        seconds = data.get("seconds")
        steps = seconds if isinstance(seconds, dict) else {"": seconds}
        checked = {
            **{k: data.get(k) for k in (*numbers, *TAIL_KEYS)},
            **{f"seconds.{k}".rstrip("."): v for k, v in steps.items()},
        }
        for name, value in checked.items():
            bad = value is not None and (isinstance(value, bool) or not isinstance(value, int | float))
            if bad or (isinstance(value, float) and math.isinf(value)):  # NaN: a measure not defined
                return f"{name} = {value!r} is not a finite number"
        return None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReleaseRecord:
        """The record of a flat mapping (the JSON, or the merged parts of a release); keys
        that are not fields go to ``extra``, missing ones are None."""
        names = {f.name for f in fields(cls)} - {"tail", "extra"}
        known = {k: v for k, v in data.items() if k in names}
        has_tail = any(k in data for k in TAIL_KEYS)
        tail = DefenderTail(**{k: data.get(k) for k in TAIL_KEYS}) if has_tail else None
        extra = {k: v for k, v in data.items() if k not in names and k not in TAIL_KEYS}
        return cls(**known, tail=tail, extra=extra)

    @classmethod
    def of(
        cls,
        report: Any,
        measured: Any,
        *,
        seconds: dict[str, float] | float | None = None,
        release: int | None = None,
        tail: DefenderTail | None = None,
        small_view: str | None = None,
        posterior_guard: dict[str, Any] | None = None,
    ) -> ReleaseRecord:
        """The record of a verified, measured release: ``report`` a
        :class:`~dpriv.anonymity.verify.VerificationReport`, ``measured`` a
        :class:`~dpriv.metrics.release.ReleaseMetrics` (its values win where both have a key)."""
        flat = {**report.to_dict(), **measured.to_dict(), "seconds": seconds, "release": release}
        optional = {"small_view": small_view, "posterior_guard": posterior_guard}
        return cls.from_dict({**flat, **optional}).with_tail(tail)

    def with_tail(self, tail: DefenderTail | None) -> ReleaseRecord:
        """This record with the defender's tail (None: as it is)."""
        return self if tail is None else replace(self, tail=tail)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, keys in the order of ``metrics.json``."""
        out: dict[str, Any] = {} if self.release is None else {"release": self.release}
        for f in fields(self):
            if f.name not in ("seconds", "release", "tail", "small_view", "gate", "posterior_guard", "extra"):
                out[f.name] = getattr(self, f.name)
        if self.tail is not None:
            out.update({k: getattr(self.tail, k) for k in TAIL_KEYS})
        out["seconds"] = self.seconds
        if self.small_view is not None:
            out["small_view"] = self.small_view
        if self.gate is not None:
            out["gate"] = self.gate
        if self.posterior_guard is not None:
            out["posterior_guard"] = self.posterior_guard
        return {**out, **{k: v for k, v in self.extra.items() if k not in out}}

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())


def _plain(obj: Any) -> Any:
    """NumPy scalars and arrays as Python values (anything else as its string)."""
    if hasattr(obj, "item"):
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)


def write_record(path: Path, record: Mapping[str, Any], mode: int | None = 0o644) -> None:
    """Write ``metrics.json`` atomically (:func:`dpriv.io.atomic_write`, indented JSON; it is
    public: ``mode`` 0o644 in a ledger, None for the permissions of an ordinary new file).
    ``record`` is a :class:`ReleaseRecord` (or any mapping of JSON keys: a test's stand-in)."""
    from dpriv.io import atomic_write

    atomic_write(Path(path), json.dumps(dict(record), indent=2, default=_plain).encode(), mode=mode)


def read_record(path: Path) -> ReleaseRecord:
    """The :class:`ReleaseRecord` of a ``metrics.json`` (FileNotFoundError when absent)."""
    return ReleaseRecord.from_dict(json.loads(Path(path).read_text()))
