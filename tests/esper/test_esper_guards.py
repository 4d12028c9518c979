"""Esper's ``while (…)`` guard and ``timer:withinmax(Δ, n)``, checked against their definitions.

ExpressionGuard (``P while (cond)``) passes each result of ``P`` on while ``cond`` holds over
it, and ends ``P`` for good at the first result for which it does not; TimerWithinOrMaxCountGuard
(``P where timer:withinmax(Δ, n)``) passes at most ``n`` results within Δ. The reference cases
(``data/esper_reference_cases.json``, suites PatternGuardWhile and PatternGuardTimerWithinOrMax)
run Esper's harness cases; here: Esper's scenario PatternGuardWhileSimple step by step, pinned
cases beyond event set one, a property against a brute-force oracle written from ExpressionGuard,
and the forms reported.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepflow
from cepflow.events.event import Event
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.runtime.state import restore_state, save_state

SCHEMAS = "create schema A(id string, v int);\ncreate schema B(id string, v int);\n"


def program(pattern: str, select: str = "*") -> cepflow.Program:
    return cepflow.load_module(parse_epl(
        SCHEMAS + f"@Name('P') select {select} from pattern [{pattern}];", "g.epl"))


def feed(prog: cepflow.Program, events: list[tuple[str, str, int]], cut: int | None = None
         ) -> list[tuple[str, ...]]:
    """The ids of each match's events; ``cut``: save and restore (through JSON) before that
    event, as Esper's milestones do."""
    eng = cepflow.Engine(prog, start=0)
    out: list[tuple[str, ...]] = []
    for i, (t, ident, v) in enumerate(events):
        if i == cut:
            state = json.loads(json.dumps(save_state(eng)))
            eng = cepflow.Engine(prog, start=0)
            restore_state(eng, state)
        out += [tuple(ce.event_refs) for ce in
                eng.process(Event(t, (ident, v), 1000 * (i + 1), id=ident))]
    return out


def test_esper_while_simple_scenario() -> None:
    """PatternGuardWhileSimple: ``(every a=SupportBean) while (a.theString like 'E%')`` —
    restated with ``v = 1`` for "starts with E" — matches E1, E2, then X ends it: E3 is not
    matched. Milestones (save and restore) between the steps."""
    prog = program("(every a=A) while (a.v = 1)", "a.id as c0")
    steps = [("A", "E1", 1), ("A", "E2", 1), ("A", "X", 0), ("A", "E3", 1), ("A", "X2", 0)]
    for cut in (None, 1, 2, 3, 4):
        assert feed(prog, steps, cut) == [("E1",), ("E2",)]


@pytest.mark.parametrize(("pattern", "events", "expected"), [
    # the first B decides: it passes or ends the instance (a filter would wait for another)
    ("a=A -> b=B while (b.v > a.v)", "A1:5 B1:3 B2:9", []),
    ("a=A -> b=B while (b.v > a.v)", "A1:5 B1:9 B2:9", [("A1", "B1")]),
    ("every a=A -> b=B while (b.v > a.v)", "A1:5 A2:1 B1:3 B2:9",
     [("A2", "B1")]),
    # every under the guard: each B while it holds, none after the first that fails
    ("a=A -> (every b=B) while (b.v > a.v)", "A1:5 B1:6 B2:7 B3:1 B4:8",
     [("A1", "B1"), ("A1", "B2")]),
    ("every a=A -> (every b=B) while (b.v > a.v)", "A1:5 B1:6 A2:0 B2:3 B3:7",
     [("A1", "B1"), ("A2", "B2"), ("A2", "B3")]),
    # a filter is not the guard: a B failing B's own filter neither passes nor ends
    ("a=A -> (every b=B(v != 3)) while (b.v > a.v)", "A1:5 B1:6 B2:3 B3:7",
     [("A1", "B1"), ("A1", "B3")]),
    # around a followed-by without every: its one result
    ("(a=A -> b=B) while (b.v = a.v)", "A1:5 B1:4 A2:4 B2:4", []),
    ("(a=A -> b=B) while (b.v = a.v)", "A1:5 B1:5", [("A1", "B1")]),
    # withinmax around an operand that matches once is within
    ("every a=A -> b=B where timer:withinmax(2 sec, 1)", "A1:0 B1:0 A2:0 A3:0 B2:0",
     [("A1", "B1"), ("A3", "B2")]),
])
def test_pinned(pattern: str, events: str, expected: list[tuple[str, ...]]) -> None:
    evs = [(tok[0], tok.split(":")[0], int(tok.split(":")[1])) for tok in events.split()]
    assert feed(program(pattern), evs) == expected
    assert feed(program(pattern), evs, cut=len(evs) // 2) == expected


def oracle(events: list[tuple[str, str, int]], k: int) -> list[tuple[str, ...]]:
    """``every a=A -> (every b=B) while (b.v > a.v + k)`` by ExpressionGuard's definition:
    each A begins an instance; each later B is a result of its ``every b=B``; the guard
    passes it while ``b.v > a.v + k`` and ends the instance at the first B that fails."""
    out = []
    alive: list[tuple[str, int]] = []
    for t, ident, v in events:
        if t == "B":
            kept = []
            for a, av in alive:
                if v > av + k:
                    out.append((a, ident))
                    kept.append((a, av))
            alive = kept
        else:
            alive.append((ident, v))
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("AB"), st.integers(0, 6)), max_size=14),
       st.integers(-2, 2), st.integers(0, 14))
def test_while_against_its_definition(raw: list[tuple[str, int]], k: int, cut: int) -> None:
    events = [(t, f"{t}{i}", v) for i, (t, v) in enumerate(raw)]
    prog = program(f"every a=A -> (every b=B) while (b.v > a.v + {k})")
    assert feed(prog, events, cut) == oracle(events, k)
    assert [tuple(m.event_refs) for m in cepflow.Engine(prog, start=0).run(
        [Event(t, (i, v), 1000 * (n + 1), id=i) for n, (t, i, v) in enumerate(events)])
            ] == oracle(events, k)


@pytest.mark.parametrize(("pattern", "message"), [
    ("(every a=A -> b=B) while (b.v > 1)", "while (…) is supported around one event"),
    ("(a=A or b=B) while (a.v > 1)", "while (…) is supported around one event"),
    ("b=B while (v > 1)", "write tag.v"),
    ("b=B while ('abc')", "true or false"),
    ("(every a=A -> b=B) where timer:withinmax(1 sec, 2)", "with every inside"),
    ("(a=A or b=B) where timer:withinmax(1 sec, 0)", "with a count of 0"),
    ("b=B where timer:withinmax(1 sec)", "a duration and a count"),
    ("b=B where timer:within(1 sec, 2)", "a duration and a count"),
    ("b=B where timer:inside(1 sec)", "guard 'timer:inside' is not supported"),
])
def test_reported_forms(pattern: str, message: str) -> None:
    with pytest.raises(PatternSyntaxError) as info:
        program(pattern)
    d = info.value.diagnostics[0]
    assert d.file == "g.epl" and d.line == 3 and d.col is not None
    assert message in d.message
