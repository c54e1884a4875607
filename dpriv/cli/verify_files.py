"""What lies beside a released file that ``dpriv verify`` is given on its own: the companions
``dpriv anonymize`` writes (``OUT.metrics.json``, an Anatomy release's ``OUT.sensitive.<ext>``)
or, for a file inside a ledger (``L/releases/<i>/view.parquet``), the release's own
``metrics.json`` and ``sensitive.parquet``. A release's recorded tuple count catches a row
dropped from the file, which a check against the original alone cannot tell from a suppressed
tuple (docs/released-format.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpriv.cli.common import sensitive_out
from dpriv.errors import InputError
from dpriv.ledger import SENSITIVE
from dpriv.ledger_manifest import MANIFEST
from dpriv.policy_keys import BASELINE_FIELDS

if TYPE_CHECKING:
    from dpriv.policy import ReleasePolicy

#: The metrics of ``dpriv anonymize --out OUT``: ``OUT.metrics.json``.
METRICS_SUFFIX = ".metrics.json"
#: The metrics file of a ledger's release, beside its view.parquet.
LEDGER_METRICS = "metrics.json"


@dataclass(frozen=True)
class LedgerRelease:
    """``view.parquet`` of release ``index`` of the ledger at ``root``."""

    root: Path
    index: int


def ledger_release(released: Path) -> LedgerRelease | None:
    """The ledger release a file is, when its path is ``L/releases/<i>/view.parquet`` of a
    ledger ``L`` (a manifest.json there); else None."""
    folder = released.parent
    if released.name != "view.parquet" or folder.parent.name != "releases" or not folder.name.isdigit():
        return None
    root = folder.parent.parent
    return LedgerRelease(root, int(folder.name)) if (root / MANIFEST).is_file() else None


def refuse_not_a_view(released: Path) -> None:
    """InputError (exit 2) when ``released`` is a file dpriv writes beside a release but no
    released view: a ledger's state (``L/state/<i>/state.parquet`` or a part of it, the ledger's
    private link of ids to posteriors: read as a release it printed its columns, ids among them)
    or a metrics JSON (``metrics.json``, ``OUT.metrics.json``: read as CSV)."""
    root = next(
        (p.parent for p in released.parents if p.name == "state" and (p.parent / MANIFEST).is_file()), None
    )
    if root is not None:
        raise InputError(
            f"{released} is the ledger's state ({root}/state/), not a released view: it links "
            "respondent ids to what an adversary would believe of them and is never published; "
            f"pass a release's view ({root}/releases/<i>/view.parquet), or --ledger {root} --view I"
        )
    if released.name == LEDGER_METRICS or released.name.endswith(METRICS_SUFFIX):
        view = (
            released.parent / "view.parquet"
            if released.name == LEDGER_METRICS
            else released.with_name(released.name[: -len(METRICS_SUFFIX)])
        )
        raise InputError(
            f"{released} is a release's metrics (JSON), not a released view: pass the view it "
            f"describes ({view}), or --ledger L --view I for a ledger's release"
        )


def check_ledger_file(released: Path) -> None:
    """For a file inside a ledger (:func:`ledger_release`): LedgerError (exit 2) when its release
    is not committed, or when the release's view, metrics.json or sensitive table is not the
    file the manifest recorded (:func:`dpriv.ledger_digests.check_released_files`: a view or a
    metrics.json edited after the release); as ``dpriv verify --ledger`` refuses them. A check
    of the file alone would hold an edited box, or a tuple count edited with the rows, against
    nothing the ledger recorded."""
    from dpriv.errors import LedgerError
    from dpriv.ledger import Ledger
    from dpriv.ledger_digests import check_released_files
    from dpriv.rows import spans

    lr = ledger_release(released)
    if lr is None:
        return
    entries = {int(e["index"]): e for e in Ledger(lr.root).committed()}
    if lr.index not in entries:
        raise LedgerError(
            f"{released} is not a committed release of the ledger {lr.root} (its manifest.json lists "
            f"releases {spans(sorted(entries))}): what an interrupted release left is no release; "
            "verify a committed one"
        )
    check_released_files(released.parent, entries[lr.index])


def sensitive_beside(released: Path) -> Path:
    """Where an Anatomy release's sensitive table lies: ``sensitive.parquet`` beside a ledger's
    view, ``OUT.sensitive.<ext>`` beside what ``dpriv anonymize`` wrote."""
    return released.parent / SENSITIVE if ledger_release(released) is not None else sensitive_out(released)


#: The keys ``dpriv anonymize`` adds to ``OUT.metrics.json`` (after the release's own): the method
#: it released with and that method's own policy fields (:data:`dpriv.policy_keys.BASELINE_FIELDS`),
#: e.g. ``"method": "mondrian-l", "method_parameters": {"l": 3}``, then the anonymity parameters
#: its groups and its tuple count are held to (:func:`anonymity_fields`), e.g.
#: ``"anonymity_parameters": {"k": 7, "max_suppression": 0.05}``; ``dpriv verify`` holds the view
#: to them when its flags and policy file do not ask other values.
METHOD_KEY = "method"
PARAMETERS_KEY = "method_parameters"
ANONYMITY_KEY = "anonymity_parameters"
#: The anonymity parameters recorded since session 47, beside k (and t): how much of the view a
#: release may suppress, and the ground distance of t's EMD. A file written before holds neither
#: and is checked at the policy's (default 0.05 and "equal"), as before.
LATER_FIELDS = ("max_suppression", "emd_ground")


def anonymity_fields(method: str) -> tuple[str, ...]:
    """The policy fields that no method owns and ``dpriv verify`` holds a release by ``method`` to:
    the criteria it promises (:data:`dpriv.criteria.GUARANTEES`), k and, for JS-reduce, mondrian-t
    and histogram, t (mondrian-l's l is a method parameter); ``max_suppression`` (its tuple count,
    every method) and, with t, ``emd_ground`` (t's EMD). j is left out: verify cannot check it (it
    needs the members' priors). E.g. ``("k", "t", "max_suppression", "emd_ground")`` for
    JS-reduce, ``("k", "max_suppression")`` for mondrian-l."""
    from dpriv.criteria import promised  # NumPy and the criteria: not for --help

    criteria = tuple(name for name in ("k", "t") if name in promised(method))
    return (*criteria, "max_suppression", *(("emd_ground",) if "t" in criteria else ()))


def method_record(method: str, policy: ReleasePolicy) -> dict[str, Any]:
    """``{METHOD_KEY: method, PARAMETERS_KEY: {field: value}, ANONYMITY_KEY: {field: value}}``
    for ``policy``'s fields of ``method`` (``{}`` for JS-reduce, mondrian-t and histogram, whose
    parameters are k, t, j) and its anonymity parameters (:func:`anonymity_fields`)."""
    fields = BASELINE_FIELDS.get(method, ())
    return {
        METHOD_KEY: method,
        PARAMETERS_KEY: {name: getattr(policy, name) for name in fields},
        ANONYMITY_KEY: {name: getattr(policy, name) for name in anonymity_fields(method)},
    }


@dataclass(frozen=True)
class Recorded:
    """The tuple count a release recorded (``n_released``) and the file that says so; for a
    file ``dpriv anonymize`` wrote, the method, its parameters and its anonymity parameters
    (:func:`method_record`; None, ``{}`` and ``{}`` in a ledger's ``metrics.json`` or one written
    before they were recorded; ``anonymity`` ``{}`` in one written before k and t were)."""

    n_released: int
    path: Path
    method: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    anonymity: dict[str, Any] = field(default_factory=dict)


def metrics_beside(released: Path) -> Path:
    """Where the metrics of a released file lie: a ledger release's ``metrics.json``, else
    ``OUT.metrics.json`` (what ``dpriv anonymize`` writes)."""
    if ledger_release(released) is not None:
        return released.parent / LEDGER_METRICS
    return released.with_name(released.name + METRICS_SUFFIX)


def recorded_beside(released: Path) -> Recorded | None:
    """``n_released`` of the metrics file beside a released file (:func:`metrics_beside`);
    None when there is no such file. InputError when the file is there but holds no whole
    count >= 0 (damaged or edited: checking without it would let a cut row pass)."""
    path = metrics_beside(released)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        count = data.get("n_released")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        data, count = {}, None
    if isinstance(count, float) and count.is_integer():
        count = int(count)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise InputError(
            f"{path} lies beside {released} but holds no tuple count (n_released, a whole number >= 0): "
            "it was damaged or edited; restore it as dpriv wrote it, or move it away to verify the "
            "file without its recorded count"
        )
    method, parameters = data.get(METHOD_KEY), data.get(PARAMETERS_KEY, {})
    anonymity = data.get(ANONYMITY_KEY)
    if (method is None and anonymity is not None) or (
        method is not None and not _method_of_record(method, parameters, anonymity)
    ):
        raise InputError(
            f"{path} lies beside {released} but its {METHOD_KEY} {method!r}, {PARAMETERS_KEY} "
            f"{parameters!r} and {ANONYMITY_KEY} {anonymity!r} are not what dpriv anonymize records: "
            "it was damaged or edited; restore it as dpriv wrote it, or move it away and give "
            "--method (and its parameters, --k, --t) to verify"
        )
    return Recorded(count, path, method, dict(parameters), dict(anonymity or {}))


def _method_of_record(method: Any, parameters: Any, anonymity: Any) -> bool:
    """Whether ``method`` is a release method, ``parameters`` a mapping of exactly its fields
    (:data:`BASELINE_FIELDS`) to numbers and ``anonymity`` None (a file written before it was
    recorded) or a mapping of its :func:`anonymity_fields` (those of :data:`LATER_FIELDS` may be
    missing: a file written before they were) to numbers, ``emd_ground`` to text."""
    from dpriv.baselines import METHODS

    if method not in METHODS:
        return False
    if anonymity is not None:
        fields = set(anonymity_fields(method))
        if not isinstance(anonymity, dict) or not fields - set(LATER_FIELDS) <= set(anonymity) <= fields:
            return False
        # emd_ground is text ("equal", "ordered"): its value is checked as the policy's
        if not all(isinstance(v, str) if k == "emd_ground" else _number(v) for k, v in anonymity.items()):
            return False
    return _numbers_of(parameters, BASELINE_FIELDS.get(method, ()))


def _number(value: Any) -> bool:
    """An int or float, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _numbers_of(values: Any, fields: tuple[str, ...]) -> bool:
    """Whether ``values`` is a mapping of exactly ``fields`` to numbers (no bool)."""
    return isinstance(values, dict) and set(values) == set(fields) and all(map(_number, values.values()))
