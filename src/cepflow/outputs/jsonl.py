"""JSON Lines writers for matches and for the side channel of rejected records.

Both write the lines of :mod:`cepflow.outputs.records` — the one encoding every engine uses.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

import numpy as np
import pyarrow as pa

from cepflow.events.event import ComplexEvent, Rejected, SideChannel
from cepflow.outputs.encoding import dumps, json_default
from cepflow.outputs.records import match_batches, match_lines, rejected_batch, rejected_lines

__all__ = ["JsonLinesWriter", "dumps", "json_default", "write_jsonl", "write_rejected_jsonl"]

PathOrFile = str | os.PathLike[str] | TextIO


class JsonLinesWriter:
    """Rows of an output schema as JSON lines on an open text stream (``lines`` encodes a
    batch, each line followed by the text given: :func:`~cepflow.outputs.records.match_lines`
    or ``rejected_lines``)."""

    def __init__(self, out: TextIO,
                 lines: Callable[[pa.RecordBatch, str], pa.Array] = match_lines) -> None:
        self.out, self.lines = out, lines

    def write_batch(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        # the lines' UTF-8 bytes as pyarrow lays them out, each ended by a newline: written
        # without a Python string per line (and without holding the interpreter lock: the
        # writer may run on a thread, cepflow.io_thread)
        # (the newline joined in with the fields: one pass over the bytes, not two)
        lines = self.lines(batch, "\n")
        if lines.null_count:  # (every field has a JSON text, null included: a bug if not)
            raise ValueError("a match or record without a JSON line")
        data = _utf8_bytes(lines)
        raw = getattr(self.out, "buffer", None)
        if raw is None:  # (a text stream without bytes underneath, such as io.StringIO)
            self.out.write(str(data, "utf-8"))
            return
        self.out.flush()
        raw.write(data)

    def close(self) -> None:
        self.out.flush()


def _utf8_bytes(texts: pa.Array) -> memoryview:
    """The bytes of a string column's values, one after the other (no nulls)."""
    _, offsets, data = texts.buffers()
    if data is None:
        return memoryview(b"")
    wide = np.int64 if pa.types.is_large_string(texts.type) else np.int32
    bounds = np.frombuffer(offsets, wide)[[texts.offset, texts.offset + len(texts)]]
    return memoryview(data)[int(bounds[0]):int(bounds[1])]


@contextmanager
def text_output(path_or_file: PathOrFile) -> Iterator[TextIO]:
    """An open text stream: the given file object (left open) or a new UTF-8 file (closed)."""
    if hasattr(path_or_file, "write"):
        yield path_or_file  # type: ignore[misc]
    else:
        with open(path_or_file, "w", encoding="utf-8", newline="\n") as f:  # type: ignore[arg-type]
            yield f


def write_text_matches(matches: Iterable[ComplexEvent], path_or_file: PathOrFile,
                       writer: Callable[[TextIO], Any]) -> int:
    """Write matches with a text format's ``writer`` (:class:`JsonLinesWriter`,
    :class:`~cepflow.outputs.csvfile.CsvWriter`) to a path or an open text stream; returns the
    count."""
    count = 0
    with text_output(path_or_file) as out:
        rows = writer(out)
        for batch in match_batches(matches):
            rows.write_batch(batch)
            count += batch.num_rows
        rows.close()
    return count


def write_jsonl(matches: Iterable[ComplexEvent], path_or_file: PathOrFile) -> int:
    """Write one ``{"pattern", "ts", "params", "events"}`` object per match (docs/formats.md);
    returns the count."""
    return write_text_matches(matches, path_or_file, JsonLinesWriter)


def write_rejected_jsonl(rejected: SideChannel | Iterable[tuple[str, Rejected]],
                         path_or_file: PathOrFile) -> int:
    """Write the side channel (or (kind, record) pairs), one
    ``{"kind", "source", "location", "reason", "field", "record"}`` object per rejected
    record; returns the number written."""
    batch = rejected_batch(rejected)
    with text_output(path_or_file) as out:
        JsonLinesWriter(out, rejected_lines).write_batch(batch)
    return batch.num_rows
