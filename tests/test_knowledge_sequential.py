import numpy as np
import pandas as pd
import pytest

from dpriv.errors import InputError
from dpriv.knowledge.revision import revise
from dpriv.knowledge.sequential import IEMiner, MiningParams, mine_sequences
from dpriv.knowledge.tables import (
    ClassMap,
    MarkovTables,
    SequentialKnowledge,
    TableKnowledge,
    single_class_map,
)

AB = ("a", "b")


def _tiny():
    # r1: a, b, b (views 1-3); r2: b, -, a (gap ignored: context of view 3 is <b>)
    return pd.DataFrame(
        {
            "respondent_id": ["r1", "r2", "r1", "r1", "r2"],
            "view": [1, 1, 2, 3, 3],
            "s": [0, 1, 1, 1, 0],
        }
    )


def test_single_class_map():
    cm = single_class_map()
    assert cm.n_classes == 1
    assert (cm.classify(pd.DataFrame({"x": [1, 2, 3]})) == 0).all()


def test_hand_computed_counts_mu1():
    kn = mine_sequences(_tiny(), AB, order=2)
    assert kn.order == 2 and kn.classes.n_classes == 1
    t0, t1, t2 = kn.tables
    np.testing.assert_allclose(t0[0, 0], [0.4, 0.6])  # counts a:2, b:3
    np.testing.assert_allclose(t1[0], [[0, 1], [0.5, 0.5]])  # a->b ; b->b, b->a
    # only (a, b) was seen (-> b); the others back off to their last value
    np.testing.assert_allclose(t2[0], [[0, 1], [0, 1], [0, 1], [0.5, 0.5]])


def test_backoff_when_mu_not_reached():
    kn = mine_sequences(_tiny(), AB, order=2, mu=2)
    t0, t1, t2 = kn.tables
    np.testing.assert_allclose(t0[0, 0], [0.4, 0.6])
    np.testing.assert_allclose(t1[0, 0], [0.4, 0.6])  # 'a' seen once -> marginal
    np.testing.assert_allclose(t1[0, 1], [0.5, 0.5])  # 'b' seen twice -> own counts
    np.testing.assert_allclose(t2[0, 1], [0.5, 0.5])  # (a, b) seen once -> context <b>
    np.testing.assert_allclose(t2[0, 0], [0.4, 0.6])  # (a, a) -> <a> -> marginal
    # a support nothing reaches: every row is zero (revision falls back to BK^sv)
    kn6 = mine_sequences(_tiny(), AB, order=1, mu=6)
    assert not kn6.tables[0].any() and not kn6.tables[1].any()


def test_alpha_smoothing_formula():
    kn = mine_sequences(_tiny(), AB, order=2, alpha=1.0)
    t0, t1, t2 = kn.tables
    np.testing.assert_allclose(t0[0, 0], [3 / 7, 4 / 7])  # (2+1)/(5+2), (3+1)/(5+2)
    np.testing.assert_allclose(t1[0, 0], [1 / 3, 2 / 3])  # (0+1)/(1+2), (1+1)/(1+2)
    np.testing.assert_allclose(t1[0, 1], [0.5, 0.5])
    np.testing.assert_allclose(t2[0, 1], [1 / 3, 2 / 3])
    np.testing.assert_allclose(t2[0, 0], [1 / 3, 2 / 3])  # unseen -> backs off to <a>


def test_terminal_contexts_are_forbidden():
    df = pd.concat([_tiny(), pd.DataFrame({"respondent_id": ["r3", "r3"], "view": [1, 2], "s": [0, 2]})])
    vals = ("a", "b", "deceased")
    plain = mine_sequences(df, vals, order=2)
    assert plain.tables[1][0, 2].any()  # back-off predicts something after deceased
    for terminal in ([2], "auto"):
        kn = mine_sequences(df, vals, order=2, terminal=terminal)
        assert not kn.tables[1][0, 2].any()
        codes = np.arange(9)
        forbidden = (codes // 3 == 2) | (codes % 3 == 2)
        assert not kn.tables[2][0, forbidden].any()
        assert kn.tables[2][0, ~forbidden].any(axis=1).all()
    # revision of someone surely deceased at the last release falls back to BK^sv
    hist = np.array([[[0.0, 0.0, 1.0]]])
    fb = np.array([[0.2, 0.3, 0.5]])
    out = revise(hist, np.array([1]), np.array([0]), mine_sequences(df, vals, order=2, terminal=[2]), fb)
    np.testing.assert_allclose(out, fb)


def _random_history(seed, n_resp=60, n_views=7, m=4, n_classes=3):
    rng = np.random.default_rng(seed)
    rows = []
    for v in range(n_views):
        present = rng.random(n_resp) < 0.7
        for r in np.flatnonzero(present):
            rows.append((f"p{r}", v, int(rng.integers(0, m)), int(r % n_classes)))
    df = pd.DataFrame(rows, columns=["respondent_id", "view", "s", "cls"])
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)  # scrambled rows


@pytest.mark.parametrize("order,mu,alpha", [(3, 1, 0.0), (2, 3, 0.5), (1, 1, 0.0)])
def test_incremental_equals_batch(order, mu, alpha):
    df = _random_history(order)
    values = tuple("wxyz")
    classes = ClassMap(("k",), ((0, 1, 2),), (False,))
    batch = mine_sequences(df, values, order=order, mu=mu, alpha=alpha, class_col="cls", classes=classes)
    miner = IEMiner(values, order=order, mu=mu, alpha=alpha, class_col="cls", classes=classes)
    for _, view in df.groupby("view", sort=True):
        miner.update(view)
    inc = miner.tables()
    assert isinstance(miner, SequentialKnowledge)
    for a, b in zip(batch.tables, inc.tables, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-15)
    # the per-respondent state keeps the last `order` values
    last = df.sort_values("view").groupby("respondent_id")["s"].last()
    np.testing.assert_array_equal(miner.state.loc[last.index].iloc[:, -1].to_numpy(), last)
    # predict reads the same tables
    ctx = np.array([[-1, 1, 2], [0, 1, 2]])[:, -order:]
    np.testing.assert_allclose(miner.predict(np.array([0, 2]), ctx), batch.predict(np.array([0, 2]), ctx))


def test_counts_match_python_loop():
    """Algorithm 3 Update, literally, as an independent oracle for the vectorised counts."""
    df = _random_history(11, n_resp=30, n_views=6, m=3, n_classes=1)
    order, m = 2, 3
    cnt = {}
    seq: dict[str, list[int]] = {}
    for _, view in df.sort_values("view").groupby("view"):
        for r, s in zip(view["respondent_id"], view["s"], strict=True):
            past = seq.setdefault(r, [])
            for L in range(min(order, len(past)) + 1):
                key = tuple(past[len(past) - L :])
                cnt.setdefault(key, np.zeros(m))[s] += 1
            past.append(s)
    miner = IEMiner(tuple("abc"), order=order)
    for _, view in df.groupby("view"):
        miner.update(view)
    for key, c in cnt.items():
        code = 0
        for v in key:
            code = code * m + v
        np.testing.assert_array_equal(miner.counts[len(key)][0, code], c)
    assert sum(c.sum() for c in cnt.values()) == sum(c.sum() for c in miner.counts)


def test_table_knowledge_roundtrip(tmp_path):
    kn = mine_sequences(_tiny(), AB, order=2)
    kn.save(tmp_path / "k.npz")
    tk = TableKnowledge.load(tmp_path / "k.npz")
    assert isinstance(tk.as_tables(), MarkovTables)
    np.testing.assert_allclose(tk.predict(np.array([0]), np.array([[0, 1]])), [[0, 1]])


def test_errors():
    df = _tiny()
    with pytest.raises(InputError, match="two observations"):
        mine_sequences(pd.concat([df, df.iloc[:1]]), AB)
    with pytest.raises(InputError, match="codes outside"):
        mine_sequences(df.assign(s=[0, 1, 2, 0, 0]), AB)
    with pytest.raises(InputError, match="not found"):
        mine_sequences(df, AB, s_col="exam")
    miner = IEMiner(AB, order=2)
    miner.update(df[df.view == 2])
    with pytest.raises(InputError, match="time order"):
        miner.update(df[df.view == 1])
    two_views = pd.DataFrame({"respondent_id": ["r1", "r2"], "view": [5, 6], "s": [0, 1]})
    with pytest.raises(InputError, match="one 'view' value"):
        miner.update(two_views)
    with pytest.raises(InputError, match="class_col"):
        mine_sequences(df, AB, classes=ClassMap(("k",), ((0, 1),), (False,)))


def test_mining_params_is_the_one_parameter_set_of_batch_and_incremental():
    # one MiningParams drives both miners; it equals the same fields given as keywords
    params = MiningParams(order=2, mu=2, time_col="t", s_col="x")
    df = _tiny().rename(columns={"view": "t", "s": "x"})
    by_params = mine_sequences(df, AB, params)
    by_fields = mine_sequences(df, AB, order=2, mu=2, time_col="t", s_col="x")
    default_mu = mine_sequences(df, AB, order=2, time_col="t", s_col="x")
    for a, b in zip(by_params.tables, by_fields.tables, strict=True):
        np.testing.assert_array_equal(a, b)
    # mu = 2 backs the order-1 context <b> (seen twice) off nowhere, <a> (once) to the marginal
    assert not np.array_equal(by_params.tables[1], default_mu.tables[1])
    miner = IEMiner(AB, params)
    assert (miner.order_, miner.mu, miner.time_col, miner.s_col) == (2, 2, "t", "x")
    with pytest.raises(InputError, match="not both"):
        mine_sequences(df, AB, params, order=3)
    with pytest.raises(InputError, match="time_col"):
        mine_sequences(df, AB, time_col=None)
