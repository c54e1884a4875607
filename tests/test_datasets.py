"""Tests of the synthetic medical history generator (dpriv.datasets)."""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pandas as pd
import pytest

from dpriv.datasets import (
    CLASS_MAP,
    DISEASES,
    VALUES,
    MedicalHistory,
    medical_history,
    toml_dumps,
    write_history,
)
from dpriv.datasets.model import class_index
from dpriv.errors import InputError
from dpriv.knowledge.tables import MarkovTables

M = len(VALUES)
TERMINAL_CODES = (M - 2, M - 1)
DISEASE_OF = np.concatenate([np.full(k, d) for d, (_, k) in enumerate(DISEASES)] + [[-1, -1]])


@pytest.fixture(scope="module")
def small() -> MedicalHistory:
    return medical_history(12, 400, seed=3, weight_view_size=3000)


@pytest.fixture(scope="module")
def gappy() -> MedicalHistory:
    return medical_history(16, 600, attendance=0.5, seed=4, weight_view_size=3000)


@pytest.fixture(scope="module")
def default_run() -> MedicalHistory:
    """The paper-size default run (24 x 5,000, q = 1): the one moderate check."""
    return medical_history()


def _codes(h: pd.DataFrame) -> np.ndarray:
    idx = pd.Index(list(VALUES)).get_indexer(h["exam_result"].to_numpy())
    assert (idx >= 0).all()
    return idx


def _by_respondent(h: pd.DataFrame) -> pd.DataFrame:
    s = h.sort_values(["respondent_id", "view"], kind="stable").reset_index(drop=True)
    s["code"] = _codes(s)
    s["pos"] = s.groupby("respondent_id").cumcount()
    return s


def _transitions(h: pd.DataFrame, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(class, context code, next value) of every exam predicted by the order-L table.

    L < 3: the respondent's (L+1)-th exam; L = 3: every exam after the third.
    """
    s = _by_respondent(h)
    code = s["code"].to_numpy()
    pos = s["pos"].to_numpy()
    rows = np.flatnonzero(pos == length) if length < 3 else np.flatnonzero(pos >= 3)
    ctx = np.zeros(rows.size, dtype=np.int64)
    for back in range(length, 0, -1):
        ctx = ctx * M + code[rows - back]
    cls = CLASS_MAP.classify(s.iloc[rows])
    return cls, ctx, code[rows]


def _check_against_table(table: np.ndarray, cls, ctx, nxt, min_count: int) -> int:
    """Empirical next-value frequencies vs the exact rows; returns #contexts checked.

    Every observed transition must have positive model probability. On contexts with at
    least ``min_count`` observations, each frequency must lie within 6 binomial standard
    deviations (+ 3/N for the discreteness of rare values) of the model probability.
    """
    probs = table[cls, ctx, nxt]
    assert (probs > 0).all(), "a transition the model forbids was generated"
    key = cls * table.shape[1] + ctx
    keys, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    checked = 0
    for i in np.flatnonzero(counts >= min_count):
        n = counts[i]
        emp = np.bincount(nxt[inv == i], minlength=M) / n
        p = table[keys[i] // table.shape[1], keys[i] % table.shape[1]]
        bound = 6 * np.sqrt(p * (1 - p) / n) + 3 / n
        assert (np.abs(emp - p) <= bound).all(), (keys[i], emp, p)
        checked += 1
    return checked


# ---------------------------------------------------------------------------- basics


def test_values_and_classmap() -> None:
    assert len(VALUES) == 19
    assert VALUES[:5] == tuple(f"liver_{i}" for i in range(1, 6))
    assert VALUES[5:9] == tuple(f"hiv_{i}" for i in range(1, 5))
    assert VALUES[9:12] == tuple(f"alzheimer_{i}" for i in range(1, 4))
    assert VALUES[12:17] == tuple(f"sepsis_{i}" for i in range(1, 6))
    assert VALUES[17:] == ("deceased", "discharged")
    assert CLASS_MAP.n_classes == 18
    assert CLASS_MAP.qi == ("age", "weight", "gender")
    grid = pd.DataFrame(
        [(a, w, g) for a in range(45, 75) for w in range(60, 90) for g in (1, 2)],
        columns=["age", "weight", "gender"],
    )
    cls = CLASS_MAP.classify(grid)
    assert np.array_equal(
        cls, class_index(grid.age.to_numpy(), grid.weight.to_numpy(), grid.gender.to_numpy())
    )
    # thirds of 10 values each, gender last
    assert cls[(grid.age == 45) & (grid.weight == 60) & (grid.gender == 1)].tolist() == [0]
    assert cls[(grid.age == 74) & (grid.weight == 89) & (grid.gender == 2)].tolist() == [17]
    assert np.bincount(cls).tolist() == [100] * 18


def test_schema_and_order(small: MedicalHistory) -> None:
    h = small.history
    assert list(h.columns) == ["respondent_id", "view", "age", "gender", "weight", "exam_result"]
    for c in ["respondent_id", "view", "age", "gender", "weight"]:
        assert h[c].dtype == np.int64, c
    assert pd.api.types.is_string_dtype(h["exam_result"])
    assert set(h["exam_result"]) <= set(VALUES)
    assert h["view"].is_monotonic_increasing
    assert h["view"].min() == 1 and h["view"].max() == 12
    # shuffled inside each view, not sorted by id
    assert not all(g["respondent_id"].is_monotonic_increasing for _, g in h.groupby("view"))
    assert h["age"].between(45, 74).all()
    assert h["weight"].between(60, 89).all()
    assert set(h["gender"]) == {1, 2}
    assert small.values == VALUES and small.classmap == CLASS_MAP
    assert small.knowledge.order == 3


def test_sizes_one_tuple_per_respondent_per_view(small: MedicalHistory, gappy) -> None:
    for mh, size in ((small, 400), (gappy, 600)):
        h = mh.history
        assert (h.groupby("view").size() == size).all()
        assert not h.duplicated(["view", "respondent_id"]).any()


def test_bad_arguments() -> None:
    for kwargs in (
        {"n_views": 0},
        {"view_size": 0},
        {"attendance": 0.0},
        {"attendance": 1.5},
        {"det": -0.1},
        {"det": 1.1},
        {"seed": -1},
    ):
        with pytest.raises(InputError):
            medical_history(**{"n_views": 2, "view_size": 10, **kwargs})
    with pytest.raises(InputError):
        medical_history(2, 10).n_step(4)


# ---------------------------------------------------------------------------- determinism


def test_determinism() -> None:
    a = medical_history(6, 300, seed=11, weight_view_size=1000)
    b = medical_history(6, 300, seed=11, weight_view_size=1000)
    pd.testing.assert_frame_equal(a.history, b.history)
    for ta, tb in zip(a.knowledge.tables, b.knowledge.tables, strict=True):
        assert np.array_equal(ta, tb)
    for n in (1, 2):
        assert np.array_equal(a.n_step(n).tables[n], b.n_step(n).tables[n])
    c = medical_history(6, 300, seed=12, weight_view_size=1000)
    assert not a.history.equals(c.history)
    assert not np.array_equal(a.knowledge.tables[0], c.knowledge.tables[0])
    assert not np.array_equal(a.knowledge.tables[3], c.knowledge.tables[3])


# ---------------------------------------------------------------------------- histories


@pytest.mark.parametrize("which", ["small", "gappy"])
def test_histories_are_feasible(which: str, request) -> None:
    mh = request.getfixturevalue(which)
    s = _by_respondent(mh.history)
    g = s.groupby("respondent_id")
    # fixed QIs
    assert (g[["age", "gender", "weight"]].nunique() == 1).all().all()
    # a terminal value is the respondent's last tuple
    terminal = s["code"].isin(TERMINAL_CODES)
    last = s["pos"] == g["pos"].transform("max")
    assert not (terminal & ~last).any()
    # one disease for life
    dis = pd.Series(DISEASE_OF[s["code"]], index=s.index)
    assert (dis[~terminal].groupby(s["respondent_id"][~terminal]).nunique() == 1).all()
    # nobody starts with a terminal value
    assert not terminal[s["pos"] == 0].any()
    # stage moves by at most one between consecutive exams
    same = s["respondent_id"].to_numpy()[1:] == s["respondent_id"].to_numpy()[:-1]
    code = s["code"].to_numpy()
    ok = same & ~np.isin(code[1:], TERMINAL_CODES)
    assert (np.abs(code[1:] - code[:-1])[ok] <= 1).all()


def test_weekly_attendance_has_no_gaps(small: MedicalHistory) -> None:
    s = _by_respondent(small.history)
    g = s.groupby("respondent_id")["view"]
    assert (g.diff().dropna() == 1).all()
    # with q = 1 a respondent without a terminal result is examined until the last view
    last = s.groupby("respondent_id").tail(1)
    open_ = _codes(last) < M - 2
    assert (last["view"][open_] == 12).all()


def test_attendance_below_one_gives_gaps(gappy: MedicalHistory) -> None:
    s = _by_respondent(gappy.history)
    gaps = s.groupby("respondent_id")["view"].diff().dropna()
    assert (gaps > 1).mean() > 0.2
    assert gappy.n_respondents > medical_history(16, 600, seed=4).n_respondents


# ---------------------------------------------------------------------------- tables


@pytest.mark.parametrize("which", ["small", "gappy"])
def test_table_rows_sum_to_one_or_zero(which: str, request) -> None:
    mh = request.getfixturevalue(which)
    for n in (1, 2, 3):
        kt = mh.n_step(n)
        assert kt.order == n
        for L, tab in enumerate(kt.tables):
            assert tab.shape == (18, M**L, M) and tab.dtype == np.float64
            sums = tab.sum(axis=2)
            assert np.all(np.isclose(sums, 1.0) | (sums == 0.0)), (n, L)
            assert (tab >= 0).all()


def test_forbidden_contexts_are_zero_rows(small: MedicalHistory) -> None:
    tabs = small.knowledge.tables
    assert np.allclose(tabs[0][:, 0, list(TERMINAL_CODES)], 0.0)
    for L in (1, 2, 3):
        ctx = np.array(np.unravel_index(np.arange(M**L), (M,) * L)).T  # (M**L, L)
        dis = DISEASE_OF[ctx]
        mixed = (dis != dis[:, :1]).any(axis=1) | (dis == -1).any(axis=1)
        jump = (np.abs(np.diff(ctx, axis=1)) > 1).any(axis=1) if L > 1 else np.zeros(len(ctx), bool)
        nz = tabs[L].sum(axis=2) > 0  # (18, M**L)
        assert not nz[:, mixed | jump].any(), L
        assert nz[:, ~(mixed | jump)].all(), L
        # the next value stays in the disease or is terminal
        for c in range(M**L):
            if mixed[c] or jump[c]:
                continue
            allowed = (DISEASE_OF == dis[c, 0]) | (DISEASE_OF == -1)
            assert np.allclose(tabs[L][:, c, ~allowed], 0.0)


def test_classes_have_spread_priors(small: MedicalHistory) -> None:
    bk = small.knowledge.tables[0][:, 0, :]  # (18, 19) BK^sv
    tv = 0.5 * np.abs(bk[:, None] - bk[None]).sum(-1)
    assert tv[np.triu_indices(18, 1)].mean() > 0.3
    assert (tv + np.eye(18) > 0.05).all()


def test_order3_knowledge_depends_on_older_values(small: MedicalHistory) -> None:
    t3 = small.knowledge.tables[3].reshape(18, M, M * M, M)  # (class, oldest, last two, next)
    nz = t3.sum(-1) > 0
    groups = hits = 0
    for c in range(18):
        for bc in range(M * M):
            rows = t3[c, nz[c, :, bc], bc]
            if len(rows) < 2:
                continue
            groups += 1
            hits += (0.5 * np.abs(rows[:, None] - rows[None]).sum(-1)).max() > 0.05
    assert groups > 500 and hits / groups > 0.4


def test_hazards_grow_with_stage(small: MedicalHistory) -> None:
    t1 = small.knowledge.tables[1][:, :17, :]  # short-history rows, one per stage
    off = 0
    for _, k in DISEASES:
        death = t1[:, off : off + k, M - 2]
        assert (np.diff(death, axis=1) > 0).all()
        off += k


def test_n_step_tables_differ(small: MedicalHistory) -> None:
    w = small.context_weights()
    assert w.shape == (18, M**3) and w.sum() > 0
    full = np.array(np.unravel_index(np.arange(M**3), (M,) * 3)).T
    seen = np.flatnonzero(w.sum(axis=0) > 0)
    cls = np.repeat(np.arange(18), seen.size)
    ctx = np.tile(full[seen], (18, 1))
    keep = w[cls, np.tile(seen, 18)] > 0
    cls, ctx = cls[keep], ctx[keep]
    pred = {n: small.n_step(n).predict(cls, ctx) for n in (1, 2, 3)}
    assert small.n_step(3) is small.knowledge
    for a, b in ((1, 2), (2, 3), (1, 3)):
        tv = 0.5 * np.abs(pred[a] - pred[b]).sum(-1)
        assert (tv > 0.05).mean() > 0.15, (a, b, (tv > 0.05).mean())
    # lower orders are kept exact (short histories, docs/findings.md pitfall 2)
    d1 = small.n_step(1)
    assert np.array_equal(d1.tables[0], small.knowledge.tables[0])
    assert not np.allclose(d1.tables[1], small.knowledge.tables[1])


def test_n_step_is_the_weighted_marginal(small: MedicalHistory) -> None:
    w = small.context_weights()  # (18, M**3)
    t3 = small.knowledge.tables[3]
    for n in (1, 2):
        older = M ** (3 - n)
        wn = w.reshape(18, older, M**n)
        num = (t3.reshape(18, older, M**n, M) * wn[..., None]).sum(1)
        den = wn.sum(1)
        seen = den > 0
        assert seen.sum() > 50
        tn = small.n_step(n).tables[n]
        assert np.allclose(tn[seen], num[seen] / den[seen][:, None])
        # unseen n-contexts keep the generator's own order-n row
        assert np.array_equal(tn[~seen], small.knowledge.tables[n][~seen])


# ---------------------------------------------------------------------------- exactness


def test_generator_matches_exact_tables(default_run: MedicalHistory) -> None:
    """Empirical frequencies of the default run vs the exact order-0..3 tables."""
    h = default_run.history
    tabs = default_run.knowledge.tables
    # first results per class vs BK^sv
    s = _by_respondent(h)
    first = s[s["pos"] == 0]
    cls0 = CLASS_MAP.classify(first)
    n0 = _check_against_table(tabs[0], cls0, np.zeros(len(first), np.int64), first["code"].to_numpy(), 300)
    assert n0 == 18
    checked = {}
    for L in (1, 2, 3):
        cls, ctx, nxt = _transitions(h, L)
        checked[L] = _check_against_table(tabs[L], cls, ctx, nxt, 100)
    assert checked[1] >= 30 and checked[2] >= 20 and checked[3] >= 100, checked


def test_gappy_transitions_follow_the_tables(gappy: MedicalHistory) -> None:
    tabs = gappy.knowledge.tables
    checked = {}
    for L in (1, 2, 3):
        cls, ctx, nxt = _transitions(gappy.history, L)
        # 16 x 600 at q = 0.5 gives few contexts with many observations: 30 keeps some of
        # every order under the frequency check (6, 4 and 40 with this seed)
        checked[L] = _check_against_table(tabs[L], cls, ctx, nxt, 30)
    assert checked[1] >= 5 and checked[2] >= 3 and checked[3] >= 30, checked


def test_default_run_size(default_run: MedicalHistory) -> None:
    assert len(default_run.history) == 24 * 5000
    assert 14_000 <= default_run.n_respondents <= 18_000


# ---------------------------------------------------------------------------- output


def test_toml_dumps_round_trips() -> None:
    doc = {
        "title": 'a "quoted" \\ string\nwith\tcontrol \x01 chars and ünïcode',
        "n": -3,
        "x": 0.1,
        "big": 1e300,
        "flags": [True, False],
        "inf": math.inf,
        "nested": {"list": [1, 2, 3], "strs": ["a", "b c"], "deep": {"k": "v", "f": 2.5}},
        "odd key": {"dk-1": "knowledge/dk-1.npz", "with.dot": 1},
        "empty": {},
        "mixed": [[1, 2], ["a"]],
    }
    back = tomllib.loads(toml_dumps(doc))
    assert back == doc
    assert math.isnan(tomllib.loads(toml_dumps({"v": math.nan}))["v"])
    with pytest.raises(TypeError):
        toml_dumps({"v": None})


def test_write_history(tmp_path, small: MedicalHistory) -> None:
    extra = {"privacy": {"k": 7}, "release": {"seed": 1}}
    policy_path = write_history(tmp_path / "out", small, extra)
    out = tmp_path / "out"
    assert policy_path == out / "policy.toml"
    policy = tomllib.loads(policy_path.read_text())
    assert policy["columns"] == {
        "id": "respondent_id",
        "time": "view",
        "qi": ["age", "gender", "weight"],
        "sensitive": "exam_result",
    }
    assert policy["domains"] == {
        "age": [45, 74],
        "weight": [60, 89],
        "gender": [1, 2],
        "exam_result": list(VALUES),
    }
    assert policy["privacy"] == {"k": 7, "t": 0.3, "j": 0.1}
    assert policy["release"] == {"seed": 1}
    assert policy["knowledge"]["dk"] == "knowledge/dk.npz"
    for key, rel in policy["knowledge"].items():
        kt = MarkovTables.load(out / rel)
        assert kt.values == VALUES and kt.classes == CLASS_MAP
        order = 3 if key == "dk" else int(key[-1])
        assert kt.order == order
        ref = small.n_step(order)
        for a, b in zip(kt.tables, ref.tables, strict=True):
            assert np.array_equal(a, b)
    back = pd.read_parquet(out / "history.parquet")
    pd.testing.assert_frame_equal(back, small.history)
    assert back["respondent_id"].dtype == np.int64


def test_written_policy_loads_as_release_policy(tmp_path, small: MedicalHistory) -> None:
    policy_mod = pytest.importorskip("dpriv.policy")
    path = write_history(tmp_path, small)
    pol = policy_mod.ReleasePolicy.from_toml(path)
    assert pol.qi == ["age", "gender", "weight"] and pol.time == "view"
    assert pol.sensitive_domain == list(VALUES)
    assert pol.knowledge_path("dk") == (tmp_path / "knowledge" / "dk.npz").resolve()


def test_the_weighting_run_stops_at_weight_views_max():
    """Its memory grew with n_views x 20,000 tuples (--views 20000 --view-size 1 held 10 GB): past
    WEIGHT_VIEWS_MAX views the counted contexts are those of WEIGHT_VIEWS_MAX views."""
    from dpriv.datasets.model import WEIGHT_VIEWS_MAX

    def weights(n_views):
        return medical_history(n_views=n_views, view_size=3, weight_view_size=40, seed=4).context_weights()

    at_cap = weights(WEIGHT_VIEWS_MAX)
    np.testing.assert_array_equal(weights(WEIGHT_VIEWS_MAX + 50), at_cap)
    assert not np.array_equal(weights(WEIGHT_VIEWS_MAX - 50), at_cap)  # below it, n_views counts


@pytest.mark.parametrize(
    "extra, said",
    [
        ({"privacy": {"k": -3}}, r"k: must be a number in \[1, inf\), got -3"),
        ({"bogus": {"x": 1}}, r"unknown table \[bogus\]"),
    ],
)
def test_write_history_refuses_an_unusable_policy_extra_before_writing(tmp_path, extra, said):
    """The drill: ``policy_extra={"privacy": {"k": -3}}`` wrote a policy.toml (recorded as
    generated) that dpriv then could not load."""
    from dpriv.errors import PolicyError

    mh = medical_history(n_views=1, view_size=50, seed=0)
    with pytest.raises(PolicyError, match=said):
        write_history(tmp_path / "out", mh, policy_extra=extra)
    assert not (tmp_path / "out").exists()
