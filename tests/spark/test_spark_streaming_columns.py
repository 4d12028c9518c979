"""Streaming ships only the event columns in use: a held-back event keeps the values of a column
that only it uses while later micro-batches narrow to their own columns; a saved state of the
first layout (version 1, with its engine JSON of version 2: partial matches as tokens) is read
and continued; a newer one is refused with a clear error."""

import json
import os
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cepflow.events.event import SideChannel
from cepflow.inputs import read_events as read_local
from cepflow.inputs import reorder
from cepflow.inputs.columnar import arity_of, event_fields
from cepflow.loader import load
from cepflow.runtime.engine import Engine
from cepflow.spark.streaming import STATE_DIR, _MicroBatch, read_sink, stream_query
from support import tokens_form

# W's text parameter (slot s1) is used by W alone; A and B use the integer slot i0 only
PATTERNS = """
atomicEvent A(k: Integer)
atomicEvent B(k: Integer)
atomicEvent W(k: Integer, note: String)
complexEvent P(k: Integer, n: String) { as A(k) -> W(k, n) -> B(k) }
"""
LATENESS = 5
FILES = [  # W (ts 20) is held back in batch 0 (watermark 15) and 1 (17), released in 2 (35)
    '{"type":"A","ts":10,"k":1,"id":"a1"}\n{"type":"W","ts":20,"k":1,"note":"x","id":"w1"}\n',
    '{"type":"B","ts":22,"k":1,"id":"b1"}\n',
    '{"type":"B","ts":40,"k":1,"id":"b2"}\n',
]


def _arrive(src: Path, n: int) -> None:
    path = src / f"part-{n:03d}.jsonl"
    path.write_text(FILES[n])
    os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))


def _run(spark, program, tmp_path: Path) -> None:
    q = stream_query(spark, program, tmp_path / "src", tmp_path / "sink", tmp_path / "ckpt",
                     files_per_trigger=1, available_now=True, lateness_ms=LATENESS)
    q.awaitTermination()


def _expected(program, src: Path) -> Counter:
    """In-process: the same lateness policy; events still held back produce nothing yet."""
    events = list(reorder(read_local(src, program.schemas, SideChannel()), LATENESS))
    front = max(e.ts for e in events) - LATENESS
    engine = Engine(program, strict_actions=False)
    return Counter((m.type, float(m.ts), json.dumps(m.bindings_for_output(), sort_keys=True),
                    tuple(str(r) for r in m.event_refs))
                   for e in events if e.ts <= front for m in engine.process(e))


def _meta(tmp_path: Path, n: int) -> dict:
    return json.loads((tmp_path / "ckpt" / STATE_DIR / f"meta-{n:09d}.json").read_text())


def _to_version_1(state: Path, arity: int) -> None:
    """Rewrite the newest saved state as the first layout wrote it: every layout column,
    ``part`` as the text engine/event, no ``held`` list in the meta, the engine JSON as engine
    state version 2 (any chain rows as tokens, docs/state-format.md "Rows")."""
    metas = sorted(state.glob("meta-*.json"))
    meta = json.loads(metas[-1].read_text())
    folder = state / f"batch={meta['state']:09d}"
    table = pq.read_table(folder)
    parts = table.column("part").to_pylist()
    engines = []
    for p, text in zip(parts, table.column("engine").to_pylist(), strict=True):
        if p == 0:
            saved = json.loads(text)
            assert saved["version"] == 3
            text = json.dumps({**tokens_form(saved), "version": 2})
        engines.append(text)
    cols = {"g": table.column("g"), "pid": table.column("pid"),
            "part": pa.array(["engine" if p == 0 else "event" for p in parts], pa.string()),
            "engine": pa.array(engines, pa.string())}
    for f in event_fields(arity):
        cols[f.name] = (table.column(f.name) if f.name in table.column_names
                        else pa.nulls(table.num_rows, f.type))
    for p in folder.iterdir():
        p.unlink()
    pq.write_table(pa.table(cols), folder / "part-00000.parquet")
    meta["version"] = 1
    del meta["held"]
    metas[-1].write_text(json.dumps(meta))


@pytest.mark.parametrize("upgrade", [False, True])
def test_held_event_keeps_a_column_only_it_uses(spark, tmp_path: Path, upgrade: bool) -> None:
    """Regression guard for the narrow rows: W's ``note`` (slot s1) is in no event of batches
    1 and 2, so it travels only because W is held back; losing it would give P's ``n`` null.
    ``upgrade``: the state after batch 0 is rewritten as version 1 before the stream goes on."""
    program = load(PATTERNS)
    src = tmp_path / "src"
    src.mkdir()
    _arrive(src, 0)
    if upgrade:
        _run(spark, program, tmp_path)
        assert _meta(tmp_path, 0)["held"] == ["tsi", "id_s", "i0", "s1"]
        _to_version_1(tmp_path / "ckpt" / STATE_DIR, arity_of(program.schemas))
    for n in range(1, len(FILES)):
        _arrive(src, n)
    _run(spark, program, tmp_path)

    expected = _expected(program, src)
    assert expected == Counter({("P", 22.0, '{"k": 1, "n": "x"}', ("a1", "w1", "b1")): 1})
    m, rejected = read_sink(spark, tmp_path / "sink")
    got = Counter((r["pattern"], r["ts"], json.dumps(json.loads(r["params"]), sort_keys=True),
                   tuple(r["events"])) for r in m.collect())
    assert got == expected
    assert rejected.count() == 0
    # batch 1 held W (and b1) back: s1 among the held columns; after batch 2 only b2 waits
    assert "s1" in _meta(tmp_path, 1)["held"]
    last = _meta(tmp_path, 2)
    assert last["version"] == 2 and "s1" not in last["held"] and "i0" in last["held"]


def test_newer_state_version_is_refused(tmp_path: Path) -> None:
    program = load(PATTERNS)
    from cepflow.spark.partitioning import plan

    runner = _MicroBatch(program, plan(program), arity_of(program.schemas), tmp_path / "sink",
                         tmp_path / "state", 0.0, {}, None)
    with pytest.raises(ValueError, match=r"stream state version 3 is newer than this cepflow "
                                         r"reads \(1 to 2\)"):
        runner._read_state(None, {"version": 3, "state": 4})  # type: ignore[arg-type]
