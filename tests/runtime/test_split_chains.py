"""VEPL programs with patterns over derived events in the program split (kernels/split.py): the
chain-kernel patterns (kernels.chain.plan_chain) are kernel patterns of the split, and chains
over their output whose matches complete at input steps are planned over the derived stream
(kernels.cascade.plan_higher) — benchmarks/pattern_shapes.py's ``ho_chain``, ``P(x) -> C(x,
_)`` over ``A(x, _) -> B(x, _)``; with windows since stop 33, ``ho_chain_win``). Random
two-level programs (chains of stages of alternatives, NOTs, trees, keyed and unkeyed, windows,
over the input; chains over their output with the derived type at any stage, twice, beside an
input alternative — also last, or in a tree there (ho_or's ``P0(s) OR C(s, _)``, since stop 33)
—, in a NOT, windows, unkeyed)
over random streams, through test_chain_alternatives.check: the row step, batches cut
anywhere, parts event by event, Arrow columns, time passing after a batch, a save/restore,
time passing and ``finish`` against the general token path."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_chain_alternatives import (
    FILTERS,
    alternatives,
    check,
    compile_,
    found,
    saved,
    specs,
)
from test_chain_nots import not_chains, trees
from tests.esper.test_split import in_lists

from cepflow.events.event import Event
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels import cascade
from cepflow.runtime.state import restore_state, save_state

#: the patterns over the input (kernel patterns), one of them now and then with a window (its
#: timers planned: kernels.chain.plan_chain, drop_passed_timers)
LOWER = st.one_of(alternatives(), not_chains(), trees())
TIMED = LOWER.filter(lambda b: "ms]" in b)


def keyed(body: str) -> bool:
    """Whether test_chain_alternatives.compile_ gives the pattern of ``body`` a key (``s``)."""
    return "(s" in body or ", s)" in body


#: the last stage of a chain over the output: input types, alternatives of a derived and an
#: input type (ho_or's ``P0(s) OR C(s, _)``), a derived type
ENDS = ("input",) * 3 + ("or",) * 3 + ("derived",)
#: the last stage mixing a derived and an input type: as alternatives or in a tree
MIXED = ("or", "or", "and")


@st.composite
def higher(draw: st.DrawFn, lower: list[str], ends: tuple[str, ...] = ENDS) -> str:
    """A chain over the output of the patterns ``lower`` (P0, P1): 1-3 stages, the derived
    types at any (an alternative beside an input type now and then, the same derived type
    twice), a NOT of a derived or an input type in a gap now and then, the last stage of a
    kind in ``ends`` — input types (its matches complete at input steps), a derived type (in
    the cascade of that pattern's matches), alternatives or a tree (``AND``) of a derived and
    an input type (either) —; filters on the input events; keyed on ``s`` or not; now and
    then a window (of 0, 0.2, 2 or 5 ms: the float time of test_chain_alternatives.specs
    exceeds 0.2 at a deadline not before the event)."""
    # (keyed when every pattern below gives its key: a derived type read without one binds
    # no ``s`` for a later NOT to read)
    key = draw(st.sampled_from(["s", "s", "s", "_"])) if all(map(keyed, lower)) else "_"

    def derived() -> str:
        i = draw(st.integers(0, len(lower) - 1))
        if not keyed(lower[i]):
            return f"P{i}"
        return f"P{i}({key})"

    def atom() -> str:
        t = draw(st.sampled_from("ABCD"))
        f = draw(st.sampled_from(FILTERS))
        a = f"D(_, {key})" if t == "D" else f"{t}({key}, _)"
        return a + (" where " + (f.replace("v", "k") if t == "D" else f) if f else "")

    n = draw(st.sampled_from([1, 2, 2, 3]))
    parts = []
    for m in range(n):
        last = m == n - 1
        kind = draw(st.sampled_from(["derived", "derived", "input", "or"]) if not last
                    else st.sampled_from(ends))
        if kind == "derived" or (m == 0 and kind == "input" and draw(st.booleans())):
            parts.append(derived())
        elif kind in ("or", "and"):
            pair = draw(st.permutations([derived(), atom()]))
            parts.append("(" + f" {kind.upper()} ".join(pair) + ")")
        else:
            parts.append(atom())
        if not last and draw(st.integers(0, 3)) == 0:
            parts.append(f"NOT {derived() if draw(st.booleans()) else atom()}")
    body = " -> ".join(parts)
    window = draw(st.sampled_from([None] * 4 + [0, 0.2, 2, 5]))
    return body if window is None else f"({body})[{window} ms]"


@st.composite
def programs(draw: st.DrawFn, ends: tuple[str, ...] = ENDS) -> list[str]:
    """One or two patterns over the input, now and then one more with a window, one or two over
    their output (their last stages of a kind in ``ends``)."""
    lower = draw(st.lists(LOWER, min_size=1, max_size=2)) + draw(st.lists(TIMED, max_size=1))
    return lower + draw(st.lists(higher(lower, ends), min_size=1, max_size=2))


#: longer streams over fewer keys (a NaN now and then): a chain over a chain's output has
#: matches of both kinds in most batches
DENSE = st.lists(st.tuples(st.sampled_from("ABCD"), st.sampled_from([0, 1, 1, 0, float("nan")]),
                           st.sampled_from([0, 1, 2, 3, None]), st.sampled_from([0, 0, 1, 0.1])),
                 min_size=20, max_size=80)


def split_route(bodies: list[str], fast: Engine, batch: Engine, cols: Engine) -> None:
    """The program splits, its kernel patterns the chain kernel's."""
    assert batch._split is not None and cols.columnar, bodies
    assert all(cascade.split_chain(m) is not None for m in batch._split)


def runnable(bodies: list[str]) -> bool:
    """Whether the program splits (else another test's case: the kernels alone or per
    event)."""
    return Engine(compile_(bodies))._split is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.filter_too_much])
@given(programs().filter(runnable), specs, st.lists(st.integers(0, 30), min_size=1, max_size=5),
       st.integers(0, 4), st.integers(0, 6))
# ho_chain: P0's matches open P1's partial matches in the cascade, C's complete them
@example(["A(s, _) -> B(s, _)", "P0(s) -> C(s, _)"],
         [("A", 1, 0, 0), ("B", 1, 0, 1), ("A", 1, 0, 0), ("C", 1, 0, 0), ("B", 1, 0, 0),
          ("C", 1, 0, 1), ("C", 1, 0, 0)], [3, 1], 1, 2)
# a chain whose last stage is derived (P2's matches come in P0's cascade, after P1's match of
# that row takes its id, before it comes out): not planned (cascade.higher_candidates)
@example(["A(s, _) -> B(s, _)", "B(s, _)", "C(s, _) -> P0(s)"],
         [("A", 1, 0, 0), ("C", 1, 0, 1), ("B", 1, 0, 0), ("A", 2, 0, 1)], [2], 0, 0)
def test_chains_over_chain_output_equal_the_token_path(bodies: list[str], spec: list,
                                                       cuts: list[int], restore_at: int,
                                                       gap: int) -> None:
    check(bodies, spec, cuts, restore_at, gap, route=split_route)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.filter_too_much])
@given(programs().filter(runnable), specs, st.lists(st.integers(0, 30), min_size=1, max_size=5),
       st.integers(0, 4), st.integers(0, 6))
def test_chains_over_chain_output_stepping_many_rows(bodies: list[str], spec: list,
                                                     cuts: list[int], restore_at: int,
                                                     gap: int) -> None:
    """The same with the rows looked up in lists from the first stepped row and the loose
    matches recorded one by one (split._Replay.as_lists)."""
    with in_lists(3):
        check(bodies, spec, cuts, restore_at, gap, route=split_route)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.filter_too_much])
@given(programs(MIXED).filter(runnable), DENSE,
       st.lists(st.integers(0, 30), min_size=1, max_size=5), st.integers(0, 4),
       st.integers(0, 6))
def test_chains_ending_in_a_mixed_stage_equal_the_token_path(bodies: list[str], spec: list,
                                                             cuts: list[int], restore_at: int,
                                                             gap: int) -> None:
    """Chains whose last stage mixes a kernel pattern's output with an input type (ho_or's
    alternatives, or a tree): a match an input row completes comes at that row's input step,
    one a kernel match completes in that match's cascade (kernels.cascade.Higher.sub)."""
    check(bodies, spec, cuts, restore_at, gap, route=split_route)


#: (type, key, value, time): a longer stream of three types and four keys
STREAM = [("ABC"[(i * 7) % 5 % 3], i % 4, 0, i) for i in range(400)]


def in_batches(prog: Any, spec: list, cuts: list[int], restore_at: int | None = None
               ) -> tuple[Engine, list, Engine, list, list[Event]]:
    """``spec`` per event and through ``process_batch`` in parts cut at ``cuts`` (a
    save/restore before part ``restore_at``): the per-event engine and its matches, the
    batches' engine and theirs, and the events the batches stepped (Engine.process)."""

    def evs() -> list[Event]:
        return [Event(t, (k, v), ts, id=i) for i, (t, k, v, ts) in enumerate(spec)]

    one, many = Engine(prog), Engine(prog)
    ref = found(m for e in evs() for m in one.process(e))
    stepped: list[Event] = []
    process = Engine.process

    def spy(self: Engine, event: Event, out: Any = None) -> Any:
        stepped.append(event)
        return process(self, event, out)

    batch = evs()
    got: list = []
    with patch.object(Engine, "process", spy):
        for part, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(batch)], strict=True)):
            if part == restore_at:
                many = restore_state(Engine(prog), save_state(many))
            got += found(many.process_batch(batch[lo:hi]))
    return one, ref, many, got, stepped


@pytest.mark.parametrize("bodies", [["A(s, _) -> B(s, _)", "P0(s) -> C(s, _)"],
                                    ["A(s, _) -> B(s, _)", "B(s, _) -> C(s, _)",
                                     "(P1(s) OR P0(s)) -> C(s, _)",
                                     "P0(s) -> NOT P1(s) -> C(s, _)"],
                                    ["A(s, _) -> B(s, _)", "P0(s) OR C(s, _)"],
                                    ["A(s, _) -> C(s, _)", "B(s, _) -> (P0(s) AND C(s, _))",
                                     "(C(s, _) OR P0(s))"]])
def test_ho_shapes_step_no_row(bodies: list[str]) -> None:
    """ho_chain (and two kernel patterns read by two chains, one of either, one with a NOT of
    the other), ho_or (and a tree and alternatives ending in a kernel pattern's output or an
    input type C that also completes that pattern: both kinds of match at one row): the
    patterns over the input are the split's kernel patterns, those over their output are
    planned, so no row of a batch is stepped (per event their input C and the kernel
    patterns' completions were), and the matches, ids and state are the per-event engine's,
    across a save/restore."""
    prog = compile_(bodies)
    many = Engine(prog)
    lower = [m.name for m in many.matchers if not m.pattern.types - {"A", "B", "C", "D"}]
    assert [m.name for m in many._split] == lower
    assert [m.name for m in cascade.higher_candidates(many, many._split)] == [
        m.name for m in many.matchers if m.name not in lower]
    one, ref, many, got, stepped = in_batches(prog, STREAM, [150], 1)
    assert not stepped
    assert got == ref and {r[0] for r in ref} == {m.name for m in one.matchers}
    assert saved(many) == saved(one)


def test_ho_or_orders_matches_by_where_they_complete() -> None:
    """Hand-derived: ``Q: P0(s) OR C(s, _)`` over ``P0: A(s, _) -> C(s, _)``. At the C row
    the input step gives P0's match id 1 and Q's match of the C id 2; P0's match then cascades
    and Q's match of it takes id 3 and comes out right after it, before Q's match of the C —
    per event and in the split, which steps no row."""
    prog = compile_(["A(s, _) -> C(s, _)", "P0(s) OR C(s, _)"])
    spec = [("A", 1, 0), ("C", 2, 0), ("C", 1, 0)]
    batch = Engine(prog)
    assert [m.name for m in batch._split] == ["P0"]
    got = []
    for eng in (Engine(prog), batch):
        evs = [Event(t, (k, v), i, id=f"{t.lower()}{i}") for i, (t, k, v) in enumerate(spec)]
        if eng is batch:
            with patch.object(Engine, "process", side_effect=AssertionError("stepped")):
                got.append(found(eng.process_batch(evs)))
        else:
            got.append(found(m for e in evs for m in eng.process(e)))
    assert [(m[0], m[2]) for m in got[0]] == [("P1", 1), ("P0", 2), ("P1", 4), ("P1", 3)]
    # (Q's match of P0's match refers to the events under it)
    assert [m[3] for m in got[0]] == [("c1",), ("a0", "c2"), ("a0", "c2"), ("c2",)]
    assert got[1] == got[0]


def test_a_chain_read_per_event_stays_per_event() -> None:
    """A chain whose last stage reads two kernel patterns' outputs (``P0(s) OR P1(s)``: not
    planned, cascade.higher_candidates) over two chains' output: those chains are no kernel
    patterns — their completions and the reader's rows would be stepped — and the program runs
    per event (split._chains_read_in_plan); beside a planned reader of a third chain, that one
    is a kernel pattern. (ho_or's ``P0(s) OR C(s, _)`` and a windowed reader were such readers
    until stop 33.)"""
    two = ["A(s, _) -> B(s, _)", "B(s, _) -> A(s, _)"]
    assert Engine(compile_([*two, "P0(s) OR P1(s)"]))._split is None
    e = Engine(compile_([*two, "C(s, _) -> A(s, _)", "P0(s) OR P1(s)", "P2(s) -> C(s, _)"]))
    assert [m.name for m in e._split] == ["P2"]
    assert [m.name for m in Engine(compile_(["A(s, _) -> B(s, _)", "P0(s) OR C(s, _)"]))._split
            ] == ["P0"]


def test_windowed_chains_are_planned() -> None:
    """A chain with a window over the input or over a chain's output (ho_chain_win) is planned
    in the split since stop 33 (before, its timers kept it per event, and the chain it read
    with it): kernel pattern and planned reader alike."""
    for lower, reader in (("A(s, _) -> B(s, _)", "(P0(s) -> C(s, _))[5 ms]"),
                          ("(A(s, _) -> B(s, _))[5 ms]", "(P0(s) -> C(s, _))[5 ms]"),
                          ("(A(s, _) -> B(s, _))[0.2 ms]", "P0(s) -> C(s, _)")):
        e = Engine(compile_([lower, reader]))
        assert [m.name for m in e._split] == ["P0"]
        assert [m.name for m in cascade.higher_candidates(e, e._split)] == ["P1"]


def test_ho_chain_win_hand_derived() -> None:
    """ho_chain_win's shape with windows of 5 ms, in two batches (no row stepped: the timers
    the first batch leaves are due in the second, dropped before it is replayed —
    kernels.chain.drop_passed_timers — else the rows they are due before would be stepped),
    against the per-event engine and by hand: A(1)@0 and A(2)@1 begin P0's partial matches 1
    and 2 (deadlines 5 and 6); B(1)@3 completes 1 (match 1), whose cascade begins P1's partial
    match 3 (deadline 8); 2's timer fires after the events of 6, so B(2)@7 finds nothing;
    C(1)@8 completes 3 at a span of exactly 5 (match 2); A(1)@9 begins 4. Time passing to 20
    fires 4's timer at 14 (the clock moves there); the others fired idle before 9."""
    prog = compile_(["(A(s, _) -> B(s, _))[5 ms]", "(P0(s) -> C(s, _))[5 ms]"])
    spec = [("A", 1, 0, 0), ("A", 2, 0, 1), ("B", 1, 0, 3), ("B", 2, 0, 7), ("C", 1, 0, 8),
            ("A", 1, 0, 9)]
    assert [m.name for m in Engine(prog)._split] == ["P0"]
    one, ref, many, got, stepped = in_batches(prog, spec, [3])
    assert not stepped
    assert got == ref
    assert [(t, ts, mid, p) for t, ts, mid, _r, p, _b in got] == [
        ("P0", 3, 1, "(1,)"), ("P1", 8, 2, "(1,)")]
    assert saved(many) == saved(one)
    for e in (one, many):
        assert e.host.counters.token == 4
        assert e.partial_matches() == {"P0": 1, "P1": 0}
        assert e.advance_to(20) == []
        assert e.time == 14
        assert e.partial_matches() == {"P0": 0, "P1": 0}


def test_ho_chain_win_steps_no_row() -> None:
    """ho_chain_win over a longer stream in three batches (a save/restore before the last):
    no row is stepped, and the matches, ids, state and time passing are the per-event
    engine's."""
    prog = compile_(["(A(s, _) -> B(s, _))[6 ms]", "(P0(s) -> C(s, _))[8 ms]"])
    one, ref, many, got, stepped = in_batches(prog, STREAM, [150, 270], 2)
    assert not stepped
    assert got == ref and {r[0] for r in ref} == {"P0", "P1"}
    assert saved(many) == saved(one)
    assert found(many.advance_to(1000)) == found(one.advance_to(1000))
    assert many.time == one.time > 399
