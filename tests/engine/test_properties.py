"""Property-based tests: the automata against the naive §4 semantics, and the algebraic laws.

* soundness (000 Prop. 3): every match the engine reports satisfies the pattern, under every
  context;
* completeness (000 Prop. 2): if the pattern is satisfied, a run of the automaton completes —
  checked under the unrestricted context (holds-for excluded: a token that leaves its zone too
  early is trapped, §5.1);
* Appendix 1: associativity of fol and or, commutativity of or/and, distributivity of fol/and
  over or give the same matches on both sides — in the semantics and in the engine. (and is not
  associative under §4.3.1's own definition; see the test that shows why.)
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cepflow.compiler.automata import CompileError
from cepflow.denotation import matches
from cepflow.events.model import Event
from cepflow.language import ast as A
from support import program, run

TYPES = ("a", "b", "c")
#: CEPFLOW_EXAMPLES=5000 for a thorough run; the suite's default keeps CI fast
SETTINGS = settings(max_examples=int(os.environ.get("CEPFLOW_EXAMPLES", "250")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

atoms = st.builds(lambda t, v: A.Atom(t, (v,)), st.sampled_from(TYPES),
                  st.sampled_from(["x", "y", "_"]))


def extend(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.builds(A.Fol, children, children),
        st.builds(A.Or, children, children),
        st.builds(A.And, children, children),
        st.builds(A.Mult, children, st.sampled_from([2, "+"])),
        st.builds(lambda p, q: A.Fol(p, A.Fol(A.Mult(q, "*"), p)), children, atoms),
        st.builds(lambda p, n, q: A.Fol(p, A.Fol(A.Not(n), q)), children, atoms, children),
        st.builds(A.Window, children, st.integers(1, 6), st.sampled_from(["within"] * 3
                                                                            + ["holds_for"])),
    )


patterns = st.recursive(atoms, extend, max_leaves=5)
trailing = st.builds(lambda p, n, w: A.Window(A.Fol(p, A.Not(n)), w), patterns, atoms,
                     st.integers(1, 6))


@st.composite
def streams(draw: st.DrawFn, max_size: int = 7) -> list[Event]:
    n = draw(st.integers(1, max_size))
    ts = 0
    out = []
    for i in range(n):
        ts += draw(st.integers(0, 3))
        out.append(Event(draw(st.sampled_from(TYPES)), (draw(st.sampled_from([1, 2])),), ts,
                         id=i))
    return out


def compiled(p: A.Pattern, context: str = "chronicle"):
    try:
        return program(p, context=context, types=TYPES, arity=1)
    except CompileError:
        assume(False)


def _iterates(p: A.Pattern) -> bool:
    if isinstance(p, A.Mult):
        return p.count in ("+", "*") or _iterates(p.pattern)
    if isinstance(p, A.Fol | A.Or | A.And):
        return _iterates(p.left) or _iterates(p.right)
    if isinstance(p, A.Window | A.Not):
        return _iterates(p.pattern)
    return False


def iteration_before_not(p: A.Pattern) -> bool:
    """A sequence ``P -> NOT Q …`` where ``P`` iterates: the known gap between the automaton and
    the semantics (docs/semantics.md, "Known gap"; test_iteration_before_not_known_gap)."""
    if isinstance(p, A.Fol):
        right = p.right.left if isinstance(p.right, A.Fol) else p.right
        if isinstance(right, A.Not) and _iterates(p.left):
            return True
        return iteration_before_not(p.left) or iteration_before_not(p.right)
    if isinstance(p, A.Or | A.And):
        return iteration_before_not(p.left) or iteration_before_not(p.right)
    if isinstance(p, A.Window | A.Mult | A.Not):
        return iteration_before_not(p.pattern)
    return False


def has_holds_for(p: A.Pattern) -> bool:
    if isinstance(p, A.Window):
        return p.kind == "holds_for" or has_holds_for(p.pattern)
    if isinstance(p, A.Fol | A.Or | A.And):
        return has_holds_for(p.left) or has_holds_for(p.right)
    if isinstance(p, A.Mult | A.Not):
        return has_holds_for(p.pattern)
    return False


def as_match(m) -> tuple:
    return tuple(m.event_refs), frozenset(m.bindings.items())


def semantics(p: A.Pattern, events: list[Event], horizon: float | None = None) -> set:
    prog = compiled(p)
    return matches(p, events, prog.schemas, horizon=horizon)


@SETTINGS
@given(st.one_of(patterns, trailing), streams(), st.sampled_from(
    ["chronicle", "immediate", "strict", "unrestricted"]))
def test_engine_is_sound(p: A.Pattern, events: list[Event], context: str) -> None:
    prog = compiled(p, context)
    found = run(prog, events, close=True)
    sem = matches(p, events, prog.schemas, horizon=float("inf"))
    for m in found:
        assert as_match(m) in sem, (m, sorted(sem))


@SETTINGS
@given(st.one_of(patterns, trailing), streams())
def test_automaton_is_complete(p: A.Pattern, events: list[Event]) -> None:
    """000 Prop. 2: a match exists ⇒ a run of the automaton reaches f. Contexts select among
    runs (chronicle may give an event to an older partial match that then never completes), so
    this is checked under the unrestricted context, where every run is followed."""
    assume(not has_holds_for(p))
    assume(not iteration_before_not(p))  # known gap: test_iteration_before_not_known_gap
    prog = compiled(p, "unrestricted")
    found = run(prog, events, close=True)
    sem = matches(p, events, prog.schemas, horizon=float("inf"))
    assert bool(found) == bool(sem), (found, sorted(sem))


@pytest.mark.xfail(strict=True, reason="known gap (docs/semantics.md): an event forbidden after "
                   "an iteration traps the partial match, although the iteration may go on")
def test_iteration_before_not_known_gap() -> None:
    """``(b(x)+ -> NOT a(x))[1]`` over b@0 a@0 b@1 a@2: the semantics matches b@0 b@1 (the gap
    after the last b has no a), the engine traps the partial match at a@0. Found by
    test_automaton_is_complete; strict, so a fix shows up here."""
    b, a = A.Atom("b", ("x",)), A.Atom("a", ("x",))
    p = A.Window(A.Fol(A.Mult(b, "+"), A.Not(a)), 1)
    events = [Event(t, (1,), ts, id=i) for i, (t, ts) in enumerate(
        [("b", 0), ("a", 0), ("b", 1), ("a", 2)])]
    prog = compiled(p, "unrestricted")
    sem = matches(p, events, prog.schemas, horizon=float("inf"))
    assert sem and bool(run(prog, events, close=True)) == bool(sem)


def same_everywhere(lhs: A.Pattern, rhs: A.Pattern, events: list[Event]) -> None:
    assert semantics(lhs, events) == semantics(rhs, events)
    left = [as_match(m) for m in run(compiled(lhs), events)]
    right = [as_match(m) for m in run(compiled(rhs), events)]
    assert left == right


@SETTINGS
@given(patterns, patterns, patterns, streams())
def test_associativity(p: A.Pattern, q: A.Pattern, r: A.Pattern, events: list[Event]) -> None:
    same_everywhere(A.Fol(A.Fol(p, q), r), A.Fol(p, A.Fol(q, r)), events)
    same_everywhere(A.Or(A.Or(p, q), r), A.Or(p, A.Or(q, r)), events)


def test_and_sugar_is_not_associative_for_three_operands() -> None:
    """and(c1, c2) ≡ or(fol(c1, c2), fol(c2, c1)) (§4.3.1) with fol read as the automata run it
    ('all of c1 before all of c2'): and(and(a, b), c) accepts the orders where c is first or
    last, and(a, and(b, c)) those where a is. Appendix 1, Prop. 4 does not hold for and; the
    decision is recorded in docs/semantics.md. Nested ands are therefore never re-associated."""
    a, b, c = A.Atom("a", ("x",)), A.Atom("b", ("x",)), A.Atom("c", ("x",))
    events = [Event("a", (1,), 0, id=0), Event("c", (1,), 1, id=1), Event("b", (1,), 2, id=2)]
    assert semantics(A.And(A.And(a, b), c), events) == set()
    assert semantics(A.And(a, A.And(b, c)), events) != set()
    assert run(compiled(A.And(A.And(a, b), c)), events) == []
    assert run(compiled(A.And(a, A.And(b, c))), events) != []


@SETTINGS
@given(patterns, patterns, streams())
def test_commutativity_of_or_and_and(p: A.Pattern, q: A.Pattern, events: list[Event]) -> None:
    assert semantics(A.Or(p, q), events) == semantics(A.Or(q, p), events)
    assert semantics(A.And(p, q), events) == semantics(A.And(q, p), events)
    found = {as_match(m)[0] for m in run(compiled(A.Or(p, q)), events)}
    other = {as_match(m)[0] for m in run(compiled(A.Or(q, p)), events)}
    assert found == other


@SETTINGS
@given(patterns, patterns, patterns, streams())
def test_distributivity_over_or(p: A.Pattern, q: A.Pattern, r: A.Pattern,
                                events: list[Event]) -> None:
    assert semantics(A.Fol(p, A.Or(q, r)), events) == semantics(
        A.Or(A.Fol(p, q), A.Fol(p, r)), events)
    assert semantics(A.Fol(A.Or(p, q), r), events) == semantics(
        A.Or(A.Fol(p, r), A.Fol(q, r)), events)
    assert semantics(A.And(p, A.Or(q, r)), events) == semantics(
        A.Or(A.And(p, q), A.And(p, r)), events)
    lhs = run(compiled(A.Fol(p, A.Or(q, r))), events)
    rhs = run(compiled(A.Or(A.Fol(p, q), A.Fol(p, r))), events)
    assert bool(lhs) == bool(rhs)


@SETTINGS
@given(patterns, streams())
def test_chronicle_uses_an_event_in_at_most_one_match(p: A.Pattern, events: list[Event]) -> None:
    found = run(compiled(p), events, close=True)
    used = [r for m in found for r in m.event_refs]
    assert len(used) == len(set(used))
