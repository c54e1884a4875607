"""Reading a release ledger into what the adversary of :mod:`dpriv.attack` observes.

The ledger gives, per committed release ``i``, the released view ``releases/<i>/view.parquet``
(``qi_group`` and the sensitive column: each group's multiset of values) and, for the group
membership the adversary of docs/algorithms.md §1.1 (ii) is assumed to know, the private state
``state/<i>/state.parquet`` (respondents with ``last_release == i``; their ``last_group`` is
the released ``qi_group``). The true values and the QIs (for the knowledge classes and for
the membership-from-QIs linkage) come from the original history.

:func:`read_attack` checks the arguments and reads every committed release with
:func:`read_releases`, which cross-checks each (:class:`~dpriv.attack_members.ReadRelease`,
:func:`~dpriv.attack_members.members_of`);
:func:`observed_releases` turns those into the
:class:`dpriv.adversary.observed.ObservedRelease` the kernels take, and
:func:`linkage_rows` runs :func:`dpriv.adversary.linkage.qi_linkage` on each release.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpriv.adversary.linkage import cell_values, exact_qi_linkage, qi_linkage
from dpriv.adversary.observed import ObservedRelease
from dpriv.anatomy import expand_sensitive
from dpriv.attack_files import as_ledger
from dpriv.attack_members import Members, ReadRelease, members_of
from dpriv.dates import released_days
from dpriv.digests import input_fingerprint
from dpriv.errors import InputError
from dpriv.input_checks import check_history, resolve_policy
from dpriv.knowledge.tables import MarkovTables
from dpriv.ledger import Ledger
from dpriv.ledger_checks import check_ledger_whole
from dpriv.policy import ReleasePolicy, as_python
from dpriv.released import GROUP
from dpriv.rows import input_file, row_places
from dpriv.sources import AdversaryKnowledge, adversary_knowledge, check_knowledge_name


def _members(
    ledger: Ledger, index: int, view: pd.DataFrame, released: pd.DataFrame, policy: ReleasePolicy
) -> Members:
    """:func:`members_of` release ``index`` from the state the ledger holds after it."""
    return members_of(ledger.read_state(index), index, view, released, policy)


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
    adv = knowledge_of(knowledge, policy, corpus)
    absent = [i for i in releases if i not in indices]
    if absent:
        raise InputError(
            f"the ledger has releases {absent} that the history has no view for: give the whole "
            f"history that was released (views 1..{max(releases)})"
        )
    return AttackInput(read_releases(ledger, releases, history, policy), history, policy, adv)


def knowledge_of(
    knowledge: str | AdversaryKnowledge, policy: ReleasePolicy, corpus: pd.DataFrame | None
) -> AdversaryKnowledge:
    """The adversary's knowledge ``knowledge`` names (:func:`dpriv.sources.adversary_knowledge`
    of the resolved ``policy``; PolicyError for an unknown name), or ``knowledge`` as given."""
    if isinstance(knowledge, AdversaryKnowledge):
        return knowledge
    check_knowledge_name(knowledge)
    return adversary_knowledge(knowledge, policy, corpus=corpus)


def with_knowledge(
    inp: AttackInput, knowledge: str | AdversaryKnowledge, corpus: pd.DataFrame | None
) -> AttackInput:
    """``inp``'s reading (the releases, the history, the policy) attacked with another knowledge:
    what :func:`read_attack` of the same ledger, history and policy with ``knowledge`` returns,
    the releases not read again (they do not depend on the knowledge)."""
    return AttackInput(inp.reads, inp.history, inp.policy, knowledge_of(knowledge, inp.policy, corpus))


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
