"""Lark's LALR analysis of cepflow's grammars, kept between processes.

Building the LALR tables of the pattern grammar takes a quarter of a second of CPU (the EPL
grammar a tenth), paid by every command before it reads a line. :func:`lalr_parser` saves the
built parser with Lark's own ``save`` and loads it next time (a few milliseconds).

The saved file is a pickle, so it is kept like Python's own bytecode: written only by this
user's processes into a directory only this user can write (``$CEPFLOW_CACHE_DIR``, else
``$XDG_CACHE_HOME/cepflow``, else ``~/.cache/cepflow``; created with mode 0700), named after
the digest of the grammar, the options and Lark's version (a changed grammar is another file),
written to a temporary name and renamed (a reader never sees half a file). A file or directory
another user owns or others can write is not read; a file that does not load is rebuilt. Nothing
read from pattern, model or event files ever reaches it. ``CEPFLOW_CACHE_DIR=off`` turns the
cache off; without a usable directory the parser is simply built.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import lark
from lark import Lark


def lalr_parser(grammar: str, name: str, **options: Any) -> Lark:
    """``Lark(grammar, parser="lalr", **options)``, loaded from the cache when an earlier
    process built it (module docstring); ``name`` names the cache file."""
    options = {"parser": "lalr", **options}
    path = _cache_file(grammar, name, options)
    if path is not None and _private(path, directory=False):
        try:
            with open(path, "rb") as f:
                return Lark.load(f)
        except Exception:  # (a damaged or foreign file: build anew, below)
            pass
    parser = Lark(grammar, **options)
    if path is not None:
        _save(parser, path)
    return parser


def cache_directory() -> Path | None:
    """The cache directory (created private when missing), or None when it is turned off or
    is not this user's alone."""
    chosen = os.environ.get("CEPFLOW_CACHE_DIR")
    if chosen is not None and chosen.strip().lower() in ("", "0", "off", "no", "false"):
        return None
    try:
        if chosen:
            base = Path(chosen)
        else:
            xdg = os.environ.get("XDG_CACHE_HOME")
            base = (Path(xdg) if xdg else Path.home() / ".cache") / "cepflow"
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
    except (OSError, RuntimeError):  # (RuntimeError: no home directory to be found)
        return None
    return base if _private(base, directory=True) else None


def _cache_file(grammar: str, name: str, options: Mapping[str, Any]) -> Path | None:
    directory = cache_directory()
    if directory is None:
        return None
    # (an option that is an object, such as a post-lexer, counts by its class)
    plain = sorted((k, v if isinstance(v, str | int | float | bool | list | tuple | None)
                    else f"{type(v).__module__}.{type(v).__qualname__}")
                   for k, v in options.items())
    key = repr((grammar, plain, lark.__version__))
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]
    return directory / f"lark-{name}-{digest}.pickle"


def _private(path: Path, *, directory: bool) -> bool:
    """Whether ``path`` is this user's and no one else can write it (a missing file: no)."""
    try:
        st = path.lstat()
    except OSError:
        return False
    kind_ok = stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)
    owner_ok = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return kind_ok and owner_ok and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _save(parser: Lark, path: Path) -> None:
    """Write the parser to a temporary file of the directory, then rename it into place (a
    cache that cannot be written is no error: the next process builds the parser again)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            parser.save(f)
        os.replace(tmp, path)
    except Exception:
        Path(tmp).unlink(missing_ok=True)
