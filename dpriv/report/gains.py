"""The adversary-gain curves of the report: those passed to ``render_report(gains=...)``, checked
(:func:`dpriv.passed_results.checked_gains`), and the ledger's ``attack/gain_<knowledge>.csv`` files
(:func:`gain_curves`), each refused when it is not of the ledger's releases
(:func:`dpriv.attack_stamp.check_held`, :func:`dpriv.attack_stamp.check_same_releases`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from dpriv.attack_files import (
    AGAIN,
    GAIN_FILE,
    NOT_OURS,
    as_ledger,
    read_result,
    result_files,
    results_folder,
)
from dpriv.attack_stamp import STAMP, check_held, check_same_releases
from dpriv.ledger import Ledger
from dpriv.passed_results import checked_gains
from dpriv.path_args import path_arguments

_GAIN_FILE = result_files(GAIN_FILE)


def _in_release_order(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("release", kind="stable").reset_index(drop=True)


@path_arguments(ledgers={"ledger": Ledger}, attack_dir="the folder of attack results")
def gain_curves(
    ledger: Ledger | str | Path,
    gains: Mapping[str, pd.DataFrame] | None = None,
    attack_dir: str | Path | None = None,
) -> dict[str, pd.DataFrame]:
    """Adversary-gain curves of a ledger: those passed in, then ``attack/gain_<knowledge>.csv``.

    Parameters
    ----------
    ledger : Ledger, str or Path
        A release ledger (or its folder).
    gains : mapping knowledge name -> DataFrame, optional
        Frames with columns ``release`` and ``adversary_gain`` (the return value of
        :func:`dpriv.attack.attack`); they win over a file of the same name.
    attack_dir : str or Path, optional
        The folder to read the ``gain_<knowledge>.csv`` files from instead of the ledger's
        ``attack/`` (those ``dpriv attack --out`` wrote for a ledger one cannot write in), checked
        the same way.

    Returns
    -------
    dict
        Knowledge name -> frame (``release`` int64, ``adversary_gain`` float64, and where the
        attack wrote them ``histogram_gain`` float64 and :data:`dpriv.passed_results.TIES`:
        ``n_tuples``, ``views_sha`` text, so that the curve passed to another ledger's report
        is refused) sorted by release, names in alphabetical order.

    Raises
    ------
    InputError
        A frame or file without the two columns (the file is named relative to the ledger),
        naming a release twice or a release the ledger does not hold
        (:func:`dpriv.attack_stamp.check_held`), or computed on other releases than the
        ledger's (:func:`dpriv.attack_stamp.check_same_releases`); an ``attack_dir`` that is no
        folder.
    """
    led = as_ledger(ledger, "gain_curves")
    out: dict[str, pd.DataFrame] = {}
    folder, label = results_folder(led, attack_dir)
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            match = _GAIN_FILE.match(path.name)
            if match and path.is_file():
                where = f"{label}{path.name}"
                optional = ("histogram_gain", "n_tuples")
                frame = read_result(
                    path,
                    ["release", "adversary_gain"],
                    where,
                    optional=optional,
                    text=(STAMP,),
                    unique=("release",),
                )
                out[match["name"]] = _in_release_order(frame)
    raw = {} if gains is None else gains
    passed = checked_gains(raw, "passed")
    held = len(led.committed())
    for name, frame in out.items():  # a file of another ledger's releases is refused
        if name not in passed:
            where = f"the results in {label}{GAIN_FILE.format(name=name)}"
            check_held(frame, held, led.root, where, NOT_OURS)
            check_same_releases(frame, led, where, NOT_OURS, unstamped=AGAIN)
    for name, frame in passed.items():
        fix = "attack this ledger, or pass the gains of its own releases"
        check_held(frame, held, led.root, f"the gains of {name!r}", fix)
        check_same_releases(raw[name] if name in raw else frame, led, f"the gains of {name!r}", fix)
    return dict(sorted({**out, **passed}.items()))
