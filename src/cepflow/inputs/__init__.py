"""Event inputs: JSON Lines, CSV and Parquet readers, the record rules, and the ordering policy.

Every reader streams :class:`~cepflow.events.model.Event` objects with ``seq`` = 0-based position
among the accepted events of the source; bad records go to a
:class:`~cepflow.events.model.SideChannel` (or raise :class:`EventFormatError` in strict mode or
when no side channel is given), so nothing is lost silently.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from cepflow.events.model import Event, EventType, Rejected, SideChannel
from cepflow.inputs.csvfile import read_csv
from cepflow.inputs.jsonl import read_jsonl
from cepflow.inputs.ordering import LateEventError, merge, reorder
from cepflow.inputs.parquet import read_parquet
from cepflow.inputs.records import (
    EventFormatError,
    RecordConverter,
    RecordError,
    parse_timestamp,
    record_to_event,
)

__all__ = [
    "READERS",
    "EventFormatError",
    "LateEventError",
    "RecordConverter",
    "RecordError",
    "merge",
    "options_for",
    "parse_timestamp",
    "read_csv",
    "read_events",
    "read_jsonl",
    "read_parquet",
    "reader_for",
    "record_to_event",
    "reorder",
]

#: File suffix → reader. ``.json`` is read as JSON Lines (what Spark and most tools write).
READERS: dict[str, Callable[..., Iterator[Event]]] = {
    ".jsonl": read_jsonl,
    ".ndjson": read_jsonl,
    ".json": read_jsonl,
    ".csv": read_csv,
    ".parquet": read_parquet,
    ".pq": read_parquet,
}


def reader_for(path: str | os.PathLike[str]) -> Callable[..., Iterator[Event]] | None:
    """The reader for a file by its (case-insensitive) suffix, or None if unsupported."""
    return READERS.get(Path(path).suffix.lower())


def options_for(reader: Callable[..., Any], opts: dict[str, Any]) -> dict[str, Any]:
    """The subset of ``opts`` that ``reader`` accepts (format-specific options in a mixed dir)."""
    accepted = inspect.signature(reader).parameters
    return {k: v for k, v in opts.items() if k in accepted}


def _check_options(opts: dict[str, Any]) -> None:
    known = {name for r in set(READERS.values()) for name in inspect.signature(r).parameters}
    unknown = sorted(set(opts) - known)
    if unknown:
        raise TypeError(f"unknown reader option(s): {', '.join(unknown)}")


def read_events(
    path: str | os.PathLike[str],
    schemas: Mapping[str, EventType] | None = None,
    side: SideChannel | None = None,
    strict: bool = False,
    **opts: Any,
) -> Iterator[Event]:
    """Stream Events from a file (format by suffix) or a directory of such files, by name.

    A directory's files are read one after the other in sorted name order and ``seq`` runs
    on across them. Names starting with ``_`` or ``.`` (``_SUCCESS``, ``.crc``) are metadata
    and skipped; any other entry that is not a supported file is reported on the side channel
    (or raises in strict mode) rather than ignored. Options a format does not have (CSV's
    ``delimiter`` for JSON Lines) are not passed to its reader; unknown options are a TypeError.
    """
    _check_options(opts)
    p = Path(path)
    if not p.is_dir():
        reader = reader_for(p)
        if reader is None:
            raise ValueError(f"{path}: unsupported file type (expected one of {sorted(READERS)})")
        return reader(path, schemas, side, strict, **options_for(reader, opts))
    return _read_directory(p, schemas, side, strict, opts)


def _read_directory(
    directory: Path,
    schemas: Mapping[str, EventType] | None,
    side: SideChannel | None,
    strict: bool,
    opts: dict[str, Any],
) -> Iterator[Event]:
    seq = 0
    for entry in sorted(directory.iterdir(), key=lambda e: e.name):
        if entry.name.startswith(("_", ".")):
            continue
        reader = reader_for(entry) if entry.is_file() else None
        if reader is None:
            rejected = Rejected(
                os.fspath(entry), "file",
                f"not a supported event file (expected one of {', '.join(sorted(READERS))})",
            )
            if strict or side is None:
                raise EventFormatError(rejected)
            side.malformed.append(rejected)
            continue
        for event in reader(entry, schemas, side, strict, **options_for(reader, opts)):
            event.seq = seq
            seq += 1
            yield event
