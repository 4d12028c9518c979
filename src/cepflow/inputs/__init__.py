"""Event inputs: JSON Lines, CSV and Parquet readers, the record rules, and the ordering policy.

Every reader streams :class:`~cepflow.events.event.Event` objects with ``seq`` = 0-based position
among the accepted events of the source; bad records go to a
:class:`~cepflow.events.event.SideChannel` (or raise :class:`EventFormatError` in strict mode or
when no side channel is given), so nothing is lost silently. Folders and several files are read
as one stream in time order (:mod:`cepflow.inputs.files`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from cepflow.events.event import Event, EventType, SideChannel
from cepflow.inputs.csvfile import read_csv
from cepflow.inputs.files import (
    READERS,
    InputError,
    check_options,
    input_files,
    location_unit,
    options_for,
    ordered_events,
    reader_for,
)
from cepflow.inputs.jsonl import read_jsonl
from cepflow.inputs.ordering import LateEventError, late_reason, merge, reorder
from cepflow.inputs.parquet import read_parquet
from cepflow.inputs.records import (
    Cursor,
    EventFormatError,
    RecordConverter,
    RecordError,
    parse_timestamp,
    record_to_event,
)

__all__ = [
    "READERS",
    "Cursor",
    "EventFormatError",
    "InputError",
    "LateEventError",
    "RecordConverter",
    "RecordError",
    "input_files",
    "late_reason",
    "location_unit",
    "merge",
    "options_for",
    "ordered_events",
    "parse_timestamp",
    "read_csv",
    "read_events",
    "read_jsonl",
    "read_parquet",
    "reader_for",
    "record_to_event",
    "reorder",
]


def read_events(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    schemas: Mapping[str, EventType] | None = None,
    side: SideChannel | None = None,
    strict: bool = False,
    *,
    lateness: float = 0,
    **opts: Any,
) -> Iterator[Event]:
    """Stream Events from a file (format by suffix), a folder of such files, or several paths.

    One file: its records in file order (``seq`` their position among its accepted events;
    order them with :func:`reorder`). A folder or several paths: the files in time order,
    merged — each file ordered within ``lateness`` ms, later events reported late, events
    without an id named ``NAME:N`` (:func:`~cepflow.inputs.files.ordered_events`). Options a
    format does not have (CSV's ``delimiter`` for JSON Lines) are not passed to its reader;
    unknown options are a TypeError; a missing path or an unsupported file an InputError.
    """
    check_options(opts)
    if isinstance(path, str | os.PathLike) and not Path(path).is_dir():
        (file,) = input_files(path)
        reader = reader_for(file)
        assert reader is not None
        return reader(path, schemas, side, strict, **options_for(reader, opts))
    return ordered_events(path, schemas, side, lateness=lateness, strict=strict, **opts)
