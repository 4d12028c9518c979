"""Without lateness a micro-batch parses its files once, in the Spark action that runs the
engines (no cached parsed batch, no summary job), also with several pattern groups and with late
and malformed records, whose side output stays exactly what it was."""

import json
import os
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import cepflow.spark.streaming as streaming
from cepflow.events.event import SideChannel
from cepflow.inputs import read_events as read_local
from cepflow.inputs import reorder
from cepflow.inputs.columnar import _slot_of, slot_columns
from cepflow.inputs.records import RecordConverter
from cepflow.loader import load
from cepflow.runtime.engine import Engine
from cepflow.spark.columns import encode
from cepflow.spark.partitioning import plan

# three groups: G and H keyed on k (H reads C's text slot), I one partition (every event)
PATTERNS = """
atomicEvent A(k: Integer)
atomicEvent B(k: Integer)
atomicEvent C(k: Integer, note: String)
complexEvent G(k: Integer) { as A(k) -> B(k) }
complexEvent H(k: Integer, n: String) { as B(k) -> C(k, n) }
complexEvent I(k: Integer) { as A(k) -> B(k) context immediate }
"""
FILES = [
    '{"type":"A","ts":10,"k":1,"id":"a1"}\n{"type":"B","ts":12,"k":1,"id":"b1"}\n'
    '{"type":"A","ts":12,"k":2,"id":"a2"}\n',
    # a late event (below 12, released by batch 0), a malformed line, on-time events
    '{"type":"C","ts":5,"k":1,"note":"old","id":"c-late"}\nnot json\n'
    '{"type":"B","ts":13,"k":2,"id":"b2"}\n{"type":"C","ts":14,"k":1,"note":"x","id":"c1"}\n',
]


def _marking(marks: Path, real, what: str):
    """``real`` (a factory of mapInArrow functions) whose functions leave one marker file per
    call (``what``) and per file path they are given, named by the Spark SQL execution (the
    action) their task runs in."""

    def factory(*args, **kwargs):
        run = real(*args, **kwargs)

        def marked(batches):
            from pyspark import TaskContext

            ctx = TaskContext.get()
            tag = (f"{ctx.getLocalProperty('spark.sql.execution.id')}-{ctx.stageId()}-"
                   f"{ctx.partitionId()}-{ctx.attemptNumber()}")

            def seen(bs):
                for b in bs:
                    if what == "parse":
                        for p in b.column("path").to_pylist():
                            (marks / f"parse@{Path(p).name}@{tag}").touch()
                    yield b

            if what != "parse":
                (marks / f"{what}@-@{tag}").touch()
            yield from run(seen(batches))

        return marked

    return factory


def test_one_job_per_micro_batch_with_groups_late_and_malformed(spark, tmp_path: Path,
                                                               monkeypatch) -> None:
    program = load(PATTERNS)
    groups = plan(program)
    assert len(groups) == 3 and sum(not g.partitioned for g in groups) == 1
    src = tmp_path / "src"
    src.mkdir()
    for n, text in enumerate(FILES):
        path = src / f"part-{n:03d}.jsonl"
        path.write_text(text)
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setattr(streaming, "file_parser",
                        _marking(marks, streaming.file_parser, "parse"))
    monkeypatch.setattr(streaming, "_shard_runner",
                        _marking(marks, streaming._shard_runner, "engines"))
    q = streaming.stream_query(spark, program, src, tmp_path / "sink", tmp_path / "ckpt",
                               files_per_trigger=1, available_now=True)
    q.awaitTermination()

    # each file parsed once, in the action whose tasks ran the engines: one per micro-batch
    found = [m.name.split("@") for m in marks.iterdir()]
    parsed = Counter(f for what, f, _ in found if what == "parse")
    assert parsed == {"part-000.jsonl": 1, "part-001.jsonl": 1}
    actions = {what: {tag.split("-")[0] for w, _, tag in found if w == what}
               for what in ("parse", "engines")}
    assert actions["parse"] == actions["engines"] and len(actions["parse"]) == 2

    side = SideChannel()
    # the stream as it arrived, one file per micro-batch (a folder read in-process is merged
    # by time instead)
    arrived = [e for f in sorted(src.iterdir()) for e in read_local(f, program.schemas, side)]
    events = list(reorder(arrived, 0, side))
    engine = Engine(program, strict_actions=False)
    expected = Counter((m.type, float(m.ts), json.dumps(m.bindings_for_output(), sort_keys=True),
                        tuple(str(r) for r in m.event_refs))
                       for e in events for m in engine.process(e))
    assert {k[0] for k in expected} == {"G", "H", "I"}
    matches, rejected = streaming.read_sink(spark, tmp_path / "sink")
    assert Counter((r["pattern"], r["ts"], json.dumps(json.loads(r["params"]), sort_keys=True),
                    tuple(r["events"])) for r in matches.collect()) == expected
    late_file = str(src / "part-001.jsonl")
    columns = streaming.SIDE_SCHEMA.names
    assert sorted(tuple(r[c] for c in columns) for r in rejected.collect()) == sorted([
        ("late", late_file, "line 1",
         "late by 7 ms: events up to 12 were already released (watermark 12)", "ts",
         '{"type":"C","ts":5,"id":"c-late","params":[1,"old"]}'),
        ("malformed", late_file, "line 2, column 1", side.malformed[0].reason, None,
         "not json"),
    ])
    assert side.malformed[0].reason.startswith("invalid JSON")
    meta = json.loads((tmp_path / "ckpt" / streaming.STATE_DIR / "meta-000000001.json")
                      .read_text())
    assert (meta["max_ts"], meta["released"], meta["held"]) == (14, 14, [])


@pytest.mark.parametrize("value", ["t", 3, 2.5, True, -(2**63)])
def test_slot_columns_hold_every_slot_a_reader_fills(value) -> None:
    """The columns shipped without a counting job: every slot either reader can put a value of
    a declared parameter in is among :func:`slot_columns` of its type."""
    program = load("atomicEvent X(a: Body, s: String, i: Integer, f: Double, b: Boolean)")
    schema = program.schemas["X"]
    allowed = slot_columns(program.schemas, {"X"}, 5)
    assert allowed == {"s0", "i0", "f0", "b0", "s1", "i2", "f3", "b4"}
    assert slot_columns(program.schemas, None, 2) == slot_columns(program.schemas, {"Y"}, 2)
    convert = RecordConverter(program.schemas)
    for i, spec in enumerate(schema.params):
        try:
            event = convert({"type": "X", "ts": 1, spec.name: value})
        except ValueError:
            continue  # the type rejects the value
        row = encode([event], 5, [None], [None])
        filled = {n for n in row.schema.names if n[1:].isdigit() and row.column(n)[0].is_valid}
        assert filled <= allowed
        slot = _slot_of(spec, pa.array([value]).type, True)
        assert slot is None or f"{slot}{i}" in allowed
