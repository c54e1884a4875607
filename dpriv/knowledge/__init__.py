"""Background knowledge as pure NumPy kernels: BK^sv priors (``prior``), BK^seq
(``tables``, ``sequential``), the Ω posterior (``posterior``) and RBK (``revision``)."""

from dpriv.knowledge.posterior import (
    MAX_ENUMERATION_K,
    OMEGA_ZERO_THRESHOLD,
    closed_form_sum_posterior,
    exact_product_posterior,
    exact_sum_posterior,
    omega_posterior,
)
from dpriv.knowledge.prior import class_prior, kernel_prior, kernel_prior_dask, tuple_prior
from dpriv.knowledge.revision import feasible_contexts, revise
from dpriv.knowledge.sequential import IEMiner, MiningParams, mine_sequences, tables_from_counts
from dpriv.knowledge.tables import (
    ClassMap,
    MarkovTables,
    SequentialKnowledge,
    TableKnowledge,
    single_class_map,
)

__all__ = [
    "ClassMap",
    "IEMiner",
    "MAX_ENUMERATION_K",
    "MarkovTables",
    "OMEGA_ZERO_THRESHOLD",
    "SequentialKnowledge",
    "TableKnowledge",
    "class_prior",
    "closed_form_sum_posterior",
    "exact_product_posterior",
    "exact_sum_posterior",
    "feasible_contexts",
    "kernel_prior",
    "kernel_prior_dask",
    "MiningParams",
    "mine_sequences",
    "omega_posterior",
    "revise",
    "single_class_map",
    "tables_from_counts",
    "tuple_prior",
]
