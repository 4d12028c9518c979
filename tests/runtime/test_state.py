"""Saved engine state: a restored engine continues exactly where the saved one stopped."""

import gc
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.language import ast as A
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import (
    FORMAT,
    VERSION,
    StateError,
    restore_state,
    restore_text,
    save_state,
    state_text,
)
from support import at, program, seq, stream

BODIES = [
    seq(at("a", "x"), at("b", "x"), at("c", "x")),
    A.Window(seq(at("a", "x"), A.Not(at("b", "x")), at("c", "x")), 5),
    A.Window(seq(at("a", "x"), A.Not(at("b", "x"))), 4),
    seq(at("a", "x"), A.Mult(at("b", "y"), "+"), at("c", "x")),
    # an iteration before a NOT: threads at restricted copies of a state are saved too
    A.Window(seq(A.Mult(at("b", "x"), "+"), A.Not(at("a", "x")), at("c", "x")), 6),
]


def feed(eng: Engine, evs: list[Event]) -> list:
    out = []
    for e in evs:
        out += [(m.type, m.ts, tuple(m.event_refs), m.params) for m in eng.process(e)]
    return out


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(range(len(BODIES))),
       st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 2), st.integers(0, 3)),
                min_size=1, max_size=30),
       st.integers(0, 30))
def test_restore_continues_like_uninterrupted(which: int, spec: list, cut: int) -> None:
    prog = program(BODIES[which], params=("x",), arity=1)
    ts = 0
    evs = []
    for i, (t, k, dt) in enumerate(spec):
        ts += dt
        evs.append(Event(t, (k,), ts, id=i))
    cut = min(cut, len(evs))
    whole = feed(Engine(prog), evs)
    first = Engine(prog)
    head = feed(first, evs[:cut])
    saved = json.loads(json.dumps(save_state(first)))
    assert saved["format"] == FORMAT and saved["version"] == VERSION == 3  # docs/state-format.md
    assert json.loads(state_text(first)) == saved  # the text form is the same state
    second = restore_state(Engine(prog), saved)
    fresh = [Event(e.type, e.params, e.ts, e.id) for e in evs[cut:]]
    assert head + feed(second, fresh) == whole
    third = restore_text(Engine(prog), state_text(first))
    fresh = [Event(e.type, e.params, e.ts, e.id) for e in evs[cut:]]
    assert head + feed(third, fresh) == whole


def test_state_of_other_patterns_is_refused() -> None:
    eng = Engine(program(seq(A.Atom("a"), A.Atom("b"))))
    eng.process(stream("a")[0])
    saved = save_state(eng)
    with pytest.raises(StateError, match="different patterns"):
        restore_state(Engine(program(seq(A.Atom("a"), A.Atom("c")))), saved)
    with pytest.raises(StateError, match="version"):
        restore_state(Engine(program(seq(A.Atom("a"), A.Atom("b")))), {**saved, "version": 99})


def test_non_json_values_are_reported() -> None:
    eng = Engine(program(seq(at("a", "x"), at("b", "x")), params=("x",), arity=1))
    eng.process(Event("a", (object(),), 0))
    with pytest.raises(StateError, match="JSON"):
        save_state(eng)


def test_text_errors_are_state_errors_and_the_collector_runs_again() -> None:
    """Saving and restoring pause the cyclic garbage collector; an error must not leave it
    off (a process that no longer collects cycles grows without bound)."""
    assert gc.isenabled()
    eng = Engine(program(seq(at("a", "x"), at("b", "x")), params=("x",), arity=1))
    eng.process(Event("a", (object(),), 0))
    with pytest.raises(StateError, match="JSON cannot represent"):
        state_text(eng)
    assert gc.isenabled()
    with pytest.raises(StateError, match="not JSON"):
        restore_text(Engine(program(seq(A.Atom("a"), A.Atom("b")))), "{not json")
    assert gc.isenabled()
    with pytest.raises(StateError, match="different patterns"):
        restore_text(Engine(program(seq(A.Atom("a"), A.Atom("c")))),
                     state_text(Engine(program(seq(A.Atom("a"), A.Atom("b"))))))
    assert gc.isenabled()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_a_partial_match_holding_nan_is_saved_and_continues(value: float) -> None:
    """A value JSON has no number for (given through the Python API: readers reject it) used to
    make every save fail — a stream could never pass that micro-batch (issue 16). It is saved
    tagged, the state stays JSON, and the restored engine completes the match with it."""
    from cepflow.loader import load

    prog = load("atomicEvent A(k: Integer, v: Double)\natomicEvent B(k: Integer)\n"
                "complexEvent P(k: Integer, v: Double) { as A(k, v) -> B(k) }\n")
    eng = Engine(prog)
    eng.process(Event("A", (1, value), 1, "a"))
    eng.process(Event("A", (2, "NaN"), 2, "s"))  # a string that reads like one stays a string
    text = state_text(eng)
    json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in the state"))
    again = restore_text(Engine(prog), text)
    (m,) = again.process(Event("B", (1,), 3, "b"))
    assert repr(m.bindings["v"]) == repr(value) and m.event_refs == ["a", "b"]
    (s,) = again.process(Event("B", (2,), 4, "c"))
    assert s.bindings["v"] == "NaN"


def test_the_saved_dict_is_json_data_and_restores_as_it_is() -> None:
    """``save_state``'s own dict — not only its JSON text — after batches through the chain
    kernel (rows held as pending events) is the JSON data it stands for (lists, not tuples)
    and restores directly, as the README shows (``restore_state(engine, save_state(...))``)."""
    from importlib.resources import files

    from cepflow.examples.gesture.events import gesture_events

    from cepflow.loader import load

    prog = load(files("cepflow.examples") / "gesture" / "gesture.vepl")
    evs = list(gesture_events(3, 5))
    actions = {"gesture.next_slide": lambda *_: None}
    whole = [m.match_id for m in Engine(prog, actions=actions).run(evs)]
    first = Engine(prog, actions=actions)
    head = [m.match_id for m in first.run(evs[:40])]
    saved = save_state(first)
    assert saved == json.loads(json.dumps(saved))  # (a tuple would come back a list)
    assert _no_tuples(saved)
    second = restore_state(Engine(prog, actions=actions), saved)
    fresh = [Event(e.type, e.params, e.ts, e.id) for e in evs[40:]]
    assert head + [m.match_id for m in second.run(fresh)] == whole


def _no_tuples(x: object) -> bool:
    if isinstance(x, tuple):
        return False
    if isinstance(x, dict):
        return all(_no_tuples(v) for v in x.values())
    if isinstance(x, list):
        return all(_no_tuples(v) for v in x)
    return True
