"""Whether a history and a ledger agree, checked before a command reads or extends the ledger:
the history is the one released (:func:`check_released_history`), the ledger holds a release
(:func:`check_released_any`) and its files are whole (:func:`check_ledger_whole`), a policy given
with it reads the same columns (:func:`check_same_columns`), and, before a release, no committed
view was edited since, none to release repeats an earlier one, and each view's size and
sensitive values pass (:func:`check_views`). Moved out of :mod:`dpriv.release_check` (the
release's own verification, part by part), which still exports these names.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import dask.dataframe as dd
import pandas as pd

from dpriv._dispatch import is_dask
from dpriv.errors import InputError, LedgerError, PolicyError
from dpriv.inputs import prepared
from dpriv.ledger import SENSITIVE, Ledger
from dpriv.ledger_digests import check_released_files
from dpriv.ledger_files import open_parquet
from dpriv.policy import ReleasePolicy
from dpriv.resume_types import open_committed
from dpriv.rows import spans
from dpriv.validate import check_rows, validate_view
from dpriv.view_summary import ViewSummary
from dpriv.wording import counted


def check_released_history(
    ledger: Ledger, history: pd.DataFrame, policy: ReleasePolicy, views: list[int] | None = None
) -> pd.DataFrame:
    """InputError unless the views ``views`` (default: every committed release) of ``history``
    are the ones the ledger released: the ``input_sha`` the ledger recorded for each (the
    digest of the view's policy columns, :mod:`dpriv.digests`). ``policy``: the ledger's own
    (resolved) policy. A report's KPR reference or a verification against another history
    would measure the wrong data without a word. Returns ``history`` as the release read it
    (:func:`dpriv.inputs.prepared`: date QIs as days, codes as the policy's), for measuring."""
    history, policy = prepared(history, policy)
    recorded = {int(r["index"]): r.get("input_sha") for r in ledger.committed()}
    for i in recorded if views is None else views:
        if recorded.get(i) is None:
            continue
        view = history[history[policy.time] == i]
        try:
            digest = validate_view(view, policy, allow_small=True).input_sha
        except (InputError, PolicyError) as exc:
            _check_holds(history, policy, i, sorted(recorded), ledger)
            raise InputError(
                f"the history's view {i} cannot be the one released ({_rows_named(history, policy) or exc}); "
                "give the history that was released"
            ) from None
        if digest != recorded[i]:
            raise InputError(
                f"the history's view {i} is not the one released into {ledger.root} (its rows differ "
                f"from the digest the ledger recorded{_located(ledger.root, i, view, policy)}): give "
                "the history that was released"
            )
    return history


def _check_holds(history, policy: ReleasePolicy, index: int, released: list[int], ledger: Ledger) -> None:
    """InputError when ``history`` holds no view ``index`` at all (a shorter history than the
    ledger's), naming the views of each."""
    found = history[policy.time].drop_duplicates()
    found = pd.to_numeric(found.compute() if is_dask(found) else found, errors="coerce").dropna()
    held = sorted(int(v) for v in found if float(v).is_integer())
    if index not in held:
        raise InputError(
            f"the history holds no view {index} (its views: {spans(held)}), but the ledger "
            f"{ledger.root} released views {spans(released)}: give the history that was released "
            "(every view of it)"
        )


def _rows_named(history: pd.DataFrame, policy: ReleasePolicy) -> str | None:
    """The bad rows of ``history``, named by their line in the input file as ``dpriv release``
    names them (:func:`dpriv.validate.check_rows`); None when its rows pass."""
    try:
        check_rows(history, policy)
    except InputError as exc:
        return str(exc)
    return None


#: What a reading command (dpriv report, dpriv attack) says of a ledger with nothing to read.
NOTHING_RELEASED = "nothing has been released into it yet"


def check_released_any(ledger: Ledger) -> None:
    """InputError when the manifest of ``ledger`` lists no committed release: an attack or a
    report would read nothing and write an empty table or page."""
    if not ledger.committed():
        raise InputError(
            f"the ledger {ledger.root} holds no committed release (its manifest.json lists none): "
            f"{NOTHING_RELEASED}; release into it first (dpriv release HISTORY --ledger "
            f"{shlex.quote(str(ledger.root))}); nothing was written"
        )


def check_ledger_whole(ledger: Ledger, *, state: bool = True) -> None:
    """LedgerError unless every committed release's files are whole: its view and metrics
    are on disk, the view's Parquet footer reads and (a generalized view) holds the
    ``n_released`` tuples its metrics.json recorded, its released files have the SHA-256 the
    manifest recorded (:func:`dpriv.ledger_digests.check_released_files`), policy.json has the
    digest the manifest recorded, and (``state``) the last release's state has at least one
    part. A release resumed from a damaged ledger would build on files that no longer say what
    was published; an attack or a report would read them as published. Reads the released
    files once (hashing them), the metrics, and the footers of the last state's parts."""
    last = ledger.last_index()
    if not last:
        return
    for entry in ledger.committed():  # every release the manifest lists is on disk and whole
        index = entry["index"]
        for name in ("view.parquet", "metrics.json"):
            path = ledger.release_dir(index) / name
            if not path.is_file():
                raise LedgerError(
                    f"{path} is missing (release {index} is listed in manifest.json): "
                    "the ledger is damaged; restore it from a backup"
                )
        view = ledger.release_dir(index) / "view.parquet"
        rows = open_parquet(view).metadata.num_rows
        recorded = ledger.read_metrics(index).n_released
        anatomy = (ledger.release_dir(index) / SENSITIVE).exists()
        if not anatomy and recorded not in (None, rows):
            raise LedgerError(
                f"{view} holds {counted(rows, 'tuple')} where release {index} recorded {recorded} "
                "(metrics.json): the ledger is damaged; restore it from a backup"
            )
        check_released_files(ledger.release_dir(index), entry)  # edited after the release
    ledger.check_policy_file()
    if state:  # (a report reads no state)
        for part in ledger.state_files(last):  # LedgerError naming the folder when none
            open_parquet(part)


#: The policy fields that say how a ledger's releases and its history are read: a ``--policy``
#: given with a ledger (``dpriv attack``, ``dpriv verify --ledger``) must agree with the ledger's
#: recorded policy on them. The thresholds (k, t, j...) may differ (the adversary reads the
#: published groups, not the rule that made them; verify checks against the given ones), and
#: so may the knowledge tables (an adversary brings its own).
READING_FIELDS = ("id", "time", "qi", "sensitive", "release_format")


def check_same_columns(
    recorded: ReleasePolicy,
    given: ReleasePolicy,
    source: str,
    ledger: str | Path,
    *,
    omit: str = "omit --policy",
    theirs: str = "the file",
) -> None:
    """Refuse (PolicyError, exit 2) a policy given with ledger ``ledger`` that reads its
    releases with other columns than it was released with: another id, time, QI list (or QI
    order: the order of the Hilbert key), sensitive column or release format, or another kind or
    domain for a column both policies declare; the message names each field and what differs.
    ``source`` names the given policy (``--policy p.toml``), ``omit`` says how to use the
    recorded one instead, ``theirs`` names the given policy in a difference ("only in the file")."""
    diff = [(f, _shown(getattr(recorded, f), getattr(given, f), theirs)) for f in READING_FIELDS]
    diff = [(f, shown) for f, shown in diff if shown]
    for field in ("kinds", "domains"):
        mine, other = getattr(recorded, field), getattr(given, field)
        for col in sorted(set(mine) & set(other)):
            shown = _shown(mine[col], other[col], theirs)
            if shown:
                diff.append((f"{field}.{col}", shown))
    if diff:
        raise PolicyError(
            f"{source} reads the releases differently from the policy ledger {ledger} "
            f"was released with ({'; '.join(f'{f}: {s}' for f, s in diff[:4])}): the releases are "
            f"read with the ledger's columns; {omit} to use the recorded policy, or give a "
            "policy that declares the same columns"
        )


def _shown(recorded, given, theirs: str) -> str:
    """How a recorded and a given policy value differ ("" when equal): for lists, the values
    only one has, else the order; otherwise both values. ``theirs`` names the given policy."""
    plain = [[*v] if isinstance(v, list | tuple) else str(getattr(v, "value", v)) for v in (recorded, given)]
    if plain[0] == plain[1]:
        return ""
    if all(isinstance(v, list) for v in plain):
        text = [repr(x) for x in plain[0]], [repr(x) for x in plain[1]]
        gone = [x for x in text[0] if x not in text[1]]
        new = [x for x in text[1] if x not in text[0]]
        if gone or new:
            parts = ([f"{', '.join(gone[:5])} only in the ledger's"] if gone else []) + (
                [f"{', '.join(new[:5])} only in {theirs}"] if new else []
            )
            return "; ".join(parts)
        return f"the same values in another order ({_cut(plain[0])} recorded, {_cut(plain[1])} in {theirs})"
    return f"{_cut(plain[0])} recorded, {_cut(plain[1])} in {theirs}"


def _cut(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_unchanged(entry: dict, index: int, digest: str, where: str = "") -> None:
    """InputError when view ``index`` of a resumed history is not the one the ledger committed
    (``entry``: its manifest entry; ``digest``: the view's now). Not compared when the entry
    records no digest (a ledger of an early dpriv). A column whose type the ledger records was
    compared before, by name (:func:`dpriv.resume_types.resumed_types`): what is left is rows,
    values, or how a categorical QI's values are written. ``where``: what locates the
    difference (:func:`dpriv.release_members.differing_group`), "" when unknown."""
    if entry.get("input_sha", digest) != digest:
        raise InputError(
            f"view {index} differs from the one committed in the ledger{f' ({where})' if where else ''}: "
            "a row was added, removed or "
            "edited since, or a value is written otherwise (a level 2 now written 2.0); a committed "
            "release cannot change: restore the input as it was released, or start a new ledger"
        )


def _located(root: Path, index: int, view, policy: ReleasePolicy, prefix: str = "; ") -> str:
    """``"; first difference: QI-group ..."`` (:func:`dpriv.release_members.differing_group`) of
    ``view`` (pandas or Dask: one view, computed on the way to a refusal), or "" when the ledger
    cannot say."""
    from dpriv.release_members import differing_group

    found = differing_group(root, index, view.compute() if is_dask(view) else view, policy)
    return f"{prefix}first difference: {found}" if found else ""


def check_repeated(digests: dict[int, str], committed: set[int]) -> None:
    """InputError when a view to release (an index of ``digests`` not in ``committed``) holds
    exactly the rows of an earlier view: the same ids, QIs and sensitive values, the same
    ``input_sha`` (``digests``: index -> fingerprint, "" when unknown). Last week's file sent
    again as this week's is a batch job's typical slip, and a committed release cannot be taken
    back; a history whose weeks really are alike is released with ``allow_repeated_view``."""
    first: dict[str, int] = {}
    for i in sorted(digests):
        digest = digests[i]
        if digest and digest in first and i not in committed:
            raise InputError(
                f"view {i} holds exactly the rows of view {first[digest]} (the same ids, QIs and "
                f"sensitive values; input fingerprint {digest}): was an earlier week's file sent "
                f"again? Nothing was released; correct view {i}, or, if the weeks really are the "
                "same, run again with --allow-repeated-view (release_history(..., "
                "allow_repeated_view=True))"
            )
        first.setdefault(digest, i)


def check_views(
    ledger_dir,
    summaries: dict[int, ViewSummary],
    policy: ReleasePolicy,
    allow_repeated: bool = False,
    history: pd.DataFrame | dd.DataFrame | None = None,
) -> None:
    """Before any release, in the order a user can act on: is a view the ledger at
    ``ledger_dir`` committed edited since (:func:`check_unchanged`, the QI-group that differs
    located in ``history`` when given; a missing or damaged manifest is left to the ledger's own
    checks), is a view to release a copy of an earlier one
    (:func:`check_repeated`, unless ``allow_repeated``), then each view's size (PolicyError
    ``view = 3: k = 5 is larger ...`` unless ``small_view = "suppress"``) and sensitive values."""
    from dpriv.inputs import check_sensitive_values
    from dpriv.validate import check_k_below_largest, check_size

    entries = open_committed(ledger_dir)[1]
    for entry in entries:
        i = entry["index"]
        if i in summaries and entry.get("input_sha", summaries[i].input_sha) != summaries[i].input_sha:
            view = None if history is None else history[history[policy.time] == i]
            where = "" if view is None else _located(Path(ledger_dir), i, view, policy, prefix="")
            check_unchanged(entry, i, summaries[i].input_sha, where)
    if not allow_repeated:
        recorded = {e["index"]: e.get("input_sha", "") for e in entries}
        check_repeated({**{i: s.input_sha for i, s in summaries.items()}, **recorded}, set(recorded))
    check_k_below_largest(summaries, policy, to_release=bool(set(summaries) - {e["index"] for e in entries}))
    for i, summary in summaries.items():
        try:
            check_size(summary.n_rows, policy, policy.small_view == "suppress")
        except PolicyError as exc:
            raise PolicyError(f"{policy.time} = {i}: {exc}") from None
        if summary.n_rows >= policy.k:  # a smaller view is suppressed whole (small_view = "suppress")
            check_sensitive_values(summary.s_counts, policy, view=i)
