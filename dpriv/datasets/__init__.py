"""Generators and loaders of test data: the synthetic medical history (docs/algorithms.md §2.5).

* ``model``: the medical model (diseases, stages, the Markov tables, the QI classes);
* ``medical``: :class:`MedicalHistory`, :func:`medical_history` (pandas) and
  :func:`medical_view_dask` (one large view, partition by partition);
* ``pbc``: the Mayo Clinic PBC cohort as yearly views (a real longitudinal history);
* ``files``: the files of ``dpriv generate medical`` / ``dpriv generate pbc`` (history,
  knowledge, policy);
* ``generated``: which of them may be written or replaced, each written whole and recorded.
"""

from dpriv.datasets.files import (
    RECOMMENDED_DEFENSE,
    policy_dict,
    write_history,
    write_medical_view,
    write_pbc,
)
from dpriv.datasets.medical import MedicalHistory, medical_history
from dpriv.datasets.medical_view import VIEW_BLOCK_ROWS, medical_view_dask
from dpriv.datasets.model import (
    AGE_RANGE,
    CLASS_MAP,
    DISEASES,
    GENDER_RANGE,
    TERMINAL,
    VALUES,
    WEIGHT_RANGE,
    medical_knowledge,
)
from dpriv.datasets.pbc import (
    PBC_COLUMNS,
    PBC_MAX_SUPPRESSION,
    PBC_PRIVACY,
    PBC_SOURCES,
    STAGES,
    pbc_history,
    pbc_policy,
)
from dpriv.toml_writer import toml_dumps

__all__ = [
    "RECOMMENDED_DEFENSE",
    "PBC_COLUMNS",
    "PBC_MAX_SUPPRESSION",
    "PBC_PRIVACY",
    "PBC_SOURCES",
    "STAGES",
    "pbc_history",
    "pbc_policy",
    "write_pbc",
    "AGE_RANGE",
    "CLASS_MAP",
    "DISEASES",
    "GENDER_RANGE",
    "TERMINAL",
    "VALUES",
    "VIEW_BLOCK_ROWS",
    "WEIGHT_RANGE",
    "MedicalHistory",
    "medical_history",
    "medical_knowledge",
    "medical_view_dask",
    "policy_dict",
    "toml_dumps",
    "write_history",
    "write_medical_view",
]
