"""The report's paper-vs-retrospective panel (dpriv.report.tail) and the attack frames behind it."""

import numpy as np
import pandas as pd
import pytest

from dpriv.attack import GAIN_COLUMNS, RETRO_COLUMNS, attack
from dpriv.attack_stamp import STAMP
from dpriv.datasets import medical_history, write_history
from dpriv.errors import InputError, PolicyError
from dpriv.policy import ReleasePolicy
from dpriv.release import release_history
from dpriv.report import render_report
from dpriv.report.tail import TAIL_CURVE_COLUMNS, plot_tail, tail_curves


def test_tail_curves_join_paper_and_retrospective_as_of_the_last_release(tmp_path):
    pd.DataFrame(
        {"release": [1, 2], "adversary_gain": [0.1, 0.2], "n_tuples": [5, 5], "confident_share": [0.0, 0.4]}
    ).to_csv(tmp_path / "gain_dk.csv", index=False)
    pd.DataFrame({"release": [1, 2], "adversary_gain": [0.3, 0.3]}).to_csv(
        tmp_path / "gain_old.csv", index=False
    )
    pd.DataFrame(
        {
            "release": [1, 1, 2],
            "as_of": [1, 2, 2],
            "adversary_gain": [0.1, 0.25, 0.22],
            "confident_share": [0.0, 0.6, 0.5],
        }
    ).to_csv(tmp_path / "retro_dk.csv", index=False)
    pd.DataFrame({"release": [1], "as_of": [1], "adversary_gain": [0.2], "confident_share": [0.1]}).to_csv(
        tmp_path / "retro_snapshot.csv", index=False
    )
    curves = tail_curves(tmp_path)
    assert list(curves) == ["dk", "snapshot"]  # gain_old.csv has no tail column
    dk = curves["dk"]
    assert list(dk.columns) == list(TAIL_CURVE_COLUMNS)
    np.testing.assert_array_equal(dk.to_numpy(), [[1, 0.1, 0.0, 0.25, 0.6], [2, 0.2, 0.4, 0.22, 0.5]])
    snap = curves["snapshot"]
    assert np.isnan(snap["paper_gain"]).all() and snap["retro_gain"].tolist() == [0.2]
    assert len(plot_tail(curves).axes) == 2
    assert tail_curves(tmp_path / "none") == {}
    (tmp_path / "retro_bad.csv").write_text("release,gain\n1,0.1\n")
    with pytest.raises(InputError, match=r"retro_bad\.csv lacks column"):
        tail_curves(tmp_path)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    root = tmp_path_factory.mktemp("tail")
    mh = medical_history(n_views=3, view_size=200, seed=1)
    policy = ReleasePolicy.from_toml(write_history(root / "data", mh), t=1.0, j=1.0, k=4, max_suppression=1.0)
    led = release_history(mh.history, policy, root / "ledger")
    return led, mh, policy


@pytest.mark.slow
def test_attack_frames_and_the_report_section(small):
    led, mh, policy = small
    paper = attack(led, mh.history, policy, "dk", deductions=False)
    retro = attack(led, mh.history, policy, "dk", adversary="retrospective", deductions=False)
    assert list(paper.columns) == [*GAIN_COLUMNS, STAMP] and list(retro.columns) == [*RETRO_COLUMNS, STAMP]
    assert list(zip(retro["release"], retro["as_of"])) == [(1, 1), (1, 2), (2, 2), (1, 3), (2, 3), (3, 3)]
    assert retro["adversary_gain"].iloc[0] == pytest.approx(paper["adversary_gain"].iloc[0], abs=1e-12)
    assert (
        retro["n_tuples"].to_numpy() == paper.set_index("release").loc[retro["release"], "n_tuples"]
    ).all()
    # a tuple counted in confident_share is a right confident claim
    for f in (paper, retro):
        right = f["confident_share"] * f["n_tuples"]
        assert (right <= f["n_confident"] + 1e-9).all()
        has = f["n_confident"] > 0
        np.testing.assert_allclose(f.loc[has, "confident_precision"], right[has] / f.loc[has, "n_confident"])
        assert f["n_certain"].isna().all()  # no deductions asked for
    # snapshot knowledge: no release informs another, so as of any release = the snapshot attack
    snap = attack(led, mh.history, policy, "snapshot", deductions=False)
    rs = attack(led, mh.history, policy, "snapshot", adversary="retrospective", deductions=False)
    for _, row in rs.iterrows():
        want = snap.set_index("release").loc[row["release"], "adversary_gain"]
        assert row["adversary_gain"] == pytest.approx(want, abs=1e-12)
    folder = led.root / "attack"
    folder.mkdir(exist_ok=True)
    paper.to_csv(folder / "gain_dk.csv", index=False)
    retro.to_csv(folder / "retro_dk.csv", index=False)
    page = render_report(led)
    assert 'id="tail-risk"' in page and "retrospective" in page
    with pytest.raises(PolicyError, match="unknown adversary"):
        attack(led, mh.history, policy, "dk", adversary="smoothing", deductions=False)
