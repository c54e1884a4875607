"""The release gate's reading with stored forward messages (dpriv.adversary.retro_last,
dpriv.adversary.retro_kernels) against the whole-window path it replaces (the oracle:
every as-of snapshot of ``retrospective_posteriors``, the last kept): the same bytes."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpriv.adversary.retro_kernels as rk
import dpriv.adversary.retro_trellis as rt
import dpriv.gate as gate_mod
from dpriv.adversary.observed import ObservedRelease
from dpriv.adversary.retro_last import Reading, read_whole_windows, retrospective_last
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from tests.test_adversary_smoothing import M, hand_tables


def _world(seed: int, n_resp: int = 14, n_rel: int = 6, order: int = 2, present: float = 0.7):
    """Respondents of two classes drawn from the hand tables (value 3 is terminal: an exit),
    entering at random releases, each release attended with probability ``present`` (absent
    ones come back later), groups of 2-4 members, a few suppressed tuples per release."""
    rng = np.random.default_rng(seed)
    tables = hand_tables(order, seed=seed)
    cls = rng.integers(0, 2, n_resp)
    enter = rng.integers(0, max(1, n_rel - 1), n_resp)
    ctx: dict[int, list[int]] = {r: [] for r in range(n_resp)}
    rels = []
    for i in range(n_rel):
        alive = [r for r in range(n_resp) if enter[r] <= i and not (ctx[r] and ctx[r][-1] == 3)]
        members = [r for r in alive if not ctx[r] or rng.uniform() < present]
        if len(members) < 2:
            members = alive[:2] if len(alive) >= 2 else list(range(2))
        vals = []
        for r in members:
            row = tables.predict(np.array([cls[r]]), np.array([([-1] * order + ctx[r])[-order:]]))[0]
            if row.sum() == 0:  # a forced member after her exit: restart from BK^sv
                row = tables.tables[0][cls[r], 0]
            v = int(rng.choice(M, p=row / row.sum()))
            ctx[r].append(v)
            vals.append(v)
        members, vals = np.array(members), np.array(vals)
        perm = rng.permutation(members.size)
        members, vals = members[perm], vals[perm]
        n_groups = max(1, members.size // 3)
        group = np.sort(np.arange(members.size) % n_groups)
        counts = np.zeros((n_groups, M), int)
        np.add.at(counts, (group, vals), 1)
        rels.append(
            ObservedRelease(i + 1, members + 100, group, counts, cls[members], vals, int(rng.integers(0, 3)))
        )
    return tables, rels


def _masks(rels, seed: int, keep: float = 0.7):
    """Random masks that never exclude the truth."""
    rng = np.random.default_rng(seed)
    out = []
    for o in rels:
        mk = rng.uniform(size=(o.respondent.size, M)) < keep
        mk[np.arange(o.respondent.size), o.truth] = True
        out.append(mk)
    return out


def _same(got, want):
    assert got.as_of == want.as_of and got.releases == want.releases
    for a, b in zip(got.posteriors, want.posteriors):
        np.testing.assert_array_equal(a, b)  # bytes, not a tolerance
    if want.allowed is None:
        assert got.allowed is None
    else:
        for a, b in zip(got.allowed, want.allowed):
            np.testing.assert_array_equal(a, b)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    attendance=st.sampled_from([None, 0.6, 1.0]),
    order=st.sampled_from([1, 2]),
    masked=st.booleans(),
)
def test_last_snapshot_is_the_whole_window_paths_bytes(seed, attendance, order, masked):
    tables, rels = _world(seed, order=order)
    masks = _masks(rels, seed) if masked else None
    want = read_whole_windows(rels, tables, masks, attendance)
    _same(retrospective_last(rels, tables, allowed=masks, attendance=attendance), want)


def test_the_world_has_exits_returns_and_late_entries():
    """The seeded worlds exercise what the stored messages must carry: exits (a terminal
    value, then absent for good), returns after an absence and first appearances after
    release 1 (a sanity check of the generator the equality tests rely on)."""
    _, rels = _world(3)
    seen = [set(o.respondent.tolist()) for o in rels]
    exits = sum(int((o.truth == 3).sum()) for o in rels)
    returns = sum(
        1 for i in range(1, len(seen) - 1) for r in seen[i - 1] - seen[i] if r in set().union(*seen[i + 1 :])
    )
    late = len(set().union(*seen[1:]) - seen[0])
    assert exits > 0 and returns > 0 and late > 0


@pytest.mark.parametrize("attendance", [None, 0.6])
def test_a_reading_continues_with_the_next_release_and_starts_over_when_the_past_changes(
    attendance, monkeypatch
):
    tables, rels = _world(11, n_rel=7)
    masks = _masks(rels, 5)
    reading = Reading(tables, attendance)
    backward_rows = []
    real = rt.Trellis.backward

    def spy(self, rows, end, out):
        backward_rows.append(len(rows))
        return real(self, rows, end, out)

    monkeypatch.setattr(rt.Trellis, "backward", spy)
    for n in range(1, len(rels) + 1):  # one release more each time, earlier masks unchanged
        got = reading.read(rels[:n], masks[:n])
        _same(got, read_whole_windows(rels[:n], tables, masks[:n], attendance))
    assert reading.reused == sum(range(1, len(rels)))  # every earlier as-of step taken over
    if attendance is None:  # only the new release's members get a new backward pass
        assert backward_rows == [o.respondent.size for o in rels]
    # a mask of an earlier release tightened (a later deduction): the reading starts over
    tighter = [m.copy() for m in masks]
    o = rels[1]
    wrong = (np.arange(M)[None, :] != o.truth[:, None]) & tighter[1]
    row = int(np.flatnonzero(wrong.any(axis=1))[0])
    tighter[1][row, np.flatnonzero(wrong[row])[0]] = False
    before = reading.reused
    _same(reading.read(rels, tighter), read_whole_windows(rels, tables, tighter, attendance))
    assert reading.reused == before
    # the same number of releases, the last one regrouped (the gate's retry): starts over too
    last = rels[-1]
    regrouped = ObservedRelease(
        last.index, last.respondent, np.zeros_like(last.group), last.counts.sum(axis=0, keepdims=True),
        last.cls, last.truth, last.n_suppressed,
    )  # fmt: skip
    again = [*rels[:-1], regrouped]
    _same(reading.read(again, tighter), read_whole_windows(again, tables, tighter, attendance))
    assert reading.reused == before


def test_full_storage_grows_and_resumes_where_it_stopped(monkeypatch):
    """The flat arrays of the stored messages start tiny and fill many times: the kernel
    stops at a full array and resumes at the step where it stopped (same bytes)."""
    tables, rels = _world(7, n_rel=6)
    want = read_whole_windows(rels, tables, None, 0.6)
    monkeypatch.setattr(rk, "MIN_CAPACITY", 1)
    monkeypatch.setattr(rk, "STATES_PER_STEP", 0)
    reading = Reading(tables, 0.6)
    _same(reading.read(rels), want)
    assert reading.capacity_grown > 3


def test_bad_input_is_refused():
    tables, rels = _world(2)
    with pytest.raises(InputError, match="at least one release"):
        retrospective_last([], tables)
    with pytest.raises(InputError, match="not a callable"):
        retrospective_last(rels, tables, allowed=lambda k: None)
    with pytest.raises(InputError, match="increasing release order"):
        retrospective_last([rels[1], rels[0]], tables)


# ----------------------------------------------------------------------------- in the gate


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    out = tmp_path_factory.mktemp("gate-inc")
    mh = medical_history(n_views=4, view_size=250, seed=5)
    policy = ReleasePolicy.from_toml(write_history(out, mh), t=0.5, j=0.8, npartitions=2, max_suppression=1.0)
    return mh, policy


@pytest.mark.slow
@pytest.mark.parametrize("attendance", [None, 0.5])
@pytest.mark.parametrize("deductions", [True, False])
def test_every_check_of_the_gate_reads_as_the_whole_window_path(
    history, tmp_path, monkeypatch, attendance, deductions
):
    """Every check of a gated release of 4 views (exact deductions on or off, absences as
    evidence or not) gives the same bytes as the whole-window path on the same inputs; without
    deductions the masks of earlier releases do not change, so each check continues the last."""
    mh, policy = history
    if not deductions:
        monkeypatch.setattr(gate_mod, "deductions_available", lambda: False)
    checked = []
    real = gate_mod.RetroGate.read

    def spy(self, observed, tables, masks):
        got = real(self, observed, tables, masks)
        _same(got, read_whole_windows(observed, tables, masks, self.policy.retro_attendance))
        checked.append((got.as_of, self.reading.reused))
        return got

    monkeypatch.setattr(gate_mod.RetroGate, "read", spy)
    release_history(
        mh.history, policy.with_overrides(retro_max_gain=1.0, retro_attendance=attendance), tmp_path / "l"
    )
    assert [a for a, _ in checked] == [1, 2, 3, 4]
    if not deductions:
        assert [r for _, r in checked] == [0, 1, 3, 6]


@pytest.mark.slow
def test_a_resumed_gated_ledger_checks_as_an_uninterrupted_one(history, tmp_path):
    """The gate's reading is rebuilt from the ledger on resume: releases 3-4 after a stop at
    2 get the same gate figures as in one run."""
    mh, policy = history
    gated = policy.with_overrides(retro_max_gain=1.0, retro_attendance=0.5)
    one, two = tmp_path / "one", tmp_path / "two"
    release_history(mh.history, gated, one)
    release_history(mh.history, gated, two, until=2)
    release_history(mh.history, gated, two)

    def gate(led, i):
        g = json.loads((led / "releases" / str(i) / "metrics.json").read_text())["gate"]
        return {k: v for k, v in g.items() if k != "seconds"}

    for i in (1, 2, 3, 4):
        assert gate(one, i) == gate(two, i)
