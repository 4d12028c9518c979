"""The event files of an input — one file, a folder of files, or several — read as one stream in
time order, as every engine reads them (docs/formats.md, "Inputs").

* :func:`input_files` lists the files: a folder's by name, skipping names that start with ``_``
  or ``.`` (``_SUCCESS``, ``.crc``: metadata, as Spark's file sources skip them); a folder entry
  that is not a supported event file is reported on the side channel; a path given that does
  not exist or has an unsupported extension is an :class:`InputError` (one line, before
  anything is read or written).
* :func:`ordered_events` reads each file with its located reader, puts it in time order within
  the allowed lateness (:func:`~cepflow.inputs.ordering.reorder`: an event too late goes to the
  side channel with its file and line or row) and merges the files by (ts, file, position in
  the file) — the order in which Spark's batch replay and streaming feed their engines too.
  When the input is a folder or several files, an event without an ``id`` is named
  ``NAME:N`` (its file's name and its position among the file's accepted events), as Spark
  names them, since a stream is not numbered across files.
"""

from __future__ import annotations

import inspect
import os
import resource
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from cepflow.events.event import Event, EventType, Rejected, SideChannel
from cepflow.inputs.csvfile import read_csv
from cepflow.inputs.jsonl import read_jsonl
from cepflow.inputs.ordering import merge, reorder
from cepflow.inputs.parquet import read_parquet
from cepflow.inputs.records import Cursor, EventFormatError

#: File suffix → reader. ``.json`` is read as JSON Lines (what Spark and most tools write).
READERS: dict[str, Callable[..., Iterator[Event]]] = {
    ".jsonl": read_jsonl,
    ".ndjson": read_jsonl,
    ".json": read_jsonl,
    ".csv": read_csv,
    ".parquet": read_parquet,
    ".pq": read_parquet,
}

Paths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


class InputError(ValueError):
    """An input path that cannot be read (missing, or not a supported event file)."""


def reader_for(path: str | os.PathLike[str]) -> Callable[..., Iterator[Event]] | None:
    """The reader for a file by its (case-insensitive) suffix, or None if unsupported."""
    return READERS.get(Path(path).suffix.lower())


def location_unit(path: str | os.PathLike[str]) -> str:
    """How locations in a file are counted: ``row`` (Parquet, 0-based) or ``line`` (1-based)."""
    return "row" if reader_for(path) is read_parquet else "line"


def options_for(reader: Callable[..., Any], opts: Mapping[str, Any]) -> dict[str, Any]:
    """The subset of ``opts`` that ``reader`` accepts (format-specific options in a mixed dir)."""
    accepted = inspect.signature(reader).parameters
    return {k: v for k, v in opts.items() if k in accepted}


def check_options(opts: Mapping[str, Any]) -> None:
    """TypeError for reader options no reader has."""
    known = {name for r in set(READERS.values()) for name in inspect.signature(r).parameters}
    unknown = sorted(set(opts) - known - {"cursor", "source"})
    if unknown:
        raise TypeError(f"unknown reader option(s): {', '.join(unknown)}")


#: why a file is not read (every engine says it so)
UNSUPPORTED = f"not a supported event file (expected one of {', '.join(sorted(READERS))})"


def input_files(paths: Paths, side: SideChannel | None = None, strict: bool = False
                ) -> list[Path]:
    """The event files of ``paths`` (files and folders) in input order, a folder's by name
    (module docstring); InputError for a path that is missing or not an event file."""
    out: list[Path] = []
    for path in [paths] if isinstance(paths, str | os.PathLike) else paths:
        p = Path(path)
        if p.is_dir():
            for entry in sorted(p.iterdir(), key=lambda e: e.name):
                if entry.name.startswith(("_", ".")):
                    continue
                if entry.is_file() and reader_for(entry) is not None:
                    out.append(entry)
                    continue
                rejected = Rejected(os.fspath(entry), "file", UNSUPPORTED)
                if strict or side is None:
                    raise EventFormatError(rejected)
                side.malformed.append(rejected)
        elif not p.exists():
            raise InputError(f"{path}: no such file or folder")
        elif reader_for(p) is None:
            suffix = f"'{p.suffix}'" if p.suffix else "without an extension"
            raise InputError(f"{path}: unsupported input format {suffix} ({UNSUPPORTED})")
        else:
            out.append(p)
    return out


def is_named(paths: Paths) -> bool:
    """Whether events without an id get the id ``NAME:N``: the input is a folder or several
    paths."""
    if isinstance(paths, str | os.PathLike):
        return Path(paths).is_dir()
    return len(paths) != 1 or Path(paths[0]).is_dir()


def _named(events: Iterable[Event], name: str) -> Iterator[Event]:
    """``events`` of the file ``name``, those without an id named ``NAME:N`` (N: their seq,
    the position among the file's accepted events)."""
    for e in events:
        if e.id is None:
            e.id = f"{name}:{e.seq}"
        yield e


def _room_for(files: int) -> None:
    """Raise the soft limit of open files if the merge, which keeps every file open, needs
    more (InputError when even the hard limit is too low)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = files + 64  # (standard streams, the outputs, Python's own)
    if soft == resource.RLIM_INFINITY or need <= soft:
        return
    if hard != resource.RLIM_INFINITY and need > hard:
        raise InputError(f"{files} input files are merged by time, each kept open, but at most "
                         f"{hard} files may be open (ulimit -n); put fewer, larger files in "
                         "the folder")
    resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def ordered_events(
    paths: Paths,
    schemas: Mapping[str, EventType] | None = None,
    side: SideChannel | None = None,
    *,
    lateness: float = 0,
    strict: bool = False,
    **opts: Any,
) -> Iterator[Event]:
    """The events of ``paths`` (files and folders) as one stream in time order (module
    docstring), with ``seq`` the position in that stream — except for a single file, whose
    events keep their position in the file. Bad records and late events go to ``side``
    (without one, the first raises). InputError and TypeError (unknown options) are raised
    at the call, before anything is read."""
    files, named = open_inputs(paths, side, lateness, strict, opts)
    return _ordered(files, named, schemas, side, lateness, strict, opts)


def open_inputs(paths: Paths, side: SideChannel | None, lateness: float, strict: bool,
                opts: Mapping[str, Any]) -> tuple[list[Path], bool]:
    """What every reader of ``paths`` as one stream checks first: the options, the lateness,
    the files (:func:`input_files`) and room to keep them all open; returns the files and
    whether their events are named ``NAME:N`` (:func:`is_named`)."""
    check_options(opts)
    if not lateness >= 0:  # also rejects NaN
        raise ValueError(f"lateness must be >= 0 ms, not {lateness!r}")
    named = is_named(paths)
    files = input_files(paths, side, strict)
    if len(files) > 1:
        _room_for(len(files))
    return files, named


def _ordered(files: list[Path], named: bool, schemas: Mapping[str, EventType] | None,
             side: SideChannel | None, lateness: float, strict: bool,
             opts: Mapping[str, Any]) -> Iterator[Event]:
    streams = []
    for f in files:
        reader = reader_for(f)
        assert reader is not None
        cursor = Cursor(location_unit(f))
        events: Iterable[Event] = reader(f, schemas, side, strict, cursor=cursor,
                                         **options_for(reader, opts))
        if named:
            events = _named(events, f.name)
        streams.append(reorder(events, lateness, side, source=os.fspath(f),
                               locate=cursor.location))
    if len(streams) == 1 and not named:
        yield from streams[0]
        return
    for seq, e in enumerate(merge(*streams)):
        e.seq = seq
        yield e
