"""Measures of a release: utility (``utility``: E11, E24-E26), KPR (``kpr`` with its binning,
counting and validation: E21, E22), microdata KPR of a release (``microdata``) and the
metrics of one release (``release``) and its ``metrics.json`` (``record``)."""

from dpriv.metrics.kpr import ABOVE, BELOW, MISSING, NO_BINS, BinSpec, KPRResult, KPRWarning, bin_index
from dpriv.metrics.microdata import draw_microdata, release_kpr
from dpriv.metrics.record import DefenderTail, ReleaseRecord, read_record, write_record
from dpriv.metrics.release import ReleaseMetrics, checked_metrics, release_metrics, require, utility_domains
from dpriv.metrics.utility import (
    average_class_size,
    average_semiperimeter,
    discernibility,
    gcp,
    group_table,
    suppression_rate,
    utility_metrics,
)

__all__ = [
    "ABOVE",
    "BELOW",
    "BinSpec",
    "KPRResult",
    "KPRWarning",
    "MISSING",
    "NO_BINS",
    "average_class_size",
    "average_semiperimeter",
    "bin_index",
    "checked_metrics",
    "DefenderTail",
    "discernibility",
    "draw_microdata",
    "gcp",
    "group_table",
    "read_record",
    "release_kpr",
    "ReleaseRecord",
    "ReleaseMetrics",
    "release_metrics",
    "require",
    "suppression_rate",
    "utility_domains",
    "utility_metrics",
    "write_record",
]
