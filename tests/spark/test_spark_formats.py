"""One output schema on every engine (issue 16): the in-process job, Spark's batch replay and
Spark streaming read a folder of files with interleaving time ranges the same way — merged by
time — and write identical lines, matches and rejected records, through the one encoding of
cepflow.outputs.records; a NaN record is rejected and the stream goes on past it."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cepflow.loader import load
from cepflow.replay import replay
from cepflow.spark import PartitionWarning
from cepflow.spark.replay import replay as spark_replay
from cepflow.spark.streaming import stream_query

PATTERNS = """
atomicEvent A(k: Integer, v: Double)
atomicEvent B(k: Integer, note: String)
complexEvent G(k: Integer) { as A(k, _) -> B(k, _) }
complexEvent W(k: Integer) { as (A(k, _) -> NOT B(k, _))[3] }
"""


def arrive(path: Path, n: int) -> None:
    """Give ``path`` a later modification time than the files before (the stream's order)."""
    os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))


def source(folder: Path) -> None:
    """JSON Lines, CSV and Parquet files whose time ranges interleave, with events with and
    without ids, a fractional timestamp (a timer match at a fraction of a millisecond) and
    records every reader rejects."""
    folder.mkdir()
    (folder / "a.jsonl").write_text(
        '{"type":"A","ts":1,"k":1,"v":0.5}\n'
        '{"type":"B","ts":4,"k":2,"note":"\u00e9\\"q"}\n'
        '{"type":"A","ts":9.5,"k":5,"v":2}\n'
        '{"type":"B","ts":20,"k":9,"note":"end"}\n')
    (folder / "b.jsonl").write_text(
        '{"type":"A","ts":2,"k":2,"v":1,"id":"x1"}\n'
        '{"type":"A","ts":3,"k":3,"v":NaN}\n'           # not a finite number
        '{"type":"C","ts":3}\n'                          # unknown event type
        '{"type":"B","ts":5,"k":1}\n'                    # a declared field left out
        '{"type":"B","ts":6,"k":1,"note":"n","id":"x1"}\n'  # an id repeated in the file
        'not json\n'
        '{"type":"B","ts":7,"k":1,"note":"k1"}\n')
    (folder / "c.csv").write_text("type,ts,k,v\nA,3,4,1.5\nA,4,6,inf\nA,8.25,4,-2\n")
    arrive(folder / "a.jsonl", 0)
    arrive(folder / "b.jsonl", 1)
    arrive(folder / "c.csv", 2)
    pq.write_table(pa.table({"type": ["B", "B"], "ts": [6, 12], "k": [7, 4],
                             "note": ["\u2028", None]}), folder / "d.parquet")
    pq.write_table(pa.table({"type": ["A", "A"], "ts": [5, 6], "k": [7, 7],
                             "v": [float("nan"), 1.0]}), folder / "e.parquet")
    arrive(folder / "d.parquet", 3)
    arrive(folder / "e.parquet", 4)


def lines(*files: Path) -> list[str]:
    return sorted(ln for f in files if f.exists() for ln in f.read_text().splitlines())


def streamed(sink: Path, kind: str) -> list[str]:
    return lines(*sorted((sink / kind).glob("batch=*/part-*")))


def test_every_engine_writes_the_same_lines(spark, tmp_path: Path) -> None:
    program = load(PATTERNS)
    src = tmp_path / "in"
    source(src)
    local = replay(src, program, tmp_path / "local.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PartitionWarning)
        batch = spark_replay(spark, src, program, tmp_path / "spark.jsonl")
    stream_query(spark, program, src, tmp_path / "sink", tmp_path / "ckpt",
                 available_now=True).awaitTermination()

    matches = lines(tmp_path / "local.jsonl")
    assert matches == lines(tmp_path / "spark.jsonl") == streamed(tmp_path / "sink", "matches")
    rejected = lines(tmp_path / "local.rejected.jsonl")
    assert rejected == lines(tmp_path / "spark.rejected.jsonl") == streamed(
        tmp_path / "sink", "rejected")
    assert (local.events, local.complex_events, local.rejected) == (
        batch.events, batch.complex_events, batch.rejected) == (11, 8, 7)
    assert local.by_pattern == batch.by_pattern == {"G": 3, "W": 5}

    # what the lines say: files merged by time (k=2: a.jsonl's B after b.jsonl's A), names
    # NAME:N, ts integer ms (a timer at 9.5 + 3 or 8.25 + 3 rounded up), params an object
    got = [json.loads(ln) for ln in matches]
    assert {"pattern": "G", "ts": 4, "params": {"k": 2}, "events": ["x1", "a.jsonl:1"]} in got
    assert {"pattern": "W", "ts": 13, "params": {"k": 5}, "events": ["a.jsonl:2"]} in got
    assert {"pattern": "W", "ts": 12, "params": {"k": 4}, "events": ["c.csv:1"]} in got
    assert {"pattern": "G", "ts": 12, "params": {"k": 4},
            "events": ["c.csv:0", "d.parquet:1"]} in got
    assert all(type(m["ts"]) is int for m in got)
    reasons = {(Path(r["source"]).name, r["location"]): r["reason"]
               for r in map(json.loads, rejected)}
    assert reasons == {
        ("b.jsonl", "line 2"): "not a finite number: NaN",
        ("b.jsonl", "line 3"): "unknown event type 'C'",
        ("b.jsonl", "line 4"): "missing required parameter 'note'",
        ("b.jsonl", "line 5"): "duplicate id 'x1': an earlier record of this file has it",
        ("b.jsonl", "line 6, column 1"): "invalid JSON: Expecting value",
        ("c.csv", "line 3"): "not a finite number: inf",
        ("e.parquet", "row 0"): "not a finite number: NaN"}
    for ln in [*matches, *rejected]:
        json.loads(ln, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))

    # the stream goes on past the micro-batch that held a NaN record: a later file is detected
    (src / "f.jsonl").write_text('{"type":"A","ts":30,"k":8,"v":1}\n'
                                 '{"type":"A","ts":31,"k":8,"v":NaN}\n'
                                 '{"type":"B","ts":32,"k":8,"note":"on"}\n')
    arrive(src / "f.jsonl", 5)
    stream_query(spark, program, src, tmp_path / "sink", tmp_path / "ckpt",
                 available_now=True).awaitTermination()
    replay(src, program, tmp_path / "again.jsonl")
    assert streamed(tmp_path / "sink", "matches") == lines(tmp_path / "again.jsonl")
    assert streamed(tmp_path / "sink", "rejected") == lines(tmp_path / "again.rejected.jsonl")
    assert any('"events":["f.jsonl:0","f.jsonl:1"]' in ln
               for ln in streamed(tmp_path / "sink", "matches"))
