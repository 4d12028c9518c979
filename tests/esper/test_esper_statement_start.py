"""EPL patterns that Esper starts at the statement's start (docs/esper.md, "Where a pattern
starts"): the EPL reader writes them as ``timer:interval(0) -> P`` (compiler.esper
.statement_start), so they run from the start as Esper's do.

Oracles, straight from Esper's definitions: a guard around the whole pattern quits it at
``start + Δ`` (timers before the events of their instant), so the guarded pattern's matches are
the unguarded pattern's matches that complete before then; ``b = B and not D`` without
``every`` is the first ``B`` if no ``D`` came before it, else nothing.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

import cepflow
from cepflow.events.event import Event
from cepflow.language import ast
from cepflow.language.epl import parse_epl
from cepflow.runtime.state import restore_state, save_state

SCHEMAS = "create schema A(k int, v int);\ncreate schema B(k int, v int);\n" \
          "create schema D(k int, v int);\n"


def program(body: str, select: str = "select a.v as av, b.v as bv") -> object:
    return cepflow.load_module(parse_epl(SCHEMAS + f"@Name('P') {select} from pattern [{body}];"))


def stream(draw_list: list[tuple[str, int, int]]) -> list[Event]:
    out, t = [], 0
    for i, (typ, k, gap) in enumerate(draw_list):
        t += gap
        out.append(Event(typ, (k, i), t))
    return out


events_st = st.lists(st.tuples(st.sampled_from("ABD"), st.integers(0, 2), st.integers(0, 700)),
                     max_size=18).map(stream)


def run(prog: object, events: list[Event], start: float | None, how: str = "event",
        cut: int | None = None) -> list[tuple]:
    """Rows of the matches (params, time); ``how``: per event, Engine.run, or per event with a
    save and restore (through JSON) before event ``cut``."""
    engine = cepflow.Engine(prog, start=start)
    if how == "run":
        return [(ce.params, ce.ts) for ce in engine.run(events)]
    out = []
    for i, e in enumerate(events):
        if how == "restore" and i == cut:
            state = json.loads(json.dumps(save_state(engine)))
            engine = restore_state(cepflow.Engine(prog, start=start), state)
        out.extend((ce.params, ce.ts) for ce in engine.process(e))
    return out


def test_the_reader_writes_the_start_as_a_zero_interval() -> None:
    def body(text: str) -> ast.Pattern:
        return parse_epl(SCHEMAS + f"insert into P from pattern [{text}]").decls[3].body

    for text in ("b=B where timer:within(2 sec)", "b=B and not D", "[2:] b=B until D",
                 "(every a=A -> b=B) where timer:within(5 sec)", "every (b=B and not D)",
                 "((b=B where timer:within(1 sec)) where timer:within(2 sec)) -> a=A"):
        assert isinstance(fol_head(body(text)), ast.Interval), text
    # what starts at an event stays so: the guard after the first event starts at it
    for text in ("a=A -> b=B where timer:within(2 sec)", "every a=A -> b=B",
                 "every (b=B where timer:within(2 sec))",
                 "every (a=A -> b=B)", "every ([2:] b=B until d=D)", "a=A -> b=B",
                 "timer:interval(2 sec) -> b=B"):
        assert not isinstance(fol_head(body(text)), ast.Interval) or "interval(2" in text


def fol_head(p: ast.Pattern) -> ast.Pattern:
    while isinstance(p, ast.Fol | ast.Window | ast.Every):
        p = p.left if isinstance(p, ast.Fol) else p.pattern
    return p


@settings(max_examples=60, deadline=None)
@given(events_st, st.integers(1, 4000), st.sampled_from([None, 0, 300]),
       st.sampled_from(["event", "run", "restore"]), st.integers(0, 18))
def test_a_guard_around_every_ends_the_pattern_at_start_plus_delta(
        events: list[Event], delta: int, start: int | None, how: str, cut: int) -> None:
    guarded_as_plain("every a=A -> b=B(b.k = a.k)", events, delta, start, how, cut)


def guarded_as_plain(body: str, events: list[Event], delta: int, start: int | None, how: str,
                     cut: int) -> tuple[list[Event], float]:
    """``(body) where timer:within(Δ)`` gives ``body``'s matches that complete before
    ``start + Δ`` (the first event's time without a start): the events from the start, and
    that time."""
    events = [e for e in events if start is None or e.ts >= start]
    t0 = start if start is not None else (events[0].ts if events else 0)
    plain = run(program(body), events, start)
    guarded = run(program(f"({body}) where timer:within({delta} msec)"), events, start, how,
                  cut)
    assert guarded == [m for m in plain if m[1] - t0 < delta]
    return events, t0


@settings(max_examples=60, deadline=None)
@given(events_st, st.integers(1, 4000), st.sampled_from([None, 0, 300]),
       st.sampled_from(["event", "run", "restore"]), st.integers(0, 18))
def test_a_guard_around_a_pattern_without_every_runs_from_the_start(
        events: list[Event], delta: int, start: int | None, how: str, cut: int) -> None:
    events, t0 = guarded_as_plain("a=A -> b=B(b.k = a.k)", events, delta, start, how, cut)
    one = run(program(f"b=B where timer:within({delta} msec)", "select b.v as bv"), events,
              start, how, cut)
    first_b = next((e for e in events if e.type == "B"), None)
    assert one == ([((first_b.params[1],), first_b.ts)]
                   if first_b is not None and first_b.ts - t0 < delta else [])


@settings(max_examples=60, deadline=None)
@given(events_st, st.sampled_from(["event", "run", "restore"]), st.integers(0, 18))
def test_and_not_at_the_start_is_active_from_the_start(
        events: list[Event], how: str, cut: int) -> None:
    got = run(program("b=B and not D", "select b.v as bv"), events, None, how, cut)
    first = next((e for e in events if e.type in "BD"), None)
    assert got == ([((first.params[1],), first.ts)]
                   if first is not None and first.type == "B" else [])


def test_hand_derived() -> None:
    """Statement at 0; A1(k=0) 1 s, B1(k=1) 2 s, B2(k=0) 3 s, D1 4 s, A2(k=1) 5 s, B3(k=1) 6 s."""
    evs = [Event(t, (k, v), ts) for t, k, v, ts in [
        ("A", 0, 1, 1000), ("B", 1, 1, 2000), ("B", 0, 2, 3000), ("D", 0, 1, 4000),
        ("A", 1, 2, 5000), ("B", 1, 3, 6000)]]

    def rows(body: str, select: str = "select a.v as av, b.v as bv") -> list:
        return [p for p, _ in run(program(body, select), evs, 0)]

    # the guard from the start: 3 s takes nothing (B2 at exactly 3 s is too late), 3.001 s B2
    assert rows("(a=A -> b=B(b.k = a.k)) where timer:within(3 sec)") == []
    assert rows("(a=A -> b=B(b.k = a.k)) where timer:within(3001 msec)") == [(1, 2)]
    # from A1, not from the start: 2 s after A1 is 3 s — too late; 2.001 s takes B2
    assert rows("a=A -> b=B(b.k = a.k) where timer:within(2 sec)") == []
    assert rows("a=A -> b=B(b.k = a.k) where timer:within(2001 msec)") == [(1, 2)]
    # around every: A2's instance would match B3 at 6 s, after the guard's 5.5 s
    assert rows("(every a=A -> b=B(b.k = a.k)) where timer:within(5500 msec)") == [(1, 2)]
    assert rows("(every a=A -> b=B(b.k = a.k)) where timer:within(6001 msec)") == [(1, 2), (2, 3)]
    # and not / until from the start: D1 at 4 s comes after B1
    assert rows("b=B and not D", "select b.v as bv") == [(1,)]
    assert rows("d=D and not B", "select d.v as dv") == []
    assert rows("[2:] b=B until D", "select b[0].v as b0, b[1].v as b1") == [(1, 2)]
    assert rows("[3:] b=B until D", "select b[0].v as b0") == []
    # (refused before 2026-11-28, as Esper starts them at the statement's start)
    assert rows("(a=A -> b=B(b.k = a.k)) and not D") == [(1, 2)]
    assert rows("(a=A -> b=B(b.v = 3)) and not D") == []  # (D1 at 4 s, before B3)
    # (D1 at 4 s ends the instance begun at 3 s, the next begins at 4 s: A2 B3)
    assert rows("every ((a=A -> b=B(b.k = a.k)) and not D)") == [(1, 2), (2, 3)]
    assert rows("every (b=B and not D)", "select b.v as bv") == [(1,), (2,), (3,)]
    # a guard shorter than the interval inside it ends it (the two windows are not merged)
    assert rows("a=A -> (timer:interval(3 sec) where timer:within(2 sec))", "select a.v as av") \
        == []
    assert rows("a=A -> (timer:interval(3 sec) where timer:within(3 sec))", "select a.v as av") \
        == []
    assert run(program("a=A -> (timer:interval(3 sec) where timer:within(4 sec))",
                       "select a.v as av"), evs, 0) == [((1,), 4000)]


def test_a_guard_inside_every_runs_from_its_restart() -> None:
    """docs/esper.md, "every ((…) where timer:within(Δ))": Esper's guard runs 0 to 2 s, then
    from 2 s, and misses this match (cepflow matched it before session 40, the window from the
    instance's first event); tests/esper/test_esper_every_guard_restart.py has the rest."""
    evs = [Event("A", (0, 1), 1500), Event("B", (0, 2), 3000)]
    prog = program("every ((a=A -> b=B) where timer:within(2 sec))")
    assert run(prog, evs, 0) == run(prog, evs, 0, "run") == []
