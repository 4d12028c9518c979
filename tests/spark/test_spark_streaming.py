"""Structured Streaming = in-process engine on the same files; a query that fails mid-batch and
restarts from its checkpoint neither loses nor duplicates complex events; late and malformed
events reach the side output with their reasons."""

import json
import os
import random
from collections import Counter
from pathlib import Path

import pytest

from cepflow.events.event import SideChannel
from cepflow.inputs import read_events as read_local
from cepflow.loader import load
from cepflow.runtime.engine import Engine
from cepflow.spark.streaming import read_sink, stream_query

PATTERNS = """
atomicEvent A(k: Integer)
atomicEvent B(k: Integer)
atomicEvent C(k: Integer)
complexEvent G(k: Integer) { as A(k) -> B(k) -> C(k) }
complexEvent N(k: Integer) { as (A(k) -> NOT B(k) -> C(k))[5] }
complexEvent T(k: Integer) { as (A(k) -> NOT C(k))[4] }
complexEvent I(k: Integer) { as A(k) -> B(k) context immediate partition by k }
"""


def write_source(folder: Path, files: int = 4, per_file: int = 30, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)
    folder.mkdir(parents=True)
    ts, lines = 0, []
    for i in range(files * per_file):
        ts += rnd.randint(0, 2)
        lines.append(json.dumps({"type": rnd.choice("ABC"), "ts": ts, "k": rnd.randint(0, 3),
                                 "id": f"e{i}"}))
    for f in range(files):
        chunk = lines[f * per_file:(f + 1) * per_file]
        arrive(folder / f"part-{f:03d}.jsonl", "\n".join(chunk) + "\n", f)
    return lines


def arrive(path: Path, text: str, n: int) -> None:
    """A file as a producer delivers it: written, then given a later modification time than the
    ones before (the file source takes new files oldest first)."""
    path.write_text(text)
    os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))


def in_process(program, folder: Path) -> Counter:
    engine = Engine(program, strict_actions=False)
    out = [m for e in read_local(folder, program.schemas, SideChannel())
           for m in engine.process(e)]
    return Counter((m.type, float(m.ts), json.dumps(m.bindings_for_output(), sort_keys=True),
                    tuple(str(r) for r in m.event_refs)) for m in out)


def streamed(spark, sink: Path) -> Counter:
    m, _ = read_sink(spark, sink)
    return Counter((r["pattern"], r["ts"], json.dumps(json.loads(r["params"]), sort_keys=True),
                    tuple(r["events"])) for r in m.collect())


def run(spark, program, src: Path, base: Path, **kw) -> None:
    q = stream_query(spark, program, src, base / "sink", base / "ckpt", files_per_trigger=1,
                     available_now=True, **kw)
    q.awaitTermination()


def test_streaming_equals_in_process(spark, tmp_path: Path) -> None:
    program = load(PATTERNS)
    write_source(tmp_path / "src")
    run(spark, program, tmp_path / "src", tmp_path)
    expected = in_process(program, tmp_path / "src")
    assert streamed(spark, tmp_path / "sink") == expected
    assert {k[0] for k in expected} >= {"G", "T", "I"}


def test_streaming_column_path_equals_in_process(spark, tmp_path: Path) -> None:
    """A plain keyed sequence runs on the engine's column kernel in every micro-batch, with
    partial matches carried from batch to batch in the saved state."""
    program = load(PATTERNS.split("complexEvent N")[0])
    assert Engine(program, strict_actions=False).columnar
    write_source(tmp_path / "src")
    run(spark, program, tmp_path / "src", tmp_path)
    expected = in_process(program, tmp_path / "src")
    assert streamed(spark, tmp_path / "sink") == expected
    assert sum(expected.values()) >= 5


@pytest.mark.parametrize("fail_at", [1, 2])
def test_restart_after_failure_loses_and_duplicates_nothing(spark, tmp_path: Path,
                                                           fail_at: int) -> None:
    program = load(PATTERNS)
    write_source(tmp_path / "src")
    failed: list[int] = []

    def crash(batch_id: int) -> None:
        if batch_id == fail_at and not failed:
            failed.append(batch_id)
            raise RuntimeError("simulated crash after the matches of this batch were written")

    q = stream_query(spark, program, tmp_path / "src", tmp_path / "sink", tmp_path / "ckpt",
                     files_per_trigger=1, available_now=True, on_batch=crash)
    with pytest.raises(Exception, match="simulated crash"):
        q.awaitTermination()
    assert failed == [fail_at]
    run(spark, program, tmp_path / "src", tmp_path)  # restart from the checkpoint
    assert streamed(spark, tmp_path / "sink") == in_process(program, tmp_path / "src")


def test_late_and_malformed_events_reach_the_side_output(spark, tmp_path: Path) -> None:
    program = load(PATTERNS)
    src = tmp_path / "src"
    src.mkdir()
    arrive(src / "part-000.jsonl",
           '{"type":"A","ts":10,"k":1,"id":"a1"}\n{"type":"B","ts":12,"k":1,"id":"b1"}\n', 0)
    arrive(src / "part-001.jsonl",
           '{"type":"C","ts":5,"k":1,"id":"c-late"}\nnot json\n'
           '{"type":"C","ts":13,"k":1,"id":"c1"}\n', 1)
    # a micro-batch of late events only, then one between them and the released time: the
    # released time never goes back, so it is late too
    arrive(src / "part-002.jsonl", '{"type":"A","ts":3,"k":2,"id":"a-late"}\n', 2)
    arrive(src / "part-003.jsonl", '{"type":"A","ts":8,"k":2,"id":"a-late2"}\n', 3)
    run(spark, program, src, tmp_path)
    matches, rejected = read_sink(spark, tmp_path / "sink")
    got = {(Path(r["source"]).name, r["kind"], r["location"], r["reason"].split(":")[0])
           for r in rejected.collect()}
    # late events are reported where they were read, as in-process
    assert ("part-001.jsonl", "late", "line 1", "late by 7 ms") in got
    assert {("part-002.jsonl", "late", "line 1", "late by 10 ms"),
            ("part-003.jsonl", "late", "line 1", "late by 5 ms")} <= got
    assert ("part-001.jsonl", "malformed", "line 2, column 1", "invalid JSON") in got
    assert ("G", ("a1", "b1", "c1")) in {(r["pattern"], tuple(r["events"]))
                                         for r in matches.collect()}


def test_records_forwarded_from_a_stream_are_detected_like_files(spark, tmp_path: Path) -> None:
    """forward_json, as docs/spark.md ("Kafka") runs it on Kafka's ``value``, here over a text
    stream of the same JSON records: the folder it writes streams to the in-process matches,
    and a record that does not parse reaches the side output with its text."""
    from cepflow.spark.forward import RAW, forward_json

    program = load(PATTERNS)
    src = tmp_path / "src"
    write_source(src, files=3, per_file=25)
    with (src / "part-002.jsonl").open("a") as f:
        f.write("not json\n")
    records = spark.readStream.option("maxFilesPerTrigger", 1).text(str(src))
    forward_json(records, tmp_path / "inbox", tmp_path / "inbox-ckpt",
                 "type string, ts long, k long, id string", available_now=True
                 ).awaitTermination()
    run(spark, program, tmp_path / "inbox", tmp_path)
    expected = in_process(program, src)
    assert streamed(spark, tmp_path / "sink") == expected and expected
    _, rejected = read_sink(spark, tmp_path / "sink")
    assert [json.loads(r["record"]) for r in rejected.collect()] == [{RAW: "not json"}]


def _disordered_files(folder: Path, seed: int) -> None:
    """Files that arrive in name order; each file is sorted by ts, but later files carry events
    (often of new keys) older than earlier ones, and the first timestamps are <= 0."""
    rnd = random.Random(seed)
    folder.mkdir(parents=True)
    ts, n = -3, 0
    for f in range(5):
        lines = []
        for _ in range(12):
            ts += rnd.randint(0, 2)
            back = rnd.choice([0, 0, 0, 2, 5])  # some events trail the stream's front
            lines.append((ts - back, {"type": rnd.choice("ABC"), "k": rnd.randint(0, 5)}))
        lines.sort(key=lambda x: x[0])
        text = "".join(json.dumps({**rec, "ts": t, "id": f"e{n + i}"}) + "\n"
                       for i, (t, rec) in enumerate(lines))
        n += len(lines)
        arrive(folder / f"part-{f:03d}.jsonl", text, f)


#: window statements over the same events: a keyed sliding window feeding a pattern, a time
#: batch of all keys (tests/spark/test_spark_windows.py has more)
WINDOWS = """
complexEvent Cnt { from a = A window time(4) select a.k as k, count(*) as n group by a.k }
complexEvent Hot(k: Integer) { as Cnt(k, n) -> C(k) where n >= 1 }
complexEvent Tb { from b = B window time_batch(5) select count(*) as n }
"""


@pytest.mark.parametrize(("lateness", "seed", "windows"), [(0, 3, ""), (3, 4, ""),
                                                           (3, 4, WINDOWS)])
def test_out_of_order_files_follow_the_in_process_lateness_policy(spark, tmp_path: Path,
                                                                  lateness: int, seed: int,
                                                                  windows: str) -> None:
    """Regression: Spark's stateful operator used to drop rows behind its watermark (ts <= 0
    in the first batch, a new key's old events later) without a trace. Now every event is
    either detected on exactly as in-process (reorder with the same allowed lateness) or
    reported late — also by window statements, whose state goes from batch to batch."""
    from cepflow.inputs import reorder

    program = load(PATTERNS + windows)
    src = tmp_path / "src"
    _disordered_files(src, seed)
    run(spark, program, src, tmp_path, lateness_ms=lateness)
    side = SideChannel()
    # the stream as it arrives: the files one after the other (a folder read in-process is
    # merged by time instead), each event's file and line noted for the late reports
    arrived, where = [], {}
    for f in sorted(src.iterdir()):
        for line, e in enumerate(read_local(f, program.schemas), 1):
            arrived.append(e)
            where[e.id] = (f.name, f"line {line}")
    events = list(reorder(arrived, lateness, side))
    # the stream has not ended: events still held back for the lateness stay in the state
    front = max(e.ts for e in events) - lateness
    engine = Engine(program, strict_actions=False)
    expected = Counter((m.type, float(m.ts), json.dumps(m.bindings_for_output(), sort_keys=True),
                        tuple(str(r) for r in m.event_refs))
                       for e in events if e.ts <= front for m in engine.process(e))
    assert streamed(spark, tmp_path / "sink") == expected
    _, rejected = read_sink(spark, tmp_path / "sink")
    late = sorted((Path(r["source"]).name, r["location"]) for r in rejected.collect()
                  if r["kind"] == "late")
    assert late == sorted(where[r.record.id] for r in side.late)
    assert side.late, "the input must exercise lateness"
    assert any(e.ts <= 0 for e in events) and expected
    assert not windows or {"Cnt", "Hot", "Tb"} <= {k[0] for k in expected}
