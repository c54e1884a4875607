import hashlib
import json
import os
import re
import shutil
import stat

import numpy as np
import pandas as pd
import pytest

import dpriv.io as io_mod
import dpriv.ledger as ledger_mod
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError, LedgerError, PolicyError
from dpriv.knowledge.tables import MarkovTables
from dpriv.ledger import Ledger
from dpriv.policy import ReleasePolicy
from dpriv.rbk import revised_priors
from dpriv.release import release_history
from dpriv.state import empty_state, update_state


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    out = tmp_path_factory.mktemp("hist")
    mh = medical_history(n_views=3, view_size=400, seed=1)
    policy = ReleasePolicy.from_toml(write_history(out, mh), t=0.5, j=0.8, npartitions=2, max_suppression=1.0)
    return mh, policy


def files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_release_writes_every_view_and_rerun_is_a_noop(setting, tmp_path):
    mh, policy = setting
    led = release_history(mh.history, policy, tmp_path / "led")
    assert [r["index"] for r in led.committed()] == [1, 2, 3]
    for i in (1, 2, 3):
        view = led.read_view(i)
        assert not {"respondent_id", "_hkey", "_tie", "_label"} & set(view.columns)
        m = led.read_metrics(i)
        n_view = int((mh.history.view == i).sum())
        assert m["n_original"] == n_view and len(view) == n_view - m["n_suppressed"]
        assert m["k_achieved"] >= policy.k and m["t_achieved"] <= policy.t
    # the sensitive state is private to its owner
    assert stat.S_IMODE(os.stat(led.state_path(1)).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(led.state_path(1).parent).st_mode) == 0o700
    before = files(tmp_path / "led")
    release_history(mh.history, policy, tmp_path / "led")
    assert files(tmp_path / "led") == before


def test_changed_input_or_policy_is_refused(setting, tmp_path):
    mh, policy = setting
    release_history(mh.history, policy, tmp_path / "led", until=1)
    changed = mh.history.copy()
    changed.loc[changed.view == 1, "age"] = 45
    with pytest.raises(InputError, match="view 1 differs"):
        release_history(changed, policy, tmp_path / "led")
    with pytest.raises(LedgerError, match=r"policy differs.*\['k'\]: k: 5 recorded, 6 given\)"):
        release_history(mh.history, policy.with_overrides(k=6), tmp_path / "led")
    # a gate added to an ungated ledger: the keys it brings are named as not set before
    with pytest.raises(LedgerError, match=r"retro_max_gain: not set recorded, 0\.1 given"):
        release_history(mh.history, policy.with_overrides(retro_max_gain=0.1), tmp_path / "led")


def test_another_qi_or_sensitive_column_is_told_as_the_policy_change_not_as_edited_rows(setting, tmp_path):
    """A drill: ``--qi age,gender`` on a ledger released with age, gender, weight was told "view 1
    differs ...: a row was added, removed or edited" (the view digests were compared first)."""
    mh, policy = setting
    release_history(mh.history, policy, tmp_path / "led", until=1)
    before = files(tmp_path / "led")
    fewer = policy.with_overrides(
        qi=["age", "gender"], domains={q: policy.domains[q] for q in ("age", "gender", policy.sensitive)}
    )
    with pytest.raises(
        LedgerError,
        match=r"policy differs .*\(fields \['qi'\]: qi: \[\"age\", \"gender\", \"weight\"\] recorded, "
        r"\[\"age\", \"gender\"\] given\)",
    ):
        release_history(mh.history, fewer, tmp_path / "led")
    moved = {**{q: policy.domains[q] for q in policy.qi}, "s2": policy.domains[policy.sensitive]}
    with pytest.raises(
        LedgerError, match=r"policy differs .*\(fields \['sensitive'\]: sensitive: \"exam_result\" recorded"
    ):
        release_history(
            mh.history.assign(s2=mh.history[policy.sensitive]),
            policy.with_overrides(sensitive="s2", domains=moved),
            tmp_path / "led",
        )
    # an edited row of a committed view is still told as such, also when it moves an inferred domain
    inferred = policy.with_overrides(domains={q: policy.domains[q] for q in ("gender", policy.sensitive)})
    release_history(mh.history, inferred, tmp_path / "inf", until=1)
    edited = mh.history.copy()
    edited.loc[edited.index[edited.view == 1][0], "age"] = int(mh.history["age"].max()) + 5
    with pytest.raises(InputError, match="view 1 differs from the one committed"):
        release_history(edited, inferred, tmp_path / "inf")
    assert files(tmp_path / "led") == before


def test_not_a_ledger_and_history_with_a_gap(setting, tmp_path):
    mh, policy = setting
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("mine")
    with pytest.raises(LedgerError, match="not a ledger"):
        release_history(mh.history, policy, tmp_path / "x")
    gap = mh.history[mh.history.view != 2]
    with pytest.raises(InputError, match="consecutive release indices"):
        release_history(gap, policy, tmp_path / "led")
    later = mh.history[mh.history.view == 3]  # only a later view: the advice is to add views 1, 2
    with pytest.raises(InputError, match=r"found \[3\]: a history holds every view from the first on"):
        release_history(later, policy, tmp_path / "led")


@pytest.mark.slow
@pytest.mark.parametrize("step", ["verify", "view.parquet", "state.parquet", "manifest"])
def test_failure_at_any_step_leaves_the_last_commit_and_resume_is_identical(
    setting, tmp_path, monkeypatch, step
):
    mh, policy = setting
    clean = release_history(mh.history, policy, tmp_path / "clean")
    release_history(mh.history, policy, tmp_path / "led", until=1)
    before = files(tmp_path / "led")
    if step == "verify":  # the release loop's part-by-part check (dpriv.release_check)
        import dpriv.release_check as check_mod

        monkeypatch.setattr(check_mod, "verify_release", _boom)
    else:
        real = ledger_mod.atomic_write

        def failing(path, data, mode=0o644):
            if path.name.lstrip(".").startswith(step.split(".")[0]):  # a staged file too
                raise OSError("disk full")
            real(path, data, mode)

        monkeypatch.setattr(ledger_mod, "atomic_write", failing)  # the manifest
        monkeypatch.setattr(io_mod, "atomic_write", failing)  # every Parquet file (write_parquet)
    with pytest.raises((OSError, RuntimeError)):
        release_history(mh.history, policy, tmp_path / "led")
    assert Ledger(tmp_path / "led").last_index() == 1
    assert json.loads((tmp_path / "led" / "manifest.json").read_text()) == json.loads(before["manifest.json"])
    monkeypatch.undo()
    release_history(mh.history, policy, tmp_path / "led")
    for i in (1, 2, 3):
        pd.testing.assert_frame_equal(Ledger(tmp_path / "led").read_view(i), clean.read_view(i))


def _boom(*a, **k):
    raise RuntimeError("verifier crashed")


def test_first_timers_get_bk_sv_and_returning_respondents_their_own_state(setting):
    mh, policy = setting
    tables = mh.knowledge
    m = len(policy.sensitive_domain)
    view = mh.history[mh.history.view == 1].head(6).reset_index(drop=True)
    state = empty_state(policy, tables.order)
    rbk = revised_priors(view, state, tables, policy, tables.order)
    np.testing.assert_allclose(rbk, tables.tables[0][tables.classes.classify(view), 0])
    # respondent A had one posterior at release 1 and skipped release 2: her revision at 3
    # uses her own posterior through the order-1 table, not someone else's
    post = np.zeros((2, m))
    post[0, 0] = 1.0  # A surely liver_1
    post[1, 5] = 1.0  # B surely hiv_1
    assigned = pd.DataFrame({policy.id: [view[policy.id][0], view[policy.id][1]], "_label": [7, 8]})
    state = update_state(state, assigned, post, policy, tables.order, index=1)
    assert state["n_post"].tolist() == [1, 1] and state["last_release"].tolist() == [1, 1]
    later = view.head(2).assign(view=3)
    rbk = revised_priors(later, state, tables, policy, tables.order)
    cls = tables.classes.classify(later)
    np.testing.assert_allclose(rbk[0], tables.tables[1][cls[0], 0])  # context <liver_1>
    np.testing.assert_allclose(rbk[1], tables.tables[1][cls[1], 5])  # context <hiv_1>


def test_a_refused_first_release_records_no_policy_and_knowledge_is_pinned(setting, tmp_path):
    mh, policy = setting
    src = policy.knowledge_path("dk")
    own = tmp_path / "dk.npz"  # a knowledge file of this ledger's own, changed in place below
    shutil.copy(src, own)
    policy = policy.with_overrides(knowledge={**policy.knowledge, "dk": str(own)})
    strict = policy.with_overrides(t=0.0, j=0.0, max_suppression=0.05)
    with pytest.raises(PolicyError, match="max_suppression"):
        release_history(mh.history, strict, tmp_path / "led")
    assert not (tmp_path / "led" / "policy.json").exists()
    led = release_history(mh.history, policy, tmp_path / "led", until=1)  # the advised fix works
    assert led.last_index() == 1
    stored = json.loads((tmp_path / "led" / "policy.json").read_text())
    assert stored["knowledge_sha256"] == hashlib.sha256(own.read_bytes()).hexdigest()
    tables = MarkovTables.load(own)
    flat = MarkovTables(
        tables.values, tables.classes, [np.full_like(t, 1 / t.shape[-1]) for t in tables.tables]
    )
    flat.save(own)  # same path, another model
    with pytest.raises(LedgerError) as caught:
        release_history(mh.history, policy, tmp_path / "led")
    # the message names the file that changed, not only the digest field
    said = str(caught.value)
    assert f"the knowledge file {own} ([knowledge] dk) changed since this ledger recorded it" in said
    assert "put the original file back" in said
    with pytest.raises(LedgerError, match=r"\['knowledge_sha256', 't'\]"):  # with another field: the fields
        release_history(mh.history, policy.with_overrides(t=0.31), tmp_path / "led")


def test_the_same_knowledge_file_under_another_path_continues_the_ledger(setting, tmp_path):
    # a policy file in another folder names the same files by other relative paths: what is
    # pinned is their content (knowledge_sha256), not the text of the path
    mh, policy = setting
    led = release_history(mh.history, policy, tmp_path / "led", until=1)
    elsewhere = tmp_path / "copy" / "dk.npz"
    elsewhere.parent.mkdir()
    shutil.copy(policy.knowledge_path("dk"), elsewhere)
    moved = policy.with_overrides(knowledge={**policy.knowledge, "dk": str(elsewhere)})
    assert release_history(mh.history, moved, tmp_path / "led", until=2).last_index() == 2
    tables = MarkovTables.load(elsewhere)
    MarkovTables(
        tables.values, tables.classes, [np.full_like(t, 1 / t.shape[-1]) for t in tables.tables]
    ).save(elsewhere)
    with pytest.raises(LedgerError, match="changed since this ledger recorded it"):  # other content: refused
        release_history(mh.history, moved, tmp_path / "led")
    extra = policy.with_overrides(knowledge={**policy.knowledge, "dk-9": str(elsewhere)})
    with pytest.raises(LedgerError, match=r"fields \['knowledge'\]"):  # another source: refused
        release_history(mh.history, extra, tmp_path / "led")
    assert led.last_index() == 2


def test_state_join_keeps_one_dtype_per_column_across_partitions(setting):
    """The view's left join with the state: a partition of returning respondents and one of
    first-timers must give every column the meta's dtype. With ``last_group`` (63-bit QI-group
    labels) in the join, the first-timers' partition held float64 where the other held int64,
    and the following P2P shuffle failed on labels > 2**53 (seen on CI, dask 2025.5)."""
    import dask.dataframe as dd

    from dpriv.rbk import rbk_state

    mh, policy = setting
    tables = mh.knowledge
    view = mh.history[mh.history.view == 1].head(8).reset_index(drop=True)
    post = np.full((4, len(policy.sensitive_domain)), 1.0 / len(policy.sensitive_domain))
    assigned = pd.DataFrame({policy.id: view[policy.id][:4], "_label": [2**62 + 1] * 4})
    state = update_state(empty_state(policy, tables.order), assigned, post, policy, tables.order, index=1)
    returning, new = dd.from_pandas(view[:4], npartitions=1), dd.from_pandas(view[4:], npartitions=1)
    for part in (returning, new):
        joined = part.merge(dd.from_pandas(rbk_state(state), npartitions=1), on=policy.id, how="left")
        got = joined.compute()
        assert got.dtypes.to_dict() == joined._meta.dtypes.to_dict()
        assert "last_group" not in got.columns
    # and the revision reads n_post through the nullable dtype: returning respondents differ
    rbk = revised_priors(view, state, tables, policy, tables.order)
    first = tables.tables[0][tables.classes.classify(view), 0]
    np.testing.assert_allclose(rbk[4:], first[4:])
    assert not np.allclose(rbk[:4], first[:4])


def test_knowledge_over_another_order_of_the_sensitive_values_says_what_to_declare(setting):
    from dpriv.sources import defender_knowledge

    _, policy = setting
    domain = list(policy.sensitive_domain)
    swapped = policy.with_overrides(domains={**policy.domains, policy.sensitive: domain[::-1]})
    with pytest.raises(PolicyError) as caught:
        defender_knowledge(swapped)
    said = str(caught.value)
    assert "the same values in another order" in said
    assert f"declare [domains] {policy.sensitive} = {[str(v) for v in domain]}" in said
    fewer = policy.with_overrides(domains={**policy.domains, policy.sensitive: domain[:-1]})
    with pytest.raises(PolicyError, match=re.escape(f"values only in the tables: [{str(domain[-1])!r}]")):
        defender_knowledge(fewer)
