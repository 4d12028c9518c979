"""Event numbers after a restore (docs/state-format.md): the second half of a stream read from
its own file — its reader numbers it from 0 again — gets the numbers of the whole stream, so
matches name the same events (without an ``id``, an event is named by its number) whether
the stream ran at once or was saved and restored in between; numbers that already go on
stay as they are. Every path: per event, the chain kernel, the column entry point."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cepflow.events.event import Event
from cepflow.inputs import read_events
from cepflow.loader import load
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import restore_state, save_state

CHAIN = """atomicEvent Start(b: String)
atomicEvent Stop(b: String)
complexEvent Gesture(b: String) { as Start(b) -> Stop(b) -> Stop(b) }
"""
WITH_NOT = CHAIN.replace("as Start(b) -> Stop(b) -> Stop(b)",
                         "as Start(b) -> NOT Start(b) -> Stop(b)")


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def rows(n: int, seed: int = 3) -> list[dict]:
    rnd = random.Random(seed)
    return [{"type": rnd.choice(["Start", "Stop", "Stop"]), "ts": i // 2,
             "b": f"body{rnd.randrange(6)}"} for i in range(n)]


def refs(found) -> list:
    return [(m.type, m.ts, tuple(m.event_refs)) for m in found]


@pytest.mark.parametrize("text", [CHAIN, WITH_NOT])
@pytest.mark.parametrize("batched", [False, True])
def test_second_half_from_its_own_file_keeps_the_stream_numbers(tmp_path: Path, text: str,
                                                                 batched: bool) -> None:
    prog = load(text)
    data = rows(400)

    def run(eng: Engine, path: Path) -> list:
        evs = list(read_events(path, prog.schemas))
        if batched:
            return refs(eng.run(evs, batch_size=50))
        return refs(m for e in evs for m in eng.process(e))

    whole = run(Engine(prog), write(tmp_path / "all.jsonl", data))
    # cut inside a match past the middle: it spans the restore
    cut = next(m[2][0] + 1 for m in whole if m[2][0] > 150)
    first = write(tmp_path / "first.jsonl", data[:cut])
    second = write(tmp_path / "second.jsonl", data[cut:])
    head_engine = Engine(prog)
    head = run(head_engine, first)
    saved = json.loads(json.dumps(save_state(head_engine)))
    tail = run(restore_state(Engine(prog), saved), second)
    assert any(min(m[2]) < cut for m in tail)
    assert head + tail == whole


def test_numbers_that_go_on_stay() -> None:
    """A caller who numbers the rest of the stream itself (or feeds it unnumbered) gets those
    numbers: nothing is shifted twice."""
    prog = load(CHAIN)
    evs = [Event("Start", ("a",), 0, seq=0), Event("Stop", ("a",), 1, seq=1)]
    eng = Engine(prog)
    for e in evs:
        eng.process(e)
    saved = save_state(eng)
    for seqs in ([2, 3], [-1, -1]):
        again = restore_state(Engine(prog), saved)
        out = [m for i, s in enumerate(seqs)
               for m in again.process(Event("Stop", ("a",), 2 + i, seq=s))]
        assert refs(out) == [("Gesture", 2, (0, 1, 2))]


def test_column_entry_point_after_a_restore() -> None:
    """Arrow batches (the Spark path) numbered from 0 again after a restore are shifted too."""
    from cepflow.spark.columns import ArrowRows, encode

    prog = load(CHAIN)
    eng = Engine(prog)
    for i, t in enumerate(["Start", "Stop"]):
        eng.process(Event(t, ("a",), i, seq=i))
    again = restore_state(Engine(prog), save_state(eng))
    assert again.columnar
    chunk = [Event("Stop", ("a",), 5, seq=0), Event("Start", ("a",), 6, seq=1)]
    table = again.process_columns(ArrowRows(encode(chunk, 1, [None] * 2, [None] * 2),
                                            {"Start": 1, "Stop": 1}, 1))
    assert refs(table.complex_events()) == [("Gesture", 5, (0, 1, 2))]
    assert again.host.counters.input == 4
