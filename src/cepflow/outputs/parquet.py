"""Parquet writer for detected matches, written in row groups so memory stays bounded."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from cepflow.events.event import ComplexEvent
from cepflow.outputs.records import MATCH_SCHEMA, match_batches


class ParquetWriter:
    """Rows of :data:`~cepflow.outputs.records.MATCH_SCHEMA` into a Parquet file (a path or
    a binary file object); an empty output still has the schema."""

    def __init__(self, where: str | os.PathLike[str] | Any) -> None:
        import pyarrow.parquet as pq  # (imported by the runs that write Parquet alone)

        self.writer = pq.ParquetWriter(where, MATCH_SCHEMA)

    def write_batch(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self.writer.write_batch(batch)

    def close(self) -> None:
        self.writer.close()


def write_parquet(
    matches: Iterable[ComplexEvent], path: str | os.PathLike[str], *, batch_size: int = 10_000
) -> int:
    """Write matches as columns pattern, ts (integer ms), params (JSON object text), events
    (list of id strings). Returns the number of rows."""
    count = 0
    writer = ParquetWriter(path)
    try:
        for batch in match_batches(matches, batch_size):
            writer.write_batch(batch)
            count += batch.num_rows
    finally:
        writer.close()
    return count
