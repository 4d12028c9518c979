"""Saved engine state with data-window statements (``cepflow.engine-state`` version 2 and later).

The property: run the first events, save, go through JSON text, restore into a fresh engine,
run the rest — the outputs are exactly those of one uninterrupted run (same types, times,
parameters with their exact values and types, contributing events), for every window kind,
per-group and per-event statements, ``having``, several group-by expressions, statements over
pattern output and patterns over statement output, with several save points in one run.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from windows_helpers import schema, statement

from cepflow.events.event import Event
from cepflow.loader import load
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import FORMAT, VERSION, StateError, restore_state, save_state
from cepflow.windows import WindowRunner, WindowSpec
from cepflow.windows.snapshot import load_runner, save_runner

HEAD = """
atomicEvent R(k: String, j: String, v: any)
atomicEvent S(k: String)
"""

WINDOWS = {
    "time": "window time(5)",
    "length": "window length(3)",
    "length per group": "window length(2) per group",
    "time_batch": "window time_batch(4)",
    "length_batch": "window length_batch(3)",
    "length_batch per group": "window length_batch(2) per group",
}

#: (select … [group by …] [having …], needs group by for a per-group window)
SELECTS = [
    # per group: every aggregate, one group-by field
    "select r.k as k, count(*) as n, count(r.v) as c, sum(r.v) as s, avg(r.v) as a, "
    "min(r.v) as lo, max(r.v) as hi group by r.k",
    # per group, two group-by fields (tuple keys), having
    "select r.k as k, r.j as j, sum(r.v) as s group by r.k, r.j having count(*) > 1",
    # per event, grouped (v outside group by)
    "select r.k as k, r.v as v, sum(r.v) as s, max(r.v) as hi group by r.k",
    # one group (fully aggregated), no group by
    "select count(*) as n, sum(r.v) as s, min(r.v) as lo",
    # per event, no group by
    "select r.v as v, avg(r.v) as a",
]

#: values whose running float sums drift (0.1 + 0.2 - 0.1 != 0.2), ints, and nulls
VALUES = st.sampled_from([1, 2, 5, 0.1, 0.2, 0.3, 0.7, 2.5, None])
STREAMS = st.lists(st.tuples(st.sampled_from("RRRRS"), st.sampled_from("abc"),
                             st.sampled_from("xy"), VALUES, st.integers(0, 3)),
                   min_size=1, max_size=40)
CUTS = st.lists(st.integers(0, 40), max_size=3)


def make_events(spec: list[tuple[Any, ...]]) -> list[Event]:
    ts, out = 0, []
    for i, (t, k, j, v, dt) in enumerate(spec):
        ts += dt
        out.append(Event(t, (k, j, v) if t == "R" else (k,), ts, id=f"e{i}"))
    return out


def fresh(events: list[Event]) -> list[Event]:
    """New event objects (the engine numbers the events it sees)."""
    return [Event(e.type, e.params, e.ts, e.id) for e in events]


def outputs(out: list) -> list[tuple[Any, ...]]:
    """Exact outputs: repr keeps 3 apart from 3.0 and shows every bit of a float."""
    return [(m.type, repr(m.ts), repr(m.params), tuple(str(r) for r in m.event_refs))
            for m in out]


def uninterrupted(program, events: list[Event], close: bool) -> list[tuple[Any, ...]]:
    engine = Engine(program)
    out = [m for e in fresh(events) for m in engine.process(e)]
    return outputs(out + engine.finish(close_windows=close))


def interrupted(program, events: list[Event], cuts: list[int], close: bool
                ) -> list[tuple[Any, ...]]:
    """The same run, saved to JSON text and restored into a fresh engine at every cut."""
    engine = Engine(program)
    out: list = []
    done = 0
    for cut in sorted({min(c, len(events)) for c in cuts}):
        out += [m for e in fresh(events[done:cut]) for m in engine.process(e)]
        text = json.dumps(save_state(engine), allow_nan=False)
        engine = restore_state(Engine(program), json.loads(text))
        done = cut
    out += [m for e in fresh(events[done:]) for m in engine.process(e)]
    return outputs(out + engine.finish(close_windows=close))


def window_program(window: str, select: str):
    return load(HEAD + f'complexEvent X {{ from r = R where r.j != "z" {window} {select} }}')


@pytest.mark.parametrize("kind", sorted(WINDOWS))
@settings(max_examples=150, deadline=None)
@given(select=st.sampled_from(SELECTS), spec=STREAMS, cuts=CUTS, close=st.booleans())
@example(select=SELECTS[0], spec=[("R", "a", "x", 0.1, 0), ("R", "a", "x", 0.2, 1),
                                  ("R", "a", "x", 0.3, 1), ("R", "a", "x", 0.7, 4),
                                  ("R", "a", "x", 1, 3)], cuts=[3], close=False)
def test_restored_windows_continue_like_an_uninterrupted_run(
        kind: str, select: str, spec: list, cuts: list[int], close: bool) -> None:
    if "per group" in kind and "group by" not in select:
        select += " group by r.k"
    program = window_program(WINDOWS[kind], select)
    events = make_events(spec)
    assert interrupted(program, events, cuts, close) == uninterrupted(program, events, close)


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(SELECTS[:2]), st.integers(-7, 7), STREAMS, CUTS, st.booleans())
def test_time_batch_with_a_reference_point(select: str, reference: int, spec: list,
                                           cuts: list[int], close: bool) -> None:
    """The languages have no reference point; the API has (the program is built with it)."""
    base = window_program(WINDOWS["time_batch"], select)
    stmt = dataclasses.replace(base.windows[0], window=WindowSpec.time_batch(4, reference))
    program = dataclasses.replace(base, windows=[stmt])
    events = make_events(spec)
    assert interrupted(program, events, cuts, close) == uninterrupted(program, events, close)


HIGHER_ORDER = HEAD + """
complexEvent P(k: String) { as (R(k, _, _) -> S(k))[6] }
complexEvent W { from p = P window time(5) select p.k as k, count(*) as n group by p.k }
complexEvent Q(k: String) { as W(k, n) -> S(k) where n > 1 }
complexEvent B { from w = W window time_batch(7) select w.k as k, max(w.n) as top group by w.k }
"""


@settings(max_examples=150, deadline=None)
@given(STREAMS, CUTS, st.booleans())
def test_statements_over_patterns_and_patterns_over_statements(spec: list, cuts: list[int],
                                                               close: bool) -> None:
    program = load(HIGHER_ORDER)
    events = make_events(spec)
    assert interrupted(program, events, cuts, close) == uninterrupted(program, events, close)


# -- explicit examples ---------------------------------------------------------------------------
def test_a_running_float_sum_is_kept_to_the_last_bit() -> None:
    """After 0.1, 0.2, 0.3 and the expiry of 0.1 the running sum is 0.5000000000000001, not
    the 0.5 a sum of the remaining values gives: the state keeps the running sum."""
    program = window_program("window time(5)", "select sum(r.v) as s")
    events = make_events([("R", "a", "x", 0.1, 0), ("R", "a", "x", 0.2, 1),
                          ("R", "a", "x", 0.3, 1), ("R", "a", "x", 0.7, 4)])
    whole = uninterrupted(program, events, False)
    assert whole[3][2] == repr((0.1 + 0.2 + 0.3 - 0.1,)) != repr((0.5,))
    assert interrupted(program, events, [3], False) == whole
    engine = Engine(program)
    for e in fresh(events[:3]):
        engine.process(e)
    engine.advance_to(5)  # 0.1 leaves
    saved = save_state(engine)
    assert saved["format"] == FORMAT and saved["version"] == VERSION == 3
    (group,) = saved["windows"]["X"]["groups"]
    assert group[0] == [] and group[1] == 2 and group[4] == 0.1 + 0.2 + 0.3 - 0.1


def test_a_time_batch_after_an_empty_close_waits_for_the_next_event() -> None:
    """Batch [0, 4) posts at 4, the empty batch [4, 8) posts the count-0 row at 8, then no
    boundary is scheduled once the close at 12 posts nothing (k is null) until an event at 13
    schedules 16 (aligned to 0)."""
    program = window_program("window time_batch(4)", "select r.k as k, count(*) as n group by r.k")
    events = make_events([("R", "a", "x", 1, 0), ("S", "a", "x", 1, 9), ("S", "a", "x", 1, 3),
                          ("R", "b", "x", 1, 1), ("S", "a", "x", 1, 4)])
    engine = Engine(program)
    states = []
    for e in fresh(events[:3]):
        engine.process(e)
        states.append(save_state(engine)["windows"]["X"]["window"])
    assert states == [{"reference": 0, "k": 1, "current": 1, "previous": 0},
                      {"reference": 0, "k": 3, "current": 0, "previous": 0},
                      {"reference": 0, "k": None, "current": 0, "previous": 0}]
    whole = uninterrupted(program, events, False)
    assert [(t, p) for _, t, p, _ in whole] == [("4", "('a', 1)"), ("8", "('a', 0)"),
                                                ("16", "('b', 1)")]
    for cut in range(len(events) + 1):
        assert interrupted(program, events, [cut], False) == whole


#: a version-1 document as cepflow wrote it before window statements had state (the program
#: fingerprint is filled in: it names the program, not the format)
V1_STATE = """{"format": "cepflow.engine-state", "version": 1, "program": "%s", "time": 0,
 "counters": {"token": 1, "match": 0, "input": 1},
 "patterns": {"P": [{"id": 1, "part": null, "created": 0, "threads": [{"state": 1,
   "bindings": {"k": "a"}, "zones": {}, "events": [{"type": "R", "params": ["a", "x", 1],
   "ts": 0, "id": "r0", "seq": 0}]}]}]}}"""


def test_version_1_states_are_still_read() -> None:
    program = load(HEAD + "complexEvent P(k: String) { as R(k, _, _) -> S(k) }")
    again = restore_state(Engine(program), json.loads(V1_STATE % program.fingerprint))
    (m,) = again.process(Event("S", ("a",), 1, "s1"))
    assert (m.type, m.event_refs, save_state(again)["counters"]) == (
        "P", ["r0", "s1"], {"token": 1, "match": 1, "input": 2})


def test_damaged_window_states_are_reported() -> None:
    program = window_program("window length(3)", "select count(*) as n")
    engine = Engine(program)
    engine.process(Event("R", ("a", "x", 1), 0, "r0"))
    saved = save_state(engine)
    with pytest.raises(StateError, match="no state for 'X'"):
        restore_state(Engine(program), {**saved, "windows": {}})
    broken = json.loads(json.dumps(saved))
    del broken["windows"]["X"]["records"]
    with pytest.raises(StateError, match="malformed state of window statement 'X'"):
        restore_state(Engine(program), broken)
    with pytest.raises(StateError, match="fresh engine"):
        restore_state(engine, saved)


def test_a_value_json_has_no_number_for_is_saved_exactly() -> None:
    """A NaN held by a window (given through the Python API: readers reject it) is saved as a
    tagged value and restored as NaN; the state stays JSON (docs/state-format.md)."""
    program = window_program("window length(3)", "select count(*) as n")
    engine = Engine(program)
    engine.process(Event("R", ("a", "x", float("nan")), 0, "r0"))
    saved = save_state(engine)
    text = json.dumps(saved, allow_nan=False)
    assert saved["nonfinite"] is True and '{"$float":"NaN"}' in text.replace(" ", "")
    again = restore_state(Engine(program), json.loads(text))
    held = save_state(again)
    assert json.dumps(held, allow_nan=False) == text


@pytest.mark.parametrize("cut", [0, 300, 700, 1000])
def test_a_columnar_runner_state_round_trips(cut: int) -> None:
    """A runner whose contents live in the column-wise fast path saves them as records."""
    schemas = {"R": schema("R", "k", "v")}
    stmt = statement(["k", "count(*)", "sum(v)"], WindowSpec.time(50), group_by=["k"])
    evs = [Event("R", ("abc"[i % 3], i % 7), i // 2) for i in range(1000)]
    whole = WindowRunner(stmt, schemas)
    want = whole.process_batch(evs[:cut]) + whole.process_batch(evs[cut:])
    first = WindowRunner(stmt, schemas)
    got = first.process_batch(evs[:cut])
    assert first._in_fast == (cut >= first.columnar_min_batch)
    saved = json.loads(json.dumps(save_runner(first, _encode)))
    second = WindowRunner(stmt, schemas)
    load_runner(second, saved, _decode)
    got += second.process_batch(evs[cut:])
    assert [(r.ts, r.params) for r in got] == [(r.ts, r.params) for r in want]


def _encode(e: Event) -> dict[str, Any]:
    return {"type": e.type, "params": list(e.params), "ts": e.ts}


def _decode(d: dict[str, Any]) -> Event:
    return Event(d["type"], tuple(d["params"]), d["ts"])


def test_a_runner_keeps_its_clock() -> None:
    """The runner's own clock (a length batch flushed at the end closes at the current time)."""
    schemas = {"R": schema("R", "k", "v")}
    stmt = statement(["count(*)"], WindowSpec.length_batch(5))
    runner = WindowRunner(stmt, schemas)
    for ts in (1, 4, 7):
        runner.process(Event("R", ("a", 1), ts))
    runner.advance_to(9)
    again = WindowRunner(stmt, schemas)
    load_runner(again, json.loads(json.dumps(save_runner(runner, _encode))), _decode)
    assert [(r.ts, r.params) for r in again.finish(flush_batches=True)] == [(9, (3,))]
