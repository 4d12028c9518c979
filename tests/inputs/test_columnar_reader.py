"""The columnar fast path (cepflow.inputs.columnar.read_columns) decides a file exactly as the
located reader would, or not at all: when it answers, the reader accepts every record and the
events are the same (values with their Python types, ids, timestamps, order); whenever the
reader rejects a record (or the columns cannot tell), it returns None."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepflow.events.event import EventType, ParamSpec, SideChannel
from cepflow.inputs import read_jsonl, read_parquet
from cepflow.inputs.columnar import arity_of, decode, read_columns

SCHEMAS = {
    "Temp": EventType("Temp", (ParamSpec("sensor", "str", "String"),
                               ParamSpec("value", "float", "Double"),
                               ParamSpec("count", "int", "Integer"),
                               ParamSpec("ok", "bool", "Boolean"))),
    "Door": EventType("Door", (ParamSpec("room", "any", "Room"),)),
    "Move": EventType("Move", (ParamSpec("room", "any", "Room"), ParamSpec("count", "int"))),
}
ARITY = arity_of(SCHEMAS)
ARITIES = {t: len(s.params) for t, s in SCHEMAS.items()}
FIXTURE = [HealthCheck.function_scoped_fixture]


def exact(events: list[Any]) -> list[str]:
    """Events with every value's Python type visible (1, 1.0 and True differ)."""
    return [repr((e.type, [(type(v).__name__, v) for v in e.params],
                  type(e.ts).__name__, e.ts, type(e.id).__name__, e.id, e.seq)) for e in events]


def compare(content: bytes, suffix: str, tmp_path: Path, **opts: Any) -> bool:
    """Check the contract on one file; True if the fast path answered."""
    path = tmp_path / f"f{suffix}"
    path.write_bytes(content)
    side = SideChannel()
    reader = read_parquet if suffix == ".parquet" else read_jsonl
    want = list(reader(path, SCHEMAS, side, **opts))
    table = read_columns(content, suffix, SCHEMAS, ARITY, str(path), **opts)
    if table is None:
        return False
    assert not side.malformed, f"fast path accepted a file the reader rejects: {side.malformed}"
    got = [e for b in table.to_batches() for e in decode(b, ARITIES, ARITY)]
    assert exact(got) == exact(want)
    assert table.column("file").to_pylist() == [str(path)] * len(want)
    return True


def lines(*records: Any) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records).encode()


GOOD = {"type": "Temp", "ts": 5, "id": "t1", "sensor": "s", "value": 1.5, "count": 2, "ok": True}


@pytest.mark.parametrize("content", [
    lines(GOOD, {**GOOD, "ts": 6, "value": 3, "id": "t2"}, {"type": "Door", "ts": 7, "room": 3}),
    lines({"type": "Door", "ts": 1, "id": 7}, {"type": "Door", "ts": 1, "id": -2}),
    lines({"type": "Door", "ts": 1, "room": "r1"}, {"type": "Door", "ts": 2, "room": "r2"}),
    lines({"type": "Door", "ts": 1, "room": True}, {"type": "Door", "ts": 2}),
    lines({"type": "Temp", "ts": -3, "sensor": "\u00e9\U0001f600", "value": 1e300}),
    b"\xef\xbb\xbf" + lines(GOOD),
    lines(GOOD).replace(b"\n", b"\r\n"),
    lines({"type": "Temp", "ts": 1, "value": 9007199254740993}),
    b"",
])
def test_fast_path_answers_and_agrees(tmp_path: Path, content: bytes) -> None:
    # (some records leave declared parameters out: accepted as nulls only when asked to)
    assert compare(content, ".jsonl", tmp_path, strict_params=False)
    compare(content, ".jsonl", tmp_path)  # the default: it agrees whenever it answers


@pytest.mark.parametrize("content", [
    lines(GOOD, "not json"),
    lines(GOOD, ""),  # a blank line (the reader skips it; the fast path leaves it to it)
    lines({**GOOD, "ts": "2024-01-01T00:00:00Z"}),
    lines({**GOOD, "ts": 1.5}),
    lines({**GOOD, "count": 1.0}),
    lines({**GOOD, "count": "1"}),
    lines({**GOOD, "ok": 1}),
    lines({**GOOD, "sensor": None, "extra": 1}),
    lines({"type": "Door", "ts": 1, "room": 1}, {"type": "Door", "ts": 2, "room": 1.5}),
    lines({"type": "Door", "ts": 1, "room": 1}, {"type": "Door", "ts": 2, "room": "x"}),
    lines({"type": "Door", "ts": 1, "room": [1]}),
    lines({"type": "Door", "ts": 1, "count": None}),
    lines({"type": "Nope", "ts": 1}),
    lines({"ts": 1}),
    lines({**GOOD, "id": True}),
    lines({**GOOD, "id": 1.5}),
    b'{"type":"Door","ts":1,"room":1,"room":2}\n',
    b'{"type":"Door","ts":1}{"type":"Door","ts":2}\n',
    b'{"type":"Door",\n"ts":1}\n',
    b'{"type":"Door","ts":1,"room":"\\ud800"}\n',
    b'{"type":"Door","ts":1,"room":NaN}\n',
    '{"type":"Door","ts":1,"room":"\xff"}\n'.encode("latin-1"),
    b'{"type":"Temp","ts":1,"value":1e400}\n',
    ('{"type":"Temp","ts":1,"count":' + "9" * 30 + "}\n").encode(),
    ('{"type":"Temp","ts":' + "9" * 30 + "}\n").encode(),
    lines({"type": "Door", "ts": 1, "room": 1, "id": "a"},
          {"type": "Door", "ts": 2, "room": 2, "id": "a"}),  # the reader rejects the second
    lines({"type": "Door", "ts": 1, "room": 1, "id": 3}, {"type": "Door", "ts": 2, "room": 2,
                                                          "id": 3}),
    lines({**GOOD, "value": float("nan")}),  # (json.dumps writes NaN, pyarrow reads it)
])
def test_fast_path_leaves_the_hard_cases_to_the_reader(tmp_path: Path, content: bytes) -> None:
    assert not compare(content, ".jsonl", tmp_path)


def test_null_and_missing_fields_are_told_apart(tmp_path: Path) -> None:
    """Arrow has one null for a JSON null and a missing field; an unknown field is a rejection
    only if present, so a file with ``null`` in it and unknown columns takes the reader."""
    assert compare(lines({"type": "Door", "ts": 1, "room": 1},
                         {"type": "Move", "ts": 2, "room": 1, "count": 3}), ".jsonl", tmp_path)
    assert not compare(lines({"type": "Door", "ts": 1, "room": 1, "count": None},
                             {"type": "Move", "ts": 2, "room": 1, "count": 3}), ".jsonl",
                       tmp_path)
    assert compare(lines({"type": "Door", "ts": 1, "room": None}), ".jsonl", tmp_path,
                   strict_params=False)
    # by default a left-out parameter is a rejection: a null may be one, so the reader decides
    assert not compare(lines({"type": "Door", "ts": 1, "room": None}), ".jsonl", tmp_path)
    assert not compare(lines({"type": "Temp", "ts": 1}), ".jsonl", tmp_path, strict_params=True)
    assert compare(lines({**GOOD, "extra": 1}), ".jsonl", tmp_path, unknown_fields="ignore")


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=4),
                    st.sampled_from([1.0, -0.0, 0, "1", "", "\u2028", "\\", '"']))
RECORDS = st.fixed_dictionaries(
    {"type": st.sampled_from(["Temp", "Door", "Move", "Nope", "", 3])},
    optional={"ts": st.one_of(st.integers(-2**40, 2**40), st.floats(-1e6, 1e6),
                              st.just("2024-01-01")),
              "id": st.one_of(st.text(max_size=3), st.integers(0, 9), st.just(2.0)),
              "sensor": SCALARS, "value": SCALARS, "count": SCALARS, "ok": SCALARS,
              "room": SCALARS, "extra": SCALARS})


@settings(max_examples=150, deadline=None, suppress_health_check=FIXTURE)
@given(st.lists(st.one_of(RECORDS, st.sampled_from(["", "[]", "{}", "null", "{"])),
                max_size=12), st.booleans())
def test_jsonl_property(tmp_path: Path, records: list[Any], strict: bool) -> None:
    compare(lines(*records), ".jsonl", tmp_path, strict_params=strict)


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE)
@given(st.lists(st.fixed_dictionaries({"type": st.sampled_from(["Temp", "Door"]),
                                       "ts": st.integers(0, 10**6)},
                                      optional={"id": st.text(max_size=3),
                                                "room": st.integers(0, 3),
                                                "sensor": st.text(max_size=3)}),
                min_size=1, max_size=12))
def test_jsonl_property_mostly_fast(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    """Typical files: the fast path answers whenever the reader accepts everything."""
    side = SideChannel()
    path = tmp_path / "g.jsonl"
    path.write_bytes(lines(*records))
    accepted_all = len(list(read_jsonl(path, SCHEMAS, side))) == len(records)
    answered = compare(lines(*records), ".jsonl", tmp_path)
    no_null_ambiguity = all(set(r) - {"type", "ts", "id"} <= set(SCHEMAS[r["type"]].param_names)
                            for r in records)
    if accepted_all and no_null_ambiguity:
        assert answered


def parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


@pytest.mark.parametrize(("table", "fast"), [
    (pa.table({"type": ["Door", "Door"], "ts": [1, 2], "room": ["a", "b"]}), True),
    (pa.table({"type": ["Door"], "ts": [1.5], "room": [2.5], "id": [3.0]}), True),
    (pa.table({"type": ["Door"], "ts": pa.array([1500], pa.timestamp("ms")), "room": [1]}), True),
    (pa.table({"type": ["Door"], "ts": pa.array([1], pa.timestamp("s")),
               "room": pa.array([1], pa.int32())}), True),
    (pa.table({"type": ["Temp"], "ts": [1], "sensor": ["s"], "value": pa.array([1], pa.int8()),
               "count": [3], "ok": [False]}), True),
    (pa.table({"type": ["Door"], "ts": [1], "count": [None]}), False),
    (pa.table({"type": ["Temp"], "ts": [1], "count": [1.0]}), False),
    (pa.table({"type": ["Door"], "ts": [float("nan")]}), False),
    (pa.table({"type": ["Door"], "ts": pa.array([1500], pa.timestamp("us"))}), False),
    (pa.table({"type": ["Door"], "ts": [1], "id": [1.5]}), False),
    (pa.table({"type": ["Door"], "ts": [1], "params": [[1]]}), False),
    (pa.table({"type": ["Door"], "ts": [1], "room": [float("inf")]}), False),
    (pa.table({"type": ["Temp"], "ts": [1], "sensor": ["s"], "value": [float("nan")],
               "count": [3], "ok": [False]}), False),
    (pa.table({"type": ["Door", "Door"], "ts": [1, 2], "room": [1, 2], "id": [5, 5]}), False),
])
def test_parquet(tmp_path: Path, table: pa.Table, fast: bool) -> None:
    assert compare(parquet(table), ".parquet", tmp_path) == fast


def test_csv_takes_the_reader() -> None:
    assert read_columns(b"type,ts\nDoor,1\n", ".csv", SCHEMAS, ARITY, "x.csv") is None
