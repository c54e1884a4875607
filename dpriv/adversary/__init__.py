"""Adversaries over a released history: what they observe, what they deduce, what they learn.

Kernels only (NumPy/pandas in, NumPy/pandas out); reading a ledger is :mod:`dpriv.attack`'s job.
"""

from dpriv.adversary.deductions import ChainSupport, Deductions, chain_support, deduce, group_feasibility
from dpriv.adversary.linkage import Linkage, qi_linkage
from dpriv.adversary.observed import ObservedRelease

__all__ = [
    "ChainSupport",
    "Deductions",
    "Linkage",
    "ObservedRelease",
    "chain_support",
    "deduce",
    "group_feasibility",
    "qi_linkage",
]
