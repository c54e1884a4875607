"""Reading a release ledger into what the adversary of :mod:`dpriv.attack` observes.

The ledger gives, per committed release ``i``, the released view ``releases/<i>/view.parquet``
(``qi_group`` and the sensitive column: each group's multiset of values) and, for the group
membership the adversary of docs/algorithms.md §1.1 (ii) is assumed to know, the private state
``state/<i>/state.parquet`` (respondents with ``last_release == i``; their ``last_group`` is
the released ``qi_group``). The true values and the QIs (for the knowledge classes and for
the membership-from-QIs linkage) come from the original history.

:func:`read_attack` checks the arguments and reads every committed release with
:func:`read_releases`, which cross-checks each (:class:`ReadRelease`);
:func:`observed_releases` turns those into the
:class:`dpriv.adversary.observed.ObservedRelease` the kernels take, and
:func:`linkage_rows` runs :func:`dpriv.adversary.linkage.qi_linkage` on each release.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from dpriv.adversary.linkage import cell_values, exact_qi_linkage, qi_linkage
from dpriv.adversary.observed import ObservedRelease
from dpriv.anatomy import expand_sensitive
from dpriv.attack_files import as_ledger
from dpriv.dates import released_days
from dpriv.digests import input_fingerprint
from dpriv.errors import InputError, LedgerError
from dpriv.input_checks import check_history, resolve_policy
from dpriv.knowledge.tables import MarkovTables
from dpriv.ledger import Ledger
from dpriv.ledger_checks import check_ledger_whole
from dpriv.policy import ReleasePolicy, as_python
from dpriv.released import GROUP
from dpriv.rows import input_file, row_places
from dpriv.sources import AdversaryKnowledge, adversary_knowledge, check_knowledge_name
from dpriv.validate import codes


class ReadRelease(NamedTuple):
    """One committed release as read from the ledger and the history.

    Attributes
    ----------
    index : int, the release number i
    view : DataFrame, the original view V_i (every respondent of time i, kept or suppressed)
    members : DataFrame, the kept respondents (policy id, ``last_group`` and the view's
        columns), sorted by group
    s_true : int64 ndarray (n,), their true sensitive codes (policy domain order)
    s_released : int64 ndarray (n,), the released codes aligned group by group on ``members``
    counts : int64 ndarray (G, M), the released value counts per group (labels sorted)
    released : DataFrame, the released view V*_i as stored in the ledger (for an Anatomy
        release its QI table, whose sensitive table gave ``counts``)
    """

    index: int
    view: pd.DataFrame
    members: pd.DataFrame
    s_true: np.ndarray
    s_released: np.ndarray
    counts: np.ndarray
    released: pd.DataFrame


def group_counts(groups: np.ndarray, s: np.ndarray, labels: np.ndarray, m: int) -> np.ndarray:
    """(G, M) int64 counts of each value per label of ``labels`` (sorted unique)."""
    gi = np.searchsorted(labels, groups)
    return np.bincount(gi * m + s, minlength=labels.size * m).reshape(labels.size, m)


class Members(NamedTuple):
    """The kept respondents of one release and their values (:func:`members_of`): the fields
    of :class:`ReadRelease` of the same names (``members`` sorted by group, ``s_true``,
    ``s_released`` aligned on them, the same multiset per group, and the per-group ``counts``)."""

    members: pd.DataFrame
    s_true: np.ndarray
    s_released: np.ndarray
    counts: np.ndarray


def _members(
    ledger: Ledger, index: int, view: pd.DataFrame, released: pd.DataFrame, policy: ReleasePolicy
) -> Members:
    """:func:`members_of` release ``index`` from the state the ledger holds after it."""
    return members_of(ledger.read_state(index), index, view, released, policy)


def _same_id_kind(ledger_ids: pd.Series, history_ids: pd.Series, index: int, name: str) -> None:
    """InputError when the history's ids are text and the ledger's numbers (or the reverse):
    pandas refuses to match them (``merge on int64 and string``)."""
    numeric = [pd.api.types.is_numeric_dtype(c.dtype) for c in (ledger_ids, history_ids)]
    if numeric[0] != numeric[1]:
        kinds = ["numbers" if n else "text" for n in numeric]
        raise InputError(
            f"the ids ({name!r}) of view {index} of the history are {kinds[1]}, those the ledger "
            f"released are {kinds[0]}: give the history as it was released (e.g. read the CSV "
            "with the same column types)"
        )


def members_of(
    state: pd.DataFrame, index: int, view: pd.DataFrame, released: pd.DataFrame, policy: ReleasePolicy
) -> Members:
    """The group members of release ``index`` (:class:`Members`) from the respondent state after
    it (the ledger's, or the one a release is about to commit: :mod:`dpriv.gate`), the original
    ``view`` and the ``released`` values. InputError/LedgerError when the state, the released
    view and the view disagree."""
    m = len(policy.sensitive_domain)
    missing = [c for c in (policy.id, "last_release", "last_group") if c not in state.columns]
    if missing:
        raise LedgerError(f"state of release {index} lacks column(s) {missing}: not a dpriv ledger state")
    mem = state.loc[state["last_release"].to_numpy() == index, [policy.id, "last_group"]]
    _same_id_kind(mem[policy.id], view[policy.id], index, policy.id)
    mem = mem.merge(view, on=policy.id, how="left", validate="one_to_one", indicator=True)
    if (mem["_merge"] != "both").any():
        rid = mem.loc[mem["_merge"] != "both", policy.id].tolist()[0]
        raise InputError(
            f"respondent {rid!r} is in release {index} of the ledger but not in view {index} of "
            "the history: give the history that was released"
        )
    mem = mem.drop(columns="_merge").sort_values("last_group", kind="stable").reset_index(drop=True)
    groups = mem["last_group"].to_numpy(dtype=np.int64)
    s_true = codes(mem[policy.sensitive], policy.sensitive_domain)

    for col in (GROUP, policy.sensitive):
        if col not in released.columns:
            raise LedgerError(f"released view {index} lacks column {col!r}")
    rel = released[[GROUP, policy.sensitive]].sort_values(GROUP, kind="stable")
    r_groups = rel[GROUP].to_numpy(dtype=np.int64)
    r_s = codes(rel[policy.sensitive], policy.sensitive_domain)
    labels = np.unique(r_groups)
    if (r_s < 0).any() or (s_true < 0).any() or not np.array_equal(labels, np.unique(groups)):
        raise InputError(
            f"release {index}: the released view, the ledger state and the history disagree "
            f"(groups or sensitive values); give the history and policy that were released{_edited(index)}"
        )
    r_counts = group_counts(r_groups, r_s, labels, m)
    t_counts = group_counts(groups, s_true, labels, m)
    if not np.array_equal(r_counts, t_counts):  # counts only: a log must not tie ids to true values
        n_groups = int((r_counts != t_counts).any(axis=1).sum())
        n_tuples = int(np.maximum(t_counts - r_counts, 0).sum())  # members whose value was not published
        raise InputError(
            f"release {index}: the true values of the history do not match the released groups "
            f"({n_groups} of {len(labels)} QI-groups differ: {n_tuples} of the release's {len(groups)} "
            f"tuples hold a {policy.sensitive} value in view {index} of the history that their group "
            f"did not publish); give the history that was released{_edited(index)}"
        )
    # both sorted by group with equal group sizes: the released values line up group by group
    return Members(mem, s_true, r_s, r_counts)


def _edited(index: int) -> str:
    """The other cause of a mismatch: the ledger's release edited after it was written."""
    return (
        f" (if it is, release {index} of the ledger may have been edited after it was written: "
        f"dpriv verify --ledger LEDGER --view {index} --history HISTORY checks it)"
    )


@dataclass(frozen=True)
class AttackInput:
    """What an adversary reads: every committed release (:func:`read_releases`), the history
    (normalised by :func:`dpriv.inputs.attack_history`), the resolved policy and its knowledge."""

    reads: list[ReadRelease]
    history: pd.DataFrame
    policy: ReleasePolicy
    adv: AdversaryKnowledge


def read_attack(
    ledger: Ledger | str | Path,
    history: pd.DataFrame,
    policy: ReleasePolicy,
    knowledge: str | AdversaryKnowledge,
    corpus: pd.DataFrame | None,
) -> AttackInput | None:
    """The checked input of an attack: the arguments checked, the policy resolved, the
    knowledge built, then every committed release read (:func:`read_releases`); None for a
    ledger without committed releases.

    Raises PolicyError (unknown knowledge), InputError (a release the history has no view
    for, a bad history) and LedgerError (not a ledger), as :func:`dpriv.attack.attack` says.
    """
    if not isinstance(knowledge, AdversaryKnowledge):
        check_knowledge_name(knowledge)
    ledger = as_ledger(ledger, "attack")
    releases = [r["index"] for r in ledger.committed()]
    if not releases:
        return None
    check_ledger_whole(ledger, state=False)  # a missing or truncated release: LedgerError
    indices = set(check_history(history, policy))
    policy, _ = resolve_policy(history, policy)
    adv = (
        knowledge
        if isinstance(knowledge, AdversaryKnowledge)
        else adversary_knowledge(knowledge, policy, corpus=corpus)
    )
    absent = [i for i in releases if i not in indices]
    if absent:
        raise InputError(
            f"the ledger has releases {absent} that the history has no view for: give the whole "
            f"history that was released (views 1..{max(releases)})"
        )
    return AttackInput(read_releases(ledger, releases, history, policy), history, policy, adv)


def read_releases(
    ledger: Ledger, releases: list[int], history: pd.DataFrame, policy: ReleasePolicy
) -> list[ReadRelease]:
    """One :class:`ReadRelease` per committed release, in order (InputError/LedgerError as
    :func:`_members` and for a respondent with two tuples in one view; InputError "view i of the
    history is not the one released", no row or value named, when such a view's fingerprint is
    not the ``input_sha`` the ledger recorded)."""
    times = history[policy.time].to_numpy()
    recorded = {int(r["index"]): r.get("input_sha") for r in ledger.committed()}
    out = []
    for i in releases:
        view = history[times == i]
        if view[policy.id].duplicated().any():
            rid = view.loc[view[policy.id].duplicated(), policy.id].tolist()[0]
            raise InputError(f"respondent {rid!r} has two tuples in view {i}; keep one per view")
        released = released_days(ledger.read_view(i), policy)  # date bounds as days, like the history
        table = ledger.read_sensitive(i)  # an Anatomy release: the group counts are there
        values = released if table is None else expand_sensitive(table, policy)
        try:
            found = _members(ledger, i, view, values, policy)
            read = ReadRelease(index=i, view=view, **found._asdict(), released=released)
        except InputError:  # another history: the ledger's digest says so, naming no one's value
            if _differs(view, recorded.get(i), policy):
                raise InputError(f"{_not_released(i, ledger)}: give the history that was released") from None
            raise
        check_released_view(read, recorded.get(i), np.flatnonzero(times == i), policy, ledger)
        out.append(read)
    return out


def _differs(view: pd.DataFrame, recorded: str | None, policy: ReleasePolicy) -> bool:
    """Whether ``view``'s fingerprint (:func:`dpriv.digests.input_fingerprint`) is not the
    ``input_sha`` the ledger recorded for its release (None: an old ledger, never differs)."""
    return recorded is not None and format(input_fingerprint(view, policy) % 2**64, "016x") != recorded


def _not_released(index: int, ledger: Ledger) -> str:
    """What a view of the history whose fingerprint :func:`_differs` is (no row, no value)."""
    return (
        f"view {index} of the history is not the one released into {ledger.root} (its ids, QIs or "
        "sensitive values differ from the digest the ledger recorded)"
    )


def check_released_view(
    read: ReadRelease, recorded: str | None, where: np.ndarray, policy: ReleasePolicy, ledger: Ledger
) -> None:
    """InputError unless view ``read.index`` of the history is the one the ledger released: the
    fingerprint of its ids, QIs and sensitive values (:func:`dpriv.digests.input_fingerprint`)
    against the ``input_sha`` the ledger recorded (None: an old ledger, not checked). The
    message names the first kept tuple whose QIs lie outside her released group (by its line
    in the history file under :func:`dpriv.rows.rows_of`, else its row label; ``where``: the
    positions of the view's rows in the history), when there is one.
    """
    if not _differs(read.view, recorded, policy):
        return
    i = read.index
    text = _not_released(i, ledger)
    found = None if is_qi_table(read.released, policy) else _first_outside(read, policy)
    if found is None:
        raise InputError(
            f"{text}; every released tuple lies within its published group, so the changed row "
            "cannot be named (a QI changed within its group's bounds, a suppressed tuple, or a "
            "row added or dropped): give the history that was released"
        )
    k, q, box = found
    row = read.members.iloc[k]
    at = int(pd.Index(read.view[policy.id]).get_indexer([row[policy.id]])[0])  # ids are unique
    name = _row_name(int(where[at]), as_python(read.view.index[at]))
    value = as_python(row[q])  # a QI's value, never the respondent's id (README "Bad input")
    raise InputError(
        f"{text}: {name} has {q} = {value!r}, outside {box} "
        f"published for her group in release {i}; give the history that was released"
    )


def _first_outside(read: ReadRelease, policy: ReleasePolicy) -> tuple[int, str, str] | None:
    """(row of ``read.members``, QI, the published bound as text) of the first member, in the
    history's order, whose QI lies outside her released group; None when every one fits."""
    mem, rel = read.members, read.released
    boxes = rel.drop_duplicates(GROUP).set_index(GROUP).reindex(mem["last_group"].to_numpy())
    bad = np.zeros(len(mem), dtype=bool)
    what = np.full(len(mem), "", dtype=object)
    leaves = node_leaves(policy) or {}
    for q in policy.qi:
        if f"{q}_min" in rel.columns:
            lo, hi = (boxes[f"{q}_{e}"].to_numpy(dtype=float) for e in ("min", "max"))
            x = mem[q].to_numpy(dtype=float)
            out = ~((lo <= x) & (x <= hi))
            shown = [f"[{a:g}, {b:g}]" for a, b in zip(lo, hi)]
        elif q in rel.columns:
            cells, values = boxes[q].astype(str).to_numpy(), mem[q].astype(str).to_numpy()
            pairs = pd.DataFrame({"cell": cells, "v": values})
            fits = {
                (c, v): v in cell_values(c, leaves.get(q))
                for c, v in pairs.drop_duplicates().itertuples(index=False)
            }
            out = ~np.array([fits[(c, v)] for c, v in pairs.itertuples(index=False)], dtype=bool)
            shown = list(pairs["cell"])
        else:
            continue
        new = out & ~bad
        what[new] = [f"the {q} {b}" for b in np.asarray(shown, dtype=object)[new]]
        bad |= out
    if not bad.any():
        return None
    order = pd.Index(read.view[policy.id]).get_indexer(mem[policy.id])  # the history's order
    k = int(np.flatnonzero(bad)[np.argmin(order[bad])])
    q = what[k].split(" ")[1]
    return k, q, what[k]


def _row_name(position: int, label) -> str:
    """``line 7 of h.csv`` (the history file under :func:`dpriv.rows.rows_of`; the header is
    line 1), ``row 7 of h.parquet``, ``row 7 of DIR/part.1.parquet`` (a Parquet folder: the row in
    its own file), or ``row <label>`` of a DataFrame given in Python (:func:`dpriv.rows.row_places`)."""
    src = input_file()
    if src is None:
        return f"row {label!r}"
    (name,), in_file = row_places(src, [position])
    return name if in_file else f"{name} of {src.path}"


def observed_releases(reads: list[ReadRelease], policy: ReleasePolicy, classes) -> list[ObservedRelease]:
    """What the adversary observes of each release (tuples in the order of its AttackStep)."""
    out = []
    for r in reads:
        _, group = np.unique(r.members["last_group"].to_numpy(dtype=np.int64), return_inverse=True)
        out.append(
            ObservedRelease(
                index=r.index,
                respondent=r.members[policy.id].to_numpy(),
                group=group.astype(np.int64),
                counts=r.counts,
                cls=classes.classify(r.members),
                truth=r.s_true,
                n_suppressed=len(r.view) - len(r.members),
            )
        )
    return out


def last_tables(
    reads: list[ReadRelease], history: pd.DataFrame, policy: ReleasePolicy, adv: AdversaryKnowledge
) -> MarkovTables:
    """The adversary's tables at the last committed release."""
    return adv.tables_before(history, policy, reads[-1].index)


def node_leaves(policy: ReleasePolicy) -> dict[str, dict[str, tuple]] | None:
    """Per categorical QI released with a hierarchy: node name -> the leaves under it."""
    out = {}
    for q in policy.hierarchies:
        h = policy.hierarchy(q)
        out[q] = {name: h.leaves_under(name) for name in h.names}
    return out or None


def linkage_rows(reads: list[ReadRelease], policy: ReleasePolicy) -> list[dict]:
    """Membership from QIs alone (issue 11, item 4), per release: ``n_pinned`` (respondents
    every assignment of V_i's QIs to the published boxes and group sizes puts in one group)
    and ``share_pinned`` (n_pinned / released tuples; NaN for an empty release). An Anatomy
    release (a QI table of exact QIs, no ``<qi>_min`` column) is read by
    :func:`dpriv.adversary.linkage.exact_qi_linkage`."""
    rows = []
    for r in reads:
        if is_qi_table(r.released, policy):
            link = exact_qi_linkage(r.released, r.view, list(policy.qi), group=GROUP)
        else:
            link = qi_linkage(
                r.released,
                r.view,
                numeric=policy.numeric_qi,
                categorical=policy.categorical_qi,
                group=GROUP,
                leaves=node_leaves(policy),
            )
        rows.append({"release": r.index, "n_pinned": link.n_pinned, "share_pinned": link.share_pinned})
    return rows


def is_qi_table(released: pd.DataFrame, policy: ReleasePolicy) -> bool:
    """Whether a stored release is an Anatomy QI table (exact QIs, no S column)."""
    return policy.sensitive not in released.columns and all(q in released.columns for q in policy.qi)
