"""Writers: matches round-trip through JSON Lines and Parquet; the side channel is written too."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cepflow.events.model import ComplexEvent, Event, Rejected, SideChannel
from cepflow.outputs import write_jsonl, write_parquet, write_rejected_jsonl


def matches() -> list[ComplexEvent]:
    a = Event("A", (1,), 5, id="a1")
    b = Event("B", ("x",), 10, seq=3)
    inner = ComplexEvent("Inner", (1,), 10, {"v": 1}, [a, b])
    return [
        ComplexEvent("P", (1, "x"), 10, {"v": 1, "w": "ü", "_hidden": 0}, [a, b], match_id=0),
        ComplexEvent("Q", (), 12.5, {"n": None, "f": 0.5}, [inner, Event("C", (), 12.5, id=7)]),
    ]


def test_write_jsonl_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    assert write_jsonl(matches(), path) == 2
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows == [
        {"pattern": "P", "ts": 10, "params": {"v": 1, "w": "ü"}, "events": ["a1", "3"]},
        {"pattern": "Q", "ts": 12.5, "params": {"n": None, "f": 0.5},
         "events": ["a1", "3", "7"]},
    ]
    # (ids as strings, as the Parquet writer and Spark write them; to_dict keeps their type)
    assert [m.to_dict()["events"] for m in matches()] == [["a1", 3], ["a1", 3, 7]]


def test_write_jsonl_to_open_file() -> None:
    buf = io.StringIO()
    assert write_jsonl(iter(matches()[:1]), buf) == 1
    assert not buf.closed
    assert json.loads(buf.getvalue())["pattern"] == "P"
    assert write_jsonl([], io.StringIO()) == 0


def test_write_parquet_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "m.parquet"
    assert write_parquet(matches() * 3, path, batch_size=2) == 6
    table = pq.read_table(path)
    assert table.schema.field("ts").type == pa.float64()
    assert table.schema.field("events").type == pa.list_(pa.string())
    rows = table.to_pylist()
    assert len(rows) == 6
    assert rows[0] == {"pattern": "P", "ts": 10.0, "params": '{"v":1,"w":"ü"}',
                       "events": ["a1", "3"]}
    assert json.loads(rows[1]["params"]) == {"n": None, "f": 0.5}
    assert rows[1]["events"] == ["a1", "3", "7"]


def test_write_parquet_empty_keeps_schema(tmp_path: Path) -> None:
    path = tmp_path / "m.parquet"
    assert write_parquet([], path) == 0
    table = pq.read_table(path)
    assert table.num_rows == 0
    assert table.column_names == ["pattern", "ts", "params", "events"]


def test_write_rejected_jsonl(tmp_path: Path) -> None:
    side = SideChannel()
    side.malformed.append(Rejected("in.jsonl", "line 3", "bad", '{"x"', "x"))
    side.malformed.append(Rejected("in.bin", "row 1", "odd", b"\x00"))
    side.late.append(Rejected("<stream>", "position 4", "late by 2 ms (watermark 8)",
                              Event("A", (1,), 6, id="e"), "ts"))
    path = tmp_path / "rejected.jsonl"
    assert write_rejected_jsonl(side, path) == 3
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows[0] == {"kind": "malformed", "source": "in.jsonl", "location": "line 3",
                       "reason": "bad", "field": "x", "record": '{"x"'}
    assert rows[1]["record"] == repr(b"\x00")
    assert rows[2]["kind"] == "late"
    assert rows[2]["record"] == {"type": "A", "ts": 6, "id": "e", "params": [1]}

    buf = io.StringIO()
    assert write_rejected_jsonl(side.malformed, buf) == 2
    assert "kind" not in json.loads(buf.getvalue().splitlines()[0])
