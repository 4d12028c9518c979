"""Input files: a folder or several files are read as one stream in time order, as every engine
reads them; late events and unusable paths are reported where they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cepflow.events.event import EventType, ParamSpec, SideChannel
from cepflow.inputs import InputError, LateEventError, ordered_events, read_events

SCHEMAS = {"A": EventType("A", (ParamSpec("k", "int", "Integer"),))}


def write(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_folder_is_merged_by_time(tmp_path: Path) -> None:
    """Files with interleaving time ranges: read one after the other, the second file's events
    were late (issue 16); merged by time, none is."""
    write(tmp_path / "b.jsonl", {"type": "A", "ts": 2, "k": 20}, {"type": "A", "ts": 5, "k": 21})
    write(tmp_path / "a.jsonl", {"type": "A", "ts": 1, "k": 10}, {"type": "A", "ts": 5, "k": 11},
          {"type": "A", "ts": 7, "k": 12, "id": "mine"})
    side = SideChannel()
    events = list(read_events(tmp_path, SCHEMAS, side))
    assert [(e.ts, e.params[0]) for e in events] == [(1, 10), (2, 20), (5, 11), (5, 21),
                                                     (7, 12)]  # ties: file order
    assert [e.id for e in events] == ["a.jsonl:0", "b.jsonl:0", "a.jsonl:1", "b.jsonl:1", "mine"]
    assert [e.seq for e in events] == [0, 1, 2, 3, 4]
    assert len(side) == 0


def test_several_paths_are_read_like_a_folder(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", {"type": "A", "ts": 3, "k": 1})
    b = write(tmp_path / "b.jsonl", {"type": "A", "ts": 2, "k": 2})
    events = list(ordered_events([a, b], SCHEMAS))
    assert [(e.ts, e.id) for e in events] == [(2, "b.jsonl:0"), (3, "a.jsonl:0")]
    # one file keeps its events' positions (no names: the ids are the positions)
    assert [(e.id, e.seq) for e in ordered_events(a, SCHEMAS)] == [(None, 0)]


def test_late_events_name_their_file_and_line(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl", {"type": "A", "ts": 1, "k": 1}, {"type": "A", "ts": 9, "k": 1},
          {"type": "A", "ts": 4, "k": 2}, {"type": "A", "ts": 10, "k": 3})
    write(tmp_path / "b.jsonl", {"type": "A", "ts": 5, "k": 4})
    side = SideChannel()
    events = list(ordered_events(tmp_path, SCHEMAS, side))
    assert [e.ts for e in events] == [1, 5, 9, 10]
    (late,) = side.late
    assert (late.source, late.location, late.field) == (str(tmp_path / "a.jsonl"), "line 3",
                                                        "ts")
    assert late.reason == "late by 5 ms: events up to 9 were already released (watermark 9)"
    assert late.record.id == "a.jsonl:2"
    side = SideChannel()
    assert [e.ts for e in ordered_events(tmp_path, SCHEMAS, side, lateness=5)] == [1, 4, 5, 9,
                                                                                   10]
    assert len(side) == 0
    with pytest.raises(LateEventError):
        list(ordered_events(tmp_path, SCHEMAS))


def test_unusable_paths_are_input_errors_before_reading(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(InputError, match=r"missing\.jsonl: no such file or folder"):
        ordered_events(tmp_path / "missing.jsonl")
    with pytest.raises(InputError, match=r"notes\.txt: unsupported input format '\.txt'"):
        ordered_events([tmp_path / "notes.txt"])
    with pytest.raises(ValueError, match="lateness"):
        ordered_events(tmp_path, lateness=-1)
    # in a folder, a file that is not an event file is a rejected record, not an error
    side = SideChannel()
    assert list(ordered_events(tmp_path, side=side)) == []
    assert [(r.location, r.reason.split(" (")[0]) for r in side.malformed] == [
        ("file", "not a supported event file")]
