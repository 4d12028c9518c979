"""Saved timers (docs/state-format.md, "Timers"): an engine restored in the middle of a stream
continues exactly like the one that was never stopped — timers due at one instant fire in the
order they were asked for (not in token order), and the timers of instances that ended still
move the clock when they come due — per event and through the batch routes, beside other
statements whose timers fall on the same instants."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load, load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import StateError, restore_state, restore_text, save_state, state_text
from support import tokens_form

SCHEMA = ("create schema A(k integer, v integer);\ncreate schema B(k integer, v integer);\n"
          "create schema C(k integer, v integer);\n")

#: statements whose timers fall on shared instants: the interval after a pair, the missing
#: event, a pair and a chain with a window (a pair's deadlines queue behind one timer), a
#: clock, VEPL-like windows are not Esper's — these are all Esper timers (before the events)
STATEMENTS = {
    "I": "every a = A -> b = B(b.k = a.k) -> timer:interval({d} msec)",
    "M": "every a = A -> (timer:interval({d} msec) and not B(k = a.k))",
    "W": "every a = A -> b = B(b.k = a.k) where timer:within({d} msec)",
    "S": "every a = A -> b = B(b.k = a.k) -> c = C(c.k = a.k) where timer:within({d} msec)",
    "N": "every a = A(v > 0) -> (timer:interval({d} msec) and not C(k = a.k))",
    "T": "every (timer:interval({d} msec) and not C(v = 2))",  # (d > 0: see program)
}


#: VEPL patterns (their timers fire after the events of their instant): a NOT at the end of
#: a window completes a match at its deadline
VEPL = {
    "n": "(A(k, _) -> NOT B(k, _))[{d}]",
    "g": "(A(k, _) -> NOT C(k, _) -> B(k, _))[{d}]",
    "p": "(A(k, _) -> B(k, _))[{d}]",
    "r": "(A(k, _) -> C(k, _) -> NOT B(k, _))[{d}]",
}
VEPL_SCHEMA = ("atomicEvent A(k: Integer, v: Integer)\natomicEvent B(k: Integer, v: Integer)\n"
               "atomicEvent C(k: Integer, v: Integer)\n")


def program(chosen: list[tuple[str, int]]):
    if chosen and chosen[0][0] in VEPL:
        return load(VEPL_SCHEMA + "".join(
            f"complexEvent {n}{i}(k: Integer) {{ as {VEPL[n].format(d=d)} }}\n"
            for i, (n, d) in enumerate(chosen)))
    # (a clock of 0 ms would fire again and again at one instant)
    text = SCHEMA + "".join(
        f"@Name('{n}{i}')\ninsert into {n}{i}\nfrom pattern "
        f"[{STATEMENTS[n].format(d=max(d, 1) if n == 'T' else d)}];\n"
        for i, (n, d) in enumerate(chosen))
    return load_module(parse_epl(text))


def events(spec: list[tuple[str, int, int, int]]) -> list[Event]:
    ts, out = 0, []
    for i, (t, k, v, dt) in enumerate(spec):
        ts += dt
        out.append(Event(t, (k, v), ts, id=f"e{i}"))
    return out


def rows(found) -> list:
    return [(m.type, m.ts, tuple(m.event_refs), repr(m.params), m.match_id) for m in found]


def run(prog, evs: list[Event], cut: int | None, batch: bool, fast_path: bool,
        gap: int) -> tuple[list, float, str]:
    """The complex events, the clock after time passes ``gap`` ms past the last event, and
    the saved state then — restored from its JSON text at ``cut`` (None: never stopped)."""
    eng = Engine(prog, fast_path=fast_path)
    out: list = []
    parts = [evs] if cut is None else [evs[:cut], evs[cut:]]
    for n, part in enumerate(parts):
        if n:
            eng = restore_text(Engine(prog, fast_path=fast_path), state_text(eng))
        if batch:
            out += rows(eng.process_batch(part))
        else:
            for e in part:
                out += rows(eng.process(e))
    end = (evs[-1].ts if evs else 0) + gap
    out += rows(eng.advance_to(end))
    # (a chain kernel's rows written as the tokens they stand for: a restored engine may hold
    # as tokens what the uninterrupted one holds as rows)
    return out, eng.time, json.dumps(tokens_form(save_state(eng)), sort_keys=True)


@settings(max_examples=150, deadline=None)
@given(st.one_of(*(st.lists(st.tuples(st.sampled_from(sorted(pool)), st.sampled_from([0, 1, 2, 3])),
                            min_size=1, max_size=3) for pool in (STATEMENTS, VEPL))),
       st.lists(st.tuples(st.sampled_from("AABBC"), st.integers(0, 2), st.integers(0, 2),
                          st.sampled_from([0, 0, 1, 2])), max_size=40),
       st.integers(0, 40), st.booleans(), st.booleans(), st.integers(0, 6))
@example([("I", 3)], [("A", 1, 0, 0), ("A", 2, 0, 0), ("B", 2, 0, 1), ("B", 1, 0, 0),
                      ("A", 0, 0, 6)], 4, False, False, 0)
# (a completed instance's window timer, idle at 5: the clock after time passes to 7)
@example([("W", 5)], [("A", 1, 0, 0), ("B", 1, 0, 1)], 2, False, False, 6)
# (a restored chain's partial match a token, the uninterrupted one's a row)
@example([("g", 2)], [("A", 0, 0, 0), ("B", 0, 0, 0), ("A", 0, 0, 2)], 2, True, False, 1)
def test_restored_engine_continues_like_the_uninterrupted(chosen, spec, cut, batch, fast_path,
                                                          gap) -> None:
    prog = program(chosen)
    evs = events(spec)
    cut = min(cut, len(evs))
    assert run(prog, evs, cut, batch, fast_path, gap) == run(prog, evs, None, batch,
                                                             fast_path, gap)


def test_timers_at_one_instant_fire_in_asking_order_after_a_restore() -> None:
    """B(k2) then B(k1) at 1 ask for their intervals' ends in that order: the matches at 4
    come (k2), (k1) — also from a restored engine, whose tokens are (k1), (k2) by id."""
    prog = program([("I", 3)])
    evs = events([("A", 1, 0, 0), ("A", 2, 0, 0), ("B", 2, 0, 1), ("B", 1, 0, 0)])
    eng = Engine(prog, fast_path=False)
    for e in evs:
        eng.process(e)
    saved = save_state(eng)
    assert saved["timers"]["queue"]["token"] == [2, 1]  # (asked for by B(k2) first)
    for e in (eng, restore_state(Engine(prog, fast_path=False), json.loads(json.dumps(saved)))):
        assert [m.params[0] for m in e.advance_to(10)] == [2, 1]


def test_the_timer_of_an_ended_instance_still_moves_the_clock() -> None:
    """A(0)@0 opens a missing-event instance with its timer at 2, B(0)@1 traps it: when time
    passes to 10, the timer fires idle at 2 and the clock stands at 2 — also after a restore
    (the saved timer is kept; deriving timers from the partial matches lost it)."""
    prog = program([("M", 2)])
    eng = Engine(prog, fast_path=False)
    for e in events([("A", 0, 0, 0), ("B", 0, 0, 1)]):
        eng.process(e)
    again = restore_text(Engine(prog, fast_path=False), state_text(eng))
    for e in (eng, again):
        assert e.advance_to(10) == [] and e.time == 2


def test_a_state_without_timers_still_restores() -> None:
    """A state saved before timers were saved (no ``timers``) gets its partial matches'
    timers again, in token order, as before."""
    prog = program([("W", 3), ("I", 2)])
    eng = Engine(prog, fast_path=False)
    for e in events([("A", 1, 0, 0), ("A", 2, 0, 0), ("B", 1, 0, 1)]):
        eng.process(e)
    saved = save_state(eng)
    del saved["timers"]
    again = restore_state(Engine(prog, fast_path=False), saved)
    assert rows(again.advance_to(10)) == rows(eng.advance_to(10))


def test_damaged_timers_are_state_errors() -> None:
    prog = program([("W", 3), ("T", 2)])
    eng = Engine(prog, fast_path=False)
    for e in events([("A", 1, 0, 0), ("A", 2, 0, 1)]):
        eng.process(e)
    saved = save_state(eng)
    assert saved["timers"]["queue"]["token"]
    damages = [
        (("queue", "token", 0), 10**6, "timers.queue.token[0]"),
        (("queue", "zone", 0), 99, "timers.queue"),
        (("queue", "deadline", 0), -5, "timers.queue.deadline[0]"),
        (("queue", "pattern", 0), "X", "timers.queue.pattern[0]"),
        (("queue", "start", 0), "x", "timers.queue.start[0]"),
    ]
    for (part, col, i), value, where in damages:
        bad = json.loads(json.dumps(saved))
        bad["timers"][part][col][i] = value
        try:
            restore_state(Engine(prog, fast_path=False), bad)
        except StateError as err:
            assert where in str(err)
        else:
            raise AssertionError(f"{part}.{col}[{i}] = {value!r} restored")
    bad = json.loads(json.dumps(saved))
    bad["timers"]["queue"]["token"].pop()
    try:
        restore_state(Engine(prog, fast_path=False), bad)
    except StateError as err:
        assert "of different lengths" in str(err)
    else:
        raise AssertionError("columns of different lengths restored")


def test_the_window_timer_of_a_completed_instance_still_moves_the_clock() -> None:
    """A(1)@0 and B(1)@1 complete the windowed pair; its window's timer, due at 5, fires idle:
    time passing to 10 leaves the clock at 5 — also after a restore (``idle``), per event and
    through the pair's direct step, in Esper and VEPL."""
    for prog in (program([("W", 5)]), program([("p", 5)])):
        for fast_path in (False, True):
            eng = Engine(prog, fast_path=fast_path)
            for e in events([("A", 1, 0, 0), ("B", 1, 0, 1)]):
                eng.process(e)
            saved = save_state(eng)
            assert 5.0 in next(iter(saved["timers"]["idle"].values()))
            again = restore_state(Engine(prog, fast_path=fast_path), saved)
            for e in (eng, again):
                assert e.advance_to(10) == [] and e.time == 5
