"""Whole-history revision (E5/E6 over allowed histories, dpriv.adversary.history_revision)
against brute-force enumeration, and against (E7) where the two readings must agree."""

import itertools

import numpy as np
import pytest

from dpriv.adversary.compiled import CompiledTables
from dpriv.adversary.history_revision import PosteriorHistory, revise_history
from dpriv.adversary.smoothing import ABS, OBS
from dpriv.datasets import medical_knowledge
from dpriv.errors import InputError
from dpriv.knowledge.revision import feasible_contexts, revise
from tests.test_adversary_smoothing import M, hand_tables


def _row(tables, c, ctx):
    L = min(len(ctx), tables.order)
    if L == 0:
        return tables.tables[0][c, 0]
    return tables.tables[L][c, tables.context_index(np.array([ctx[len(ctx) - L :]]))[0]]


def brute_force(tables, c, steps, q=None):
    """RBK by enumerating every full history: every value at a posterior step (weight
    PK(v) if the model allows v there, else 0), and at a missing week either no exam (1 - q)
    or a suppressed one (q * sigma * T(v)); exited contexts stay, weight 1. The revised prior
    averages the predictions of the histories whose end context is alive."""
    m = tables.n_values
    num, den = np.zeros(m), 0.0
    gaps = [t for t, (k, _, _) in enumerate(steps) if k == ABS]
    obs_choices = [range(m) if k == OBS else [None] for k, _, _ in steps]
    for vals in itertools.product(*obs_choices):
        # at each gap: None (no exam) or a value
        for hidden in itertools.product(*[[None, *range(m)] for _ in gaps]):
            fill = dict(zip(gaps, hidden))
            ctx, w = [], 1.0
            for t, (kind, pk, sig) in enumerate(steps):
                row = _row(tables, c, ctx)
                exited = row.sum() == 0
                if kind == OBS:
                    v = vals[t]
                    if exited or row[v] <= 0:
                        w = 0.0
                        break
                    w *= pk[v]
                    ctx.append(v)
                elif exited:
                    if fill[t] is not None:
                        w = 0.0
                        break
                elif fill[t] is None:
                    w *= 1 - q
                else:
                    w *= q * sig * row[fill[t]]
                    ctx.append(fill[t])
            row = _row(tables, c, ctx)
            if w > 0 and row.sum() > 0:
                num += w * row
                den += w
    if den <= 0:
        return tables.tables[0][c, 0].copy()
    return num / num.sum()


def run(tables, c, steps, q=None):
    kind = np.array([k for k, _, _ in steps], dtype=np.int8)
    post = np.array([p for _, p, _ in steps], dtype=np.float64).reshape(len(steps), tables.n_values)
    sig = np.array([s for _, _, s in steps], dtype=np.float64)
    out = revise_history(CompiledTables(tables), [0], [len(steps)], kind, post, sig, [c], attendance=q)
    return out[0]


def feasible_weight(tables, post, cls):
    """(E7)'s feasible weight Σ_λ feasible Π_l PK_l(λ_l) of each row of post (n, L, M)."""
    n, length, m = post.shape
    joint = np.ones((n, 1))
    for t in range(length):
        joint = (joint[:, :, None] * post[:, None, t]).reshape(n, -1)
    return (joint * feasible_contexts(tables)[length][cls]).sum(axis=1)


def random_posteriors(rng, n, m=M, density=0.7):
    p = rng.uniform(0, 1, (n, m)) * (rng.uniform(size=(n, m)) < density)
    p[np.arange(n), rng.integers(0, m, n)] += 0.1  # never all zero
    return p / p.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("order", [1, 2, 3])
@pytest.mark.parametrize("length", [1, 2, 4, 5])
@pytest.mark.parametrize("seed", [0, 1])
def test_history_reading_equals_enumeration(order, length, seed):
    tables = hand_tables(order, seed=seed)
    rng = np.random.default_rng(100 + seed)
    for c in (0, 1):
        steps = [(OBS, p, 0.0) for p in random_posteriors(rng, length)]
        np.testing.assert_allclose(run(tables, c, steps), brute_force(tables, c, steps), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "kinds", [(OBS, ABS, OBS), (OBS, ABS, ABS, OBS), (OBS, OBS, ABS), (OBS, ABS, OBS, ABS, OBS)]
)
@pytest.mark.parametrize("q", [0.4, 1.0])
@pytest.mark.parametrize("order", [1, 3])
def test_gaps_step_the_weekly_chain_like_enumeration(kinds, q, order):
    tables = hand_tables(order, seed=2)
    rng = np.random.default_rng(7)
    post = random_posteriors(rng, len(kinds))
    steps = [(k, post[t] if k == OBS else np.zeros(M), 0.3 if k == ABS else 0.0) for t, k in enumerate(kinds)]
    for c in (0, 1):
        np.testing.assert_allclose(run(tables, c, steps, q), brute_force(tables, c, steps, q), atol=1e-12)


def test_a_gap_is_one_hand_computed_weekly_step():
    """Order 1, one class, values (a, b) with T(a) = (0.5, 0.5), T(b) = (0, 1), BK^sv = (1, 0):
    PK_1 = (1, 0) (she is at a), then a missing week with q = 0.5, sigma = 0.2:
    no exam 0.5 -> a; suppressed exam 0.1 -> a (0.05) or b (0.05). Weights a 0.55, b 0.05:
    RBK = (0.55 * (0.5, 0.5) + 0.05 * (0, 1)) / 0.6 = (0.4583.., 0.5416..)."""
    from dpriv.knowledge.tables import ClassMap, MarkovTables

    classes = ClassMap(("x",), ((5,),), (True,))
    t0 = np.array([[[1.0, 0.0]]] * 2)  # two classes, the same tables
    t1 = np.array([[[0.5, 0.5], [0.0, 1.0]]] * 2)
    tables = MarkovTables(("a", "b"), classes, [t0, t1])
    steps = [(OBS, np.array([1.0, 0.0]), 0.0), (ABS, np.zeros(2), 0.2)]
    got = run(tables, 0, steps, q=0.5)
    np.testing.assert_allclose(got, [0.55 * 0.5 / 0.6, (0.55 * 0.5 + 0.05) / 0.6], atol=1e-15)
    # without the attendance the gap is skipped: the prediction from a
    np.testing.assert_allclose(run(tables, 0, steps[:1]), [0.5, 0.5], atol=1e-15)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_agrees_with_the_window_reading_when_the_window_holds_the_history(order):
    """(E7) over the last n' = L posteriors is (E5) when L <= n, the tables' non-zero rows
    are the reachable contexts (hand tables: forbidden moves and exits zeroed) and some
    allowed history has positive weight (else (E7) gives BK^sv, the history reading
    restarts the chain where it broke)."""
    tables = hand_tables(order, seed=4)
    rng = np.random.default_rng(5)
    n = 60
    for length in range(1, order + 1):
        post = random_posteriors(rng, n * length).reshape(n, length, M)
        cls = rng.integers(0, 2, n)
        window = revise(post, np.full(n, length), cls, tables, tables.tables[0][cls, 0])
        hist = PosteriorHistory(M)
        ids = np.arange(n) * 7 + 3
        for t in range(length):
            hist.append(ids[::-1], post[::-1, t], 0.0)  # any order of ids
        got = hist.revise(ids, cls, CompiledTables(tables))
        ok = feasible_weight(tables, post, cls) > 0
        assert ok.sum() > n // 2
        np.testing.assert_allclose(got[ok], window[ok], rtol=0, atol=1e-12)


def test_agrees_with_the_window_reading_on_the_generator_model():
    """Same on the exact medical model (M = 19, order 3): its non-zero rows are the
    reachable contexts, so (E5) and (E7) agree for up to 3 posteriors."""
    tables = medical_knowledge(0)
    rng = np.random.default_rng(0)
    n, m = 200, tables.n_values
    for length in (1, 2, 3):
        # posteriors on a few values each, like Ω posteriors of small groups
        post = random_posteriors(rng, n * length, m=m, density=0.2).reshape(n, length, m)
        cls = rng.integers(0, tables.classes.n_classes, n)
        window = revise(post, np.full(n, length), cls, tables, tables.tables[0][cls, 0])
        hist = PosteriorHistory(m)
        for t in range(length):
            hist.append(np.arange(n), post[:, t], 0.0)
        got = hist.revise(np.arange(n), cls, CompiledTables(tables))
        ok = feasible_weight(tables, post, cls) > 0
        assert ok.sum() > n // 4
        np.testing.assert_allclose(got[ok], window[ok], rtol=0, atol=1e-12)


def test_older_posteriors_matter_beyond_the_window():
    """With L > n the readings differ: order 1, the first posterior pins value 0 of the
    hand tables, from which 2 is unreachable in one move; (E7) reads only the second
    posterior (mass on 2), the history reading excludes the histories through 2."""
    tables = hand_tables(1, seed=0)
    p1 = np.array([1.0, 0.0, 0.0, 0.0])
    p2 = np.array([0.0, 0.5, 0.5, 0.0])
    steps = [(OBS, p1, 0.0), (OBS, p2, 0.0)]
    got = run(tables, 0, steps)
    window = revise(np.array([[p1, p2]]), np.array([2]), np.array([0]), tables, tables.tables[0][[0], 0])[0]
    np.testing.assert_allclose(got, tables.tables[1][0, 1], atol=1e-15)  # she is at 1 for sure
    assert not np.allclose(got, window, atol=1e-3)
    np.testing.assert_allclose(got, brute_force(tables, 0, steps), atol=1e-15)


def test_no_allowed_history_gives_bksv_and_a_restart():
    tables = hand_tables(1, seed=0)
    # one posterior on 3 (terminal: exited) -> nothing alive at the end -> BK^sv
    steps = [(OBS, np.array([0.0, 0.0, 0.0, 1.0]), 0.0)]
    np.testing.assert_allclose(run(tables, 1, steps), tables.tables[0][1, 0], atol=1e-15)
    # 0 then 2 cannot follow: the chain restarts at 2 from BK^sv, then predicts from 2
    steps = [(OBS, np.array([1.0, 0, 0, 0]), 0.0), (OBS, np.array([0, 0, 1.0, 0]), 0.0)]
    np.testing.assert_allclose(run(tables, 0, steps), tables.tables[1][0, 2], atol=1e-15)
    # first-timers (no recorded posterior) get BK^sv
    hist = PosteriorHistory(M)
    hist.append(np.array([5]), np.array([[0.0, 1.0, 0.0, 0.0]]), 0.0)
    got = hist.revise(np.array([5, 9]), np.array([0, 1]), CompiledTables(tables))
    np.testing.assert_allclose(got[0], tables.tables[1][0, 1], atol=1e-15)
    np.testing.assert_allclose(got[1], tables.tables[0][1, 0], atol=1e-15)


def test_gap_steps_only_after_the_first_posterior():
    hist = PosteriorHistory(M)
    rng = np.random.default_rng(1)
    hist.append(np.array([1]), random_posteriors(rng, 1), 0.1)
    hist.append(np.array([2]), random_posteriors(rng, 1), 0.2)
    hist.append(np.array([1, 2]), random_posteriors(rng, 2), 0.3)
    start, end, kind, post, sigma = hist.steps(np.array([2, 1, 4]), absences=True)
    assert kind[start[0] : end[0]].tolist() == [OBS, OBS]  # 2: releases 2, 3
    assert kind[start[1] : end[1]].tolist() == [OBS, ABS, OBS]  # 1: absent at 2
    assert sigma[start[1] + 1] == 0.2
    assert end[2] == start[2]  # never seen
    _, _, kind, _, _ = hist.steps(np.array([1]), absences=False)
    assert kind.tolist() == [OBS, OBS]


def test_input_errors():
    tables = hand_tables(1)
    comp = CompiledTables(tables)
    z = np.zeros((2, M))
    with pytest.raises(InputError, match="attendance"):
        revise_history(comp, [0], [2], np.array([OBS, ABS]), z, np.zeros(2), [0])
    with pytest.raises(InputError, match="attendance"):
        revise_history(comp, [0], [2], np.array([OBS, ABS]), z, np.zeros(2), [0], attendance=1.5)
    with pytest.raises(InputError, match="classes"):
        revise_history(comp, [0], [2], np.array([OBS, OBS]), z, np.zeros(2), [5])
    with pytest.raises(InputError, match="shape"):
        revise_history(comp, [0], [2], np.array([OBS, OBS]), np.zeros((2, M + 1)), np.zeros(2), [0])
