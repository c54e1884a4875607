"""All dpriv exceptions (with :class:`Loss`, what the cluster-loss ones carry, and
:func:`check_count`, the check of a count argument that raises one). The CLI maps
:class:`DprivError` subclasses to exit status 2 (:class:`LedgerBusy`: 3)."""

from __future__ import annotations

import numbers
from typing import NamedTuple


class DprivError(Exception):
    """Base class of the errors a user can fix (bad input, bad policy)."""


class InputError(DprivError, ValueError):
    """The data do not match the policy: missing column, NaN, value outside a domain, ..."""


class PathArgumentError(InputError, TypeError):
    """A path argument of a Python entry point given as something else than a path (an int, a
    DataFrame): :func:`dpriv.path_args.check_path`. A TypeError too, as the bare one pathlib
    raised from deep inside the call before."""


class PolicyError(DprivError, ValueError):
    """The policy is invalid, or cannot be met by the data (e.g. k larger than the view)."""


class KnowledgeFileError(PolicyError):
    """A knowledge table file the policy names does not exist (a relative path read from
    another folder than the policy's: the CLI then advises ``--policy FILE``)."""


class LedgerError(DprivError, RuntimeError):
    """The release ledger is missing, corrupt, or refuses the operation asked for."""


class LedgerBusy(LedgerError):
    """Another dpriv command holds the ledger's lock (:func:`dpriv.ledger_files.hold_lock`): a
    transient refusal, the same command succeeds once that one has ended; the CLI ends with
    exit 3 (as for a lost worker: worth a retry), not 2."""


class ConfigError(DprivError, ValueError):
    """The Dask configuration (a ``DASK_...`` environment variable, a Dask config file) holds a
    value dpriv cannot run with (:func:`dpriv.dask_config.check_dask_config`)."""


class VerificationError(DprivError, RuntimeError):
    """A released view failed the independent verification; nothing was written."""


class ClusterError(RuntimeError):
    """The Dask cluster cannot run the work (no worker): not bad input, not dpriv's bug; the
    CLI ends with exit 3 as for a lost worker (dpriv/cli/failures.py)."""


class Loss(NamedTuple):
    """What a cluster lost (:func:`dpriv.cluster_loss.what_was_lost`): ``what`` is ``"a worker"``,
    ``"its scheduler"`` or ``"a worker or its scheduler"``; ``why`` what happened, in a few words
    with Dask's own name for it. Carried by :class:`ClusterLossError` and :class:`ClusterLossWarning`."""

    what: str
    why: str


class _CarriesLoss:
    """What :class:`ClusterLossError` and :class:`ClusterLossWarning` carry besides their message:
    ``loss``, what was lost and why (:class:`Loss`), and ``last``, the last
    release the ledger holds (0: none)."""

    def __init__(self, message: str, loss: Loss, last: int) -> None:
        super().__init__(message)
        self.loss = loss
        self.last = last


class ClusterLossError(_CarriesLoss, ClusterError):
    """The Dask cluster lost a worker or its scheduler during a release of
    :func:`dpriv.release.release_history`, views left to release (raised from Dask's exception,
    :mod:`dpriv.release_stops`); ``loss`` and ``last`` as :class:`_CarriesLoss` says.
    ``dpriv release`` words it itself (:func:`dpriv.cli.failures.during_release`, exit 3)."""


class ClusterLossWarning(_CarriesLoss, UserWarning):
    """The Dask cluster lost a worker or its scheduler after the last release of a
    :func:`dpriv.release.release_history` call was committed: the call returns the ledger with
    this warning; ``loss`` and ``last`` as in :class:`ClusterLossError`. ``dpriv release`` words
    it itself (a ``warning:`` line, exit 0)."""


def check_count(name: str, value: object, meaning: str, *, optional: bool = False) -> None:
    """InputError unless the argument ``name`` is a whole number >= 1 (or None when
    ``optional``), naming the value given and what it counts (``meaning``): a 0 or -3 failed deep
    inside Dask or pyarrow, a bool or a text was taken for a number."""
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        allowed = "a whole number >= 1" + (f" ({meaning}) or None" if optional else f" ({meaning})")
        raise InputError(f"{name} must be {allowed}, not {value!r}")
