"""The types of a view's policy columns, checked and normalised before anything runs.

:func:`prepare_view` gives every entry point (``anonymize``, ``release_history``,
``verify_view``, ``attack``) the same column types: a pandas ``category`` QI or sensitive
column becomes its plain values (numbers stay numbers), text becomes Unicode NFC (the same
city typed in NFC and NFD is one level), a text id column becomes ``string[pyarrow]``, the dtype Dask
gives the respondent state's ids (one id dtype on both sides of every join on the id, so
Dask never warns about merging ``string`` with ``object``), and a date QI becomes whole days
(:mod:`dpriv.dates`; :func:`prepared` detects date and timestamp columns first).
"""

from __future__ import annotations

import unicodedata
import warnings
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import meta_of, to_pandas
from dpriv.dates import date_qi, to_days, with_date_kinds
from dpriv.errors import InputError, PolicyError
from dpriv.id_format import representative, shape_of
from dpriv.input_columns import duplicate_columns, missing_columns, policy_columns
from dpriv.policy import ReleasePolicy
from dpriv.policy_values import as_python, check_inferred_exit_values, domain_note
from dpriv.user_warning import warn_user
from dpriv.value_types import mixed_types


def nfc_text(values: pd.Series) -> pd.Series:
    """A column's text cells in Unicode NFC (a city typed in NFD is the same level); other
    dtypes and cells unchanged."""
    if not (pd.api.types.is_object_dtype(values.dtype) or pd.api.types.is_string_dtype(values.dtype)):
        return values
    try:
        uniq = values.unique()  # Arrow strings stay Arrow: no Python string per row (~0.3 s at 10^6)
    except TypeError:  # unhashable cells (lists): type_problems reports them
        return values
    change = {
        v: unicodedata.normalize("NFC", v)
        for v in uniq
        if isinstance(v, str) and not unicodedata.is_normalized("NFC", v)
    }
    return values.replace(change) if change else values


def _plain(values: pd.Series) -> pd.Series:
    """A category column as its plain values: numbers as their own dtype, text as object."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        cats = values.dtype.categories
        target = cats.dtype if pd.api.types.is_numeric_dtype(cats.dtype) else object
        values = values.astype(target)
    return values


#: dtype of a text id: the one Dask gives strings (``dataframe.convert-string``), so the view,
#: the respondent state and the posteriors are merged on one id dtype (no Dask warning).
ID_STRING = pd.StringDtype("pyarrow")


def _is_text_id(col: pd.Series) -> bool:
    if pd.api.types.is_object_dtype(col.dtype):
        return pd.api.types.infer_dtype(col, skipna=True) == "string"
    return pd.api.types.is_string_dtype(col.dtype)


def _refuse_mixed_ids(col: pd.Series) -> None:
    """InputError for an id column of values of several types (``7`` and ``"x8"``): the state
    is kept in id order, and 7 and "7" would be two respondents."""
    if mixed_types(col):  # the ids by their shape per type: never printed
        types = col.map(lambda v: type(v).__name__, na_action="ignore")
        counts = sorted(types.value_counts().items(), key=lambda tn: (-tn[1], tn[0]))  # most common first
        shapes = "; ".join(f"{t}: {shape_of(representative(col[types == t]))}" for t, _ in counts)
        raise InputError(
            f"id column {col.name!r} holds values of several types ({shapes}): write every id as "
            "text (or every id as a number)"
        )


def prepare_part(
    part: pd.DataFrame, columns: list[str], id_col: str | None, dates: tuple[str, ...] = ()
) -> pd.DataFrame:
    """:func:`prepare_view` of one pandas partition (``part`` itself if nothing changes); only the
    date QIs ``dates`` and an ``object`` id column ``id_col`` are converted by their values, the
    rest by their dtypes (:mod:`dpriv.part_footers` runs it on empty frames). InputError for ids
    of several types."""
    out = {}
    for c in columns:
        if c not in part.columns:
            continue
        col = to_days(part[c]) if c in dates else part[c]
        col = nfc_text(_plain(col))
        if c == id_col and col.dtype != ID_STRING and _is_text_id(col):
            col = col.astype(ID_STRING)
        elif c == id_col and pd.api.types.is_object_dtype(col.dtype):
            _refuse_mixed_ids(col)
        if col is not part[c]:
            out[c] = col
    return part.assign(**out) if out else part


def prepare_view(view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, *, ids: bool = True):
    """``view`` with the policy columns' types normalised (see the module docstring); the
    QIs of kind ``"date"`` become whole days (:func:`dpriv.dates.to_days`).

    Pandas in, pandas out; Dask in, Dask out (one ``map_partitions``, lazy). Other columns
    are untouched; ``ids=False`` leaves the id column as it is. Raises InputError for a
    column name that occurs twice. Use :func:`prepared` to detect date QIs first.
    """
    duplicate_columns(view.columns)
    columns = [*policy_columns(policy), *([policy.time] if policy.time else [])]
    id_col = policy.id if ids else None
    dates = tuple(date_qi(policy))
    if isinstance(view, dd.DataFrame):
        meta = prepare_part(view._meta, columns, id_col, dates)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return view.map_partitions(prepare_part, columns, id_col, dates, meta=meta)
    return prepare_part(view, columns, id_col, dates)


def prepared(
    view: pd.DataFrame | dd.DataFrame,
    policy: ReleasePolicy,
    *,
    ids: bool = True,
    notes: list[str] | None = None,
):
    """(:func:`prepare_view` of ``view``, ``policy``) with date and timestamp QIs detected first
    (:func:`dpriv.dates.with_date_kinds`) and the domains of ordered categorical columns taken
    from their categories (:func:`category_domains`, whose notes are appended to ``notes``):
    the entry points' one input-normalising step."""
    duplicate_columns(view.columns)  # before a column is looked up by name
    meta = meta_of(view)
    named = dict.fromkeys([*policy.qi, policy.sensitive])
    odd = [c for c in named if c in meta and meta[c].dtype.kind == "c"]
    if odd:  # min/max and EMD need an order: complex numbers have none
        raise InputError(f"column(s) {odd} hold complex numbers: use their real part, magnitude or text")
    policy = with_date_kinds(view, policy)
    _numbers_as_dates(meta, policy)
    policy, said = category_domains(view, policy)
    if notes is not None:
        notes += said
    return prepare_view(view, policy, ids=ids), policy


def category_domains(
    view: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy
) -> tuple[ReleasePolicy, list[str]]:
    """``policy`` with the domain of each QI or sensitive column that it does not declare (nor a
    hierarchy gives) and that holds an **ordered** pandas Categorical set to the categories the
    data holds, in the categories' order (``low < mid < high``, which ``emd_ground = "ordered"``
    and a QI's Hilbert key use; sorting would give ``high, low, mid``), a QI's kind categorical;
    and one note per such domain (the words of an inferred one). Unused categories stay out, as
    for any inferred domain. A QI of numeric categories not declared categorical stays numeric.
    Computes those columns of a Dask frame (their categories and present values)."""
    meta, domains, kinds, notes = meta_of(view), dict(policy.domains), dict(policy.kinds), []
    for name in dict.fromkeys([*policy.qi, policy.sensitive]):
        dtype = meta[name].dtype if name in meta.columns else None
        if not isinstance(dtype, pd.CategoricalDtype) or not dtype.ordered:
            continue
        qi = name != policy.sensitive
        if name in domains or name in policy.hierarchies or (qi and kinds.get(name) == "date"):
            continue
        numeric = pd.api.types.is_numeric_dtype(dtype.categories.dtype)
        if qi and numeric and kinds.get(name) != "categorical":
            continue  # a numeric QI: [min, max] as ever
        col = view[name]
        if isinstance(col, dd.Series) and not col.cat.known:
            col = col.cat.as_known()
        present = set(to_pandas(col.dropna().drop_duplicates()).tolist())
        order = [c for c in col.dtype.categories.tolist() if c in present]
        if not order:
            continue  # no value at all: validation names the column
        if not qi:  # exit_values it lacks: said as of any inferred domain, not as an invalid policy
            check_inferred_exit_values(pd.DataFrame({name: pd.Series(order, dtype=object)}), policy, True)
        # the values as prepare_view gives them (text in NFC, NumPy scalars as Python ones)
        domains[name] = list(dict.fromkeys(nfc_text(pd.Series([as_python(c) for c in order], dtype=object))))
        if qi:
            kinds[name] = "categorical"
        said = domain_note(name, kinds.get(name) if qi else None, domains[name])
        notes.append(f"{said} (the order of its ordered categories)")
    if not notes:
        return policy, []
    return policy.with_overrides(kinds=kinds, domains=domains), notes


def _numbers_as_dates(meta: pd.DataFrame, policy: ReleasePolicy) -> None:
    """InputError for a QI declared a date (``--date``, ``[kinds] q = "date"``) whose input
    column holds numbers: inside, a date is a whole number of days since 1970-01-01, so ages
    45..74 would be released as dates in February 1970 without a word."""
    for q in policy.qi:
        kind = policy.kinds.get(q)
        dtype = meta[q].dtype if q in meta.columns else None
        if (
            kind == "date"
            and dtype is not None
            and pd.api.types.is_numeric_dtype(dtype)
            and not pd.api.types.is_bool_dtype(dtype)
        ):
            raise InputError(
                f"QI {q!r} is declared a date but holds numbers ({dtype}), not dates: write its "
                f"values as dates (YYYY-MM-DD), or release it as a number (drop --date {q}, or "
                f'[kinds] {q} = "date" from the policy)'
            )


def as_frame(
    data: object,
    function: str,
    name: str,
    id_column: str | None = None,
    policy: ReleasePolicy | None = None,
) -> pd.DataFrame | dd.DataFrame:
    """``data`` itself when it is a pandas or Dask DataFrame; a ``str``/``Path`` is read with
    :func:`dpriv.io.read_table` (CSV or Parquet, a Dask DataFrame); anything else is an
    InputError naming what was given, as is a frame whose id column ``id_column`` is its index
    and, given ``policy``, a frame lacking one of its columns
    (:func:`~dpriv.input_columns.missing_columns` in a Python caller's words: the frame is ``name``)."""
    if isinstance(data, pd.DataFrame | dd.DataFrame):
        if isinstance(data.columns, pd.MultiIndex):  # a column is then a tuple: no policy names it
            raise InputError(
                f"{function}() takes a {name} with one level of column names, not a MultiIndex "
                f"({list(data.columns[:3])}...): flatten it first (e.g. frame.columns = ['_'.join(c) "
                "for c in frame.columns])"
            )
        if id_column is not None and id_column not in data.columns and id_column in meta_of(data).index.names:
            # set_index(id) leaves no id column: the missing-column refusal's advice would not fit
            raise InputError(
                f"{function}() takes the {name}'s id column {id_column!r} as a column, but it is the "
                f"frame's index: pass {name}.reset_index()"
            )
    elif isinstance(data, str | Path):
        from dpriv.io import read_table

        data = read_table(str(data), id_column=id_column, what=name)
    if isinstance(data, pd.DataFrame | dd.DataFrame):
        if policy is not None:
            missing_columns(data.columns, policy, frame=name)
        return data
    raise InputError(
        f"{function}() takes the {name} as a pandas or Dask DataFrame (or the path of a CSV or "
        f"Parquet file), not a {type(data).__name__}: e.g. dpriv.io.read_table(path)"
    )


#: A history as an attack takes it: a pandas or Dask DataFrame, or the path of a CSV or Parquet
#: file (read with :func:`dpriv.io.read_table`; :func:`as_frame`).
HistoryInput = pd.DataFrame | dd.DataFrame | str | Path


def attack_history(history: object, policy: ReleasePolicy) -> tuple[pd.DataFrame, ReleasePolicy]:
    """The history as ``attack`` reads it, and the policy with its date QIs: the same types as
    ``release_history`` gave it (:func:`prepared`: text ids as ``string[pyarrow]``, category
    columns as plain values, text in NFC, dates as days), collected to pandas; a path is read
    with :func:`dpriv.io.read_table`.

    Raises InputError for what :func:`as_frame` and :func:`prepare_view` refuse."""
    frame, policy = prepared(as_frame(history, "attack", "history", policy.id), policy)
    return (frame.compute() if isinstance(frame, dd.DataFrame) else frame), policy


def check_sensitive_values(s_counts: np.ndarray, policy: ReleasePolicy, view: int | None = None) -> None:
    """Refuse a sensitive column that holds one value only (``s_counts``: (M,) int64 counts of
    the released data over D[S]; ``view``: the view's index in a history, named in the
    message): every QI-group would have l = 1 and the release would disclose that value for
    every respondent. ``allow_single_sensitive`` releases it with a warning instead (ARX's
    l-diversity finds no solution there; sdcMicro reports l = 1)."""
    present = np.flatnonzero(np.asarray(s_counts) > 0)
    if len(present) != 1:
        return
    value = policy.sensitive_domain[int(present[0])]
    where = "" if view is None else f"view {view}: "
    what = (
        f"{where}sensitive column {policy.sensitive!r} holds one value only ({value!r}): every QI-group "
        "has l = 1, so the release discloses that value for every respondent"
    )
    if not policy.allow_single_sensitive:
        raise PolicyError(
            f"{what}. Choose a sensitive column with at least 2 values, or set "
            "allow_single_sensitive = true in [privacy] to release it anyway"
        )
    warn_user(f"{what} (allow_single_sensitive = true)")
