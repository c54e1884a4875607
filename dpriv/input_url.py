"""The filesystem of an input given as a local path or an fsspec URL (``s3://``, ``gs://``...),
for :func:`dpriv.io.read_table`, the one reader of every command's input: a scheme fsspec
does not know, or one whose package is not installed, is an InputError that says which
package to install (fsspec's own ``ImportError``/``ValueError`` were internal errors)."""

from __future__ import annotations

import re

import fsspec
from fsspec.core import split_protocol
from fsspec.registry import known_implementations

from dpriv.errors import InputError

#: Schemes to suggest for an unknown one.
_EXAMPLES = "file://, s3://, gs://, az://, https://, ..."

#: A URL's scheme (``file:///x``, ``s3://b``, ``simplecache::s3://b``; also once pathlib has
#: collapsed ``//``: ``file:/x``): two characters at least (a Windows drive ``C:`` is not one),
#: then ``/`` or ``:`` (a folder named ``week:1`` is not one either).
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):(?=[:/])")


def url_scheme(text: str) -> str | None:
    """The scheme of ``text`` when it is a URL (the first of a chain), else None (a path)."""
    url = _URL.match(text)
    return url[1] if url else None


def file_url_path(text: str) -> str | None:
    """The local path a ``file://`` URL names, as fsspec reads it (``file:///tmp/x`` and
    ``file:/tmp/x``: ``/tmp/x``); None for any other URL or a path."""
    if url_scheme(text) not in ("file", "local"):
        return None
    from fsspec.implementations.local import LocalFileSystem

    return LocalFileSystem._strip_protocol(text)


def path_hint(text: str) -> str:
    """For a message refusing the URL ``text`` where a path is wanted: `` (here: /x)`` naming
    the path of a ``file://`` URL, else nothing."""
    local = file_url_path(text)
    return f" (here: {local})" if local else ""


def filesystem(path: str, what: str = "input") -> tuple[fsspec.AbstractFileSystem, list[str]]:
    """``(fs, paths)`` of ``path`` (:func:`fsspec.get_fs_token_paths`); ``what`` names the
    input in a message ("input", "history"...). InputError for a URL whose scheme fsspec does
    not know, or whose filesystem needs a package that is not installed (named, with the pip
    command: on this machine and on the Dask workers, which read the input too)."""
    for part in path.split("::"):  # chained URLs: simplecache::s3://bucket/key
        scheme = split_protocol(part)[0]
        if scheme is not None and scheme not in fsspec.available_protocols():
            raise InputError(
                f"unknown URL scheme {scheme!r} in {path}: give a local path or a URL fsspec knows "
                f"({_EXAMPLES})"
            )
    try:
        fs, _, paths = fsspec.get_fs_token_paths(path)
    except ImportError as exc:
        packages = _packages(path, exc)
        names = " and ".join(packages) if packages else "a package fsspec names"
        noun = "package" if len(packages) == 1 else "packages"
        pip = f"pip install {' '.join(packages)}" if packages else str(exc)
        raise InputError(
            f"the {what} {path} needs the {names} {noun} to be read ({pip}), on this machine and on "
            "any Dask workers that read it"
        ) from None
    except ValueError as exc:
        if not str(exc).startswith("Protocol not known"):
            raise
        raise InputError(
            f"unknown URL scheme in {path}: {exc}; give a local path or a URL ({_EXAMPLES})"
        ) from None
    return fs, paths


def _packages(path: str, exc: ImportError) -> list[str]:
    """The packages missing for the schemes of ``path``: for each filesystem that cannot be
    imported, the module of one implemented outside fsspec (``s3fs.S3FileSystem``: s3fs), else
    the names quoted in fsspec's message ('HTTPFileSystem requires "requests" and "aiohttp" to
    be installed'); else the module the ImportError names."""
    found: list[str] = []
    for part in path.split("::"):
        scheme = split_protocol(part)[0] or "file"
        try:
            fsspec.get_filesystem_class(scheme)
        except ImportError:
            impl = known_implementations.get(scheme, {})
            module = impl.get("class", "").split(".")[0]
            found += (
                [module] if module and module != "fsspec" else re.findall(r'"([\w.-]+)"', impl.get("err", ""))
            )
    if not found and getattr(exc.__cause__, "name", None):
        found.append(exc.__cause__.name.split(".")[0])
    return list(dict.fromkeys(found))
