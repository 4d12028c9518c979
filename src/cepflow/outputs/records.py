"""The two output records — a match and a rejected record — as Arrow rows and as JSON lines.

Every writer of every engine goes through here (docs/formats.md): the in-process file job,
Spark's batch replay and Spark streaming make rows of :data:`MATCH_SCHEMA` /
:data:`REJECTED_SCHEMA` (:func:`match_batch`, :func:`rejected_batch`, or column-wise in the
Spark runners) and :func:`match_lines` / :func:`rejected_lines` turn rows into lines, so the
same input gives the same bytes whichever engine wrote them.

* A match: ``{"pattern", "ts", "params", "events"}`` — ``ts`` integer milliseconds (a time
  with a fraction of a millisecond, from fractional input timestamps or window lengths, is
  rounded *up*: a match is never stamped before the instant it was complete), ``params`` a JSON
  object of the pattern's bindings (internal ``_`` names left out), ``events`` the ids of the
  contributing input events in match order, always strings.
* A rejected record: ``{"kind", "source", "location", "reason", "field", "record"}`` — ``kind``
  ``malformed``, ``late`` or ``error`` (docs/semantics.md, "Evaluation errors"); ``location``
  ``line N`` (JSON Lines, CSV; 1-based), ``row N`` (Parquet; 0-based) or ``file``; ``field``
  null when the reason is not one field's; ``record`` the record as text (a JSON Lines line as
  read, a CSV or Parquet row or a late event as compact JSON), null when there is none (a whole
  file).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice, repeat
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from math import isfinite
from operator import methodcaller
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepflow.events.event import ComplexEvent, Event, Rejected, SideChannel, output_ts
from cepflow.outputs.encoding import dumps, dumps_as_read, json_texts, may_need_escapes

#: A match as a row; ``params`` is the JSON text of an object (bindings differ per pattern).
MATCH_SCHEMA = pa.schema([
    pa.field("pattern", pa.string()), pa.field("ts", pa.int64()),
    pa.field("params", pa.string()), pa.field("events", pa.list_(pa.string())),
])

#: A rejected record as a row (every field text; ``field`` and ``record`` may be null).
REJECTED_SCHEMA = pa.schema([
    pa.field("kind", pa.string()), pa.field("source", pa.string()),
    pa.field("location", pa.string()), pa.field("reason", pa.string()),
    pa.field("field", pa.string()), pa.field("record", pa.string()),
])


def match_ts_column(ts: pa.Array) -> pa.Array:
    """:func:`~cepflow.events.event.output_ts` of a column of times (double or integer)."""
    if pa.types.is_integer(ts.type):
        return ts.cast(pa.int64())
    return pc.ceil(ts).cast(pa.int64())


def match_batch(matches: Iterable[ComplexEvent]) -> pa.RecordBatch:
    """Matches as rows of :data:`MATCH_SCHEMA`."""
    ms = list(matches)
    return pa.RecordBatch.from_arrays([
        pa.array([m.type for m in ms], pa.string()),
        pa.array([output_ts(m.ts) for m in ms], pa.int64()),
        pa.array(params_texts(ms), pa.string()),
        events_column(ms),
    ], schema=MATCH_SCHEMA)


def events_column(ms: Sequence[ComplexEvent]) -> pa.ListArray:
    """The ``events`` column of ``ms``: each match's :attr:`~ComplexEvent.event_refs` as
    strings, made as one flat column with offsets (ids that are all integers — the stream
    positions — are cast by Arrow; anything else is ``str`` one by one, as before)."""
    refs: list[Any] = []
    ends = []
    for m in ms:
        refs += m.event_refs
        ends.append(len(refs))
    offsets = np.zeros(len(ends) + 1, np.int32)
    offsets[1:] = ends
    values: pa.Array | None = None
    if refs and all(r.__class__ is int for r in refs):
        try:
            values = pa.array(refs, pa.int64()).cast(pa.string())
        except OverflowError:  # (an id beyond 64 bits)
            values = None
    if values is None:
        values = pa.array([str(r) for r in refs], pa.string())
    return pa.ListArray.from_arrays(pa.array(offsets), values)


def params_texts(ms: Sequence[ComplexEvent]) -> list[str]:
    """``dumps(m.bindings_for_output())`` of each match: the lazy matches of one parameter
    list (:meth:`ComplexEvent.output_columns`: a window block's rows, a kernel's matches)
    column by column — each value's text is what the encoder writes for it inside the
    object —, the others one by one."""
    cs = list(map(_COLUMNS, ms))
    if cs and None not in cs:  # (one kernel's or window's rows: one list of names)
        names = cs[0][0]
        if all(c[0] is names for c in cs):
            return _object_texts(names, [c[1] for c in cs])
    out: list[Any] = [None] * len(ms)
    groups: dict[int, tuple[Sequence[str], list[int], list[tuple[Any, ...]]]] = {}
    for i, (m, c) in enumerate(zip(ms, cs, strict=True)):
        if c is None:
            out[i] = dumps(m.bindings_for_output())
            continue
        names, values = c
        g = groups.get(id(names))  # (the matches hold their names: the ids stay theirs)
        if g is None:
            g = groups[id(names)] = (names, [], [])
        g[1].append(i)
        g[2].append(values)
    for names, at, rows in groups.values():
        for i, text in zip(at, _object_texts(names, rows), strict=True):
            out[i] = text
    return out


_COLUMNS = methodcaller("output_columns")


def _object_texts(names: Sequence[str], rows: list[tuple[Any, ...]]) -> list[str]:
    """The JSON object of ``dict(zip(names, row))`` of each row, internal ``_`` names left
    out (a name given twice keeps its first place and last value, as the dict does)."""
    n = len(names)
    if any(len(r) != n for r in rows):  # (zip stops at the shorter: one by one)
        return [dumps({k: v for k, v in zip(names, r, strict=False) if not k.startswith("_")})
                for r in rows]
    last: dict[str, int] = {}
    for j, name in enumerate(names):
        last[name] = j
    shown = [(name, j) for name, j in last.items() if not name.startswith("_")]
    if not shown:
        return ["{}"] * len(rows)
    cols = list(zip(*rows, strict=True))
    parts: list[Iterable[str]] = []
    for k, (name, j) in enumerate(shown):
        parts += [repeat(("{" if k == 0 else ",") + dumps(name) + ":"), _texts(cols[j])]
    parts.append(repeat("}"))
    return list(map("".join, zip(*parts, strict=False)))  # (the repeats are endless)


def value_texts(values: Sequence[Any]) -> pa.Array:
    """The JSON text of each value as the match writer writes it inside a match's ``params``
    object (:func:`_texts`): a column of values given per match (a window row's aggregate,
    runtime.rows.StageMatches ``values``) written without its complex events."""
    return pa.array(list(_texts(values)), pa.string())


def _texts(values: Sequence[Any]) -> Iterable[str]:
    """The JSON text of each value as :func:`dumps` writes it in an object: a column of
    one type, nulls beside it too, by that type's own text (ints, finite floats — ``repr``,
    as the encoder —, text), anything else one by one."""
    kinds = set(map(type, values))
    nulls = type(None) in kinds
    kinds.discard(type(None))
    if not kinds:
        return repeat("null", len(values))
    text: Callable[[Any], str] | None = None
    if len(kinds) == 1:
        kind = kinds.pop()
        if kind is int:
            text = int.__repr__
        elif kind is float and all(isfinite(v) for v in values if v is not None):
            text = float.__repr__
        elif kind is str:
            text = encode_basestring
    if text is None:
        return map(dumps, values)
    if nulls:
        return ["null" if v is None else text(v) for v in values]
    return map(text, values)


def match_batches(matches: Iterable[ComplexEvent], size: int = 4096
                  ) -> Iterator[pa.RecordBatch]:
    """Matches as rows of :data:`MATCH_SCHEMA`, ``size`` at a time (memory stays bounded)."""
    it = iter(matches)
    while chunk := list(islice(it, size)):
        yield match_batch(chunk)


def record_text(record: Any) -> str | None:
    """A rejected record's ``record`` field: text as read stays text, an event becomes the
    JSON of :meth:`Event.to_dict`, other data (a row) its JSON."""
    if record is None or isinstance(record, str):
        return record
    if isinstance(record, Event):
        record = record.to_dict()
    return dumps_as_read(record)


def rejected_batch(records: Iterable[tuple[str, Rejected]] | SideChannel) -> pa.RecordBatch:
    """Rejected records — (kind, record) pairs or a whole side channel — as rows of
    :data:`REJECTED_SCHEMA`."""
    items = list(records.items() if isinstance(records, SideChannel) else records)
    return pa.RecordBatch.from_pydict({
        "kind": [k for k, _ in items],
        "source": [r.source for _, r in items],
        "location": [r.location for _, r in items],
        "reason": [r.reason for _, r in items],
        "field": [r.field for _, r in items],
        "record": [record_text(r.record) for _, r in items],
    }, schema=REJECTED_SCHEMA)


def _join(names: list[str], texts: list[Any], end: str = "") -> pa.Array:
    """``{"name":text,...}`` per row from the JSON texts of each field, followed by ``end``;
    a field's text may be a ``str`` (the same for every row) or parts (:func:`_list_parts`).
    Adjacent constant texts are one scalar: one pass of Arrow over the rows' bytes."""
    parts: list[Any] = []
    for i, (name, text) in enumerate(zip(names, texts, strict=True)):
        parts.append(("{" if i == 0 else ",") + dumps(name) + ":")
        parts += text if isinstance(text, tuple) else (text,)
    parts.append("}" + end)
    merged: list[Any] = []
    for p in parts:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        else:
            merged.append(p)
    return pc.binary_join_element_wise(*merged, "")


def json_lists(lists: pa.Array) -> pa.Array:
    """The JSON array text of each list of strings."""
    texts = json_texts(lists.values, ascii_only=False)
    joined = pc.binary_join(pa.ListArray.from_arrays(lists.offsets, texts), ",")
    return pc.binary_join_element_wise("[", joined, "]", "")


def _list_parts(lists: pa.Array) -> tuple[Any, ...]:
    """:func:`json_lists` as parts of a line: when no list is null or empty and no string
    needs a JSON escape (the usual ``events``: ids), ``'["'``, the strings joined by
    ``'","'`` and ``'"]'`` — one pass over the strings instead of quoting each one, then
    joining, then bracketing; else the texts of :func:`json_lists`."""
    values = lists.values
    if (len(lists) and lists.null_count == 0 and values.null_count == 0
            and pa.types.is_string(values.type) and lists.offset == 0
            and not may_need_escapes(values, False)):
        offsets = np.frombuffer(lists.buffers()[1], np.int32)[:len(lists) + 1]
        if bool((offsets[1:] > offsets[:-1]).all()):
            return ('["', pc.binary_join(lists, '","'), '"]')
    return (json_lists(lists),)


def _same_text(values: pa.Array) -> str | None:
    """The one value of a string column when every row holds it (the usual ``pattern`` of a
    batch: one statement's matches), else None — one look at its bytes with numpy."""
    if (not len(values) or values.null_count or not pa.types.is_string(values.type)):
        return None
    offsets_buf, data = values.buffers()[1:3]
    o = np.frombuffer(offsets_buf, np.int32)[values.offset:values.offset + len(values) + 1]
    width = int(o[1] - o[0])
    if not bool((np.diff(o) == width).all()):
        return None
    if width == 0:
        return ""
    b = np.frombuffer(data, np.uint8)[int(o[0]):int(o[-1])].reshape(len(values), width)
    return str(values[0]) if bool((b == b[0]).all()) else None


def match_lines(batch: pa.RecordBatch | pa.Table, end: str = "") -> pa.Array:
    """The JSON line of each row of :data:`MATCH_SCHEMA` — the one encoding of a match
    (module docstring) —, each followed by ``end`` (a writer's newline)."""
    col = _column(batch)
    pattern = col("pattern")
    same = _same_text(pattern)
    return _join(MATCH_SCHEMA.names, [
        dumps(same) if same is not None else json_texts(pattern, ascii_only=False),
        match_ts_column(col("ts")).cast(pa.string()), col("params"),
        _list_parts(col("events"))], end)


def rejected_lines(batch: pa.RecordBatch | pa.Table, end: str = "") -> pa.Array:
    """The JSON line of each row of :data:`REJECTED_SCHEMA` — the one encoding of a rejected
    record —, each followed by ``end``."""
    col = _column(batch)
    return _join(REJECTED_SCHEMA.names,
                 [json_texts(col(n).cast(pa.string()), ascii_only=False)
                  for n in REJECTED_SCHEMA.names], end)


def _column(batch: pa.RecordBatch | pa.Table) -> Callable[[str], pa.Array]:
    """A column of ``batch`` by name, as one array."""
    def col(name: str) -> pa.Array:
        c = batch.column(name)
        return c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c

    return col
