"""The retrospective (smoothing) adversary: every earlier release attacked again "as of" each
later one (issue 11; docs/algorithms.md §1.1 assumptions, §1.4 BK^seq, §3.3 Ω (E14), (E10)).

After release ``a`` is out, the adversary of §1.1 (exact BK^seq, QI-group membership known)
re-reads every release ``i <= a`` in the light of releases ``1 .. a``:

1. **Evidence of each release** (computed once, when release ``j`` comes out): the forward
   prediction of each member's value at ``j`` given releases ``< j`` (a forward pass over her
   feasible context states, :mod:`dpriv.adversary.smoothing`), one Ω step per group of ``j``
   with those priors, and the member's *emission* ``e_j = Ω posterior / prediction`` (what
   her group says about her, the Ω likelihood ``n_Q(s)/Σ_Q prior(s)`` up to a constant). The
   forward filter's marginal at ``j`` is that Ω posterior.
2. **As of a**: per respondent, forward-backward over her steps up to ``a`` gives the
   *cavity* prior of each of her releases ``i`` (everything except group ``i``'s own
   evidence); then ONE Ω step per group of ``i`` with the members' cavity priors gives the
   posteriors of release ``i`` as of ``a``. Each group's counts enter each posterior once:
   no loopy re-use of a group's evidence (docs/findings.md: loopier variants were overconfident).

As of ``a = 1`` this is the paper adversary's PK of release 1 (BK^sv priors, one Ω).
Conventions: a respondent's first appearance is her first exam (BK^sv), as in the paper
adversary; with ``attendance=None`` (default) absences carry no information and her chain
advances once per appearance (the paper adversary's reading of a history); with an
``attendance`` q absences are modelled (no exam with 1 - q; an exam suppressed with q times
the release's published suppression share; exited respondents are absent for sure), which
reveals exits. Masks ``allowed`` (exact deductions, bool (n_i, M) per release) multiply the
priors before every Ω and the posteriors after it.

**Partitions** (issue 11, performance): the respondents are cut into partitions
(:mod:`dpriv.adversary.retro_parts`), each running the forward-backward of its own
respondents (the heavy, per-respondent part, a compiled loop). Per as-of release two results
cross partitions: the members' predictions at ``a`` (for Ω of ``a``'s groups, whose
emissions go back to their partitions) and the cavities of the tuples of releases ``<= a``
(for one Ω per group). Ω needs every member's prior, not only the group's counts, so those
rows (not the tuples' data) are gathered and Ω runs on whole groups, which keeps the bytes
the same for any partitioning. In process (default) there is one partition;
``retrospective_attack(..., partitions=N)`` builds the same steps as a Dask graph.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from dpriv._dispatch import broadcast
from dpriv.adversary.groups import group_posterior
from dpriv.adversary.observed import ObservedRelease
from dpriv.adversary.retro_parts import TASKS, Part, split, subset
from dpriv.adversary.smoothing import CompiledTables
from dpriv.adversary.tail import histogram_gain, tail_risk
from dpriv.errors import InputError
from dpriv.knowledge.tables import MarkovTables


@dataclass(frozen=True)
class AsOf:
    """The retrospective adversary's posteriors of releases ``1 .. as_of`` after ``as_of``.

    Attributes
    ----------
    as_of : int
        Release index after which the adversary attacks (``ObservedRelease.index``).
    releases : tuple of int
        Indices of the attacked releases ``i <= as_of``, in order.
    posteriors : tuple of ndarray of float64, shape (n_i, M)
        Posterior of every tuple of each attacked release, aligned on its ObservedRelease
        arrays; rows sum to 1.
    allowed : tuple of ndarray of bool, shape (n_i, M), or None
        The masks used (known as of ``as_of``), None without masks.
    histogram_gains : tuple of float
        Per attacked release, the mean gain (E10) had that release alone been one QI-group:
        one Ω step over all its tuples with the same cavity priors, no masks
        (:func:`dpriv.adversary.tail.histogram_gain`); empty where not computed.
    """

    as_of: int
    releases: tuple[int, ...]
    posteriors: tuple[np.ndarray, ...]
    allowed: tuple[np.ndarray, ...] | None = None
    histogram_gains: tuple[float, ...] = ()


Masks = Sequence[np.ndarray] | Callable[[int], Sequence[np.ndarray]] | None


def _check_masks(
    observed: Sequence[ObservedRelease], masks: Sequence[np.ndarray], m: int
) -> list[np.ndarray]:
    if len(masks) != len(observed):
        raise InputError(f"allowed has {len(masks)} masks for {len(observed)} releases")
    out = []
    for o, a in zip(observed, masks):
        if np.shape(a) != (o.respondent.size, m):
            raise InputError(f"allowed mask of release {o.index} must have shape {(o.respondent.size, m)}")
        out.append(np.asarray(a, dtype=bool))
    return out


def _check(observed: Sequence[ObservedRelease], tables: MarkovTables) -> None:
    m = tables.n_values
    idx = [o.index for o in observed]
    if idx != sorted(set(idx)):
        raise InputError(f"observed releases must be in increasing release order, got {idx}")
    for o in observed:
        if o.counts.shape[1] != m:
            raise InputError(f"release {o.index} has {o.counts.shape[1]} sensitive values, the tables {m}")
        if o.cls.size and (o.cls.min() < 0 or o.cls.max() >= tables.classes.n_classes):
            raise InputError(f"release {o.index}: knowledge classes outside the tables' class map")


def checked_masks(observed, tables, allowed, attendance) -> list[np.ndarray] | None:
    """Check the inputs (InputError as :func:`retrospective_posteriors`); the static masks."""
    _check(observed, tables)
    if attendance is not None and not 0.0 < float(attendance) <= 1.0:
        raise InputError(f"attendance must be in (0, 1], got {attendance!r}")
    if allowed is None or callable(allowed):
        return None
    return _check_masks(observed, allowed, tables.n_values)


def retrospective_posteriors(
    observed: Sequence[ObservedRelease],
    tables: MarkovTables,
    *,
    allowed: Masks = None,
    attendance: float | None = None,
) -> Iterator[AsOf]:
    """Posteriors of every release as of each release (module doc); one :class:`AsOf` per
    release, in order.

    Parameters
    ----------
    observed : sequence of ObservedRelease
        The committed releases, in increasing index order (membership known, §1.1).
    tables : MarkovTables
        The adversary's BK^sv / BK^seq (e.g. the generator's exact order-3 model); classes
        are read from ``ObservedRelease.cls``.
    allowed : sequence of ndarray of bool, shape (n_i, M), or callable, optional
        Exact-deduction masks per release (True = the tuple may hold the value), the same
        for every as-of release; or ``allowed(k)`` giving the masks of the releases at
        positions ``0 .. k`` as known after the release at position ``k`` (deductions from
        releases ``<= k`` only; a mask multiplies the emissions too, so later knowledge
        tightens the evidence of earlier releases).
    attendance : float in (0, 1], optional
        Exam probability q of the model; None: absences are not modelled.

    Yields
    ------
    AsOf
        Posteriors of releases ``1 .. a`` after release ``a``.

    Raises
    ------
    InputError
        Releases out of order, shapes that do not match the tables, a respondent twice in a
        release, masks of the wrong shape, or an attendance outside (0, 1].
    """
    observed = list(observed)
    static = checked_masks(observed, tables, allowed, attendance)
    if not observed:
        return
    yield from _run(observed, tables, static, allowed, attendance, 1, lazy=False)


def _assemble(n: int, m: int, positions: Sequence[np.ndarray], pieces: Sequence[np.ndarray]) -> np.ndarray:
    out = np.zeros((n, m))
    for pos, piece in zip(positions, pieces):
        out[pos] = piece
    return out


def _emissions(observed, a: int, positions, preds, masks) -> list[np.ndarray]:
    """Ω of the groups of release ``a`` with the members' predictions (``masks[a]`` applied);
    each partition's emissions (Ω posterior / prediction, the Ω likelihood up to a constant)."""
    obs, positions = observed[a], [p[a] for p in positions]
    prior = _assemble(obs.respondent.size, obs.counts.shape[1], positions, preds)
    post = group_posterior(obs.group, obs.counts, prior, masks[a])
    with np.errstate(divide="ignore", invalid="ignore"):
        emis = np.where(prior > 0, post / np.where(prior > 0, prior, 1.0), post)
    return [emis[pos] for pos in positions]


def _as_of(observed, a, positions, cavs, masks, with_masks) -> AsOf:
    """One Ω per group of every release ``i <= a`` with the cavities of every partition, and
    one over the whole release (its histogram reference)."""
    posts, levels = [], []
    for i, o in enumerate(observed[: a + 1]):
        cav = _assemble(o.respondent.size, o.counts.shape[1], [p[i] for p in positions], [c[i] for c in cavs])
        posts.append(group_posterior(o.group, o.counts, cav, masks[i]))
        levels.append(histogram_gain(cav, o.truth))
    used = tuple(masks) if with_masks else None
    releases = tuple(o.index for o in observed[: a + 1])
    return AsOf(observed[a].index, releases, tuple(posts), used, tuple(levels))


def _part(observed, positions, k: int, sigma, compiled, attendance) -> Part:
    """Partition ``k`` of the respondents (its tuples of every release)."""
    return Part([subset(o, pos) for o, pos in zip(observed, positions[k])], sigma, compiled, attendance)


def _part_masks(masks, positions, k: int, a: int) -> list[np.ndarray]:
    """Partition ``k``'s rows of the masks of releases ``0 .. a - 1``."""
    return [masks[i][positions[k][i]] for i in range(a)]


def _one_copy(obj, name: str, lazy: bool):
    """``obj`` as an argument of many tasks, its bytes once: in process ``obj``; on Dask a
    future scattered to the workers under a distributed client (the graph holds its key: the
    order-3 tables are ~19 MiB, the masks as of every release O(releases^2) tuples, which
    embedded made the graph grow with them, Dask's large-graph warning), else one graph key.
    A list comes back as a list (of futures), so a slice of it is the list of a prefix."""
    if not lazy:
        return obj
    import dask

    out = broadcast(obj)
    return dask.delayed(obj, name=name, traverse=False) if out is obj else out


def _run(observed, tables, static, allowed, attendance, n_parts: int, lazy: bool):
    """Every as-of release over ``n_parts`` partitions of respondents (module doc): eager
    (yields AsOf) or, with ``lazy``, a Dask graph (yields a Delayed list of rows per as-of)."""
    import dask

    compiled = CompiledTables(tables)
    sigma = []
    for o in observed:
        n_all = o.respondent.size + o.n_suppressed
        sigma.append(o.n_suppressed / n_all if n_all else 0.0)
    positions = split(observed, n_parts)
    wrap = dask.delayed if lazy else (lambda f, **_: f)
    tag = uuid.uuid4().hex
    shared_tables = _one_copy(compiled, f"retro-tables-{tag}", lazy)
    shared_obs = _one_copy(observed, f"retro-observed-{tag}", lazy)
    shared_pos = _one_copy(positions, f"retro-positions-{tag}", lazy)
    shared_static = None if static is None else _one_copy(static, f"retro-masks-{tag}", lazy)
    parts = [wrap(_part)(shared_obs, shared_pos, k, sigma, shared_tables, attendance) for k in range(n_parts)]
    for a in range(len(observed)):
        if allowed is None:
            masks = [None] * (a + 1)
        elif static is not None:
            masks = shared_static[: a + 1]
        else:
            known = _check_masks(observed[: a + 1], allowed(a), tables.n_values)
            masks = _one_copy(known, f"retro-masks-{a}-{tag}", lazy)
        preds = []
        for k in range(n_parts):
            # masks known only later tighten earlier emissions (static masks are already in them)
            pm = (
                wrap(_part_masks)(masks, shared_pos, k, a) if static is None and allowed is not None else None
            )
            parts[k], pred = wrap(TASKS["predict"], nout=2)(parts[k], a, pm)
            preds.append(pred)
        emis = wrap(_emissions, nout=n_parts)(shared_obs, a, shared_pos, preds, masks)
        cavs = []
        for k in range(n_parts):
            parts[k], cav = wrap(TASKS["absorb"], nout=2)(parts[k], a, emis[k])
            cavs.append(cav)
        snap = wrap(_as_of)(shared_obs, a, shared_pos, cavs, masks, allowed is not None)
        yield wrap(_rows)(snap, shared_obs) if lazy else snap


def _rows(snap: AsOf, observed: Sequence[ObservedRelease]) -> list[dict]:
    """Mean gain (E10) and tail risk of every release of one as-of snapshot."""
    by_index = {o.index: o for o in observed}
    rows = []
    for k, (i, post) in enumerate(zip(snap.releases, snap.posteriors)):
        o = by_index[i]
        mask = None if snap.allowed is None else snap.allowed[k]
        risk = tail_risk(post, o.truth, o.frequencies(), mask)
        level = snap.histogram_gains[k] if snap.histogram_gains else float("nan")
        rows.append({"release": i, "as_of": snap.as_of, **risk.as_row(), "histogram_gain": level})
    return rows


def retrospective_attack(
    observed: Sequence[ObservedRelease],
    tables: MarkovTables,
    *,
    allowed: Masks = None,
    attendance: float | None = None,
    partitions: int | None = None,
) -> list[dict]:
    """Mean gain (E10) and tail risk of every release as of every later release.

    Same parameters and errors as :func:`retrospective_posteriors`, and

    partitions : int, optional
        None (default): in this process. An int: on Dask (the current scheduler, e.g. a
        ``distributed.Client``), respondents cut into that many partitions, each running the
        forward-backward of its own respondents; the predictions and cavities of each release
        are gathered for the Ω step of its groups. The rows are the same for any number of
        partitions (a test checks it against the in-process path).

    Returns
    -------
    list of dict
        One row per (release, as_of) with ``release <= as_of``, ordered by as_of then release:
        ``release``, ``as_of``, the fields of :class:`dpriv.adversary.tail.TailRisk` and
        ``histogram_gain`` (:attr:`AsOf.histogram_gains`).
    """
    observed = list(observed)
    if partitions is None:
        rows = []
        for snap in retrospective_posteriors(observed, tables, allowed=allowed, attendance=attendance):
            rows += _rows(snap, observed)
        return rows
    import dask

    static = checked_masks(observed, tables, allowed, attendance)
    if not observed:
        return []
    lazy = list(_run(observed, tables, static, allowed, attendance, int(partitions), lazy=True))
    return [row for rows in dask.compute(*lazy) for row in rows]
