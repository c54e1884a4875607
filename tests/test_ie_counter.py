"""The IE adversary counts the history once (issue 13, item 3): ``dpriv attack --knowledge ie``
used to re-mine every original view before each release (quadratic in the history); its
tables must stay those of the re-mine (:meth:`DefenderKnowledge.at`), bit for bit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpriv.sources as sources
from dpriv.attack import attack
from dpriv.datasets import medical_history, write_history
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.sources import AdversaryKnowledge, DefenderKnowledge, adversary_knowledge


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    out = tmp_path_factory.mktemp("ie")
    mh = medical_history(n_views=5, view_size=300, seed=4)
    policy = ReleasePolicy.from_toml(write_history(out, mh), t=1.0, j=10.0, max_suppression=1.0)
    policy = policy.with_overrides(knowledge={**policy.knowledge, "defender": "ie"})
    return mh, policy, release_history(mh.history, policy, out / "ledger")


def assert_same_tables(got, expected):
    assert got.values == expected.values and len(got.tables) == len(expected.tables) == 4
    for a, b in zip(got.tables, expected.tables):
        assert a.shape == b.shape and np.array_equal(a, b)


@pytest.mark.slow
def test_counted_tables_equal_the_re_mine_for_any_order_of_calls(setting):
    mh, policy, _ = setting
    adv = adversary_knowledge("ie", policy)
    remine = DefenderKnowledge("ie")
    # increasing, repeated, past the last view (6: all 5 views), then backwards (a new pass)
    for index in (1, 2, 2, 4, 6, 3, 5):
        assert_same_tables(adv.tables_before(mh.history, policy, index), remine.at(mh.history, policy, index))
    # before any view: uniform BK^sv, nothing sequential
    first = adversary_knowledge("ie", policy).tables_before(mh.history, policy, 1)
    assert np.allclose(first.tables[0], 1 / len(policy.sensitive_domain)) and not first.tables[3].any()
    # a view skipped by a respondent: her context is her last observed values (the re-mine's rule)
    gappy = mh.history[~((mh.history.view == 3) & (mh.history.respondent_id % 2 == 0))]
    assert_same_tables(adv.tables_before(gappy, policy, 6), remine.at(gappy, policy, 6))


def test_the_ie_attack_counts_each_view_once_and_gives_the_re_mine_gains(setting, monkeypatch):
    mh, policy, led = setting
    # the reference: every release's tables re-mined from the views before it
    monkeypatch.setattr(AdversaryKnowledge, "tables_before", lambda self, h, p, i: self.source.at(h, p, i))
    run = {adv: dict(adversary=adv, deductions=False) for adv in ("paper", "retrospective")}
    remined = {adv: attack(led, mh.history, policy, "ie", **kw) for adv, kw in run.items()}
    monkeypatch.undo()
    adds, real_add = [], sources.KnowledgeTracker.add
    monkeypatch.setattr(sources.KnowledgeTracker, "add", lambda self, v: adds.append(1) or real_add(self, v))
    monkeypatch.setattr(DefenderKnowledge, "at", lambda *a, **k: pytest.fail("the attack re-mined the views"))
    for adversary, expected in remined.items():
        adds.clear()
        got = attack(led, mh.history, policy, "ie", **run[adversary])
        assert len(adds) == 4, adversary  # views 1..4 once each (the re-mine: 1 + 2 + 3 + 4)
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert remined["paper"]["adversary_gain"].abs().max() > 0  # an attack that did something
