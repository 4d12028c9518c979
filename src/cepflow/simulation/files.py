"""Generated events written as files cepflow reads back: JSON Lines, CSV or Parquet, with the
columns ``type``, ``ts`` (ms) and the attributes by name, one event a line or row.

A CSV or Parquet file has one set of columns, and cepflow's readers refuse a column that is not
a parameter of the row's type (docs/io); so events of types with different attributes go to
JSON Lines, where each line has its own fields.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from cepflow.outputs.jsonl import dumps
from cepflow.simulation.generator import RunEvents

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv",
           ".parquet": "parquet", ".pq": "parquet"}


def format_for(path: str | Path) -> str | None:
    """The format of an output path by its suffix (``-``: JSON Lines on stdout)."""
    if str(path) == "-":
        return "jsonl"
    return FORMATS.get(Path(path).suffix.lower())


def write_events(events: RunEvents, path: str | Path, fmt: str | None = None) -> int:
    """Write ``events`` to ``path`` (``-``: stdout) as ``fmt`` (default: by the suffix);
    returns the number written. The file appears only when complete."""
    fmt = fmt or format_for(path)
    if fmt not in ("jsonl", "csv", "parquet"):
        raise ValueError(f"{path}: unknown output format (use .jsonl, .csv or .parquet)")
    if str(path) == "-":
        if fmt == "parquet":
            raise ValueError("Parquet cannot go to stdout: give a file name")
        _write_text(events, sys.stdout, fmt)
        return len(events)
    if fmt != "jsonl" and len({(s.source.event, *sorted(s.columns))
                               for s in events.sources}) > 1:
        kinds = sorted({s.source.event for s in events.sources})
        raise ValueError(f"{path}: the model generates {', '.join(kinds)} (or one type with "
                         "different attributes per source); CSV and Parquet hold one set of "
                         "columns: write JSON Lines (.jsonl)")
    path = Path(path)
    tmp = path.with_name(f".{path.name}.part")
    try:
        if fmt == "parquet":
            pq.write_table(_table(events), tmp)
        else:
            with tmp.open("w", encoding="utf-8", newline="") as fh:
                _write_text(events, fh, fmt)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return len(events)


def _attributes(events: RunEvents) -> list[str]:
    names: dict[str, None] = {}
    for s in events.sources:
        names.update(dict.fromkeys(s.columns))
    return list(names)


def _write_text(events: RunEvents, fh: TextIO, fmt: str) -> None:
    if fmt == "jsonl":
        for rec in events.records():
            fh.write(dumps(rec))
            fh.write("\n")
        return
    names = _attributes(events)
    w = csv.writer(fh, lineterminator="\n")
    w.writerow(["type", "ts", *names])
    for rec in events.records():
        w.writerow([rec["type"], rec["ts"], *(_cell(rec.get(a)) for a in names)])


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def _table(events: RunEvents) -> pa.Table:
    kinds = sorted({s.source.event for s in events.sources}) or [""]
    columns: dict[str, pa.Array] = {
        "type": pa.array(np.repeat(np.array(kinds[:1], dtype=object), len(events)).tolist(),
                         pa.string()),
        "ts": pa.array(events.ts, pa.int64())}
    for name in _attributes(events):
        parts = [s.columns[name] for s in events.sources]
        dtype = np.result_type(*(c.dtype for c in parts))
        values = np.empty(len(events), dtype=dtype)
        for s, col in zip(events.sources, parts, strict=True):
            values[s.positions] = col
        columns[name] = pa.array(values.tolist() if dtype.kind == "O" else values,
                                 type=pa.string() if dtype.kind == "O" else None)
    return pa.table(columns)
