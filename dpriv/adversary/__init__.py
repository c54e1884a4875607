"""Adversaries over a released history: what they observe, what they deduce, what they learn.

Kernels only (NumPy/pandas in, NumPy/pandas out); reading a ledger is :mod:`dpriv.attack`'s job.
"""

from dpriv.adversary.deductions import ChainSupport, Deductions, chain_support, deduce, group_feasibility
from dpriv.adversary.groups import group_posterior, masked_omega
from dpriv.adversary.linkage import Linkage, qi_linkage
from dpriv.adversary.masks import MasksAsOf
from dpriv.adversary.observed import ObservedRelease
from dpriv.adversary.retrospective import AsOf, retrospective_attack, retrospective_posteriors
from dpriv.adversary.smoothing import CompiledTables, forward_backward
from dpriv.adversary.tail import TailRisk, tail_risk

__all__ = [
    "AsOf",
    "ChainSupport",
    "CompiledTables",
    "Deductions",
    "Linkage",
    "MasksAsOf",
    "ObservedRelease",
    "TailRisk",
    "chain_support",
    "deduce",
    "forward_backward",
    "group_feasibility",
    "group_posterior",
    "masked_omega",
    "qi_linkage",
    "retrospective_attack",
    "retrospective_posteriors",
    "tail_risk",
]
