"""CSV writer for detected matches: a header ``pattern,ts,params,events``, one match a row.

``params`` is the JSON object and ``events`` the JSON array of the match's JSON line
(:mod:`cepflow.outputs.records`), quoted as CSV needs; named ``csvfile`` so it does not shadow
the standard ``csv`` module.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import TextIO

import pyarrow as pa

from cepflow.events.event import ComplexEvent
from cepflow.outputs.jsonl import PathOrFile, write_text_matches
from cepflow.outputs.records import MATCH_SCHEMA, json_lists


class CsvWriter:
    """Rows of :data:`~cepflow.outputs.records.MATCH_SCHEMA` as CSV on an open text stream."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.rows = csv.writer(out, lineterminator="\n")
        self.rows.writerow(MATCH_SCHEMA.names)

    def write_batch(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self.rows.writerows(zip(
                batch.column("pattern").to_pylist(), batch.column("ts").to_pylist(),
                batch.column("params").to_pylist(),
                json_lists(batch.column("events")).to_pylist(), strict=True))

    def close(self) -> None:
        self.out.flush()


def write_csv(matches: Iterable[ComplexEvent], path_or_file: PathOrFile) -> int:
    """Write matches as CSV (module docstring); returns the count."""
    return write_text_matches(matches, path_or_file, CsvWriter)
