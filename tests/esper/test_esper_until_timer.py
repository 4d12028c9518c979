"""Esper's ``until`` ending at ``timer:interval(Δ)`` or at ``not`` (EvalMatchUntilStateNode:
the end is started first; the until turns true when it does, with what its operand collected,
or false when that is fewer than the lower bound; ``[n]`` is true at the n-th operand result).

* ``P until timer:interval(Δ)``: every ``P`` in the Δ after the until started is collected, and
  the until is true at the deadline — from the statement's start when it begins the pattern,
  after the event before it otherwise; a ``P`` at the deadline itself comes too late (the
  timer fires before the events of its instant, as Esper's clock fires it before the event
  is sent). ``every (…)`` around it starts the next instance at the deadline.
* ``P until not Q``: EvalNotStateNode is true as it starts, so the until is true at once with
  nothing collected; alone, that is at the statement's start, which Esper delivers to no
  listener (its PatternTestHarness: a pattern true at its start gives no output).

Checked here: an oracle written from those definitions (and EvalFollowedByStateNode,
EvalEveryStateNode: ``every b=B -> …`` starts an instance at each ``B``, ``every (…)`` the
next one when the last ended, true or false) against the engine per event, on the token path,
through ``Engine.run`` cut anywhere and with a JSON save/restore at the cut, then time
advanced past the stream (``advance_to``); hand-derived pinned cases beyond Esper's event set
one (other streams, filters, several instances, the clock); the forms still refused and the
routes (no kernel, no program split takes a timer-ended until).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_until_any_length import bounds_text
from tests.esper.test_esper_until_any_length import rows as any_length_rows
from tests.support import graph_each_and_analyze

import cepflow
from cepflow.events.event import Event
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.runtime.state import restore_state, save_state
from support import load_script, run_against_token_path

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = "".join(f"create schema {t}(k int, v int);\n" for t in "ABCD")


def program(body: str) -> Any:
    return cepflow.load_module(parse_epl(SCHEMAS + f"@Name('P') select * from pattern [{body}];"))


def stream(items: list[tuple[str, int, int]]) -> list[Event]:
    """Events ``(type, k, gap)``: each ``gap`` ms after the one before (0: the same instant),
    the first at ``gap``; ``v`` is the event's place in the stream."""
    out, t = [], 0
    for i, (typ, k, gap) in enumerate(items):
        t += gap
        out.append(Event(typ, (k, i), t))
    return out


def _one_thread(engine: Any) -> None:
    """One run per instance: the until takes every operand event without keeping a run that
    skipped one (CompiledPattern.greedy), as Esper's one instance."""
    assert all(len(t.threads) == 1 for t in engine.matchers[0].all_tokens())


def rows(prog: Any, events: list[Event], how: str, cut: int, end: float
         ) -> list[tuple[float, dict[str, Any]]]:
    """test_esper_until_any_length's routes (per event, token path, run cut at ``cut``, a
    save/restore there), one thread per partial match after each event, then time advanced
    to ``end``."""
    return any_length_rows(prog, events, how, cut, end, _one_thread)


@dataclass
class _Instance:
    """One instance of the oracle's pattern: waiting for its ``B`` (``phase`` b), its until
    under way (``until``: started at ``start``, the operand's results in ``taken``), waiting
    for its ``C`` (``c``)."""

    phase: str
    b: Event | None = None
    start: float = 0.0
    taken: list[Event] = field(default_factory=list)


#: the operands and, for an end ``every (timer:interval(Δ) and not X)``, their ``X``
OPERANDS = {"a=A": "A", "a=A(k=1)": "A(k=1)", "every a=A": "A",
            "a=A(a.k = b.k)": "A(k = b.k)"}


@dataclass(frozen=True)
class Form:
    """``{every (}{prefix}({bounds}{operand} until {end}){tail}{)}``, the end
    ``timer:interval(Δ)`` or (``silence``) ``every (timer:interval(Δ) and not X)``, ``X`` the
    operand untagged: Δ without an ``X`` since the start or the last ``X``."""

    prefix: str  # "", "b=B -> ", "every b=B -> "
    wrap: bool  # every (…) around the whole (not with a spawning prefix)
    low: int | None
    tight: bool  # [n]: low == high
    operand: str  # OPERANDS
    delta: int  # ms
    tail: str  # "", " -> c=C", " -> c=C(c.k = a[0].k)"
    silence: bool = False

    def text(self) -> str:
        bounds = bounds_text(self.low, self.low if self.tight else None)
        end = f"timer:interval({self.delta} msec)"
        if self.silence:
            end = f"every ({end} and not {OPERANDS[self.operand]})"
        body = f"{self.prefix}({bounds}{self.operand} until {end}){self.tail}"
        return f"every ({body})" if self.wrap else body

    def deadline(self, inst: _Instance) -> float:
        """When the end of ``inst`` fires: Δ after its start, or (``silence``) after the later
        of its start and its last operand event (each restarts the every's interval)."""
        if self.silence and inst.taken:
            return inst.taken[-1].ts + self.delta
        return inst.start + self.delta

    def takes(self, e: Event, inst: _Instance) -> bool:
        if e.type != "A":
            return False
        if self.operand == "a=A(k=1)":
            return e.params[0] == 1
        if self.operand == "a=A(a.k = b.k)":
            return inst.b is not None and e.params[0] == inst.b.params[0]
        return True

    def ends(self, e: Event, inst: _Instance) -> bool:
        if e.type != "C":
            return False
        if self.tail.endswith("(c.k = a[0].k)"):
            return bool(inst.taken) and e.params[0] == inst.taken[0].params[0]
        return True


def _bindings(inst: _Instance, c: Event | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if inst.b is not None:
        out["b.k"], out["b.v"] = inst.b.params
    for i, a in enumerate(inst.taken):
        out[f"a[{i}].k"], out[f"a[{i}].v"] = a.params
    if c is not None:
        out["c.k"], out["c.v"] = c.params
    return out


def oracle(form: Form, events: list[Event], end: float) -> list[tuple[float, dict[str, Any]]]:
    """The matches of ``form`` by Esper's definitions (module docstring). Timers fire before
    the events of their instant, in time order; an instance ``every (…)`` restarts at an
    event does not see that event (Esper dispatches an event to the filters active when it
    came), one restarted at a deadline sees the events of that instant."""
    out: list[tuple[float, dict[str, Any]]] = []
    low = form.low or 0

    def fresh(t: float) -> _Instance:
        return _Instance("b") if form.prefix else _Instance("until", start=t)

    live = [fresh(0.0)]

    def done(inst: _Instance, t: float, ok: bool, c: Event | None, later: list) -> None:
        """``inst`` turned true (``ok``: it reports when no C follows) or false at ``t``."""
        if ok and form.tail and inst.phase == "until":
            inst.phase = "c"
            return
        if ok:
            out.append((t, _bindings(inst, c)))
        live.remove(inst)
        if form.wrap:
            later.append(fresh(t))

    def fire(t: float) -> None:
        while True:
            due = [i for i in live if i.phase == "until" and form.deadline(i) <= t]
            if not due:
                return
            inst = min(due, key=form.deadline)
            at = form.deadline(inst)
            later: list[_Instance] = []
            done(inst, at, not form.tight and len(inst.taken) >= low, None, later)
            live.extend(later)  # (restarted at the deadline: sees that instant's events)

    for e in events:
        fire(e.ts)
        later: list[_Instance] = []
        for inst in list(live):
            if inst.phase == "b" and e.type == "B":
                if form.prefix.startswith("every"):
                    later.append(_Instance("until", b=e, start=e.ts))
                else:
                    inst.phase, inst.b, inst.start = "until", e, e.ts
            elif inst.phase == "until" and form.takes(e, inst):
                inst.taken.append(e)
                if form.tight and len(inst.taken) == low:
                    done(inst, e.ts, True, None, later)
            elif inst.phase == "c" and form.ends(e, inst):
                done(inst, e.ts, True, e, later)
        live.extend(later)
    fire(end)
    return out


def _canon(got: list[tuple[float, dict[str, Any]]]) -> list[str]:
    return sorted(json.dumps([float(t), b], sort_keys=True) for t, b in got)


@st.composite
def forms(draw: Any) -> Form:
    prefix = draw(st.sampled_from(["", "b=B -> ", "every b=B -> "]))
    operands = ["a=A", "a=A(k=1)", "every a=A"] + (["a=A(a.k = b.k)"] if prefix else [])
    silence = draw(st.booleans())
    low, tight = (None, False) if silence else draw(st.sampled_from(
        [(None, False), (1, False), (2, False), (1, True), (2, True)]))
    tails = ["", " -> c=C"] + ([" -> c=C(c.k = a[0].k)"] if not tight or low else [])
    return Form(prefix, draw(st.booleans()) and not prefix.startswith("every"), low, tight,
                draw(st.sampled_from(operands)), draw(st.sampled_from([1000, 1500, 2500])),
                draw(st.sampled_from(tails)), silence)


events_st = st.lists(st.tuples(st.sampled_from("AAABCD"), st.integers(0, 1),
                               st.sampled_from([0, 500, 500, 1000])), max_size=16).map(stream)


@settings(max_examples=120, deadline=None)
@given(forms(), events_st, st.sampled_from(["event", "token", "run", "restore"]),
       st.integers(0, 16), st.sampled_from([0, 500, 2500, 10_000]))
def test_until_timer_as_esper_defines(form: Form, events: list[Event], how: str, cut: int,
                                      extra: int) -> None:
    end = (events[-1].ts if events else 0) + extra
    got = rows(program(form.text()), events, how, cut, end)
    assert _canon(got) == _canon(oracle(form, events, end)), form.text()


def _v(got: list[tuple[float, dict[str, Any]]]) -> list[tuple[float, dict[str, Any]]]:
    """The rows with only the ``.v`` bindings (each event's place in the stream)."""
    return [(t, {k: v for k, v in b.items() if k.endswith(".v")}) for t, b in got]


def test_the_timer_from_the_statement_start_pinned() -> None:
    """``a=A until timer:interval(3 sec)`` from the start at 0: A@1 s, A@2 s, A@3 s (at the
    deadline: too late), the match at 3 s with the first two; nothing again (no every).
    With ``every (…)`` the next instance begins at 3 s and takes the A of that instant, and
    the clock alone completes the instances after it (6 s, 9 s: nothing collected)."""
    evs = stream([("A", 0, 1000), ("A", 0, 1000), ("A", 0, 1000), ("A", 0, 1500)])
    assert _v(rows(program("a=A until timer:interval(3 sec)"), evs, "event", 0, 20_000)) == [
        (3000, {"a[0].v": 0, "a[1].v": 1})]
    assert _v(rows(program("every (a=A until timer:interval(3 sec))"), evs, "event", 0,
                   9000)) == [(3000, {"a[0].v": 0, "a[1].v": 1}),
                              (6000, {"a[0].v": 2, "a[1].v": 3}), (9000, {})]


def test_the_timer_in_the_middle_pinned() -> None:
    """``b=B -> (a=A until timer:interval(5 sec)) -> c=C`` (the brief's form): B@1, A@2,
    C@3 (the until is under way: no C yet), A@4, A@6 (at the deadline: too late), C@6 — the
    until was true at 6 s, the C of that instant follows it."""
    evs = stream([("B", 0, 1000), ("A", 0, 1000), ("C", 0, 1000), ("A", 0, 1000),
                  ("A", 0, 2000), ("C", 0, 0)])
    got = rows(program("b=B -> (a=A until timer:interval(5 sec)) -> c=C"), evs, "event", 0,
               60_000)
    assert _v(got) == [(6000, {"b.v": 0, "a[0].v": 1, "a[1].v": 3, "c.v": 5})]


def test_several_instances_and_a_filter_pinned() -> None:
    """``every b=B -> (a=A(a.k = b.k) until timer:interval(2 sec))``: B(k0)@1, B(k1)@2,
    A(k0)@2.5, A(k1)@3 (the first instance's deadline: too late for it), A(k1)@3.5: the
    first instance is true at 3 s with A(k0), the second at 4 s with both A(k1)."""
    evs = stream([("B", 0, 1000), ("B", 1, 1000), ("A", 0, 500), ("A", 1, 500),
                  ("A", 1, 500)])
    got = rows(program("every b=B -> (a=A(a.k = b.k) until timer:interval(2 sec))"), evs,
               "event", 0, 10_000)
    assert _v(got) == [(3000, {"b.v": 0, "a[0].v": 2}),
                       (4000, {"b.v": 1, "a[0].v": 3, "a[1].v": 4})]


def test_bounds_pinned() -> None:
    """Over A@1 A@2 A@4 from the start: ``[2:]`` with 3 s is true at 3 s (two collected),
    with 1.5 s false (one); ``[2]`` is true at the second A (2 s) within 3 s, false within
    1.5 s; ``[3]`` within 3 s false (the third A after the deadline)."""
    evs = stream([("A", 0, 1000), ("A", 0, 1000), ("A", 0, 2000)])

    def run(body: str) -> list[tuple[float, dict[str, Any]]]:
        return _v(rows(program(body), evs, "event", 0, 20_000))

    assert run("[2:] a=A until timer:interval(3 sec)") == [
        (3000, {"a[0].v": 0, "a[1].v": 1})]
    assert run("[2:] a=A until timer:interval(1500 msec)") == []
    assert run("[2] a=A until timer:interval(3 sec)") == [(2000, {"a[0].v": 0, "a[1].v": 1})]
    assert run("[2] a=A until timer:interval(1500 msec)") == []
    assert run("[3] a=A until timer:interval(3 sec)") == []


def test_the_clock_alone_completes_it() -> None:
    """No event at all: the until from the start is true at its deadline when time passes
    (advance_to), with nothing collected; not before."""
    prog = program("a=A until timer:interval(3 sec)")
    engine = cepflow.Engine(prog, start=0)
    assert engine.advance_to(2999) == []
    got = engine.advance_to(3000)
    assert [ce.ts for ce in got] == [3000]
    assert {k: v for k, v in got[0].bindings.items() if v is not None} == {}


def test_a_pending_until_timer_is_saved_and_restored() -> None:
    """A partial match of ``b=B -> (a=A until timer:interval(3 sec)) -> c=C`` saved with one
    A collected, restored in a fresh engine: the same deadline, the same collection."""
    prog = program("b=B -> (a=A until timer:interval(3 sec)) -> c=C")
    engine = cepflow.Engine(prog, start=0)
    for e in stream([("B", 0, 1000), ("A", 1, 1000)]):
        engine.process(e)
    state = json.loads(json.dumps(save_state(engine)))
    again = restore_state(cepflow.Engine(prog, start=0), state)
    assert json.loads(json.dumps(save_state(again))) == state
    rest = [Event("A", (1, 2), 3500), Event("A", (1, 3), 4000), Event("C", (0, 4), 4000)]
    got = [ce for e in rest for ce in again.process(e)]
    assert _v([(ce.ts, ce.bindings) for ce in got]) == [
        (4000, {"b.v": 0, "a[0].v": 1, "a[1].v": 2, "c.v": 4})]


def test_the_silence_end_pinned() -> None:
    """``b=B -> (a=A until every (timer:interval(2 sec) and not A)) -> c=C``: B@1, A@2 (the
    end's interval restarts: 4 s), A@3.5 (5.5 s), C@4 (the until is under way), A@5.5 (at
    the deadline: too late), C@6 — the until was true at 5.5 s with the two A's before."""
    evs = stream([("B", 0, 1000), ("A", 0, 1000), ("A", 0, 1500), ("C", 0, 500),
                  ("A", 0, 1500), ("C", 0, 500)])
    body = "b=B -> (a=A until every (timer:interval(2 sec) and not A)) -> c=C"
    for how in ("event", "token", "run", "restore"):
        assert _v(rows(program(body), evs, how, 3, 60_000)) == [
            (6000, {"b.v": 0, "a[0].v": 1, "a[1].v": 2, "c.v": 5})], how


def test_a_pending_silence_end_is_saved_and_restored() -> None:
    """``a=A(k=1) until every (timer:interval(2 sec) and not A(k=1))`` saved after A(k1)@1
    and A(k0)@2 (not the operand: no restart), restored: A(k1)@2.5 restarts the interval
    (4.5 s), the clock completes it then, not before."""
    prog = program("a=A(k=1) until every (timer:interval(2 sec) and not A(k=1))")
    engine = cepflow.Engine(prog, start=0)
    for e in stream([("A", 1, 1000), ("A", 0, 1000)]):
        assert engine.process(e) == []
    state = json.loads(json.dumps(save_state(engine)))
    again = restore_state(cepflow.Engine(prog, start=0), state)
    assert again.process(Event("A", (1, 2), 2500)) == []
    assert again.advance_to(4499) == []
    got = again.advance_to(4500)
    assert _v([(ce.ts, ce.bindings) for ce in got]) == [(4500, {"a[0].v": 0, "a[1].v": 2})]


@pytest.mark.parametrize("body, want", [
    # true at once: no step (A -> C), and under every b=B each B goes on at once
    ("a=A -> (B until not B) -> c=C", [(3000, {"a.v": 0, "c.v": 2})]),
    ("every a=A -> (D until not D)", [(1000, {"a.v": 0}), (4000, {"a.v": 3})]),
    ("(B until not B) -> c=C", [(3000, {"c.v": 2})]),
    # alone: true only as the statement starts (no output), then over; every around it
    # quits an operand true at its start (EvalEveryStateNode)
    ("B until not B", []),
    ("every (B until not D)", []),
    # every on one event or an interval as the end: its first result ends the until
    ("b=B until every c=C", [(3000, {"b[0].v": 1, "c.v": 2})]),
    ("b=B until every timer:interval(2500 msec)", [(2500, {"b[0].v": 1})]),
])
def test_not_and_every_ends_pinned(body: str, want: list) -> None:
    """Over A@1 B@2 C@3 A@4 B@5 (one a second), time passed to 10 s."""
    evs = stream([("A", 0, 1000), ("B", 0, 1000), ("C", 0, 1000), ("A", 0, 1000),
                  ("B", 0, 1000)])
    for how in ("event", "token", "run", "restore"):
        assert _v(rows(program(body), evs, how, 2, 10_000)) == want, (body, how)


@pytest.mark.parametrize("body, message", [
    ("a=A until (every (timer:interval(6 sec) and not B))",
     "is supported when X is the operand, one event untagged"),
    ("[2:] a=A until (every (timer:interval(6 sec) and not A))",
     "a bound on until ending at every (timer:interval(Δ) and not …)"),
    ("a=A until (every (timer:interval(6 sec) and b=B))",
     "not every (…) around a pattern that can end false"),
    ("[1:3] a=A until timer:interval(6 sec)", "an upper bound on until ending at timer"),
    ("([2] a=A) until timer:interval(6 sec)", "until ending at timer:interval repeats a "
                                              "single event"),
    ("[2] B until not B", "a bound on until ending at 'not'"),
    ("b=B until not B", "a tag in the operand of an until ending at 'not'"),
    ("(B until not B) and c=C", "an until ending at 'not' is true as it starts"),
    ("a=A until timer:interval(0)", "until ending at timer:interval(0)"),
])
def test_the_forms_left_refused(body: str, message: str) -> None:
    with pytest.raises(PatternSyntaxError) as info:
        program(body)
    assert message in info.value.diagnostics[0].message


@pytest.mark.parametrize("body", [
    "a=A until timer:interval(3 sec)", "every (a=A until timer:interval(3 sec))",
    "every b=B -> (a=A(a.k = b.k) until timer:interval(2 sec))",
    "every b=B -> (a=A until timer:interval(2 sec)) -> c=C",
    "b=B -> ([2] a=A until timer:interval(2 sec)) -> c=C",
    "every b=B -> (a=A(a.k = b.k) until every (timer:interval(2 sec) and not A(k = b.k)))",
    "a=A until every (timer:interval(2 sec) and not A)"])
def test_no_kernel_takes_a_timer_ended_until(body: str) -> None:
    """Engine.run takes no kernel and no program split for these (the route the shapes
    benchmark reports): the token path is the only one that knows the form."""
    route_of = load_script(ROOT / "benchmarks" / "pattern_shapes.py", "pattern_shapes").route_of
    engine = cepflow.Engine(program(body), start=0)
    list(engine.run(stream([("B", 0, 1000), ("A", 0, 500), ("C", 0, 500)] * 3)))
    assert route_of(engine) == "per event"


#: timer-ended untils the pair kernel takes: ``[n]`` after ``every b = B`` on a key is the
#: chain ``(b -> a -> … -> a)[Δ]`` (until_timer: true at the n-th ``a`` within Δ), a window
#: over a repetition as the kernel knows it; and an until ending at ``not`` is no step
KERNEL_FORMS = ["every b=B -> ([2] a=A(a.k = b.k) until timer:interval(1500 msec))",
                "every b=B -> ([1] a=A(a.k = b.k, a.v > 3) until timer:interval(2 sec))",
                "every b=B -> (D until not D) -> a=A(a.k = b.k)"]


@pytest.mark.parametrize("body", KERNEL_FORMS)
def test_the_kernel_takes_these(body: str) -> None:
    route_of = load_script(ROOT / "benchmarks" / "pattern_shapes.py", "pattern_shapes").route_of
    engine = cepflow.Engine(program(body), start=0)
    list(engine.run(stream([("B", 0, 1000), ("A", 0, 500), ("C", 0, 500)] * 3)))
    assert route_of(engine) == "pair kernel"  # (checked against the token path below)


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(KERNEL_FORMS), st.lists(st.tuples(
    st.sampled_from("AAABD"), st.integers(0, 1), st.sampled_from([0, 250, 500, 1000])),
    max_size=24).map(stream), st.lists(st.integers(0, 24), max_size=3), st.integers(0, 24),
    st.sampled_from([0, 1000, 10_000]))
def test_the_kernel_gives_the_token_paths_answer(body: str, events: list[Event],
                                                 cuts: list[int], at: int, extra: int) -> None:
    """Engine.run in batches cut at ``cuts``, a JSON save/restore at ``at``, then time passed
    (advance_to) gives the token path's matches (same order, ids, parts, bindings, times) and
    its saved state; and the oracle's rows where the form is one of its own."""
    prog = program(body)
    end = (events[-1].ts if events else 0) + extra
    got = run_against_token_path(prog, events, cuts, at, end)
    if body == KERNEL_FORMS[0]:
        form = Form("every b=B -> ", False, 2, True, "a=A(a.k = b.k)", 1500, "")
        assert _canon([(ce.ts, {k: v for k, v in ce.bindings.items() if v is not None})
                       for ce in got]) == _canon(oracle(form, events, end))


def test_graph_and_analyze_take_the_new_ends(tmp_path: Path) -> None:
    """``cepflow graph`` draws each form's automaton and ``cepflow analyze`` reads them all;
    the until that is true only as the statement starts is reported as never firing."""
    bodies = ["d=D until timer:interval(7 sec)", "b=B -> (a=A until timer:interval(5 sec)) -> c=C",
              "every b=B -> ([2] a=A(a.k = b.k) until timer:interval(5 sec))", "B until not B",
              "a=A -> (B until not B) -> c=C", "a=A until every c=C",
              "a=A until (every (timer:interval(6 sec) and not A))"]
    res = graph_each_and_analyze(tmp_path, SCHEMAS, bodies)
    # (exit 1: the error finding below; no crash)
    assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
    assert "findings: 1 (1 errors" in res.output and "P3 can never fire" in res.output
    assert not any(f"P{i} can never fire" in res.output for i in range(len(bodies)) if i != 3)
