"""Issue 15: ``attack`` reads the history the way ``release`` read it (dpriv/inputs.py): a
text id stored as ``object`` (the release joined on ``string[pyarrow]``), a ``category``
sensitive column or QI (with unused categories), text in NFD where the release holds NFC, and
the path of the history file instead of a frame. Each gives the gains of the plain history."""

from __future__ import annotations

import unicodedata
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from test_deductions import CYCLE, EXIT, as_sets, cycle_history, release

from dpriv.adversary import deduce
from dpriv.attack import attack
from dpriv.datasets import medical_history
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history

NFC = {1: unicodedata.normalize("NFC", "Fémme"), 2: unicodedata.normalize("NFC", "Mâle")}


def nfd(values: pd.Series) -> pd.Series:
    return values.map(lambda v: unicodedata.normalize("NFD", v))


@pytest.fixture(scope="module")
def released(tmp_path_factory, client):
    out = tmp_path_factory.mktemp("attack_inputs")
    h = medical_history(n_views=3, view_size=150, seed=4).history
    h = h.assign(
        respondent_id="p" + h["respondent_id"].astype(str),
        gender=h["gender"].map(NFC),
        exam_result=h["exam_result"].map(lambda s: unicodedata.normalize("NFC", f"é_{s}")),
    )
    policy = ReleasePolicy(
        id="respondent_id", time="view", qi=["age", "gender", "weight"], sensitive="exam_result",
        k=3, t=1.0, j=10.0, max_suppression=1.0, knowledge={"defender": "ie"},
    )  # fmt: skip
    led = release_history(h, policy, out / "led")
    return h, policy, led, out


@pytest.mark.slow
def test_text_ids_category_and_nfd_give_the_gains_of_the_plain_history(released):
    h, policy, led, _ = released
    assert unicodedata.normalize("NFD", "Fémme") != NFC[1]
    # IE with the exact deductions contradicts itself on a 3-view history (its release-1 tables
    # are mined from nothing): the paper adversary without them, as dpriv experiment runs it
    plain = attack(led, h, policy, "ie", deductions=False)
    assert plain["release"].tolist() == [1, 2, 3] and plain["n_tuples"].gt(0).all()
    raw = h.assign(
        respondent_id=h["respondent_id"].astype(object),
        gender=nfd(h["gender"]).astype("category"),
        exam_result=nfd(h["exam_result"]).astype(
            pd.CategoricalDtype(sorted(set(nfd(h["exam_result"]))) + ["unused"])
        ),
    )
    assert raw["exam_result"].dtype == "category" and not raw["gender"].isin(list(NFC.values())).any()
    for adversary in ("paper", "retrospective"):
        a = attack(led, raw, policy, "ie", adversary=adversary, deductions=False)
        b = attack(led, h, policy, "ie", adversary=adversary, deductions=False)
        pd.testing.assert_frame_equal(a, b)
    strings = h.astype({"respondent_id": "string[pyarrow]"})
    pd.testing.assert_frame_equal(attack(led, strings, policy, "ie", deductions=False), plain)


def test_attack_reads_a_path_like_release(released):
    h, policy, led, out = released
    h.to_parquet(out / "h.parquet", index=False)
    from_path = attack(led, str(out / "h.parquet"), policy, "ie", deductions=False)
    pd.testing.assert_frame_equal(from_path, attack(led, h, policy, "ie", deductions=False))
    with pytest.raises(InputError, match=r"attack\(\) takes the history .* not a list"):
        attack(led, [1, 2], policy, "ie")


def test_deductions_take_text_ids_like_integer_ids():
    """The exact deductions keyed respondents by int64 (``int('p7')`` failed, so ``dpriv attack``
    with its default --deductions refused every history with text ids)."""
    r1, r2 = cycle_history(2)
    r3 = release(3, "abc", [(1, 0, "c"), (2, 0, "b")])
    as_text = [
        replace(r, respondent=np.array([f"p{i}" for i in r.respondent], dtype=object)) for r in (r1, r2, r3)
    ]
    for att in (0.5, 1.0):
        a, b = deduce([r1, r2, r3], CYCLE, attendance=att), deduce(as_text, CYCLE, attendance=att)
        assert [as_sets(x, "abc") for x in a.allowed] == [as_sets(x, "abc") for x in b.allowed]
        assert a.n_certain.tolist() == b.n_certain.tolist()
    # attendance 1: r1 is c and r2 is b at release 3 (hand-derived in test_deductions)
    assert as_sets(deduce(as_text, CYCLE, attendance=1.0).allowed[2], "abc") == ["c", "b"]
    twice = release(1, "ax", [(1, 0, "a"), (1, 0, "x")])
    with pytest.raises(InputError, match="a respondent has two tuples in release 1"):  # never her id
        deduce([replace(twice, respondent=np.array(["p1", "p1"], dtype=object))], EXIT, attendance=None)
    with pytest.raises(InputError, match="a respondent has two tuples in release 1"):  # an int id too
        deduce([twice], EXIT, attendance=None)


def test_a_value_first_published_in_a_later_release_does_not_stop_the_attack(tmp_path):
    """A drill: 'remission' first appears in release 2; the snapshot and IE adversaries' model
    (mined before it) rules it out, so the exact deductions found 'no complete assignment' and
    the attack exited 2 blaming the ledger. The model's zeros are not certain then: no
    deductions, a warning, and the gains of the posteriors alone (as without deductions)."""
    rng = np.random.default_rng(0)
    n = 200
    ids, age, weight = [f"P{k}" for k in range(n)], rng.integers(20, 90, n), rng.integers(40, 130, n)
    s1 = rng.choice(["I", "II", "III"], n)
    s2 = np.where(rng.random(n) < 0.3, "remission", s1)
    hist = pd.concat(
        [
            pd.DataFrame({"pid": ids, "week": w, "age": age, "weight": weight, "stage": s})
            for w, s in ((1, s1), (2, s2))
        ],
        ignore_index=True,
    )
    pol = ReleasePolicy.from_dict(
        {"id": "pid", "time": "week", "qi": ["age", "weight"], "sensitive": "stage", "t": 0.5, "j": 1.5,
         "max_suppression": 0.25, "grouping": "topdown",
         "domains": {"age": [0, 110], "weight": [20, 250], "stage": ["I", "II", "III", "remission"]}}
    )  # fmt: skip
    led = release_history(hist, pol, tmp_path / "led")
    for knowledge in ("snapshot", "ie"):
        with pytest.warns(UserWarning, match=r"model rules out what release 2 published") as rec:
            got = attack(led, hist, pol, knowledge)
        assert {w.filename for w in rec if "rules out" in str(w.message)} == {__file__}  # this line
        plain = attack(led, hist, pol, knowledge, deductions=False)
        assert got["n_certain"].tolist() == [0, 0]  # nothing deduced (NA: deductions not run)
        pd.testing.assert_frame_equal(got.drop(columns="n_certain"), plain.drop(columns="n_certain"))
        assert got["release"].tolist() == [1, 2] and got["n_tuples"].tolist() == [200, 200]
