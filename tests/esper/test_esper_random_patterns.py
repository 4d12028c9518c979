"""Random Esper patterns against an interpreter of Esper's state nodes (tests/esper/esper_tree.py):
``every``, ``not``, ``and``, ``or`` (its operands sharing event types or not), followed-by,
``timer:within`` guards and ``timer:interval`` — and since session 41 ``[n]``, ``until``,
``every-distinct``, ``timer:withinmax`` and ``-[n]>``, and since session 42 every-distinct's
expiry and a ``not`` whose filter reads an earlier tag — nested up to three deep, filters on
the event's own field and on an earlier tag's, over random streams — per event the same
matches as Esper's tree, and ``Engine.run`` in batches cut anywhere with a save / restore
between the same as per event. A form cepflow refuses is skipped (its refusal is tested where
the form is).

Left out, as documented decisions or open work (docs/conformance.md, docs/esper.md):
``timer:interval(0)`` (Esper fires it within the event that started it). (A guard under
``every`` around more than one event, left out at first, agrees since session 40's restart; a
guard around a pattern with ``every`` inside since session 41: docs/esper.md.)

The pinned cases below are the wrong answers this test found (sessions 40 and 41), each
derived by hand from the state nodes."""

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
    """A pattern over the event ``types`` (an or gives its operands disjoint types or, one
    time in two, all of them: one event may then complete two operands at once); tags
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
    kind = r.choices(["every", "not", "guard", "and", "or", "->", "until", "distinct"],
                     [3, 1, 2, 2, 2, 4, 2, 1])[0]
    if kind == "every":
        return ("every", generate(r, depth - 1, types, made, earlier))
    if kind == "distinct":
        p = generate(r, depth - 1, types, made, earlier)
        if not tags(p):
            return ("every", p)
        if r.random() < 0.4:  # keys that expire
            return ("distinct", r.choice(tags(p)), p, r.choice([200, 500, 1000]))
        return ("distinct", r.choice(tags(p)), p)
    if kind == "until":  # (the repeated operand untagged: its tags are arrays; the end's
        # types, one time in two, all of them: one event may fit both, the end taking it —
        # test_an_until_ends_at_the_first_event_of_its_end)
        if len(types) < 2:
            return generate(r, 0, types, made, earlier)
        shuffled = r.sample(types, len(types))
        cut = r.randint(1, len(types) - 1)
        sub = _untagged(generate(r, depth - 1, "".join(shuffled[:cut]), [0], earlier))
        if r.random() < 0.4:
            n = r.choice([1, 2, 3])
            return ("until", n, n, sub, None)
        lo, hi = r.choice([(None, None), (1, None), (2, None), (None, 2), (1, 2), (2, 3),
                           (2, 2)])
        ends = types if r.random() < 0.5 else "".join(shuffled[cut:])
        return ("until", lo, hi, sub, generate(r, depth - 1, ends, made, earlier))
    if kind == "not":  # (its filter on an earlier step's tag one time in three)
        f = r.choice(sorted(FILTERS))
        if earlier and r.random() < 0.35:
            f = f"k = {r.choice(earlier)}.k"
        return ("not", ("atom", None, r.choice(types), f))
    if kind == "guard" and r.random() < 0.3:
        return ("guardmax", r.choice([400, 700, 1200]), r.choice([0, 1, 2]),
                generate(r, depth - 1, types, made, earlier))
    if kind == "guard":
        return ("guard", r.choice([400, 700, 1200]),
                generate(r, depth - 1, types, made, earlier))
    n = r.choice([2, 2, 3])
    if kind == "or":
        if len(types) < n:
            return generate(r, 0, types, made, earlier)
        shuffled = r.sample(types, len(types))
        parts = [shuffled[i::n] for i in range(n)] if r.random() < 0.5 else [types] * n
        return ("or", [generate(r, depth - 1, "".join(t), made, earlier) for t in parts])
    ops: list[Pattern] = []
    seen = list(earlier)
    for _ in range(n):
        o = generate(r, depth - 1, types, made, seen if kind == "->" else earlier)
        ops.append(o)
        if kind == "->":
            seen = seen + tags(o)
    if kind == "->" and r.random() < 0.3:
        return (kind, ops, [r.choice([None, 1, 2]) for _ in ops[1:]])
    return (kind, ops)


def _untagged(p: Pattern) -> Pattern:
    """``p`` with its atoms' tags and filters on tags dropped."""
    if p[0] == "atom":
        return ("atom", None, p[2], "" if p[3].startswith("k = o") else p[3])
    if p[0] in ("every", "not"):
        return (p[0], _untagged(p[1]))
    if p[0] in ("guard", "guardmax"):
        return (*p[:-1], _untagged(p[-1]))
    if p[0] == "distinct":
        return ("every", _untagged(p[2]))
    if p[0] == "until":
        return (*p[:3], _untagged(p[3]), None if p[4] is None else _untagged(p[4]))
    if p[0] == "interval":
        return p
    return (p[0], [_untagged(o) for o in p[1]], *p[2:])


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
    drawn_answers_as_esper(generate(r, depth, "ABCD", [0], []), r, cuts, restore_at)


def clocked(r: random.Random) -> Pattern:
    """A pattern begun by Esper's crontab observer on the seconds of the minute (the one place
    cepflow runs ``timer:at``, docs/esper.md): ``[every] timer:at(…) -> P``, ``every
    (timer:at(…) -> P)``, ``[every] (timer:at(…) and not X) -> P`` and ``every`` around the
    whole of that."""
    at = ("at", r.choice([(), (1, 3), (2,), (0, 2, 4, 6), (1, 2, 5), (3, 4)]))
    if r.random() < 0.35:
        at = ("and", [at, ("not", ("atom", None, r.choice("ABCD"), r.choice(sorted(FILTERS))))])
    rest = generate(r, r.choice([0, 1, 2]), "ABCD", [0], [])
    form = r.choice(["every-at", "at", "every-whole"])
    if form == "every-at":
        return ("->", [("every", at), rest])
    if form == "at":
        return ("->", [at, rest])
    return ("every", ("->", [at, rest]))


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(0, 12), max_size=2), st.integers(0, 3))
def test_random_timer_at_patterns_answer_as_esper(seed: int, cuts: list[int], restore_at: int
                                                  ) -> None:
    """``timer:at`` at a pattern's start (its clock, from the statement's start at 0) followed
    by random patterns, against the tree."""
    r = random.Random(seed)
    drawn_answers_as_esper(clocked(r), r, cuts, restore_at)


def drawn_answers_as_esper(p: Pattern, r: random.Random, cuts: list[int], restore_at: int
                           ) -> None:
    """A drawn pattern with tags that cepflow takes (a form it refuses is skipped: its
    refusal is tested where the form is) answers as the tree on 8 streams drawn from ``r``."""
    if not tags(p):
        return
    note(text(p))
    try:
        prog = program(p)
    except PatternSyntaxError:
        return
    answers_as_esper(p, prog, r, 8, cuts, restore_at)


def answers_as_esper(p: Pattern, prog: Any, r: random.Random, n: int, cuts: list[int],
                     restore_at: int) -> list[tuple[list[Event], float]]:
    """``n`` random streams drawn from ``r``: per event ``prog`` gives the tree's matches of
    ``p``, and ``Engine.run`` cut at ``cuts`` with a save / restore the same; the streams and
    their ends."""
    out = []
    for _ in range(n):
        events = random_stream(r)
        end = (events[-1].ts if events else 0) + 5000
        got = per_event(prog, events, end)
        note(f"{[(e.type, e.params[0], e.ts) for e in events]} -> {got}")
        assert cep(got) == esper(p, events, end)
        assert batched(prog, events, end, cuts, restore_at) == got
        out.append((events, end))
    return out


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


@pytest.mark.parametrize(("pattern", "events", "want"), [
    # B(k=1) fits both every nodes: each reports it (EvalOrStateNode passes each child's
    # result on and quits nothing: an every child never quits); B(k=0) fits o2 only
    ("every o1=B(k > 0) or every o2=B", [("B", 1, 100), ("B", 0, 200)],
     [(100, (0, None)), (100, (None, 0)), (200, (None, 1))]),
    # followed by more: each report starts its own C (two instances for the first B)
    ("(every o1=B(k > 0) or every o2=B) -> o3=C", [("B", 1, 100), ("B", 0, 200),
                                                   ("C", 0, 300)],
     [(300, (0, None, 2)), (300, (None, 0, 2)), (300, (None, 1, 2))]),
    # an or of single events under one every stays one report: its or quits at the first
    ("every (o1=B(k > 0) or o2=B)", [("B", 1, 100), ("B", 0, 200)],
     [(100, (0, None)), (200, (None, 1))]),
    ("every (o1=B(k > 0) or o2=B) or every o3=B", [("B", 1, 100)],
     [(100, (0, None, None)), (100, (None, None, 0))]),
])
def test_every_or_every_reports_once_per_every(pattern: str, events: list, want: list
                                               ) -> None:
    """``every X or every Y`` with one event fitting both: two every nodes, two results (it
    was read as ``every (X or Y)``, whose or reports once); through ``Engine.run`` cut and
    restored the same."""
    tags = [t for t in ("o1", "o2", "o3") if f"{t}=" in pattern]
    select = ", ".join(f"{t}.v as {t}" for t in tags)
    assert times(pattern, events, select) == want
    prog = cepflow.load_module(parse_epl(
        SCHEMAS + f"@Name('P') select {select} from pattern [{pattern}];", "r.epl"))
    evs = [Event(t, (k, i), ts) for i, (t, k, ts) in enumerate(events)]
    got = per_event(prog, evs, evs[-1].ts + 5000)
    for cut in range(len(evs) + 1):
        assert batched(prog, evs, evs[-1].ts + 5000, [cut], 1) == got


def _a(tag: str, typ: str, f: str = "") -> Pattern:
    return ("atom", tag, typ, f)


@pytest.mark.parametrize(("p", "events", "want"), [
    # the and's B filter and o1's both started at the statement's start, o1's first (the or
    # starts its operands in writing order): o1 reports first, the or quits the and
    (("or", [_a("o1", "B", "k > 0"), _a("o2", "A"), ("and", [_a("o3", "B"), _a("o4", "D")])]),
     [("D", 0, 100), ("B", 1, 200)], [(200, (1, None, None, None))]),
    # written the other way round the and's B filter started first: the and reports
    (("or", [("and", [_a("o3", "B"), _a("o4", "D")]), _a("o1", "B")]),
     [("D", 0, 100), ("B", 1, 200)], [(200, (1, 0, None))]),
    # sequences (the or's product): the second operand's B filter started at A, the first's
    # at C — later: the second reports first
    (("or", [("->", [_a("o1", "C"), _a("o2", "B")]), ("->", [_a("o3", "A"), _a("o4", "B")])]),
     [("A", 0, 100), ("C", 0, 200), ("B", 0, 300)], [(300, (None, None, 0, 2))]),
    (("every", ("or", [("->", [_a("o1", "C"), _a("o2", "B")]),
                       ("->", [_a("o3", "A"), _a("o4", "B")])])),
     [("A", 0, 100), ("C", 0, 200), ("B", 0, 300)], [(300, (None, None, 0, 2))]),
    # and beside a sequence: the and's B filter started with the and, before C
    (("or", [("->", [_a("o1", "C"), _a("o2", "B")]), ("and", [_a("o3", "A"), _a("o4", "B")])]),
     [("C", 0, 100), ("A", 0, 200), ("B", 0, 300)], [(300, (None, None, 1, 2))]),
    # after a step, followed by more: both C filters started at A, o3's first
    (("->", [_a("o0", "A"), ("or", [_a("o3", "C"), ("and", [_a("o1", "B"), _a("o2", "C")])]),
             _a("o4", "A")]),
     [("A", 0, 100), ("B", 0, 200), ("C", 0, 300), ("A", 0, 500)],
     [(500, (0, 2, None, None, 3))]),
    # C completes the or (o3) while the and waits for D: the or quits the and, whose D then
    # completes nothing (cepflow kept the and's run and its older events won at the end)
    (("->", [_a("o0", "A"), ("or", [("and", [_a("o1", "B"), ("->", [_a("o5", "C"),
                                                                    _a("o2", "D")])]),
                                    _a("o3", "C")]), _a("o4", "A")]),
     [("A", 0, 100), ("B", 0, 200), ("C", 0, 300), ("D", 0, 400), ("A", 0, 500)],
     [(500, (0, None, None, None, 2, 4))]),
    (("->", [_a("o0", "A"), ("or", [("and", [_a("o1", "B"), _a("o2", "D")]), _a("o3", "C")]),
             _a("o4", "A")]),
     [("A", 0, 100), ("B", 0, 200), ("C", 0, 300), ("D", 0, 400), ("A", 0, 500)],
     [(500, (0, None, None, 2, 4))]),
])
def test_an_or_takes_the_operand_that_reports_first(p: Pattern, events: list, want: list
                                                    ) -> None:
    """One event completing two operands of an or: EvalOrStateNode takes the child that
    reports first — filters are served in the order they started — and quits the others
    (cepflow took the lowest operand of a product, and of alternatives the run with the
    oldest events, also when one completed later)."""
    evs = [Event(t, (k, i), ts) for i, (t, k, ts) in enumerate(events)]
    assert evaluate(p, evs, evs[-1].ts + 5000) == want
    assert times(text(p), events, ", ".join(f"{t}.v as {t}" for t in tags(p))) == want
    prog = program(p)
    got = per_event(prog, evs, evs[-1].ts + 5000)
    for cut in range(len(evs) + 1):
        assert batched(prog, evs, evs[-1].ts + 5000, [cut], 1) == got


@pytest.mark.parametrize("pattern", [
    "o1=D and (o3=B or (o4=A -> o5=A))",
    "(o1=D -> ((o2=B -> o3=C) or o4=A)) and o5=C",
])
def test_an_or_of_sequences_inside_an_and_operand_is_refused(pattern: str) -> None:
    """Inside an operand of an and the or was the union of its alternatives, which commits to
    the alternative whose first event comes: ``D and (B or (A -> A))`` over A, B, D never
    matched (EvalOrStateNode runs them side by side: B completes it; Esper gives (D, B) at
    D). Refused now, with its place."""
    with pytest.raises(PatternSyntaxError, match="an 'or' of sequences inside an operand"):
        program_of(pattern)
    p = ("and", [_a("o1", "D"), ("or", [_a("o3", "B"), ("->", [_a("o4", "A"),
                                                              _a("o5", "A")])])])
    evs = [Event(t, (0, i), ts) for i, (t, ts) in enumerate([("A", 100), ("B", 200),
                                                            ("D", 500)])]
    assert evaluate(p, evs, 5500) == [(500, (2, 1, None, None))]


def program_of(pattern: str) -> Any:
    return cepflow.load_module(parse_epl(
        SCHEMAS + f"@Name('P') select * from pattern [{pattern}];", "r.epl"))


def test_a_guard_after_every_on_a_guarded_event_runs_from_that_event() -> None:
    """``D -> every (A where timer:within(400 msec)) -> (B where timer:within(400 msec))``:
    each A starts the B guard (EvalFollowedByStateNode starts it at A's result), so the A at
    200 has its B guard end at 600 and only the A at 500 pairs with B at 700. (Found by the
    random test in session 41: the B guard ran from B itself, a window of one event —
    compiler.esper.guard_windows now moves it in front of ``every`` on a guarded event as in
    front of ``every`` on an event.)"""
    pattern = ("o1=D -> (every (o2=A where timer:within(400 msec))) -> "
               "(o3=B where timer:within(400 msec))")
    events = [("D", 0, 100), ("A", 0, 200), ("A", 0, 500), ("B", 0, 700)]
    p = ("->", [_a("o1", "D"), ("every", ("guard", 400, _a("o2", "A"))),
                ("guard", 400, _a("o3", "B"))])
    evs = [Event(t, (k, i), ts) for i, (t, k, ts) in enumerate(events)]
    assert evaluate(p, evs, 5700) == [(700, (0, 2, 3))]
    assert times(pattern, events, "o1.v as d, o2.v as a, o3.v as b") == [(700, (0, 2, 3))]


def test_an_until_ends_at_the_first_event_of_its_end() -> None:
    """``(C until o1=C(k = 0)) -> o2=D`` over C(0), C(0), D: EvalMatchUntilStateNode starts
    its until child first, so the first C(0) ends it (o1 = that C); the second C starts
    nothing. cepflow also kept the run where the first C was a repetition, ended the until at
    the second, and that run's older events won: o1 = the second C (found by the random test,
    session 41; the end's steps now take such an event alone: Position.until_end)."""
    events = [("C", 0, 600), ("C", 0, 700), ("D", 0, 800)]
    p = ("->", [("until", None, None, ("atom", None, "C", ""), _a("o1", "C", "k = 0")),
                _a("o2", "D")])
    evs = [Event(t, (k, i), ts) for i, (t, k, ts) in enumerate(events)]
    assert evaluate(p, evs, 5800) == [(800, (0, 2))]
    assert times(text(p), events, "o1.v as c, o2.v as d") == [(800, (0, 2))]


def _both(p: Pattern, events: list[tuple[str, int, int]]) -> tuple[Counter, Counter]:
    """cepflow's matches per event and through ``Engine.run`` cut in two with a save /
    restore, each against Esper's tree."""
    evs = [Event(t, (k, i), ts) for i, (t, k, ts) in enumerate(events)]
    end = (evs[-1].ts if evs else 0) + 5000
    prog = program(p)
    got = per_event(prog, evs, end)
    assert batched(prog, evs, end, [1], 1) == got
    return cep(got), esper(p, evs, end)


def test_an_and_with_an_interval_after_a_timer_step_waits_for_its_event() -> None:
    """``D -> timer:interval(500) -> (timer:interval(300) and A)`` (session 41, found by the
    random test's wider seeds): the and starts at 500, its interval is over at 800 and its
    A is the first one after 500 — the A at 100 came before the and started. cepflow
    completed at 800 without an A (the rest after a timer step lost the and's resume)."""
    p = ("->", [("atom", "o1", "D", ""), ("interval", 500),
                ("and", [("interval", 300), ("atom", "o3", "A", "")])])
    got, want = _both(p, [("D", 1, 0), ("A", 0, 100), ("A", 2, 900)])
    assert got == want == Counter({(900, (0, 2)): 1})
    got, want = _both(p, [("D", 1, 0), ("A", 0, 600)])
    assert got == want == Counter({(800, (0, 1)): 1})  # (A before the interval's end)


@pytest.mark.parametrize(("inner", "outer"), [(400, 700), (700, 400)])
def test_a_guard_right_around_a_guard_after_a_step_ends_at_the_shorter(inner: int,
                                                                       outer: int) -> None:
    """``B -> ((D where timer:within(a)) where timer:within(b))``: both guards start when B
    completed (EvalGuardStateNode starts its child with itself), the first timer to fire quits
    both — one guard of min(a, b). cepflow moved the outer guard in front of B and left the
    inner one around D alone (a window of one event): a D 600 ms after B matched with a =
    400 (session 41)."""
    p = ("->", [("atom", "o1", "B", ""),
                ("guard", outer, ("guard", inner, ("atom", "o3", "D", "")))])
    for gap, want in ((300, 1), (399, 1), (400, 0), (600, 0)):
        got, esp = _both(p, [("B", 1, 300), ("D", 2, 300 + gap)])
        assert got == esp and sum(got.values()) == want, (gap, got, esp)
