"""``every x = X`` as an operand of an ``and`` / ``or`` that is the whole pattern
(docs/esper.md, "every inside and / or"): ``b = B and every d = D``, ``every a = A or d = D``.

The oracle is written here from Esper's state nodes (EvalAndStateNode, EvalOrStateNode,
EvalEveryStateNode over a filter), started at the statement's start:

* an operand without ``every`` reports the first event that passes its filter and quits; an
  operand ``every x = X`` reports each one and never quits;
* ``and``: a report is kept with its operand (while another operand is still active, or some
  other has none yet) and, when every other operand has reported, the and emits one result per
  combination of the reporter's event with the others' kept events; it quits when all its
  operands have;
* ``or``: every report is a result; a report by an operand without ``every`` quits the or (the
  lowest operand when one event fits several: the others' filters are not asked any more).

The engine is compared with it per event (the matches each event causes, as a multiset: within
one event cepflow emits in the age of its partial matches) and with itself through
``Engine.run`` in batches cut anywhere, with ``advance_to`` and a save / restore (through JSON)
between: the same matches, ids and order, and the same saved state at the end.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_statement_start import stream
from tests.support import reads_back

import cepflow
from cepflow.events.event import Event
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.runtime.state import restore_state, save_state

SCHEMAS = "".join(f"create schema {t}(k int, v int);\n" for t in "ABD")
FILTERS = {"": lambda k: True, "k = 0": lambda k: k == 0, "k > 0": lambda k: k > 0}

#: an operand: (type, filter text, every?)
Operand = tuple[str, str, bool]


def text(word: str, ops: list[Operand]) -> str:
    parts = []
    for i, (t, f, every) in enumerate(ops):
        atom = f"o{i}={t}({f})"
        parts.append(f"every {atom}" if every else atom)
    return f" {word} ".join(parts)


def program(word: str, ops: list[Operand]) -> Any:
    select = ", ".join(f"o{i}.v as v{i}" for i in range(len(ops)))
    return cepflow.load_module(parse_epl(
        SCHEMAS + f"@Name('P') select {select} from pattern [{text(word, ops)}];", "t.epl"))


def oracle(word: str, ops: list[Operand], events: list[Event]) -> list[tuple]:
    """Esper's results, per event: (event index, the operands' ``v``, None where unbound)."""
    n = len(ops)
    kept: list[list[int]] = [[] for _ in ops]
    active = [True] * n
    out: list[tuple] = []
    for x, e in enumerate(events):
        if not any(active):
            break
        for i, (t, f, every) in enumerate(ops):
            if not active[i] or e.type != t or not FILTERS[f](e.params[0]):
                continue
            v = e.params[1]
            if not every:
                active[i] = False
            if word == "or":
                out.append((x, tuple(v if j == i else None for j in range(n))))
                if not every:
                    active = [False] * n
                    break
                continue
            others = [j for j in range(n) if j != i]
            if not all(kept[j] for j in others) or any(active[j] for j in others):
                kept[i].append(v)
            if all(kept[j] for j in others):
                for combo in itertools.product(*(kept[j] for j in others)):
                    row = dict(zip(others, combo, strict=True))
                    row[i] = v
                    out.append((x, tuple(row[j] for j in range(n))))
    return out


def per_event(prog: Any, events: list[Event]) -> list[tuple]:
    engine = cepflow.Engine(prog, start=0)
    return [(x, ce.params) for x, e in enumerate(events) for ce in engine.process(e)]


@st.composite
def patterns(draw: st.DrawFn) -> tuple[str, list[Operand]]:
    """2 or 3 operands; ``every`` only on an operand whose type no other operand has (the
    supported form), at least one of them."""
    word = draw(st.sampled_from(["and", "or"]))
    types = draw(st.lists(st.sampled_from("ABD"), min_size=2, max_size=3))
    alone = [i for i, t in enumerate(types) if types.count(t) == 1]
    if not alone:
        types[0] = next(t for t in "ABD" if t not in types)
        alone = [0]
    every = set(draw(st.lists(st.sampled_from(alone), min_size=1, unique=True)))
    return word, [(t, draw(st.sampled_from(sorted(FILTERS))), i in every)
                  for i, t in enumerate(types)]


events_st = st.lists(st.tuples(st.sampled_from("ABD"), st.integers(0, 1), st.integers(1, 5)),
                     max_size=14).map(stream)


def batched(prog: Any, events: list[Event], cuts: list[int], restore_at: int,
            advance: bool) -> tuple[list[tuple], Any]:
    """Engine.run over ``events`` cut at ``cuts``, a save / restore before batch
    ``restore_at``, time advanced to each batch's last event (``advance``)."""
    engine = cepflow.Engine(prog, start=0)
    bounds = [0, *sorted({c % (len(events) + 1) for c in cuts}), len(events)]
    out = []
    for b, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        if b == restore_at:
            state = json.loads(json.dumps(save_state(engine)))
            engine = restore_state(cepflow.Engine(prog, start=0), state)
        out.extend((ce.ts, ce.params, ce.match_id) for ce in engine.run(events[lo:hi]))
        if advance and hi > lo:
            engine.advance_to(events[hi - 1].ts)
    return out, engine


@settings(max_examples=120, deadline=None)
@given(patterns(), events_st)
def test_per_event_is_esper(pattern: tuple[str, list[Operand]], events: list[Event]) -> None:
    word, ops = pattern
    got = per_event(program(word, ops), events)
    want = oracle(word, ops, events)
    assert Counter(got) == Counter(want)
    assert [x for x, _ in got] == sorted(x for x, _ in got)


@settings(max_examples=60, deadline=None)
@given(patterns(), events_st, st.lists(st.integers(0, 15), max_size=4), st.integers(0, 4),
       st.booleans())
def test_batches_and_restores_are_per_event(pattern: tuple[str, list[Operand]],
                                            events: list[Event], cuts: list[int],
                                            restore_at: int, advance: bool) -> None:
    same_as_per_event(program(*pattern), events, cuts, restore_at, advance)


def same_as_per_event(prog: Any, events: list[Event], cuts: list[int], restore_at: int,
                      advance: bool) -> None:
    """:func:`batched` gives the per-event matches (ids and order too) and saved state."""
    engine = cepflow.Engine(prog, start=0)
    want = [(ce.ts, ce.params, ce.match_id) for e in events for ce in engine.process(e)]
    got, other = batched(prog, events, cuts, restore_at, advance)
    assert got == want
    if events:
        engine.advance_to(events[-1].ts)
        other.advance_to(events[-1].ts)
    assert save_state(other) == save_state(engine)


def test_hand_derived() -> None:
    """``o0 = A and every o1 = B(k = 0)`` over A B(0) B(1) B(0) A: the first A with each
    B(0), the one before it at the A (v 0 with 1), the later one at itself (0 with 3); the
    second A is no operand's (o0 took its event). ``every o0 = A or o1 = B(k > 0)`` over
    A A B(0) B(1) A: each A until B(1) ends the or."""
    evs = stream([("B", 0, 1), ("A", 0, 1), ("B", 1, 1), ("B", 0, 1), ("A", 0, 1)])
    got = per_event(program("and", [("A", "", False), ("B", "k = 0", True)]), evs)
    assert got == [(1, (1, 0)), (3, (1, 3))]
    evs = stream([("A", 0, 1), ("A", 1, 1), ("B", 0, 1), ("B", 1, 1), ("A", 0, 1)])
    got = per_event(program("or", [("A", "", True), ("B", "k > 0", False)]), evs)
    assert got == [(0, (0, None)), (1, (1, None)), (3, (None, 3))]


def test_three_operands_pair_every_combination() -> None:
    """``every o0 = A and o1 = B and every o2 = D``: A0 D1 A2 B3 D4 — at B3 the kept As and
    Ds combine (2 x 1), at D4 the As with B3 (2)."""
    evs = stream([("A", 0, 1), ("D", 0, 1), ("A", 0, 1), ("B", 0, 1), ("D", 0, 1)])
    got = per_event(program("and", [("A", "", True), ("B", "", False), ("D", "", True)]), evs)
    assert Counter(got) == Counter([(3, (0, 3, 1)), (3, (2, 3, 1)), (4, (0, 3, 4)),
                                    (4, (2, 3, 4))])


@pytest.mark.parametrize("body, message", [
    ("every o0=A and o1=A", "with another operand of type A"),
    ("o0=A -> (o1=B and every o2=D)", "every inside 'and' is not supported here"),
    ("every ((o0=B and every o1=D) -> o2=A)", "every (…) around a pattern with every inside"),
    ("o0=A and every o1=B(k = o0.k)", "reads 'o0' of another operand"),
])
def test_what_stays_refused_says_what_is_supported(body: str, message: str) -> None:
    refused_with(body, message)


def refused_with(body: str, message: str) -> None:
    """``select * from pattern [body]`` is reported at its place with ``message``."""
    with pytest.raises(PatternSyntaxError) as info:
        cepflow.load_module(parse_epl(SCHEMAS + f"@Name('P') select * from pattern [{body}];",
                                      "t.epl"))
    d = info.value.diagnostics[0]
    assert message in d.message and d.file == "t.epl" and d.line is not None


@pytest.mark.parametrize("body", ["o0=B and every o1=D(k = 0)", "every o0=A or o1=D(k > 0)",
                                  "every o0=A and every o1=D and o2=B"])
def test_the_epl_printer_writes_them_back(body: str) -> None:
    """The reader's start (``timer:interval(0) -> (…)``) prints and reads back as itself, and
    the printed statement runs as the written one."""
    printed_back(body, "timer:interval(0 msec) -> (")


def printed_back(body: str, start: str) -> None:
    """``select * from pattern [body]`` prints with ``start`` (the reader's zero interval),
    reads back as itself, and the printed statement runs as the written one."""
    module, printed = reads_back(SCHEMAS + f"@Name('P') select * from pattern [{body}];")
    assert start in printed
    again = parse_epl(printed)
    evs = stream([("A", 1, 1), ("D", 0, 1), ("B", 0, 1), ("D", 1, 1), ("A", 0, 1), ("D", 0, 1)])
    assert per_event(cepflow.load_module(again), evs) == per_event(
        cepflow.load_module(module), evs) != []


# ---- every (x = X where timer:within(Δ)) inside a pattern -----------------------------------

def guarded_oracle(delta: int, events: list[Event]) -> list[tuple]:
    """``a = A -> every (b = B(k = 0) where timer:within(Δ))`` as Esper runs it: after the
    first ``A`` the every starts the guarded filter; when the filter takes a ``B`` (a result)
    and when the guard expires (EvalGuardStateNode.guardQuit, restartable) the every starts a
    new one at that instant — timers before the events of their instant —, which does not see
    the event that ended the old one."""
    out: list[tuple] = []
    a = None
    guard_start = None
    for x, e in enumerate(events):
        if a is None:
            if e.type == "A":
                a, guard_start = e.params[1], e.ts
            continue
        assert guard_start is not None
        while e.ts >= guard_start + delta:  # the guard expired: the every restarts it
            guard_start += delta
        if e.type == "B" and e.params[0] == 0:
            out.append((x, (a, e.params[1])))
            guard_start = e.ts
    return out


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 6), events_st)
def test_a_guarded_every_restarts_without_a_gap(delta: int, events: list[Event]) -> None:
    prog = cepflow.load_module(parse_epl(
        SCHEMAS + "@Name('P') select a.v as av, b.v as bv from pattern [a=A -> every b=B(k = 0) "
        f"where timer:within({delta} msec)];", "t.epl"))
    assert per_event(prog, events) == guarded_oracle(delta, events)
    engine = cepflow.Engine(prog, start=0)
    assert [(ce.ts, ce.params) for ce in engine.run(events)] == [
        (events[x].ts, p) for x, p in guarded_oracle(delta, events)]


def test_a_guard_of_zero_or_around_a_group_stays_refused() -> None:
    for body in ("a=A -> every b=B where timer:within(0 msec)",
                 "a=A -> every (b=B -> d=D) where timer:within(1 sec)"):
        with pytest.raises(PatternSyntaxError) as info:
            cepflow.load_module(parse_epl(SCHEMAS + f"@Name('P') select * from pattern [{body}];"))
        assert "every on a group inside a pattern" in info.value.diagnostics[0].message
