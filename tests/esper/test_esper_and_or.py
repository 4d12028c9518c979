"""Esper's ``and`` and ``or`` (docs/esper.md; compiler/conjunction.py): the operands start at
once, each takes the first event that satisfies its next step, one event may satisfy several;
``and`` is true when every operand is, ``or`` when one is (and carries only that operand's
tags). From the Esper reference ("and": "A and A fires when a single A arrives";
EvalAndStateNode / EvalOrStateNode: each child reports independently) and brute-force oracles
of those definitions; VEPL keeps 000's ``and`` (two events, one after the other)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.loader import load, load_module
from cepflow.runtime.engine import Engine

SCHEMA = "".join(f"create schema {t}(v int);\n" for t in "ABCD")
CEP_SCHEMA = "".join(f"atomicEvent {t}(v: Integer)\n" for t in "ABCD")


def epl(pattern: str, select: str = ""):
    return load_module(parse_epl(SCHEMA + f"insert into P {select}from pattern [{pattern}]"))


def events(spec: str) -> list[Event]:
    """``"A3 A0 B1"``: type and value; ids are the tokens themselves."""
    return [Event(t[0], (int(t[1:]),), i, id=t) for i, t in enumerate(spec.split())]


def found(program, spec: str) -> list[list]:
    eng = Engine(program)
    out = [m for e in events(spec) for m in eng.process(e)] + eng.finish()
    return [m.event_refs for m in out]


def test_one_event_satisfies_both_operands() -> None:
    assert found(epl("A and A"), "A1") == [["A1"]]
    p = epl("a=A(v > 1) and b=A(v < 5)", "select a.v as av, b.v as bv ")
    m = Engine(p).process(events("A3")[0])
    assert [(x.event_refs, x.params) for x in m] == [(["A3"], (3, 3))]
    # A6 satisfies only the first operand, A0 only the second: two events
    eng = Engine(p)
    out = [x for e in events("A6 A0") for x in eng.process(e)]
    assert [(x.event_refs, x.params) for x in out] == [(["A6", "A0"], (6, 0))]


def test_operands_interleave_and_take_their_first_events() -> None:
    p = epl("(a=A -> b=B) and (c=C -> d=D)")
    assert found(p, "A1 C1 B1 D1") == [["A1", "C1", "B1", "D1"]]
    assert found(p, "C1 A1 D1 B1") == [["C1", "A1", "D1", "B1"]]
    # both operands begin with an A: both take the first one
    q = epl("(a=A -> b=B) and (c=A -> d=C)", "select a.v as av, c.v as cv ")
    eng = Engine(q)
    out = [x for e in events("A1 A2 B1 C1") for x in eng.process(e)]
    assert [(x.event_refs, x.params) for x in out] == [(["A1", "B1", "C1"], (1, 1))]


def test_every_around_and_restarts_after_each_match() -> None:
    p = epl("every (a=A and b=B)")
    assert found(p, "A1 A2 B3 B4 A5") == [["A1", "B3"], ["B4", "A5"]]


def test_and_after_an_event() -> None:
    """Each instance's and starts at its C: B1 completes the first instance and is the second
    one's first operand; A2 then completes the second."""
    p = epl("every x=C -> (a=A and b=B)")
    assert found(p, "C1 A1 C2 B1 A2") == [["C1", "A1", "B1"], ["C2", "B1", "A2"]]


def test_and_in_cepflow_syntax_under_esper() -> None:
    p = load(CEP_SCHEMA + "complexEvent P { as every (a = A where v > 1 AND b = A where v < 5) "
                          "}\n")
    assert p.automata[0].context == "esper"
    assert found(p, "A3 A6 A0") == [["A3"], ["A6", "A0"]]


def test_vepl_and_keeps_000s_definition() -> None:
    """000 §4.3.1: and(c1, c2) ≡ or(fol(c1, c2), fol(c2, c1)): two events, one after the
    other."""
    p = load(CEP_SCHEMA + "complexEvent P { as A AND A }\n")
    assert found(p, "A1") == []
    assert found(p, "A1 A2") == [["A1", "A2"]]


@pytest.mark.parametrize(("pattern", "what"), [
    ("(a=A -> b=B where timer:within(5 sec)) and c=C", "timer:within inside an operand"),
    ("(a=A -> (b=B and c=C)) and d=D", "a nested 'and' inside an operand"),
])
def test_operands_it_does_not_take_are_named(pattern: str, what: str) -> None:
    with pytest.raises(PatternSyntaxError) as err:
        epl(pattern)
    assert what in str(err.value)


# ---- a brute-force oracle of Esper's and ------------------------------------------------

FILTERS = ["", "v > 1", "v < 3", "v = 2"]


def holds(flt: str, v: int) -> bool:
    return {"": True, "v > 1": v > 1, "v < 3": v < 3, "v = 2": v == 2}[flt]


def oracle(operands: list[list[tuple[str, str]]], evs: list[Event], every: bool) -> list[list]:
    """Each operand is a sequence of steps (type, filter); each takes the first event that
    satisfies its next step; the and is true when all are done (every: then it restarts with
    the next event)."""
    out: list[list] = []
    at = [0] * len(operands)
    taken: list[Event] = []
    for e in evs:
        moved = False
        for i, steps in enumerate(operands):
            if at[i] < len(steps) and steps[at[i]][0] == e.type and holds(steps[at[i]][1],
                                                                          e.params[0]):
                at[i] += 1
                moved = True
        if moved:
            taken.append(e)
        if all(at[i] == len(s) for i, s in enumerate(operands)):
            out.append([x.id for x in taken])
            if not every:
                break
            at, taken = [0] * len(operands), []
    return out


steps = st.lists(st.tuples(st.sampled_from("AB"), st.sampled_from(FILTERS)), min_size=1,
                 max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(steps, min_size=2, max_size=3),
       st.lists(st.tuples(st.sampled_from("AB"), st.integers(0, 3)), min_size=1, max_size=10),
       st.booleans())
def test_and_equals_the_oracle(operands: list[list[tuple[str, str]]],
                               spec: list[tuple[str, int]], every: bool) -> None:
    evs, got = _run_operator("and", operands, spec, every)
    assert got == oracle(operands, evs, every)


def _run_operator(op: str, operands: list[list[tuple[str, str]]], spec: list[tuple[str, int]],
                  every: bool) -> tuple[list[Event], list]:
    """The events of ``spec`` and the matches of ``operands`` joined by ``op`` (each operand a
    sequence of tagged atoms), with or without ``every`` around them."""
    tag = iter(range(100))
    text = f" {op} ".join(
        "(" + " -> ".join(f"t{next(tag)}={t}({f})" for t, f in o) + ")" for o in operands)
    p = epl(f"every ({text})" if every else text, "select 1 as one ")
    evs = [Event(t, (v,), i, id=f"{t}{i}") for i, (t, v) in enumerate(spec)]
    eng = Engine(p)
    return evs, [m.event_refs for e in evs for m in eng.process(e)]


def or_oracle(operands: list[list[tuple[str, str]]], evs: list[Event], every: bool
              ) -> list[list]:
    """Esper's or: the operands run side by side, each taking the first event that satisfies
    its next step; the first operand to finish gives the match, made of its own events. When
    one event finishes several, the first to report: filters are served in the order they
    started (EvalOrStateNode), so the one whose last filter started first — at its earlier
    event taken, the or's start before any, and of two started at one event the one whose
    filter before started first; the lowest when they all started with the or."""
    out: list[list] = []
    at = [0] * len(operands)
    taken: list[list[Event]] = [[] for _ in operands]
    for e in evs:
        done = []
        for i, steps in enumerate(operands):
            if at[i] < len(steps) and steps[at[i]][0] == e.type and holds(steps[at[i]][1],
                                                                          e.params[0]):
                at[i] += 1
                taken[i].append(e)
                if at[i] == len(steps):
                    done.append(i)
        if done:
            done = min(done, key=lambda i: (*(x.ts for x in reversed(taken[i][:-1])), -1, i))
            out.append([x.id for x in taken[done]])
            if not every:
                break
            at, taken = [0] * len(operands), [[] for _ in operands]
    return out


def test_or_operands_run_side_by_side() -> None:
    """A0 does not satisfy the right operand, yet that operand is waiting from the start: it
    takes A2 (the left one has taken A0 and A2 and still waits)."""
    p = epl("(a=A -> b=A -> c=A) or d=A(v > 1)", "select a.v as av, d.v as dv ")
    eng = Engine(p)
    out = [x for e in events("A0 A2") for x in eng.process(e)]
    assert [(x.event_refs, x.params) for x in out] == [(["A2"], (None, 2))]
    # the left operand finishing first carries only its events; the right one's tag is null
    eng = Engine(p)
    out = [x for e in events("A0 A1 A0") for x in eng.process(e)]
    assert [(x.event_refs, x.params) for x in out] == [(["A0", "A1", "A0"], (0, None))]


def test_an_or_under_way_is_saved_and_restored() -> None:
    from cepflow.runtime.state import restore_state, save_state

    p = epl("every ((a=A -> b=A -> c=A) or d=A(v > 1))", "select a.v as av, d.v as dv ")
    evs = events("A0 A1 A0 A2 A0 A0 A5")
    whole = [(m.event_refs, m.params) for m in Engine(p).run(evs)]
    eng = Engine(p)
    out = [(m.event_refs, m.params) for e in evs[:2] for m in eng.process(e)]
    eng = restore_state(Engine(p), save_state(eng))
    out += [(m.event_refs, m.params) for e in evs[2:] for m in eng.process(e)]
    # (A5 completes both operands of the third instance: d's filter started with the
    # instance, c's at the A0 before A5 — d reports first, EvalOrStateNode takes it)
    assert out == whole == [(["A0", "A1", "A0"], (0, None)), (["A2"], (None, 2)),
                            (["A5"], (None, 5))]


@settings(max_examples=200, deadline=None)
@given(st.lists(steps, min_size=2, max_size=3),
       st.lists(st.tuples(st.sampled_from("AB"), st.integers(0, 3)), min_size=1, max_size=10),
       st.booleans())
def test_or_equals_the_oracle(operands: list[list[tuple[str, str]]],
                              spec: list[tuple[str, int]], every: bool) -> None:
    evs, got = _run_operator("or", operands, spec, every)
    assert got == or_oracle(operands, evs, every)
