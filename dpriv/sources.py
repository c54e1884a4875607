"""Where background knowledge comes from (the policy's ``[knowledge]``, docs/algorithms.md §1.2).

The defender's BK^sv / BK^seq (a ``.npz`` table file, or IE mining of the views released so
far) and the adversary's specifications (``dk``, ``dk-<n>``, ``ie``, ``spm:PATH``,
``snapshot[:<spec>]``), resolved to :class:`~dpriv.knowledge.tables.MarkovTables`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import dask.dataframe as dd
import numpy as np
import pandas as pd

from dpriv._dispatch import to_pandas
from dpriv.errors import InputError, KnowledgeFileError, PolicyError
from dpriv.io import read_table
from dpriv.knowledge.sequential import IEMiner, mine_sequences
from dpriv.knowledge.tables import MarkovTables, single_class_map
from dpriv.policy import ReleasePolicy
from dpriv.validate import codes


@dataclass
class DefenderKnowledge:
    """The defender's model of the adversary: BK^sv and BK^seq tables, or IE mining."""

    source: str
    tables: MarkovTables | None = None  # None for "ie": mined from the views released so far
    digest: str | None = None  # sha256 of the table file: a ledger keeps its knowledge

    @property
    def order(self) -> int:
        return self.tables.order if self.tables is not None else 3

    def at(self, history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, before: int) -> MarkovTables:
        """Tables to revise with before release ``before`` (IE: mined from views < before;
        the id, time and sensitive columns of those views are collected on the client)."""
        if self.tables is not None:
            return self.tables
        past = history.loc[history[policy.time] < before, [policy.id, policy.time, policy.sensitive]]
        past = to_pandas(past)
        if past.empty:  # nothing mined yet: uniform BK^sv and no sequential knowledge
            return unmined_tables(policy, self.order)
        return mine_views(past, policy, self.order)

    def tracker(
        self, history: pd.DataFrame | dd.DataFrame, policy: ReleasePolicy, before: int
    ) -> KnowledgeTracker:
        """A :class:`KnowledgeTracker` holding the tables to revise with before release
        ``before``; for IE, the views < ``before`` are counted here, once (a resumed release
        loop recomputes its counts from the history, in one pass over those views)."""
        tracker = KnowledgeTracker(self, policy)
        if self.tables is None:
            past = to_pandas(
                history.loc[history[policy.time] < before, [policy.id, policy.time, policy.sensitive]]
            )
            for _, view in past.groupby(policy.time, sort=True):
                tracker.add(view)
        return tracker


def unmined_tables(policy: ReleasePolicy, order: int) -> MarkovTables:
    """IE before any view is mined: uniform BK^sv and no sequential knowledge (all-zero
    tables, so RBK falls back to BK^sv)."""
    m = len(policy.sensitive_domain)
    tabs = [np.full((1, 1, m), 1.0 / m)] + [np.zeros((1, m**L, m)) for L in range(1, order + 1)]
    return MarkovTables(tuple(str(v) for v in policy.sensitive_domain), single_class_map(), tabs)


class KnowledgeTracker:
    """The defender's tables along the release loop (issue 13, item 3): fixed tables, or
    IE-BK^seq (Algorithm 3) counted incrementally, one original view at a time
    (:class:`~dpriv.knowledge.sequential.IEMiner`), so that release ``i`` costs O(|V_i|)
    instead of re-mining views 1..i-1 (quadratic in the history). :meth:`tables` equals
    :meth:`DefenderKnowledge.at` of the next release: the counts are the same integers.
    """

    def __init__(self, knowledge: DefenderKnowledge, policy: ReleasePolicy) -> None:
        self.knowledge, self.policy = knowledge, policy
        self.miner = None
        if knowledge.tables is None:
            self.miner = IEMiner(
                [str(v) for v in policy.sensitive_domain],
                order=knowledge.order,
                id_col=policy.id,
                time_col=policy.time,
                s_col="_s",
            )

    def tables(self) -> MarkovTables:
        """The tables to revise with before the next release."""
        if self.miner is None:
            return self.knowledge.tables
        if self.miner.n_views == 0:
            return unmined_tables(self.policy, self.knowledge.order)
        return self.miner.tables()

    def add(self, view: pd.DataFrame | dd.DataFrame) -> None:
        """Count original view ``view`` (the policy's id, time and sensitive columns; views
        in time order). A no-op for fixed tables."""
        if self.miner is None:
            return
        p = self.policy
        rows = to_pandas(view[[p.id, p.time, p.sensitive]])
        self.miner.update(rows.assign(_s=codes(rows[p.sensitive], p.sensitive_domain)))


def mine_views(
    rows: pd.DataFrame, policy: ReleasePolicy, order: int, s: np.ndarray | None = None
) -> MarkovTables:
    """IE-BK^seq (Algorithm 3) mined from original tuples (id, time, sensitive columns);
    ``s``: their sensitive codes when already computed."""
    frame = pd.DataFrame(
        {
            "respondent": rows[policy.id].to_numpy(),
            "time": rows[policy.time].to_numpy(),
            "s": codes(rows[policy.sensitive], policy.sensitive_domain) if s is None else s,
        }
    )
    values = [str(v) for v in policy.sensitive_domain]
    return mine_sequences(frame, values, order=order, id_col="respondent", time_col="time", s_col="s")


def check_tables(tables: MarkovTables, policy: ReleasePolicy, where: object) -> MarkovTables:
    """``tables`` if they are over the policy's sensitive domain, else PolicyError."""
    mine, theirs = list(tables.values), [str(v) for v in policy.sensitive_domain]
    if mine != theirs:
        what = (
            "the same values in another order"
            if sorted(mine) == sorted(theirs)
            else f"values only in the tables: {[v for v in mine if v not in theirs][:5]}, only in the "
            f"policy: {[v for v in theirs if v not in mine][:5]}"
        )
        raise PolicyError(
            f"knowledge {where} is over {len(mine)} sensitive values, not the policy's {len(theirs)} "
            f"({what}): declare [domains] {policy.sensitive} = {mine} (the tables' order) in the "
            "policy, or use tables mined on the policy's domain"
        )
    if problem := class_map_problem(tables, policy, where):
        raise PolicyError(problem)
    return tables


def class_map_problem(tables: MarkovTables, policy: ReleasePolicy, where: object) -> str | None:
    """Why the knowledge classes of ``tables`` (from ``where``, e.g. the file) cannot classify the
    policy's QIs, or None: a QI the tables cut into numeric ranges that the policy holds as
    categorical values which are not numbers (text codes such as "F"), which would fail only
    inside the release. Categorical numbers (an age generalized along a hierarchy) are classified
    by their value, as before."""
    for name, bins, numeric in zip(tables.classes.qi, tables.classes.bins, tables.classes.numeric):
        if not numeric or name not in policy.qi or policy.kind(name) == "numeric":
            continue
        domain = list(policy.domains.get(name, []))
        try:
            np.asarray(domain, dtype=object).astype(float)
        except (TypeError, ValueError):
            return (
                f"knowledge file {where} classifies QI {name!r} by numeric ranges (cut points "
                f"{list(bins)}) while the data and policy hold {name!r} as categorical values "
                f"(domain {domain}): recode {name!r} as the numbers of the knowledge file, or use a "
                f"knowledge file built for its categorical values"
            )
    return None


def defender_knowledge(policy: ReleasePolicy) -> DefenderKnowledge:
    """From ``[knowledge]``: ``defender`` names an entry (a .npz table file) or ``"ie"``."""
    source = policy.knowledge.get("defender", "dk" if "dk" in policy.knowledge else "ie")
    if source == "ie":
        return DefenderKnowledge("ie")
    if source not in policy.knowledge:
        entries = sorted(k for k in policy.knowledge if k != "defender")
        raise PolicyError(
            f'[knowledge] defender = {source!r} is neither an entry of [knowledge] ({entries}) nor "ie": '
            "name one of them"
        )
    path = policy.knowledge_path(source)
    if path is None or not path.is_file():
        state = "is a folder" if path is not None and path.is_dir() else "does not exist"
        where = "" if path is None else f" ({path.absolute()} {state})"
        raise KnowledgeFileError(
            f"[knowledge] {source!r} must name an existing .npz table file, got {path}{where}"
        )
    tables = check_tables(MarkovTables.load(path), policy, path)
    return DefenderKnowledge(source, tables, hashlib.sha256(path.read_bytes()).hexdigest())


#: The knowledge specifications :func:`attack` accepts (``spm:PATH`` with a corpus file).
KNOWLEDGE_NAMES = ("snapshot", "dk", "dk-1", "dk-2", "dk-3", "spm:PATH", "ie")


_TABLE_KEYS = ("dk", "dk-1", "dk-2", "dk-3")


@dataclass
class AdversaryKnowledge:
    """The adversary's BK^sv / BK^seq and whether it revises (§1.2, §2.4).

    Attributes
    ----------
    name : the specification it was built from (e.g. ``"dk-1"``, ``"snapshot"``)
    source : where the tables come from; :meth:`DefenderKnowledge.at` gives the tables to
        use before release ``i`` (fixed tables, or IE-mined from the original views < i)
    revise : False for a snapshot attack: every release uses BK^sv (the order-0 table)
    """

    name: str
    source: DefenderKnowledge
    revise: bool = True
    _counter: IECounter | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def window(self) -> int:
        """Posteriors kept per respondent: the order of BK^seq (0 for a snapshot attack)."""
        return self.source.order if self.revise else 0

    def tables_before(self, history: pd.DataFrame, policy: ReleasePolicy, index: int) -> MarkovTables:
        """The tables the adversary uses for release ``index``: fixed tables, or IE-BK^seq
        of the original views < ``index``, counted incrementally along increasing indices
        (:class:`IECounter`: one pass over the history for the whole attack, the same
        tables as the re-mine :meth:`DefenderKnowledge.at`)."""
        if self.source.tables is not None:
            return self.source.tables
        if self._counter is None or not self._counter.serves(history, policy, index):
            self._counter = IECounter(self.source, history, policy)
        return self._counter.before(index)


class IECounter:
    """IE-BK^seq of a history before release ``index``, for increasing indices: the views
    are split once by time (one pass), then each call counts only the views not yet counted
    (:class:`KnowledgeTracker`). A smaller index than the last one's views is not served
    (:meth:`serves` is False: the caller starts a new counter, one more pass)."""

    def __init__(self, knowledge: DefenderKnowledge, history: pd.DataFrame, policy: ReleasePolicy) -> None:
        self.history, self.policy = history, policy
        self.tracker = KnowledgeTracker(knowledge, policy)
        rows = to_pandas(history[[policy.id, policy.time, policy.sensitive]])
        self.views = [view for _, view in rows.groupby(policy.time, sort=True)]
        self.times = np.array([v[policy.time].iloc[0] for v in self.views])
        self.counted = 0  # views counted so far: self.views[:counted]

    def _needed(self, index: int) -> int:
        return int(np.searchsorted(self.times, index, side="left"))  # the views with time < index

    def serves(self, history: pd.DataFrame, policy: ReleasePolicy, index: int) -> bool:
        """Whether :meth:`before` can answer for ``index`` without recounting."""
        same = history is self.history and (policy is self.policy or policy == self.policy)
        return same and self._needed(index) >= self.counted

    def before(self, index: int) -> MarkovTables:
        """The tables of the views with time < ``index`` (uniform BK^sv before any view)."""
        needed = self._needed(index)
        if needed < self.counted:
            raise ValueError(f"views up to {self.counted} already counted; {index} needs {needed}")
        for view in self.views[self.counted : needed]:
            self.tracker.add(view)
        self.counted = needed
        return self.tracker.tables()


def _load_corpus(path: str) -> pd.DataFrame:
    """The SPM corpus at ``path``; InputError naming ``spm:PATH`` for a local file that does not
    exist (read_table's "input ... does not exist" did not say which option gave it)."""
    local = Path(path).expanduser()  # read_table expands ~ too
    if "://" not in path and not local.exists():
        raise InputError(
            f"the SPM corpus {path} of the knowledge 'spm:{path}' (--knowledge spm:{path}) does not exist "
            f"({local.absolute()}): give the path of a corpus file (CSV or Parquet) after spm:"
        )
    return read_table(path, what="SPM corpus").compute()


def _mine_corpus(corpus: pd.DataFrame, policy: ReleasePolicy, where: str) -> MarkovTables:
    """SPM-BK^seq: Algorithm 3 on an external corpus, mined like the defender's IE (§1.2)."""
    needed = [c for c in (policy.id, policy.time, policy.sensitive) if c]
    if not policy.time:
        raise PolicyError('SPM mining needs a time column: set [columns] time (e.g. "view")')
    absent = [c for c in needed if c not in corpus.columns]
    if absent:
        raise InputError(f"SPM corpus {where} lacks column(s) {absent}; it has {list(corpus.columns)}")
    s = codes(corpus[policy.sensitive], policy.sensitive_domain)
    if (s < 0).any():
        bad = corpus[policy.sensitive].to_numpy()[s < 0][0]
        raise InputError(
            f"SPM corpus {where}: {policy.sensitive}={bad!r} is not in the sensitive domain "
            f"{policy.sensitive_domain[:5]}..."
        )
    return mine_views(corpus, policy, DefenderKnowledge("ie").order, s)


def check_knowledge_name(knowledge: str) -> None:
    """Raise PolicyError, naming the valid ones, unless ``knowledge`` is a valid specification
    (:data:`KNOWLEDGE_NAMES`, ``"spm"``, or ``"snapshot:<another one>"``); reads no file."""
    spec = str(knowledge).strip()
    inner = spec.partition(":")[2] if spec.startswith("snapshot:") else spec
    if inner in ("ie", "spm", *_TABLE_KEYS) or inner.startswith("spm:") or spec == "snapshot":
        return
    raise PolicyError(
        f"unknown adversary knowledge {spec!r}; valid: {', '.join(KNOWLEDGE_NAMES)} "
        "(and snapshot:<one of the others>)"
    )


def _missing_table(spec: str, entries: list[str]) -> str:
    """What to do when the knowledge table ``spec`` (dk, dk-1...) has no ``[knowledge]`` entry
    among ``entries``: a policy written for one's own data has no model table at all (only
    ``dpriv generate medical`` writes one), so the knowledge the history alone gives is named
    first, and the entries it has, if any."""
    has = f"it names {', '.join(repr(e) for e in entries)}" if entries else "it has no [knowledge] table"
    return (
        f"knowledge {spec!r} is not in the policy's [knowledge] table ({has}): {spec!r} is a table file "
        "of the adversary's model (dpriv generate medical writes knowledge/dk.npz for its generator). "
        "Without such a file, attack with the knowledge the history gives: --knowledge ie (mined from "
        "the views released so far), snapshot (one-shot priors, no revision) or spm:PATH (mined from a "
        f'corpus file); with one, add {spec} = "PATH.npz" to [knowledge] (docs/policy.md)'
    )


def adversary_knowledge(
    knowledge: str, policy: ReleasePolicy, *, corpus: pd.DataFrame | None = None
) -> AdversaryKnowledge:
    """Resolve a knowledge specification (one of :data:`KNOWLEDGE_NAMES`).

    Parameters
    ----------
    knowledge : str
        ``"dk"``, ``"dk-1"``, ``"dk-2"``, ``"dk-3"``: the ``.npz`` table file of that name in
        the policy's ``[knowledge]`` (DK-BK^seq, full or n-step); ``"ie"``: IE-BK^seq mined
        from the original views before each release, as the defender does (§2.3);
        ``"spm:PATH"``: SPM-BK^seq, Algorithm 3 on the corpus file PATH (Parquet or CSV with
        the policy's id, time and sensitive columns), or on ``corpus`` with ``"spm"``;
        ``"snapshot"``: BK^sv only, no revision, with the defender's BK^sv
        (:func:`defender_knowledge`: ``dk`` unless ``[knowledge] defender``
        says otherwise); ``"snapshot:<spec>"`` takes BK^sv from another specification.
        BK^sv is always the order-0 table of the adversary's tables (with their class map).
    policy : ReleasePolicy
        Resolved policy (its sensitive domain orders the tables).
    corpus : pandas.DataFrame, optional
        The SPM corpus when already loaded (``"spm"`` or ``"spm:"``).

    Returns
    -------
    AdversaryKnowledge

    Raises
    ------
    PolicyError
        An unknown specification (the message lists :data:`KNOWLEDGE_NAMES`), a table file
        missing from ``[knowledge]`` or from disk, or tables over another sensitive domain.
    InputError
        An SPM corpus that cannot be read, lacks a column or holds values outside D[S];
        both a corpus file and a ``corpus`` frame.
    """
    check_knowledge_name(knowledge)
    spec = str(knowledge).strip()
    if spec == "snapshot" or spec.startswith("snapshot:"):
        inner = spec.partition(":")[2]
        if inner:
            base = adversary_knowledge(inner, policy, corpus=corpus).source
        else:
            base = defender_knowledge(policy)
            if base.tables is not None:
                check_tables(base.tables, policy, policy.knowledge_path(base.source))
        return AdversaryKnowledge(spec, base, revise=False)
    if spec in _TABLE_KEYS:
        path = policy.knowledge_path(spec)
        if path is None:
            raise PolicyError(_missing_table(spec, sorted(policy.knowledge)))
        if not Path(path).is_file():
            raise KnowledgeFileError(f"[knowledge] {spec} = {path} does not exist")
        tables = check_tables(MarkovTables.load(path), policy, path)
        return AdversaryKnowledge(spec, DefenderKnowledge(spec, tables))
    if spec == "ie":
        return AdversaryKnowledge(spec, DefenderKnowledge("ie"))
    if spec == "spm" or spec.startswith("spm:"):
        path = spec.partition(":")[2]
        if corpus is not None and path:
            raise InputError(f"knowledge {spec!r} names a corpus file and a corpus frame was given too")
        if corpus is None:
            if not path:
                raise PolicyError(
                    'knowledge "spm" needs a corpus: name its file ("spm:PATH", --knowledge spm:PATH), '
                    "or pass corpus= (a DataFrame, from Python)"
                )
            corpus, where = _load_corpus(path), path
        else:
            where = "(corpus frame)"
        tables = _mine_corpus(corpus, policy, where)
        return AdversaryKnowledge(spec, DefenderKnowledge("spm", tables))
    raise AssertionError(spec)  # pragma: no cover - check_knowledge_name covers every case
