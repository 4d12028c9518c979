"""Esper's guard ``X -> (P where timer:within(Δ))`` starts when ``P`` is started, i.e. when the
step ``X`` before it completes (EvalFollowedByStateNode starts its right side then, and
EvalGuardStateNode starts the guard's timer with its operand). cepflow writes it as the window
``(X -> P)[Δ]`` when ``X`` is one event — an atom, an or of atoms, every on those, a timer —
and after a step of several events as that window begun at the step's last event
(tests/esper/test_esper_guard_after_step.py): a window from ``P``'s own first event (what it
was read as before stop 39) matched where Esper does not, e.g. ``(a=A and c=C) -> (d=D where
timer:within(1 sec))`` over A@0 C@100 D@5000 (found by the withinmax work of stop 39). A guard
around a pattern that begins with an interval runs from the statement's start, as any guard at
the start does: it ran from the interval's end (found by the timer:at work of stop 39)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepflow
from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.runtime.state import restore_state, save_state

SCHEMAS = "".join(f"create schema {t}(k int);\n" for t in "ABCD")


def program(pattern: str) -> cepflow.Program:
    return cepflow.load_module(parse_epl(
        SCHEMAS + f"@Name('P') select * from pattern [{pattern}];", "g.epl"))


def times(prog: cepflow.Program, events: list[tuple[str, int]], cut: int | None = None
          ) -> list[float]:
    """The match times over ``events`` (type, ms), with a save/restore through JSON before
    event ``cut``, and the clock moved past the last event."""
    eng = cepflow.Engine(prog, start=0)
    out = []
    for i, (t, ts) in enumerate(events):
        if i == cut:
            state = json.loads(json.dumps(save_state(eng)))
            eng = restore_state(cepflow.Engine(prog, start=0), state)
        out += [ce.ts for ce in eng.process(Event(t, (i,), ts))]
    out += [ce.ts for ce in eng.advance_to((events[-1][1] if events else 0) + 10_000)]
    return out


@pytest.mark.parametrize(("events", "want"), [
    ([("A", 0), ("C", 5000)], []),  # C 5 s after A: the guard ended at 1 s
    ([("A", 0), ("C", 900)], [900]),
    ([("D", 0), ("C", 1000)], []),  # the guard's end first at one instant
    ([("C", 0), ("D", 100), ("A", 200), ("C", 1050)], [1050]),  # from the first of A or D
    ([("D", 0), ("A", 900), ("C", 1100)], []),  # the second A or D starts nothing
])
def test_after_an_or_of_events(events: list[tuple[str, int]], want: list[float]) -> None:
    assert times(program("(a=A or d=D) -> (c=C where timer:within(1 sec))"), events) == want


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ACD"), st.integers(0, 1500)), max_size=10),
       st.booleans(), st.integers(0, 10))
def test_against_the_guards_definition(raw: list[tuple[str, int]], every: bool, cut: int
                                       ) -> None:
    """``[every] (a=A or d=D) -> (c=C where timer:within(1 sec))``: each A or D (every: each
    one; else the first) starts the guard; the first C strictly before its start + 1 s
    matches (at the instant itself the guard's end comes first)."""
    events, ts = [], 0
    for t, gap in raw:
        ts += gap
        events.append((t, ts))
    want = []
    for i, (t, start) in enumerate(events):
        if t in "AD":
            c = next((s for u, s in events[i + 1:] if u == "C"), None)
            if c is not None and c < start + 1000:
                want.append(c)
            if not every:
                break
    body = "(a=A or d=D) -> (c=C where timer:within(1 sec))"
    got = times(program(f"every {body}" if every else body), events, cut)
    assert got == sorted(want)


@pytest.mark.parametrize(("pattern", "events", "want"), [
    # the guard runs from 0 to 3 s; the interval fires at 2 s: an A from 2 s to 3 s
    ("(timer:interval(2 sec) -> a=A) where timer:within(3 sec)", [("A", 4000)], []),
    ("(timer:interval(2 sec) -> a=A) where timer:within(3 sec)", [("A", 2999)], [2999]),
    ("(timer:interval(2 sec) -> a=A) where timer:within(3 sec)",
     [("A", 1000), ("A", 2500)], [2500]),
    ("((timer:interval(2 sec) and not B) -> a=A) where timer:within(3 sec)",
     [("A", 3500)], []),
    ("(timer:interval(2 sec) -> a=A -> c=C) where timer:within(3 sec)",
     [("A", 2100), ("C", 3100)], []),
    ("(timer:interval(2 sec) -> a=A -> c=C) where timer:within(3 sec)",
     [("A", 2100), ("C", 2900)], [2900]),
    # the zero interval: the same from the start
    ("(timer:interval(0) -> a=A) where timer:within(3 sec)", [("A", 3500)], []),
])
def test_a_guard_around_an_interval_first_runs_from_the_start(
        pattern: str, events: list[tuple[str, int]], want: list[float]) -> None:
    for cut in (None, 1):
        assert times(program(pattern), events, cut) == want
