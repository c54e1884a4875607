"""metrics.json: one typed record (dpriv.metrics.record), one writer, one reader; the keys of
the Interfaces in the order they always had."""

import json
import os
import stat

import pandas as pd

from dpriv.anonymity.verify import VerificationReport
from dpriv.metrics import DefenderTail, ReleaseMetrics, ReleaseRecord, read_record, write_record
from dpriv.metrics.record import TAIL_KEYS

#: The keys of a ledger's metrics.json, in order (docs/ledger.md; as written before the record).
LEDGER_KEYS = [
    "release", "ok", "k_achieved", "l_achieved", "t_achieved", "j_achieved", "n_rows", "n_groups",
    "problems", "n_original", "n_released", "n_suppressed", "m", "suppression_rate", "min_group_size",
    "largest_group", "average_semiperimeter", "gcp", "gcp_kept", "discernibility", "c_avg",
    "association_loss", "association_loss_view", "group_qi_span", "kpr",
    "confident_share", "confident_precision", "n_confident", "max_posterior", "seconds",
]  # fmt: skip

UTILITY = {
    "n_original": 10, "n_released": 8, "n_suppressed": 2, "n_groups": 2, "m": 2, "suppression_rate": 0.2,
    "min_group_size": 4, "largest_group": 4, "average_semiperimeter": 0.5, "gcp": 0.6, "gcp_kept": 0.5,
    "discernibility": 52, "c_avg": 1.0, "association_loss": 0.25, "association_loss_view": 0.125,
    "group_qi_span": 0.5,
}  # fmt: skip


def record(**kw) -> ReleaseRecord:
    report = VerificationReport(pd.DataFrame(), 4, 2, 0.25, None, True, [], n_rows=8, n_groups=2)
    return ReleaseRecord.of(report, ReleaseMetrics(UTILITY, 62.5, 10, 2), **kw)


def test_a_release_record_has_the_ledger_keys_in_order_and_reads_as_a_dict():
    tail = DefenderTail(0.125, None, 1, 0.75)
    rec = record(seconds={"rbk": 1.5}, release=3, tail=tail)
    assert list(rec) == LEDGER_KEYS
    assert rec["release"] == 3 and rec["k_achieved"] == 4 and rec["j_achieved"] is None
    assert rec["kpr"] == 62.5 and rec["confident_precision"] is None and rec["n_confident"] == 1
    assert rec.get("small_view") is None and "small_view" not in rec
    assert dict(rec) == rec.to_dict() and len(rec) == len(LEDGER_KEYS)


def test_anonymize_record_has_no_release_tail_or_small_view_and_a_suppressed_view_says_so():
    rec = record(seconds=1.25)
    assert list(rec) == [k for k in LEDGER_KEYS if k not in ("release", *TAIL_KEYS)]
    assert rec["seconds"] == 1.25
    small = record(seconds={}, release=1, small_view="suppressed")
    assert list(small)[-1] == "small_view" and small["small_view"] == "suppressed"


def test_write_then_read_gives_the_same_record_and_the_same_json(tmp_path):
    rec = record(seconds={"rbk": 1.5, "write": 0.25}, release=2, tail=DefenderTail(0.0, None, 0, None))
    path = tmp_path / "metrics.json"
    write_record(path, rec)
    assert json.loads(path.read_text()) == rec.to_dict()
    assert list(json.loads(path.read_text())) == LEDGER_KEYS  # the file keeps the order
    back = read_record(path)
    assert back == rec and back.tail == rec.tail and back.seconds == {"rbk": 1.5, "write": 0.25}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644  # public, like the released view


def test_keys_of_another_writer_are_kept_as_read(tmp_path):
    path = tmp_path / "metrics.json"
    write_record(path, {"k": 2, "n_groups": 5})  # a test's stand-in mapping
    back = read_record(path)
    assert back.n_groups == 5 and back.extra == {"k": 2} and back["k"] == 2
    assert back.tail is None and back.k_achieved is None
