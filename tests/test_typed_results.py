"""Results that were bare tuples are NamedTuples whose fields the callers read by name
(session 43): hand-computed cases of ``guard_stats.boxes``, ``hilbert.keys.balance_targets`` and
``policy_values.inferred_domains``, field by field."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpriv.guard_stats import Boxes, boxes
from dpriv.hilbert.keys import BalanceTargets, balance_targets
from dpriv.policy import ReleasePolicy
from dpriv.policy_values import Inferred, inferred_domains

POLICY = ReleasePolicy(id="rid", qi=["age", "w"], sensitive="s", k=2, t=1.0, j=5.0)


def test_boxes_gives_each_groups_box_and_the_domains_spans():
    policy = POLICY.with_overrides(
        kinds={"age": "numeric", "w": "numeric"}, domains={"age": [20, 60], "w": [1.0, 1.5]}
    )
    stats = pd.DataFrame({"lo_age": [20, 41], "hi_age": [40, 60], "lo_w": [1.0, 1.25], "hi_w": [1.25, 1.5]})
    got = boxes(stats, policy)
    assert isinstance(got, Boxes)
    np.testing.assert_array_equal(got.lo, [[20.0, 1.0], [41.0, 1.25]])
    np.testing.assert_array_equal(got.hi, [[40.0, 1.25], [60.0, 1.5]])
    np.testing.assert_array_equal(got.span, [40.0, 1.0])  # a span under 1 counts as 1


def test_balance_targets_sorts_the_keys_and_cuts_at_equal_row_counts():
    got = balance_targets(pd.Series({5: 2, 1: 1, 3: 1, 9: 4}), 4)
    assert isinstance(got, BalanceTargets)
    assert got.keys.dtype == np.uint64 and got.keys.tolist() == [1, 3, 5, 9]
    assert got.cum.tolist() == [1, 2, 4, 8]
    assert got.targets.tolist() == [2.0, 4.0, 6.0]  # 8 rows in 4 ranges


def test_inferred_domains_completes_kinds_and_domains_with_a_note_each():
    policy = POLICY.with_overrides(kinds={"w": "categorical"}, domains={"w": ["a", "b"]})
    view = pd.DataFrame({"rid": [1, 2, 3], "age": [33, 21, 40], "w": ["a", "b", "a"], "s": ["y", "x", "y"]})
    got = inferred_domains(policy, view)
    assert isinstance(got, Inferred)
    assert got.kinds == {"w": "categorical", "age": "numeric"}
    assert got.domains == {"w": ["a", "b"], "age": [21, 40], "s": ["x", "y"]}
    assert len(got.notes) == 2 and "age" in got.notes[0] and "'s'" in got.notes[1]
