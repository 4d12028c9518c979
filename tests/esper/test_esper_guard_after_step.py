"""Esper's guard after a step of several events: ``X -> (P where timer:within(Δ))`` with ``X``
an ``and``, a repetition ``[n]``, a guarded step or a followed-by under a guard.

Esper's definitions: EvalFollowedByStateNode starts its next child when the one before turns
true, so the guard (EvalGuardStateNode) starts with ``P`` at the instant ``X`` completed — at
``X``'s last event — and its TimerWithinGuard ends ``P`` (false) when Δ passed first; a
followed-by whose child turns false is false (this instance of the rest dies). Filters see
only the events after the one that activated them. An event at the guard's end comes too late
(the timer fires before the events of its instant). ``every a=A -> …`` starts an instance at
each ``A``; ``every (…)`` around the whole starts the next instance when the last turned true
or false, at that instant (EvalEveryStateNode).

Checked here: an oracle written from those definitions against the engine per event, on the
token path, through ``Engine.run`` cut anywhere and with a JSON save/restore at the cut, then
time advanced (``advance_to``); hand-derived pinned cases (other streams, filters, several
instances, the clock); the forms still refused, with their place; the routes (no kernel or
split takes the form), the Petri net's translation, the EPL printer's text, saved partial
matches, ``cepflow graph`` / ``analyze``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_until_any_length import rows
from tests.esper.test_esper_until_timer import stream  # (type, k, gap): v its place
from tests.support import graph_each_and_analyze, reads_back

import cepflow
from cepflow.events.event import Event
from cepflow.language import ast
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.runtime.state import restore_state, save_state
from support import load_script, run_against_token_path

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = "".join(f"create schema {t}(k int, v int);\n" for t in "ABCD")


def program(body: str) -> Any:
    return cepflow.load_module(parse_epl(SCHEMAS + f"@Name('P') select * from pattern [{body}];",
                                         "g.epl"))


# -- the oracle ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Atom:
    """``tag=T`` (``T`` untagged when ``tag`` is empty) or, ``only`` set, ``tag=T(k=only)``."""

    tag: str
    type: str
    only: int | None = None

    def text(self) -> str:
        return (f"{self.tag}={self.type}" if self.tag else self.type) + (
            "" if self.only is None else f"(k={self.only})")

    def fits(self, e: Event) -> bool:
        return e.type == self.type and (self.only is None or e.params[0] == self.only)


@dataclass(frozen=True)
class Step:
    """One item of the followed-by: one event, ``(x and y)``, ``([n] x)``, ``((x -> y) or
    z)``, ``(y and not n)``; ``within`` (ms): ``(step where timer:within(within msec))``."""

    kind: str  # "one", "and", "rep", "or", "andnot"
    atoms: tuple[Atom, ...]
    within: int | None = None
    n: int = 2

    def text(self) -> str:
        a = [x.text() for x in self.atoms]
        core = (f"(({a[0]} -> {a[1]}) or {a[2]})" if self.kind == "or" else {
            "one": a[0], "and": f"({a[0]} and {a[-1]})",
            "rep": f"([{self.n}] {a[0]})",  # ([n] x where …: each x's own guard)
            "andnot": f"({a[0]} and not {a[-1]})"}[self.kind])
        return core if self.within is None else f"({core} where timer:within({self.within} msec))"


@dataclass(frozen=True)
class Form:
    """``steps`` as a followed-by: once (with ``outer``: a guard of that many ms around it
    all), ``every`` on the first (one event: ``spawn``) or ``every (…)`` around it all
    (``restart``)."""

    start: str  # "once", "spawn", "restart"
    steps: tuple[Step, ...]
    outer: int | None = None

    def text(self) -> str:
        body = " -> ".join(s.text() for s in self.steps)
        if self.outer is not None:
            body = f"({body}) where timer:within({self.outer} msec)"
        if self.start == "spawn":
            return "every " + body
        return f"every ({body})" if self.start == "restart" else body


def _first(a: Atom, events: list[Event], after: int) -> int | None:
    return next((j for j in range(after + 1, len(events)) if a.fits(events[j])), None)


def _core(s: Step, events: list[Event], after: int) -> tuple[bool, int, dict[str, Any]] | None:
    """Where step ``s`` activated after event ``after`` turns true or false — (True, event,
    tags) or (False, event, -) — without its guard; None: neither in the stream. Its filters
    see the later events, each takes its first (a filter quits when it matched); an and's
    operands both run from the start (one event may serve both: EvalAndStateNode); [n]
    restarts its operand after each result (EvalMatchUntilStateNode); an or is true with its
    first operand to be, with that operand's tags (EvalOrStateNode); ``y and not n`` is false
    at an ``n`` before the ``y`` (EvalNotStateNode turns true, the and false)."""
    x = s.atoms
    if s.kind == "one":
        j = _first(x[0], events, after)
        return None if j is None else (True, j, {f"{x[0].tag}.v": j})
    if s.kind == "and":
        js = [_first(a, events, after) for a in x]
        if None in js:
            return None
        return True, max(js), {f"{a.tag}.v": j for a, j in zip(x, js, strict=True)}
    if s.kind == "or":
        jx = _first(x[0], events, after)
        jy = None if jx is None else _first(x[1], events, jx)
        jz = _first(x[2], events, after)
        if jz is not None and (jy is None or jz < jy):
            return True, jz, {f"{x[2].tag}.v": jz}
        return None if jy is None else (True, jy, {f"{x[0].tag}.v": jx, f"{x[1].tag}.v": jy})
    if s.kind == "andnot":
        jy, jn = _first(x[0], events, after), _first(x[1], events, after)
        if jn is not None and (jy is None or jn < jy):
            return False, jn, {}
        return None if jy is None else (True, jy, {f"{x[0].tag}.v": jy})
    binds, j = {}, after
    for i in range(s.n):
        j = _first(x[0], events, j)
        if j is None:
            return None
        binds[f"{x[0].tag}[{i}].v"] = j
    return True, j, binds


def _instance(steps: tuple[Step, ...], events: list[Event], after: int, start: float,
              end: float) -> tuple[str, float, int, dict[str, Any]]:
    """One instance of the followed-by ``steps`` activated after event ``after`` at ``start``:
    ("true", time, event, tags); ("false", time, event (-1: at a guard's end), -): a step
    turned false — a guard ended first (TimerWithinGuard, its timer before the events of its
    instant), or an and's not — and so did the followed-by; ("open", …): still under way at
    ``end``."""
    binds: dict[str, Any] = {}
    for s in steps:
        got = _core(s, events, after)
        if s.within is not None:
            deadline = start + s.within
            if got is None or events[got[1]].ts >= deadline:
                return ("false", deadline, -1, {}) if deadline <= end else ("open", 0, -1, {})
        if got is None:
            return "open", 0, -1, {}
        ok, after, found = got
        if not ok:
            return "false", events[after].ts, after, {}
        binds.update(found)
        start = events[after].ts
    return "true", start, after, binds


def oracle(form: Form, events: list[Event], end: float) -> list[tuple[float, dict[str, Any]]]:
    out = []
    if form.start == "spawn":
        head, rest = form.steps[0].atoms[0], form.steps[1:]
        for j, e in enumerate(events):
            if head.fits(e):
                kind, t, _, binds = _instance(rest, events, j, e.ts, end)
                if kind == "true":
                    out.append((t, {f"{head.tag}.v": j, **binds}))
        return out
    after, start = -1, 0.0
    while True:
        kind, t, j, binds = _instance(form.steps, events, after, start, end)
        if kind == "true" and (form.outer is None or t < form.outer):
            out.append((t, binds))
        if kind == "open" or form.start == "once":
            return out
        # every (…): the next instance from that instant (after a guard's end: the events of
        # its instant and later)
        after = j if j >= 0 else max((i for i, e in enumerate(events) if e.ts < t), default=-1)
        start = t


def _canon(got: list[tuple[float, dict[str, Any]]]) -> list[str]:
    return sorted(json.dumps([float(t), {k: v for k, v in b.items() if k.endswith(".v")}],
                             sort_keys=True) for t, b in got)


@st.composite
def forms(draw: Any) -> Form:
    start = draw(st.sampled_from(["once", "spawn", "restart"]))
    n = draw(st.sampled_from([2, 2, 3]))
    tags = iter("abcdefghijkl")
    steps = []

    def atom(tagged: bool = True, avoid: str = "") -> Atom:
        t = draw(st.sampled_from([x for x in "AABBC" if x not in avoid]))
        return Atom(next(tags) if tagged else "", t, draw(st.sampled_from([None, None, None, 1])))

    for i in range(n):
        kind = "one" if (start == "spawn" and i == 0) else draw(st.sampled_from(
            ["and", "rep", "one", "or"] if i == 0 else ["one", "one", "and", "rep", "or",
                                                         "andnot"]))
        if kind == "or":  # (z not of y's type: one event would complete both operands)
            x, y = atom(), atom()
            atoms: tuple[Atom, ...] = (x, y, atom(avoid=y.type))
        elif kind == "andnot":  # (n not of y's type: one event would fit both)
            y = atom()
            atoms = (y, atom(False, avoid=y.type))
        else:
            atoms = tuple(atom() for _ in range(2 if kind == "and" else 1))
        # (no guard on the first step under every: every x=X where … is one event's, and
        # every ((…) where …) has its own reading: docs/conformance.md)
        # (an and with not before a guard: reported unless it is guarded itself)
        guarded = kind == "andnot" or ((i > 0 or start == "once") and draw(
            st.sampled_from([i > 0, True, False])))
        within = draw(st.sampled_from([500, 1000, 2500])) if guarded else None
        steps.append(Step(kind, atoms, within, draw(st.sampled_from([2, 2, 3]))))
    # a guard after a step that is not one event: at least one
    if not any((s.within is not None and i > 0 and steps[i - 1].kind != "one")
               or (s.within is not None and i > 1) for i, s in enumerate(steps)):
        last = steps[-1]
        steps[-1] = Step(last.kind, last.atoms, 1000, last.n)
    outer = draw(st.sampled_from([None, None, 1500, 4000])) if start == "once" else None
    return Form(start, tuple(steps), outer)


events_st = st.lists(st.tuples(st.sampled_from("AAABBBCD"), st.integers(0, 1),
                               st.sampled_from([0, 100, 250, 250, 500, 1000])),
                     min_size=6, max_size=20).map(stream)


@settings(max_examples=150, deadline=None)
@given(forms(), events_st, st.sampled_from(["event", "token", "run", "restore"]),
       st.integers(0, 20), st.sampled_from([0, 500, 10_000]))
def test_guards_after_steps_as_esper_defines(form: Form, events: list[Event], how: str,
                                             cut: int, extra: int) -> None:
    end = (events[-1].ts if events else 0) + extra
    got = rows(program(form.text()), events, how, cut, end)
    assert _canon(got) == _canon(oracle(form, events, end)), form.text()


# -- pinned cases, derived by hand from the definitions above ------------------------------

def _times(body: str, events: list[Event], cut: int | None = None) -> list[tuple[float, dict]]:
    """The matches' times and ``.v`` tags, per event with a JSON save/restore before event
    ``cut``, then time advanced 10 s past the last event."""
    prog = program(body)
    engine = cepflow.Engine(prog, start=0)
    got = []
    for i, e in enumerate(events):
        if i == cut:
            state = json.loads(json.dumps(save_state(engine)))
            engine = restore_state(cepflow.Engine(prog, start=0), state)
        got += engine.process(e)
    got += engine.advance_to((events[-1].ts if events else 0) + 10_000)
    return [(ce.ts, {k: v for k, v in ce.bindings.items() if k.endswith(".v") and v is not None})
            for ce in got]


AND_D = "(a=A and c=C) -> (d=D where timer:within(1 sec))"
CHAIN = "a=A -> (b=B where timer:within(1 sec)) -> (c=C where timer:within(2 sec))"
REP = "[2] a=A -> (b=B where timer:within(1 sec))"
EVERY_CHAIN = "every a=A -> (b=B where timer:within(1 sec)) -> (c=C where timer:within(1 sec))"


@pytest.mark.parametrize(("body", "items", "want"), [
    # the guard from C@100, the and's last event: D 1050 ms after A is in time, 1100 is not
    (AND_D, [("A", 0, 0), ("C", 0, 100), ("D", 0, 950)], [(1050, {"a.v": 0, "c.v": 1,
                                                                 "d.v": 2})]),
    (AND_D, [("A", 0, 0), ("C", 0, 100), ("D", 0, 1000)], []),  # at the end itself: late
    # (found by the stop-39 work: read as a window from D's own event it matched)
    (AND_D, [("A", 0, 0), ("C", 0, 100), ("D", 0, 4900)], []),
    # the second A is not the and's (its A took the first): the guard still from C
    (AND_D, [("A", 0, 0), ("A", 0, 500), ("C", 0, 500), ("D", 0, 999)],
     [(1999, {"a.v": 0, "c.v": 2, "d.v": 3})]),
    # a chain of guards: C's 2 s from B@900, not from A@0 nor from C's own event
    (CHAIN, [("A", 0, 0), ("B", 0, 900), ("C", 0, 1999)], [(2899, {"a.v": 0, "b.v": 1,
                                                                  "c.v": 2})]),
    (CHAIN, [("A", 0, 0), ("B", 0, 900), ("C", 0, 2000)], []),
    (CHAIN, [("A", 0, 0), ("B", 0, 1000), ("C", 0, 100)], []),  # B at A's guard's end
    # [2]: the guard from the second A; a later A changes nothing (the repetition is done)
    (REP, [("A", 0, 0), ("A", 0, 500), ("B", 0, 999)], [(1499, {"a[0].v": 0, "a[1].v": 1,
                                                               "b.v": 2})]),
    (REP, [("A", 0, 0), ("A", 0, 500), ("A", 0, 900), ("B", 0, 100)], []),
    # a followed-by flattened: the step before the guard is [2] c=C, its end C@600
    ("(a=A -> [2] c=C) -> (d=D where timer:within(1 sec))",
     [("A", 0, 0), ("C", 0, 100), ("C", 0, 500), ("D", 0, 999)],
     [(1599, {"a.v": 0, "c[0].v": 1, "c[1].v": 2, "d.v": 3})]),
    ("(a=A -> [2] c=C) -> (d=D where timer:within(1 sec))",
     [("A", 0, 0), ("C", 0, 100), ("C", 0, 500), ("D", 0, 1000)], []),
    # every: each A's instance, each B starts its instances' second guard
    (EVERY_CHAIN, [("A", 0, 0), ("A", 0, 100), ("B", 0, 800), ("C", 0, 950)],
     [(1850, {"a.v": 0, "b.v": 2, "c.v": 3}), (1850, {"a.v": 1, "b.v": 2, "c.v": 3})]),
    (EVERY_CHAIN, [("A", 0, 0), ("B", 0, 900), ("A", 0, 100), ("B", 0, 100), ("C", 0, 950)],
     [(2050, {"a.v": 2, "b.v": 3, "c.v": 4})]),  # A@0's C guard ended at 1900
    # a filter: only a B of k=1 is the B; the guard from the and's end
    ("(a=A and c=C) -> (b=B(k=1) where timer:within(1 sec))",
     [("C", 0, 0), ("A", 0, 300), ("B", 0, 300), ("B", 1, 600)], [(1200, {"a.v": 1, "c.v": 0,
                                                                        "b.v": 3})]),
    # not inside the guarded pattern: a D between the and's end and B ends the instance
    ("(a=A and c=C) -> ((b=B and not D) where timer:within(1 sec))",
     [("A", 0, 0), ("D", 0, 0), ("C", 0, 100), ("B", 0, 500)], [(600, {"a.v": 0, "c.v": 2,
                                                                      "b.v": 3})]),
    ("(a=A and c=C) -> ((b=B and not D) where timer:within(1 sec))",
     [("A", 0, 0), ("C", 0, 100), ("D", 0, 100), ("B", 0, 100)], []),
    # every (…): the instance that the guard ended at 1.1 s restarts then; the A@1100 (at
    # that instant) is the next instance's
    ("every ((a=A and c=C) -> (d=D where timer:within(1 sec)))",
     [("A", 0, 0), ("C", 0, 100), ("A", 0, 1000), ("C", 0, 100), ("D", 0, 500)],
     [(1700, {"a.v": 2, "c.v": 3, "d.v": 4})]),
    # the whole under a guard from the start: 1 s after C@2.5 s but past the 3 s
    ("((a=A and c=C) -> (d=D where timer:within(1 sec))) where timer:within(3 sec)",
     [("A", 0, 0), ("C", 0, 2500), ("D", 0, 600)], []),
    ("((a=A and c=C) -> (d=D where timer:within(1 sec))) where timer:within(3 sec)",
     [("A", 0, 0), ("C", 0, 2000), ("D", 0, 900)], [(2900, {"a.v": 0, "c.v": 1, "d.v": 2})]),
    # under every (…) the guard around is the window right around the one from C (its first
    # event at the statement's start: docs/conformance.md's reading and Esper's agree); each
    # keeps its zone
    ("every (((a=A and c=C) -> (d=D where timer:within(1 sec))) where timer:within(3 sec))",
     [("A", 0, 0), ("C", 0, 2000), ("D", 0, 500)], [(2500, {"a.v": 0, "c.v": 1, "d.v": 2})]),
])
def test_pinned(body: str, items: list[tuple[str, int, int]], want: list) -> None:
    events = stream(items)
    for cut in (None, 1, len(events) - 1):
        assert _times(body, events, cut) == want, cut


def test_the_first_guard_runs_from_the_start() -> None:
    """``(b=B where …) -> (c=C where …)`` alone: B's guard from the statement's start (the
    clock), C's from B."""
    body = "(b=B where timer:within(1 sec)) -> (c=C where timer:within(2 sec))"
    assert _times(body, stream([("B", 0, 900), ("C", 0, 1999)])) == [(2899, {"b.v": 0,
                                                                             "c.v": 1})]
    assert _times(body, stream([("B", 0, 900), ("C", 0, 2000)])) == []
    assert _times(body, stream([("B", 0, 1000), ("C", 0, 10)])) == []


def test_a_waiting_guard_is_saved_with_its_start() -> None:
    """The saved partial match waiting in a guard begun at a step's end holds that zone's
    start (the and's last event, C@400), and a restored engine ends it Δ later."""
    prog = program(AND_D)
    engine = cepflow.Engine(prog, start=0)
    for e in stream([("A", 0, 0), ("C", 0, 400)]):
        engine.process(e)
    state = json.loads(json.dumps(save_state(engine)))
    [token] = state["patterns"]["P"]
    assert [th["zones"] for th in token["threads"]] == [{"0": 400}]
    restored = restore_state(cepflow.Engine(prog, start=0), state)
    assert [ce.ts for ce in restored.process(Event("D", (0, 2), 1399))] == [1399]
    late = restore_state(cepflow.Engine(prog, start=0), state)
    assert late.advance_to(1400) == [] and late.process(Event("D", (0, 2), 1400)) == []
    assert save_state(late)["patterns"]["P"] == []


# -- what stays refused, the routes and the other readers of a pattern ----------------------

@pytest.mark.parametrize(("body", "message", "col"), [
    # X true without an event, or more than once: not one run's last event
    ("(a=A and not b=B) -> (d=D where timer:within(1 sec))", "after an 'and' with 'not'", 57),
    ("(a=A until b=B) -> (d=D where timer:within(1 sec))", "after a step with until", 55),
    ("(a=A -> (every b=B) where timer:withinmax(1 sec, 2)) -> (d=D where timer:within(1 sec))",
     "after a counting timer:withinmax", 92),
    ("((a=A where timer:within(1 sec)) or c=C) -> (d=D where timer:within(1 sec))",
     "after an 'or' with a guard", 80),
    # the guard after a step inside and / or: not in the pattern's followed-by
    ("((a=A and c=C) -> (d=D where timer:within(1 sec))) or b=B",
     "not inside and, or, not, until or a repetition", 54),
    # a guarded pattern the zone cannot hold
    ("(a=A and c=C) -> ((d=D until b=B) where timer:within(1 sec))",
     "not around a step with until inside", 53),
    ("(a=A and c=C) -> ((d=D or timer:interval(2 sec)) where timer:within(1 sec))",
     "not around an 'or' with a guard, a timer", 53),
    # a guard inside a repetition (read before as a window over each one's own events)
    ("a=A -> [2] (b=B where timer:within(1 sec))", "a guard inside a repetition", 42),
    ("[2] ((a=A -> b=B) where timer:within(1 sec))", "a guard inside a repetition", 35),
    ("a=A -> [2] ((b=B where timer:within(1 sec)) -> c=C)", "a guard inside a repetition", 42),
    # every (G) -> …: the group's own message
    ("every (a=A and c=C) -> (d=D where timer:within(1 sec))",
     "a guard on what follows a group", 59),
])
def test_the_forms_left_refused(body: str, message: str, col: int) -> None:
    with pytest.raises(PatternSyntaxError) as info:
        program(body)
    d = info.value.diagnostics[0]
    assert message in d.message
    assert (d.file, d.col) == ("g.epl", col)


ROUTED = [AND_D, CHAIN, REP, EVERY_CHAIN,
          "every ((a=A and c=C) -> (d=D where timer:within(1 sec)))",
          "every a=A(k=1) -> ((b=B -> c=C) where timer:within(1 sec)) -> (d=D where "
          "timer:within(1 sec))",
          # (the pair kernel's shape but for the zone begun at the repetition's end: taken
          # when CompiledPattern does not decline Zone.after)
          "every a=A -> [2] b=B(b.k = a.k) -> (c=C(c.k = a.k) where timer:within(1 sec))"]


@pytest.mark.parametrize("body", ROUTED)
def test_no_kernel_takes_the_form(body: str) -> None:
    """Engine.run takes no kernel and no program split (the route the shapes benchmark
    reports): only the token path knows a zone begun at a step's end (Zone.after)."""
    route_of = load_script(ROOT / "benchmarks" / "pattern_shapes.py", "pattern_shapes").route_of
    engine = cepflow.Engine(program(body), start=0)
    list(engine.run(stream([("A", 0, 100), ("C", 0, 100), ("B", 0, 100), ("D", 0, 100)] * 4)))
    assert route_of(engine) == "per event"
    assert any(z.after for z in engine.matchers[0].pattern.auto.zones)


#: beside a pair the kernels and the program split take (Q): the split may run Q and must
#: leave P to the token path, in the engine's order
MIXED = (SCHEMAS + "@Name('Q') select * from pattern [every a=A -> b=B(b.k = a.k) where "
         "timer:within(1 sec)];\n@Name('P') select * from pattern [every a=A -> (b=B where "
         "timer:within(1 sec)) -> ((c=C and d=D) where timer:within(1 sec))];\n"
         "@Name('R') select * from pattern [every ((a=A and c=C) -> (d=D where "
         "timer:within(500 msec)))];\n")


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["mixed", *ROUTED]), st.lists(st.tuples(
    st.sampled_from("AABCD"), st.integers(0, 1), st.sampled_from([0, 100, 250, 500])),
    max_size=24).map(stream), st.lists(st.integers(0, 24), max_size=3), st.integers(0, 24),
    st.sampled_from([0, 1000, 10_000]))
def test_engine_run_gives_the_token_paths_answer(body: str, events: list[Event],
                                                 cuts: list[int], at: int, extra: int) -> None:
    """support.run_against_token_path: batches cut anywhere, a save/restore, time passed."""
    prog = cepflow.load_module(parse_epl(MIXED)) if body == "mixed" else program(body)
    run_against_token_path(prog, events, cuts, at, (events[-1].ts if events else 0) + extra)


@pytest.mark.parametrize("body", [
    "(a=A and c=C) -> (d=D where timer:within(1 sec))",
    "a=A -> (b=B where timer:within(1 sec)) -> (c=C where timer:within(2 sec))",
    "every a=A -> (b=B where timer:within(1 sec)) -> ((c=C and d=D) where timer:within(1 sec))",
    "[2] A -> (b=B where timer:within(1 sec))",
    "every ((a=A and c=C) -> ((d=D and not B) where timer:within(1 sec)))"])
def test_the_petri_net_agrees(body: str) -> None:
    """The net's translation reads the zones of the automaton (a step's end enters the
    zone): it gives the engine's matches over random streams with ties."""
    import random

    from cepflow.petri.crossval import compare

    prog = program(body)
    rng = random.Random(7)
    for seed in range(12):
        ts, events = 0, []
        for i in range(rng.randint(2, 10)):
            ts += rng.choice([0, 250, 500, 1000])
            events.append(Event(rng.choice("ABCD"), (rng.randint(0, 1), i), ts))
        c = compare(prog, events, seed=seed)
        assert c.equal, c.differences


@pytest.mark.parametrize("body", [
    "(a=A and c=C) -> (d=D where timer:within(1 sec))",
    "a=A -> (b=B where timer:within(1 sec)) -> (c=C where timer:within(2 sec))",
    "[2] a=A -> (b=B where timer:within(1 sec)) -> c=C",
    "every ((a=A and c=C) -> ((d=D and not B) where timer:within(1 sec)))",
    "(b=B where timer:within(1 sec)) -> (c=C where timer:within(2 sec))",
    "((a=A and c=C) -> (d=D where timer:within(1 sec))) where timer:within(5 sec)"])
def test_the_epl_printer_prints_it_back(body: str) -> None:
    m, printed = reads_back(SCHEMAS + f"@Name('P') select * from pattern [{body}];\n")
    again = parse_epl(printed)
    from cepflow.language.walk import walk

    # (the flag the window carries is part of what compares equal)
    afters = [n for n in walk(m.decls[-1].body) if isinstance(n, ast.Window) and n.after]
    assert afters and afters == [n for n in walk(again.decls[-1].body)
                                 if isinstance(n, ast.Window) and n.after]


def test_graph_and_analyze_take_the_form(tmp_path: Path) -> None:
    bodies = [AND_D, CHAIN, REP, EVERY_CHAIN]
    res = graph_each_and_analyze(tmp_path, SCHEMAS, bodies)
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert not any(f"P{i} can never fire" in res.output for i in range(len(bodies)))
