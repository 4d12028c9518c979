"""Outputs: matches as JSON Lines, CSV or Parquet and the side channel as JSON Lines, in the one
record encoding every engine writes (:mod:`cepflow.outputs.records`, docs/formats.md)."""

from __future__ import annotations

from cepflow.outputs.csvfile import write_csv
from cepflow.outputs.encoding import dumps
from cepflow.outputs.files import MatchFile, OutputError, output_format, write_side_file
from cepflow.outputs.jsonl import write_jsonl, write_rejected_jsonl
from cepflow.outputs.parquet import write_parquet
from cepflow.outputs.records import (
    MATCH_SCHEMA,
    REJECTED_SCHEMA,
    match_batch,
    match_lines,
    rejected_batch,
    rejected_lines,
)

__all__ = [
    "MATCH_SCHEMA",
    "REJECTED_SCHEMA",
    "MatchFile",
    "OutputError",
    "dumps",
    "match_batch",
    "match_lines",
    "output_format",
    "rejected_batch",
    "rejected_lines",
    "write_csv",
    "write_jsonl",
    "write_parquet",
    "write_rejected_jsonl",
    "write_side_file",
]
