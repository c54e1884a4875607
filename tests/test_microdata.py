import numpy as np
import pandas as pd

from dpriv.metrics.microdata import draw_microdata, release_kpr
from dpriv.policy import ReleasePolicy

POLICY = ReleasePolicy(
    qi=["age", "sex"], sensitive="s", seed=1, domains={"age": [0, 100], "sex": ["F", "M"], "s": ["a", "b"]}
)
RELEASED = pd.DataFrame(
    {
        "qi_group": [1, 1, 2],
        "age_min": [30.0, 30.0, 50.0],
        "age_max": [40.0, 40.0, 50.0],
        "sex": ["{F,M}", "{F,M}", "{M}"],
        "s": ["a", "b", "a"],
    }
)


def test_draws_lie_inside_the_released_generalization_and_are_seeded():
    draw = draw_microdata(RELEASED, POLICY)
    assert draw["age"].between(RELEASED["age_min"], RELEASED["age_max"]).all()
    assert draw.loc[2, "age"] == 50.0 and draw.loc[2, "sex"] == "M"
    assert set(draw["sex"]) <= {"F", "M"}
    pd.testing.assert_frame_equal(draw, draw_microdata(RELEASED, POLICY))
    other = draw_microdata(RELEASED, POLICY.with_overrides(seed=2))
    assert not np.allclose(other["age"][:2], draw["age"][:2])


def test_release_kpr():
    original = pd.DataFrame({"age": [31, 39, 50], "sex": ["F", "M", "M"]})
    # every original is unique; the draw for group 2 is exactly (50, M), which the binned
    # profile of the third original matches uniquely -> at least 1 of 3 re-identified
    value = release_kpr(RELEASED, original, POLICY)
    assert 0.0 <= value <= 100 * (1 - 1 / 3) + 1e-9
    assert release_kpr(RELEASED.iloc[:0], original, POLICY) is None
