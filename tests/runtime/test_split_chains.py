"""VEPL programs with patterns over derived events in the program split (kernels/split.py): the
chain-kernel patterns (kernels.chain.plan_chain) are kernel patterns of the split, and chains
over their output whose matches complete at input steps are planned over the derived stream
(kernels.cascade.plan_higher) — benchmarks/pattern_shapes.py's ``ho_chain``, ``P(x) -> C(x,
_)`` over ``A(x, _) -> B(x, _)``. Random two-level programs (chains of stages of alternatives,
NOTs, trees, keyed and unkeyed, over the input; chains over their output with the derived type
at the first or a middle stage, twice, beside an input alternative, in a NOT, or last — that
one per event —, windows, unkeyed) over random streams, through
test_chain_alternatives.check: the row step, batches cut anywhere, parts event by event,
Arrow columns, a save/restore, time passing and ``finish`` against the general token path."""

from __future__ import annotations

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

from cepflow.events.event import Event
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels import cascade, split
from cepflow.runtime.state import restore_state, save_state

#: the patterns over the input: windowless (kernel patterns) or with a window (its timers
#: keep a chain per event: its input rows are stepped, and the kernel patterns replayed there)
LOWER = st.one_of(alternatives(), not_chains(), trees())
KERNEL = LOWER.filter(lambda b: "ms]" not in b)
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
    then a window (then per event)."""
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
    window = draw(st.sampled_from([None] * 5 + [0, 2, 5]))
    return body if window is None else f"({body})[{window} ms]"


@st.composite
def programs(draw: st.DrawFn, ends: tuple[str, ...] = ENDS) -> list[str]:
    """One or two patterns over the input, now and then one with a window (per event), one or
    two over their output (their last stages of a kind in ``ends``)."""
    lower = draw(st.lists(KERNEL, min_size=1, max_size=2)) + draw(st.lists(TIMED, max_size=1))
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
    with (patch.object(split, "_MANY_STEPS", 0), patch.object(split, "_STRETCH", 1 << 40),
          patch.object(split, "_SHORT", 3)):
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
    spec = [("ABC"[(i * 7) % 5 % 3], i % 4, 0) for i in range(400)]

    def evs() -> list[Event]:
        return [Event(t, (k, v), i, id=i) for i, (t, k, v) in enumerate(spec)]

    one, many = Engine(prog), Engine(prog)
    lower = [m.name for m in many.matchers if not m.pattern.types - {"A", "B", "C", "D"}]
    assert [m.name for m in many._split] == lower
    assert [m.name for m in cascade.higher_candidates(many, many._split)] == [
        m.name for m in many.matchers if m.name not in lower]
    ref = found(m for e in evs() for m in one.process(e))
    stepped = []
    process = Engine.process

    def spy(self, event, out=None):
        stepped.append(event)
        return process(self, event, out)

    batch = evs()
    with patch.object(Engine, "process", spy):
        got = found(many.process_batch(batch[:150]))
        many = restore_state(Engine(prog), save_state(many))
        got += found(many.process_batch(batch[150:]))
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
    """A chain with a window (its timers: per event) over a chain's output: that chain is no
    kernel pattern — its completions and the reader's rows would be stepped — and the
    program runs per event (split._chains_read_in_plan); beside a planned reader too. (ho_or's
    ``P0(s) OR C(s, _)`` was such a reader until its matches completing in P0's cascade were
    ranked per match.)"""
    reader = "(P0(s) -> C(s, _))[5 ms]"
    assert Engine(compile_(["A(s, _) -> B(s, _)", reader]))._split is None
    e = Engine(compile_(["A(s, _) -> B(s, _)", "P0(s) -> C(s, _)", reader]))
    assert e._split is None
    e = Engine(compile_(["A(s, _) -> B(s, _)", "B(s, _) -> A(s, _)", "P0(s) -> C(s, _)",
                         reader.replace("P0", "P1")]))
    assert [m.name for m in e._split] == ["P0"]
    assert [m.name for m in Engine(compile_(["A(s, _) -> B(s, _)", "P0(s) OR C(s, _)"]))._split
            ] == ["P0"]
