"""On Spark as in-process: evaluation errors reach the side output (kind ``error``) of the batch
replay and of the stream, with every match written; ``on_error="fail"`` stops the stream before
its micro-batch is committed. A stream whose saved state is behind Spark's commit log (a state
file lost) stops with what is missing instead of going on from an older state."""

import json
import os
from pathlib import Path

import pytest

from cepflow.events.event import SideChannel
from cepflow.inputs import read_events
from cepflow.loader import load
from cepflow.runtime.engine import Engine
from cepflow.spark import replay
from cepflow.spark.streaming import read_sink, stream_query

PATTERNS = """atomicEvent Reading(s: String, temp: Double)
atomicEvent Alarm(s: String)
complexEvent Hot(s: String) { as Reading(s, _) where sqrt(temp) > 3 -> Alarm(s) }
"""


def write_source(folder: Path, files: int = 3) -> None:
    folder.mkdir(parents=True)
    for f in range(files):
        rows = []
        for i in range(8):
            n = f * 8 + i
            s = f"s{n % 3}"
            row = ({"type": "Alarm", "ts": n, "s": s, "id": f"e{n}"} if i % 4 == 3 else
                   {"type": "Reading", "ts": n, "s": s, "temp": [16.0, -4.0, 25.0][n % 3],
                    "id": f"e{n}"})
            rows.append(json.dumps(row))
        path = folder / f"part-{f:03d}.jsonl"
        path.write_text("\n".join(rows) + "\n")
        os.utime(path, (1_700_000_000 + f, 1_700_000_000 + f))


def local(program, folder: Path) -> tuple[set, set]:
    side = SideChannel()
    eng = Engine(program, side=side)
    found = [m for e in read_events(folder, program.schemas, SideChannel())
             for m in eng.process(e)]
    return ({(m.type, tuple(str(r) for r in m.event_refs)) for m in found},
            {(r.source, r.location, r.field) for r in side.errors})


def test_replay_and_stream_write_error_records(spark, tmp_path: Path) -> None:
    program = load(PATTERNS)
    write_source(tmp_path / "src")
    matches, errors = local(program, tmp_path / "src")
    assert errors and matches

    out = tmp_path / "m.jsonl"
    run = replay(spark, tmp_path / "src", program, out)
    assert run.errors == len(errors) and run.stopped == []
    got = [json.loads(ln) for ln in out.with_suffix(".rejected.jsonl").read_text().splitlines()]
    assert {(r["source"], r["location"], r["field"]) for r in got if r["kind"] == "error"
            } == errors
    assert {(m["pattern"], tuple(m["events"])) for m in map(
        json.loads, out.read_text().splitlines())} == matches

    q = stream_query(spark, program, tmp_path / "src", tmp_path / "sink", tmp_path / "ckpt",
                     files_per_trigger=1, available_now=True)
    q.awaitTermination()
    m, r = read_sink(spark, tmp_path / "sink")
    assert {(x["pattern"], tuple(x["events"])) for x in m.collect()} == matches
    rows = r.collect()
    assert {(x["source"], x["location"], x["field"]) for x in rows if x["kind"] == "error"
            } == errors
    assert all(json.loads(x["record"])["type"] == "Reading" for x in rows)


def test_stream_on_error_fail_stops_before_committing(spark, tmp_path: Path) -> None:
    program = load(PATTERNS)
    write_source(tmp_path / "src")
    q = stream_query(spark, program, tmp_path / "src", tmp_path / "sink", tmp_path / "ckpt",
                     files_per_trigger=1, available_now=True, on_error="fail")
    with pytest.raises(Exception, match=r"micro-batch 0 stopped: pattern Hot, event e1 at 1"):
        q.awaitTermination()
    assert not (tmp_path / "ckpt" / "commits" / "0").exists()
    assert not list((tmp_path / "ckpt" / "cepflow-state").glob("meta-*.json"))


@pytest.mark.parametrize("lost", ["meta", "folder"])
def test_state_behind_the_commit_log_stops_the_query(spark, tmp_path: Path, lost: str) -> None:
    program = load(PATTERNS.replace("where sqrt(temp) > 3 ", ""))
    src, ckpt = tmp_path / "src", tmp_path / "ckpt"
    write_source(src, files=2)
    q = stream_query(spark, program, src, tmp_path / "sink", ckpt, files_per_trigger=1,
                     available_now=True)
    q.awaitTermination()
    state = ckpt / "cepflow-state"
    assert (ckpt / "commits" / "1").exists() and (state / "meta-000000001.json").exists()
    if lost == "meta":   # the newest state's marker: the state of batch 0 would be read
        (state / "meta-000000001.json").unlink()
        expected = r"Spark committed micro-batch 1, but the newest complete cepflow state .* " \
                   r"is micro-batch 0's — meta-000000001\.json or batch=000000001"
    else:                # its files
        import shutil

        shutil.rmtree(state / "batch=000000001")
        expected = r"the state files of micro-batch 1 .* are missing"
    more = src / "part-009.jsonl"
    more.write_text(json.dumps({"type": "Alarm", "ts": 100, "s": "s0", "id": "late"}) + "\n")
    os.utime(more, (1_700_000_100, 1_700_000_100))
    q = stream_query(spark, program, src, tmp_path / "sink", ckpt, files_per_trigger=1,
                     available_now=True)
    with pytest.raises(Exception, match=expected) as err:
        q.awaitTermination()
    assert "to recover, put back the files" in str(err.value)
    assert not (ckpt / "commits" / "2").exists()


def test_max_partial_matches_stops_replay_and_stream(spark, tmp_path: Path) -> None:
    """Each engine (a partition of the replay, a shard of the stream) stops when it holds more
    partial matches than the limit; the stream stops before the micro-batch is committed."""
    program = load("atomicEvent A(x: Integer)\natomicEvent B(x: Integer)\n"
                   "complexEvent P(x: Integer) { as A(x) -> B(x) }\n")
    src = tmp_path / "src"
    src.mkdir()
    (src / "part-000.jsonl").write_text("".join(
        json.dumps({"type": "A", "ts": i, "x": i, "id": f"a{i}"}) + "\n" for i in range(40)))
    run = replay(spark, src, program, tmp_path / "m.jsonl", max_partial_matches=5)
    assert run.stopped and all(kind == "PartialMatchLimit" for kind, _ in run.stopped)
    assert all("more than max_partial_matches 5" in m for _, m in run.stopped)
    assert replay(spark, src, program, tmp_path / "m2.jsonl", max_partial_matches=40).stopped == []
    q = stream_query(spark, program, src, tmp_path / "sink", tmp_path / "ckpt",
                     available_now=True, max_partial_matches=5)
    with pytest.raises(Exception, match=r"micro-batch 0 stopped: 6 partial matches held"):
        q.awaitTermination()
    assert not (tmp_path / "ckpt" / "commits" / "0").exists()
