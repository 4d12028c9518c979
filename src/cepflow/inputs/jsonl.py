"""JSON Lines reader: one JSON object per line, converted by the shared record rules.

Blank lines are skipped. A line that is not valid UTF-8, not valid JSON (reported with the
decoder's line and column), has a duplicate key (``json`` would silently keep the last one),
or is not a JSON object is rejected; so is an object that breaks the record rules of
:mod:`cepflow.inputs.records`. The rejected record is the raw line text.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from cepflow.events.event import Event, EventType, SideChannel
from cepflow.inputs.records import (
    Cursor,
    RecordConverter,
    RecordError,
    Rejector,
    UnknownFields,
    UnknownTypes,
)

_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` that refuses duplicate keys instead of keeping the last one."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKeyError(k)
            seen.add(k)
    return obj


#: one decoder for every line (``json.loads`` with a hook builds a new decoder per call)
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)


def read_jsonl(
    path: str | os.PathLike[str],
    schemas: Mapping[str, EventType] | None = None,
    side: SideChannel | None = None,
    strict: bool = False,
    *,
    strict_params: bool = True,
    unknown_fields: UnknownFields = "reject",
    unknown_types: UnknownTypes = "reject",
    unique_ids: bool = True,
    source: str | None = None,
    cursor: Cursor | None = None,
) -> Iterator[Event]:
    """Stream the Events of a JSON Lines file; bad lines go to ``side`` (or raise if strict)."""
    source = source or os.fspath(path)  # the name reported (a copy may be what is read)
    convert = RecordConverter(
        schemas,
        strict_params=strict_params,
        unknown_fields=unknown_fields,
        unknown_types=unknown_types,
        unique_ids=unique_ids,
    )
    reject = Rejector(source, side, strict)
    with open(path, "rb") as f:
        yield from jsonl_events(enumerate(f, 1), convert, reject, 0, cursor)


def jsonl_events(lines: Iterable[tuple[int, bytes]], convert: RecordConverter, reject: Rejector,
                 seq: int, cursor: Cursor | None) -> Iterator[Event]:
    """The Events of numbered raw lines (a whole file, or a part of one read column-wise that
    holds a bad record: :mod:`cepflow.inputs.batched`), the first numbered ``seq``."""
    for lineno, raw in lines:
        if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        where = f"line {lineno}"
        try:
            line = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as exc:
            text = raw.decode("utf-8", "backslashreplace").rstrip("\r\n")
            reject(where, f"invalid UTF-8 at byte {exc.start + 1}", None, text, line=lineno)
            continue
        if not line.strip():
            continue
        try:
            obj = _DECODER.decode(line)
        except json.JSONDecodeError as exc:
            reject(
                f"{where}, column {exc.colno}", f"invalid JSON: {exc.msg}", None, line,
                line=lineno, column=exc.colno,
            )
            continue
        except _DuplicateKeyError as exc:
            reject(where, f"duplicate key {exc.key!r}", exc.key, line, line=lineno)
            continue
        except RecursionError:
            reject(where, "invalid JSON: nested too deeply", None, line, line=lineno)
            continue
        except ValueError as exc:  # e.g. an integer beyond Python's digit limit
            reject(where, f"invalid JSON: {exc}", None, line, line=lineno)
            continue
        if not isinstance(obj, dict):
            kind = "null" if obj is None else _KINDS.get(type(obj), type(obj).__name__)
            reject(where, f"expected a JSON object, got {kind}", None, line, line=lineno)
            continue
        try:
            event = convert(obj, seq)
        except RecordError as exc:
            reject(where, exc.reason, exc.field, line, line=lineno)
            continue
        seq += 1
        if cursor is not None:
            cursor.at = lineno
        yield event
