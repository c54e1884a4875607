"""Membership from QIs alone (issue 11, item 4): hand-made boxes, a brute-force oracle, and
dpriv's own releases (Mondrian's disjoint boxes pin everyone, JS-reduce's overlapping fewer)."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpriv.adversary import Linkage, qi_linkage
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history


def boxes(spec):
    """Released view from [(label, x_min, x_max, size), ...] (one row per tuple)."""
    rows = [(label, lo, hi) for label, lo, hi, size in spec for _ in range(size)]
    return pd.DataFrame(rows, columns=["qi_group", "x_min", "x_max"])


def people(xs):
    return pd.DataFrame({"x": xs})


def test_disjoint_boxes_pin_everyone():
    out = qi_linkage(boxes([(7, 1, 3, 3), (9, 6, 8, 3)]), people([1, 2, 3, 6, 7, 8]), numeric=["x"])
    assert isinstance(out, Linkage)
    assert (out.n_pinned, out.n_single_box, out.share_pinned) == (6, 6, 1.0)
    assert out.labels.tolist() == [7, 9] and out.pinned_group.tolist() == [0, 0, 0, 1, 1, 1]


def test_overlapping_boxes_pin_only_the_single_box_respondents():
    # A = [1, 5] holds 3, B = [3, 8] holds 3: 1, 2 only in A and 6, 7 only in B; one of 3, 4
    # completes A, the other B: not pinned
    out = qi_linkage(boxes([(0, 1, 5, 3), (1, 3, 8, 3)]), people([1, 2, 3, 4, 6, 7]), numeric=["x"])
    assert (out.n_pinned, out.n_single_box) == (4, 4)
    assert out.n_boxes.tolist() == [1, 1, 2, 2, 1, 1]
    assert out.pinned_group.tolist() == [0, 0, -1, -1, 1, 1]


def test_capacity_propagation_pins_the_rest():
    # A = [1, 5] holds 2: 1 and 2 fill it, so 3 and 4 are in B
    out = qi_linkage(boxes([(0, 1, 5, 2), (1, 3, 8, 4)]), people([1, 2, 3, 4, 6, 7]), numeric=["x"])
    assert (out.n_pinned, out.n_single_box) == (6, 4)
    assert out.pinned_group.tolist() == [0, 0, 1, 1, 1, 1]


def test_suppressed_respondents_are_not_pinned_by_their_box_alone():
    # one of the three candidates of A = [1, 2] (size 2) was suppressed: none of them is
    # pinned; B = [6, 7] needs both its candidates
    out = qi_linkage(boxes([(0, 1, 2, 2), (1, 6, 7, 2)]), people([1, 2, 2, 6, 7]), numeric=["x"])
    assert (out.n_respondents, out.n_released, out.n_pinned, out.n_single_box) == (5, 4, 2, 5)
    assert out.share_pinned == 0.5


def test_categorical_value_sets_and_hierarchy_nodes():
    released = pd.DataFrame(
        {"qi_group": [0, 1, 1], "x_min": [1, 1, 1], "x_max": [5, 5, 5], "sex": ["{F}", "{F,M}", "{F,M}"]}
    )
    pop = pd.DataFrame({"x": [1, 2, 3], "sex": ["F", "F", "M"]})
    out = qi_linkage(released, pop, numeric=["x"], categorical=["sex"])
    assert out.pinned_group.tolist() == [-1, -1, 1]  # the man is in group 1; one woman in each
    released["sex"] = ["F", "any", "any"]
    out = qi_linkage(released, pop, numeric=["x"], categorical=["sex"], leaves={"sex": {"any": ["F", "M"]}})
    assert out.pinned_group.tolist() == [-1, -1, 1]


def test_bad_inputs():
    with pytest.raises(InputError, match="x_max"):
        qi_linkage(boxes([(0, 1, 2, 1)]).drop(columns="x_max"), people([1]), numeric=["x"])
    with pytest.raises(InputError, match="do not fit"):
        qi_linkage(boxes([(0, 1, 2, 2)]), people([1, 9]), numeric=["x"])
    with pytest.raises(InputError, match="only 1 respondents"):
        qi_linkage(boxes([(0, 1, 2, 2)]), people([1]), numeric=["x"])
    empty = qi_linkage(boxes([]), people([1]), numeric=["x"])
    assert empty.n_pinned == 0 and np.isnan(empty.share_pinned)


def brute_pinned(inside, sizes):
    """Group of each respondent if the same in every assignment (enumeration), else -1."""
    n, g = inside.shape
    seen = [set() for _ in range(n)]
    for choice in itertools.product(range(g + 1), repeat=n):  # g = not released
        c = np.array(choice)
        if any((c == k).sum() != s for k, s in enumerate(sizes)):
            continue
        if all(k == g or inside[r, k] for r, k in enumerate(c)):
            for r, k in enumerate(c):
                seen[r].add(k)
    return [next(iter(s)) if len(s) == 1 and g not in s else -1 for s in seen]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_pinned_equals_brute_force(data):
    n = data.draw(st.integers(1, 6))
    xs = data.draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    g = data.draw(st.integers(1, 3))
    # a true assignment first (some respondents not released), then boxes around it
    assign = data.draw(st.lists(st.integers(0, g), min_size=n, max_size=n))
    spec = []
    for k in range(g):
        members = [x for x, a in zip(xs, assign) if a == k]
        if not members:
            continue
        pad = data.draw(st.tuples(st.integers(0, 2), st.integers(0, 2)))
        spec.append((k, min(members) - pad[0], max(members) + pad[1], len(members)))
    out = qi_linkage(boxes(spec), people(xs), numeric=["x"])
    labels = [k for k, *_ in spec]
    inside = np.array([[lo <= x <= hi for _, lo, hi, _ in spec] for x in xs]).reshape(n, len(spec))
    expected = brute_pinned(inside, [s for *_, s in spec])
    assert out.pinned_group.tolist() == expected
    for k, p in zip(assign, out.pinned_group):  # sound: a pinned respondent is where she is
        assert p == -1 or labels[p] == k


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    out = tmp_path_factory.mktemp("link")
    mh = medical_history(n_views=2, view_size=300, seed=4)
    path = write_history(out, mh, policy_extra={"privacy": {"max_suppression": 1.0}})
    runs = {}
    for method, t, j in (("jsreduce", 0.5, 0.8), ("mondrian-l", 1.0, 1.0)):
        policy = ReleasePolicy.from_toml(path, t=t, j=j, k=3, npartitions=1, max_suppression=1.0)
        runs[method] = release_history(mh.history, policy, out / f"led-{method}", method=method)
    return mh, runs


@pytest.mark.slow
def test_mondrian_pins_every_released_respondent_jsreduce_fewer(released):
    mh, runs = released
    qi = ["age", "gender", "weight"]
    got = {}
    for method, led in runs.items():
        for i in (1, 2):
            view = mh.history[mh.history["view"] == i]
            got[method, i] = qi_linkage(led.read_view(i), view, numeric=qi)
    for i in (1, 2):
        mond, js = got["mondrian-l", i], got["jsreduce", i]
        if mond.n_released == mond.n_respondents:  # nothing suppressed: disjoint boxes pin all
            assert mond.n_pinned == mond.n_released
        assert js.n_pinned < mond.n_pinned


def test_qi_vectors_number_equal_rows_alike_on_either_path(monkeypatch):
    """One number per distinct QI vector of the two tables together (53 and 53.0 alike, text by
    its text), the same partition whether the codes are combined or the rows sorted."""
    import dpriv.adversary.linkage as lk

    original = pd.DataFrame({"age": [53, 53, 40, 40], "sex": ["F", "M", "F", "F"]})
    table = pd.DataFrame({"age": [53.0, 40.0, 41.0], "sex": ["M", "F", "F"]})
    got = {}
    for name, limit in (("radix", lk.RADIX_LIMIT), ("sorted", 0.0)):
        monkeypatch.setattr(lk, "RADIX_LIMIT", limit)
        x_orig, x_rel, n_vec = lk.qi_vectors(original, table, ["age", "sex"])
        assert n_vec == 4  # 53 F, 53 M, 40 F, 41 F
        assert x_orig[2] == x_orig[3] == x_rel[1] and x_orig[1] == x_rel[0]
        assert len({x_orig[0], x_orig[1], x_orig[2], x_rel[2]}) == 4
        got[name] = (x_orig, x_rel)
    # the same partition: equal pairs of rows on one path are equal on the other
    a, b = (np.concatenate(got[k]) for k in ("radix", "sorted"))
    assert ((a[:, None] == a[None, :]) == (b[:, None] == b[None, :])).all()
