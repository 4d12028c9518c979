"""Random Esper patterns against an interpreter of Esper's state nodes (tests/esper/esper_tree.py):
``every``, ``not``, ``and``, ``or``, followed-by, ``timer:within`` guards and
``timer:interval`` nested up to three deep, filters on the event's own field and on an earlier
tag's, over random streams — per event the same matches as Esper's tree, and ``Engine.run`` in
batches cut anywhere with a save / restore between the same as per event. A form cepflow
refuses is skipped (its refusal is tested where the form is).

Left out, as documented decisions or open work (docs/conformance.md, docs/esper.md): a guard
around a pattern with ``every`` inside (cepflow: each instance's window), two operands of an
``or`` that one event can both satisfy (their order), and ``timer:interval(0)`` (Esper fires it
within the event that started it). (A guard under ``every`` around more than one event, left
out at first, agrees since session 40's restart: docs/esper.md.)

The pinned cases below are the wrong answers this test found (session 40), each derived by
hand from the state nodes."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import example, given, note, settings
from hypothesis import strategies as st
from tests.esper.esper_tree import FILTERS, evaluate, tags, text
from tests.esper.test_esper_statement_start import stream

import cepflow
from cepflow.events.event import Event
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.runtime.state import restore_state, save_state

SCHEMAS = "".join(f"create schema {t}(k int, v int);\n" for t in "ABCD")
Pattern = tuple


def program(p: Pattern) -> Any:
    names = tags(p)
    select = ", ".join(f"{t}.v as {t}" for t in names)
    return cepflow.load_module(parse_epl(
        SCHEMAS + f"@Name('P') select {select} from pattern [{text(p)}];", "r.epl"))


def per_event(prog: Any, events: list[Event], end: float) -> list[tuple]:
    eng = cepflow.Engine(prog, start=0)
    out = [ce for e in events for ce in eng.process(e)] + eng.advance_to(end)
    return [(ce.ts, ce.params, ce.match_id) for ce in out]


def batched(prog: Any, events: list[Event], end: float, cuts: list[int], restore_at: int
            ) -> list[tuple]:
    eng = cepflow.Engine(prog, start=0)
    bounds = [0, *sorted({c % (len(events) + 1) for c in cuts}), len(events)]
    out = []
    for b in range(len(bounds) - 1):
        if b == restore_at:
            state = json.loads(json.dumps(save_state(eng)))
            eng = restore_state(cepflow.Engine(prog, start=0), state)
        out += eng.run(events[bounds[b]:bounds[b + 1]])
    out += eng.advance_to(end)
    return [(ce.ts, ce.params, ce.match_id) for ce in out]


def esper(p: Pattern, events: list[Event], end: float) -> Counter:
    return Counter(evaluate(p, events, end))


def cep(rows: list[tuple]) -> Counter:
    return Counter((ts, tuple(None if v is None else int(v) for v in params))
                   for ts, params, _ in rows)


# ---- random patterns -------------------------------------------------------------------------

def generate(r: random.Random, depth: int, types: str, made: list[int],
             earlier: list[str]) -> Pattern:
    """A pattern over the event ``types`` (an or gives its operands disjoint types); tags
    ``o1``, ``o2``, … in writing order; a filter may read a tag of an earlier followed-by
    step (``earlier``)."""
    if depth == 0 or r.random() < 0.3:
        if r.random() < 0.12:
            return ("interval", r.choice([300, 500, 1000]))
        made[0] += 1
        f = r.choice(sorted(FILTERS))
        if earlier and r.random() < 0.3:
            f = f"k = {r.choice(earlier)}.k"
        return ("atom", f"o{made[0]}", r.choice(types), f)
    kind = r.choices(["every", "not", "guard", "and", "or", "->"], [3, 1, 2, 2, 2, 4])[0]
    if kind == "every":
        return ("every", generate(r, depth - 1, types, made, earlier))
    if kind == "not":
        return ("not", ("atom", None, r.choice(types), r.choice(sorted(FILTERS))))
    if kind == "guard":
        return ("guard", r.choice([400, 700, 1200]),
                generate(r, depth - 1, types, made, earlier))
    n = r.choice([2, 2, 3])
    if kind == "or":
        if len(types) < n:
            return generate(r, 0, types, made, earlier)
        shuffled = r.sample(types, len(types))
        parts = [shuffled[i::n] for i in range(n)]
        return ("or", [generate(r, depth - 1, "".join(t), made, earlier) for t in parts])
    ops: list[Pattern] = []
    seen = list(earlier)
    for _ in range(n):
        o = generate(r, depth - 1, types, made, seen if kind == "->" else earlier)
        ops.append(o)
        if kind == "->":
            seen = seen + tags(o)
    return (kind, ops)


def _walk(p: Pattern):
    yield p
    if p[0] in ("every", "not"):
        yield from _walk(p[1])
    elif p[0] == "guard":
        yield from _walk(p[2])
    elif p[0] in ("and", "or", "->"):
        for o in p[1]:
            yield from _walk(o)


def left_out(p: Pattern) -> bool:
    """The documented decisions the module docstring names. (A guard around a pattern with
    ``every`` inside is no longer one: since session 41 Esper's guard at the top ends every
    instance at its end, Zone.whole, and ``every ((…) where …) -> R`` restarts its guard.)"""
    return False


def random_stream(r: random.Random) -> list[Event]:
    """Up to 10 events of the four types, ``k`` in 0..2, 0 to 600 ms apart (several at one
    instant)."""
    return stream([(r.choice("ABCD"), r.randint(0, 2), r.choice([0, 100, 300, 600]))
                   for _ in range(r.randint(0, 10))])


@settings(max_examples=500, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3), st.lists(st.integers(0, 12), max_size=2),
       st.integers(0, 3))
# (every around nested guards whose inner one ends first: Esper's outer guard leaks its timer,
# esper_tree's _Guard.false; one match, not five)
@example(21832, 3, [], 0)
def test_random_patterns_answer_as_esper(seed: int, depth: int, cuts: list[int],
                                         restore_at: int) -> None:
    """(Patterns and streams from ``seed``: hypothesis's own draws of nested structures and
    lists favour the smallest, which seldom meet the defects this test is for.)"""
    r = random.Random(seed)
    p = generate(r, depth, "ABCD", [0], [])
    if not tags(p) or left_out(p):
        return
    note(text(p))
    try:
        prog = program(p)
    except PatternSyntaxError:
        return
    for _ in range(8):
        events = random_stream(r)
        end = (events[-1].ts if events else 0) + 5000
        got = per_event(prog, events, end)
        note(f"{[(e.type, e.params[0], e.ts) for e in events]} -> {got}")
        assert cep(got) == esper(p, events, end)
        assert batched(prog, events, end, cuts, restore_at) == got


# ---- what it found -----------------------------------------------------------------------------

def times(pattern: str, events: list[tuple[str, int, int]], select: str = "*") -> list[tuple]:
    prog = cepflow.load_module(parse_epl(
        SCHEMAS + f"@Name('P') select {select} from pattern [{pattern}];", "r.epl"))
    evs = [Event(t, (k, i), ts) for i, (t, k, ts) in enumerate(events)]
    rows = per_event(prog, evs, (evs[-1].ts if evs else 0) + 5000)
    return [(ts, params) for ts, params, _ in rows]


@pytest.mark.parametrize(("events", "want"), [
    ([("B", 1, 300), ("D", 1, 400)], []),  # no A: the and is not true at the interval
    ([("B", 1, 300), ("D", 1, 400), ("A", 0, 500)], [(900, (0, 2))]),  # A waits for it
    ([("B", 1, 300), ("D", 1, 400), ("A", 0, 1200)], [(1200, (0, 2))]),  # A after it
])
def test_a_timed_and_after_two_steps_needs_its_event(events: list, want: list) -> None:
    """``X -> Y -> (timer:interval(Δ) and A)``: true at the later of the two (EvalAndStateNode);
    after two steps the interval alone completed it (the window's waiting run was lost when
    the sequence was joined)."""
    pattern = "o1=B -> o2=D -> (timer:interval(500 msec) and o3=A)"
    assert times(pattern, events, "o1.v as a, o3.v as c") == want


@pytest.mark.parametrize(("pattern", "events", "want"), [
    ("(timer:interval(1000 msec) or o1=C) where timer:within(400 msec)", [], []),
    ("(timer:interval(300 msec) or o1=C) where timer:within(400 msec)", [], [(300, (None,))]),
    ("o0=A -> ((timer:interval(1000 msec) or o1=C) where timer:within(400 msec))",
     [("A", 0, 100)], []),
    ("(timer:interval(1000 msec) and not C) where timer:within(400 msec)", [], []),
    ("(o1=A and timer:interval(300 msec)) where timer:within(1200 msec)", [("A", 0, 100)],
     [(300, (0,))]),
    ("(o1=A and timer:interval(300 msec)) where timer:within(1200 msec)", [("A", 0, 1100)],
     [(1100, (0,))]),
    ("(o1=A and timer:interval(300 msec)) where timer:within(1200 msec)", [("A", 0, 1200)],
     []),
    ("(o1=A and timer:interval(300 msec)) where timer:within(200 msec)", [("A", 0, 100)], []),
])
def test_a_guard_around_a_timed_or_and_ends_it(pattern: str, events: list, want: list
                                               ) -> None:
    """A guard shorter than the interval inside ends the pattern (EvalGuardStateNode quits
    it): the two windows were merged into the shorter, whose end then completed the match."""
    assert times(pattern, events, "o1.v as a" if "o1" in pattern else "*") == want


@pytest.mark.parametrize(("pattern", "events", "want"), [
    # D completes the or: it quits, a later C starts nothing
    ("o0=A -> (o1=D or o2=C) -> every o4=B", [("A", 0, 100), ("D", 0, 200), ("C", 0, 300),
                                              ("B", 0, 400)], [(400, (1, None, 3))]),
    ("((o1=D or o2=C) where timer:within(1200 msec)) -> every o4=B",
     [("D", 0, 800), ("D", 0, 900), ("B", 0, 1600)], [(1600, (0, None, 2))]),
    # one event fits two alternatives: the first written takes it, once
    ("(o1=D or o2=C or o3=C) -> every o4=B", [("C", 2, 100), ("B", 0, 700)],
     [(700, (None, 0, 1))]),
])
def test_an_or_quits_when_one_alternative_reports(pattern: str, events: list, want: list
                                                  ) -> None:
    """EvalOrStateNode quits its operands when one reports: after an event an or of single
    events kept waiting for its other alternatives (a later C began a second instance), and
    two alternatives that one event fits both went on."""
    assert times(pattern, events, "o1.v as a, o2.v as b, o4.v as d") == want


def test_a_tag_of_an_or_operand_not_taken_is_null() -> None:
    """``o2=D(k = o1.k)`` inside an or read as ``o2.k`` being ``o1.k``: when the other operand
    matched, a later ``A(k = o2.k)`` compared with ``o1``'s value (Esper: ``o2`` is null)."""
    pattern = ("o1=A -> ((o2=D(k = o1.k) or o3=C(k > 0)) -> (o4=A(k > 0) and "
               "o5=A(k = o2.k)))")
    assert times(pattern, [("A", 1, 300), ("C", 2, 400), ("A", 1, 700)]) == []
    rows = times("o1=A -> (o2=D(k = o1.k) or o3=C) -> o5=B",
                 [("A", 1, 300), ("C", 1, 500), ("B", 1, 700)], "o2.k as k2, o3.v as c")
    assert rows == [(700, (None, 1))]


def test_select_star_gives_the_untaken_alternative_null() -> None:
    """``select *`` reads every tag's fields: an alternative's key equated to ``a``'s is its
    own there (null when the other alternative matched) and the equality a filter — the pair
    kernel takes it as alternatives with guards on ``a`` —, through ``Engine.run`` too."""
    pattern = "every a=A -> (b=B(k = a.k) or c=C(k = a.k))"
    events = [("A", 1, 0), ("C", 1, 100), ("A", 2, 200), ("B", 2, 300)]
    want = [(100, (1, 0, None, None, 1, 1)), (300, (2, 2, 2, 3, None, None))]
    assert times(pattern, events) == want
    prog = cepflow.load_module(parse_epl(
        SCHEMAS + f"@Name('P') select * from pattern [{pattern}];", "r.epl"))
    eng = cepflow.Engine(prog, start=0)
    assert eng._pairs is not None
    got = eng.run([Event(t, (k, i), ts) for i, (t, k, ts) in enumerate(events)])
    assert [(ce.ts, ce.params) for ce in got] == want


def test_a_guard_around_every_on_a_group_ends_every_instance_at_its_end() -> None:
    """Esper's guard around the whole pattern runs from the statement's start and, at Δ, quits
    everything under it (EvalGuardStateNode, TimerWithinGuard): the instance begun by D at
    900 ms is gone at 1200 ms, before B (cepflow read it as each instance's window from its
    first event before session 41 and matched)."""
    pattern = "(every (o1=D -> o2=B)) where timer:within(1200 msec)"
    events = [("D", 0, 900), ("B", 0, 1300)]
    assert times(pattern, events, "o1.v as d, o2.v as b") == []
    assert times(pattern, [("D", 0, 900), ("B", 0, 1100)], "o1.v as d, o2.v as b") == [
        (1100, (0, 1))]
    assert evaluate(("guard", 1200, ("every", ("->", [("atom", "o1", "D", ""),
                                                      ("atom", "o2", "B", "")]))),
                    [Event(t, (k, i), ts) for i, (t, k, ts) in enumerate(events)], 6300) == []


def test_an_or_under_an_inner_every_takes_one_alternative() -> None:
    """``every (…)`` inside a pattern around an or: each event the or's operands both fit
    starts one instance, by the operand written first (the every forks it)."""
    assert times("o0=B -> every (o1=A(k = 0) or o3=A)", [("B", 0, 0), ("A", 0, 100),
                                                           ("A", 1, 200)],
                 "o1.v as a, o3.v as c") == [(100, (1, None)), (200, (None, 2))]
