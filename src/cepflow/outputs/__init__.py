"""Outputs: detected matches as JSON Lines or Parquet, and the side channel as JSON Lines."""

from __future__ import annotations

from cepflow.outputs.jsonl import rejected_to_dict, write_jsonl, write_rejected_jsonl
from cepflow.outputs.parquet import MATCH_SCHEMA, write_parquet

__all__ = [
    "MATCH_SCHEMA",
    "rejected_to_dict",
    "write_jsonl",
    "write_parquet",
    "write_rejected_jsonl",
]
