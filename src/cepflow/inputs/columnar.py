"""Events as typed columns, and the readers' columnar fast path.

**Layout.** Parameters are stored positionally. A parameter value is a JSON scalar of any type,
so position ``i`` has four typed columns — ``s{i}`` (string), ``i{i}`` (long), ``f{i}``
(double), ``b{i}`` (boolean) — and a value sits in the one of its type (all null for null).
Timestamps keep their integer-ness (``ts`` for sorting, ``tsi`` when whole), ids likewise
(``id_s``/``id_i``); ``seq`` is the event's position among the accepted events of its file,
``file`` the file's name and ``key`` a free column for the caller (the Spark pipeline's
partition key).

**Fast path.** :func:`read_columns` turns a whole JSON Lines or Parquet file into that layout
with pyarrow — parsing, type checks and the conversions of :mod:`cepflow.inputs.records`
column by column, with no Python object per event. It only answers when it can decide the file
exactly as the record reader would *and* every record is accepted; otherwise (a record that
would be rejected, a value whose type the columns cannot tell, an event type without a schema,
CSV, …) it returns ``None`` and the caller reads the file with the located reader, so accepted
events, rejected records and their locations stay those of the reader. The cases:

* JSON Lines: every line must start with ``{`` and end with ``}`` (no blank lines), which with
  the row count proves one object per line; invalid UTF-8, duplicate keys, lone surrogates,
  control characters in strings and nesting make pyarrow fail. ``ts`` must be an integer
  column (an ISO string or a float needs the reader); a double column is only taken for
  ``float`` parameters, since pyarrow reads ``1`` next to ``1.5`` as ``1.0``; ``id`` must be
  text or integers. A JSON ``null`` and a missing field are one null in Arrow: where that
  matters (a field the event's type does not declare, a declared one left out) the file takes the
  reader unless the text has no ``null`` at all.
* Parquet: the column types are exact; every column is a field of every row, so a column the
  row's type does not declare means a rejection (unless ``unknown_fields="ignore"``).
* Both: a parameter value that is not a finite number (JSON's ``NaN``, which pyarrow reads; a
  Parquet NaN) or an id that two records share makes the file take the reader, which rejects
  the record (:mod:`cepflow.inputs.records`).
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepflow.events.event import Event, EventType, ParamSpec
from cepflow.inputs.records import ENVELOPE_FIELDS
from cepflow.runtime.collector import gc_paused

SLOTS = (("s", pa.string()), ("i", pa.int64()), ("f", pa.float64()), ("b", pa.bool_()))
_SLOT_TYPE = dict(SLOTS)

_UNITS_PER_MS = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}


def event_fields(arity: int) -> list[pa.Field]:
    """The columns of the layout for events of at most ``arity`` parameters."""
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


#: the one slot a value of a typed parameter sits in (both readers convert to the declared
#: type: :func:`_slot_of`, :mod:`cepflow.inputs.records`); ``any`` may fill each of them
_TYPED_SLOT = {"str": "s", "int": "i", "float": "f", "bool": "b"}


def slot_columns(schemas: Mapping[str, EventType], types: set[str] | None,
                 arity: int) -> set[str]:
    """The parameter columns (``s0``, ``i0``, …) that events of ``types`` can fill — known
    before any file is read: a typed parameter its one slot, an ``any`` parameter all four;
    ``types`` None (every event) or a type without a schema (kept untyped, parameters by
    field order) every slot up to ``arity``."""
    if types is None or any(t not in schemas for t in types):
        return {f"{p}{i}" for i in range(arity) for p, _ in SLOTS}
    out: set[str] = set()
    for t in types:
        for i, spec in enumerate(schemas[t].params[:arity]):
            typed = _TYPED_SLOT.get(spec.type)
            out.update(f"{p}{i}" for p, _ in SLOTS if typed is None or p == typed)
    return out


def parquet_columns(schema: pa.Schema, schemas: Mapping[str, EventType],
                    types: set[str] | None, arity: int) -> set[str]:
    """The optional layout columns (``tsi``, ids, parameter slots) that events of ``types``
    read from a Parquet file whose Arrow schema is ``schema`` (its footer) can fill. A column's
    type decides its slot for both readers (:func:`_slot_of`); a type that does not decide it
    counts for every slot the parameter may fill (:func:`slot_columns`), and ``tsi`` always
    counts."""
    if types is None or any(t not in schemas for t in types):
        return {"tsi", "id_s", "id_i"} | slot_columns(schemas, types, arity)
    out = {"tsi"}

    def type_of(name: str) -> pa.DataType | None:
        i = schema.get_field_index(name)
        return None if i < 0 or pa.types.is_null(schema.field(i).type) else schema.field(i).type

    ids = type_of("id")
    if ids is not None:
        text = pa.types.is_string(ids) or pa.types.is_large_string(ids)
        out.update(["id_s"] if text else ["id_i"] if pa.types.is_integer(ids)
                   else ["id_s", "id_i"])
    for t in types:
        for i, spec in enumerate(schemas[t].params[:arity]):
            typ = type_of(spec.name)
            if typ is None:
                continue
            slot = _slot_of(spec, typ, True)
            typed = _TYPED_SLOT.get(spec.type)
            out.update([f"{slot}{i}"] if slot is not None else
                       [f"{p}{i}" for p, _ in SLOTS if typed is None or p == typed])
    return out


def arity_of(schemas: Mapping[str, EventType]) -> int:
    """The layout's parameter positions for ``schemas``: the most parameters of a type."""
    return max([len(t.params) for t in schemas.values()] or [0])


def constant(value: str | None, n: int) -> pa.Array:
    """A string column of ``n`` copies of ``value``."""
    if value is None:
        return pa.nulls(n, pa.string())
    text = value.encode("utf-8")
    if text and len(text) * n < 1 << 31:  # (its buffers made at once: a third of a gather's
        # time — every batch has a column of its file's name)
        offsets = np.arange(0, (n + 1) * len(text), len(text), dtype=np.int32)
        return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                      pa.py_buffer(text * n)])
    idx = pa.array(np.zeros(n, dtype=np.int32))
    return pa.DictionaryArray.from_arrays(idx, pa.array([value])).cast(pa.string())


def one_array(col: pa.ChunkedArray) -> pa.Array:
    """The column as one array: its chunk when it has one (``combine_chunks`` copies even
    then: a copy of every column of every batch read), else the chunks joined."""
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


_TYPES = {f.name: f.type for f in event_fields(0)} | {p: t for p, t in SLOTS}


def column(batch: pa.RecordBatch, name: str) -> pa.Array:
    """A layout column of ``batch``; nulls if the batch leaves it out (a column known to be
    empty need not travel)."""
    i = batch.schema.get_field_index(name)
    if i >= 0:
        return batch.column(i)
    return pa.nulls(batch.num_rows, _TYPES.get(name) or _TYPES[name[0]])


def _either(first: pa.Array, second: pa.Array) -> list[Any]:
    """Per row the value of ``first``, else of ``second`` (Python objects)."""
    if first.null_count == 0:
        return first.to_pylist()
    if first.null_count == len(first):
        return second.to_pylist()
    return [a if a is not None else b
            for a, b in zip(first.to_pylist(), second.to_pylist(), strict=True)]


def _param_values(batch: pa.RecordBatch, i: int) -> list[Any]:
    """The values at parameter position ``i``: the one non-null slot of each row."""
    cols = [column(batch, f"{p}{i}") for p, _ in SLOTS]
    used = [c for c in cols if c.null_count < len(c)]
    if not used:
        return [None] * batch.num_rows
    if len(used) == 1:
        return used[0].to_pylist()
    lists = [c.to_pylist() for c in used]
    return [next((v for v in vs if v is not None), None) for vs in zip(*lists, strict=True)]


def decode(batch: pa.RecordBatch, arities: Mapping[str, int], arity: int) -> list[Event]:
    """The events of a record batch; ``arities`` gives each known type's parameter count.
    (The cyclic collector is paused meanwhile: it would walk every event made so far again
    and again — 60 % of the time of decoding a million events — and they form no cycles.)"""
    with gc_paused():
        return _decode(batch, arities, arity)


def stamps(batch: pa.RecordBatch, rows: pa.Array | None = None) -> list[Any]:
    """The timestamps of the batch's rows (of ``rows`` of it, when given) as its events have
    them: the integer column's value where there is one, else the float's."""
    tsi, ts = column(batch, "tsi"), column(batch, "ts")
    if rows is not None:
        tsi, ts = tsi.take(rows), ts.take(rows)
    return _either(tsi, ts)


def _decode(batch: pa.RecordBatch, arities: Mapping[str, int], arity: int) -> list[Event]:
    n = batch.num_rows
    types = column(batch, "type").to_pylist()
    stamps_ = stamps(batch)
    ids = _either(column(batch, "id_s"), column(batch, "id_i"))
    values = [_param_values(batch, i) for i in range(arity)]
    params: list[tuple[Any, ...]] = list(zip(*values, strict=True)) if arity else [()] * n
    short = {t for t in set(types) if arities.get(t, arity) < arity}
    if short:
        params = [p[:arities[t]] if t in short else p
                  for t, p in zip(types, params, strict=True)]
    return list(map(Event, types, params, stamps_, ids, column(batch, "seq").to_pylist()))


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



class _Undecided(Exception):
    """The fast path cannot decide this file exactly as the record reader would."""


def read_columns(
    content: bytes,
    suffix: str,
    schemas: Mapping[str, EventType] | None,
    arity: int,
    source: str,
    *,
    strict_params: bool = True,
    unknown_fields: str = "reject",
    unknown_types: str = "reject",
    unique_ids: bool = True,
    **_other: Any,
) -> pa.Table | None:
    """The events of one file (its bytes) in the layout, or None when the reader must decide.

    ``suffix`` picks the format as :data:`cepflow.inputs.READERS` does; options are the
    readers' (others, such as CSV's, are ignored: CSV always takes the reader). A table is
    returned only if the record reader would accept every record of the file, with the same
    events in the same order (``seq`` 0, 1, …).
    """
    del unknown_types  # an event type without a schema always takes the reader
    if not _layable(schemas, listed=True):
        return None
    assert schemas is not None
    try:
        listed = False
        if suffix in (".jsonl", ".ndjson", ".json"):
            records, nulls_are_fields, exact_doubles = _json_records(content, schemas)
            listed = any(name.startswith(LISTED) for name in records.column_names)
        elif suffix in (".parquet", ".pq"):
            records, nulls_are_fields, exact_doubles = _parquet_records(content), True, True
        else:
            return None
        if not listed and not _layable(schemas):
            return None
        return _layout(records, schemas, arity, source, strict_params=strict_params,
                       unknown_fields=unknown_fields, nulls_are_fields=nulls_are_fields,
                       exact_doubles=exact_doubles, unique_ids=unique_ids, listed=listed)
    except (_Undecided, pa.ArrowException, OverflowError, UnicodeError, ValueError,
            RecursionError):
        return None


def parquet_columns_of(records: pa.Table, schemas: Mapping[str, EventType] | None, arity: int,
                       source: str, *, strict_params: bool = True,
                       unknown_fields: str = "reject", unique_ids: bool = True,
                       **_other: Any) -> pa.Table | None:
    """:func:`read_columns` of rows already read from a Parquet file (a batch of them):
    the layout, or None when the record reader must decide them."""
    if not _layable(schemas):
        return None
    assert schemas is not None
    try:
        return _layout(records, schemas, arity, source, strict_params=strict_params,
                       unknown_fields=unknown_fields, nulls_are_fields=True,
                       exact_doubles=True, unique_ids=unique_ids)
    except (_Undecided, pa.ArrowException, OverflowError, UnicodeDecodeError):
        return None


def _layable(schemas: Mapping[str, EventType] | None, listed: bool = False) -> bool:
    """Whether events of ``schemas`` can be read column-wise at all (every type declared, no
    parameter named like a field of the record's envelope — which receives that field's
    value, unless the records give their parameters as a ``params`` list: ``listed`` —, none
    named ``params``)."""
    names = ("params",) if listed else (*ENVELOPE_FIELDS, "params")
    return schemas is not None and not any(p.name in names
                                           for t in schemas.values() for p in t.params)


# -- formats -----------------------------------------------------------------------------------
def _json_records(content: bytes, schemas: Mapping[str, EventType]
                  ) -> tuple[pa.Table, bool, bool]:
    """Parse JSON Lines with pyarrow; (records, nulls may be explicit fields, doubles exact).
    Records that may give their parameters as a ``params`` list (the bytes ``"params"``
    occur: pyarrow reads no list of mixed values) are parsed by Python's decoder
    (:func:`_listed_records`)."""
    import pyarrow.json as pj

    if content.startswith(codecs.BOM_UTF8):
        content = content[len(codecs.BOM_UTF8):]
    if not content.isascii():
        content.decode("utf-8")  # invalid UTF-8 → the reader locates it
    lines = _object_lines(content)
    if b'"params"' in content:
        return _listed_records(content, lines, schemas), b"null" in content, False
    # parameters are inferred: a column stands only for fields that occur in the file
    explicit: dict[str, pa.DataType] = {"type": pa.string(), "ts": pa.int64()}
    if not content:
        return pa.table({k: pa.array([], t) for k, t in explicit.items()}), False, False
    table = pj.read_json(
        io.BytesIO(content),
        read_options=pj.ReadOptions(use_threads=False, block_size=max(1 << 20, len(content))),
        parse_options=pj.ParseOptions(explicit_schema=pa.schema(list(explicit.items())),
                                      unexpected_field_behavior="infer"))
    if table.num_rows != lines:
        raise _Undecided("not one object per line")
    return table, b"null" in content, False


#: the prefix of the columns of the parameters records give as a ``params`` list
#: (:func:`_listed_records`; no field of a record has it: "params" is no parameter's name)
LISTED = "params\x00"
#: the Python types of JSON scalars (a record's values the layout takes)
_SCALARS = frozenset({type(None), bool, int, float, str})


def _listed_records(content: bytes, lines: int, schemas: Mapping[str, EventType]) -> pa.Table:
    """The records of JSON Lines (``lines`` objects, one a line: :func:`_object_lines`) as
    the columns pyarrow would read from the same records with named fields, a ``params``
    list read as the record rules read it (:mod:`cepflow.inputs.records`: positionally, the
    type's parameters in declared order) — or _Undecided (or a decoding error) where the
    record reader must decide: a record without one (**decision**: a file mixing both forms
    takes the reader), a ``params`` list beside another field than ``type``, ``ts``
    and ``id`` (combined with named parameters or an unknown field), of another length than
    the type declares (too long, or padded with nulls), of a type without a schema, a
    ``params`` that is not a list (an unknown field), a value that is not a scalar, a column
    whose values pyarrow's JSON reader would not read as one type (a boolean beside a
    number, a text beside either).

    The lines are decoded as one array by the reader's decoder (duplicate keys refused), each
    line's object an element: joined by ``",\n"``, a text spanning lines would hold the
    newline, which the decoder refuses, and any other way for two lines to make one element
    holds a nested value — refused —, so with the count of elements equal to the count of
    lines each element is its line's object (a line of two objects makes one more).

    Parameter ``i`` of type ``t`` is the column ``LISTED + t + "." + str(i)`` (a parameter
    named like an envelope field, such as contractions' ``Patient(ts, id, …)``, is the list's
    value, not the envelope's: :func:`_layout` with ``listed``)."""
    from cepflow.inputs.jsonl import _DECODER  # (the reader's: duplicate keys refused)

    text = content.decode("utf-8").split("\n")
    if text and not text[-1]:
        text.pop()
    recs = _DECODER.decode("[" + ",\n".join(text) + "]") if lines else []
    if len(recs) != lines or any(type(r) is not dict for r in recs):
        raise _Undecided("not one object per line")
    if not recs:
        return pa.table({"type": pa.array([], pa.string())})
    shapes = set(map(tuple, recs))
    if any("params" not in s or set(s) - {"type", "ts", "id", "params"} for s in shapes):
        raise _Undecided("a record without a 'params' list or with named fields beside it")
    fields: dict[str, list[Any]] = {
        name: ([r[name] for r in recs] if all(name in s for s in shapes)
               else [r.get(name) for r in recs])
        for name in dict.fromkeys(k for s in shapes for k in s if k != "params")}
    plists = [r["params"] for r in recs]
    types = fields.get("type") or [None] * lines
    by_type: dict[Any, list[int]] = {}
    if len(set(types)) == 1:
        by_type[types[0]] = list(range(lines))
    else:
        for i, t in enumerate(types):
            by_type.setdefault(t, []).append(i)
    for t, idx in by_type.items():
        schema = schemas.get(t) if isinstance(t, str) else None
        if schema is None:
            raise _Undecided("a 'params' list of a type without a schema")
        mine = plists if len(idx) == lines else [plists[i] for i in idx]
        if set(map(type, mine)) != {list} or set(map(len, mine)) != {len(schema.params)}:
            raise _Undecided("a 'params' that is not a list of the declared length")
        for k, values in enumerate(zip(*mine, strict=True)):
            if len(idx) == lines:
                fields[f"{LISTED}{t}.{k}"] = list(values)
                continue
            col = fields[f"{LISTED}{t}.{k}"] = [None] * lines
            for i, v in zip(idx, values, strict=True):
                col[i] = v
    return pa.table({name: _json_column(name, values) for name, values in fields.items()})


def _json_column(name: str, values: list[Any]) -> pa.Array:
    """A column of JSON scalars as pyarrow's JSON reader types it — or _Undecided for values
    it would not read as one type or not at all (a ``ts`` of doubles then fails in
    :func:`_timestamps`, as pyarrow's column of them)."""
    kinds = set(map(type, values))
    if not kinds <= _SCALARS:
        raise _Undecided(f"{name!r} has a value that is not a scalar")
    kinds.discard(type(None))
    if len(kinds) > 1 and kinds != {int, float}:
        raise _Undecided(f"{name!r} has values of several types")
    return pa.array(values, pa.float64() if float in kinds else None)


def _object_lines(content: bytes) -> int:
    """The number of lines if every line starts with ``{`` and ends with ``}`` (a ``\\r``
    before the newline allowed), else _Undecided."""
    if not content:
        return 0
    buf = np.frombuffer(content, dtype=np.uint8)
    starts, ends = _line_bounds(buf)
    last = ends - 1
    padded = np.append(buf, np.uint8(0))
    last = np.where((last >= starts) & (padded[np.maximum(last, 0)] == 13), last - 1, last)
    ok = (last > starts) & (padded[starts] == ord("{")) & (padded[np.maximum(last, 0)] == ord("}"))
    if not bool(ok.all()):
        raise _Undecided("a line that is not one object")
    return len(ends)


def _parquet_records(content: bytes) -> pa.Table:
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(content))


# -- CSV ---------------------------------------------------------------------------------------
#: what the record rules read from text (cepflow.inputs.records), as RE2 patterns of pyarrow
_WHOLE = r"^-?[0-9]{1,18}$"  # an integer int64 holds (ts, int parameters; "007" is 7)
_CANONICAL = r"^-?(0|[1-9][0-9]{0,17})$"  # a canonical integer (ids, inferred cells)
_LONG_CANONICAL = r"^-?[1-9][0-9]{18,}$"  # one beyond int64: the reader decides
_DECIMAL = r"^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$"  # what pyarrow parses as Python does
_NUMBER = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"  # records._NUMBER_RE
_DOTTED = r"[.eE]"  # an inferred cell is a float only with a point or an exponent


def csv_columns(block: bytes, header: list[str], schemas: Mapping[str, EventType] | None,
                arity: int, source: str, *, delimiter: str = ",", infer_types: bool = True,
                strict_params: bool = True, unknown_fields: str = "reject",
                unique_ids: bool = True, **_other: Any) -> pa.Table | None:
    """:func:`read_columns` of CSV lines (whole lines, under ``header``, which has no problem):
    the layout, or None when the record reader must decide them. Only lines without a carriage
    return, each with the header's number of cells, are read so, a quote character only around
    a whole cell that holds none (:func:`_plain_quotes`: so no cell spans lines, and the csv
    module and pyarrow read the same text); a cell is converted as the record rules convert
    text (:mod:`cepflow.inputs.records`) when pyarrow gives exactly that value, else the record
    reader decides the lines."""
    if (not _layable(schemas) or not block or b"\r" in block or len(delimiter) != 1
            or not delimiter.isascii() or delimiter == '"' or "" in header):
        return None
    assert schemas is not None
    try:
        if not block.isascii():
            block.decode("utf-8")
        n = _cell_lines(block, delimiter, len(header))
        import pyarrow.csv as pcsv

        table = pcsv.read_csv(
            io.BytesIO(block),
            read_options=pcsv.ReadOptions(column_names=header, use_threads=False,
                                          block_size=max(1 << 20, len(block) + 1)),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, quote_char='"',
                                            double_quote=False, ignore_empty_lines=False),
            convert_options=pcsv.ConvertOptions(
                column_types={h: pa.string() for h in header}, null_values=[],
                strings_can_be_null=False, quoted_strings_can_be_null=False))
        if table.num_rows != n:
            raise _Undecided("a line that is not one row")
        cols = {name: _nulled(one_array(table.column(name))) for name in header}
        return _text_layout(cols, n, schemas, arity, source, infer_types=infer_types,
                            strict_params=strict_params, unknown_fields=unknown_fields,
                            unique_ids=unique_ids)
    except (_Undecided, pa.ArrowException, OverflowError, UnicodeDecodeError):
        return None


def _cell_lines(block: bytes, delimiter: str, cells: int) -> int:
    """The number of lines if every line has ``cells`` cells (none is empty), else
    _Undecided."""
    buf = np.frombuffer(block, dtype=np.uint8)
    starts, ends = _line_bounds(buf)
    cuts = np.flatnonzero(buf == ord(delimiter))
    if bool((ends <= starts).any()):
        raise _Undecided("a blank line")
    # (cuts ascend: with n * (cells - 1) of them, line i has exactly its cells - 1 iff they
    # all lie within it, which its first and last say)
    per = cells - 1
    if len(cuts) != len(ends) * per or (per and not (
            bool((cuts[::per] >= starts).all()) and bool((cuts[per - 1::per] < ends).all()))):
        raise _Undecided("a line with another number of cells")
    if int((ends - starts).max()) >= csv.field_size_limit():
        raise _Undecided("a cell the csv module may find too long")
    quotes = np.flatnonzero(buf == ord('"'))
    if len(quotes) and not _plain_quotes(buf, quotes, ends, ord(delimiter)):
        raise _Undecided("a quote character inside a cell")
    return len(ends)


def _plain_quotes(buf: np.ndarray, quotes: np.ndarray, ends: np.ndarray, delimiter: int
                  ) -> bool:
    """Whether the quote characters at ``quotes`` each open a cell (at a line's start or after
    a delimiter) or close one (before a delimiter or the line's end), never both, opening and
    closing in turn, each cell closed on the line it opened on."""
    before = buf[np.maximum(quotes - 1, 0)]
    at_start = (quotes == 0) | (before == delimiter) | (before == 10)
    after = buf[np.minimum(quotes + 1, len(buf) - 1)]
    at_end = (quotes + 1 == len(buf)) | (after == delimiter) | (after == 10)
    if len(quotes) % 2 or bool((at_start == at_end).any()):
        return False
    opening, closing = quotes[0::2], quotes[1::2]
    if not (bool(at_start[0::2].all()) and not bool(at_start[1::2].any())):
        return False
    return bool((np.searchsorted(ends, opening) == np.searchsorted(ends, closing)).all())


def _line_bounds(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) offsets of each line of a text (the end at its newline or the text's
    end)."""
    ends = np.flatnonzero(buf == 10)
    if len(ends) == 0 or ends[-1] != len(buf) - 1:
        ends = np.append(ends, len(buf))
    starts = np.empty(len(ends), dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    return starts, ends


def _nulled(col: pa.Array) -> pa.Array:
    """Empty cells as nulls (the record reader's None)."""
    empty = pc.equal(col, "")
    return pc.if_else(empty, pa.scalar(None, pa.string()), col) if pc.any(empty).as_py() else col


def _matches(col: pa.Array, pattern: str) -> pa.Array:
    """Per value whether it matches ``pattern`` (false for nulls)."""
    return pc.fill_null(pc.match_substring_regex(col, pattern), False)


def _all(mask: pa.Array | np.ndarray, rows: np.ndarray | None = None) -> bool:
    m = mask.to_numpy(zero_copy_only=False) if isinstance(mask, pa.Array) else mask
    return bool(m[rows].all()) if rows is not None else bool(m.all())


def _text_layout(cols: dict[str, pa.Array], n: int, schemas: Mapping[str, EventType],
                 arity: int, source: str, *, infer_types: bool, strict_params: bool,
                 unknown_fields: str, unique_ids: bool) -> pa.Table:
    """The layout of text columns (CSV cells, empty ones null) — or _Undecided."""
    out: dict[str, pa.Array] = {}
    types = cols["type"]
    if types.null_count:
        raise _Undecided("a record without a type")
    rows = _rows_by_type(types, n, schemas)
    out["type"] = types
    ts = cols["ts"]
    if ts.null_count or not _all(_matches(ts, _WHOLE)):
        raise _Undecided("a timestamp that is not an integer number of ms")
    out["tsi"] = ts.cast(pa.int64())
    out["ts"] = out["tsi"].cast(pa.float64())
    out["id_s"], out["id_i"] = _text_ids(cols.get("id"), n, unique_ids)
    out["seq"] = pa.array(np.arange(n, dtype=np.int64))
    out["file"] = constant(source, n)
    out["key"] = pa.nulls(n, pa.string())
    slots: dict[str, list[tuple[np.ndarray, pa.Array]]] = {}
    read_as: dict[tuple[str, str], tuple[list[tuple[str, pa.Array, np.ndarray]], np.ndarray]] = {}
    for t, mask in rows.items():
        names = schemas[t].param_names
        if unknown_fields != "ignore" and any(
                h not in names and h not in ENVELOPE_FIELDS for h in cols):
            raise _Undecided(f"a column that is not a parameter of {t!r}")
        where = np.flatnonzero(mask)
        for i, spec in enumerate(schemas[t].params):
            col = cols.get(spec.name)
            if col is None:
                if strict_params:
                    raise _Undecided(f"missing parameter {spec.name!r}")
                continue
            read = read_as.get((spec.name, spec.type))
            if read is None:  # (types that share a field read its column once)
                read = read_as[spec.name, spec.type] = _read_text(spec.type, col, infer_types)
            for slot, values, valid in read[0]:
                keep = valid & mask
                if keep.any():
                    slots.setdefault(f"{slot}{i}", []).append((keep, values))
            if not _all(read[1], where):
                raise _Undecided(f"{spec.name!r} has a value the reader rejects or reads "
                                 "otherwise")
    return _table(out, slots, n, arity)


def _text_ids(col: pa.Array | None, n: int, unique: bool) -> tuple[pa.Array, pa.Array]:
    """(text ids, integer ids) as the record rules read ids from text: a canonical integer is
    one; with ``unique``, _Undecided when two records have one id."""
    if col is None or col.null_count == len(col):
        return pa.nulls(n, pa.string()), pa.nulls(n, pa.int64())
    if _matches(col, _LONG_CANONICAL).to_numpy(zero_copy_only=False).any():
        raise _Undecided("an integer id beyond int64")
    whole = _matches(col, _CANONICAL)
    null_s, null_i = pa.scalar(None, pa.string()), pa.scalar(None, pa.int64())
    ids_i = pc.if_else(whole, col, null_s).cast(pa.int64())
    ids_s = pc.if_else(whole, null_s, col)
    if unique:
        for ids in (ids_s, ids_i):
            if ids.null_count < n and (len(pc.dictionary_encode(ids).dictionary)
                                       < n - ids.null_count):
                raise _Undecided("a duplicate id")
    del null_i
    return ids_s, ids_i


#: a text column with at most this share of distinct values is read value by distinct value
DISTINCT_SHARE = 0.25


def _as_text(kind: str, infer: bool) -> bool:
    """Whether a text cell of a parameter of ``kind`` is read as the text itself."""
    return kind == "str" or (kind == "any" and not infer)


def _read_text(kind: str, col: pa.Array, infer: bool
               ) -> tuple[list[tuple[str, pa.Array, np.ndarray]], np.ndarray]:
    """(:func:`_text_values`, :func:`_typed_or_null` as numpy) of a text column. When its
    values repeat (ids, names, categories: at most :data:`DISTINCT_SHARE` of them distinct),
    both run over the distinct values only and are spread back to the rows — the regular
    expressions then run once per value, not once per row; a null cell counts as what both
    say of a null (no slot; read alike). Text read as text converts nothing: no encoding."""
    enc = None if _as_text(kind, infer) else pc.dictionary_encode(col)
    if enc is None or len(enc.dictionary) > DISTINCT_SHARE * len(col):
        return (_text_values(kind, col, infer),
                _typed_or_null(kind, col, infer).to_numpy(zero_copy_only=False))
    distinct, idx = enc.dictionary, enc.indices
    at = idx.fill_null(len(distinct)).to_numpy(zero_copy_only=False)  # (null: the sentinel)
    values = [(slot, vals.take(idx), np.append(rows, False)[at])
              for slot, vals, rows in _text_values(kind, distinct, infer)]
    typed = _typed_or_null(kind, distinct, infer).to_numpy(zero_copy_only=False)
    return values, np.append(typed, True)[at]


def _text_values(kind: str, col: pa.Array, infer: bool
                 ) -> list[tuple[str, pa.Array, np.ndarray]]:
    """(slot, values, rows) of a text column read as a parameter of ``kind``: the rows of
    each slot whose text converts as the record rules convert it (the others are checked by
    :func:`_typed_or_null`)."""
    def rows(mask: pa.Array) -> np.ndarray:
        return mask.to_numpy(zero_copy_only=False)

    if _as_text(kind, infer):
        return [("s", col, rows(pc.is_valid(col)))]
    if kind == "int":
        whole = _matches(col, _WHOLE)
        return [("i", pc.if_else(whole, col, pa.scalar(None, pa.string())).cast(pa.int64()),
                 rows(whole))]
    if kind == "float":
        num = _matches(col, _DECIMAL)
        return [("f", pc.if_else(num, col, pa.scalar(None, pa.string())).cast(pa.float64()),
                 rows(num))]
    low = pc.utf8_lower(col)
    boolean = pc.fill_null(pc.or_(pc.equal(low, "true"), pc.equal(low, "false")), False)
    if kind == "bool":
        return [("b", pc.equal(low, "true"), rows(boolean))]
    # any, inferred: a canonical integer, a decimal number with . or an exponent, a boolean,
    # else text
    whole = _matches(col, _CANONICAL)
    dec = pc.and_(_matches(col, _DECIMAL), _matches(col, _DOTTED))
    none = pa.scalar(None, pa.string())
    text = pc.and_(pc.is_valid(col), pc.invert(pc.or_(pc.or_(whole, dec), boolean)))
    return [("i", pc.if_else(whole, col, none).cast(pa.int64()), rows(whole)),
            ("f", pc.if_else(dec, col, none).cast(pa.float64()), rows(dec)),
            ("b", pc.equal(low, "true"), rows(boolean)),
            ("s", col, rows(text))]


def _typed_or_null(kind: str, col: pa.Array, infer: bool) -> pa.Array:
    """Per row whether the record reader reads the cell as :func:`_text_values` does (null
    cells: None either way)."""
    null = pc.is_null(col)
    if _as_text(kind, infer):
        return pa.array(np.ones(len(col), dtype=bool))
    if kind == "int":
        return pc.or_(null, _matches(col, _WHOLE))
    if kind == "float":
        ok = _matches(col, _DECIMAL)
        if ok.to_numpy(zero_copy_only=False).any():
            values = pc.if_else(ok, col, pa.scalar(None, pa.string())).cast(pa.float64())
            ok = pc.and_(ok, pc.fill_null(pc.is_finite(values), False))
        return pc.or_(null, ok)
    low = pc.utf8_lower(col)
    boolean = pc.fill_null(pc.or_(pc.equal(low, "true"), pc.equal(low, "false")), False)
    if kind == "bool":
        return pc.or_(null, boolean)
    # any, inferred: no cell the reader strips, reads as a longer integer or as a number our
    # decimal pattern does not take; every number finite
    stripped = pc.fill_null(pc.not_equal(pc.utf8_trim_whitespace(col), col), False)
    dotted = _matches(col, _DOTTED)
    ours = pc.and_(_matches(col, _DECIMAL), dotted)
    python = pc.and_(_matches(col, _NUMBER), dotted)
    odd = pc.or_(pc.or_(stripped, _matches(col, _LONG_CANONICAL)),
                 pc.and_(python, pc.invert(ours)))
    if ours.to_numpy(zero_copy_only=False).any():
        values = pc.if_else(ours, col, pa.scalar(None, pa.string())).cast(pa.float64())
        odd = pc.or_(odd, pc.and_(ours, pc.invert(pc.fill_null(pc.is_finite(values), True))))
    return pc.invert(odd)


# -- records → layout ----------------------------------------------------------------------------
def _layout(records: pa.Table, schemas: Mapping[str, EventType], arity: int, source: str, *,
            strict_params: bool, unknown_fields: str, nulls_are_fields: bool,
            exact_doubles: bool, unique_ids: bool, listed: bool = False) -> pa.Table:
    """The layout of ``records`` (columns by field name, Arrow-typed; with ``listed`` the
    parameters as a ``params`` list gives them, by type and place: :func:`_listed_records`)
    — or _Undecided."""
    n = records.num_rows
    cols = {name: one_array(records.column(name)) for name in records.column_names}
    coded = cols.get("type")
    if coded is not None and pa.types.is_dictionary(coded.type):
        # (the Parquet reader's: the file's own codes — inputs.parquet, _text_columns)
        rows = _rows_by_code(coded, n, schemas)
        cols["type"] = coded.cast(coded.type.value_type)
    if any(not _primitive(c.type) for c in cols.values()):
        raise _Undecided("a nested or unsupported column")
    if coded is None or not pa.types.is_dictionary(coded.type):
        rows = _rows_by_type(cols.get("type"), n, schemas)
    out: dict[str, pa.Array] = {}
    out["ts"], out["tsi"] = _timestamps(cols.get("ts"), n, exact_doubles)
    out["id_s"], out["id_i"] = _ids(cols.get("id"), n, exact_doubles, unique_ids)
    out["type"] = cols["type"].cast(pa.string()) if n else pa.array([], pa.string())
    out["seq"] = pa.array(np.arange(n, dtype=np.int64))
    out["file"] = constant(source, n)
    out["key"] = pa.nulls(n, pa.string())
    if unknown_fields != "ignore":
        for name, col in cols.items():
            if name in ENVELOPE_FIELDS or name.startswith(LISTED):
                continue
            for t, mask in rows.items():
                if name not in schemas[t].param_names and (
                        nulls_are_fields or _any_valid(col, mask)):
                    raise _Undecided(f"field {name!r} is not a parameter of {t!r}")
    slots: dict[str, list[tuple[np.ndarray, pa.Array]]] = {}
    for t, mask in rows.items():
        for i, spec in enumerate(schemas[t].params):
            col = cols.get(f"{LISTED}{t}.{i}" if listed else spec.name)
            if col is None or col.null_count == len(col):
                if strict_params:
                    raise _Undecided(f"missing parameter {spec.name!r}")
                continue
            if strict_params and not _all_valid(col, mask):
                raise _Undecided(f"missing parameter {spec.name!r}")
            slot = _slot_of(spec, col.type, exact_doubles)
            if pa.types.is_floating(col.type) and not pc.all(pc.is_finite(col)).as_py():
                raise _Undecided(f"{spec.name!r} has a value that is not a finite number")
            if slot is None:
                if _any_valid(col, mask):
                    raise _Undecided(f"{spec.name!r} has values the reader rejects or the "
                                     "columns cannot tell apart")
                continue
            slots.setdefault(f"{slot}{i}", []).append((mask, col))
    return _table(out, slots, n, arity)


def _table(out: dict[str, pa.Array], slots: dict[str, list[tuple[np.ndarray, pa.Array]]],
           n: int, arity: int) -> pa.Table:
    """The layout table of the envelope columns ``out`` and the parameter ``slots`` (rows and
    their source column, per slot column)."""
    for f in event_fields(arity):
        if f.name in out:
            continue
        parts = slots.get(f.name)
        out[f.name] = _combine(parts, f.type, n) if parts else pa.nulls(n, f.type)
    return pa.table([out[f.name] for f in event_fields(arity)], schema=event_schema(arity))


def _primitive(t: pa.DataType) -> bool:
    return (pa.types.is_null(t) or pa.types.is_boolean(t) or pa.types.is_integer(t)
            or pa.types.is_floating(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_timestamp(t))


def _rows_by_type(col: pa.Array | None, n: int, schemas: Mapping[str, EventType]
                  ) -> dict[str, np.ndarray]:
    """Row mask per event type; _Undecided unless every row has a type with a schema."""
    if n == 0:
        return {}
    if col is None or not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        raise _Undecided("type is not text in every row")
    if col.null_count:
        raise _Undecided("a record without a type")
    enc = pc.dictionary_encode(col)
    names = enc.dictionary.to_pylist()
    if any(name not in schemas for name in names):
        raise _Undecided("an event type without a schema")
    idx = enc.indices.to_numpy()
    return {name: idx == code for code, name in enumerate(names)}


def _rows_by_code(col: pa.DictionaryArray, n: int, schemas: Mapping[str, EventType]
                  ) -> dict[str, np.ndarray]:
    """:func:`_rows_by_type` of a dictionary-coded type column, from its codes (no hashing of
    its texts): the same masks (in the dictionary's order: they are disjoint, their order
    changes nothing); the dictionary's values no row uses do not count, one value given twice
    is one type."""
    if n == 0:
        return {}
    kind = col.type.value_type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise _Undecided("type is not text in every row")
    if col.null_count or col.dictionary.null_count:
        raise _Undecided("a record without a type")
    idx = col.indices.to_numpy()
    names = col.dictionary.to_pylist()
    used = np.flatnonzero(np.bincount(idx, minlength=len(names)))
    rows: dict[str, np.ndarray] = {}
    for code in used.tolist():
        name = names[code]
        if name not in schemas:
            raise _Undecided("an event type without a schema")
        mask = idx == code
        rows[name] = rows[name] | mask if name in rows else mask
    return rows


def _timestamps(col: pa.Array | None, n: int, exact_doubles: bool
                ) -> tuple[pa.Array, pa.Array]:
    """(ts as double, ts when an integer) as the record rules read timestamps."""
    if n == 0:
        return pa.array([], pa.float64()), pa.array([], pa.int64())
    if col is None or col.null_count:
        raise _Undecided("a record without ts")
    t = col.type
    if pa.types.is_integer(t):
        tsi = col.cast(pa.int64())
        return tsi.cast(pa.float64()), tsi
    if pa.types.is_floating(t) and exact_doubles:
        ts = col.cast(pa.float64())
        if not pc.all(pc.is_finite(ts)).as_py():
            raise _Undecided("a timestamp that is not finite")
        return ts, pa.nulls(n, pa.int64())
    if pa.types.is_timestamp(t):
        ticks = col.cast(pa.int64()).to_numpy()
        per_ms = _UNITS_PER_MS[t.unit]
        if per_ms is None:
            ms = ticks * 1000
        elif bool((ticks % per_ms).any()):
            raise _Undecided("a timestamp with a fraction of a millisecond")
        else:
            ms = ticks // per_ms
        return pa.array(ms.astype(np.float64)), pa.array(ms)
    raise _Undecided("ts is not an integer number of milliseconds in every row")


def _ids(col: pa.Array | None, n: int, exact_doubles: bool, unique: bool
         ) -> tuple[pa.Array, pa.Array]:
    """(text ids, integer ids) as the record rules read ids; with ``unique``, _Undecided when
    two records have one id (the reader rejects the second)."""
    if col is None or col.null_count == len(col):
        return pa.nulls(n, pa.string()), pa.nulls(n, pa.int64())
    t = col.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        text, whole = col.cast(pa.string()), pa.nulls(n, pa.int64())
    elif pa.types.is_integer(t):
        text, whole = pa.nulls(n, pa.string()), col.cast(pa.int64())
    elif pa.types.is_floating(t) and exact_doubles:
        # ArrowInvalid for a fraction or beyond int64 → reader
        text, whole = pa.nulls(n, pa.string()), col.cast(pa.int64())
    else:
        raise _Undecided("an id that is neither text nor an integer")
    if unique:  # (dictionary_encode: 3.5x less CPU than count_distinct on text ids)
        ids = whole if text.null_count == n else text
        if len(pc.dictionary_encode(ids).dictionary) < n - ids.null_count:
            raise _Undecided("a duplicate id")
    return text, whole


def _slot_of(spec: ParamSpec, t: pa.DataType, exact_doubles: bool) -> str | None:
    """The slot a column of Arrow type ``t`` fills for parameter ``spec``, or None if the
    reader would reject its values (or the column cannot tell what they were)."""
    text = pa.types.is_string(t) or pa.types.is_large_string(t)
    integer = pa.types.is_integer(t)
    double = pa.types.is_floating(t)
    boolean = pa.types.is_boolean(t)
    kind = spec.type
    if kind == "str":
        return "s" if text else None
    if kind == "int":
        return "i" if integer else None
    if kind == "float":
        return "f" if integer or double else None
    if kind == "bool":
        return "b" if boolean else None
    if text:
        return "s"
    if integer:
        return "i"
    if boolean:
        return "b"
    return "f" if double and exact_doubles else None


def _any_valid(col: pa.Array, mask: np.ndarray) -> bool:
    """Whether ``col`` has a value (not null) in a row of ``mask``."""
    if col.null_count == len(col):
        return False
    valid = col.is_valid().to_numpy(zero_copy_only=False)
    return bool((valid & mask).any())


def _all_valid(col: pa.Array, mask: np.ndarray) -> bool:
    if col.null_count == 0:
        return True
    valid = col.is_valid().to_numpy(zero_copy_only=False)
    return bool(valid[mask].all())


def _combine(parts: list[tuple[np.ndarray, pa.Array]], typ: pa.DataType, n: int) -> pa.Array:
    """One slot column from (rows, source column) parts: each part's values in its rows."""
    merged: list[tuple[np.ndarray, pa.Array]] = []
    for mask, col in parts:  # parts reading one column share one mask
        for j, (m, c) in enumerate(merged):
            if c is col:
                merged[j] = (m | mask, c)
                break
        else:
            merged.append((mask, col))
    out: pa.Array | None = None
    for mask, col in merged:
        # int → float rounds to nearest as Python's float(int); other casts must be exact
        lossy = pa.types.is_floating(typ) and pa.types.is_integer(col.type)
        values = pc.cast(col, typ, safe=not lossy)
        if bool(mask.all()):
            return values
        out = pc.if_else(pa.array(mask), values, out if out is not None else pa.nulls(n, typ))
    assert out is not None
    return out
