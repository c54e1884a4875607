"""Who each QI-group of a ledger's release holds, from the ledger's state.

``state/<i>/`` records, per respondent, the release and QI-group of her last kept tuple
(``last_release``, ``last_group``): its respondents with ``last_release == i`` are the members
of release ``i``. ``dpriv verify --ledger`` holds each box to them
(:func:`dpriv.view_check.verify_view`); a view of a history that is not the one released is
located by them (:func:`differing_group`): the first QI-group whose members' rows no longer
give what it released.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dpriv.anonymity.format_check import format_problems
from dpriv.anonymity.membership import box_problems
from dpriv.policy import ReleasePolicy
from dpriv.released import GROUP, LABEL
from dpriv.validate import codes
from dpriv.wording import counted


def release_members(state: pd.DataFrame, index: int, policy: ReleasePolicy) -> pd.DataFrame:
    """The membership of release ``index`` from a ledger's state after it: the id and ``_label``
    (int64) of each tuple it kept; a suppressed respondent kept none."""
    mine = state[state["last_release"].to_numpy() == index]
    return pd.DataFrame(
        {policy.id: mine[policy.id].array, LABEL: mine["last_group"].to_numpy(dtype=np.int64)}
    )


def member_problems(
    released: pd.DataFrame, view: pd.DataFrame, members: pd.DataFrame, policy: ReleasePolicy, index
) -> list[str]:
    """:func:`dpriv.anonymity.membership.box_problems` of release ``index``'s boxes against the
    rows of ``view`` (read as the release read it) that ``members`` puts in them, each problem
    prefixed ``release <index>: ``. Names QIs and QI-groups, no value."""
    assigned = view.merge(members, on=policy.id, how="inner")
    if assigned.empty or GROUP not in released.columns:  # the format checks name a missing column
        return []
    usable = format_problems(released, policy)[1]
    labels = assigned[LABEL]
    if labels.dtype != released[GROUP].dtype:  # labels read back as text (a CSV of the view)
        labels, released = labels.astype(str), released.assign(**{GROUP: released[GROUP].astype(str)})
    return [f"release {index}: {p}" for p in box_problems(released, labels, assigned, policy, usable)]


def differing_group(root: Path, index: int, view: pd.DataFrame, policy: ReleasePolicy) -> str:
    """Where ``view`` (pandas, read as the release read it; ``policy`` resolved) differs from
    release ``index`` of the ledger at ``root``, for a message: ``"QI-group <label> (...)"``,
    the first QI-group of the released file whose members' rows (:func:`release_members`)
    now number otherwise, hold other sensitive values or give another box; else what is left
    (a suppressed tuple, a row added, a value inside its box). Names no value and no id; ""
    when the ledger's files cannot say (a damaged or missing state: its readers name that)."""
    from dpriv.dates import released_days
    from dpriv.state_parts import read_state_files, state_files

    try:
        released = released_days(pd.read_parquet(root / "releases" / str(index) / "view.parquet"), policy)
        members = release_members(read_state_files(state_files(root / "state" / str(index))), index, policy)
    except (OSError, ValueError, KeyError, TypeError):  # pyarrow's errors are OSError/ValueError
        return ""
    rows = view.merge(members, on=policy.id, how="inner")
    domain = policy.sensitive_domain
    pub = pd.DataFrame({"g": released[GROUP].to_numpy(), "s": codes(released[policy.sensitive], domain)})
    now = pd.DataFrame({"g": rows[LABEL].to_numpy(), "s": codes(rows[policy.sensitive], domain)})
    sizes = pd.concat({"pub": pub.groupby("g").size(), "now": now.groupby("g").size()}, axis=1).fillna(0)
    counts = pd.concat({"pub": pub.value_counts(), "now": now.value_counts()}, axis=1).fillna(0)
    moved = set(counts.index[counts["pub"] != counts["now"]].get_level_values("g"))
    for g in pd.unique(released[GROUP]):  # in the file's order
        if sizes.at[g, "pub"] != sizes.at[g, "now"]:
            return (
                f"QI-group {g}: {int(sizes.at[g, 'now'])} of its members are in the view where it "
                f"released {counted(int(sizes.at[g, 'pub']), 'tuple')}"
            )
        if g in moved:
            return f"QI-group {g}: its members' sensitive values are not the ones it released"
    boxes = member_problems(released, view, members, policy, index)
    if boxes:
        return boxes[0].removeprefix(f"release {index}: ")
    return (
        f"no QI-group of release {index} differs from its members' rows: a tuple it suppressed, a "
        "row added, or a value inside its group's box"
    )
