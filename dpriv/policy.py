"""ReleasePolicy: columns, domains, privacy parameters and knowledge sources of a release.

The policy file is the TOML of docs/policy.md: tables ``[columns]``,
``[privacy]``, ``[domains]``, ``[kinds]``, ``[release]``, ``[knowledge]`` and ``[hierarchies]``. Every field
can also be set by a CLI flag (flags win). Types and domains missing from the file are
inferred from the first view (:meth:`ReleasePolicy.resolve`) and reported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from dpriv._random import MAX_SEED
from dpriv.errors import PolicyError
from dpriv.frozen import freeze
from dpriv.hierarchy import Hierarchy, read_hierarchy
from dpriv.policy_domains import is_number
from dpriv.policy_file import in_file, policy_fields
from dpriv.policy_gate import BOUNDS, GATE_KEYS, gate_on, touches_gate, warn_idle_gate_keys
from dpriv.policy_keys import (
    fields_problem,
    immutable,
    invalid_policy,
    overrides_named,
    refuse_coercion,
    unset_problem,
)
from dpriv.policy_values import as_python as as_python  # re-exported: imported from here by many modules
from dpriv.policy_values import dated_domains, inferred_domains
from dpriv.policy_values import domain_note as domain_note  # re-exported

#: "date": a numeric QI on a grid of whole days, released as date intervals (dpriv/dates.py).
Kind = Literal["numeric", "categorical", "date"]

#: Default ``max_suppression``: a release that leaves out more than 5 % of a view's tuples
#: is refused. A data owner publishing a view expects (nearly) all of it; 5 % is the share
#: the demo's own parameters stay well under (t 0.5, j 0.8 suppress at most ~3 %). Raise
#: it explicitly (``[privacy] max_suppression``) to accept more.
DEFAULT_MAX_SUPPRESSION = 0.05

#: Fields added after ledgers were recorded, with the default that keeps them out of the
#: fingerprint (:meth:`ReleasePolicy.fingerprint`), so that ledgers recorded before still match.
NEWER = dict(small_view="refuse", allow_single_sensitive=False, hierarchies={}, release_format="generalized")
NEWER |= dict(persistent_groups=False, exit_values=[], topdown_cut="median", posterior_bound=None)
NEWER |= dict(retro_posterior_bound=None, rbk_closeness=None)


class ReleasePolicy(BaseModel):
    """What is released and under which guarantees (validated on construction: PolicyError naming
    each bad key). Immutable, its lists and tables too (:mod:`dpriv.frozen`); copies are made with
    :meth:`with_overrides` and :meth:`without`.

    Attributes
    ----------
    id, time : names of the respondent-id column (never released) and of the release-index
        column (histories only; ``None`` for a single view)
    qi : quasi-identifier columns, in the order used by the Hilbert key
    sensitive : the sensitive column; ``domains[sensitive]`` is its ordered domain D[S]
    kinds : "numeric", "categorical" or "date" per QI (a date QI is numeric on a grid of whole
        days, released as date intervals; its domain may be given as dates)
    domains : numeric QI -> [min, max]; categorical QI -> ordered levels; sensitive -> values
    k : int >= 1, QI-group size (E9)
    t : float in [0, 1], EMD threshold (E9, E18/E19 with ``emd_ground``)
    j : float >= 0, JS threshold in units of ``log_base`` (bits by default) (E9, E8)
    max_suppression : float in [0, 1]; a release suppressing a larger share of the view's
        tuples is refused (exit 2, nothing written); default :data:`DEFAULT_MAX_SUPPRESSION`
    small_view : a view of a history with fewer than k tuples: "refuse" (default), "suppress"
        (committed fully suppressed, the history goes on) or "merge" (refused with the reason,
        :data:`dpriv.validate.MERGE_REFUSED`); docs/policy.md. ``anonymize`` always refuses.
    allow_single_sensitive : release a sensitive column holding one value only (l = 1: the
        value is disclosed for everyone) with a warning instead of refusing it
    retro_max_gain : the release gate's bound (:mod:`dpriv.gate`): the largest mean gain (E10)
        of the retrospective adversary on releases ``1 .. i`` as of ``i``; above it release
        ``i`` is regrouped (``retro_lever``, ``retro_retries``), then refused. ``None``: no gate
    retro_retries : how many times the gate regroups before it refuses (0 = refuse at once)
    retro_lever : what a regrouping tightens: j, t, rbk_closeness halved (default j), k doubled
    retro_attendance : the exam probability the gate's adversary assumes (absences become
        evidence); ``None`` (default): absences carry no information
    retro_posterior_bound : in (0, 1]: no respondent of release ``i`` keeps a tuple of releases
        ``1 .. i`` that the gate's adversary reads at or above it as of ``i``; such members are
        withheld from release ``i`` (:mod:`dpriv.gate`). ``None`` (default): off
    hilbert_bits : bits per QI on the Hilbert grid; ``None`` = docs/algorithms.md §2.2 default
    group_cap : an open QI-group above this sets aside the member that hurts (E9) most (0: max(8k, 64))
    defer_wait : steps a tuple that would worsen the open group may wait (0 = no deferral)
    attach_reach : groups, nearest first in Hilbert order, a leftover may join (0 = none)
    prior_key : add the expected rank of S under each tuple's prior as one more Hilbert
        dimension (respondents with similar revised knowledge scanned together; docs/policy.md)
    grouping : ``"scan"`` (Algorithm 2's greedy Hilbert scan, default; ``"literal"`` names the same,
        stored as ``"scan"``) or ``"topdown"``
        (Mondrian-style splits that keep k, t and j, :mod:`dpriv.anonymity.topdown`)
    topdown_level : the top-down split's roots: the Hilbert sub-cubes of this level (0 = one root)
    topdown_pc : a box may also be cut along the first principal axis of its members' priors
    topdown_cut : how a box that keeps (E9) is cut: ``"median"`` (Mondrian, default), ``"slack"``,
        ``"box"``, ``"slack-widest"`` or ``"gini"`` (:mod:`dpriv.anonymity.topdown`; docs/policy.md)
    persistent_groups : the same co-members at every release a respondent attends
        (:mod:`dpriv.anonymity.persistent`); off by default (docs/results/persistent-8x2000)
    release_format : ``"generalized"`` (default: QI intervals / value sets per QI-group) or
        ``"anatomy"`` (bucketization, Xiao & Tao 2006; groups formed in knowledge space), both
        in docs/released-format.md
    mondrian_cut : the Mondrian baselines' median cut: ``"strict"`` (no overlap, default) or
        ``"relaxed"`` (ties at the median divided between the halves, as anonypy does)
    exit_values : the values that end a history; set: every QI-group holding one holds two
        distinct ones (the exit guard, :mod:`dpriv.exit_guard`). Empty (default): off
    posterior_bound : in (0, 1]: no kept tuple's Ω posterior reaches it (:mod:`dpriv.posterior_guard`)
    rbk_closeness : in [0, 1]: every QI-group's sensitive distribution lies within this total
        variation of the mean of its members' revised priors RBK^sv (JS-reduce only; docs/policy.md
        #rbk-closeness). ``None`` (default): off
    seed : every random choice (tie-breaks, labels, row shuffles) derives from it; 0..2**60-1
    l, bt_b, bt_t : the baselines' distinct l-diversity and (B,t)-privacy parameters (§4.2, §3.5)
    knowledge : knowledge sources, e.g. ``{"dk": "knowledge/dk.npz"}`` (paths relative to the file)
    hierarchies : categorical QI -> path of its ARX-format generalization hierarchy
        (:mod:`dpriv.hierarchy`; relative to the file, or ``~/``), released as the group's lowest common node
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = "respondent_id"
    time: str | None = None
    qi: list[str] = Field(min_length=1)
    sensitive: str
    kinds: dict[str, Kind] = Field(default_factory=dict, validate_default=True)
    domains: dict[str, list[Any]] = Field(default_factory=dict, validate_default=True)
    k: int = Field(default=5, ge=1)
    t: float = Field(default=0.3, ge=0.0, le=1.0)
    j: float = Field(default=0.1, ge=0.0, allow_inf_nan=False)
    emd_ground: Literal["equal", "ordered"] = "equal"
    log_base: float = Field(default=2.0, gt=1.0)
    max_suppression: float = Field(default=DEFAULT_MAX_SUPPRESSION, ge=0.0, le=1.0)
    small_view: Literal["refuse", "suppress", "merge"] = "refuse"
    allow_single_sensitive: bool = False
    retro_max_gain: float | None = Field(default=None, gt=0.0, le=1.0)
    retro_retries: int = Field(default=2, ge=0, le=8)
    retro_attendance: float | None = Field(default=None, gt=0.0, le=1.0)
    retro_lever: Literal["j", "k", "t", "rbk_closeness"] = "j"
    retro_posterior_bound: float | None = Field(default=None, gt=0.0, le=1.0)
    hilbert_bits: int | None = Field(default=None, ge=1, le=32)
    group_cap: int = Field(default=0, ge=0)
    defer_wait: int = Field(default=0, ge=0)
    attach_reach: int = Field(default=1024, ge=0)
    prior_key: bool = False
    grouping: Literal["scan", "topdown", "literal"] = "scan"
    topdown_level: int = Field(default=1, ge=0, le=32)
    topdown_pc: bool = False
    topdown_cut: Literal["median", "slack", "box", "slack-widest", "gini"] = "median"
    persistent_groups: bool = False
    release_format: Literal["generalized", "anatomy"] = "generalized"
    mondrian_cut: Literal["strict", "relaxed"] = "strict"
    exit_values: list[str] = Field(default_factory=list, validate_default=True)
    posterior_bound: float | None = Field(default=None, gt=0.0, le=1.0)
    rbk_closeness: float | None = Field(default=None, ge=0.0, le=1.0)
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    l: int = Field(default=3, ge=1)  # noqa: E741 - the field's standard name (l-diversity)
    bt_b: float = Field(default=0.3, gt=0.0)
    bt_t: float = Field(default=0.25, ge=0.0)
    npartitions: int | None = Field(default=None, ge=1)
    knowledge: dict[str, str] = Field(default_factory=dict, validate_default=True)
    hierarchies: dict[str, str] = Field(default_factory=dict, validate_default=True)
    base_dir: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_coercion(cls, data: Any) -> Any:
        return refuse_coercion(cls.model_fields, data)

    @model_validator(mode="before")
    @classmethod
    def _date_domains(cls, data: Any) -> Any:
        """A date QI's domain given as dates (TOML ``2020-01-01`` or ISO text) -> whole days."""
        return dated_domains(data)

    @field_validator("grouping", mode="before")
    @classmethod
    def _literal_is_the_scan(cls, value: Any) -> Any:
        """``"literal"`` (issue 12's name for the paper's Algorithm 2, kept for reproduction) is the
        scan itself: stored as ``"scan"``, so a policy saying either has one fingerprint and one set
        of released bytes."""
        return "scan" if value == "literal" else value

    @field_validator("qi", "kinds", "domains", "exit_values", "knowledge", "hierarchies")
    @classmethod
    def _read_only(cls, value: Any, info: ValidationInfo) -> Any:
        """Read-only lists and tables (dpriv/frozen.py); ``~/`` paths of knowledge/hierarchies expanded."""
        if info.field_name in ("knowledge", "hierarchies") and isinstance(value, dict):
            value = {k: str(Path(v).expanduser()) if str(v).startswith("~") else v for k, v in value.items()}
        return freeze(value, str(info.field_name))

    @model_validator(mode="after")
    def _check_columns(self) -> ReleasePolicy:
        """Fields that do not fit together (:func:`dpriv.policy_keys.fields_problem`)."""
        if problem := fields_problem(self):
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _gate_keys_need_the_bound(self, info: ValidationInfo) -> ReleasePolicy:
        """Idle gate keys: one warning per policy read, none for its copies (dpriv/policy_gate.py)."""
        if not (info.context or {}).get("copy"):
            warn_idle_gate_keys(self)
        return self

    # -- construction -------------------------------------------------------------------
    if not TYPE_CHECKING:  # type checkers keep pydantic's signature (the fields as keywords)

        def __init__(self, /, **fields: Any) -> None:
            """Validate ``fields`` (docs/policy.md); PolicyError naming each bad key, with the
            words of :meth:`from_dict` (pydantic's ValidationError does not leave dpriv)."""
            try:
                super().__init__(**fields)
            except ValidationError as exc:
                raise invalid_policy(exc.errors(), type(self).model_fields) from None

        # pydantic's mark of its own __init__ (RootModel's too): model_validate (from_dict) keeps
        # validating directly, with its context, instead of calling this __init__
        __init__.__pydantic_base_init__ = True

    def __setattr__(self, name: str, value: Any) -> None:
        """Refused: a policy is immutable. Raises PolicyError naming the copy to make instead
        (``p.with_overrides(k=3)`` for ``p.k = 3``)."""
        raise PolicyError(immutable(name, value, type(self).model_fields))

    def __delattr__(self, name: str) -> None:
        """Refused: a policy is immutable. Raises PolicyError naming ``p.without(name)``."""
        raise PolicyError(immutable(name, None, type(self).model_fields, deleted=True))

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, copy: bool = False) -> ReleasePolicy:
        """Build from a flat dict; pydantic errors become one :class:`PolicyError`. ``copy``: a
        copy of a policy already built (its idle gate keys were warned about then)."""
        try:
            return cls.model_validate(data, context={"copy": copy})
        except ValidationError as exc:
            raise invalid_policy(exc.errors(), cls.model_fields) from None

    @classmethod
    def from_toml(cls, path: str | Path, **overrides: Any) -> ReleasePolicy:
        """Read the policy TOML (docs/policy.md); ``overrides`` (policy keys, not None) win. A
        refusal names the file and the overrides: ``invalid policy (policy file p.toml with
        overrides tt=0.5): unknown key 'tt' ...``."""
        return cls.read_toml(path, overrides)

    @classmethod
    def read_toml(
        cls, path: str | Path, overrides: dict[str, Any], named: Callable[[dict], str] = overrides_named
    ) -> ReleasePolicy:
        """:meth:`from_toml`, the overrides worded in a refusal by ``named`` (the CLI passes
        :func:`dpriv.policy_keys.flags_named`: ``with --tt``)."""
        path = Path(path)
        flat = policy_fields(path, overrides, cls.model_fields)  # the file's refusals name it already
        try:
            return cls.from_dict(flat)
        except PolicyError as exc:  # name the file (and the overrides given with it)
            raise in_file(exc, path, overrides, named) from None

    def with_overrides(self, **overrides: Any) -> ReleasePolicy:
        """A copy with ``overrides`` (key -> value, as in docs/policy.md: ``k=10``, ``qi=["age"]``,
        ``domains={"age": [20, 79]}``) in place of this policy's values, validated anew.

        A value None means "not given" (the CLI passes each absent flag as None) and leaves the
        key as it is: ``with_overrides(posterior_bound=None)`` does not unset the bound,
        :meth:`without` does. Raises PolicyError (the words of :meth:`from_dict`) for an unknown
        key or a value the policy refuses.
        """
        data = self.model_dump()
        data.update({k: v for k, v in overrides.items() if v is not None})
        return self.from_dict(data, copy=not touches_gate(overrides))

    def without(self, *keys: str) -> ReleasePolicy:
        """A copy with ``keys`` back at their defaults: an optional key (``posterior_bound``,
        ``time``, ``retro_max_gain``...) unset, any other at docs/policy.md's default
        (``p.without("k").k == 5``). Raises PolicyError for a key that is no policy key (the
        closest one named), for ``qi`` or ``sensitive`` (no default), or a copy the policy refuses.
        """
        if problem := unset_problem(keys, type(self).model_fields):
            raise PolicyError(problem)
        data = {key: value for key, value in self.model_dump().items() if key not in keys}
        return self.from_dict(data, copy=not set(keys) & {*BOUNDS, *GATE_KEYS})

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> ReleasePolicy:
        """A copy; ``update`` (key -> value, None included) validated and normalised anew as by
        :meth:`with_overrides` (pydantic's own copy takes it unchecked: ``k=0`` was kept).
        PolicyError in the words of :meth:`from_dict`."""
        if not update:
            return super().model_copy(deep=deep)
        data = {**self.model_dump(), **update}
        return self.from_dict(data, copy=not set(update) & {*BOUNDS, *GATE_KEYS})

    # -- accessors ------------------------------------------------------------------------
    def kind(self, name: str) -> Kind:
        """ "numeric" or "categorical" (a date QI is numeric: whole days, see dpriv/dates.py)."""
        if name in self.kinds:
            return "numeric" if self.kinds[name] == "date" else self.kinds[name]
        if name in self.hierarchies:
            return "categorical"
        dom = self.domains.get(name)
        if dom is not None and len(dom) == 2 and all(is_number(v) for v in dom):
            return "numeric"
        return "categorical" if dom is not None else "numeric"

    @property
    def numeric_qi(self) -> list[str]:
        return [q for q in self.qi if self.kind(q) == "numeric"]

    @property
    def categorical_qi(self) -> list[str]:
        return [q for q in self.qi if self.kind(q) == "categorical"]

    @property
    def sensitive_domain(self) -> list[Any]:
        return self.domains[self.sensitive]

    @property
    def prior_columns(self) -> list[str]:
        """``p__<value>`` column names of a distribution over D[S] (docs/architecture.md "Decisions")."""
        return [f"p__{v}" for v in self.sensitive_domain]

    def knowledge_path(self, key: str) -> Path | None:
        """Path of knowledge source ``key`` (relative paths from the policy's folder), or None."""
        return self._in_folder(self.knowledge.get(key))

    def hierarchy_path(self, name: str) -> Path | None:
        """Path of the hierarchy of QI ``name`` (relative paths from the policy's folder), or None."""
        return self._in_folder(self.hierarchies.get(name))

    def _in_folder(self, path: str | None) -> Path | None:
        """``path`` read from the policy file's folder (``base_dir``) unless it is absolute."""
        if path is None:
            return None
        p = Path(path)
        return p if p.is_absolute() or self.base_dir is None else Path(self.base_dir) / p

    def hierarchy(self, name: str) -> Hierarchy | None:
        """The validated :class:`dpriv.hierarchy.Hierarchy` of QI ``name`` (cached), or None."""
        path = self.hierarchy_path(name)
        return None if path is None else read_hierarchy(path)

    def is_resolved(self) -> bool:
        return all(c in self.domains for c in (*self.qi, self.sensitive))

    def resolve(self, view: pd.DataFrame) -> tuple[ReleasePolicy, list[str]]:
        """Fill kinds and domains missing from the policy from ``view`` (pandas).

        Returns the resolved policy and one human-readable line per inferred item.
        Numeric dtypes give a numeric QI with domain [min, max]; anything else a
        categorical QI with its sorted levels; the sensitive domain is the sorted values.
        """
        found = inferred_domains(self, view)
        return self.with_overrides(kinds=found.kinds, domains=found.domains), found.notes

    def fingerprint(self) -> dict[str, Any]:
        """The fields that must not change between releases of one ledger (recorded as its
        ``policy.json``, docs/ledger.md): all but ``base_dir`` and ``npartitions``, :data:`NEWER`'s
        only off their default, the release gate's keys only with the gate on."""
        exclude = {"base_dir", "npartitions"} | {f for f, off in NEWER.items() if getattr(self, f) == off}
        if not gate_on(self):
            exclude |= {*BOUNDS, *GATE_KEYS}
        return self.model_dump(exclude=exclude)
