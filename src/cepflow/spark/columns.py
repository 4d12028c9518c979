"""Events as Arrow/Spark columns and back, without losing a value's type.

Parameters are stored positionally. A parameter value is a JSON scalar of any type, so position
``i`` has four typed columns — ``s{i}`` (string), ``i{i}`` (long), ``f{i}`` (double), ``b{i}``
(boolean) — and a value sits in the one of its type (all null for null). Timestamps keep their
integer-ness (``ts`` for sorting, ``tsi`` when whole), ids likewise; ``seq`` is the event's
position in the input and ``key`` the JSON text of its partition key.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from cepflow.events.model import ComplexEvent, Event

SLOTS = (("s", pa.string()), ("i", pa.int64()), ("f", pa.float64()), ("b", pa.bool_()))


def event_fields(arity: int) -> list[pa.Field]:
    fields = [
        pa.field("type", pa.string()), pa.field("ts", pa.float64()), pa.field("tsi", pa.int64()),
        pa.field("id_s", pa.string()), pa.field("id_i", pa.int64()),
        pa.field("seq", pa.int64()), pa.field("file", pa.string()), pa.field("key", pa.string()),
    ]
    for i in range(arity):
        fields.extend(pa.field(f"{p}{i}", t) for p, t in SLOTS)
    return fields


def event_schema(arity: int) -> pa.Schema:
    return pa.schema(event_fields(arity))


def spark_ddl(schema: pa.Schema) -> str:
    names = {pa.string(): "string", pa.int64(): "long", pa.float64(): "double",
             pa.bool_(): "boolean"}
    out = []
    for f in schema:
        if pa.types.is_list(f.type):
            out.append(f"`{f.name}` array<string>")
        else:
            out.append(f"`{f.name}` {names[f.type]}")
    return ", ".join(out)


def _slot(v: Any) -> int:
    if v is None:
        return -1
    if isinstance(v, bool):
        return 3
    if isinstance(v, int):
        return 1
    if isinstance(v, float):
        return 2
    return 0


def encode(events: Iterable[Event], arity: int, keys: Iterable[str | None],
           files: Iterable[str | None]) -> pa.RecordBatch:
    """A record batch of ``events`` (parameters beyond ``arity`` are not kept)."""
    evs = list(events)
    cols: dict[str, list[Any]] = {f.name: [] for f in event_fields(arity)}
    for e, key, file in zip(evs, keys, files, strict=True):
        cols["type"].append(e.type)
        cols["ts"].append(float(e.ts))
        cols["tsi"].append(e.ts if isinstance(e.ts, int) and not isinstance(e.ts, bool)
                           else None)
        ident = e.id
        cols["id_s"].append(ident if isinstance(ident, str) else None)
        cols["id_i"].append(ident if isinstance(ident, int) and not isinstance(ident, bool)
                            else None)
        cols["seq"].append(e.seq)
        cols["file"].append(file)
        cols["key"].append(key)
        n = len(e.params)
        for i in range(arity):
            v = e.params[i] if i < n else None
            k = _slot(v)
            for j, (p, _) in enumerate(SLOTS):
                cols[f"{p}{i}"].append(v if j == k else None)
    return pa.RecordBatch.from_pydict(cols, schema=event_schema(arity))


def decode(batch: pa.RecordBatch, arities: dict[str, int], arity: int) -> list[Event]:
    """The events of a record batch; ``arities`` gives each known type's parameter count."""
    col = {name: batch.column(name).to_pylist() for name in batch.schema.names}
    types, ts, tsi = col["type"], col["ts"], col["tsi"]
    id_s, id_i, seq = col["id_s"], col["id_i"], col["seq"]
    slots = [[col[f"{p}{i}"] for p, _ in SLOTS] for i in range(arity)]
    out: list[Event] = []
    for r in range(batch.num_rows):
        t = types[r]
        n = arities.get(t, arity)
        params = []
        for i in range(min(n, arity)):
            s, iv, fv, bv = (c[r] for c in slots[i])
            params.append(s if s is not None else iv if iv is not None else
                          fv if fv is not None else bv)
        stamp = tsi[r] if tsi[r] is not None else ts[r]
        ident = id_s[r] if id_s[r] is not None else id_i[r]
        out.append(Event(t, tuple(params), stamp, ident, seq[r]))
    return out


MATCH_SCHEMA = pa.schema([
    pa.field("pattern", pa.string()), pa.field("ts", pa.float64()),
    pa.field("params", pa.string()), pa.field("events", pa.list_(pa.string())),
])


def encode_matches(matches: Iterable[ComplexEvent]) -> pa.RecordBatch:
    """Complex events as rows: pattern, ts, params (JSON object), contributing event ids."""
    from cepflow.outputs.jsonl import dumps

    ms = list(matches)
    return pa.RecordBatch.from_pydict({
        "pattern": [m.type for m in ms],
        "ts": [float(m.ts) for m in ms],
        "params": [dumps(m.bindings_for_output()) for m in ms],
        "events": [[str(r) for r in m.event_refs] for m in ms],
    }, schema=MATCH_SCHEMA)


def key_json(value: Any) -> str:
    """The partition key of a value: its JSON text (1 and "1" stay different keys)."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
