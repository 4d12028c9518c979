"""Rules: deterministic firing order (priority, then detection order), bindings, emitted
events re-entering the stream, unregistered actions and runaway feedback loops."""

import pytest

from cepflow.events.event import Event
from cepflow.language import ast as A
from cepflow.loader import load
from cepflow.runtime.engine import Engine, EngineError
from support import at, stream

PATTERNS = """
atomicEvent a(x: Integer)
atomicEvent b(x: Integer)
atomicEvent alarm(x: Integer)
complexEvent AB(x: Integer) { as a(x) -> b(x) }
complexEvent Twice(x: Integer) { as alarm(x) -> alarm(x) }
rule low on AB action low
rule high on AB priority 10 action high
rule onB on b priority 5 action onB
rule raise on AB priority -1 action raise
rule twice on Twice action twice
"""


def test_priority_then_detection_order_with_bindings() -> None:
    calls: list[tuple] = []

    def rec(name: str):
        return lambda act: calls.append((name, act.event.type, act.bindings))

    actions = {n: rec(n) for n in ("low", "high", "onB", "raise", "twice")}
    eng = Engine(load(PATTERNS), actions=actions)
    for e in stream("a(1) b(1)", arity=1):
        eng.process(e)
    assert calls == [("high", "AB", {"x": 1}), ("onB", "b", {"x": 1}), ("low", "AB", {"x": 1}),
                     ("raise", "AB", {"x": 1})]


def test_actions_emit_events_that_patterns_see() -> None:
    seen: list = []
    actions = {
        "raise": lambda act: act.emit(Event("alarm", (act.bindings["x"],), act.event.ts)),
        "twice": lambda act: seen.append(act.event.event_refs),
    }
    eng = Engine(load(PATTERNS), actions=actions, strict_actions=False)
    out = []
    for e in stream("a(1) b(1) a(1) b(1)", arity=1):
        out += eng.process(e)
    assert [m.type for m in out] == ["AB", "AB", "Twice"]
    assert len(seen) == 1


def test_unregistered_action_is_an_error_unless_allowed() -> None:
    with pytest.raises(EngineError, match="not registered"):
        Engine(load(PATTERNS), actions={})
    eng = Engine(load(PATTERNS), actions={}, strict_actions=False)
    assert ("low", "low") in eng.missing_actions()


def test_runaway_feedback_loop_is_stopped() -> None:
    prog = load("atomicEvent ping(x: Integer)\nrule echo on ping action echo\n")
    eng = Engine(prog, actions={"echo": lambda act: act.emit(Event("ping", (1,), 0))})
    with pytest.raises(EngineError, match="feedback"):
        eng.process(Event("ping", (1,), 0))
    _ = (at, A)
