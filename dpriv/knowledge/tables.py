"""Knowledge tables shared by the generator, the defender and the adversary.

A *class map* sends a respondent's QI values to a knowledge class (the paper's 18
age-third x weight-third x gender classes, docs/algorithms.md §2.5). A *Markov table*
holds BK^sv (order 0) and BK^seq (orders 1..n) per class (§1.2, §2.3):

``tables[L]`` has shape ``(n_classes, M**L, M)``, float64; row ``[c, ctx]`` is the
distribution of the next sensitive value for class ``c`` after the context ``ctx``
(the last ``L`` values, oldest first, encoded base ``M``: ``sum(v_l * M**(L-1-l))``).
A row of zeros marks a context the model forbids (e.g. a value after ``deceased``);
(E7) skips such histories. ``tables[0][c, 0]`` is BK^sv of class ``c``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpriv.errors import InputError


@dataclass(frozen=True)
class ClassMap:
    """QI values -> knowledge class index (mixed radix over the QIs, in ``qi`` order).

    ``bins[a]`` is either a list of increasing numeric cut points (value ``v`` falls in
    bin ``searchsorted(cuts, v, side="right")``, so ``len(cuts) + 1`` bins) or, for a
    categorical QI, the ordered list of its levels.
    """

    qi: tuple[str, ...]
    bins: tuple[tuple, ...]
    numeric: tuple[bool, ...]

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(b) + 1 if num else len(b) for b, num in zip(self.bins, self.numeric))

    @property
    def n_classes(self) -> int:
        return int(np.prod(self.sizes))

    def classify(self, frame: pd.DataFrame) -> np.ndarray:
        """Class index of every row of ``frame``: int64 array of shape (n,).

        Raises InputError for a missing QI column or a categorical level not in the map.
        """
        out = np.zeros(len(frame), dtype=np.int64)
        for name, bins, num, size in zip(self.qi, self.bins, self.numeric, self.sizes):
            if name not in frame.columns:
                raise InputError(f"class map needs QI column {name!r}; found {list(frame.columns)}")
            col = frame[name].to_numpy()
            if num:
                idx = np.searchsorted(np.asarray(bins, dtype=float), col.astype(float), side="right")
            else:
                idx = pd.Index(list(bins)).get_indexer(col)
                if (idx < 0).any():
                    bad = col[idx < 0][0]
                    raise InputError(f"QI {name!r}: value {bad!r} is not a level of the class map")
            out = out * size + idx
        return out

    def to_dict(self) -> dict:
        return {
            "qi": list(self.qi),
            "bins": [list(b) for b in self.bins],
            "numeric": list(self.numeric),
        }

    @classmethod
    def from_dict(cls, d: dict) -> ClassMap:
        return cls(tuple(d["qi"]), tuple(tuple(b) for b in d["bins"]), tuple(d["numeric"]))


@dataclass
class MarkovTables:
    """BK^sv (order 0) and BK^seq (orders 1..order) per knowledge class; see module doc."""

    values: tuple[str, ...]
    classes: ClassMap
    tables: list[np.ndarray] = field(repr=False)

    def __post_init__(self) -> None:
        m, c = len(self.values), self.classes.n_classes
        for L, tab in enumerate(self.tables):
            if tab.shape != (c, m**L, m):
                raise InputError(f"order-{L} table has shape {tab.shape}, expected {(c, m**L, m)}")

    @property
    def order(self) -> int:
        return len(self.tables) - 1

    @property
    def n_values(self) -> int:
        return len(self.values)

    def context_index(self, context: np.ndarray) -> np.ndarray:
        """Base-M code of each row of ``context`` (n, L) int, oldest first."""
        m = self.n_values
        weights = m ** np.arange(context.shape[1] - 1, -1, -1, dtype=np.int64)
        return context.astype(np.int64) @ weights

    def predict(self, cls: np.ndarray, context: np.ndarray) -> np.ndarray:
        """Next-value distributions, float64 (n, M).

        ``context`` is (n, W) int with -1 as left padding; only the last ``order`` known
        values are read and a context of length L uses ``tables[L]`` (short histories use
        the dedicated lower-order tables, docs/findings.md pitfall 2). Forbidden contexts give 0 rows.
        """
        cls = np.asarray(cls, dtype=np.int64)
        context = (
            np.asarray(context, dtype=np.int64)[:, -self.order :]
            if self.order
            else np.zeros((len(cls), 0), dtype=np.int64)
        )
        lengths = (context >= 0).sum(axis=1)
        out = np.empty((len(cls), self.n_values))
        for L in np.unique(lengths):
            rows = lengths == L
            ctx = self.context_index(context[rows][:, context.shape[1] - L :]) if L else 0
            out[rows] = self.tables[L][cls[rows], ctx]
        return out

    def truncate(self, n: int, weights: np.ndarray) -> MarkovTables:
        """n-step knowledge derived from this model (docs/algorithms.md §1.2, "n-steps DK").

        The order-n table is the order-``self.order`` table averaged over the older part of
        the context, weighted by ``weights`` (n_classes, M**order): how often each full
        context occurs (e.g. counted in a long simulated history). Lower orders are kept.
        """
        if not 0 <= n <= self.order:
            raise InputError(f"n-step order must be in [0, {self.order}], got {n}")
        top = self.tables[self.order]
        c, m = top.shape[0], self.n_values
        older = m ** (self.order - n)
        w = weights.reshape(c, older, m**n, 1)
        num = (top.reshape(c, older, m**n, m) * w).sum(axis=1)
        den = w.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            marg = np.where(den > 0, num / np.where(den > 0, den, 1), self.tables[n])
        return MarkovTables(self.values, self.classes, [*self.tables[:n], marg])

    def save(self, path) -> None:
        import json

        arrays = {f"order{L}": t for L, t in enumerate(self.tables)}
        meta = json.dumps({"values": list(self.values), "classes": self.classes.to_dict()})
        with open(path, "wb") as fh:
            np.savez_compressed(fh, meta=np.array(meta), **arrays)

    @classmethod
    def load(cls, path) -> MarkovTables:
        """The tables :meth:`save` wrote to ``path``; InputError naming the file when it is
        not such a file (text, a truncated or foreign ``.npz``)."""
        import json
        import zipfile

        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                n = sum(1 for k in z.files if k.startswith("order"))
                tables = [z[f"order{L}"] for L in range(n)]
            return cls(tuple(meta["values"]), ClassMap.from_dict(meta["classes"]), tables)
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
            raise InputError(
                f"knowledge file {path} is not a knowledge table dpriv wrote ({type(exc).__name__}: "
                f"{exc}): point the policy's [knowledge] entry at the .npz that `dpriv generate` "
                "or the Python API (MarkovTables.save) wrote, or restore that file"
            ) from None


def single_class_map() -> ClassMap:
    """The class map with no QIs: every tuple is in class 0 (``n_classes == 1``)."""
    return ClassMap((), (), ())


class SequentialKnowledge(ABC):
    """A BK^seq source. Subclasses give :meth:`as_tables`; :meth:`predict` reads them."""

    @abstractmethod
    def as_tables(self) -> MarkovTables:
        """The knowledge as MarkovTables (orders 0..n, zero rows = forbidden contexts)."""

    def predict(self, cls: np.ndarray, context: np.ndarray) -> np.ndarray:
        """Next-value distributions, float64 (n, M), for classes ``cls`` (n,) int and
        contexts (n, W) int (oldest first, -1 = left padding); see MarkovTables.predict."""
        return self.as_tables().predict(cls, context)

    @property
    def order(self) -> int:
        return self.as_tables().order


class TableKnowledge(SequentialKnowledge):
    """Fixed tables (DK-BK^seq, n-step DK, SPM-BK^seq mined elsewhere)."""

    def __init__(self, tables: MarkovTables) -> None:
        self._tables = tables

    def as_tables(self) -> MarkovTables:
        return self._tables

    @classmethod
    def load(cls, path) -> TableKnowledge:
        """Tables saved with :meth:`MarkovTables.save` (``.npz``)."""
        return cls(MarkovTables.load(path))

    def truncated(self, n: int, weights: np.ndarray) -> TableKnowledge:
        """n-step knowledge, see :meth:`MarkovTables.truncate`."""
        return TableKnowledge(self._tables.truncate(n, weights))
