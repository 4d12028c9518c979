"""Esper's ``timer:withinmax(Δ, n)`` counting the results of an ``every``, and with a count of 0.

TimerWithinOrMaxCountGuard, under EvalGuardStateNode: the guard starts with its operand and a
timer of Δ; each result of the operand is counted (``inspect``) — while the count is at most
``n`` it is passed on, the one after ends the guard (the operand quits, the result is dropped,
the parent hears false); the timer ends it too. With ``every`` inside, the results are those
of every instance the ``every`` started: one count per guard instance. With ``n = 0`` the
first result ends it: nothing ever passes.

The oracle is the interpreter of Esper's state nodes of test_esper_guarded_operands (filters
served in the order they were started, a filter started during an event does not see it,
timers before the events of their instant) with the counting guard and filters with a
condition added, written from those classes. The engine must give its matches per event,
on the token path, through ``Engine.run`` in batches cut anywhere and with a save and restore
between (the count is saved with the partial match); no kernel or program split takes these
patterns, the Petri-net translation reports them, the EPL printer prints them back.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from test_esper_guarded_operands import (
    SCHEMAS,
    Filter,
    Guard,
    Sim,
    at,
    canon,
    matches,
    program,
    stream,
)

import cepflow
from cepflow.analysis.analyzer import analyze
from cepflow.automaton.dot import to_dot
from cepflow.events.event import Event
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.petri.translate import Untranslatable, translate
from cepflow.runtime.state import restore_state, save_state
from support import load_script, reads_back

ROOT = Path(__file__).resolve().parents[2]
route_of = load_script(ROOT / "benchmarks" / "pattern_shapes.py", "pattern_shapes").route_of


# -- the oracle: Esper's state nodes, with the counting guard -------------------------------

class Counted(Guard):
    """``("gmax", Δ, n, operand)``: EvalGuardStateNode with TimerWithinOrMaxCountGuard."""

    def setup(self, spec: tuple) -> None:
        self.delta, self.most, self.spec = spec[1], spec[2], spec[3]
        self.child: Any = None
        self.count = 0

    def true(self, tags: dict[str, int], quitted: bool, child: Any) -> None:
        if self.child is None:  # (the guard had quit: nothing passes)
            return
        if quitted:
            self.child = None  # (the operand is over: the guard stops)
        self.count += 1
        if self.count > self.most:  # inspect: past the count, the guard quits
            if self.child is not None:
                self.child.quit()
                self.child = None
            self.parent.false(self)
            return
        self.parent.true(tags, quitted, self)


class Where(Filter):
    """``("fw", tag, type, cond)``: a filter whose condition reads the event's ``v`` and the
    tags the filter began with."""

    def setup(self, spec: tuple) -> None:
        super().setup(spec)
        self.cond: Callable[[int, dict[str, int]], bool] = spec[3]

    def event(self, e: Event) -> None:
        if self.on and e.type == self.type and self.cond(e.params[0], self.tags):
            super().event(e)


class Oracle(Sim):
    def node(self, spec: tuple, parent: Any, tags: dict[str, int]) -> Any:
        kind = {"gmax": Counted, "fw": Where}.get(spec[0])
        if kind is None:
            return super().node(spec, parent, tags)
        return kind(self, spec, parent, tags)


# -- patterns: their EPL text and their oracle tree ----------------------------------------

#: a condition's EPL text (over the tag ``x`` and, where it follows one, ``a``) and its meaning
CONDS: dict[str, tuple[str, Callable[[int, dict[str, int]], bool]]] = {
    "none": ("", lambda v, t: True),
    "even": ("x.v % 2 = 0", lambda v, t: v % 2 == 0),
    "cross": ("(x.v + a.v) % 3 != 0", lambda v, t: (v + t["a"]) % 3 != 0),
}
FORMS = ["whole", "after", "every after", "middle", "every middle", "head", "every",
         "around after"]


def text(s: dict) -> str:
    cond = CONDS[s["cond"]][0].replace("x.", f"{s['tag']}.")
    atom = f"{s['tag']}={s['type']}" + (f"({cond})" if cond else "")
    operand = f"(every {atom})" if s["every"] else atom
    a, c = "a=A", f"c={s['c']}"
    if s["form"] == "around after":  # (the operand a followed-by ending in the guarded one)
        operand = f"({a} -> {operand})"
    guard = f"({operand} where timer:withinmax({s['delta']} msec, {s['n']}))"
    return {"whole": guard, "after": f"{a} -> {guard}", "every after": f"every {a} -> {guard}",
            "middle": f"{a} -> {guard} -> {c}", "every middle": f"every {a} -> {guard} -> {c}",
            "head": f"{guard} -> {c}", "every": f"every ({a} -> {guard})",
            "around after": guard}[s["form"]]


def tree(s: dict) -> tuple:
    leaf: tuple = ("fw", s["tag"], s["type"], CONDS[s["cond"]][1])
    a, c = ("f", "a", "A"), ("f", "c", s["c"])
    operand = ("every", leaf) if s["every"] else leaf
    if s["form"] == "around after":
        operand = ("fb", a, operand)
    guard = ("gmax", s["delta"], s["n"], operand)
    return {"whole": guard, "after": ("fb", a, guard), "every after": ("fb", ("every", a), guard),
            "middle": ("fb", a, ("fb", guard, c)),
            "every middle": ("fb", ("every", a), ("fb", guard, c)),
            "head": ("fb", guard, c), "every": ("every", ("fb", a, guard)),
            "around after": guard}[s["form"]]


@st.composite
def specs(draw: st.DrawFn) -> dict:
    form = draw(st.sampled_from(FORMS))
    n = draw(st.sampled_from([0, 1, 2, 3]))
    # every on one event counted (any n), or one event with n = 0 — or n >= 1, which is
    # timer:within; under every (…) with an every inside is every inside every (reported)
    every = False if form == "every" and n else draw(st.booleans())
    cond = draw(st.sampled_from(["none", "even", "cross"] if "after" in form or "middle" in form
                                or form == "every" else ["none", "even"]))
    typ = draw(st.sampled_from("BBDA"))
    return {"form": form, "n": n, "every": every, "tag": "x", "type": typ, "cond": cond,
            "delta": draw(st.sampled_from([400, 1000, 2500])),
            "c": draw(st.sampled_from(["C", typ]))}


events_st = st.lists(st.tuples(st.sampled_from("AABBCDD"),
                               st.sampled_from([0, 0, 100, 250, 500, 1000])),
                     min_size=3, max_size=22).map(stream)


@settings(max_examples=250, deadline=None)
@given(specs(), events_st)
def test_the_engine_gives_esper_s_matches(s: dict, evs: list[Event]) -> None:
    body = text(s)
    got = matches(program(body), evs)
    want = Oracle().run(evs, tree(s))
    event("matched" if want else "no match")
    if s["every"] and len(want) > s["n"] > 0:
        event("more results than the count (several guard instances)")
    assert canon([(t, dict(tags)) for t, tags, _, _ in got]) == canon(want), body


@settings(max_examples=60, deadline=None)
@given(specs(), events_st, st.integers(0, 22))
def test_every_route_gives_the_same_matches(s: dict, evs: list[Event], cut: int) -> None:
    """The token path, ``Engine.run`` in two batches and a save/restore (through JSON) at the
    cut: the same matches, ids, times and parts as per event — no kernel takes the form."""
    prog = program(text(s))
    ref = matches(prog, evs)
    assert matches(prog, evs, "token") == ref
    assert matches(prog, evs, "run", cut) == ref
    assert matches(prog, evs, "restore", cut) == ref


def got(body: str, evs: list[Event]) -> list[tuple[float, dict[str, int]]]:
    return [(t, dict(tags)) for t, tags, _, _ in matches(program(body), evs)]


def test_hand_derived_counts() -> None:
    # from the statement's start: the first two B's within 3 s pass, the third ends it
    body = "(every b=B) where timer:withinmax(3 sec, 2)"
    assert got(body, at(("B", 100), ("B", 200), ("B", 300), ("B", 400))) == [
        (100, {"b": 0}), (200, {"b": 1})]
    # the timer ends it first (timers before the events of their instant: 3000 is late)
    assert got(body, at(("B", 100), ("B", 3000))) == [(100, {"b": 0})]
    # a B failing its own filter is no result: it is not counted
    # (v is the event's place: the odd ones pass the filter; B5 is the third result)
    body = "(every b=B(b.v % 2 = 1)) where timer:withinmax(3 sec, 2)"
    assert got(body, at(*[("B", 100 * (i + 1)) for i in range(6)])) == [
        (200, {"b": 1}), (400, {"b": 3})]
    assert got(body, at(("B", 100), ("B", 200), ("D", 250), ("D", 300), ("B", 400),
                        ("B", 500), ("B", 600))) == [(200, {"b": 1}), (500, {"b": 5})]


def test_hand_derived_counts_per_instance() -> None:
    # each A starts its own guard (from A): its own count of D's
    body = "every a=A -> (every d=D) where timer:withinmax(1 sec, 1)"
    assert got(body, at(("A", 0), ("D", 100), ("A", 150), ("D", 200), ("D", 300))) == [
        (100, {"a": 0, "d": 1}), (200, {"a": 2, "d": 3})]
    # the second A's guard ends at 1150, the first's at 1000: a D at 1100 is A2's only
    body = "every a=A -> (every d=D) where timer:withinmax(1 sec, 5)"
    assert got(body, at(("A", 0), ("A", 150), ("D", 1000), ("D", 1100), ("D", 1150))) == [
        (1000, {"a": 1, "d": 2}), (1100, {"a": 1, "d": 3})]
    # in the middle: each result goes on to its own C; the count does not follow it
    body = "a=A -> ((every d=D) where timer:withinmax(1 sec, 2)) -> c=C"
    assert got(body, at(("A", 0), ("D", 100), ("D", 200), ("D", 300), ("C", 2000))) == [
        (2000, {"a": 0, "c": 4, "d": 1}), (2000, {"a": 0, "c": 4, "d": 2})]
    # after the guard: each result waits for its own next C
    body = "every a=A -> (every d=D) where timer:withinmax(5 sec, 2) -> c=C"
    assert got(body, at(("A", 0), ("D", 1), ("D", 2), ("D", 3), ("C", 4))) == [
        (4, {"a": 0, "c": 4, "d": 1}), (4, {"a": 0, "c": 4, "d": 2})]


def test_hand_derived_counts_with_unification_and_a_followed_by() -> None:
    # d.v = a.v unifies: each A counts the D's of its own value only
    body = "every a=A -> (every d=D(d.v = a.v)) where timer:withinmax(1 sec, 1)"
    evs = [Event(t, (v,), ts) for t, v, ts in [("A", 1, 0), ("A", 2, 10), ("D", 2, 20),
                                               ("D", 1, 30), ("D", 2, 40), ("D", 1, 50)]]
    assert [(m.ts, m.event_refs) for m in cepflow.Engine(program(body), start=0).run(evs)] == [
        (20, [evs[1].ref, evs[2].ref]), (30, [evs[0].ref, evs[3].ref])]
    # the operand a followed-by of events ending in every: its one run counts (from the
    # statement's start: the guard ends at 1000 whatever A does)
    body = "(a=A -> every b=B) where timer:withinmax(1 sec, 2)"
    assert got(body, at(("B", 100), ("A", 200), ("B", 300), ("B", 400), ("B", 500))) == [
        (300, {"a": 1, "b": 2}), (400, {"a": 1, "b": 3})]
    assert got(body, at(("A", 200), ("B", 1000))) == []


def test_hand_derived_count_of_zero() -> None:
    # nothing passes; the guard ends at the first result, or its timer
    for body in ["b=B where timer:withinmax(2 sec, 0)",
                 "(every b=B) where timer:withinmax(2 sec, 0)",
                 "every (b=B where timer:withinmax(2 sec, 0))",
                 "every a=A -> (b=B where timer:withinmax(2 sec, 0))",
                 "every (a=A -> (every b=B) where timer:withinmax(2 sec, 0))",
                 "a=A -> (b=B where timer:withinmax(2 sec, 0)) -> c=C"]:
        assert got(body, at(("A", 0), ("B", 100), ("B", 200), ("C", 300), ("B", 3000))) == []
    # with 1 it is timer:within
    body = "every a=A -> (b=B where timer:withinmax(2 sec, 1))"
    assert got(body, at(("A", 0), ("B", 100), ("A", 1000), ("B", 3000))) == [
        (100, {"a": 0, "b": 1})]


def test_a_guard_around_a_followed_by_runs_from_the_statement_start() -> None:
    """``(a=A -> every b=B) where timer:within(Δ)`` as the whole pattern: Esper's guard starts
    with the statement (EvalGuardStateNode under the root), not at A — it used to be read as
    a window from A, which matched B's after Δ."""
    body = "(a=A -> every b=B) where timer:within(5 sec)"
    assert got(body, at(("A", 3000), ("B", 4000), ("B", 6000))) == [(4000, {"a": 0, "b": 1})]
    body = "(a=A -> every b=B) where timer:withinmax(5 sec, 1)"
    assert got(body, at(("A", 3000), ("B", 4000), ("B", 4500))) == [(4000, {"a": 0, "b": 1})]
    want = Oracle().run(at(("A", 3000), ("B", 4000), ("B", 6000)), (
        "g", 5000, ("fb", ("f", "a", "A"), ("every", ("f", "b", "B")))))
    assert want == [(4000, {"a": 0, "b": 1})]


def test_the_count_is_saved_with_the_partial_match() -> None:
    """A save and restore between two results: the restored partial match has passed one."""
    prog = program("every a=A -> (every d=D) where timer:withinmax(10 sec, 2)")
    evs = at(("A", 0), ("D", 100), ("D", 200), ("D", 300))
    engine = cepflow.Engine(prog, start=0)
    out = [m for e in evs[:2] for m in engine.process(e)]
    state = json.loads(json.dumps(save_state(engine)))
    (tok,) = state["patterns"]["P"]
    assert tok["threads"][0]["bindings"]["_taken"] == 1
    engine = restore_state(cepflow.Engine(prog, start=0), state)
    out += [m for e in evs[2:] for m in engine.process(e)]
    assert [m.event_refs for m in out] == [
        [e.ref for e in evs[:2]], [evs[0].ref, evs[2].ref]]
    assert engine.partial_matches() == {"P": 0}
    # a result that goes on carries no count (only the run waiting at the every does)
    prog = program("a=A -> ((every d=D) where timer:withinmax(10 sec, 3)) -> c=C")
    engine = cepflow.Engine(prog, start=0)
    for e in at(("A", 0), ("D", 100), ("D", 200)):
        engine.process(e)
    saved = save_state(engine)["patterns"]["P"]
    assert sorted(t["threads"][0]["bindings"].get("_taken", 0) for t in saved) == [0, 0, 2]


def test_no_kernel_or_split_takes_it() -> None:
    """The batch kernels and the program split decline the counted guard (a kernel taking
    ``every a=A -> every d=D`` would pass every D); beside a pair pattern the split takes the
    pair alone and the counted one runs per event, with the same matches."""
    body = "every a=A -> (every d=D) where timer:withinmax(1 sec, 1)"
    engine = cepflow.Engine(program(body), start=0)
    assert route_of(engine) == "per event"
    assert engine.matchers[0].pattern.pair is None
    text_ = (SCHEMAS + f"@Name('P') select * from pattern [{body}];\n"
             "@Name('Q') select * from pattern [every a=A -> b=B(b.v > a.v)];\n")
    prog = cepflow.load_module(parse_epl(text_, "two.epl"))
    engine = cepflow.Engine(prog, start=0)
    split = engine._split
    assert split is not None and [m.name for m in split] == ["Q"]
    evs = stream([("A", 0), ("D", 100), ("D", 0), ("A", 300), ("B", 0), ("D", 700)] * 3)
    ref_engine = cepflow.Engine(prog, start=0)
    ref = [(m.type, m.ts, m.event_refs, m.match_id) for e in evs for m in ref_engine.process(e)]
    for cut in (0, 5, 11):
        eng = cepflow.Engine(prog, start=0)
        run = [(m.type, m.ts, m.event_refs, m.match_id)
               for part in (evs[:cut], evs[cut:]) for m in eng.run(part)]
        assert run == ref
    assert any(name == "P" for name, *_ in ref) and any(name == "Q" for name, *_ in ref)


@pytest.mark.parametrize(("body", "says"), [
    ("(every a=A -> b=B) where timer:withinmax(1 sec, 2)", "around every on one event"),
    ("(every (b=B or c=C)) where timer:withinmax(1 sec, 2)", "around every on one event"),
    ("(a=A or b=B) where timer:withinmax(1 sec, 0)", "with a count of 0 is supported"),
    ("b=B where timer:withinmax(1 sec, -1)", "a whole count (0 or more)"),
    ("(every b=B) where timer:withinmax(1 sec, 2) and d=D", "not inside and, or"),
    ("b=B where timer:withinmax(1 sec, 0) or d=D", "not inside and, or"),
    ("every ((every b=B) where timer:withinmax(1 sec, 2))", "not inside and, or"),
    ("a=A -> every (b=B where timer:withinmax(1 sec, 0))", "not inside and, or"),
    ("[2] (b=B where timer:withinmax(1 sec, 0))", "not inside and, or"),
    ("((every b=B) where timer:withinmax(1 sec, 2)) where timer:within(2 sec)",
     "not inside and, or"),
    ("(a=A and c=C) -> (every d=D) where timer:withinmax(1 sec, 2)", "not after a group"),
    ("every a=A -> (every b=B) where timer:withinmax(1 sec, 2) -> (every c=C) where "
     "timer:withinmax(1 sec, 1)", "not after a group"),
])
def test_what_stays_refused_says_what_runs(body: str, says: str) -> None:
    with pytest.raises(PatternSyntaxError) as info:
        program(body)
    assert says in str(info.value)


PRINTED = [
    "(every b=B) where timer:withinmax(4.001, 2)",
    "every b=B -> (every d=D) where timer:withinmax(1 day, 1)",
    "every (b=B where timer:withinmax(2001 msec, 0))",
    "a=A -> ((every d=D(d.v % 2 = 0)) where timer:withinmax(3 sec, 2)) -> c=C",
    "b=B where timer:withinmax(1 sec, 0)",
    "((every d=D) where timer:withinmax(3 sec, 0)) -> c=C",
    "(a=A -> every b=B) where timer:withinmax(5 sec, 1)",
    "c=C -> ((a=A -> every b=B(b.v > a.v)) where timer:withinmax(5 sec, 3))",
]


@pytest.mark.parametrize("body", PRINTED)
def test_the_forms_print_back_draw_and_are_analyzed(body: str, tmp_path: Any) -> None:
    text_ = SCHEMAS + f"@Name('P') select * from pattern [{body}];\n"
    module, printed = reads_back(text_)
    assert "timer:withinmax(" in printed
    prog = cepflow.load_module(module)
    (auto,) = prog.automata
    assert any(p.most is not None for p in auto.positions)
    assert to_dot(auto).startswith("digraph")
    path = tmp_path / "case.epl"
    path.write_text(text_)
    assert analyze([path]).pset.ok
    with pytest.raises(Untranslatable) as info:
        translate(prog)
    assert "timer:withinmax counting results" in str(info.value)
