"""Readers: good records become exact Events, bad ones land in the side channel, none are lost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event, EventType, ParamSpec, SideChannel
from cepflow.inputs import (
    EventFormatError,
    RecordError,
    parse_timestamp,
    read_csv,
    read_events,
    read_jsonl,
    read_parquet,
    record_to_event,
)

SCHEMAS = {
    "Temp": EventType(
        "Temp",
        (
            ParamSpec("sensor", "str", "String"),
            ParamSpec("value", "float", "Double"),
            ParamSpec("count", "int", "Integer"),
            ParamSpec("ok", "bool", "Boolean"),
        ),
    ),
    "Door": EventType("Door", (ParamSpec("room", "any"),)),
}

JAN1 = 1_704_067_200_000  # 2024-01-01T00:00:00Z in epoch ms


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def jsonl(tmp_path: Path, *lines: str) -> Path:
    return write(tmp_path, "events.jsonl", "\n".join(lines) + "\n")


def read_all(reader: Any, path: Path, *args: Any, **kw: Any) -> tuple[list[Event], SideChannel]:
    side = SideChannel()
    return list(reader(path, *args, side=side, **kw)), side


# ----------------------------------------------------------------------------- timestamps


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1500, 1500),
        (1.5, 1.5),
        ("2024-01-01T00:00:00Z", JAN1),
        ("2024-01-01T00:00:00", JAN1),  # no zone = UTC
        ("2024-01-01T02:00:00+02:00", JAN1),
        ("2024-01-01T00:00:00.250Z", JAN1 + 250),
        ("2024-01-01T00:00:00.000500Z", JAN1 + 0.5),
        ("2024-01-01", JAN1),
        ("1969-12-31T23:59:59.999Z", -1),
    ],
)
def test_parse_timestamp(value: Any, expected: float) -> None:
    got = parse_timestamp(value)
    assert got == expected
    assert type(got) is type(expected)


@pytest.mark.parametrize("value", [True, float("nan"), float("inf"), "yesterday", "1500", [1]])
def test_parse_timestamp_rejects(value: Any) -> None:
    with pytest.raises(RecordError) as info:
        parse_timestamp(value)
    assert info.value.field == "ts"


def test_parse_timestamp_text_reads_numbers_as_ms() -> None:
    assert parse_timestamp("1500", text=True) == 1500
    assert parse_timestamp("1.5e3", text=True) == 1500.0
    assert parse_timestamp("20240101", text=True) == 20240101  # ms, not a basic ISO date
    with pytest.raises(RecordError):
        parse_timestamp("1e999", text=True)


# ----------------------------------------------------------------------------- records


def test_record_typed_and_untyped() -> None:
    rec = {"type": "Temp", "ts": 5, "count": 3, "value": 2, "sensor": "s1", "ok": None}
    ev = record_to_event(rec, SCHEMAS)
    assert ev == Event("Temp", ("s1", 2.0, 3, None), 5)
    assert isinstance(ev.params[1], float)
    assert record_to_event({"ts": 1, "b": 2, "type": "X", "a": 1}) == Event("X", (2, 1), 1)


def test_record_params_list_and_strict_params() -> None:
    lenient = record_to_event({"type": "Temp", "ts": 1, "params": ["s", 1]}, SCHEMAS,
                              strict_params=False)
    assert lenient.params == ("s", 1.0, None, None)
    # by default a record that leaves out a declared parameter is rejected, not given a null
    with pytest.raises(RecordError) as info:
        record_to_event({"type": "Temp", "ts": 1, "params": ["s", 1]}, SCHEMAS)
    assert info.value.field == "count"
    with pytest.raises(RecordError) as info:
        record_to_event({"type": "Temp", "ts": 1, "sensor": "s"}, SCHEMAS)
    assert info.value.field == "value"
    assert info.value.reason == "missing required parameter 'value'"
    with pytest.raises(RecordError):
        record_to_event({"type": "Door", "ts": 1, "params": [1, 2]}, SCHEMAS)
    with pytest.raises(RecordError):
        record_to_event({"type": "X", "ts": 1, "params": [1], "y": 2})


def test_record_unknown_fields_ignore_opt_in() -> None:
    rec = {"type": "Door", "ts": 1, "room": "r", "extra": 1}
    with pytest.raises(RecordError) as info:
        record_to_event(rec, SCHEMAS)
    assert info.value.field == "extra"
    assert record_to_event(rec, SCHEMAS, unknown_fields="ignore").params == ("r",)


def test_record_rejects_nested_values_and_bad_ids() -> None:
    with pytest.raises(RecordError) as info:
        record_to_event({"type": "X", "ts": 1, "a": {"b": 1}})
    assert info.value.field == "a"
    for bad in (True, 1.5, [1]):
        with pytest.raises(RecordError) as info:
            record_to_event({"type": "X", "ts": 1, "id": bad})
        assert info.value.field == "id"
    assert record_to_event({"type": "X", "ts": 1, "id": 7.0}).id == 7


# ----------------------------------------------------------------------------- JSON Lines


def test_jsonl_good_records(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path,
        '{"type": "Temp", "ts": 10, "sensor": "s1", "value": 21, "count": 2, "ok": true}',
        "",
        '{"type": "Door", "ts": "2024-01-01T00:00:00Z", "id": "d1", "room": "hall"}',
        '{"type": "Other", "ts": 12.5, "id": 3, "b": null, "a": "x"}',
        '   ',
        '{"type": "Pos", "ts": "2024-01-01T01:00:00+01:00", "params": [1, "two", false]}',
    )
    events, side = read_all(read_jsonl, path, SCHEMAS, unknown_types="keep")
    assert events == [
        Event("Temp", ("s1", 21.0, 2, True), 10),
        Event("Door", ("hall",), JAN1, "d1"),
        Event("Other", (None, "x"), 12.5, 3),
        Event("Pos", (1, "two", False), JAN1),
    ]
    assert [e.seq for e in events] == [0, 1, 2, 3]
    assert events[0].id is None
    assert len(side) == 0


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_events_of_a_declared_type_share_its_name(tmp_path: Path, fmt: str) -> None:
    """The readers give the events of a declared type the schema's own name object (as a
    program's literal name is shared), not a new text per record; an undeclared type kept
    has its record's name."""
    if fmt == "jsonl":
        path = jsonl(tmp_path, *(f'{{"type": "Door", "ts": {i}, "room": {i}}}' for i in range(3)),
                     '{"type": "Nope", "ts": 9, "x": 1}')
        events, _ = read_all(read_jsonl, path, SCHEMAS, unknown_types="keep")
    else:
        path = write(tmp_path, "e.csv", "type,ts,room\n" + "".join(f"Door,{i},{i}\n"
                                                                   for i in range(3)))
        events, _ = read_all(read_csv, path, SCHEMAS)
    doors = [e for e in events if e.type == "Door"]
    assert len(doors) == 3
    key = next(k for k in SCHEMAS if k == "Door")
    assert all(e.type is key for e in doors)
    assert [e.type for e in events[3:]] == (["Nope"] if fmt == "jsonl" else [])


BAD_JSONL = [
    ('{"type": "Temp", "ts": 1,, }', "invalid JSON", None, "line 2, column 26"),
    ('{"ts": 1, "sensor": "s"}', "missing required field 'type'", "type", "line 2"),
    ('{"type": "", "ts": 1}', "non-empty string", "type", "line 2"),
    ('{"type": "Temp", "sensor": "s"}', "missing required field 'ts'", "ts", "line 2"),
    ('{"type": "Temp", "ts": "noon"}', "invalid timestamp 'noon'", "ts", "line 2"),
    ('{"type": "Temp", "ts": true}', "ts must be", "ts", "line 2"),
    ('{"type": "Temp", "ts": NaN}', "finite", "ts", "line 2"),
    ('{"type": "Temp", "ts": 1, "count": "3"}', "expected Integer, got '3'", "count", "line 2"),
    ('{"type": "Temp", "ts": 1, "value": true}', "expected Double", "value", "line 2"),
    ('{"type": "Temp", "ts": 1, "colour": "red"}', "unknown field 'colour'", "colour", "line 2"),
    ('{"type": "Temp", "ts": 1, "ts": 2}', "duplicate key 'ts'", "ts", "line 2"),
    ('["Temp", 1]', "expected a JSON object, got array", None, "line 2"),
    ("42", "expected a JSON object, got number", None, "line 2"),
    ('{"type": "Door", "ts": 1, "room": [1]}', "unsupported value of type array", "room", "line 2"),
    ('{"type": "Door", "ts": 1, "id": false}', "id must be", "id", "line 2"),
]


@pytest.mark.parametrize(("line", "reason", "field", "location"), BAD_JSONL)
def test_jsonl_malformed_goes_to_side_channel(
    tmp_path: Path, line: str, reason: str, field: str | None, location: str
) -> None:
    good = '{"type": "Door", "ts": 1, "room": 1}'
    path = jsonl(tmp_path, good, line, good)
    events, side = read_all(read_jsonl, path, SCHEMAS, strict_params=False)
    assert [e.seq for e in events] == [0, 1]
    assert len(side.malformed) == 1
    rej = side.malformed[0]
    assert reason in rej.reason
    assert (rej.field, rej.location, rej.source) == (field, location, str(path))
    assert rej.record == line
    assert len(events) + len(side.malformed) == 3


def test_jsonl_bad_json_column_from_decoder(tmp_path: Path) -> None:
    line = '{"type": "A", "ts": 1, "x": tru}'
    _, side = read_all(read_jsonl, jsonl(tmp_path, line))
    assert side.malformed[0].location == f"line 1, column {line.index('tru') + 1}"


def test_jsonl_unknown_types(tmp_path: Path) -> None:
    path = jsonl(tmp_path, '{"type": "Nope", "ts": 1, "x": 1}')
    events, side = read_all(read_jsonl, path, SCHEMAS, unknown_types="keep")
    assert events == [Event("Nope", (1,), 1)]
    events, side = read_all(read_jsonl, path, SCHEMAS)  # the default: rejected, with a reason
    assert events == []
    assert side.malformed[0].reason == "unknown event type 'Nope'"
    assert side.malformed[0].field == "type"


def test_jsonl_invalid_utf8_and_bom(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"type": "A", "ts": 1}\n{"type": "\xff", "ts": 2}\n')
    events, side = read_all(read_jsonl, path)
    assert events == [Event("A", (), 1)]
    assert side.malformed[0].location == "line 2"
    assert "invalid UTF-8" in side.malformed[0].reason


def test_jsonl_deep_nesting_is_rejected_not_a_crash(tmp_path: Path) -> None:
    path = jsonl(tmp_path, "[" * 100_000 + "]" * 100_000)
    events, side = read_all(read_jsonl, path)
    assert events == []
    assert len(side.malformed) == 1


def test_jsonl_strict_raises_with_location(tmp_path: Path) -> None:
    path = jsonl(tmp_path, '{"type": "Temp", "ts": 1}', '{"type": "Temp", "ts": 1, "count": 1.5}')
    with pytest.raises(EventFormatError) as info:
        list(read_jsonl(path, SCHEMAS, side=SideChannel(), strict=True, strict_params=False))
    assert str(info.value) == f"{path}:2: expected Integer, got 1.5 (field 'count')"
    assert info.value.rejected.location == "line 2"
    bad_json = jsonl(tmp_path, '{"type": }')
    with pytest.raises(EventFormatError, match=rf"^{bad_json}:1:10: invalid JSON"):
        list(read_jsonl(bad_json, strict=True))


def test_jsonl_without_side_channel_raises(tmp_path: Path) -> None:
    path = jsonl(tmp_path, '{"type": "A"}')
    with pytest.raises(EventFormatError, match="missing required field 'ts'"):
        list(read_jsonl(path))


GOOD_LINE = st.builds(
    lambda t, ts, x: json.dumps({"type": t, "ts": ts, "x": x}),
    st.sampled_from(["A", "B", "Temp"]),
    st.integers(-10**15, 10**15) | st.floats(allow_nan=False, allow_infinity=False),
    st.none() | st.integers() | st.text(max_size=5),
)
BAD_LINE = st.sampled_from(
    [
        "{",
        "not json",
        "[]",
        "null",
        '{"ts": 1}',
        '{"type": "A"}',
        '{"type": "A", "ts": "soon"}',
        '{"type": "A", "ts": 1, "x": {"y": 1}}',
        '{"type": 1, "ts": 1}',
        '{"type": "A", "ts": 1, "ts": 1}',
    ]
) | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=10).filter(
    lambda s: "\n" not in s and "\r" not in s and s.strip() != "" and not s.strip().startswith("{")
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.tuples(st.booleans(), GOOD_LINE, BAD_LINE), max_size=25))
def test_jsonl_nothing_lost_property(tmp_path: Path, lines: list[tuple[bool, str, str]]) -> None:
    text = [good if is_good else bad for is_good, good, bad in lines]
    path = tmp_path / "prop.jsonl"
    path.write_text("".join(t + "\n" for t in text), encoding="utf-8")
    events, side = read_all(read_jsonl, path)
    n_good = sum(1 for is_good, _, _ in lines if is_good)
    assert len(events) == n_good
    assert len(events) + len(side.malformed) == len(text)
    assert [e.seq for e in events] == list(range(n_good))
    bad_lines = [f"line {i}" for i, (g, _, _) in enumerate(lines, 1) if not g]
    assert [r.location.split(",")[0] for r in side.malformed] == bad_lines


# ----------------------------------------------------------------------------- CSV


def test_csv_good_records(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "e.csv",
        "type,ts,id,sensor,value,count,ok\n"
        "Temp,10,,s1,21,2,TRUE\n"
        "\n"
        'Temp,2024-01-01T00:00:00Z,7,"multi\nline",1.5,,false\n'
        "Free,11,007,1.50,-3,abc,true\n",
    )
    events, side = read_all(read_csv, path, SCHEMAS, unknown_fields="reject",
                            unknown_types="keep")
    assert events == [
        Event("Temp", ("s1", 21.0, 2, True), 10),
        Event("Temp", ("multi\nline", 1.5, None, False), JAN1, 7),
        Event("Free", (1.5, -3, "abc", True), 11, "007"),
    ]
    assert [e.seq for e in events] == [0, 1, 2]
    assert len(side) == 0


def test_csv_without_inference_keeps_text(tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", "type,ts,a,b\nX,1,2,\n")
    events, _ = read_all(read_csv, path, infer_types=False)
    assert events == [Event("X", ("2", None), 1)]


BAD_CSV = [
    ("Temp,,s,1,1,true", "missing required field 'ts'", "ts"),
    (",1,s,1,1,true", "missing required field 'type'", "type"),
    ("Temp,later,s,1,1,true", "invalid timestamp 'later'", "ts"),
    ("Temp,1,s,1,one,true", "expected Integer, got 'one'", "count"),
    ("Temp,1,s,1.x,1,true", "expected Double", "value"),
    ("Temp,1,s,1,1,yes", "expected Boolean, got 'yes'", "ok"),
    ("Temp,1,s,1", "expected 6 cells as in the header, got 4", None),
    ("Temp,1,s,1,1,true,surplus", "expected 6 cells as in the header, got 7", None),
    ("Nope,1,s,1,1,true", "unknown event type 'Nope'", "type"),
]


@pytest.mark.parametrize(("row", "reason", "field"), BAD_CSV)
def test_csv_malformed_goes_to_side_channel(
    tmp_path: Path, row: str, reason: str, field: str | None
) -> None:
    good = "Temp,1,s,1,1,true"
    path = write(
        tmp_path, "e.csv", f"type,ts,sensor,value,count,ok\n{good}\n\n{row}\n{good}\n"
    )
    events, side = read_all(read_csv, path, SCHEMAS, unknown_types="reject")
    assert len(events) == 2
    assert len(side.malformed) == 1
    rej = side.malformed[0]
    assert reason in rej.reason
    assert (rej.field, rej.location) == (field, "line 4")


def test_csv_trailing_empty_cells_are_fine(tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", "type,ts,x\nA,1,2,,\n")
    events, side = read_all(read_csv, path)
    assert events == [Event("A", (2,), 1)]
    assert len(side) == 0


def test_csv_unknown_column_for_typed_event(tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", "type,ts,room,colour\nDoor,1,r,\nX,2,r,red\n")
    events, side = read_all(read_csv, path, SCHEMAS, unknown_types="keep")
    assert events == [Event("X", ("r", "red"), 2)]
    assert (side.malformed[0].field, side.malformed[0].location) == ("colour", "line 2")


def test_csv_header_problems_reject_every_row(tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", "type,time,x\nA,1,2\nB,2,3\n")
    events, side = read_all(read_csv, path)
    assert events == []
    assert [(r.location, r.field) for r in side.malformed] == [("line 2", "ts"), ("line 3", "ts")]
    path = write(tmp_path, "d.csv", "type,ts,x,x\nA,1,2,3\n")
    events, side = read_all(read_csv, path)
    assert events == [] and "duplicate column 'x'" in side.malformed[0].reason


def test_csv_location_is_physical_start_line(tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", 'type,ts,note\nA,1,"a\nb\nc"\n\nA,x,n\n')
    _, side = read_all(read_csv, path)
    assert side.malformed[0].location == "line 6"


def test_csv_strict_raises_with_location(tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", "type,ts,count\nTemp,1,1\nTemp,2,x\n")
    schemas = {"Temp": EventType("Temp", (ParamSpec("count", "int", "int"),))}
    with pytest.raises(EventFormatError) as info:
        list(read_csv(path, schemas, strict=True))
    assert str(info.value) == f"{path}:3: expected int, got 'x' (field 'count')"


def test_csv_invalid_utf8_row(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_bytes(b"type,ts,x\nA,1,\xff\nA,2,ok\n")
    events, side = read_all(read_csv, path)
    assert events == [Event("A", ("ok",), 2)]
    assert side.malformed[0].location == "line 2"
    assert "invalid UTF-8" in side.malformed[0].reason


# ----------------------------------------------------------------------------- Parquet


def test_parquet_good_and_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "e.parquet"
    table = pa.table(
        {
            "type": ["Temp", "Temp", None, "Temp", "Temp"],
            "ts": pa.array([JAN1, JAN1 + 1, 3, None, 5], pa.int64()),
            "id": [None, "b", "c", "d", "e"],
            "sensor": ["s", "s", "s", "s", "s"],
            "count": pa.array([1, None, 3, 4, 5], pa.int64()),
            "value": [1.5, 2.0, None, None, None],
        }
    )
    pq.write_table(table, path)
    events, side = read_all(read_parquet, path, SCHEMAS, batch_size=2, strict_params=False)
    assert events == [
        Event("Temp", ("s", 1.5, 1, None), JAN1),
        Event("Temp", ("s", 2.0, None, None), JAN1 + 1, "b"),
        Event("Temp", ("s", None, 5, None), 5, "e"),
    ]
    assert [e.seq for e in events] == [0, 1, 2]
    assert [(r.location, r.field) for r in side.malformed] == [("row 2", "type"), ("row 3", "ts")]
    assert side.malformed[1].record["id"] == "d"


def test_parquet_typed_errors_and_timestamps(tmp_path: Path) -> None:
    path = tmp_path / "e.pq"
    ts = pa.array([0, 1_500_000, 2_000], pa.timestamp("us", tz="UTC"))
    pq.write_table(
        pa.table({"type": ["Temp", "Temp", "Door"], "ts": ts, "count": ["1", "2", None],
                  "room": [None, None, "r"]}),
        path,
    )
    events, side = read_all(read_parquet, path, SCHEMAS, unknown_fields="ignore",
                            strict_params=False)
    assert events == [Event("Door", ("r",), 2)]
    assert [(r.location, r.field) for r in side.malformed] == [("row 0", "count"),
                                                               ("row 1", "count")]
    assert isinstance(events[0].ts, int)


def test_parquet_params_list_column(tmp_path: Path) -> None:
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"type": ["P"], "ts": [1.5], "params": [[1, 2]]}), path)
    events, _ = read_all(read_parquet, path)
    assert events == [Event("P", (1, 2), 1.5)]


def test_parquet_corrupt_file_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path, "e.parquet", "this is not parquet")
    events, side = read_all(read_parquet, path)
    assert events == [] and side.malformed[0].location == "file"
    with pytest.raises(EventFormatError):
        list(read_parquet(path, strict=True))


def test_parquet_strict(tmp_path: Path) -> None:
    path = tmp_path / "e.parquet"
    pq.write_table(pa.table({"type": ["A", "A"], "ts": [1.0, float("nan")]}), path)
    with pytest.raises(EventFormatError, match=r"e\.parquet:row 1: ts must be finite"):
        list(read_parquet(path, strict=True))


# ----------------------------------------------------------------------------- read_events


def test_read_events_by_suffix_and_directory(tmp_path: Path) -> None:
    d = tmp_path / "in"
    d.mkdir()
    (d / "b.csv").write_text("type,ts,x\nB,2,1\n", encoding="utf-8")
    (d / "a.ndjson").write_text('{"type": "A", "ts": 1}\n{"type": "A"}\n', encoding="utf-8")
    pq.write_table(pa.table({"type": ["C"], "ts": [3]}), d / "c.parquet")
    (d / "_SUCCESS").write_text("", encoding="utf-8")
    (d / "notes.txt").write_text("hi", encoding="utf-8")
    side = SideChannel()
    events = list(read_events(d, side=side, delimiter=","))
    # a folder's events are named FILE:N (N: the position among the file's events)
    assert events == [Event("A", (), 1, "a.ndjson:0"), Event("B", (1,), 2, "b.csv:0"),
                      Event("C", (), 3, "c.parquet:0")]
    assert [e.seq for e in events] == [0, 1, 2]
    assert [(Path(r.source).name, r.location) for r in side.malformed] == [
        ("notes.txt", "file"),
        ("a.ndjson", "line 2"),
    ]
    assert list(read_events(d / "b.csv")) == [Event("B", (1,), 2)]
    with pytest.raises(ValueError, match=r"unsupported input format '\.txt'"):
        read_events(d / "notes.txt")
    with pytest.raises(TypeError, match="delimeter"):
        read_events(d, delimeter=";")


def test_out_of_range_numbers_are_rejected_not_crashes(tmp_path: Path) -> None:
    huge = "9" * 5000  # beyond Python's int digit limit
    path = jsonl(
        tmp_path,
        '{"type": "A", "ts": 1, "x": ' + huge + "}",
        '{"type": "Temp", "ts": 1, "value": ' + "9" * 400 + "}",
    )
    events, side = read_all(read_jsonl, path, SCHEMAS, strict_params=False)
    assert events == []
    assert [(r.location, r.field) for r in side.malformed] == [("line 1", None),
                                                               ("line 2", "value")]
    path = write(tmp_path, "e.csv", f"type,ts,count,x\nTemp,1,{huge},\nB,2,,{huge}\n")
    events, side = read_all(read_csv, path, SCHEMAS, unknown_fields="ignore",
                            unknown_types="keep", strict_params=False)
    assert events == [Event("B", (None, huge), 2)]
    assert side.malformed[0].field == "count"


def test_csv_any_params_are_inferred(tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", "type,ts,room\nDoor,1,12\nDoor,2,007\n")
    events, _ = read_all(read_csv, path, SCHEMAS)
    assert [e.params for e in events] == [(12,), ("007",)]


# ----------------------------------------------------------------------------- one rule


def _parquet(tmp_path: Path, name: str, **columns: Any) -> Path:
    path = tmp_path / name
    pq.write_table(pa.table(columns), path)
    return path


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_nonfinite_numbers_are_rejected_in_json_lines(tmp_path: Path, token: str) -> None:
    """JSON has no such number; Python's decoder reads them: every reader rejects them."""
    good = '{"type": "Door", "ts": 1, "room": 1}'
    path = jsonl(tmp_path, good,
                 f'{{"type": "Temp", "ts": 2, "sensor": "s", "value": {token}, "count": 1, '
                 '"ok": true}', f'{{"type": "Door", "ts": 3, "room": {token}}}',  # (any)
                 f'{{"type": "Free", "ts": 4, "x": {token}}}')
    events, side = read_all(read_jsonl, path, SCHEMAS, unknown_types="keep")
    assert [e.ts for e in events] == [1]
    assert [(r.location, r.field) for r in side.malformed] == [
        ("line 2", "value"), ("line 3", "room"), ("line 4", "x")]
    assert all(r.reason.startswith("not a finite number") for r in side.malformed)


def test_nonfinite_numbers_are_rejected_in_csv_and_parquet(tmp_path: Path) -> None:
    path = write(tmp_path, "e.csv", "type,ts,sensor,value,count,ok\n"
                 "Temp,1,s,1.5,1,true\nTemp,2,s,nan,1,true\nTemp,3,s,-Infinity,1,true\n"
                 "Temp,4,s,1e999,1,true\n")
    events, side = read_all(read_csv, path, SCHEMAS)
    assert [e.ts for e in events] == [1]
    assert [(r.location, r.field, r.reason) for r in side.malformed] == [
        ("line 3", "value", "not a finite number: nan"),
        ("line 4", "value", "not a finite number: -Infinity"),
        ("line 5", "value", "not a finite number: Infinity")]
    # an untyped CSV cell that reads as a number beyond the float range is no number either
    path = write(tmp_path, "u.csv", "type,ts,x\nFree,1,1e999\nFree,2,nan\n")
    events, side = read_all(read_csv, path, unknown_types="keep")
    assert events == [Event("Free", ("nan",), 2)]  # (text: CSV cells are text unless numbers)
    assert side.malformed[0].field == "x"
    path = _parquet(tmp_path, "e.parquet", type=["Door", "Door", "Door"], ts=[1, 2, 3],
                    room=[1.5, float("nan"), float("inf")])
    events, side = read_all(read_parquet, path, SCHEMAS)
    assert [e.ts for e in events] == [1]
    assert [(r.location, r.reason) for r in side.malformed] == [
        ("row 1", "not a finite number: NaN"), ("row 2", "not a finite number: Infinity")]


def test_a_record_that_leaves_out_a_declared_field_is_rejected(tmp_path: Path) -> None:
    path = jsonl(tmp_path, '{"type": "Door", "ts": 1}', '{"type": "Door", "ts": 2, "room": null}')
    events, side = read_all(read_jsonl, path, SCHEMAS)
    assert events == [Event("Door", (None,), 2)]  # an explicit null is a value
    assert (side.malformed[0].location, side.malformed[0].field,
            side.malformed[0].reason) == ("line 1", "room", "missing required parameter 'room'")
    events, side = read_all(read_jsonl, path, SCHEMAS, strict_params=False)
    assert [e.params for e in events] == [(None,), (None,)] and not side.malformed


def test_ids_repeated_in_a_file_are_rejected(tmp_path: Path) -> None:
    path = jsonl(tmp_path, '{"type": "Door", "ts": 1, "id": "a", "room": 1}',
                 '{"type": "Door", "ts": 2, "id": "b", "room": 1}',
                 '{"type": "Door", "ts": 3, "id": "a", "room": 2}',
                 '{"type": "Door", "ts": 4, "id": 7, "room": 2}',
                 '{"type": "Door", "ts": 5, "id": "7", "room": 2}')  # (7 and "7" differ)
    events, side = read_all(read_jsonl, path, SCHEMAS)
    assert [e.id for e in events] == ["a", "b", 7, "7"]
    assert [(r.location, r.field) for r in side.malformed] == [("line 3", "id")]
    assert side.malformed[0].reason == "duplicate id 'a': an earlier record of this file has it"
    path = write(tmp_path, "e.csv", "type,ts,id,room\nDoor,1,x,1\nDoor,2,x,1\n")
    assert [r.location for r in read_all(read_csv, path, SCHEMAS)[1].malformed] == ["line 3"]
    path = _parquet(tmp_path, "e.parquet", type=["Door", "Door"], ts=[1, 2], id=[5, 5],
                    room=[1, 2])
    assert [r.location for r in read_all(read_parquet, path, SCHEMAS)[1].malformed] == ["row 1"]
    # each file is checked on its own; the check can be turned off
    assert len(read_all(read_jsonl, jsonl(tmp_path, '{"type": "Door", "ts": 1, "id": "a", '
                                                    '"room": 1}'), SCHEMAS)[0]) == 1
    assert len(read_all(read_parquet, path, SCHEMAS, unique_ids=False)[0]) == 2
