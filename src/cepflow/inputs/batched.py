"""Event files read column-wise: the stream of :func:`~cepflow.inputs.files.ordered_events` as
Arrow batches of the event layout (:mod:`cepflow.inputs.columnar`), for the in-process file job
(:mod:`cepflow.replay`).

Each file is read in parts — JSON Lines and CSV in blocks of whole lines (:data:`BLOCK_BYTES`),
Parquet in its reader's batches — and each part takes the columnar fast path
(:func:`~cepflow.inputs.columnar.read_columns`, :func:`~cepflow.inputs.columnar.csv_columns`,
which answer only when the record reader would accept every record of the part alike) or, when
it holds a record the fast path cannot decide, the located record reader for that part alone:
its records get the same events, rejections, locations (file, line or row, column, field) and
numbering as when the whole file is read record by record. Such a part is a list of
:class:`~cepflow.events.event.Event`; a clean part is a table. A CSV file is read so up to its
first block it cannot read column-wise that holds a quote character (a quoted cell may span
lines), from there on by the record reader (in parts of :data:`RECORD_PART` events); so is one
whose header line is not plain.

Ids are unique within a file across its parts (the record reader's set of ids, which the fast
parts add theirs to). Then, as :func:`~cepflow.inputs.files.ordered_events` does event by
event: a folder's events without an id are named ``NAME:N``, each file is put in time order
within the lateness (:func:`reordered`: the same releases and the same late events as
:func:`~cepflow.inputs.ordering.reorder`, column-wise when a part is already in order) and the
files are merged by (ts, file, position) (:func:`merged`), numbered in the merged order.
"""

from __future__ import annotations

import codecs
import csv
import heapq
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepflow.events.event import Event, EventType, Rejected, SideChannel
from cepflow.inputs.columnar import (
    arity_of,
    column,
    csv_columns,
    decode,
    one_array,
    parquet_columns_of,
    read_columns,
)
from cepflow.inputs.csvfile import csv_events, header_problem, read_csv
from cepflow.inputs.files import Paths, location_unit, open_inputs, options_for, reader_for
from cepflow.inputs.jsonl import jsonl_events, read_jsonl
from cepflow.inputs.ordering import LateEventError, late_reason
from cepflow.inputs.parquet import parquet_batches, parquet_rows, read_parquet
from cepflow.inputs.records import Cursor, RecordConverter, Rejector

#: bytes of JSON Lines or CSV read per part (whole lines: the part ends at the next newline)
BLOCK_BYTES = 1 << 23
#: events per part of a file read record by record (CSV after a quote character)
RECORD_PART = 1 << 16
#: Parquet rows per part (the record reader's batch size): 128 Ki rows — half the parts of 64 Ki,
#: each costing the engine and the writers a fixed share, while a part still fits the caches
#: (256 Ki and 1 Mi measured slower; docs/architecture.md, "The file job")
PARQUET_ROWS = 131_072

_CONVERTER_OPTIONS = ("strict_params", "unknown_fields", "unknown_types", "unique_ids")


@dataclass(frozen=True)
class Layout:
    """The event types of a program as the layout holds them."""

    schemas: Mapping[str, EventType]
    #: parameter positions of the layout (the most parameters of a type)
    arity: int
    #: parameters of each declared type
    arities: Mapping[str, int]

    @classmethod
    def of(cls, schemas: Mapping[str, EventType]) -> Layout:
        return cls(schemas, arity_of(schemas), {t: len(s.params) for t, s in schemas.items()})


@dataclass
class Part:
    """Rows of the stream: their times (``ts``, float64), where each was read (``at``: its
    line or row) and the events — a ``table`` of the layout, or ``events`` when some record of
    the part was read by the record reader."""

    ts: np.ndarray
    at: np.ndarray
    table: pa.Table | None = None
    events: list[Event] | None = None

    def __len__(self) -> int:
        return len(self.ts)

    @classmethod
    def of_table(cls, table: pa.Table, at: np.ndarray) -> Part:
        return cls(column(table, "ts").to_numpy(), at, table=table)

    @classmethod
    def of_events(cls, events: list[Event], at: list[int]) -> Part:
        ts = np.fromiter((e.ts for e in events), dtype=np.float64, count=len(events))
        return cls(ts, np.array(at, dtype=np.int64), events=events)

    def take(self, rows: np.ndarray | list[int]) -> Part:
        idx = np.asarray(rows, dtype=np.int64)
        if self.table is not None:
            return Part(self.ts[idx], self.at[idx], table=self.table.take(pa.array(idx)))
        assert self.events is not None
        ev = self.events
        return Part(self.ts[idx], self.at[idx], events=[ev[i] for i in idx.tolist()])

    def split(self, n: int) -> tuple[Part, Part]:
        """The first ``n`` rows and the others."""
        if self.table is not None:
            t = self.table
            return (Part(self.ts[:n], self.at[:n], table=t.slice(0, n)),
                    Part(self.ts[n:], self.at[n:], table=t.slice(n)))
        assert self.events is not None
        return (Part(self.ts[:n], self.at[:n], events=self.events[:n]),
                Part(self.ts[n:], self.at[n:], events=self.events[n:]))

    def event_list(self, layout: Layout) -> list[Event]:
        """The rows as events (made from the table when the part is one)."""
        if self.events is not None:
            return self.events
        assert self.table is not None
        return decode(self.table, layout.arities, layout.arity) if len(self) else []

    def batch(self) -> pa.RecordBatch:
        """The table as one record batch (a part that is a table)."""
        assert self.table is not None
        t = self.table.combine_chunks()
        return pa.RecordBatch.from_arrays([one_array(c) for c in t.columns],
                                          schema=t.schema)

    def numbered(self, first: int) -> Part:
        """The part with ``seq`` ``first``, ``first + 1``, … (its place in a merged stream)."""
        if self.events is not None:
            for q, e in enumerate(self.events, first):
                e.seq = q
            return self
        assert self.table is not None
        seq = pa.array(np.arange(first, first + len(self), dtype=np.int64))
        t = self.table
        return Part(self.ts, self.at, table=t.set_column(t.schema.get_field_index("seq"),
                                                          "seq", seq))


def joined(parts: Iterable[Part | None], layout: Layout) -> Part:
    """One part of ``parts`` in their order: a table if every one is, else events."""
    ps = [p for p in parts if p is not None and len(p)]
    if len(ps) == 1:
        return ps[0]
    if not ps:
        return Part(np.zeros(0), np.zeros(0, np.int64), events=[])
    ts = np.concatenate([p.ts for p in ps])
    at = np.concatenate([p.at for p in ps])
    if all(p.table is not None for p in ps):
        return Part(ts, at, table=pa.concat_tables([p.table for p in ps]))  # type: ignore[misc]
    return Part(ts, at, events=[e for p in ps for e in p.event_list(layout)])


# -- one file --------------------------------------------------------------------------------
def file_parts(path: Path, layout: Layout, side: SideChannel | None, strict: bool,
               opts: Mapping[str, Any]) -> Iterator[Part]:
    """The accepted events of one file in file order, in parts (module docstring); bad records
    go to ``side`` as the file's record reader reports them."""
    source = os.fspath(path)
    reader = reader_for(path)
    assert reader is not None
    ropts = options_for(reader, opts)
    reject = Rejector(source, side, strict)
    convert = RecordConverter(layout.schemas,
                              **{k: ropts[k] for k in _CONVERTER_OPTIONS if k in ropts})
    if reader is read_jsonl:
        return _jsonl_parts(path, source, layout, convert, reject, ropts)
    if reader is read_parquet:
        return _parquet_parts(path, source, layout, convert, reject, ropts)
    if reader is read_csv:
        convert = RecordConverter(layout.schemas, text=True,
                                  infer_types=ropts.get("infer_types", True),
                                  **{k: ropts[k] for k in _CONVERTER_OPTIONS if k in ropts})
        return _csv_parts(path, source, layout, convert, reject, ropts)
    return _record_parts(reader(path, layout.schemas, side, strict,
                                cursor=(cursor := Cursor(location_unit(path))), **ropts), cursor)


def _record_parts(events: Iterator[Event], cursor: Cursor) -> Iterator[Part]:
    while True:
        evs: list[Event] = []
        at: list[int] = []
        for e in islice(events, RECORD_PART):
            evs.append(e)
            at.append(cursor.at)  # type: ignore[arg-type]
        if not evs:
            return
        yield Part.of_events(evs, at)


def _located(events: Iterator[Event], cursor: Cursor) -> Part:
    """The events the record reader accepts of a part, with where each was read."""
    evs: list[Event] = []
    at: list[int] = []
    for e in events:
        evs.append(e)
        at.append(cursor.at)  # type: ignore[arg-type]
    return Part.of_events(evs, at)


def _fresh_ids(table: pa.Table, convert: RecordConverter) -> bool:
    """Whether no id of a clean part was taken by an earlier part of its file (then its ids are
    taken); the part takes the record reader otherwise, which rejects the repeated ones."""
    seen = convert.ids
    if seen is None:
        return True
    ids = [v for name in ("id_s", "id_i") if (c := column(table, name)).null_count < len(c)
           for v in c.drop_null().to_pylist()]
    if not ids:
        return True
    if not seen.isdisjoint(ids):
        return False
    seen.update(ids)
    return True


def _from(table: pa.Table, seq: int) -> pa.Table:
    """A fast part's table numbered from ``seq`` (its events' places in the file)."""
    if not seq:
        return table
    i = table.schema.get_field_index("seq")
    return table.set_column(i, "seq", pc.add(table.column(i), seq))


def _jsonl_parts(path: Path, source: str, layout: Layout, convert: RecordConverter,
                 reject: Rejector, opts: Mapping[str, Any]) -> Iterator[Part]:
    seq, line = 0, 1
    with open(path, "rb") as f:
        while block := f.read(BLOCK_BYTES):
            if not block.endswith(b"\n"):
                block += f.readline()
            n_lines = block.count(b"\n") + (not block.endswith(b"\n"))
            # (a byte-order mark is skipped on line 1 only)
            table = (None if line > 1 and block.startswith(codecs.BOM_UTF8) else
                     read_columns(block, ".jsonl", layout.schemas, layout.arity, source, **opts))
            if table is not None and _fresh_ids(table, convert):
                yield Part.of_table(_from(table, seq),
                                    np.arange(line, line + n_lines, dtype=np.int64))
                seq += table.num_rows
            else:
                cursor = Cursor("line")
                lines = enumerate(_raw_lines(block), line)
                part = _located(jsonl_events(lines, convert, reject, seq, cursor), cursor)
                seq += len(part)
                yield part
            line += n_lines


def _parquet_parts(path: Path, source: str, layout: Layout, convert: RecordConverter,
                   reject: Rejector, opts: Mapping[str, Any]) -> Iterator[Part]:
    seq = 0
    for row, batch in parquet_batches(path, reject, opts.get("batch_size", PARQUET_ROWS)):
        table = parquet_columns_of(pa.Table.from_batches([batch]), layout.schemas,
                                   layout.arity, source, **opts)
        n = batch.num_rows
        if table is not None and _fresh_ids(table, convert):
            yield Part.of_table(_from(table, seq), np.arange(row, row + n, dtype=np.int64))
            seq += n
        else:
            cursor = Cursor("row")
            part = _located(parquet_rows(batch, row, seq, convert, reject, cursor), cursor)
            seq += len(part)
            yield part


def _raw_lines(block: bytes) -> list[bytes]:
    """The lines of a block of whole lines, each with its newline (the last one may have
    none)."""
    pieces = block.split(b"\n")
    last = pieces.pop()
    return [p + b"\n" for p in pieces] + ([last] if last else [])


def _plain_header(first: bytes, delimiter: str) -> list[str] | None:
    """The header of a CSV file whose first line is plain (no quote, no carriage return, valid
    UTF-8, not blank) and without a problem the reader reports on every row; else None (the
    file is read record by record)."""
    if first.startswith(codecs.BOM_UTF8):
        first = first[len(codecs.BOM_UTF8):]
    if not first.endswith(b"\n") or b"\r" in first:
        return None
    try:
        text = first[:-1].decode("utf-8")
        cells = next(csv.reader([text], delimiter=delimiter, strict=True))
    except (UnicodeDecodeError, csv.Error, StopIteration):
        return None
    if not text.strip() or text.count('"') % 2:
        return None
    header = [c.strip() for c in cells]
    return None if "" in header or header_problem(header, 1) is not None else header


def _csv_parts(path: Path, source: str, layout: Layout, convert: RecordConverter,
               reject: Rejector, opts: Mapping[str, Any]) -> Iterator[Part]:
    delimiter = opts.get("delimiter", ",")
    with open(path, "rb") as f:
        first = f.readline()
        header = _plain_header(first, delimiter)
        if header is None:
            cursor = Cursor("line")
            yield from _record_parts(csv_events(chain([first], f), 1, None, convert, reject, 0,
                                                cursor, delimiter), cursor)
            return
        seq, line = 0, 2
        while block := f.read(BLOCK_BYTES):
            if not block.endswith(b"\n"):
                block += f.readline()
            n_lines = block.count(b"\n") + (not block.endswith(b"\n"))
            cursor = Cursor("line")
            table = csv_columns(block, header, layout.schemas, layout.arity, source, **opts)
            if table is not None and _fresh_ids(table, convert):
                yield Part.of_table(_from(table, seq),
                                    np.arange(line, line + n_lines, dtype=np.int64))
                seq += table.num_rows
            elif b'"' in block:  # (a quoted cell may span lines: record by record from here on)
                yield from _record_parts(csv_events(chain(_raw_lines(block), f), line, header,
                                                    convert, reject, seq, cursor, delimiter),
                                         cursor)
                return
            else:
                part = _located(csv_events(_raw_lines(block), line, header, convert, reject,
                                           seq, cursor, delimiter), cursor)
                seq += len(part)
                yield part
            line += n_lines


def named(parts: Iterable[Part], name: str) -> Iterator[Part]:
    """``parts`` of the file ``name`` with the events without an id named ``NAME:N`` (N:
    their place among the file's accepted events), as
    :func:`~cepflow.inputs.files.ordered_events` names them."""
    for p in parts:
        if p.events is not None:
            for e in p.events:
                if e.id is None:
                    e.id = f"{name}:{e.seq}"
            yield p
            continue
        t = p.table
        assert t is not None
        ids, whole = column(t, "id_s"), column(t, "id_i")
        if whole.null_count == len(whole) and ids.null_count == 0:
            yield p
            continue
        given = pc.or_(pc.is_valid(ids), pc.is_valid(whole))
        texts = pc.binary_join_element_wise(f"{name}:", column(t, "seq").cast(pa.string()), "")
        yield Part(p.ts, p.at, table=t.set_column(t.schema.get_field_index("id_s"), "id_s",
                                                  pc.if_else(given, ids, texts)))


# -- time order ------------------------------------------------------------------------------
def reordered(parts: Iterable[Part], lateness: float, side: SideChannel | None, layout: Layout,
              *, source: str, unit: str) -> Iterator[Part]:
    """:func:`~cepflow.inputs.ordering.reorder` of a file's parts: the rows released in the
    same order, the same late events reported (located ``UNIT N``), or LateEventError
    without a side channel. A part in time order after everything before it is released
    column-wise; another one row by row through the same heap."""
    held: Part | None = None
    max_ts = -math.inf
    last = -math.inf
    for part in parts:
        if not len(part):
            continue
        ts = part.ts
        if ts[0] >= max_ts and bool((ts[1:] >= ts[:-1]).all()):
            both = joined([held, part], layout)
            max_ts = float(ts[-1])
            cut = int(np.searchsorted(both.ts, max_ts - lateness, side="right"))
            out, held = both.split(cut)
            if cut:
                last = float(both.ts[cut - 1])
                yield out
            continue
        both = joined([held, part], layout)
        h = len(both) - len(part)
        heap = [(t, i) for i, t in enumerate(both.ts[:h].tolist())]  # (sorted: a heap)
        late: list[tuple[int, float, float]] = []
        released: list[int] = []
        for j, t in enumerate(ts.tolist()):
            if t < last:
                late.append((j, last, max_ts - lateness))
                continue
            heapq.heappush(heap, (t, h + j))
            if t > max_ts:
                max_ts = t
            watermark = max_ts - lateness
            while heap and heap[0][0] <= watermark:
                last, k = heapq.heappop(heap)
                released.append(k)
        if late:
            _report_late(part, late, side, layout, source, unit)
        if released:
            yield both.take(released)
        held = both.take([k for _, k in sorted(heap)])
    if held is not None and len(held):
        yield held


def _report_late(part: Part, late: list[tuple[int, float, float]], side: SideChannel | None,
                 layout: Layout, source: str, unit: str) -> None:
    rows = [j for j, _, _ in late]
    events = part.take(rows).event_list(layout)
    for (j, released, watermark), e in zip(late, events, strict=True):
        rejected = Rejected(source, f"{unit} {int(part.at[j])}",
                            late_reason(float(e.ts), released, watermark), record=e,
                            field="ts")
        if side is None:
            raise LateEventError(rejected)
        side.late.append(rejected)


def merged(streams: list[Iterator[Part]], layout: Layout) -> Iterator[Part]:
    """Time-ordered streams merged by (ts, stream, position), as
    :func:`~cepflow.inputs.ordering.merge`: the rows before the earliest last time buffered
    of a stream not yet ended are final; the stream that has it is read on."""
    bufs: list[Part | None] = [None] * len(streams)
    live: list[int] = []

    def read_on(i: int) -> None:
        for p in streams[i]:
            if len(p):
                bufs[i] = joined([bufs[i], p], layout)
                return
        if i in live:
            live.remove(i)

    for i in range(len(streams)):
        live.append(i)
        read_on(i)
    while True:
        if live:
            first = min(live, key=lambda i: bufs[i].ts[-1])  # type: ignore[union-attr]
            bound = float(bufs[first].ts[-1])  # type: ignore[union-attr]
        else:
            bound = math.inf
        pieces: list[Part] = []
        for i, b in enumerate(bufs):
            if b is None or not len(b):
                continue
            cut = len(b) if bound == math.inf else int(np.searchsorted(b.ts, bound, "left"))
            if cut:
                out, bufs[i] = b.split(cut)
                pieces.append(out)
        if pieces:
            out = joined(pieces, layout)
            yield out.take(np.argsort(out.ts, kind="stable")) if len(pieces) > 1 else out
        if not live:
            return
        read_on(first)


def ordered_parts(paths: Paths, layout: Layout, side: SideChannel | None = None, *,
                  lateness: float = 0, strict: bool = False, **opts: Any) -> Iterator[Part]:
    """:func:`~cepflow.inputs.files.ordered_events` in parts (module docstring): the same
    events in the same order with the same numbers and ids, the same records rejected and
    late. InputError and TypeError (unknown options) are raised at the call."""
    files, is_named = open_inputs(paths, side, lateness, strict, opts)
    return _ordered(files, is_named, layout, side, lateness, strict, opts)


def _ordered(files: list[Path], is_named: bool, layout: Layout, side: SideChannel | None,
             lateness: float, strict: bool, opts: Mapping[str, Any]) -> Iterator[Part]:
    streams = []
    for f in files:
        parts: Iterator[Part] = file_parts(f, layout, side, strict, opts)
        if is_named:
            parts = named(parts, f.name)
        streams.append(reordered(parts, lateness, side, layout, source=os.fspath(f),
                                 unit=location_unit(f)))
    if len(streams) == 1 and not is_named:
        yield from streams[0]
        return
    n = 0
    for p in merged(streams, layout):
        yield p.numbered(n)
        n += len(p)
