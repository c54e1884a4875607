"""The Anatomy released format (bucketization, issue 12 direction 3): a hand-computed tiny
release, the verifier against tampered tables, byte-identity over Hilbert ranges and the Dask
path, the knowledge order, exact-QI linkage, metrics, and attacks that read an Anatomy ledger
exactly as the generalized ledger with the same groups."""

import hashlib
import json
import os
import shutil

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpriv.adversary.linkage import exact_qi_linkage
from dpriv.anatomy import COUNT, expand_sensitive, sensitive_table
from dpriv.anonymity.verify_anatomy import verify_anatomy
from dpriv.attack import attack
from dpriv.criteria import TCloseness, js_per_group
from dpriv.datasets import medical_history, write_history
from dpriv.errors import LedgerError, PolicyError
from dpriv.generalize import generalize_view
from dpriv.hilbert.keys import hilbert_keys, knowledge_coords, knowledge_keys
from dpriv.ledger import Ledger
from dpriv.metrics.anatomy import association_loss_table, group_qi_span
from dpriv.policy import ReleasePolicy
from dpriv.release import anonymize, release_history
from dpriv.released import GROUP, LABEL, ORDER, public, qig_table, released_columns
from dpriv.validate import validate_view
from tests.test_properties import views_and_policies

EXAMPLES = int(os.environ.get("DPRIV_HYPOTHESIS_EXAMPLES", "25"))
A, B = [0.9, 0.1], [0.1, 0.9]


def tiny():
    """Six respondents; priors A for ages 20, 22, 24 and B for 21, 23, 25 (not QI-local)."""
    view = pd.DataFrame(
        {
            "rid": [10, 11, 12, 13, 14, 15],
            "age": [20, 21, 22, 23, 24, 25],
            "s": ["x", "x", "x", "y", "y", "y"],
        }
    )
    priors = np.array([A, B, A, B, A, B])
    view["p__x"], view["p__y"] = priors[:, 0], priors[:, 1]
    policy = ReleasePolicy(
        id="rid",
        qi=["age"],
        sensitive="s",
        domains={"age": [20, 25], "s": ["x", "y"]},
        k=3,
        t=0.2,
        j=0.1,
        release_format="anatomy",
    )
    return view, policy


def test_knowledge_coords_are_hellinger_coordinates():
    got = knowledge_coords(np.array([[0.25, 0.75], [1.0, 0.0]]))
    np.testing.assert_allclose(got, [[0.5, np.sqrt(0.75)], [1.0, 0.0]])


def test_knowledge_key_by_hand_and_its_order():
    # M = 4: 2 bits per value, 14 bits per probability; top value 1 (0.6), second 2 (0.3)
    key = knowledge_keys(np.array([[0.1, 0.6, 0.3, 0.0]]))[0]
    assert int(key) == (1 << 30) | (int(0.6 * 2**14) << 16) | (2 << 14) | int(0.3 * 2**14)
    priors = np.array(
        [
            [0.0, 0.1, 0.0, 0.9],  # top 3
            [0.7, 0.3, 0.0, 0.0],  # top 0, second 1
            [0.0, 0.5, 0.0, 0.5],  # a tie: the lower value (1) is the top
            [0.9, 0.0, 0.1, 0.0],  # top 0 with more confidence
        ]
    )
    order = np.argsort(knowledge_keys(priors), kind="stable")
    np.testing.assert_array_equal(order, [1, 3, 2, 0])


def test_the_anatomy_key_ignores_the_qis():
    view, policy = tiny()
    moved = view.assign(age=[25, 24, 23, 22, 21, 20])
    np.testing.assert_array_equal(hilbert_keys(view, policy), hilbert_keys(moved, policy))
    # the generalized key does depend on them
    gen = policy.with_overrides(release_format="generalized")
    assert not np.array_equal(hilbert_keys(view, gen), hilbert_keys(moved, gen))


def test_tiny_release_by_hand():
    # JS of all six (A and B mixed) = 1 - H(0.9, 0.1) = 0.531 bits > j = 0.1: the only groups
    # of 3 with JS 0 are the A's {20, 22, 24} (s = x, x, y) and the B's {21, 23, 25} (x, y, y),
    # each with EMD 1/2 (|2/3 - 1/2| + |1/3 - 1/2|) = 1/6 <= t = 0.2. A generalized release would
    # need box 20..24 and 21..25 (overlapping); Anatomy publishes the exact ages.
    view, policy = tiny()  # ages 20, 22, 24 (A) hold x, x, y; ages 21, 23, 25 (B) hold x, y, y
    summary = validate_view(view, policy)
    out = generalize_view(view, policy, summary)
    assert out.n_suppressed == 0 and out.table is None
    assert list(out.released.columns) == [GROUP, "age", ORDER]
    members = out.assigned.groupby(LABEL)["age"].apply(sorted).tolist()
    assert sorted(members) == [[20, 22, 24], [21, 23, 25]]
    table = out.sensitive
    assert list(table.columns) == [GROUP, "s", COUNT]
    by_group = {tuple(sorted(g["age"])): g[GROUP].iloc[0] for _, g in out.released.groupby(GROUP)}
    a_counts = table[table[GROUP] == by_group[(20, 22, 24)]].set_index("s")[COUNT].to_dict()
    b_counts = table[table[GROUP] == by_group[(21, 23, 25)]].set_index("s")[COUNT].to_dict()
    assert a_counts == {"x": 2, "y": 1} and b_counts == {"x": 1, "y": 2}
    report = verify_anatomy(
        public(out.released), table, policy, view_counts=summary.s_counts, assigned=out.assigned
    )
    assert report.ok, report.problems
    assert report.k_achieved == 3
    assert report.t_achieved == pytest.approx(1 / 6)
    assert report.j_achieved == pytest.approx(0.0, abs=1e-12)
    # the QI table's rows are not in the input order (seeded shuffle) and hold no id
    assert "rid" not in out.released.columns


def test_anonymize_returns_both_tables_and_honest_metrics():
    view, policy = tiny()
    # anonymize attaches its own one-shot priors: give it the view without them
    res = anonymize(view.drop(columns=["p__x", "p__y"]), policy.with_overrides(j=2.0))
    m = res.metrics
    assert res.sensitive is not None and m["ok"]
    assert m["average_semiperimeter"] == 0.0 and m["gcp_kept"] == 0.0
    # association loss by hand from the published counts: 1 - sum_g sum_s c^2 / n_g / N
    counts = res.sensitive
    n_g = counts.groupby(GROUP)[COUNT].transform("sum")
    assert m["association_loss"] == pytest.approx(1 - (counts[COUNT] ** 2 / n_g).sum() / 6)
    assert m["association_loss_view"] == pytest.approx(0.5)  # 3 x, 3 y


def test_association_loss_and_group_span_by_hand():
    table = pd.DataFrame({GROUP: [1, 1, 2, 2], "s": ["x", "y", "x", "y"], COUNT: [2, 1, 1, 2]})
    # sum c^2 / n_g = (4 + 1) / 3 + (1 + 4) / 3 = 10/3; / N = 6 -> 5/9; loss 4/9
    assert association_loss_table(table) == pytest.approx(4 / 9)
    pure = pd.DataFrame({GROUP: [1, 2], "s": ["x", "y"], COUNT: [3, 3]})
    assert association_loss_table(pure) == 0.0
    view, policy = tiny()
    qi = pd.DataFrame({GROUP: [1, 1, 1, 2, 2, 2], "age": [20, 22, 24, 21, 23, 25]})
    span = group_qi_span(qi, policy)
    np.testing.assert_allclose(span["ncp"].to_numpy(), [0.8, 0.8])  # 4 of a width of 5
    lazy = group_qi_span(dd.from_pandas(qi, npartitions=3), policy)
    np.testing.assert_allclose(lazy["ncp"].to_numpy(), [0.8, 0.8])


def _tiny_release():
    view, policy = tiny()
    summary = validate_view(view, policy)
    out = generalize_view(view, policy, summary)
    return public(out.released), out.sensitive, out.assigned, policy, summary


def test_verifier_rejects_tampered_tables():
    qi, table, assigned, policy, summary = _tiny_release()
    ok = verify_anatomy(qi, table, policy, view_counts=summary.s_counts, assigned=assigned)
    assert ok.ok, ok.problems
    # a count moved from x to y inside a group (sizes unchanged): only the membership sees it
    g = table[GROUP].iloc[0]
    swapped = table.copy()
    rows = swapped[GROUP] == g
    swapped.loc[rows, COUNT] = swapped.loc[rows, COUNT].to_numpy()[::-1]
    bad = verify_anatomy(qi, swapped, policy, view_counts=summary.s_counts, assigned=assigned)
    assert not bad.ok and any("sensitive values differ" in p for p in bad.problems)
    # one more count than QI rows
    more = table.copy()
    more.loc[0, COUNT] += 1
    bad = verify_anatomy(qi, more, policy, view_counts=summary.s_counts)
    assert not bad.ok and any("QI rows and sensitive counts differ" in p for p in bad.problems)
    said = next(p for p in bad.problems if "counts differ" in p)
    assert f"(group {int(more.loc[0, GROUP])}: " in said and "np." not in said  # the label, no NumPy repr
    # a changed exact QI
    moved = qi.copy()
    moved.loc[0, "age"] = 25 if moved.loc[0, "age"] != 25 else 20
    bad = verify_anatomy(moved, table, policy, view_counts=summary.s_counts, assigned=assigned)
    assert not bad.ok and any("published QI rows are not the QIs" in p for p in bad.problems)
    # the id or a private column in the QI table; a count of 0
    bad = verify_anatomy(qi.assign(rid=1), table, policy, view_counts=summary.s_counts)
    assert any("respondent id" in p for p in bad.problems)
    zero = pd.concat([table, table.iloc[:1].assign(s="zz", **{COUNT: 0})], ignore_index=True)
    bad = verify_anatomy(qi, zero, policy, view_counts=summary.s_counts)
    assert not bad.ok and any("integers >= 1" in p for p in bad.problems)
    # t broken: with t = 0.1 each group's EMD 1/6 is too far
    bad = verify_anatomy(qi, table, policy.with_overrides(t=0.1), view_counts=summary.s_counts)
    assert not bad.ok and sum("EMD" in p or "t" in p for p in bad.problems) >= 2


def test_expand_sensitive_gives_one_row_per_count():
    table = pd.DataFrame({GROUP: [7, 7, 9], "s": ["x", "y", "x"], COUNT: [2, 1, 3]})
    _, policy = tiny()
    got = expand_sensitive(table, policy)
    assert got[GROUP].tolist() == [7, 7, 7, 9, 9, 9] and got["s"].tolist() == ["x", "x", "y", "x", "x", "x"]


def test_exact_qi_linkage_by_hand():
    # QI vectors: (20) x2 in group 1 and 2; (21) once in group 1; (22) twice in group 2, and a
    # third respondent with 22 is suppressed; (23) once in group 2
    qi = pd.DataFrame({GROUP: [1, 2, 1, 2, 2, 2], "age": [20, 20, 21, 22, 22, 23]})
    orig = pd.DataFrame({"age": [20, 20, 21, 22, 22, 22, 23]})
    link = exact_qi_linkage(qi, orig, ["age"])
    # pinned: 21 (one row, one respondent) and 23; not 20 (two groups) nor 22 (one may be the
    # suppressed one)
    assert link.n_pinned == 2 and link.n_released == 6
    np.testing.assert_array_equal(link.pinned_group, [-1, -1, 0, -1, -1, -1, 1])
    np.testing.assert_array_equal(link.n_boxes, [2, 2, 1, 1, 1, 1, 1])
    with pytest.raises(Exception, match="do not fit"):
        exact_qi_linkage(qi, orig.iloc[:3], ["age"])


@pytest.mark.slow
@settings(max_examples=max(EXAMPLES // 2, 5), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(views_and_policies(), st.integers(1, 4), st.sampled_from(["scan", "topdown"]))
def test_anatomy_groups_keep_k_t_j_and_are_partition_free(case, npartitions, grouping):
    view, policy = case
    policy = policy.with_overrides(release_format="anatomy", grouping=grouping)
    summary = validate_view(view, policy)
    out = generalize_view(view, policy, summary, npartitions=npartitions)
    assert len(out.released) + out.n_suppressed == len(view)
    report = verify_anatomy(
        public(out.released), out.sensitive, policy, view_counts=summary.s_counts, assigned=out.assigned
    )
    assert report.ok, report.problems
    # k, t and j checked again from the membership alone (criteria kernels, not the verifier)
    g = out.assigned[LABEL].to_numpy()
    s = out.assigned["_s"].to_numpy()
    crit = TCloseness(policy.t, policy.emd_ground, tuple(int(c) for c in summary.s_counts))
    for label in np.unique(g):
        members = g == label
        assert members.sum() >= policy.k
        assert crit.holds_counts(np.bincount(s[members], minlength=len(summary.s_counts)).astype(np.int64))
    if len(g):
        js = js_per_group(out.assigned[policy.prior_columns].to_numpy(), g, policy.log_base)
        assert (js.to_numpy() <= policy.j + 1e-9).all()
    one = generalize_view(view, policy, summary, npartitions=1)
    pd.testing.assert_frame_equal(out.released, one.released)
    pd.testing.assert_frame_equal(out.sensitive, one.sensitive)
    with dask.config.set(scheduler="sync"):
        lazy = generalize_view(dd.from_pandas(view, npartitions=2), policy, summary, npartitions=npartitions)
        got = lazy.released.compute().reset_index(drop=True)
    assert got.dtypes.equals(lazy.released._meta.dtypes)  # meta was honest
    pd.testing.assert_frame_equal(got, one.released)
    pd.testing.assert_frame_equal(lazy.sensitive, one.sensitive)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    out = tmp_path_factory.mktemp("anat")
    mh = medical_history(n_views=3, view_size=300, seed=2)
    policy = ReleasePolicy.from_toml(
        write_history(out, mh), t=0.5, j=0.8, max_suppression=1.0, release_format="anatomy"
    )
    return mh, policy


def _files(root):
    """The published files' bytes (the private state is hash-partitioned by id into
    ``npartitions`` parts: its rows, not its bytes, are partition-free; metrics hold timings)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted((root / "releases").rglob("*"))
        if p.is_file() and p.name != "metrics.json"
    }


@pytest.mark.slow
def test_ledger_bytes_do_not_depend_on_the_partitions(history, tmp_path):
    mh, policy = history
    one = release_history(mh.history, policy, tmp_path / "one", npartitions=1)
    three = release_history(mh.history, policy, tmp_path / "three", npartitions=3)
    a, b = _files(tmp_path / "one"), _files(tmp_path / "three")
    assert "releases/1/sensitive.parquet" in a and "releases/3/view.parquet" in a and a == b
    for i in (1, 2, 3):
        sa, sb = (led.read_state(i).sort_values(policy.id).reset_index(drop=True) for led in (one, three))
        pd.testing.assert_frame_equal(sa, sb)
        ma, mb = dict(one.read_metrics(i)), dict(three.read_metrics(i))
        ma.pop("seconds"), mb.pop("seconds")
        # the verifier sums each group's priors part by part: j_achieved may differ in the last
        # bits (the published files above are compared byte for byte)
        assert ma.pop("j_achieved") == pytest.approx(mb.pop("j_achieved"), rel=1e-12)
        assert ma == mb
        assert ma["average_semiperimeter"] == 0.0 and ma["ok"]
        view = one.read_view(i)
        assert list(view.columns) == [GROUP, *policy.qi]
        table = one.read_sensitive(i)
        sizes = view.groupby(GROUP).size().sort_index()
        assert table.groupby(GROUP)[COUNT].sum().sort_index().tolist() == sizes.tolist()


def test_anatomy_needs_jsreduce_and_is_pinned_by_the_ledger(history, tmp_path):
    mh, policy = history
    with pytest.raises(PolicyError, match="anatomy"):
        release_history(mh.history, policy, tmp_path / "m", method="mondrian-t")
    assert not (tmp_path / "m").exists()
    led = release_history(mh.history, policy, tmp_path / "led", until=1)
    entry = led.committed()[0]  # both released tables' digests, of the bytes on disk
    for name, key in (("view.parquet", "view_sha256"), ("sensitive.parquet", "sensitive_sha256")):
        assert entry[key] == hashlib.sha256((led.release_dir(1) / name).read_bytes()).hexdigest()
    with pytest.raises(Exception, match="release_format"):
        release_history(mh.history, policy.with_overrides(release_format="generalized"), tmp_path / "led")
    # the default format leaves the fingerprint as before the field existed
    assert "release_format" not in policy.with_overrides(release_format="generalized").fingerprint()
    assert policy.fingerprint()["release_format"] == "anatomy"


def _as_generalized(anatomy: Ledger, history: pd.DataFrame, policy: ReleasePolicy, root) -> Ledger:
    """A copy of an Anatomy ledger whose views are the generalized views of the SAME groups
    (boxes of the members, their sensitive values), without the sensitive tables."""
    shutil.copytree(anatomy.root, root)
    led = Ledger(root)
    for r in led.committed():
        i = r["index"]
        state = led.read_state(i)
        mem = state.loc[state["last_release"] == i, [policy.id, "last_group"]]
        rows = mem.merge(history[history[policy.time] == i], on=policy.id)
        rows = rows.rename(columns={"last_group": LABEL})
        table = qig_table(rows, policy)
        gen = table.loc[rows[LABEL].to_numpy()].reset_index(drop=True)
        gen.insert(0, GROUP, rows[LABEL].to_numpy())
        gen[policy.sensitive] = rows[policy.sensitive].to_numpy()
        gen[released_columns(policy)].to_parquet(led.release_dir(i) / "view.parquet", index=False)
        (led.release_dir(i) / "sensitive.parquet").unlink()
    _forget_digests(led)
    return led


def _forget_digests(led: Ledger) -> None:
    """The released files' digests dropped from the manifest, as a ledger from before them
    records none: files changed by a test are then read, not refused as edited."""
    path = led.root / "manifest.json"
    manifest = json.loads(path.read_text())
    for entry in manifest["releases"]:
        entry.pop("view_sha256"), entry.pop("sensitive_sha256")
    path.write_text(json.dumps(manifest))


@pytest.mark.slow
def test_attacks_on_anatomy_equal_attacks_on_the_same_groups_generalized(history, tmp_path):
    mh, policy = history
    anat = release_history(mh.history, policy, tmp_path / "anat")
    gen = _as_generalized(anat, mh.history, policy, tmp_path / "gen")
    assert gen.read_sensitive(1) is None
    for kw in ({"deductions": False}, {"adversary": "retrospective", "attendance": 0.5}):
        a = attack(anat, mh.history, policy, "dk", **kw)
        b = attack(gen, mh.history, policy, "dk", **kw)
        # the same figures; each stamped with its own ledger's releases (other files, other views_sha)
        pd.testing.assert_frame_equal(a.drop(columns="views_sha"), b.drop(columns="views_sha"))
        assert not (a["views_sha"] == b["views_sha"]).any() and a["views_sha"].str.len().eq(16).all()
        assert (a["adversary_gain"] > 0).any()  # a real attack, not an empty table
    # the counts come from the sensitive table: with one count moved the attack input is refused
    t1 = anat.read_sensitive(1)
    t1.loc[0, COUNT] += 1
    t1.to_parquet(anat.release_dir(1) / "sensitive.parquet", index=False)
    with pytest.raises(LedgerError, match=r"sensitive.parquet is not the file release 1 committed"):
        attack(anat, mh.history, policy, "dk", deductions=False)
    _forget_digests(anat)  # a ledger from before the digests: the counts themselves are checked
    with pytest.raises(Exception, match="disagree|do not match"):
        attack(anat, mh.history, policy, "dk", deductions=False)


def test_membership_from_exact_qis_pins_the_unique_qi_vectors(history, tmp_path):
    mh, policy = history
    led = release_history(mh.history, policy, tmp_path / "led", until=1)
    got = attack(led, mh.history, policy, "snapshot", deductions=False, membership="qi")
    view = mh.history[mh.history[policy.time] == 1]
    # nothing suppressed here, so the pinned are exactly those whose QI vector is unique in the
    # view or whose copies all sit in one group
    assert led.read_metrics(1)["n_suppressed"] == 0
    qi_table = led.read_view(1)
    per_vector = qi_table.groupby(list(policy.qi))[GROUP].nunique()
    expected = int(view.merge(per_vector.rename("n").reset_index(), on=list(policy.qi))["n"].eq(1).sum())
    assert got["n_pinned"].iloc[0] == expected > 0.5 * len(view)


def test_sensitive_table_from_dask_equals_pandas():
    rows = pd.DataFrame({LABEL: [5, 5, 3, 3, 3], "_s": [1, 0, 0, 0, 1], "s": ["y", "x", "x", "x", "y"]})
    _, policy = tiny()
    want = sensitive_table(rows, policy)
    assert want[GROUP].tolist() == [3, 3, 5, 5] and want[COUNT].tolist() == [2, 1, 1, 1]
    got = sensitive_table(dd.from_pandas(rows, npartitions=2), policy)
    pd.testing.assert_frame_equal(got, want)


def test_association_loss_of_a_generalized_view_pandas_and_dask():
    from dpriv.metrics.anatomy import released_association_loss

    _, policy = tiny()
    rel = pd.DataFrame({GROUP: [1, 1, 1, 2, 2, 2], "s": ["x", "x", "y", "x", "y", "y"]})
    assert released_association_loss(rel, policy) == pytest.approx(4 / 9)
    assert released_association_loss(dd.from_pandas(rel, npartitions=3), policy) == pytest.approx(4 / 9)
