"""Lark's LALR analysis of cepflow's grammars, kept between processes as JSON.

Building the LALR tables of the pattern grammar takes a quarter of a second of CPU (the EPL
grammar a tenth), paid by every command before it reads a line. :func:`lalr_parser` saves the
built parser's tables — Lark's own serialization (``Lark.memo_serialize``: dicts, lists,
tuples, strings, numbers) — as a JSON file and loads it next time (``Lark._load_from_dict``,
as Lark's standalone parsers do; a few milliseconds).

No pickle: reading the file runs no code, whatever it holds — ``json`` builds only plain values
and Lark makes of them only its own grammar classes (its deserializer's namespace is Lark's
``Rule`` and ``TerminalDef``). JSON has no tuples and no integer keys, so a tuple is written as
``{"~t": [...]}`` and a dict with integer keys as ``{"~i": [key, value, ...]}``; the file is
written only when decoding it gives back exactly what was serialized. Options that are objects
(the pattern grammar's post-lexer) are not saved: the caller's own are passed at load.

The file is kept like Python's own bytecode all the same: written only by this user's processes
into a directory only this user can write (``$CEPFLOW_CACHE_DIR``, else
``$XDG_CACHE_HOME/cepflow``, else ``~/.cache/cepflow``; created with mode 0700), named after the
digest of the grammar, the options and Lark's version (a changed grammar is another file),
written to a temporary name and renamed (a reader never sees half a file). A file or directory
another user owns or others can write is not read; a file that does not load is rebuilt. Nothing
read from pattern, model or event files ever reaches it. ``CEPFLOW_CACHE_DIR=off`` turns the
cache off; without a usable directory the parser is simply built.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import lark
from lark import Lark
from lark.lark import _LOAD_ALLOWED_OPTIONS
from lark.lexer import TerminalDef
from lark.load_grammar import Rule

#: the JSON stand-ins for what JSON lacks (module docstring)
_TUPLE, _INT_KEYS = "~t", "~i"
_PLAIN = (str, int, float, bool, type(None))


def lalr_parser(grammar: str, name: str, **options: Any) -> Lark:
    """``Lark(grammar, parser="lalr", **options)``, loaded from the cache when an earlier
    process built it (module docstring); ``name`` names the cache file."""
    options = {"parser": "lalr", **options}
    objects = {k: v for k, v in options.items() if not _is_plain(v)}
    path = None if set(objects) - _LOAD_ALLOWED_OPTIONS else _cache_file(grammar, name, options)
    if path is not None and _private(path, directory=False):
        try:
            return _load(path.read_bytes(), objects)
        except Exception:  # (a damaged or foreign file: build anew, below)
            pass
    parser = Lark(grammar, **options)
    if path is not None:
        _save(parser, path, set(objects))
    return parser


def _is_plain(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return all(_is_plain(v) for v in value)
    return isinstance(value, _PLAIN)


def _encode(value: Any) -> Any:
    """Lark's serialized data as JSON values (tuples and integer-keyed dicts marked)."""
    if isinstance(value, dict):
        if all(type(k) is str for k in value):
            if len(value) == 1 and next(iter(value)) in (_TUPLE, _INT_KEYS):
                raise ValueError("a key of the markers' names")
            return {k: _encode(v) for k, v in value.items()}
        if not all(type(k) is int for k in value):
            raise ValueError("keys neither all texts nor all integers")
        return {_INT_KEYS: [x for k, v in value.items() for x in (k, _encode(v))]}
    if isinstance(value, tuple):
        return {_TUPLE: [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, _PLAIN):
        return value
    raise ValueError(f"{type(value).__name__} is not plain data")


def _marked(d: dict[str, Any]) -> Any:
    """``json.loads``'s object hook: the marked tuples and integer-keyed dicts back."""
    if len(d) == 1:
        if _TUPLE in d:
            return tuple(d[_TUPLE])
        items = d.get(_INT_KEYS)
        if items is not None:
            return dict(zip(items[::2], items[1::2], strict=True))
    return d


def _decode(text: bytes) -> Any:
    enabled = gc.isenabled()
    gc.disable()  # (thousands of small containers: no collection passes while they are made)
    try:
        return json.loads(text, object_hook=_marked)
    finally:
        if enabled:
            gc.enable()


def _load(text: bytes, objects: Mapping[str, Any]) -> Lark:
    saved = _decode(text)
    if saved.get("lark") != lark.__version__:
        raise ValueError("saved by another version of Lark")
    return Lark._load_from_dict(saved["data"], saved["memo"], **objects)


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
    plain = sorted((k, v if _is_plain(v) else f"{type(v).__module__}.{type(v).__qualname__}")
                   for k, v in options.items())
    key = repr((grammar, plain, lark.__version__))
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]
    return directory / f"lark-{name}-{digest}.json"


def _private(path: Path, *, directory: bool) -> bool:
    """Whether ``path`` is this user's and no one else can write it (a missing file: no)."""
    try:
        st = path.lstat()
    except OSError:
        return False
    kind_ok = stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)
    owner_ok = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    return kind_ok and owner_ok and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _save(parser: Lark, path: Path, objects: set[str]) -> None:
    """Write the parser's tables to a temporary file of the directory, then rename it into
    place — only when they read back exactly as serialized (a cache that cannot be written is
    no error: the next process builds the parser again)."""
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    data["options"] = {k: v for k, v in data["options"].items() if k not in objects}
    saved = {"lark": lark.__version__, "data": data, "memo": memo}
    try:
        text = json.dumps(_encode(saved), separators=(",", ":")).encode("utf-8")
        if _decode(text) != saved:
            return
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    except (OSError, ValueError):
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text)
        os.replace(tmp, path)
    except Exception:
        Path(tmp).unlink(missing_ok=True)
