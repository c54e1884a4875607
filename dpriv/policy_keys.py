"""Unknown keys of a policy, named with their table and the closest known key; numbers outside
their field's bounds, named with the whole interval (:func:`bound_message`); column names
that clash with the released view's own (:func:`released_name_clash`); fields that do not fit
together (:func:`fields_problem`; a `[domains]` entry: :mod:`dpriv.policy_domains`).

``kk = 3`` under ``[privacy]`` is refused as "unknown key 'kk' in [privacy]; did you mean 'k'?"
(:func:`difflib.get_close_matches` over the policy's fields) instead of pydantic's "Extra
inputs are not permitted". The scalar tables ``[columns]``, ``[privacy]`` and ``[release]``
share one set of keys (docs/policy.md), so a key of any of them is known in all three.
Also: pydantic's errors as one PolicyError (:func:`invalid_policy`), the refusal to change a
policy in place (:func:`immutable`) or to unset a key without a default (:func:`unset_problem`);
which fields each method uses (:data:`SHARED_ONLY`).
"""

from __future__ import annotations

import difflib
import json
import typing
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, Protocol

from dpriv.column_hints import misspelled_hint
from dpriv.errors import PolicyError
from dpriv.policy_domains import domain_problem, exit_values_problem
from dpriv.wording import flag_named


class PolicyFields(Protocol):
    """What :func:`fields_problem` and :mod:`dpriv.policy_values` read of a policy: a
    :class:`~dpriv.policy.ReleasePolicy`, which calls them on itself while it is validated
    (typed by what they read, so that the model's module is the one importing the other)."""

    @property
    def id(self) -> str: ...
    @property
    def time(self) -> str | None: ...
    @property
    def qi(self) -> list[str]: ...
    @property
    def sensitive(self) -> str: ...
    @property
    def kinds(self) -> Mapping[str, str]: ...
    @property
    def domains(self) -> Mapping[str, list[Any]]: ...
    @property
    def hierarchies(self) -> Mapping[str, str]: ...
    @property
    def exit_values(self) -> list[str]: ...
    @property
    def emd_ground(self) -> str: ...
    def kind(self, name: str) -> str: ...


def unknown_key(key: str, fields: Iterable[str], table: str | None = None) -> str:
    """``"unknown key 'kk' in [privacy]; did you mean 'k'?"`` (the hint only when a field is
    close, the table only when known)."""
    names = sorted(f for f in fields if f != "base_dir")
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.5)
    where = f" in [{table}]" if table else ""
    hint = f"; did you mean {close[0]!r}?" if close else "; the keys are listed in docs/policy.md"
    return f"unknown key {key!r}{where}{hint}"


#: pydantic's error types of a value of the wrong type, and what the field takes instead.
_TYPE_ERRORS = {
    "float_type": "a number",
    "float_parsing": "a number",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "string_type": "text in quotes",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "a table",
}
#: pydantic's error types of a numeric bound (Field gt/ge/lt/le).
_BOUND_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "finite_number"}


def bound_message(fields: dict[str, Any], error: Any) -> str:
    """The message of one pydantic error (``fields``: the model's ``model_fields``); for a
    number outside its field's bounds (NaN included, which fails every bound) the whole
    interval, ``must be a number in (0, 1], got nan``, rather than pydantic's one failed side
    ("should be less than or equal to 1")."""
    name = str(error["loc"][0]) if error["loc"] else ""
    field = fields.get(name) if name else None
    if error["type"] == "missing" and name:
        table = " under [columns]" if name in ("id", "time", "qi", "sensitive") else ""
        flag = name.replace("_", "-")
        return f"missing: set {name}{table} in the policy file, or pass --{flag} ({name}=... in Python)"
    if error["type"] == "list_type" and name == "domains" and len(error["loc"]) > 1:
        col = error["loc"][1]  # domains = ["a", "b"] (s46 drill) was no example of a [domains] entry
        return (
            f'must be a list under [domains]: {col} = [min, max] for a numeric QI, {col} = ["a", "b"] '
            f"for a categorical QI's levels or the sensitive values, got {error.get('input')!r}"
        )
    if error["type"] == "list_type" and name:
        return f'must be a list, e.g. {name} = ["a", "b"], got {error.get("input")!r}'
    if error["type"] in _TYPE_ERRORS:
        return f"must be {_TYPE_ERRORS[error['type']]}, got {error.get('input')!r}"
    if error["type"] == "literal_error" and field is not None:
        return choice_message(field.annotation, error)
    if error["type"] not in _BOUND_ERRORS or field is None:  # pydantic's "Value error, " prefix dropped
        return error["msg"].removeprefix("Value error, ")
    lo, hi = "(-inf", "inf)"
    for m in field.metadata:
        if getattr(m, "gt", None) is not None:
            lo = f"({_bound(m.gt)}"
        elif getattr(m, "ge", None) is not None:
            lo = f"[{_bound(m.ge)}"
        elif getattr(m, "lt", None) is not None:
            hi = f"{_bound(m.lt)})"
        elif getattr(m, "le", None) is not None:
            hi = f"{_bound(m.le)}]"
    return f"must be a number in {lo}, {hi}, got {error.get('input')!r}"


def choice_message(annotation: Any, error: Any) -> str:
    """A value outside a field's choices (``grouping = "top-down"``) as ``must be 'scan' or
    'topdown' (did you mean 'topdown'?), got 'top-down'``: pydantic's words quote neither the value
    nor the closest choice, unlike an unknown key (:func:`unknown_key`; a fresh user's drill, s40)."""
    import typing

    choices = [str(c) for c in typing.get_args(annotation) if isinstance(c, str)]
    given = error.get("input")
    close = difflib.get_close_matches(str(given), choices, n=1, cutoff=0.5) if choices else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    expected = (error.get("ctx") or {}).get("expected") or " or ".join(map(repr, choices))
    return f"must be {expected}{hint}, got {given!r}"


def invalid_policy(errors: list[dict[str, Any]], fields: dict[str, Any]) -> PolicyError:
    """One :class:`PolicyError` for pydantic's ``errors`` (``ValidationError.errors()``) of a
    policy (``fields``: the model's ``model_fields``), a line per error: an unknown key with the
    closest known one (:func:`unknown_key`), a field's error as ``t: must be a number in [0, 1],
    got 2`` (:func:`bound_message`), a whole-policy check as its own words."""
    lines = [
        f"  {unknown_key(str(e['loc'][0]), fields)}"
        if e["type"] == "extra_forbidden" and e["loc"]
        else f"  {'.'.join(map(str, e['loc']))}: {bound_message(fields, e)}"
        if e["loc"]
        else f"  {bound_message(fields, e)}"  # a whole-policy check names its field
        for e in errors
    ]
    return PolicyError("invalid policy:\n" + "\n".join(lines))


def immutable(name: str, value: Any, fields: Iterable[str], deleted: bool = False) -> str:
    """The message for ``p.<name> = value`` (or ``del p.<name>``) on a policy, which is immutable:
    the copy to make instead (:meth:`dpriv.policy.ReleasePolicy.with_overrides` or ``without``),
    or, for a name that is no field, the closest known key (:func:`unknown_key`)."""
    done = f"del p.{name}" if deleted else f"p.{name} = {value!r}"
    if name not in fields:
        return f"a ReleasePolicy is immutable: {done} is refused ({unknown_key(name, fields)})"
    copy = f'p.without("{name}")' if deleted else f"p.with_overrides({name}={value!r})"
    return f"a ReleasePolicy is immutable: {done} is refused; make a changed copy with {copy}"


def unset_problem(keys: tuple[str, ...], fields: dict[str, Any]) -> str | None:
    """The message for ``p.without(*keys)`` (``fields``: the model's ``model_fields``) naming a
    key that is no field (with the closest one, :func:`unknown_key`) or one without a default
    (``qi``, ``sensitive``); None when every key can be set back to its default."""
    if unknown := [key for key in keys if key not in fields]:
        return f"without({', '.join(map(repr, keys))}): " + "; ".join(unknown_key(k, fields) for k in unknown)
    if required := [key for key in keys if fields[key].is_required()]:
        return (
            f"without({', '.join(map(repr, keys))}): {' and '.join(required)}: no default to go back to "
            "(a policy always names its QIs and its sensitive column); give other columns with "
            f"with_overrides({required[0]}=...)"
        )
    return None


def refuse_coercion(fields: dict[str, Any], data: Any) -> Any:
    """``data`` (a policy's flat dict) as it is, or ValueError for a number given as true/false
    or text, or a flag given as anything but true/false (pydantic would read ``k = true`` as
    k = 1 and ``prior_key = "no"`` as False). ``fields``: the model's ``model_fields``."""
    if not isinstance(data, dict):
        return data
    for name, value in data.items():
        field = fields.get(name)
        if field is None or value is None:
            continue
        kinds = set(typing.get_args(field.annotation)) | {field.annotation}
        if bool in kinds and not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, got {value!r}")
        if kinds & {int, float} and isinstance(value, bool | str):
            raise ValueError(f"{name} must be a number, got {value!r}")
    return data


def released_name_clash(qi: list[str], sensitive: str) -> str | None:
    """The message for the QI and sensitive columns named like a column the released view makes
    (``qi_group``, ``<qi>_min``/``<qi>_max`` of a QI; docs/released-format.md), else None: two
    released columns would share one name. Every such column is named, with the released
    column it clashes with, so that one renaming fixes them all. A name with a leading ``_``
    is refused first: that marks dpriv's private helper columns, which are never written."""
    private = [c for c in dict.fromkeys((*qi, sensitive)) if c.startswith("_")]
    if private:
        return (
            f"column(s) {private} start with '_', the mark of dpriv's helper columns, which are never "
            "released; rename them in the input (and in the policy)"
        )
    bounds = {f"{q}_{side}": q for q in qi for side in ("min", "max")}
    made = {
        c: "the QI-group label" if c == "qi_group" else f"a bound of the QI {bounds[c]!r}"
        for c in dict.fromkeys((*qi, sensitive))
        if c == "qi_group" or c in bounds
    }
    if not made:
        return None
    fix = "in the input (and in the policy) so that the released view's columns stay distinct"
    if len(made) == 1:
        ((c, what),) = made.items()
        return f"column {c!r} has the name of a released column ({what}); rename the column {fix}"
    named = ", ".join(f"{c!r} ({what})" for c, what in made.items())
    return f"columns {named} have the names of released columns; rename these columns {fix}"


def fields_problem(policy: PolicyFields) -> str | None:
    """The first of the policy's fields that do not fit together, in words (the model's
    ``model_validator`` raises it as ValueError, :func:`invalid_policy` words it), or None: a
    column used twice, a QI or sensitive name the released view uses itself
    (:func:`released_name_clash`), ``[kinds]`` or ``[hierarchies]`` naming a column that is no
    QI, a hierarchy on a QI declared numeric, exit values outside D[S]
    (:func:`exit_values_problem`), a domain that is no domain (:func:`domain_problem`)."""
    cols = [policy.id, *policy.qi, policy.sensitive] + ([policy.time] if policy.time is not None else [])
    named = {"id": policy.id, "qi": policy.qi, "sensitive": policy.sensitive, "time": policy.time}
    for key, given in named.items():  # '' (an unset variable in a generated file) named no column
        if any(isinstance(c, str) and not c.strip() for c in (given if isinstance(given, list) else [given])):
            return (
                f"[columns] {key} = {given!r} holds an empty column name: give the name of the column "
                f"as the input has it (e.g. {key} = {json.dumps(_EXAMPLE[key])})"
            )
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        return f"columns {dup} are used twice (id, time, QI and sensitive must differ)"
    if clash := released_name_clash(policy.qi, policy.sensitive):
        return clash
    for name in policy.kinds:
        if name not in policy.qi:
            hint = misspelled_hint(name, policy.qi, policy.kinds, "[kinds]")
            return f"[kinds] names {name!r}, which is not a QI ({policy.qi}){hint}"
    for name in policy.hierarchies:
        if name not in policy.qi:
            hint = misspelled_hint(name, policy.qi, policy.hierarchies, "[hierarchies]")
            return f"[hierarchies] names {name!r}, which is not a QI ({policy.qi}){hint}"
        if policy.kinds.get(name) == "numeric":
            return (
                f"QI {name!r} has a hierarchy but is declared numeric in [kinds]: a hierarchy "
                "generalizes a categorical QI; drop one of them"
            )
    dom_s = policy.domains.get(policy.sensitive, policy.exit_values)
    columns = (*policy.qi, policy.sensitive)
    problem = exit_values_problem(policy.exit_values, dom_s, policy.sensitive)
    for name, dom in policy.domains.items():
        numeric = policy.kind(name) == "numeric" and name != policy.sensitive
        problem = problem or domain_problem(name, dom, numeric, columns, policy.domains)
    return problem


#: A column of each ``[columns]`` key, for the refusal of an empty one.
_EXAMPLE = {"id": "respondent_id", "qi": ["age", "gender"], "sensitive": "exam_result", "time": "view"}


#: Each baseline's own policy fields, its parameters (docs/policy.md): ``dpriv anonymize`` records
#: them with its method in ``OUT.metrics.json`` (``dpriv verify`` reads them back), and a printed
#: policy marks them "<method> only" under another method.
BASELINE_FIELDS: dict[str, tuple[str, ...]] = {"mondrian-l": ("l",), "mondrian-bt": ("bt_b", "bt_t")}
#: Policy fields that JS-reduce alone applies (its threshold j and its grouping's settings): a
#: baseline ignores them, or refuses the ones that change what is released
#: (:data:`JSREDUCE_REFUSED`, ``persistent_groups``); printed "jsreduce only" under one.
#: Of them, the fields a baseline refuses when set (:func:`dpriv.criteria.refuse_ignored`).
JSREDUCE_REFUSED = ("rbk_closeness", "posterior_bound")
JSREDUCE_FIELDS = (
    "j",
    "grouping",
    "topdown_level",
    "topdown_pc",
    "topdown_cut",
    "group_cap",
    "defer_wait",
    "attach_reach",
    "persistent_groups",
    *JSREDUCE_REFUSED,
)
#: Policy fields that the Mondrian baselines alone apply (their median cut): JS-reduce groups by
#: Hilbert ranges and histogram releases one group, so neither reads them; printed
#: "mondrian-l/t/bt only" under them.
MONDRIAN_FIELDS = ("mondrian_cut",)
#: The methods that cut with :data:`MONDRIAN_FIELDS`.
MONDRIAN_METHODS = ("mondrian-l", "mondrian-t", "mondrian-bt")


class Users(NamedTuple):
    """The methods that apply a policy field (``methods``) and the words naming them (``named``)."""

    named: str
    methods: tuple[str, ...]


#: Fields that some methods apply and the others leave unused (:data:`JSREDUCE_FIELDS`,
#: :data:`MONDRIAN_FIELDS`), with their :class:`Users`. A printed policy marks such a field under
#: any other method: ``[flag; jsreduce only, unused by mondrian-t]``.
SHARED_ONLY: dict[str, Users] = {
    **dict.fromkeys(JSREDUCE_FIELDS, Users("jsreduce", ("jsreduce",))),
    **dict.fromkeys(MONDRIAN_FIELDS, Users("mondrian-l/t/bt", MONDRIAN_METHODS)),
}


def _bound(x: float) -> str:
    """A field's bound as written in a message: a whole number exactly (the seed's 2**60 - 1
    read 1.15292e+18), a float in short form."""
    return str(x) if isinstance(x, int) else f"{x:g}"


def overrides_named(given: Mapping[str, Any]) -> str:
    """How a refusal names the keyword arguments of a Python call (``from_toml(path, tt=0.5)``):
    ``overrides tt=0.5`` (a long value as ``...``)."""
    shown = (f"{k}={v!r}" if len(repr(v)) <= 40 else f"{k}=..." for k, v in given.items())
    return "overrides " + ", ".join(shown)


def flags_named(given: Mapping[str, Any]) -> str:
    """How a refusal names the flags of a ``dpriv`` command: ``--tt, --max-suppression``."""
    return ", ".join(flag_named(k) for k in given)
