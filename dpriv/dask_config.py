"""The Dask config values dpriv's steps rely on, checked before a command reads anything: a
value Dask cannot run with (``DASK_DATAFRAME__SHUFFLE__METHOD=bogus``) failed deep inside a
release as ``ValueError: bogus not supported``, an internal error (exit 1); it is bad input
(exit 2), named with where it came from and what to set."""

from __future__ import annotations

import os

import dask

from dpriv.errors import ConfigError

#: Config key -> (the values dpriv runs with, what they are, what to do otherwise).
CHECKED = {
    "dataframe.shuffle.method": (
        ("tasks", "disk", "p2p", "simple"),
        "Dask's shuffle methods are tasks, disk, p2p and simple",
        "set one of them, or unset it for dpriv's default (tasks)",
    ),
    "dataframe.backend": (
        ("pandas",),
        "dpriv's steps run on Dask's pandas backend only",
        "unset it or set pandas",
    ),
}


def env_name(key: str) -> str:
    """The environment variable that sets the Dask config ``key`` (``dataframe.shuffle.method``
    -> ``DASK_DATAFRAME__SHUFFLE__METHOD``)."""
    return "DASK_" + key.upper().replace(".", "__").replace("-", "_")


def check_dask_config() -> None:
    """ConfigError naming the first Dask config value of :data:`CHECKED` that dpriv cannot run
    with: its key, its value, where it was set (the environment variable, else a Dask config
    file or ``dask.config.set``), the values allowed and what to do. Unset keys pass."""
    for key, (allowed, what, fix) in CHECKED.items():
        value = dask.config.get(key, None)
        if value is None or value in allowed:
            continue
        var = env_name(key)
        source = (
            f"the environment variable {var}={os.environ[var]}"
            if var in os.environ
            else f"the Dask config {key}: {value!r} (a Dask config file, see `dask config list`, "
            "or dask.config.set)"
        )
        raise ConfigError(f"{source} cannot be used: {what}; {fix}, then run the command again")
