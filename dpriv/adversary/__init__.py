"""Adversaries over a released history: what they observe, what they deduce, what they learn.

Kernels only (NumPy/pandas in, NumPy/pandas out); reading a ledger is :mod:`dpriv.attack`'s job.
"""

from dpriv.adversary.observed import ObservedRelease

__all__ = ["ObservedRelease"]
