"""Parquet writer for detected matches, written in row groups so memory stays bounded."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from cepflow.events.model import ComplexEvent
from cepflow.outputs.jsonl import dumps

#: Match table schema. ``params`` is JSON text because bindings differ per pattern and type.
MATCH_SCHEMA = pa.schema(
    [
        pa.field("pattern", pa.string(), nullable=False),
        pa.field("ts", pa.float64(), nullable=False),
        pa.field("params", pa.string(), nullable=False),
        pa.field("events", pa.list_(pa.string()), nullable=False),
    ]
)


def _batch(rows: dict[str, list[Any]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(rows, schema=MATCH_SCHEMA)


def write_parquet(
    matches: Iterable[ComplexEvent], path: str | os.PathLike[str], *, batch_size: int = 10_000
) -> int:
    """Write matches as columns pattern, ts (double), params (JSON), events (list<string>).

    Returns the number of rows; an empty input still writes a file with the schema.
    """
    count = 0
    rows: dict[str, list[Any]] = {name: [] for name in MATCH_SCHEMA.names}
    with pq.ParquetWriter(path, MATCH_SCHEMA) as writer:
        for match in matches:
            d = match.to_dict()
            rows["pattern"].append(d["pattern"])
            rows["ts"].append(float(d["ts"]))
            rows["params"].append(dumps(d["params"]))
            rows["events"].append([str(ref) for ref in d["events"]])
            count += 1
            if len(rows["pattern"]) >= batch_size:
                writer.write_batch(_batch(rows))
                rows = {name: [] for name in MATCH_SCHEMA.names}
        if rows["pattern"] or count == 0:
            writer.write_batch(_batch(rows))
    return count
