"""Forward-backward kernel (dpriv.adversary.smoothing) against brute-force enumeration."""

import itertools

import numpy as np
import pytest

from dpriv.adversary.smoothing import ABS, OBS, CompiledTables, forward_backward
from dpriv.errors import InputError
from dpriv.knowledge.tables import ClassMap, MarkovTables

M = 4  # stages 0, 1, 2 (no jump 0 <-> 2) and 3 = terminal


def _allowed_move(a: int, b: int) -> bool:
    return a != 3 and not {a, b} == {0, 2}


def hand_tables(order: int, seed: int = 0) -> MarkovTables:
    """Two classes; random rows with the forbidden moves and everything after 3 zeroed."""
    rng = np.random.default_rng(seed)
    classes = ClassMap(("x",), ((5,),), (True,))
    tabs = []
    for L in range(order + 1):
        t = rng.uniform(0.05, 1.0, size=(2, M**L, M))
        for k, ctx in enumerate(itertools.product(range(M), repeat=L)):
            ok = all(_allowed_move(a, b) for a, b in zip(ctx, ctx[1:]))
            if not ok or (L and ctx[-1] == 3):
                t[:, k] = 0.0
            elif L:
                for v in range(M):
                    if not _allowed_move(ctx[-1], v):
                        t[:, k, v] = 0.0
        t[:, :, :] /= np.where(t.sum(axis=2, keepdims=True) > 0, t.sum(axis=2, keepdims=True), 1)
        tabs.append(t)
    return MarkovTables(tuple("abcd"), classes, tabs)


def _enumerate(tables, c, steps, q, target, omit, t, ctx, vals, w, acc):
    """Depth-first over every result (and exam / no exam at an absence) of steps t.."""
    if w == 0.0:
        return
    if t == len(steps):
        acc[vals[target]] += w
        return
    kind, e, sig = steps[t]
    L = min(len(ctx), tables.order)
    row = tables.tables[L][c, tables.context_index(np.array([ctx[len(ctx) - L :]]))[0] if L else 0]
    if kind == OBS:
        if row.sum() == 0:  # exited: cannot be observed
            return
        for v in range(M):
            f = 1.0 if (omit and t == target) else e[v]
            _enumerate(
                tables, c, steps, q, target, omit, t + 1, [*ctx, v], {**vals, t: v}, w * row[v] * f, acc
            )
    elif row.sum() == 0:  # exited: stays absent
        _enumerate(tables, c, steps, q, target, omit, t + 1, ctx, vals, w, acc)
    else:
        _enumerate(tables, c, steps, q, target, omit, t + 1, ctx, vals, w * (1 - q), acc)
        for v in range(M):
            _enumerate(tables, c, steps, q, target, omit, t + 1, [*ctx, v], vals, w * q * sig * row[v], acc)


def brute_force(tables, c, steps, q=None, omit=False):
    """Enumerate every result sequence (and, for absences, exam or not) of one respondent.

    steps: list of (kind, emission (M,), sigma). Returns, for every OBS step, the marginal
    distribution of its value with all factors (smoothed) or, with ``omit``, with the
    emission of that step left out (the cavity).
    """
    result = {}
    for target in [t for t, (k, _, _) in enumerate(steps) if k == OBS]:
        acc = np.zeros(M)
        _enumerate(tables, c, steps, q, target, omit, 0, [], {}, 1.0, acc)
        result[target] = acc / acc.sum()
    return result


def run_kernel(tables, c, steps, q=None, backward=True):
    kind = np.array([k for k, _, _ in steps], dtype=np.int8)
    em = np.array([e for _, e, _ in steps], dtype=np.float64)
    sig = np.array([s for _, _, s in steps], dtype=np.float64)
    out = np.zeros((len(steps), M))
    live = forward_backward(
        CompiledTables(tables),
        np.array([0]),
        np.array([0]),
        np.array([len(steps)]),
        kind,
        em,
        sig,
        np.array([c]),
        out,
        attendance=q,
        backward=backward,
    )
    return out, live


def random_steps(rng, kinds, sigma=0.3):
    steps = []
    for k in kinds:
        e = rng.uniform(0, 1, M) * (rng.uniform(size=M) < 0.8)
        steps.append((k, e if k == OBS else np.zeros(M), sigma if k == ABS else 0.0))
    return steps


@pytest.mark.parametrize("order", [1, 2, 3])
@pytest.mark.parametrize("n_steps", [2, 3, 4])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_observed_histories_match_enumeration(order, n_steps, seed):
    tables = hand_tables(order, seed)
    rng = np.random.default_rng(100 + seed)
    c = seed % 2
    steps = random_steps(rng, [OBS] * n_steps)
    steps[0] = (OBS, np.ones(M), 0.0) if seed == 2 else steps[0]
    cav, _ = run_kernel(tables, c, steps)
    want_cav = brute_force(tables, c, steps, omit=True)
    want_smooth = brute_force(tables, c, steps)
    for t in range(n_steps):
        np.testing.assert_allclose(cav[t], want_cav[t], rtol=0, atol=1e-12)
        smooth = cav[t] * steps[t][1]
        np.testing.assert_allclose(smooth / smooth.sum(), want_smooth[t], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "kinds", [[OBS, ABS, OBS], [OBS, OBS, ABS], [OBS, ABS, ABS, OBS], [OBS, ABS, OBS, ABS]]
)
@pytest.mark.parametrize("q", [0.6, 1.0])
def test_absences_match_enumeration(kinds, q):
    tables = hand_tables(2, seed=5)
    rng = np.random.default_rng(7)
    steps = random_steps(rng, kinds, sigma=0.25)
    cav, live = run_kernel(tables, 1, steps, q=q)
    want = brute_force(tables, 1, steps, q=q, omit=True)
    for t, w in want.items():
        np.testing.assert_allclose(cav[t], w, rtol=0, atol=1e-12)
    assert 0 <= live[0] <= 1


def test_exit_channel_absent_with_nothing_suppressed_means_terminal():
    """q = 1 and sigma = 0: absent at the next release => the last released value was 3."""
    tables = hand_tables(2, seed=3)
    steps = [(OBS, np.ones(M), 0.0), (OBS, np.ones(M), 0.0), (ABS, np.zeros(M), 0.0)]
    cav, live = run_kernel(tables, 0, steps, q=1.0)
    np.testing.assert_allclose(cav[1], [0, 0, 0, 1], atol=1e-15)
    assert live[0] == 0.0
    # without the absence the last value is not pinned
    cav2, live2 = run_kernel(tables, 0, steps[:2])
    assert cav2[1, 3] < 1 and live2[0] > 0


def test_forward_only_gives_the_prediction_of_the_last_step():
    tables = hand_tables(3, seed=1)
    rng = np.random.default_rng(3)
    steps = random_steps(rng, [OBS] * 4)
    full, _ = run_kernel(tables, 0, steps)
    fwd, _ = run_kernel(tables, 0, steps, backward=False)
    np.testing.assert_allclose(fwd[3], full[3], atol=1e-15)
    assert (fwd[:3] == 0).all()  # untouched
    # prediction = tables.predict on the observed context when the emissions are one-hot
    onehot = [(OBS, np.eye(M)[v], 0.0) for v in (0, 1, 1)] + [(OBS, np.ones(M), 0.0)]
    fwd, _ = run_kernel(tables, 1, onehot, backward=False)
    np.testing.assert_allclose(fwd[3], tables.predict(np.array([1]), np.array([[0, 1, 1]]))[0], atol=1e-15)


def test_infeasible_observation_restarts_from_bksv():
    tables = hand_tables(1, seed=0)
    # a value after the terminal one
    steps = [(OBS, np.eye(M)[3], 0.0), (OBS, np.array([1.0, 1.0, 0, 0]), 0.0)]
    cav, _ = run_kernel(tables, 0, steps)
    np.testing.assert_allclose(cav[1], tables.tables[0][0, 0], atol=1e-15)
    assert np.isfinite(cav).all()


def test_absences_need_an_attendance():
    tables = hand_tables(1)
    with pytest.raises(InputError, match="attendance"):
        run_kernel(tables, 0, [(OBS, np.ones(M), 0.0), (ABS, np.zeros(M), 0.1)])
