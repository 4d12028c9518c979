"""Esper's ``until`` is one instance (EvalMatchUntilStateNode): it holds one list of the events
its operand matched, adds each result of the operand to it and restarts the operand, up to the
upper bound; the end (started first) ends it. On the token path an until with a single-event
operand therefore keeps **one thread per instance** (``CompiledPattern.greedy``,
``Matcher._try_edges``) — stop 37's matcher kept one per subset of the operand events it may
have taken, 2^k after k tagged events (docs/esper.md, "until: one instance").

Checked here: the thread count over random streams and forms (the cost: it was the blow-up),
an oracle written from EvalMatchUntilStateNode and EvalFollowedByStateNode for an until in the
middle of a pattern whose collected tag a later filter reads (where the subset threads gave a
match Esper does not), per event, on the token path, through ``Engine.run`` cut anywhere and
with a JSON save/restore between; and states saved by stop 37's release (threads per subset,
``data/until_states_stop37.json``, written by that release) restore and go on with Esper's
answer. The forms' agreement with Esper's reference cases and the any-length oracle stay in
test_esper_reference_cases.py and test_esper_until_any_length.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_until_any_length import bounds_text, rows

import cepflow
from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.runtime.state import restore_state, save_state

SCHEMAS = "".join(f"create schema {t}(k int, v int);\n" for t in "ABCDE")
STATES = Path(__file__).parent / "data" / "until_states_stop37.json"


def program(body: str) -> Any:
    return cepflow.load_module(parse_epl(SCHEMAS + f"@Name('P') select * from pattern [{body}];"))


def stream(items: list[tuple[str, int]], start: int = 0) -> list[Event]:
    """One event a second; ``v`` its place in the stream (from ``start``)."""
    return [Event(t, (k, i), 1000 * (i + 1)) for i, (t, k) in enumerate(items, start)]


events_st = st.lists(st.tuples(st.sampled_from("ABCD"), st.integers(0, 2)),
                     max_size=18).map(stream)
BOUNDS = [(None, None), (1, None), (2, None), (None, 2), (1, 3), (2, 2), (0, 1)]
#: single-event operands: an atom, an or of atoms, every on one; a keyed form after a stage
OPERANDS = ["a=A", "(a=A or b=B)", "every a=A", "a=A(k=1)"]
SHAPES = ["{u}", "every ({u})", "x=C -> ({u})", "every x=C -> ({u})"]


@settings(max_examples=80, deadline=None)
@given(events_st, st.sampled_from(OPERANDS), st.sampled_from(BOUNDS),
       st.sampled_from(SHAPES), st.sampled_from(["d=D", "D(k=0)", "(d=D or c=C(k=2))"]))
def test_one_thread_per_until_instance(events: list[Event], operand: str, bounds: tuple,
                                       shape: str, end: str) -> None:
    """After every event each partial match of a single-event until holds one thread (the
    matcher held one per subset of the operand events taken: 2^k)."""
    low, high = bounds
    prog = program(shape.format(u=f"{bounds_text(low, high)}{operand} until {end}"))
    for fast in (True, False):
        engine = cepflow.Engine(prog, start=0, fast_path=fast)
        for e in events:
            engine.process(e)
            assert all(len(t.threads) == 1 for t in engine.matchers[0].all_tokens())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("AAAABD"), st.integers(0, 1)), max_size=24).map(stream),
       st.sampled_from(["([2] a=A)", "([3] a=A)", "(a=A until b=B)", "every [2] a=A"]),
       st.sampled_from(["", "every "]))
def test_a_group_operand_keeps_a_thread_per_state(events: list[Event], operand: str,
                                                 every: str) -> None:
    """An until over a group (``[k] P``, a nested until) keeps, per state of its automaton, the
    thread of the oldest events (CompiledPattern.loose, Matcher._oldest: the others are behind
    at every completion) — at most one per state, where it held one per subset of its events
    (2^(k/2) after k A's). Its answers: test_esper_until_any_length's oracle."""
    prog = program(f"{every}({operand} until d=D)")
    engine = cepflow.Engine(prog, start=0)
    states = len(engine.matchers[0].pattern.auto.edges)
    for e in events:
        engine.process(e)
        assert all(len(t.threads) <= states for t in engine.matchers[0].all_tokens())


def later_filter_oracle(events: list[Event], low: int | None, high: int | None,
                        size: int | None) -> list[tuple[float, dict[str, Any]]]:
    """``b=B -> ([m:n] P until d=D) -> c=C(c.k = a[0].k)`` by Esper's definition, ``P`` being
    ``[size] a=A`` or (``size`` None) the nested ``a=A until e=E``: the first ``B`` starts the
    until; its operand completes a match at every ``size`` A, or at each E with the A's since
    the last (EvalMatchUntilStateNode adds the match's events to its one list and restarts
    it) while fewer than ``n`` matches were made (an event that fits the end ends it first);
    ``D`` ends it — a match under way is dropped — true with at least ``m`` matches (else the
    pattern is false and over), ``[n]`` ends it true at the n-th match; then the first ``C``
    whose ``k`` is the first collected ``A``'s matches (none collected: ``a[0].k`` is null,
    no ``C``)."""
    phase, b, d = "b", None, None
    taken: list[Event] = []
    pending: list[Event] = []
    count, m = 0, low or 0
    for e in events:
        if phase == "b" and e.type == "B":
            phase, b = "until", e
        elif phase == "until" and e.type == "D":
            if count < m:
                return []
            phase, d = "c", e
        elif phase == "until" and e.type in "AE" and (high is None or count < high):
            if e.type == "A" or size is None:
                pending.append(e)
            if e.type == "E" or len(pending) == size:
                taken += pending
                pending = []
                count += 1
                if low is not None and low == high and count == low:
                    phase = "c"
        elif phase == "c" and e.type == "C":
            first = [x for x in taken if x.type == "A"]
            if not first or e.params[0] != first[0].params[0]:
                continue
            out = {"b.k": b.params[0], "b.v": b.params[1], "c.k": e.params[0],
                   "c.v": e.params[1]}
            if d is not None:
                out.update({"d.k": d.params[0], "d.v": d.params[1]})
            for t in "ae":
                for i, x in enumerate(x for x in taken if x.type == t.upper()):
                    out[f"{t}[{i}].k"], out[f"{t}[{i}].v"] = x.params
            return [(e.ts, out)]
    return []


@settings(max_examples=80, deadline=None)
@given(events_st, st.sampled_from(BOUNDS), st.sampled_from([1, 2]),
       st.sampled_from(["event", "token", "run", "restore"]), st.integers(0, 18))
def test_a_later_filter_reads_the_one_collection(events: list[Event], bounds: tuple, size: int,
                                                 how: str, cut: int) -> None:
    """A filter after the until reads what its one instance collected (``a[0]`` is the first
    ``A`` after the ``B``; a group under way at the end is not collected): per event, token
    path, run cut anywhere, save/restore between."""
    low, high = bounds
    operand = "a=A" if size == 1 else f"([{size}] a=A)"
    body = f"b=B -> ({bounds_text(low, high)}{operand} until d=D) -> c=C(c.k = a[0].k)"
    got = rows(program(body), events, how, cut)
    assert got == later_filter_oracle(events, low, high, size), body


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("AABCDE"), st.integers(0, 2)), max_size=18).map(stream),
       st.sampled_from([(None, None), (None, 2), (0, 1), (None, 1)]),
       st.sampled_from(["event", "token", "run", "restore"]), st.integers(0, 18))
def test_a_later_filter_reads_a_nested_until(events: list[Event], bounds: tuple, how: str,
                                             cut: int) -> None:
    """The same over a nested until (``a=A until e=E``, whose every end is one match of the
    outer): the outer's one instance ends at its ``D`` for every run of it."""
    low, high = bounds
    body = (f"b=B -> ({bounds_text(low, high)}(a=A until e=E) until d=D) -> "
            "c=C(c.k = a[0].k)")
    got = rows(program(body), events, how, cut)
    assert got == later_filter_oracle(events, low, high, None), body


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("AABCDE"), st.integers(0, 2)), max_size=16).map(stream),
       st.sampled_from([1, 2, None]), st.sampled_from([(None, None), (None, 2), (0, 1)]),
       st.sampled_from(["event", "token", "run", "restore"]), st.integers(0, 16))
def test_a_later_filter_under_every(events: list[Event], size: int | None, bounds: tuple,
                                    how: str, cut: int) -> None:
    """``every b=B -> (…) -> c=C(…)``: each ``B`` starts an instance of its own (Esper's every
    restarts the followed-by), each with its one until instance; their matches in time order,
    those at one ``C`` oldest instance first."""
    low, high = bounds
    operand = {1: "a=A", 2: "([2] a=A)", None: "(a=A until e=E)"}[size]
    body = (f"every b=B -> ({bounds_text(low, high)}{operand} until d=D) -> "
            "c=C(c.k = a[0].k)")
    want = sorted((m for i, e in enumerate(events) if e.type == "B"
                   for m in later_filter_oracle(events[i:], low, high, size)),
                  key=lambda m: m[0])
    assert rows(program(body), events, how, cut) == want, body


def test_the_end_ends_every_run_of_a_group_until() -> None:
    """The counterexamples stop 38's CI found (one a second, every ``k`` 0): the first ``D``
    ends the instance of ``([2] a=A) until d=D`` (a group under way dropped), so no later
    run of it — one that skipped that ``D`` — collects the ``A``'s after it. Runs that had
    skipped an operand event were kept per state (CompiledPattern.loose) and one of them
    went on past the end."""
    body = "b=B -> (([2] a=A) until d=D) -> c=C(c.k = a[0].k)"
    for kinds, want in [("BDAADC", []), ("BADADC", []),
                        ("BAAADAAADC", [(10000, {"b.v": 0, "a[0].v": 1, "a[1].v": 2,
                                                 "d.v": 4, "c.v": 9})])]:
        evs = stream([(t, 0) for t in kinds])
        got = rows(program(body), evs, "event", 0)
        assert [(t, {k: v for k, v in b.items() if k.endswith(".v")}) for t, b in got] == want
        assert got == later_filter_oracle(evs, None, None, 2)


def test_a_later_filter_pinned() -> None:
    """B(k0) A(k1) A(k0) D(k0) C(k0) C(k1), one a second: the until holds A(k1) A(k0), so
    ``a[0].k`` is 1 and C(k1) at 6 s matches. Stop 37's matcher matched C(k0) at 5 s through
    the thread that had skipped A(k1) — a run Esper's one instance never has."""
    evs = stream([("B", 0), ("A", 1), ("A", 0), ("D", 0), ("C", 0), ("C", 1)])
    got = rows(program("b=B -> (a=A until d=D) -> c=C(c.k = a[0].k)"), evs, "event", 0)
    assert [(t, {k: v for k, v in b.items() if k.endswith(".v")}) for t, b in got] == [
        (6000, {"b.v": 0, "a[0].v": 1, "a[1].v": 2, "d.v": 3, "c.v": 5})]


def test_a_later_filter_over_a_group_operand_pinned() -> None:
    """B(k0) A(k1) A(k0) A(k0) A(k1) A(k1) D C(k0) C(k1), one a second: the until's one
    instance completes the groups (A1, A2), (A3, A4), and the D drops A5 under way, so
    ``a[0].k`` is 1 and C(k1) at 9 s matches. A thread that had skipped A1 — groups (A2, A3),
    no run of Esper's — matched C(k0) at 8 s (stop 37, and this branch while collected tags
    read by a filter were kept out of CompiledPattern.loose)."""
    evs = stream([("B", 0), ("A", 1), ("A", 0), ("A", 0), ("A", 1), ("A", 1), ("D", 0),
                  ("C", 0), ("C", 1)])
    got = rows(program("b=B -> (([2] a=A) until d=D) -> c=C(c.k = a[0].k)"), evs, "event", 0)
    assert [(t, {k: v for k, v in b.items() if k.endswith(".v")}) for t, b in got] == [
        (9000, {"b.v": 0, "a[0].v": 1, "a[1].v": 2, "a[2].v": 3, "a[3].v": 4, "d.v": 6,
                "c.v": 8})]


#: the saved states' programs, the events before the save (written by stop 37's release,
#: tests/esper/data/until_states_stop37.json) and after it, and the matches over both
SAVED = {
    "any": ("every (r=A until u=D)", [("A", 0), ("A", 1), ("A", 2)],
            [("D", 0), ("A", 1), ("D", 1)],
            [(4000, {"r[0].v": 0, "r[1].v": 1, "r[2].v": 2, "u.v": 3}),
             (6000, {"r[0].v": 4, "u.v": 5})]),
    "bounded": ("every a=A -> ([2:3] b=B(b.k = a.k) until c=C(c.k = a.k))",
                [("A", 0), ("B", 0), ("B", 0), ("B", 0), ("B", 0)], [("C", 0)],
                [(6000, {"a.v": 0, "b[0].v": 1, "b[1].v": 2, "b[2].v": 3, "c.v": 5})]),
}


def test_restores_a_state_saved_by_stop_37() -> None:
    """A state saved by the previous release loads as it was saved — its instance's thread per
    subset of the events taken (4 and 3 here) — and goes on with Esper's answer: a thread
    no longer forks, and of the runs the end completes the one with every event (the one
    Esper's instance is) wins, as it did. Saved again, it round-trips."""
    saved = json.loads(STATES.read_text())
    for name, (body, before, after, want) in SAVED.items():
        prog = program(body)
        engine = restore_state(cepflow.Engine(prog, start=0), saved[name])
        (tok,) = engine.matchers[0].all_tokens()
        assert len(tok.threads) == {"any": 4, "bounded": 3}[name]
        again = json.loads(json.dumps(save_state(engine)))
        assert again["patterns"] == saved[name]["patterns"]
        evs = stream(after, len(before))
        got = [ce for e in evs for ce in engine.process(e)]
        fresh = cepflow.Engine(prog, start=0)
        ref = [ce for e in stream(before) + evs for ce in fresh.process(e)]
        for ces in (got, ref):
            assert [(ce.ts, {k: v for k, v in ce.bindings.items()
                             if v is not None and k.endswith(".v")}) for ce in ces] == want, name
