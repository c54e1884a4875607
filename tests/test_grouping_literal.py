"""``grouping = "literal"``: issue 12's name for the paper's Algorithm 2, kept for reproduction, is
the greedy Hilbert scan itself (stored as ``"scan"``: one fingerprint, the same released bytes)."""

import numpy as np
import pandas as pd
import pytest

from dpriv.one_view import anonymize
from dpriv.policy import ReleasePolicy

FIELDS = {
    "id": "rid",
    "time": "view",
    "qi": ["age", "weight"],
    "sensitive": "stage",
    "k": 4,
    "t": 0.6,
    "j": 1.0,
    "domains": {"age": [0, 99], "weight": [30, 150], "stage": ["a", "b", "c", "d"]},
}


@pytest.fixture(scope="module")
def view() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 240
    age = rng.integers(0, 100, n)
    return pd.DataFrame(
        {
            "rid": np.arange(n),
            "view": 1,
            "age": age,
            "weight": rng.integers(30, 151, n),
            # the stage follows age, so that where a grouping cuts changes the groups' histograms
            "stage": np.array(list("abcd"))[np.minimum(age // 25 + rng.integers(0, 2, n), 3)],
        }
    )


def _released(view: pd.DataFrame, grouping: str) -> pd.DataFrame:
    return anonymize(view, ReleasePolicy.from_dict({**FIELDS, "grouping": grouping})).released


def test_literal_is_stored_as_the_scan_with_its_fingerprint(tmp_path):
    scan = ReleasePolicy.from_dict({**FIELDS, "grouping": "scan"})
    literal = ReleasePolicy.from_dict({**FIELDS, "grouping": "literal"})
    assert literal.grouping == "scan" and literal.fingerprint() == scan.fingerprint()
    assert ReleasePolicy.from_dict(FIELDS).with_overrides(grouping="literal") == scan
    toml = tmp_path / "p.toml"
    toml.write_text(
        '[columns]\nid = "rid"\ntime = "view"\nqi = ["age"]\nsensitive = "stage"\n'
        '[release]\ngrouping = "literal"\n'
    )
    assert ReleasePolicy.from_toml(toml).grouping == "scan"


def test_literal_releases_the_scans_bytes_not_the_top_down_split(view):
    literal, scan, topdown = (_released(view, g) for g in ("literal", "scan", "topdown"))
    pd.testing.assert_frame_equal(literal, scan)
    # the test could fail: on this view the two groupings publish different boxes
    assert not literal.equals(topdown)
