"""A value outside a domain, met by ``release_history`` on a running ledger (a fresh user's drill,
session 39, M4): the Python refusal said "add them to [domains] or correct the data", a dead end
(the ledger refuses a changed policy); ``dpriv release`` said that the values need a new ledger.
Now both say so; a first release keeps its advice to widen the domain.
"""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

LOOSE = {"privacy": {"k": 5, "t": 0.5, "j": 1.5, "max_suppression": 1.0}}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    out = tmp_path_factory.mktemp("domains")
    write_history(out, medical_history(n_views=3, view_size=60, seed=3), policy_extra=LOOSE)
    hist = pd.read_parquet(out / "history.parquet")
    policy = ReleasePolicy.from_toml(out / "policy.toml")
    release_history(hist[hist["view"] <= 2], policy, out / "L2")
    return out, hist, policy


def week3_with(hist: pd.DataFrame, column: str, value) -> pd.DataFrame:
    out = hist.astype({column: object}) if isinstance(value, str) else hist.copy()
    out.loc[out.index[out["view"] == 3][:3], column] = value
    return out


@pytest.mark.parametrize(("column", "value"), [("exam_result", "covid_1"), ("age", 90)])
def test_a_value_outside_a_domain_on_a_running_ledger_says_it_needs_a_new_ledger(
    base, tmp_path, column, value
):
    out, hist, policy = base
    shutil.copytree(out / "L2", tmp_path / "L")
    with pytest.raises(InputError) as exc:
        release_history(week3_with(hist, column, value), policy, tmp_path / "L")
    said = str(exc.value)
    assert "[domains] or correct the data" not in said, said
    assert "releases 1..2 are committed with the domains of the ledger's first release" in said, said
    assert "needs a new ledger" in said
    # the policy declares every domain (write_history's policy.toml): said so, not "inferred"
    assert "its declared domain" in said and "inferred domain" not in said, said


def test_a_first_release_keeps_the_advice_to_widen_the_domain(base, tmp_path):
    out, hist, policy = base
    with pytest.raises(InputError) as exc:
        release_history(week3_with(hist, "age", 90), policy, tmp_path / "new")
    assert "widen [domains] or correct the data" in str(exc.value)
    assert "new ledger" not in str(exc.value)


def test_an_age_outside_the_inferred_domain_is_named_with_no_word_of_dates(base, tmp_path):
    """The brief of session 45 (h3, item 3): a resumed ledger whose domains were inferred from its
    first views, a third view with an age of 150. The refusal names the column, the value, the
    recorded domain and the fix (a new ledger whose policy declares [domains]); nothing of dates
    (age is numeric: the date QI's advice of dpriv.validate is not its business)."""
    out, hist, policy = base
    qis = {q: d for q, d in policy.domains.items() if q not in policy.qi}  # the QIs' domains inferred
    inferred = ReleasePolicy.from_dict({**policy.model_dump(), "domains": qis})
    release_history(hist[hist["view"] <= 2], inferred, tmp_path / "L")
    lo, hi = int(hist.loc[hist["view"] <= 2, "age"].min()), int(hist.loc[hist["view"] <= 2, "age"].max())
    with pytest.raises(InputError) as exc:
        release_history(week3_with(hist, "age", 150), inferred, tmp_path / "L")
    said = str(exc.value)
    assert f"view = 3: QI 'age' has values [150] outside its inferred domain [{lo}, {hi}]" in said, said
    assert "inferred from its views where none was declared" in said
    assert "needs a new ledger" in said and "declaring [domains] that cover every week's values" in said
    assert "date" not in said.lower(), said


def test_a_level_outside_an_inferred_categorical_domain_says_inferred(base, tmp_path):
    """Session 46: the domains the given policy leaves to the data (the ledger inferred them from
    its first release) are called inferred, as the first release's notes called them; a domain the
    policy declares keeps "declared" (above). gender declared categorical, its levels undeclared;
    the sensitive column's inferred domain: tests/test_cli_registry_drill.py."""
    out, hist, policy = base
    qis = {q: d for q, d in policy.domains.items() if q not in policy.qi}
    inferred = ReleasePolicy.from_dict(
        {**policy.model_dump(), "domains": qis, "kinds": {"gender": "categorical"}}
    )
    release_history(hist[hist["view"] <= 2], inferred, tmp_path / "L")
    with pytest.raises(InputError) as exc:
        release_history(week3_with(hist, "gender", 3), inferred, tmp_path / "L")
    said = str(exc.value)
    assert "view = 3: categorical QI 'gender' has values [3] not in its inferred levels [1, 2]: " in said, (
        said
    )
    assert "declared" not in said.replace("where none was declared", ""), said
    assert "releases 1..2 are committed with the domains of the ledger's first release" in said, said
