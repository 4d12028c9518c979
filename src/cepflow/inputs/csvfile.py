"""CSV reader: a header row naming the fields (``type`` and ``ts`` required), one record a row.

Named ``csvfile`` so it does not shadow the standard ``csv`` module. Cells are text: an empty
cell is ``None``; typed parameters, ``ts`` and ``id`` are converted as described in
:mod:`cepflow.inputs.records`, untyped cells are inferred unless ``infer_types=False``.

Locations are ``line N``, the 1-based physical line where the row starts (quoted cells may span
lines); the field is the column name. Blank lines are skipped. A row is rejected when it has
fewer cells than the header or extra non-empty cells, when it contains invalid UTF-8, when it
has a value in a column with an empty header name, and — so the cause is visible on every
row instead of each row failing obscurely — when the header lacks ``type``/``ts``, repeats a
column name or is not valid UTF-8. The rejected record is the row as ``{column: cell}`` (a
list of cells when its length does not match the header).
"""

from __future__ import annotations

import codecs
import csv
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


def header_problem(header: list[str], line: int) -> tuple[str, str | None] | None:
    """Why every row under this header must be rejected, as (reason, field), or None."""
    seen: set[str] = set()
    for name in header:
        if name and name in seen:
            return f"duplicate column {name!r} in the header (line {line})", name
        seen.add(name)
    for required in ("type", "ts"):
        if required not in seen:
            return f"missing required field {required!r}: no such column in the header", required
    return None


def read_csv(
    path: str | os.PathLike[str],
    schemas: Mapping[str, EventType] | None = None,
    side: SideChannel | None = None,
    strict: bool = False,
    *,
    delimiter: str = ",",
    infer_types: bool = True,
    strict_params: bool = True,
    unknown_fields: UnknownFields = "reject",
    unknown_types: UnknownTypes = "reject",
    unique_ids: bool = True,
    source: str | None = None,
    cursor: Cursor | None = None,
) -> Iterator[Event]:
    """Stream the Events of a CSV file with a header row; bad rows go to ``side`` (or raise)."""
    source = source or os.fspath(path)  # the name reported (a copy may be what is read)
    convert = RecordConverter(
        schemas,
        text=True,
        infer_types=infer_types,
        strict_params=strict_params,
        unknown_fields=unknown_fields,
        unknown_types=unknown_types,
        unique_ids=unique_ids,
    )
    reject = Rejector(source, side, strict)
    with open(path, "rb") as f:
        yield from csv_events(f, 1, None, convert, reject, 0, cursor, delimiter)


def csv_events(raw_lines: Iterable[bytes], first_line: int, header: list[str] | None,
               convert: RecordConverter, reject: Rejector, seq: int, cursor: Cursor | None,
               delimiter: str = ",") -> Iterator[Event]:
    """The Events of raw lines of a CSV file, the first of them line ``first_line`` of the file
    (a whole file; or, read column-wise, the lines from a part that holds a bad record on,
    under the ``header`` read before, which has no problem): the first numbered ``seq``."""
    bad_utf8: dict[int, str] = {}
    offset = first_line - 1

    def lines() -> Iterator[str]:
        for n, raw in enumerate(raw_lines, first_line):
            if n == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad_utf8[n] = f"invalid UTF-8 at line {n}, byte {exc.start + 1}"
                yield raw.decode("utf-8", "replace")

    source_lines = lines()
    reader = csv.reader(source_lines, delimiter=delimiter)
    problem: tuple[str, str | None] | None = None
    try:
        while True:
            start = reader.line_num + 1 + offset
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                reject(f"line {start}", f"invalid CSV: {exc}", None, None, line=start)
                continue
            if not cells or (len(cells) == 1 and not cells[0].strip()):
                continue
            end = reader.line_num + offset
            bad = [bad_utf8.pop(n) for n in range(start, end + 1) if n in bad_utf8]
            if header is None:
                header = [c.strip() for c in cells]
                problem = header_problem(header, start)
                if bad:
                    problem = (f"unreadable header: {bad[0]}", None)
                continue
            where = f"line {start}"
            extra = cells[len(header) :]
            if len(cells) < len(header) or any(c.strip() for c in extra):
                reject(where, f"expected {len(header)} cells as in the header, got {len(cells)}",
                       None, cells, line=start)
                continue
            shown = dict(zip(header, cells, strict=False))
            if bad:
                reject(where, bad[0], None, shown, line=start)
                continue
            if problem is not None:
                reject(where, problem[0], problem[1], shown, line=start)
                continue
            record: dict[str, Any] = {}
            unnamed = next((i for i, name in enumerate(header) if not name and cells[i]), None)
            if unnamed is not None:
                reject(where, f"value in column {unnamed + 1}, which has no header name", None,
                       shown, line=start)
                continue
            for name, cell in zip(header, cells, strict=False):
                if name:
                    record[name] = cell if cell != "" else None
            try:
                event = convert(record, seq)
            except RecordError as exc:
                reject(where, exc.reason, exc.field, shown, line=start)
                continue
            seq += 1
            if cursor is not None:
                cursor.at = start
            yield event
    finally:
        source_lines.close()
