"""Mondrian multidimensional partitioning: the k / ℓ / t / (B,t) baselines (docs/algorithms.md §4.4).

:func:`mondrian_groups` is the kernel: Algorithm A4 over a numeric grid of QI values
(categorical QIs as their rank in the domain order), iterative with an explicit stack and
NumPy per node (one ``np.partition`` or ``argsort`` on the node's index array, no
per-tuple Python loop). :func:`mondrian_view` turns a pandas view into the released view
of docs/released-format.md through :func:`dpriv.released.create_qig`, so every
released interval is the TRUE min/max of its group on every QI (not the stale range of
the parent partition on a dimension that was not cut).

An *allowable* cut (§4.4) leaves both halves with at least ``k`` tuples and, per model:

* ``"k"``: nothing more (§4.3);
* ``"l"``: at least ``l`` distinct sensitive values in each half (distinct ℓ-diversity, §4.2);
* ``"t"``: each half within EMD ``t`` of the WHOLE view's sensitive distribution, decided
  exactly on integer counts with :func:`~dpriv.divergence.emd_num_den` (E18/E19);
* ``"bt"``: a caller-supplied ``allowable(indices) -> bool`` holds on each half
  ((B,t)-privacy (E16), §3.6; the posterior code supplies the callable).

For k, ℓ and t a union of valid halves is valid, so checking the root once guarantees that
every output group is valid; for (B,t) there is no such guarantee, so the root is checked
with the callable too. A root that fails its model raises :class:`~dpriv.errors.PolicyError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpriv._dispatch import to_pandas
from dpriv._random import keyed, stable_hash
from dpriv.anonymity.mondrian_inputs import check_inputs
from dpriv.criteria import GROUND_NAMES, BTPrivacy, DistinctL, KAnonymity, TCloseness
from dpriv.divergence import EQUAL, GROUNDS
from dpriv.errors import InputError, PolicyError
from dpriv.policy import ReleasePolicy
from dpriv.released import LABEL, ORDER, SCODE, create_qig, group_labels, in_release_order
from dpriv.validate import codes, validate_view

Allowable = Callable[[np.ndarray], bool]


# ---------------------------------------------------------------------------------------
# kernel
# ---------------------------------------------------------------------------------------
def mondrian_groups(
    qi_grid: np.ndarray,
    s: np.ndarray,
    view_counts: np.ndarray,
    *,
    k: int,
    model: str,
    l: int = 3,  # noqa: E741 - the name of the ℓ-diversity parameter
    t: float = 0.3,
    ground: int = EQUAL,
    widths: np.ndarray | None = None,
    strict: bool = True,
    allowable: Allowable | None = None,
    trees: dict | None = None,
) -> np.ndarray:
    """Mondrian (Algorithm A4, docs/algorithms.md §4.4) QI-groups of ``n`` tuples.

    Parameters
    ----------
    qi_grid : array of shape (n, m), int or float, finite
        QI values; a categorical QI is given as its rank in the domain order.
    s : int array of shape (n,)
        Sensitive codes in ``[0, M)`` (policy domain order). Only read by ``"l"`` and ``"t"``.
    view_counts : int array of shape (M,)
        Sensitive counts of the WHOLE view: the reference distribution of ``"t"`` (E9).
    k : int >= 1
        Minimum group size, required by every model (use 1 to disable it).
    model : {"k", "l", "t", "bt"}
        Privacy model that decides whether a cut is allowable (module docstring).
    l : int >= 1
        Distinct ℓ-diversity (§4.2), ``model="l"`` only.
    t : float in [0, 1]
        EMD threshold (E18 / E19), ``model="t"`` only; inclusive (``EMD <= t``).
    ground : int
        ``EQUAL`` (E18) or ``ORDERED`` (E19) ground distance, ``model="t"`` only.
    widths : float array of shape (m,), >= 0, optional
        Table range ``max_T - min_T`` of every QI, the denominator of the normalised range
        of choose_dimension. Default: the ranges of ``qi_grid``. A zero width is allowed for
        a constant column (its normalised range is 0; no division by zero).
    strict : bool
        True (default): strict partitioning, LHS ``<= splitVal <`` RHS, regions do not
        overlap. False: relaxed, the tuples equal to the median are divided between the
        halves (stable, by row position) so that ``|LHS| = floor(|P| / 2)``.
    allowable : callable, optional
        ``allowable(indices) -> bool`` with ``indices`` an int64 array (sorted, positions in
        ``0..n-1``) of a candidate group; required by ``model="bt"``, ignored otherwise.
    trees : dict QI position -> :class:`dpriv.hierarchy.Hierarchy`, optional
        Categorical QIs with a hierarchy (their grid value is the leaf position in tree
        order): their normalised range is ARX's loss of the partition's lowest common node,
        and they are cut only between two children of that node (the most balanced
        allowable boundary), never inside a child (LeFevre et al.'s categorical cut).

    Returns
    -------
    groups : int64 array of shape (n,)
        Group number of every tuple, ``0..G-1``, numbered in left-to-right region order
        (the LHS of every cut before its RHS). Deterministic: same input, same output.

    Raises
    ------
    ValueError
        Bad shapes, NaN/inf QI values, ``s`` outside ``[0, M)``, a negative width or a zero
        width on a non-constant column, an unknown model, ``k < 1``, or ``"bt"`` without
        a callable.
    PolicyError
        The whole input already fails the model (``n < k``, fewer than ``l`` distinct
        sensitive values, root EMD above ``t``, or ``allowable`` false on the root): no
        partition can satisfy it.

    Notes
    -----
    choose_dimension: the QI with the widest normalised range ``(max_P - min_P) / width``,
    ties by QI order; when its median cut is not allowable the next widest is tried, and
    a partition with no allowable cut on any QI becomes a group. find_median: the lower
    median, the first distinct value whose cumulative count reaches ``floor(|P| / 2)``
    (the value at sorted position ``floor(|P| / 2) - 1``); a cut whose RHS is empty is
    not allowable. Cost ``O(N log N)`` NumPy work plus ``O(G)`` Python iterations.
    """
    grid, s, counts, widths = check_inputs(
        qi_grid, s, view_counts, widths, k=k, model=model, l=l, ground=ground, allowable=allowable
    )
    n = grid.shape[0]
    if n == 0:
        return np.empty(0, dtype=np.int64)
    cut = _Cutter(
        grid, s, counts, widths, k=k, model=model, l=l, t=t, ground=ground, strict=strict, allowable=allowable
    )
    cut.trees = dict(trees or {})
    root = np.arange(n, dtype=np.int64)
    cut.check_root(root)

    groups = np.empty(n, dtype=np.int64)
    n_groups = 0
    stack = [root]
    while stack:
        idx = stack.pop()
        halves = cut(idx)
        if halves is None:
            groups[idx] = n_groups
            n_groups += 1
        else:
            stack.append(halves[1])  # RHS below LHS: the LHS is finished first
            stack.append(halves[0])
    return groups


class _Cutter:
    """Finds the allowable median cut of one partition (or None), A4 lines 1-7."""

    def __init__(self, grid, s, counts, widths, *, k, model, l, t, ground, strict, allowable):  # noqa: E741
        self.grid, self.s, self.counts, self.widths = grid, s, counts, widths
        self.k, self.model, self.l, self.t, self.ground = k, model, l, t, ground
        self.strict, self.allowable = strict, allowable
        self.trees: dict = {}
        self.n_view = int(counts.sum())
        self.m_values = counts.shape[0]
        # below this size no cut can leave two halves that are large (and diverse) enough
        self.min_split = 2 * (max(k, l) if model == "l" else k)
        # a cut is allowable when both halves meet k and the model's criterion (dpriv.criteria)
        self.size = KAnonymity(k)
        self.crit = {
            "k": None,
            "l": DistinctL(l),
            "t": TCloseness(t, GROUND_NAMES[ground], tuple(int(c) for c in counts)),
            "bt": BTPrivacy(float("nan"), allowable=allowable),  # its t is inside allowable
        }[model]

    def check_root(self, root: np.ndarray) -> None:
        n = root.shape[0]
        if not self.size.holds_size(n):
            raise PolicyError(f"k = {self.k} is larger than the input ({n} tuples): lower k or add data")
        if self.model in ("l", "t"):
            c = np.bincount(self.s, minlength=self.m_values).astype(np.int64)
            if self.model == "l" and not self.crit.holds_counts(c):
                raise PolicyError(
                    f"the input has {np.count_nonzero(c)} distinct sensitive values, fewer than "
                    f"l = {self.l}: no QI-group can be {self.l}-diverse; lower l ([privacy] l, --l)"
                )
            if self.model == "t" and not self.crit.holds_counts(c):
                raise PolicyError(
                    f"the whole input is farther than t = {self.t} (EMD) from the view "
                    "distribution given: check view_counts or raise t"
                )
        if self.model == "bt" and not self.crit.holds_rows(root):
            raise PolicyError(
                "the whole view fails (B,t)-privacy (the allowable check on the root "
                "group): no Mondrian partition can satisfy it; raise bt_t or bt_b ([privacy], --bt-t, --bt-b)"
            )

    def _halves_ok(self, lhs: np.ndarray, rhs: np.ndarray, c_node: np.ndarray | None) -> bool:
        if self.model == "l" or self.model == "t":
            c_l = np.bincount(self.s[lhs], minlength=self.m_values).astype(np.int64)
            c_r = c_node - c_l
            return self.crit.holds_counts(c_l) and self.crit.holds_counts(c_r)
        if self.model == "bt":
            return self.crit.holds_rows(lhs) and self.crit.holds_rows(rhs)
        return True

    def __call__(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        n = idx.shape[0]
        if n < self.min_split:
            return None
        sub = self.grid[idx]
        span = sub.max(axis=0) - sub.min(axis=0)
        norm = np.divide(span, self.widths, out=np.zeros(span.shape, dtype=np.float64), where=self.widths > 0)
        nodes = {}
        for d, h in self.trees.items():  # ARX's loss of the lowest common node
            nodes[d] = int(h.lowest_common(sub[:, d].min(keepdims=True), sub[:, d].max(keepdims=True))[0])
            norm[d] = h.loss(h.names[nodes[d]])
        c_node = (
            np.bincount(self.s[idx], minlength=self.m_values).astype(np.int64)
            if self.model in ("l", "t")
            else None
        )
        h = n // 2
        for d in np.argsort(-norm, kind="stable"):  # widest first, ties by QI order
            if not span[d] > 0:
                continue  # a constant dimension has no cut with a non-empty RHS
            v = sub[:, d]
            if d in nodes:
                halves = self._tree_cut(idx, v, self.trees[d].child_starts(nodes[d]), c_node)
                if halves is not None:
                    return halves
                continue
            if self.strict:
                split = v.min() if h == 0 else np.partition(v, h - 1)[h - 1]  # lower median
                mask = v <= split
                n_l = int(np.count_nonzero(mask))
                if not (self.size.holds_size(n_l) and self.size.holds_size(n - n_l)):
                    continue  # includes an empty RHS
                lhs, rhs = idx[mask], idx[~mask]
            else:
                if not (self.size.holds_size(h) and self.size.holds_size(n - h)):
                    continue
                order = np.argsort(v, kind="stable")
                lhs, rhs = idx[np.sort(order[:h])], idx[np.sort(order[h:])]
            if self._halves_ok(lhs, rhs, c_node):
                return lhs, rhs
        return None

    def _tree_cut(self, idx, v, starts, c_node) -> tuple[np.ndarray, np.ndarray] | None:
        """The allowable cut of ``idx`` at a child boundary (``v < b`` | ``v >= b``) whose
        sides are the most balanced, or None."""
        n_left = np.searchsorted(np.sort(v), starts, side="left")
        for i in np.argsort(np.abs(2 * n_left - len(v)), kind="stable"):
            mask = v < starts[i]
            if self.size.holds_size(int(n_left[i])) and self.size.holds_size(len(v) - int(n_left[i])):
                if self._halves_ok(idx[mask], idx[~mask], c_node):
                    return idx[mask], idx[~mask]
        return None


# ---------------------------------------------------------------------------------------
# released view
# ---------------------------------------------------------------------------------------
@dataclass
class MondrianRelease:
    """Result of :func:`mondrian_view`.

    Attributes
    ----------
    released : pandas DataFrame
        The public view V* (docs/released-format.md): ``qi_group``, ``<qi>_min`` /
        ``<qi>_max`` per numeric QI, ``<qi>`` value set per categorical QI, the sensitive
        column; rows in a seeded shuffled order, no id.
    assigned : pandas DataFrame
        Private: the view's rows (input order, index reset) plus ``_s`` (int64 sensitive
        code) and ``_label`` (int64, the ``qi_group`` of the row's group).
    n_groups : int
        Number of QI-groups.
    n_suppressed : int
        Tuples left out; always 0 (Mondrian keeps every tuple; kept for the release loop).
    """

    released: pd.DataFrame
    assigned: pd.DataFrame
    n_groups: int
    n_suppressed: int = 0


def qi_grid_of(view: pd.DataFrame, policy: ReleasePolicy) -> tuple[np.ndarray, np.ndarray]:
    """QI grid of a view and the table width of every QI.

    Returns
    -------
    grid : float64 array of shape (n, m)
        Numeric QIs as values, categorical QIs as their rank in ``policy.domains[q]``.
    widths : float64 array of shape (m,)
        ``max - min`` of every column over the view (0 for a constant column).

    Raises
    ------
    InputError
        A categorical value outside its declared domain.
    """
    cols = []
    for q in policy.qi:
        if policy.kind(q) == "numeric":
            cols.append(view[q].to_numpy(dtype=np.float64))
        else:
            c = codes(view[q], policy.domains[q])
            if (c < 0).any():
                raise InputError(f"categorical QI {q!r} has values not among its declared levels")
            cols.append(c.astype(np.float64))
    grid = np.column_stack(cols) if cols else np.zeros((len(view), 0))
    widths = grid.max(axis=0) - grid.min(axis=0) if len(view) else np.zeros(grid.shape[1])
    return grid, widths


def mondrian_view(
    view: pd.DataFrame,
    policy: ReleasePolicy,
    *,
    model: str,
    l: int = 3,  # noqa: E741
    allowable: Allowable | None = None,
    strict: bool = True,
) -> MondrianRelease:
    """Release one view with Mondrian under k / distinct ℓ / t / (B,t) (docs/algorithms.md §4.4).

    Parameters
    ----------
    view : pandas DataFrame
        The policy's id, QI and sensitive columns (other columns are carried into
        ``assigned`` only). A Dask frame is computed first: Mondrian is a single-machine
        baseline.
    policy : ReleasePolicy
        Resolved (every QI and the sensitive column have a domain); ``k``, ``t``,
        ``emd_ground`` and ``seed`` are used.
    model : {"k", "l", "t", "bt"}
        See :func:`mondrian_groups`; ``"t"`` uses the view's own sensitive distribution.
    l : int
        Distinct ℓ-diversity for ``model="l"``.
    allowable : callable, optional
        ``allowable(indices) -> bool`` for ``model="bt"``; ``indices`` are int64 row
        positions in ``view`` (0-based, sorted).
    strict : bool
        Strict (default) or relaxed Mondrian.

    Returns
    -------
    MondrianRelease
        ``released`` (rows sorted by the seeded ``_order`` key, which is then dropped),
        ``assigned`` (private ``_label`` per respondent), ``n_groups``.

    Raises
    ------
    InputError
        The view does not match the policy (:func:`dpriv.validate.validate_view`).
    PolicyError
        Unresolved policy, k larger than the view, or a model the whole view cannot meet.
    """
    view = to_pandas(view)
    summary = validate_view(view, policy)
    view = view.reset_index(drop=True)
    grid, widths = qi_grid_of(view, policy)
    s = codes(view[policy.sensitive], policy.sensitive_domain)
    groups = mondrian_groups(
        grid,
        s,
        summary.s_counts,
        k=policy.k,
        model=model,
        l=l,
        t=policy.t,
        ground=GROUNDS[policy.emd_ground],
        widths=widths,
        strict=strict,
        allowable=allowable,
        trees={i: policy.hierarchy(q) for i, q in enumerate(policy.qi) if q in policy.hierarchies},
    )
    ties = keyed(stable_hash(view[policy.id]), policy.seed, "tie")
    assigned = view.assign(**{SCODE: s, LABEL: group_labels(ties, groups, policy.seed)})
    released = create_qig(assigned, policy)
    released = in_release_order(released).drop(columns=ORDER)
    n_groups = int(groups.max()) + 1 if len(groups) else 0
    return MondrianRelease(released=released, assigned=assigned, n_groups=n_groups)
