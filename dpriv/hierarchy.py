"""Generalization hierarchies of categorical QIs (ARX format; docs/policy.md "[hierarchies]").

A hierarchy file has no header and one row per original value (a *leaf*), followed by its
generalizations from the least to the most general, ``;``-separated; every row has the same
number of columns and the last column is the root (``*`` in ARX's files), e.g.::

    Bachelors;Undergraduate;Higher education;*
    Masters;Graduate;Higher education;*

(ARX, ``arx-deidentifier/arx:data/adult_hierarchy_education.csv``.) A node is named by its
text; a name may repeat on several levels only when it stands for the same leaves there
(``Private;Private;*``), so the released column can name a node by its text alone.

The leaves are put in **tree order**: rows sorted by their root, then by their node on each
lower level (each in order of first appearance in the file), then by file row. Every node's
leaves are then one contiguous range of positions, so the lowest common node of a set of
leaves is the lowest common node of its first and last leaf, and siblings are adjacent on
the Hilbert curve (the QI's domain is the leaves in this order).
"""

from __future__ import annotations

import csv
import functools
import io
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpriv.errors import InputError


@dataclass(frozen=True)
class Hierarchy:
    """A validated generalization hierarchy (:func:`read_hierarchy`).

    Attributes
    ----------
    path : the file it was read from
    leaves : tuple of str, length L: the leaves in tree order (position = code on the grid)
    node_ids : int64 array of shape (L, H): the node id of every leaf on each level (column 0
        the leaf itself, column H - 1 the root), rows in tree order
    names : tuple of str: node id -> node name
    lo, hi : int64 arrays (one per node id): the node's leaves are positions ``lo <= p < hi``
    """

    path: str
    leaves: tuple[str, ...]
    node_ids: np.ndarray
    names: tuple[str, ...]
    lo: np.ndarray
    hi: np.ndarray

    @property
    def height(self) -> int:
        """Number of levels H (leaf level included)."""
        return int(self.node_ids.shape[1])

    @functools.cached_property
    def node_index(self) -> dict[str, int]:
        """Node name -> node id."""
        return {n: i for i, n in enumerate(self.names)}

    def leaves_under(self, name: str) -> tuple[str, ...]:
        """The leaves under the node ``name`` (tree order); KeyError for an unknown name."""
        i = self.node_index[name]
        return self.leaves[self.lo[i] : self.hi[i]]

    def loss(self, name: str) -> float:
        """ARX's generalization loss of a node: ``(leaves under it - 1) / (all leaves - 1)``
        (0 for a leaf, 1 for the root; 0 when the hierarchy has one leaf)."""
        i = self.node_index[name]
        n = len(self.leaves)
        return float(self.hi[i] - self.lo[i] - 1) / (n - 1) if n > 1 else 0.0

    def child_starts(self, node: int) -> np.ndarray:
        """Leaf positions where a child of node id ``node`` starts, its first child excepted
        (int64, ascending; empty for a leaf): the places a cut along the hierarchy may go."""
        lo, hi = int(self.lo[node]), int(self.hi[node])
        level = int(np.argmax(self.node_ids[lo] == node))  # lowest level naming the node
        if level == 0 or hi - lo < 2:
            return np.empty(0, dtype=np.int64)
        below = self.node_ids[lo:hi, level - 1]
        return lo + np.flatnonzero(below[1:] != below[:-1]).astype(np.int64) + 1

    def lowest_common(self, first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Node id of the lowest common node of the leaves at positions ``first`` and ``last``
        (int64 arrays of one shape; any leaves in between are under it too). Vectorised."""
        a, b = self.node_ids[np.asarray(first, np.int64)], self.node_ids[np.asarray(last, np.int64)]
        level = np.argmax(a == b, axis=1)  # the root (last column) is always common
        return a[np.arange(len(a)), level]


def _fail(path: str, message: str) -> InputError:
    return InputError(f"hierarchy {path}: {message}; nothing was written")


def read_hierarchy(path: str | Path) -> Hierarchy:
    """Read and validate an ARX hierarchy file (cached on the path, size and mtime).

    Raises
    ------
    InputError
        Unreadable or empty file, a row with fewer than two columns or an empty cell, rows
        of different depth, a value listed on two rows, a node under two parents, several
        roots, one name for two different nodes. The message names the row/value and the fix.
    """
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        raise _fail(str(path), "the file does not exist; give COL=PATH of an existing file") from None
    return _read_cached(str(p.resolve()), st.st_size, st.st_mtime_ns, str(path))


@functools.lru_cache(maxsize=64)
def _read_cached(resolved: str, size: int, mtime: int, shown: str) -> Hierarchy:
    try:
        text = Path(resolved).read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        reason = f"it is not UTF-8 ({exc.reason} at byte {exc.start}); convert it to UTF-8"
        raise _fail(shown, reason) from None
    except OSError as exc:
        raise _fail(shown, f"cannot be read ({exc.strerror})") from None
    rows = [
        (n, [unicodedata.normalize("NFC", c) for c in r])
        for n, r in enumerate(csv.reader(io.StringIO(text), delimiter=";"), start=1)
        if r and any(c.strip() for c in r)
    ]
    return parse_rows(rows, shown)


def parse_rows(rows: list[tuple[int, list[str]]], path: str = "<rows>") -> Hierarchy:
    """Validate ``(row number, cells)`` pairs and build the :class:`Hierarchy` (see
    :func:`read_hierarchy` for the errors)."""
    if not rows:
        raise _fail(path, "the file is empty; write one row per value: value;generalization;...;*")
    n0, first = rows[0]
    depth = len(first)
    if depth < 2:
        hint = " (the file seems to use ','; ARX hierarchies are ';'-separated)" if "," in first[0] else ""
        raise _fail(
            path,
            f"row {n0} has one column {first[0]!r}: a row is a value followed by its "
            f"generalizations up to the root, separated by ';' (e.g. Male;*){hint}",
        )
    for n, r in rows:
        if len(r) != depth:
            raise _fail(
                path,
                f"row {n} ({';'.join(r)!r}) has {len(r)} columns but row {n0} has {depth}: every row "
                "lists its value and all its generalizations up to the root, so all rows have the "
                f"same depth; fix row {n} (repeat a level where a branch is shorter, e.g. Private;Private;*)",
            )
        empty = [i for i, c in enumerate(r) if not c.strip()]
        if empty:
            raise _fail(path, f"row {n} has an empty cell in column {empty[0] + 1}; name every node")
    nums = [n for n, _ in rows]
    grid = np.array([r for _, r in rows], dtype=object)  # (L, H)
    seen: dict[str, int] = {}
    for n, leaf in zip(nums, grid[:, 0]):
        if leaf in seen:
            a, b = seen[leaf], n
            raise _fail(
                path,
                f"value {leaf!r} is listed on rows {a} and {b} (under {grid[nums.index(a), 1]!r} and "
                f"{grid[nums.index(b), 1]!r}): a value has one row and one parent; keep one of the rows",
            )
        seen[leaf] = n
    for level in range(1, depth - 1):
        frame = pd.DataFrame({"node": grid[:, level], "parent": grid[:, level + 1], "row": nums})
        parents = frame.groupby("node", sort=False)["parent"].nunique()
        if (parents > 1).any():
            node = parents.index[parents.to_numpy() > 1][0]
            two = frame[frame["node"] == node].drop_duplicates("parent").head(2)
            (pa, ra), (pb, rb) = zip(two["parent"], two["row"])
            raise _fail(
                path,
                f"node {node!r} is under two parents, {pa!r} (row {ra}) and {pb!r} (row {rb}): "
                "a node has one parent; rename one of the nodes or fix the rows",
            )
    roots = pd.unique(grid[:, -1])
    if len(roots) > 1:
        raise _fail(
            path,
            f"the last column holds {len(roots)} roots {list(roots[:5])}: a hierarchy has one root; "
            "add a last column '*' to every row",
        )
    # tree order: by the rank (first appearance) of the node on each level, root first
    ranks = [pd.factorize(grid[:, level])[0] for level in range(depth - 1, 0, -1)]
    order = np.lexsort([np.arange(len(grid)), *ranks[::-1]])
    grid = grid[order]
    # node ids by name; a name must cover the same leaves on every level it appears on
    names: dict[str, int] = {}
    lo: list[int] = []
    hi: list[int] = []
    ids = np.empty(grid.shape, dtype=np.int64)
    row_of = np.asarray(nums)[order]
    for level in range(depth):
        col = grid[:, level]
        starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
        ends = np.r_[starts[1:], len(col)]
        for s, e in zip(starts, ends):
            name = col[s]
            if name in names:
                i = names[name]
                if (lo[i], hi[i]) != (s, e):
                    raise _fail(
                        path,
                        f"{name!r} names two different nodes (on row {row_of[s]}, level {level + 1}, "
                        f"over {e - s} value(s), and elsewhere over {hi[i] - lo[i]}): the released "
                        "column could not tell them apart; rename one of them",
                    )
            else:
                names[name] = len(lo)
                lo.append(int(s))
                hi.append(int(e))
            ids[s:e, level] = names[name]
    return Hierarchy(
        path=path,
        leaves=tuple(grid[:, 0].tolist()),
        node_ids=ids,
        names=tuple(names),
        lo=np.asarray(lo, dtype=np.int64),
        hi=np.asarray(hi, dtype=np.int64),
    )


def typed_leaves(h: Hierarchy, values: pd.Series) -> list[Any]:
    """The leaves of ``h`` in the type of the data column ``values`` (the QI's domain):
    integers, floats or booleans when the column holds them, else text.

    Raises InputError when a leaf is not a value of that type."""
    dtype = values.dtype
    if pd.api.types.is_bool_dtype(dtype):
        conv: Any = {"True": True, "False": False}.__getitem__
    elif pd.api.types.is_integer_dtype(dtype):
        conv = int
    elif pd.api.types.is_float_dtype(dtype):
        conv = float
    else:
        return list(h.leaves)
    out = []
    for leaf in h.leaves:
        try:
            out.append(conv(leaf))
        except (KeyError, ValueError):
            raise _fail(
                h.path,
                f"value {leaf!r} is not a {dtype} value like the column it generalizes; "
                "write the hierarchy's values as the data holds them",
            ) from None
    return out


def missing_leaves(h: Hierarchy, present: list[Any], column: str) -> InputError | None:
    """An InputError naming the values of ``present`` (the data's distinct values of
    ``column``) that are not leaves of ``h``, else None."""
    leaves = set(h.leaves)
    absent = [v for v in present if str(v) not in leaves]
    if not absent:
        return None
    shown = sorted(map(str, absent))[:5]
    more = f" (and {len(absent) - 5} more)" if len(absent) > 5 else ""
    blanks = {leaf.strip(): leaf for leaf in leaves if leaf != leaf.strip()}
    padded = sorted(blanks[str(v)] for v in absent if str(v) in blanks)[:5]
    spaces = (
        f"; the hierarchy lists {padded} with spaces at the start or end, which the data's values "
        f"do not have: remove the spaces in {h.path}"
        if padded
        else ""
    )
    return _fail(
        h.path,
        f"QI {column!r} holds value(s) {shown}{more} that the hierarchy does not list: add a row "
        f"for each (value;...;{h.names[h.node_ids[0, -1]]}) to {h.path}, or correct the data{spaces}",
    )
