"""JSON Lines writers for detected matches and for the side channel of rejected records."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import date, datetime
from typing import Any, TextIO

from cepflow.events.model import ComplexEvent, Event, Rejected, SideChannel

PathOrFile = str | os.PathLike[str] | TextIO


def json_default(value: Any) -> Any:
    """``json.dumps`` fallback: events become their ref, sets lists, dates ISO text, else str."""
    if isinstance(value, Event):
        return value.ref
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


#: (one encoder for every line: ``json.dumps`` with options builds a new one per call)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=json_default)


def dumps(value: Any) -> str:
    """One compact JSON line (UTF-8 text kept as is, non-JSON values via :func:`json_default`)."""
    return _ENCODER.encode(value)


@contextmanager
def _text_output(path_or_file: PathOrFile) -> Iterator[TextIO]:
    """An open text stream: the given file object (left open) or a new UTF-8 file (closed)."""
    if hasattr(path_or_file, "write"):
        yield path_or_file  # type: ignore[misc]
    else:
        with open(path_or_file, "w", encoding="utf-8", newline="\n") as f:  # type: ignore[arg-type]
            yield f


def write_jsonl(matches: Iterable[ComplexEvent], path_or_file: PathOrFile) -> int:
    """Write one ``{"pattern", "ts", "params", "events"}`` object per match; returns the count.
    Event ids are written as strings, as the Parquet writer and the Spark pipeline write them
    (an id column holds one type), so the outputs of every engine and format compare equal."""
    count = 0
    with _text_output(path_or_file) as out:
        for match in matches:
            d = match.to_dict()
            d["events"] = [str(r) for r in d["events"]]
            out.write(dumps(d))
            out.write("\n")
            count += 1
    return count


def _jsonable_record(record: Any) -> Any:
    """The rejected record as JSON data: an Event as its dict, other values as is or as repr."""
    if isinstance(record, Event):
        return record.to_dict()
    try:
        json.dumps(record, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return repr(record)
    return record


def rejected_to_dict(rejected: Rejected, kind: str | None = None) -> dict[str, Any]:
    """The side-channel entry as a JSON-able dict (``kind`` is ``malformed``/``late`` if known)."""
    d: dict[str, Any] = {}
    if kind is not None:
        d["kind"] = kind
    d.update(
        source=rejected.source,
        location=rejected.location,
        reason=rejected.reason,
        field=rejected.field,
        record=_jsonable_record(rejected.record),
    )
    return d


def write_rejected_jsonl(
    rejected: Iterable[Rejected] | SideChannel, path_or_file: PathOrFile
) -> int:
    """Write the side channel, one JSON object per rejected record, so it can be reviewed.

    Given a whole :class:`SideChannel`, each line also carries ``kind`` (malformed or late).
    Returns the number of lines written.
    """
    if isinstance(rejected, SideChannel):
        items: Iterable[tuple[Rejected, str | None]] = [
            *((r, "malformed") for r in rejected.malformed),
            *((r, "late") for r in rejected.late),
        ]
    else:
        items = ((r, None) for r in rejected)
    count = 0
    with _text_output(path_or_file) as out:
        for r, kind in items:
            out.write(dumps(rejected_to_dict(r, kind)))
            out.write("\n")
            count += 1
    return count
