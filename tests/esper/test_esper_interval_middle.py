"""``timer:interval`` in the middle of an Esper pattern: ``A -> timer:interval(Δ) -> B``.

Esper's followed-by starts its right side when the left side is true; with the interval on the
left of ``-> B`` that is when the interval fires, Δ after ``A``: ``B`` is looked for from then
on, and a ``B`` before it is not seen (EvalFollowedByStateNode, EvalObserverStateNode). Timers
fire before the events of their instant, so a ``B`` at ``A + Δ`` is seen and a ``D`` at that
instant no longer ends ``(timer:interval(Δ) and not D)``. cepflow runs the interval as the timed
zone it is at the end of a pattern, whose deadline now feeds the instance the synthetic event
the rest follows (compiler.esper.TIMER).

The oracle below is those definitions written over the stream directly; the engine must give
its matches per event (fast path and token path), through ``Engine.run`` and with a save and
restore in the middle.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_statement_start import stream

import cepflow
from cepflow.events.event import Event
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.runtime.state import restore_state, save_state

SCHEMAS = "".join(f"create schema {t}(k int, v int);\n" for t in "ABDX")


def program(body: str, also: str = "", select: str = "a.v as av, b.v as bv") -> object:
    return cepflow.load_module(parse_epl(
        SCHEMAS + f"@Name('P') select {select} from pattern [{body}];\n" + also))




events_st = st.lists(st.tuples(st.sampled_from("AABDX"), st.integers(0, 1),
                               st.sampled_from([0, 0, 300, 700, 1000, 1500])),
                     max_size=16).map(stream)


@st.composite
def specs(draw: st.DrawFn) -> dict:
    return {"policy": draw(st.sampled_from(["spawn", "once", "restart"])),
            "delta": draw(st.sampled_from([0, 1000, 1500, 2000])),
            "keyed": draw(st.booleans()),
            "before": draw(st.booleans()),  # (timer:interval(Δ) and not D)
            "after": draw(st.booleans()),   # -> (b=B and not D)
            # -> (… where timer:within(W)): from the interval's end
            "guard": draw(st.sampled_from([None, None, 500, 1000]))}


def body(s: dict) -> str:
    key, nk = ("(b.k = a.k)", "(k = a.k)") if s["keyed"] else ("", "")
    timer = f"timer:interval({s['delta']} msec)"
    if s["before"]:
        timer = f"({timer} and not D{nk})"
    b = f"(b=B{key} and not D{nk})" if s["after"] else f"b=B{key}"
    if s["guard"] is not None:
        b = f"({b} where timer:within({s['guard']} msec))"
    if s["policy"] == "spawn":
        return f"every a=A -> {timer} -> {b}"
    if s["policy"] == "once":
        return f"a=A -> {timer} -> {b}"
    return f"every (a=A -> {timer} -> {b})"


def oracle(evs: list[Event], s: dict) -> list[tuple]:
    """Esper's answer: (a's v, b's v, the match's time), sorted."""
    out = []
    live: list[dict] = []  # instances in the order they began
    began = False
    for e in evs:
        for inst in list(live):  # timers fire before the events of their instant
            if not inst["ready"] and inst["wake"] <= e.ts:
                inst["ready"] = True
            if (inst["ready"] and s["guard"] is not None
                    and inst["wake"] + s["guard"] <= e.ts):
                live.remove(inst)  # the guard quit the instance
        for inst in list(live):
            same = not s["keyed"] or e.params[0] == inst["a"].params[0]
            if e.type == "D" and same and (s["before"] if not inst["ready"] else s["after"]):
                live.remove(inst)  # the not ended it
            elif inst["ready"] and e.type == "B" and same:
                out.append((inst["a"].params[1], e.params[1], e.ts))
                live.remove(inst)
        if e.type == "A" and (s["policy"] == "spawn" or (s["policy"] == "once" and not began)
                              or (s["policy"] == "restart" and not live)):
            began = True
            live.append({"a": e, "wake": e.ts + s["delta"], "ready": False})
    return sorted(out)


def run(prog: object, evs: list[Event], how: str, cut: int = 0,
        start: float | None = None) -> list[tuple]:
    """(params, time) of the matches: per event (``fast``), the token path (``token``),
    ``Engine.run`` in batches cut at ``cut`` (``run``), per event with a save and restore
    through JSON before event ``cut`` (``restore``)."""
    engine = cepflow.Engine(prog, fast_path=how != "token", start=start)
    if how == "run":
        got = [m for part in (evs[:cut], evs[cut:]) for m in engine.run(part)]
        got += engine.finish()
        return [(m.type, m.params, m.ts, m.event_refs, m.match_id) for m in got]
    got = []
    for i, e in enumerate(evs):
        if how == "restore" and i == cut:
            state = json.loads(json.dumps(save_state(engine)))
            engine = restore_state(cepflow.Engine(prog, start=start), state)
        got += engine.process(e)
    got += engine.finish()
    return [(m.type, m.params, m.ts, m.event_refs, m.match_id) for m in got]


@settings(max_examples=120, deadline=None)
@given(events_st, specs())
@example(stream([("A", 0, 0), ("B", 0, 1000), ("A", 0, 500), ("B", 0, 500), ("B", 0, 2000)]),
         {"policy": "spawn", "delta": 2000, "keyed": True, "before": False, "after": False,
          "guard": None})
def test_the_rest_begins_when_the_interval_passed(evs: list[Event], s: dict) -> None:
    got = run(program(body(s)), evs, "fast")
    assert sorted((p[0], p[1], ts) for _, p, ts, _, _ in got) == oracle(evs, s), body(s)


@settings(max_examples=80, deadline=None)
@given(events_st, specs(), st.integers(0, 16),
       st.sampled_from(["", "@Name('Q') select a.v as av from pattern [every a=A -> "
                            "b=B(b.k = a.k) where timer:within(1 sec)];\n",
                        "@Name('Q') select a.v as av from pattern [every a=A -> "
                        "timer:interval(1 sec)];\n"]))
def test_every_route_gives_the_same_matches(evs: list[Event], s: dict, cut: int,
                                            also: str) -> None:
    """Per event, the token path, ``Engine.run`` in two batches (beside a kernel pattern)
    and a save/restore in the middle: the same matches, ids, times and parts."""
    prog = program(body(s), also)
    ref = run(prog, evs, "fast")
    assert run(prog, evs, "token") == ref
    assert run(prog, evs, "run", cut) == ref
    assert run(prog, evs, "restore", cut) == ref


def test_hand_derived() -> None:
    """Δ = 2 s after each A, the first B of its key; B1 at 1 s is before the first interval
    passed, B1 at 2 s is at its end (seen), the second A's interval passes at 3.5 s."""
    prog = program("every a=A -> timer:interval(2 sec) -> b=B(b.k = a.k)")
    evs = stream([("A", 1, 0), ("B", 1, 1000), ("A", 1, 500), ("B", 1, 500), ("B", 2, 100),
                  ("B", 1, 1900)])
    assert [(m.params, m.ts, m.event_refs) for m in run_events(prog, evs)] == [
        ((0, 3), 2000, ["A#0", "B#3"]), ((2, 5), 4000, ["A#2", "B#5"])]
    # (timer:interval and not D): the D at 2 s is at the end of the first A's interval (it
    # fired: the D is not seen) and inside the second's (ended)
    prog = program("every a=A -> (timer:interval(2 sec) and not D) -> b=B")
    evs = stream([("A", 1, 0), ("A", 1, 1000), ("D", 1, 1000), ("B", 1, 1000)])
    assert [(m.params, m.ts) for m in run_events(prog, evs)] == [((0, 3), 3000)]
    # -> (b=B and not D): the not is active from the interval's end only
    prog = program("a=A -> timer:interval(2 sec) -> (b=B and not D)")
    assert [m.params for m in run_events(prog, stream([
        ("A", 1, 0), ("D", 1, 1000), ("B", 1, 1500)]))] == [(0, 2)]
    assert run_events(prog, stream([("A", 1, 0), ("D", 1, 2000), ("B", 1, 0)])) == []
    # two intervals in a row add up
    prog = program("a=A -> timer:interval(1 sec) -> timer:interval(1 sec) -> b=B")
    assert [m.params for m in run_events(prog, stream([
        ("A", 1, 0), ("B", 1, 1999), ("B", 1, 1)]))] == [(0, 2)]


def run_events(prog: object, evs: list[Event]) -> list:
    engine = cepflow.Engine(prog)
    for i, e in enumerate(evs):
        e.id = f"{e.type}#{i}"
    return [m for e in evs for m in engine.process(e)] + engine.finish()


def reported(body: str, what: str) -> None:
    """``body`` is refused with ``what`` at its statement's line (5), not run otherwise."""
    with pytest.raises(PatternSyntaxError) as info:
        program(body)
    assert what in str(info.value) and ":5:" in str(info.value)


def test_an_interval_after_a_group_is_reported() -> None:
    reported("every a=A -> (b=B and x=X) -> timer:interval(1 sec) -> d=D",
             "timer:interval after a group")


# -- timer:interval inside or: A -> (B or timer:interval(Δ)) -------------------------------

@st.composite
def or_specs(draw: st.DrawFn) -> dict:
    return {"policy": draw(st.sampled_from(["spawn", "once", "restart", "start"])),
            # (not 0: a zero interval's match is emitted when time passes its instant, where
            # Esper's fires at once — the same match: docs/conformance.md)
            "delta": draw(st.sampled_from([500, 1000, 1500, 2000])),
            "keyed": draw(st.booleans())}


def beside(s: dict, op: str) -> str:
    """``(b=B <op> timer:interval(Δ))`` after ``a=A`` under the spec's start policy, or alone
    from the statement's start."""
    b = "b=B(b.k = a.k)" if s["keyed"] and s["policy"] != "start" else "b=B"
    both = f"({b} {op} timer:interval({s['delta']} msec))"
    return {"spawn": f"every a=A -> {both}", "once": f"a=A -> {both}",
            "restart": f"every (a=A -> {both})", "start": both}[s["policy"]]


def beside_oracle(op: str):
    """Esper's answer for :func:`beside` (timers before the events of their instant; with
    ``start`` one instance from the statement's start, 0, and no A): ``or`` ends an instance
    at its first B (keyed) or when its interval passed, whichever comes first; ``and`` is true
    when its first B came and its interval passed, at the later of the two."""
    def oracle(evs: list[Event], s: dict) -> list[tuple]:
        out = []
        live: list[dict] = []
        began = s["policy"] == "start"
        if began:
            live.append({"a": None, "end": s["delta"], "b": None, "passed": False})
        for e in evs:
            for inst in list(live):
                if inst["end"] <= e.ts and not inst["passed"]:
                    inst["passed"] = True
                    if op == "or" or inst["b"] is not None:
                        b = inst["b"] and inst["b"].params[1]
                        out.append((inst["a"] and inst["a"].params[1], b, inst["end"]))
                        live.remove(inst)
            for inst in list(live):
                if e.type == "B" and inst["b"] is None and (
                        not s["keyed"] or inst["a"] is None
                        or e.params[0] == inst["a"].params[0]):
                    inst["b"] = e
                    if op == "or" or inst["passed"]:
                        out.append((inst["a"] and inst["a"].params[1], e.params[1], e.ts))
                        live.remove(inst)
            if e.type == "A" and (s["policy"] == "spawn"
                                  or (s["policy"] == "once" and not began)
                                  or (s["policy"] == "restart" and not live)):
                began = True
                live.append({"a": e, "end": e.ts + s["delta"], "b": None, "passed": False})
        return sorted(out, key=repr)
    return oracle


@settings(max_examples=120, deadline=None)
@given(events_st, or_specs(), st.integers(0, 16))
def test_an_or_with_an_interval_ends_at_the_first_of_the_two(evs: list[Event], s: dict,
                                                            cut: int) -> None:
    against(beside(s, 'or'), beside_oracle('or'), evs, s, cut)


def against(body: str, oracle, evs: list[Event], s: dict, cut: int) -> None:
    """``body``'s matches per event are ``oracle``'s, and the token path, ``Engine.run`` cut
    at ``cut`` and a save/restore there give the same (the statement started at 0)."""
    start = s["policy"] == "start"  # (no a then: the select list reads b alone)
    prog = program(body, select="null as av, b.v as bv" if start else "a.v as av, b.v as bv")
    ref = run(prog, evs, "fast", start=0)
    assert sorted(((p[0], p[1], ts) for _, p, ts, _, _ in ref), key=repr) == oracle(
        evs, s), body
    assert run(prog, evs, "token", start=0) == ref
    assert run(prog, evs, "run", cut, start=0) == ref
    assert run(prog, evs, "restore", cut, start=0) == ref


def test_an_or_with_an_interval_hand_derived() -> None:
    """A at 0 and 1 s; the B at 2.5 s is the second A's (the first's 2 s passed at 2 s)."""
    prog = program("every a=A -> (b=B or timer:interval(2 sec))")
    evs = stream([("A", 1, 0), ("A", 1, 1000), ("B", 1, 1500), ("A", 1, 1000)])
    assert [(m.params, m.ts) for m in run_events(prog, evs)] == [
        ((0, None), 2000), ((1, 2), 2500)]
    # more after the or: reported, not run with another meaning
    reported("every a=A -> (b=B or timer:interval(2 sec)) -> d=D", "inside 'or'")


def test_the_graph_draws_the_deadline_going_on() -> None:
    """The automaton's drawing: the interval's deadline steps to the state after it (not to
    the final state, as an interval at the end does)."""
    from cepflow.automaton.dot import to_dot

    prog = program("every a=A -> timer:interval(2 sec) -> b=B(b.k = a.k)")
    dot = to_dot(next(a for a in prog.automata if a.name == "P"))
    assert 'q1 -> q2 [label="deadline of z0' in dot and "q1 -> f" not in dot
    assert "after timer:interval" in dot


# -- timer:interval inside and: A -> (B and timer:interval(Δ)) -----------------------------

@settings(max_examples=120, deadline=None)
@given(events_st, or_specs(), st.integers(0, 16))
def test_an_and_with_an_interval_is_true_at_the_later_of_the_two(evs: list[Event], s: dict,
                                                               cut: int) -> None:
    against(beside(s, 'and'), beside_oracle('and'), evs, s, cut)


def test_an_and_with_an_interval_hand_derived() -> None:
    """A at 0: its B at 0.5 s waits for the 2 s to pass; the second A's B comes after its 2 s
    (at 4.5 s) and completes at once; a second B before 2 s does not replace the first."""
    prog = program("every a=A -> (b=B(b.k = a.k) and timer:interval(2 sec))")
    evs = stream([("A", 1, 0), ("B", 1, 500), ("B", 1, 500), ("A", 2, 1000), ("B", 2, 2500)])
    assert [(m.params, m.ts) for m in run_events(prog, evs)] == [
        ((0, 1), 2000), ((3, 4), 4500)]
    reported("every a=A -> (b=B and timer:interval(2 sec)) -> d=D", "inside 'and'")
