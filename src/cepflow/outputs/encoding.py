"""The JSON text of values in outputs: compact, UTF-8 kept, and always valid JSON.

JSON has no number for NaN or the infinities. The readers reject them (docs/formats.md, "NaN
and Infinity"), but a value an expression computes, or an event given through the Python API,
can still be one: it is written as the string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (the
convention of Protocol Buffers' JSON mapping), so every line parses with any JSON reader and
the value can be told back. :func:`json_texts` is the same encoding column by column.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from math import isfinite
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepflow.events.event import Event
from cepflow.events.jsonvalues import as_text


def json_default(value: Any) -> Any:
    """``json.dumps`` fallback: events become their ref, sets lists, dates ISO text, else str."""
    if isinstance(value, Event):
        return value.ref
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


#: (one encoder for every line: ``json.dumps`` with options builds a new one per call)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=json_default,
                            allow_nan=False)


def _record_default(value: Any) -> Any:
    """Dates (of a Parquet row) as ISO text; anything else is not data of a record."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(type(value).__name__)


#: for the text of a rejected record, which shows the record as read (``NaN`` included)
_AS_READ = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_record_default)


#: a finite float's JSON text (what the encoder writes for it)
_FLOAT = float.__repr__


def dumps(value: Any) -> str:
    """One compact line of valid JSON: UTF-8 text kept as is, non-JSON values through
    :func:`json_default`, NaN and infinities as text (module docstring)."""
    try:
        return _ENCODER.encode(value)
    except ValueError:  # a float JSON cannot represent (rare: walk the value only then)
        return _ENCODER.encode(as_text(value))


def dumps_as_read(value: Any) -> str:
    """Compact JSON text of a record as it was read, NaN written ``NaN`` as in the input (the
    text is a string value of the side file, not a JSON document of its own); ``repr`` for
    what is not record data (bytes, …)."""
    try:
        return _AS_READ.encode(value)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def may_need_escapes(values: pa.Array, ascii_only: bool) -> bool:
    """Whether the bytes the texts of a ``pa.string()`` column span hold one that JSON escapes
    (a control character, quote or backslash; with ``ascii_only`` anything outside printable
    ASCII): one pass of numpy over the data buffer instead of a regular expression per text —
    false means no text needs an escape (bytes under null slots count too: a false alarm at
    worst)."""
    offsets_buf, data = values.buffers()[1:3]
    if data is None or len(values) == 0:
        return False
    offsets = np.frombuffer(offsets_buf, np.int32)
    start, end = int(offsets[values.offset]), int(offsets[values.offset + len(values)])
    b = np.frombuffer(data, np.uint8)[start:end]
    if ascii_only:
        return bool((b < 0x20).any() or (b > 0x7e).any() or (b == 0x22).any()
                    or (b == 0x5c).any())
    return bool((b < 0x20).any() or (b == 0x22).any() or (b == 0x5c).any())


def json_texts(values: pa.Array, *, ascii_only: bool) -> pa.Array:
    """The JSON text of each value (null for null), as ``json.dumps`` writes it
    (``ensure_ascii=ascii_only``; compact): text that needs no escape, integers and booleans
    column-wise, anything else one by one — with ``ascii_only`` False exactly :func:`dumps`."""
    if pa.types.is_large_string(values.type):  # (the joins below take one string type)
        values = values.cast(pa.string())
    t = values.type
    if pa.types.is_string(t):
        # json.dumps escapes control characters, quote and backslash; with ensure_ascii also
        # everything outside printable ASCII (DEL \x7f included)
        out = pc.binary_join_element_wise('"', values, '"', "")
        if may_need_escapes(values, ascii_only):
            unsafe = r'[\x00-\x1f"\\]' + (r"|[^\x20-\x7e]" if ascii_only else "")
            bad = pc.fill_null(pc.match_substring_regex(values, unsafe), False)
            if pc.any(bad).as_py():
                idx = pa.array(np.flatnonzero(bad.to_numpy(zero_copy_only=False)))
                fixed = [json.dumps(v, ensure_ascii=ascii_only)
                         for v in values.take(idx).to_pylist()]
                out = pc.replace_with_mask(out, bad, pa.array(fixed, out.type))
        out = out.cast(pa.string())
    elif pa.types.is_integer(t):
        out = values.cast(pa.string())
    elif pa.types.is_boolean(t):
        out = pc.if_else(values, "true", "false")
    else:
        encode = (lambda v: json.dumps(v, ensure_ascii=True)) if ascii_only else dumps
        if pa.types.is_float64(t):  # (a finite float's JSON is its repr: the encoders' own)
            out = pa.array([None if v is None else _FLOAT(v) if isfinite(v) else encode(v)
                            for v in values.to_pylist()], pa.string())
        else:
            out = pa.array([encode(v) for v in values.to_pylist()], pa.string())
    return pc.fill_null(out, "null")
