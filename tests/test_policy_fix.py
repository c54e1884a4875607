"""The hints of dpriv/policy_fix.py said once when a refusal passes through two layers adding
them (release_history's decorator, then ``dpriv release``): hand-written messages."""

from __future__ import annotations

import pytest

from dpriv.errors import InputError, PolicyError
from dpriv.policy_fix import (
    INTO_NEW_LEDGER,
    NEW_LEDGER,
    TAKE_UP_SMALL_VIEW,
    hinted_once,
    with_domain_hint,
    with_kind_hint,
    with_new_ledger,
)

OUTSIDE = (
    "column 'diagnosis', row 4: 'flu' is outside its declared domain; widen [domains] or correct the data"
)
TEXT_IN_QI = "column 'age', row 3: 'n/a' in numeric QI: correct it, or declare the QI categorical in [kinds]"
SMALL = "view 2: k = 10 is larger than the view (5 rows): lower k"


def test_hinted_once_appends_the_hint_in_parentheses_unless_its_words_are_there():
    exc = PolicyError("refused")
    once = hinted_once(exc, "said", "the hint said here")
    assert type(once) is PolicyError and str(once) == "refused (the hint said here)"
    assert hinted_once(once, "said", "the hint said here") is once
    reworded = hinted_once(InputError("a; widen it"), "b", "b", text="a")
    assert type(reworded) is InputError and str(reworded) == "a (b)"


@pytest.mark.parametrize("second", [2, 3])  # the same ledger, or one more release committed meanwhile
def test_the_domain_hint_is_said_once(second):
    once = with_domain_hint(InputError(OUTSIDE), 2)
    twice = with_domain_hint(once, second)
    assert twice is once
    text = str(twice)
    assert text.startswith(OUTSIDE.replace("widen [domains] or correct the data", "correct the data") + " (")
    assert text.count("releases 1..2 are committed with the domains of the ledger's first release") == 1
    assert text.count(NEW_LEDGER) == 1 and "widen" not in text


@pytest.mark.parametrize("second", [1, 4])
def test_the_kind_hint_is_said_once(second):
    once = with_kind_hint(InputError(TEXT_IN_QI), 1)
    assert with_kind_hint(once, second) is once
    text = str(once)
    assert text == (
        "column 'age', row 3: 'n/a' in numeric QI: correct it (release 1 is committed and "
        "the ledger keeps the kind of each QI; declaring one categorical changes the policy, which needs "
        f"a new ledger: {INTO_NEW_LEDGER})"
    )


@pytest.mark.parametrize("second", [2, 5])
def test_the_small_view_hint_is_said_once(second):
    once = with_new_ledger(PolicyError(SMALL), 2)
    assert with_new_ledger(once, second) is once
    assert str(once) == f"{SMALL} (releases 1..2 are committed: {TAKE_UP_SMALL_VIEW})"


def test_no_hint_without_a_committed_release_or_the_words_it_answers():
    for exc in (InputError(OUTSIDE), InputError(TEXT_IN_QI)):
        assert with_domain_hint(exc, 0) is exc and with_kind_hint(exc, 0) is exc
    plain = InputError("column 'age', row 3: negative age -4; correct the data")
    assert with_domain_hint(plain, 3) is plain and with_kind_hint(plain, 3) is plain
    assert with_new_ledger(PolicyError("j must be in (0, 1]"), 3).args == ("j must be in (0, 1]",)
