"""Mixed time zones are counted by name (a fresh user's drill, session 39, L3): on pandas 2 (pytz),
a Berlin winter time and a Berlin summer time were two zones ("3 different time zones
(['Europe/Berlin', 'Europe/Berlin', 'UTC'])")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpriv.errors import InputError
from dpriv.one_view import anonymize
from dpriv.policy import ReleasePolicy


def test_summer_and_winter_times_of_one_zone_are_one_zone():
    n = 12
    berlin = pd.Series(pd.date_range("2024-01-01", periods=n // 2, freq="60D", tz="Europe/Berlin"))
    utc = pd.Series(pd.date_range("2024-02-01", periods=n - n // 2, freq="30D", tz="UTC"))
    stamps = pd.Series([*berlin.dt.to_pydatetime(), *utc.dt.to_pydatetime()], dtype=object)
    assert len({t.utcoffset() for t in berlin}) == 2  # the case: CET and CEST both present
    view = pd.DataFrame({"rid": np.arange(n), "when": stamps, "disease": ["flu", "hiv", "none"] * (n // 3)})
    policy = ReleasePolicy.from_dict({"id": "rid", "qi": ["when"], "sensitive": "disease", "k": 2})
    with pytest.raises(InputError) as exc:
        anonymize(view, policy)
    said = str(exc.value)
    assert "2 different time zones" in said and "['Europe/Berlin', 'UTC']" in said, said
