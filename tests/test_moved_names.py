"""Names moved to a module of their own (session 43) are still imported from where they were:
``dpriv.release_check`` gives the ledger's checks of ``dpriv.ledger_checks``, ``dpriv.rows`` the
partition plumbing of ``dpriv.row_problems`` (the same objects, not copies), and a name neither
module has is still an AttributeError."""

from __future__ import annotations

import importlib

import pytest

MOVED = {
    ("dpriv.release_check", "dpriv.ledger_checks"): [
        "NOTHING_RELEASED", "READING_FIELDS", "check_ledger_whole", "check_released_any",
        "check_released_history", "check_repeated", "check_same_columns", "check_unchanged", "check_views",
    ],
    ("dpriv.attack_input", "dpriv.attack_members"): ["ReadRelease", "Members", "members_of"],
    ("dpriv.rows", "dpriv.row_problems"): [
        "located", "LOCATED_META", "lazy_problems", "placed", "partition_lengths", "problems_of",
        "problems_message", "MAX_OTHER_PROBLEMS",
    ],
}  # fmt: skip


@pytest.mark.parametrize(("old", "new"), list(MOVED))
def test_a_moved_name_is_the_same_object_at_its_old_place(old, new):
    was, now = importlib.import_module(old), importlib.import_module(new)
    for name in MOVED[old, new]:
        obj = getattr(now, name)
        assert getattr(was, name) is obj, name
        if callable(obj):  # defined there, not imported from the old place
            assert obj.__module__ == new, name


def test_a_name_rows_never_had_is_an_attribute_error():
    import dpriv.rows

    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        dpriv.rows.no_such_name  # noqa: B018
    from dpriv.rows import describe  # a name it keeps

    assert describe.__module__ == "dpriv.rows"
