import itertools

import numpy as np
import pytest

from dpriv.errors import InputError
from dpriv.knowledge.revision import revise
from dpriv.knowledge.tables import ClassMap, MarkovTables, TableKnowledge, single_class_map

TWO_CLASSES = ClassMap(("gender",), (("F", "M"),), (False,))


def _tables(values, tabs, classes=None):
    return MarkovTables(tuple(values), classes or single_class_map(), [np.asarray(t) for t in tabs])


def _hist(*posts, w=None):
    """One respondent's history (1, W, M), left-padded with NaN."""
    posts = np.asarray(posts, dtype=float)
    w = w or len(posts)
    h = np.full((1, w, posts.shape[1]), np.nan)
    if len(posts):
        h[0, w - len(posts) :] = posts
    return h


@pytest.mark.parametrize("method", ["dense", "sparse", "auto"])
def test_order1_hand_computed(method):
    kn = _tables("ab", [[[[0.5, 0.5]]], [[[0.9, 0.1], [0.2, 0.8]]]])
    out = revise(_hist([0.3, 0.7]), np.array([1]), np.array([0]), kn, np.array([[0.5, 0.5]]), method=method)
    np.testing.assert_allclose(out, [[0.41, 0.59]])


@pytest.mark.parametrize("method", ["dense", "sparse"])
def test_order2_hand_computed_with_forbidden_context(method):
    t2 = [[[1.0, 0.0], [0.0, 0.0], [0.5, 0.5], [0.0, 1.0]]]  # context (a, b) forbidden
    kn = _tables("ab", [[[[0.5, 0.5]]], [[[0.9, 0.1], [0.2, 0.8]]], t2])
    # weights: aa .125, ab .375 (dropped), ba .125, bb .375 -> (.1875, .4375) / .625
    out = revise(
        _hist([0.5, 0.5], [0.25, 0.75]),
        np.array([2]),
        np.array([0]),
        kn,
        np.array([[0.5, 0.5]]),
        method=method,
    )
    np.testing.assert_allclose(out, [[0.3, 0.7]])
    # length 1 with an order-2 model uses the order-1 table
    out1 = revise(
        _hist([0.5, 0.5], [0.25, 0.75]),
        np.array([1]),
        np.array([0]),
        kn,
        np.array([[0.5, 0.5]]),
        method=method,
    )
    np.testing.assert_allclose(out1, [[0.25 * 0.9 + 0.75 * 0.2, 0.25 * 0.1 + 0.75 * 0.8]])


def _terminal_model():
    """M=3 (a, b, deceased), order 2; nothing may follow 'deceased' (code 2)."""
    m = 3
    t1 = np.array([[[0.6, 0.3, 0.1], [0.2, 0.6, 0.2], [0, 0, 0]]])
    t2 = np.zeros((1, 9, 3))
    for a, b in itertools.product(range(3), repeat=2):
        if 2 not in (a, b):
            t2[0, a * m + b] = [0.5, 0.3, 0.2] if a == b else [0.3, 0.5, 0.2]
    return _tables(["a", "b", "deceased"], [[[[0.4, 0.4, 0.2]]], t1, t2])


@pytest.mark.parametrize("method", ["dense", "sparse"])
def test_forbidden_history_falls_back(method):
    kn = _terminal_model()
    fb = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.2, 0.2, 0.6]])
    hist = np.concatenate(
        [
            _hist([0, 0, 1.0], [0.5, 0.5, 0]),  # deceased then something: all forbidden
            _hist([0.5, 0.5, 0], [0, 0, 1.0]),  # last value surely deceased
            _hist([0.5, 0.5, 0], [0.5, 0.5, 0]),  # length 0 -> fallback whatever history says
            _hist([0.5, 0.5, 0], [0.2, 0.2, 0.6]),  # partly feasible: renormalised
        ]
    )
    out = revise(hist, np.array([2, 2, 0, 2]), np.zeros(4, int), kn, fb, method=method)
    np.testing.assert_allclose(out[:3], fb[:3])
    # row 3: feasible contexts (a|b, a|b) with weights .25*.2/.. each -> equal mass on
    # same (aa, bb) and different (ab, ba) pairs -> average of the two rows
    np.testing.assert_allclose(out[3], [0.4, 0.4, 0.2])


def test_classes_pick_their_tables():
    t1 = np.array([[[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [0.0, 1.0]]])
    kn = _tables("ab", [np.full((2, 1, 2), 0.5), t1], TWO_CLASSES)
    hist = np.concatenate([_hist([0.5, 0.5])] * 2)
    out = revise(hist, np.array([1, 1]), np.array([0, 1]), kn, np.full((2, 2), 0.5))
    np.testing.assert_allclose(out, [[1, 0], [0, 1]])
    # a SequentialKnowledge works as well as its tables
    out2 = revise(hist, np.array([1, 1]), np.array([0, 1]), TableKnowledge(kn), np.full((2, 2), 0.5))
    np.testing.assert_allclose(out2, out)


def _random_model(rng, m, order, n_classes, p_zero=0.3):
    classes = ClassMap(("c",), (tuple(range(n_classes)),), (False,))
    tabs = []
    for L in range(order + 1):
        t = rng.dirichlet(np.ones(m), size=(n_classes, m**L))
        if L:
            t[rng.random((n_classes, m**L)) < p_zero] = 0.0
        tabs.append(t)
    return MarkovTables(tuple(str(v) for v in range(m)), classes, tabs)


def _sparse_posteriors(rng, shape, m, kmax):
    p = rng.dirichlet(np.ones(m), size=shape)
    k = rng.integers(1, kmax + 1, size=shape)
    ranks = np.argsort(rng.random((*shape, m)), axis=-1).argsort(axis=-1)
    p[ranks >= k[..., None]] = 0.0
    return p / p.sum(axis=-1, keepdims=True)


def _oracle(hist_row, length, c, kn, fb_row):
    """(E5)/(E6) by enumerating every full value sequence of the respondent."""
    m, order, w = kn.n_values, kn.order, hist_row.shape[0]
    if length == 0:
        return fb_row
    posts = hist_row[w - length :] if length <= w else None
    assert posts is not None
    num, tot = np.zeros(m), 0.0
    for lam in itertools.product(range(m), repeat=length):
        p = np.prod([posts[i][v] for i, v in enumerate(lam)])
        ctx = lam[max(0, length - order) :]
        code = 0
        for v in ctx:
            code = code * m + v
        row = kn.tables[len(ctx)][c, code]
        if not row.any():
            continue
        num += p * row
        tot += p
    return num / tot if tot > 0 else fb_row


@pytest.mark.parametrize("seed,m,order", [(0, 2, 1), (1, 3, 2), (2, 3, 3), (3, 4, 2)])
def test_against_bruteforce_enumeration(seed, m, order):
    rng = np.random.default_rng(seed)
    n, w = 40, 4
    kn = _random_model(rng, m, order, n_classes=2)
    hist = _sparse_posteriors(rng, (n, w), m, kmax=m)
    lengths = rng.integers(0, w + 1, size=n)
    cls = rng.integers(0, 2, size=n)
    fb = rng.dirichlet(np.ones(m), size=n)
    expect = np.array([_oracle(hist[i], lengths[i], cls[i], kn, fb[i]) for i in range(n)])
    for method in ("dense", "sparse", "auto"):
        got = revise(hist, lengths, cls, kn, fb, method=method)
        np.testing.assert_allclose(got, expect, atol=1e-12)


def _m19_case(seed: int, n: int, window: int, kmax: int, max_length: int):
    """Order-3 tables on M = 19 values in 3 classes and ``n`` respondents with ``window``
    posteriors of at most ``kmax`` nonzeros: (knowledge, history, lengths, classes, BK^sv)."""
    rng = np.random.default_rng(seed)
    kn = _random_model(rng, 19, 3, n_classes=3, p_zero=0.2)
    hist = _sparse_posteriors(rng, (n, window), 19, kmax=kmax)
    lengths = rng.integers(0, max_length + 1, size=n)
    return kn, hist, lengths, rng.integers(0, 3, size=n), rng.dirichlet(np.ones(19), size=n)


def test_dense_equals_sparse_m19():
    kn, hist, lengths, cls, fb = _m19_case(7, 300, 5, kmax=6, max_length=7)
    dense = revise(hist, lengths, cls, kn, fb, method="dense")
    sparse = revise(hist, lengths, cls, kn, fb, method="sparse")
    np.testing.assert_allclose(dense, sparse, atol=1e-12)
    np.testing.assert_allclose(dense.sum(axis=1), 1.0)


def test_input_errors():
    kn = _terminal_model()
    fb = np.full((1, 3), 1 / 3)
    with pytest.raises(InputError, match="keep at least"):
        revise(_hist([1.0, 0, 0]), np.array([3]), np.array([0]), kn, fb)
    with pytest.raises(InputError, match="sensitive values"):
        revise(np.full((1, 2, 2), 0.5), np.array([1]), np.array([0]), kn, fb)
    with pytest.raises(InputError, match="classes"):
        revise(_hist([1.0, 0, 0], [1.0, 0, 0]), np.array([1]), np.array([4]), kn, fb)
    with pytest.raises(InputError, match="method"):
        revise(_hist([1.0, 0, 0], [1.0, 0, 0]), np.array([1]), np.array([0]), kn, fb, method="fast")


def test_long_histories_read_only_the_last_order_posteriors():
    rng = np.random.default_rng(4)
    kn = _random_model(rng, 3, 2, n_classes=1, p_zero=0.0)
    hist = _sparse_posteriors(rng, (5, 2), 3, kmax=3)
    fb = np.full((5, 3), 1 / 3)
    cls = np.zeros(5, int)
    np.testing.assert_allclose(
        revise(hist, np.full(5, 9), cls, kn, fb), revise(hist, np.full(5, 2), cls, kn, fb)
    )


@pytest.mark.parametrize("kmax", [3, 19])
def test_sparse_and_auto_have_the_dense_bits(kmax):
    # auto always enumerates (issue 13, item 3): it must give the dense kernel's bits, not
    # only close values, or the releases made before the change could not be reproduced;
    # kmax = 19 is the fully dense case, 20 % of the table rows infeasible
    rng = np.random.default_rng(11)
    m, order, n = 19, 3, 200
    kn = _random_model(rng, m, order, n_classes=2, p_zero=0.2)
    hist = _sparse_posteriors(rng, (n, 3), m, kmax=kmax)
    lengths = rng.integers(0, 5, size=n)
    cls = rng.integers(0, 2, size=n)
    fb = rng.dirichlet(np.ones(m), size=n)
    dense = revise(hist, lengths, cls, kn, fb, method="dense")
    assert not np.array_equal(dense, fb)  # revised, not the fallback everywhere
    for method in ("sparse", "auto"):
        assert np.array_equal(revise(hist, lengths, cls, kn, fb, method=method), dense), method


def test_sparse_table_rows_keep_the_dense_bits():
    # mined IE rows hold ~6 nonzeros of 19: the enumeration (its last level a plain loop over
    # the nonzero entries of the last posterior) must still give every bit of the dense sums
    rng = np.random.default_rng(12)
    m, order, n = 19, 3, 200
    kn = _random_model(rng, m, order, n_classes=2, p_zero=0.2)
    tabs = [kn.tables[0]]
    for t in kn.tables[1:]:
        t = t * (rng.random(t.shape) < 0.3)  # ~70 % of each row's entries zero
        rows = t.sum(axis=2, keepdims=True)
        tabs.append(np.divide(t, rows, out=np.zeros_like(t), where=rows > 0))
    kn = MarkovTables(kn.values, kn.classes, tabs)
    assert 0.5 < np.mean(kn.tables[3] == 0) < 0.9
    hist = _sparse_posteriors(rng, (n, 3), m, kmax=8)
    lengths = rng.integers(0, 5, size=n)
    cls = rng.integers(0, 2, size=n)
    fb = rng.dirichlet(np.ones(m), size=n)
    dense = revise(hist, lengths, cls, kn, fb, method="dense")
    assert (~np.isclose(dense, fb).all(axis=1)).sum() > n // 2  # most rows revised
    for method in ("sparse", "auto"):
        assert np.array_equal(revise(hist, lengths, cls, kn, fb, method=method), dense), method


def test_order_zero_tables_give_their_class_row():
    # an order-0 model (no BK^seq): a respondent with posteriors is revised over the empty
    # context only, i.e. to her class's row of tables[0], not to the fallback
    t0 = np.array([[[0.5, 0.25, 0.25]], [[0.0, 0.0, 1.0]]])
    kn = MarkovTables(("a", "b", "c"), ClassMap(("c",), ((0, 1),), (False,)), [t0])
    hist = np.full((3, 1, 3), 1 / 3)
    fb = np.full((3, 3), 1 / 3)
    for method in ("dense", "sparse"):
        got = revise(hist, np.array([2, 1, 0]), np.array([1, 0, 1]), kn, fb, method=method)
        np.testing.assert_array_equal(got, [[0.0, 0.0, 1.0], [0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]])


@pytest.mark.parametrize("method", ["dense", "sparse"])
def test_each_row_has_the_same_bits_in_any_batch(method):
    # the Dask path revises the rows of each hash partition of the id together, and which
    # rows share a partition depends on the number of partitions (dpriv.rbk.with_state):
    # a respondent's RBK must not depend on the other rows of its batch, nor on their order
    n = 240
    kn, hist, lengths, cls, fb = _m19_case(13, n, 3, kmax=7, max_length=4)
    whole = revise(hist, lengths, cls, kn, fb, method=method)
    assert not np.array_equal(whole, fb)  # revised, so that the comparison can fail
    perm = np.random.default_rng(14).permutation(n)
    for part in np.array_split(perm, [7, 50, 51, 130]):
        got = revise(hist[part], lengths[part], cls[part], kn, fb[part], method=method)
        assert np.array_equal(got, whole[part])
