"""Parquet reader: one record per row, read batch by batch so memory stays bounded.

Columns are the record's fields (``type`` and ``ts`` required; a list column ``params`` gives
positional parameters). Arrow timestamp and date columns become epoch milliseconds, so ``ts``
may be a number of ms or a real timestamp column (naive = UTC). Locations are ``row N``, the
0-based row index in the file. A file that is not readable Parquet (or breaks part way) is
reported once on the side channel with the row it failed at, since its rows cannot be told
apart; strict mode raises instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from cepflow.events.event import Event, EventType, SideChannel
from cepflow.inputs.records import (
    Cursor,
    RecordConverter,
    RecordError,
    Rejector,
    UnknownFields,
    UnknownTypes,
)

if TYPE_CHECKING:
    import pyarrow.parquet as pq

_UNITS_PER_MS = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}


def _timestamp_columns(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, dict[str, str]]:
    """Cast timestamp columns to their raw int64 ticks; returns the batch and name → unit."""
    units = {
        name: col.type.unit
        for name, col in zip(batch.schema.names, batch.columns, strict=True)
        if pa.types.is_timestamp(col.type)
    }
    if not units:
        return batch, units
    arrays = [
        col.cast(pa.int64()) if pa.types.is_timestamp(col.type) else col for col in batch.columns
    ]
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names), units


def _ticks_to_ms(ticks: int | None, unit: str) -> int | float | None:
    """Epoch ms of a timestamp given in ``unit`` ticks; int when whole, exact integer math."""
    per_ms = _UNITS_PER_MS[unit]
    if ticks is None:
        return None
    if per_ms is None:
        return ticks * 1000
    return ticks // per_ms if ticks % per_ms == 0 else ticks / per_ms


def read_parquet(
    path: str | os.PathLike[str],
    schemas: Mapping[str, EventType] | None = None,
    side: SideChannel | None = None,
    strict: bool = False,
    *,
    batch_size: int = 65_536,
    strict_params: bool = True,
    unknown_fields: UnknownFields = "reject",
    unknown_types: UnknownTypes = "reject",
    unique_ids: bool = True,
    source: str | None = None,
    cursor: Cursor | None = None,
) -> Iterator[Event]:
    """Stream the Events of a Parquet file batch by batch; bad rows go to ``side`` (or raise)."""
    source = source or os.fspath(path)  # the name reported (a copy may be what is read)
    convert = RecordConverter(
        schemas,
        strict_params=strict_params,
        unknown_fields=unknown_fields,
        unknown_types=unknown_types,
        unique_ids=unique_ids,
    )
    reject = Rejector(source, side, strict)
    seq = 0
    for row, batch in parquet_batches(path, reject, batch_size):
        for event in parquet_rows(batch, row, seq, convert, reject, cursor):
            seq = event.seq + 1
            yield event


def parquet_batches(path: str | os.PathLike[str], reject: Rejector, batch_size: int
                    ) -> Iterator[tuple[int, pa.RecordBatch]]:
    """The batches of a Parquet file with the row each begins at; a file that is not readable
    Parquet, or breaks part way, is reported once (module docstring)."""
    # (pyarrow.parquet — a fiftieth of a second of a process's start — imported by the runs
    # that read Parquet alone)
    import pyarrow.parquet as pq

    row = 0
    try:
        pfile = pq.ParquetFile(path)
        texts = _text_columns(pfile)
        if texts:  # (the file opened again, its text columns read as dictionaries)
            pfile.close()
            pfile = pq.ParquetFile(path, read_dictionary=list(texts))
    except pa.ArrowInvalid as exc:
        reject("file", f"not a readable Parquet file: {str(exc).strip()}")
        return
    with pfile:
        batches = pfile.iter_batches(batch_size=batch_size)
        if texts:
            batches = _rebatched((_plain_texts(b, texts) for b in batches), batch_size)
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            except (pa.ArrowInvalid, OSError) as exc:
                reason = f"unreadable Parquet data from this row on: {str(exc).strip()}"
                reject(f"row {row}", reason)
                return
            yield row, batch
            row += batch.num_rows


def _text_columns(pfile: pq.ParquetFile) -> dict[str, pa.DataType]:
    """The top-level text columns of a Parquet file worth reading as dictionaries, by name,
    with their Arrow type.

    Parquet stores a text column of few distinct values (an event type, a key) as dictionary
    codes; Arrow's reader makes one string per row of them — most of the cost of reading such
    a file. Read as dictionaries (the file's own codes) and then cast to text
    (:func:`_plain_texts`), the column costs a third to a half as much CPU, the batches the
    same value for value and type for type. Only for a column whose data is those codes
    (:data:`_CODE_BYTES` per value at most, over every row group): a column of mostly distinct
    texts (ids) is stored plain past its first megabyte of distinct values, and read as a
    dictionary it would be coded by hashing, three times the cost."""
    meta, schema = pfile.metadata, pfile.schema_arrow
    names = schema.names
    texts = {f.name: f.type for f in schema
             if (pa.types.is_string(f.type) or pa.types.is_large_string(f.type))
             and names.count(f.name) == 1}
    if not texts or meta.num_rows == 0:
        return {}
    where = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
    size = dict.fromkeys(texts, 0)
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for name in texts:
            if name not in where:
                return {}
            size[name] += group.column(where[name]).total_uncompressed_size
    return {name: t for name, t in texts.items() if size[name] <= _CODE_BYTES * meta.num_rows}


def _rebatched(batches: Iterator[pa.RecordBatch], size: int) -> Iterator[pa.RecordBatch]:
    """``batches`` cut and joined into batches of ``size`` rows (the last one: the rest), as
    Arrow's plain reading cuts a file's rows: read as dictionaries, each row group's rows end
    a batch of their own (a dictionary per row group)."""
    held: list[pa.RecordBatch] = []
    count = 0
    for b in batches:
        while b.num_rows:
            piece = b.slice(0, size - count)
            held.append(piece)
            count += piece.num_rows
            b = b.slice(piece.num_rows)
            if count == size:
                yield held[0] if len(held) == 1 else pa.concat_batches(held)
                held, count = [], 0
    if held:
        yield held[0] if len(held) == 1 else pa.concat_batches(held)


#: the most bytes per value (uncompressed, the dictionary page included) of a text column read
#: as a dictionary (_text_columns): plain texts take at least five (a length and a byte)
_CODE_BYTES = 2


def _plain_texts(batch: pa.RecordBatch, texts: Mapping[str, pa.DataType]) -> pa.RecordBatch:
    """``batch`` with the columns ``texts`` names (read as dictionaries) cast back to their
    text type — but the event type's, kept coded: the column reader takes its rows per type
    from the codes (columnar._rows_by_code) and casts it then; the record reader's values
    (``to_pylist``) are the same texts."""
    plain = {name: t for name, t in texts.items() if name != "type"}
    cols = [c.cast(plain[name]) if name in plain and pa.types.is_dictionary(c.type) else c
            for name, c in zip(batch.schema.names, batch.columns, strict=True)]
    schema = pa.schema([f.with_type(plain[f.name]) if f.name in plain else f
                        for f in batch.schema], metadata=batch.schema.metadata)
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def parquet_rows(batch: pa.RecordBatch, row: int, seq: int, convert: RecordConverter,
                 reject: Rejector, cursor: Cursor | None) -> Iterator[Event]:
    """The Events of one batch of rows whose first is row ``row`` of its file, the first
    numbered ``seq``."""
    batch, units = _timestamp_columns(batch)
    records: list[dict[str, Any]] = batch.to_pylist()
    for record in records:
        for name, unit in units.items():
            record[name] = _ticks_to_ms(record[name], unit)
        at = row
        row += 1
        try:
            event = convert(record, seq)
        except RecordError as exc:
            reject(f"row {at}", exc.reason, exc.field, record)
            continue
        seq += 1
        if cursor is not None:
            cursor.at = at
        yield event
