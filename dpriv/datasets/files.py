"""Files of a generated dataset: the history, the knowledge tables and a ready-to-use
policy (README.md "Commands": ``dpriv generate medical``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from dpriv.datasets.arguments import check_whole
from dpriv.datasets.generated import PBC_FILES, check_generated, put_generated
from dpriv.datasets.medical import MedicalHistory
from dpriv.datasets.medical_view import medical_view_dask
from dpriv.datasets.model import (
    AGE_RANGE,
    CLASS_MAP,
    DEFAULT_WEIGHT_VIEW_SIZE,
    GENDER_RANGE,
    TERMINAL,
    VALUES,
    WEIGHT_RANGE,
    medical_knowledge,
)
from dpriv.datasets.pbc import PBC_PRIVACY, pbc_history
from dpriv.errors import InputError
from dpriv.path_args import path_arguments
from dpriv.toml_writer import toml_dumps


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def policy_dict(mh: MedicalHistory) -> dict[str, Any]:
    """The ready-to-use policy of a generated history (docs/policy.md)."""
    return {
        "columns": {
            "id": "respondent_id",
            "time": "view",
            "qi": ["age", "gender", "weight"],
            "sensitive": "exam_result",
        },
        "domains": {
            "age": list(AGE_RANGE),
            "weight": list(WEIGHT_RANGE),
            "gender": list(GENDER_RANGE),
            "exam_result": list(mh.values),
        },
        "privacy": {"k": 5, "t": 0.3, "j": 0.1},
        "knowledge": {
            "dk": "knowledge/dk.npz",
            "dk-1": "knowledge/dk-1.npz",
            "dk-2": "knowledge/dk-2.npz",
            "dk-3": "knowledge/dk-3.npz",
        },
    }


#: The defense `dpriv generate medical` writes into policy.toml and `dpriv demo` releases with:
#: JS-reduce's top-down grouping at t 0.45, j 1.5 with the exit guard on the generator's two
#: terminal values (issue 12). On the paper's 24 views x 5,000 (attendance 0.5, seed 0) it
#: suppresses nothing, has a mean semiperimeter of 0.26 and a max gain of 0.109 (paper
#: adversary) / 0.246 (retrospective), where the previous recommendation (top-down, t 0.5,
#: j 0.8, no guard) had 1.05, 0.099 / 0.252 and 1.1 % suppressed; it dominates mondrian-bt
#: bt_t 0.15 and mondrian-t t 0.5 (docs/results/exit-frontier-24x5000). j 1 binds on long
#: histories (semiperimeter 0.70 at t 0.45). The library's placeholders (k 5, t 0.3, j 0.1, the
#: paper's, unrecovered) suppress most tuples of these views.
RECOMMENDED_DEFENSE: dict[str, dict[str, Any]] = {
    "privacy": {"k": 5, "t": 0.45, "j": 1.5},
    "release": {"grouping": "topdown", "exit_values": list(TERMINAL)},
}


@path_arguments(out_dir="the folder to write into")
def write_history(
    out_dir: str | Path,
    mh: MedicalHistory,
    policy_extra: dict[str, Any] | None = None,
    *,
    overwrite: bool = False,
) -> Path:
    """Write a generated history, its knowledge and a policy into ``out_dir``.

    Files (created; replaced only with ``overwrite=True``, else an existing one is refused
    with :class:`~dpriv.errors.InputError` before anything is written: a ledger next to them
    pins ``policy.toml``'s knowledge files by SHA-256 and its releases by the history; even
    with ``overwrite=True`` a file dpriv did not write, or one changed since, e.g. an edited
    ``policy.toml``, is refused: :func:`check_generated`). They are recorded in
    ``.dpriv-outputs`` of their folders (dpriv/output_record.py), each as soon as it is written
    (:func:`dpriv.datasets.generated.put_generated`: an interrupted call leaves no part of a
    file, and the files written before recorded: ``overwrite=True`` replaces them)::

        out_dir/history.parquet          mh.history
        out_dir/knowledge/dk.npz         exact order-3 DK (full DK-BK^seq)
        out_dir/knowledge/dk-{1,2,3}.npz n-step DK (MedicalHistory.n_step; dk-3 = dk)
        out_dir/policy.toml              docs/policy.md policy; paths relative to the policy

    BK^sv is the order-0 table inside every ``.npz`` (``MarkovTables.load(...).tables[0]``,
    with the class map in its metadata); there is no separate BK^sv file. ``[knowledge]``
    has ``dk`` (the exact model) and ``dk-1``/``dk-2``/``dk-3``. ``policy_extra`` is
    deep-merged into the policy (e.g. ``{"privacy": {"k": 10}}``).

    Returns
    -------
    Path
        The path of ``policy.toml``.
    """
    if not isinstance(mh, MedicalHistory):
        raise InputError(
            f"write_history() takes the MedicalHistory that medical_history() returns, not a "
            f"{type(mh).__name__}: write_history(out, medical_history(...))"
        )
    out = Path(out_dir)
    check_generated(out, overwrite=overwrite)
    text = _policy_text(mh, policy_extra)
    put_generated(out, "history.parquet", lambda path: mh.history.to_parquet(path, index=False))
    return _write_knowledge_and_policy(out, mh, text)


def _write_knowledge_and_policy(out: Path, mh: MedicalHistory, text: str) -> Path:
    """``knowledge/dk.npz``, ``knowledge/dk-{1,2,3}.npz`` and ``policy.toml`` (``text``, from
    :func:`_policy_text`) of ``mh`` (uses ``mh.knowledge``, ``mh.values``; not ``mh.history``),
    each through :func:`put_generated`; ``policy.toml`` last, so that it names files that exist."""
    put_generated(out, "knowledge/dk.npz", mh.knowledge.save)
    for n in (1, 2, 3):
        put_generated(out, f"knowledge/dk-{n}.npz", mh.n_step(n).save)
    return put_generated(out, "policy.toml", lambda path: path.write_text(text, encoding="utf-8"))


def _policy_text(mh: MedicalHistory, policy_extra: dict[str, Any] | None) -> str:
    """``policy.toml``'s text for ``mh`` with ``policy_extra`` merged in, read back as a policy
    first: PolicyError (nothing written yet) when the merge makes a file dpriv cannot load
    (``{"privacy": {"k": -3}}``, an unknown table)."""
    import tempfile

    from dpriv.errors import PolicyError
    from dpriv.policy import ReleasePolicy

    if policy_extra is not None and not (
        isinstance(policy_extra, dict) and all(isinstance(v, dict) for v in policy_extra.values())
    ):
        raise PolicyError(
            f"policy_extra is a dict of policy tables, e.g. {{'privacy': {{'k': 10}}}}, not {policy_extra!r}"
        )
    try:
        text = toml_dumps(_deep_merge(policy_dict(mh), policy_extra or {}))
    except (TypeError, ValueError) as exc:  # a value TOML cannot hold (None, an object)
        raise PolicyError(f"policy_extra {policy_extra!r} cannot be written as TOML: {exc}") from None
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "policy.toml").write_text(text, encoding="utf-8")
        try:
            ReleasePolicy.from_toml(Path(tmp) / "policy.toml")
        except PolicyError as exc:
            why = str(exc).replace(f"policy file {Path(tmp) / 'policy.toml'}", "the generated policy")
            raise PolicyError(
                f"policy_extra {policy_extra!r} gives a policy dpriv cannot use: {why}"
            ) from None
    return text


@path_arguments(out_dir="the folder to write into")
def write_medical_view(
    out_dir: str | Path,
    n_rows: int,
    *,
    npartitions: int | None = None,
    seed: int = 0,
    attendance: float = 1.0,
    det: float = 0.9,
    weight_view_size: int = DEFAULT_WEIGHT_VIEW_SIZE,
    policy_extra: dict[str, Any] | None = None,
    overwrite: bool = False,
) -> Path:
    """Write a one-view history of ``n_rows`` tuples, built in Dask, with its knowledge.

    The large-scale counterpart of ``write_history(out_dir, medical_history(1, n_rows,
    ...))``: ``out_dir/history.parquet`` is a Parquet *dataset* (a folder, one
    ``part.<i>.parquet`` file per partition, written by the workers with
    ``dask.dataframe.DataFrame.to_parquet``) holding :func:`medical_view_dask` ``(n_rows,
    npartitions=npartitions, seed=seed, view=1, det=det)`` without its index; the knowledge
    files and ``policy.toml`` are those :func:`write_history` writes for a one-view
    :func:`medical_history` with the same ``seed``, ``attendance``, ``det`` and
    ``weight_view_size`` (same model; the n-step tables come from the same weighting run).
    Runs on the current Dask scheduler (a distributed Client if one is active). An existing
    ``history.parquet`` (file or folder) is replaced with ``overwrite=True`` (else refused,
    like any generated file, before anything is written).

    Returns
    -------
    Path
        The path of ``policy.toml``.
    """
    check_whole("weight_view_size", weight_view_size, 1)
    if not 0.0 < attendance <= 1.0:
        raise InputError(f"attendance must be in (0, 1], got {attendance!r}")
    frame = medical_view_dask(n_rows, npartitions=npartitions, seed=seed, view=1, det=det)
    config = {
        "seed": int(seed),
        "n_views": 1,
        "view_size": int(n_rows),
        "attendance": float(attendance),
        "det": float(det),
        "weight_view_size": int(weight_view_size),
    }
    knowledge = medical_knowledge(seed, det=det)
    # the history lives in the Dask frame; the container only carries the model and config
    mh = MedicalHistory(frame._meta, knowledge, VALUES, CLASS_MAP, config)
    out = Path(out_dir)
    check_generated(out, overwrite=overwrite)
    text = _policy_text(mh, policy_extra)
    put_generated(out, "history.parquet", lambda path: frame.to_parquet(path, write_index=False))
    return _write_knowledge_and_policy(out, mh, text)


@path_arguments(out_dir="the folder to write into", path="the PBC data file")
def write_pbc(
    out_dir: str | Path,
    path: str | Path,
    *,
    keep: Literal["last", "first"] = "last",
    source: str = "auto",
    drop_missing: bool = False,
    privacy: dict[str, Any] | None = None,
    min_view_size: int | None = None,
    overwrite: bool = False,
) -> Path:
    """Write the PBC history and its policy into ``out_dir`` (created if needed; ``dpriv
    generate pbc --out`` wants its parent to exist).

    Files (created; replaced only with ``overwrite=True`` and only while unchanged since dpriv
    generate wrote them, :func:`check_generated`; recorded in ``.dpriv-outputs``)::

        out_dir/history.parquet   respondent_id, view, age, sex, stage (SENSITIVE: has ids)
        out_dir/policy.toml       the policy of :func:`pbc_history`

    Parameters
    ----------
    out_dir : str or Path
        Output folder.
    path, keep, source, drop_missing, min_view_size
        As in :func:`pbc_history`.
    privacy : dict, optional
        ``k``, ``t`` and/or ``j`` overriding :data:`PBC_PRIVACY`.
    overwrite : bool
        Replace files an earlier ``write_pbc`` wrote (unchanged since); others are refused.

    Returns
    -------
    Path
        The path of ``policy.toml`` (``dpriv release out_dir/history.parquet --policy``
        it).
    """
    params = {**PBC_PRIVACY, **(privacy or {})}
    unknown = sorted(set(params) - set(PBC_PRIVACY))
    if unknown:
        raise InputError(f"privacy accepts only k, t and j, got {unknown}")
    out = Path(out_dir)
    check_generated(out, overwrite=overwrite, files=PBC_FILES)  # before reading the cohort
    history, policy = pbc_history(
        path,
        keep=keep,
        source=source,
        drop_missing=drop_missing,
        k=int(params["k"]),
        t=float(params["t"]),
        j=float(params["j"]),
        min_view_size=min_view_size,
    )
    frame = history.copy()
    frame.attrs = {}
    put_generated(out, "history.parquet", lambda path: frame.to_parquet(path, index=False))
    text = toml_dumps(policy)
    return put_generated(out, "policy.toml", lambda path: path.write_text(text, encoding="utf-8"))
