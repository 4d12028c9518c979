"""Writers: one encoding of matches and rejected records (docs/formats.md) in JSON Lines, CSV and
Parquet; every line is valid JSON; output files appear whole or not at all."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cepflow.events.event import ComplexEvent, Event, Rejected, SideChannel
from cepflow.outputs import (
    MatchFile,
    OutputError,
    dumps,
    match_batch,
    match_lines,
    output_format,
    write_csv,
    write_jsonl,
    write_parquet,
    write_rejected_jsonl,
    write_side_file,
)


def matches() -> list[ComplexEvent]:
    a = Event("A", (1,), 5, id="a1")
    b = Event("B", ("x",), 10, seq=3)
    inner = ComplexEvent("Inner", (1,), 10, {"v": 1}, [a, b])
    return [
        ComplexEvent("P", (1, "x"), 10, {"v": 1, "w": "ü", "_hidden": 0}, [a, b], match_id=0),
        ComplexEvent("Q", (), 12.5, {"n": None, "f": 0.5}, [inner, Event("C", (), 12.5, id=7)]),
    ]


EXPECTED = [
    {"pattern": "P", "ts": 10, "params": {"v": 1, "w": "ü"}, "events": ["a1", "3"]},
    # a time with a fraction of a millisecond is rounded up (never before the match was whole)
    {"pattern": "Q", "ts": 13, "params": {"n": None, "f": 0.5}, "events": ["a1", "3", "7"]},
]


def test_write_jsonl_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    assert write_jsonl(matches(), path) == 2
    text = path.read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines()]
    assert rows == EXPECTED
    assert all(type(r["ts"]) is int for r in rows)
    # the encoding is compact and keeps UTF-8 text, exactly as dumps writes a value
    assert text.splitlines()[0] == dumps(EXPECTED[0])


def test_write_jsonl_to_open_file() -> None:
    buf = io.StringIO()
    assert write_jsonl(iter(matches()[:1]), buf) == 1
    assert not buf.closed
    assert json.loads(buf.getvalue())["pattern"] == "P"
    assert write_jsonl([], io.StringIO()) == 0


def test_match_lines_equal_dumps_of_the_record() -> None:
    """The column-wise encoder (what Spark runners use) writes exactly the bytes dumps does."""
    odd = ComplexEvent("P\u2028\"q\\", (), 1, {"s": 'a"b\n\u00e9', "t": True, "big": 2**70,
                                              "f": 1e16, "neg": -0.0, "l": [1, "x"]},
                       [Event("A", (), 1, id='e"1\u00e9')])
    for m in [*matches(), odd]:
        assert match_lines(match_batch([m])).to_pylist() == [dumps(m.to_dict())]
    assert [m.to_dict() for m in matches()] == EXPECTED  # the record of the Python API too


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_nonfinite_values_are_valid_json(tmp_path: Path, value: float) -> None:
    m = ComplexEvent("P", (value,), 1, {"x": value, "ok": 1.5}, [Event("A", (value,), 1)])
    path = tmp_path / "m.jsonl"
    write_jsonl([m], path)
    line = path.read_text().strip()
    row = json.loads(line, parse_constant=lambda c: pytest.fail(f"bare {c} in {line}"))
    assert row["params"] == {"x": {"nan": "NaN", "inf": "Infinity"}.get(repr(value),
                                                                       "-Infinity"), "ok": 1.5}
    json.dumps(row, allow_nan=False)


def test_write_parquet_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "m.parquet"
    assert write_parquet(matches() * 3, path, batch_size=2) == 6
    table = pq.read_table(path)
    assert table.schema.field("ts").type == pa.int64()
    assert table.schema.field("events").type == pa.list_(pa.string())
    rows = table.to_pylist()
    assert len(rows) == 6
    assert rows[0] == {"pattern": "P", "ts": 10, "params": '{"v":1,"w":"ü"}',
                       "events": ["a1", "3"]}
    assert json.loads(rows[1]["params"]) == {"n": None, "f": 0.5}
    assert rows[1]["events"] == ["a1", "3", "7"]


def test_write_parquet_empty_keeps_schema(tmp_path: Path) -> None:
    path = tmp_path / "m.parquet"
    assert write_parquet([], path) == 0
    table = pq.read_table(path)
    assert table.num_rows == 0
    assert table.column_names == ["pattern", "ts", "params", "events"]


def test_write_csv(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    assert write_csv(matches(), path) == 2
    rows = list(csv.DictReader(path.open(encoding="utf-8", newline="")))
    assert [{"pattern": r["pattern"], "ts": int(r["ts"]), "params": json.loads(r["params"]),
             "events": json.loads(r["events"])} for r in rows] == EXPECTED


def test_write_rejected_jsonl(tmp_path: Path) -> None:
    side = SideChannel()
    side.malformed.append(Rejected("in.jsonl", "line 3", "bad", '{"x"', "x"))
    side.malformed.append(Rejected("in.bin", "row 1", "odd", b"\x00"))
    side.malformed.append(Rejected("in.parquet", "row 2", "not a finite number: NaN",
                                   {"type": "A", "x": float("nan")}, "x"))
    side.late.append(Rejected("in.jsonl", "line 4", "late by 2 ms", Event("A", (1,), 6, id="e"),
                              "ts"))
    path = tmp_path / "rejected.jsonl"
    assert write_rejected_jsonl(side, path) == 4
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert rows[0] == {"kind": "malformed", "source": "in.jsonl", "location": "line 3",
                       "reason": "bad", "field": "x", "record": '{"x"'}
    assert rows[1]["record"] == repr(b"\x00") and rows[1]["field"] is None
    # the record is text as read: a row's NaN shown as NaN, inside a string
    assert rows[2]["record"] == '{"type":"A","x":NaN}'
    assert rows[3]["kind"] == "late"
    assert json.loads(rows[3]["record"]) == {"type": "A", "ts": 6, "id": "e", "params": [1]}
    assert list(rows[0]) == ["kind", "source", "location", "reason", "field", "record"]

    buf = io.StringIO()
    assert write_rejected_jsonl([("late", side.late[0])], buf) == 1
    assert json.loads(buf.getvalue())["kind"] == "late"


def test_output_format_by_extension() -> None:
    names = ("a.jsonl", "a.JSON", "a.ndjson", "a.csv", "a.parquet", "a.pq", "-")
    assert [output_format(p) for p in names] == [*["jsonl"] * 3, "csv", "parquet", "parquet",
                                                 "jsonl"]
    with pytest.raises(OutputError, match=r"a\.txt: unsupported output format '\.txt'"):
        output_format("a.txt")
    with pytest.raises(OutputError, match="without an extension"):
        output_format("matches")


@pytest.mark.parametrize("name", ["m.jsonl", "m.csv", "m.parquet"])
def test_match_file_writes_its_format_whole_or_not_at_all(tmp_path: Path, name: str) -> None:
    path = tmp_path / "out" / name
    with MatchFile(path) as out:
        out.write_matches(matches())
        assert not path.exists()  # in place only when complete
    assert out.count == 2
    if name.endswith(".parquet"):
        assert pq.read_table(path).num_rows == 2
    else:
        assert len(path.read_text().splitlines()) == 2 + name.endswith(".csv")
    before = path.read_bytes()
    with pytest.raises(RuntimeError), MatchFile(path) as out:
        out.write_matches(matches()[:1])
        raise RuntimeError("the run failed")
    assert path.read_bytes() == before  # a failed run leaves the earlier file as it was
    assert sorted(p.name for p in path.parent.iterdir()) == [name]  # no staging file left


def test_match_file_refuses_what_it_cannot_write(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").mkdir()
    with pytest.raises(OutputError, match="is a folder"):
        MatchFile(tmp_path / "d.jsonl")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OutputError, match="cannot write"):
        MatchFile(blocker / "m.jsonl")


def test_match_file_to_stdout() -> None:
    buf = io.StringIO()
    with MatchFile("-", stdout=buf) as out:
        out.write_matches(matches())
    assert [json.loads(line) for line in buf.getvalue().splitlines()] == EXPECTED


def test_side_file_replaces_or_removes_an_earlier_one(tmp_path: Path) -> None:
    path = tmp_path / "m.rejected.jsonl"
    side = SideChannel()
    side.malformed.append(Rejected("in.jsonl", "line 1", "bad", "x"))
    assert write_side_file(side, path) == 1
    assert json.loads(path.read_text())["reason"] == "bad"
    assert write_side_file(SideChannel(), path) == 0
    assert not path.exists()  # a run that rejects nothing leaves no stale side file


@pytest.mark.parametrize("start,stop", [(0, 3), (1, 3), (2, 2), (1, 2)])
def test_jsonl_bytes_are_the_lines_whatever_the_stream(tmp_path: Path, start: int,
                                                        stop: int) -> None:
    """The writer puts down the lines' bytes as pyarrow holds them: the same text to a file, to
    a text stream over bytes (standard output) and to one without (StringIO), for a slice of a
    batch (its offset into the buffers) with text outside ASCII."""
    from cepflow.outputs.jsonl import JsonLinesWriter

    odd = ComplexEvent("P\u2028é", (), 1, {"s": "a\"b\n\u00e9"}, [Event("A", (), 1, id="é1")])
    batch = match_batch([*matches(), odd]).slice(start, stop - start)
    want = "".join(line + "\n" for line in match_lines(batch).to_pylist())
    path = tmp_path / "m.jsonl"
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("head\n")  # (text written before the bytes goes first)
        JsonLinesWriter(f).write_batch(batch)
    assert path.read_text(encoding="utf-8") == "head\n" + want
    raw = io.BytesIO()
    over_bytes = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
    JsonLinesWriter(over_bytes).write_batch(batch)
    over_bytes.flush()
    assert raw.getvalue().decode("utf-8") == want
    text = io.StringIO()
    JsonLinesWriter(text).write_batch(batch)
    assert text.getvalue() == want
