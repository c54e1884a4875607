"""The result of :func:`dpriv.release.anonymize`, whose repr shows no private value."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from dpriv.metrics.record import ReleaseRecord
from dpriv.policy import ReleasePolicy
from dpriv.private_repr import safe_repr, shape


@dataclass(repr=False)
class Anonymized:
    """A verified released view (pandas), its private assignment and its metrics; for an
    Anatomy release ``released`` is the QI table and ``sensitive`` the sensitive table.

    ``assigned`` holds the respondents' ids, exact QIs, true sensitive values and priors with
    their QI-groups: private. The repr names the released frame's size and the metrics only
    (a notebook's last line shows it)."""

    released: pd.DataFrame
    assigned: pd.DataFrame
    metrics: ReleaseRecord
    policy: ReleasePolicy
    notes: list[str] = field(default_factory=list)
    sensitive: pd.DataFrame | None = None
    method: str = "jsreduce"  # the criteria it was verified against (dpriv.criteria.GUARANTEES)

    def __repr__(self) -> str:
        m = self.metrics
        rate = m.get("suppression_rate")
        public = [
            f"released: {shape(self.released)}",
            f"n_groups={m.get('n_groups')}",
            f"suppressed={m.get('n_suppressed')}" + (f" ({rate:.1%})" if rate is not None else ""),
            f"k_achieved={m.get('k_achieved')}",
        ]
        if self.sensitive is not None:
            public.append(f"sensitive table: {shape(self.sensitive)}")
        if self.notes:
            public.append(f"notes: {len(self.notes)} (.notes)")
        return safe_repr("Anonymized", public, ["assigned"])
