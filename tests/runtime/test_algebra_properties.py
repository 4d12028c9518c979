"""Property-based tests: the automata against the naive §4 semantics, and the algebraic laws.

* soundness (000 Prop. 3): every match the engine reports satisfies the pattern, under every
  context;
* completeness (000 Prop. 2): if the pattern is satisfied, a run of the automaton completes —
  checked under the unrestricted context, per first event of a match (holds-for excluded: a
  token that leaves its zone too early is trapped, §5.1);
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
from cepflow.events.event import Event
from cepflow.language import ast as A
from cepflow.runtime.engine import Engine
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
#: an iteration right before a NOT, in a sequence or ending a window: rare in ``patterns``,
#: where a forbidden event between two steps of the iteration must not end the partial match
iterated = st.one_of(
    st.builds(lambda p, n, q: A.Fol(A.Mult(p, "+"), A.Fol(A.Not(n), q)), patterns, atoms,
              patterns),
    st.builds(lambda p, n, w: A.Window(A.Fol(A.Mult(p, "+"), A.Not(n)), w), patterns, atoms,
              st.integers(1, 6)),
)

#: a NOT before an operand that may match nothing (``P -> NOT N -> Q{*} -> R``): the gap runs
#: to the first event of ``Q{*} -> R`` (a ``Q``, or ``R`` when ``Q`` matched nothing)
not_before_optional = st.builds(
    lambda p, n, q, r: A.Fol(p, A.Fol(A.Not(n), A.Fol(A.Mult(q, "*"), r))),
    patterns, atoms, patterns, patterns)


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
@given(st.one_of(patterns, trailing, iterated), streams(), st.sampled_from(
    ["chronicle", "immediate", "strict", "unrestricted"]))
def test_engine_is_sound(p: A.Pattern, events: list[Event], context: str) -> None:
    prog = compiled(p, context)
    found = run(prog, events, close=True)
    sem = matches(p, events, prog.schemas, horizon=float("inf"))
    for m in found:
        assert as_match(m) in sem, (m, sorted(sem))


@SETTINGS
@given(st.one_of(patterns, trailing, iterated), streams())
def test_automaton_is_complete(p: A.Pattern, events: list[Event]) -> None:
    """000 Prop. 2: a match exists ⇒ a run of the automaton reaches f. Contexts select among
    runs (chronicle may give an event to an older partial match that then never completes), so
    this is checked under the unrestricted context, where every run is followed. It starts a
    partial match at every event that can begin one, which follows every run from there: so a
    match begins at an event exactly when the automaton reports one beginning there."""
    complete(p, events)


@SETTINGS
@given(iterated, streams(max_size=9))
def test_iteration_before_not_is_complete(p: A.Pattern, events: list[Event]) -> None:
    """test_automaton_is_complete on iterations before a NOT only, over longer streams: a
    forbidden event between two steps of the iteration is what it must meet (with the
    restricted copies turned off this failed for 3 of 5 seeds at 250 examples, the mixed
    property for none of 3)."""
    complete(p, events)


@SETTINGS
@given(not_before_optional, streams(max_size=9), st.sampled_from(
    ["chronicle", "immediate", "strict", "unrestricted"]))
def test_not_before_an_optional_operand(p: A.Pattern, events: list[Event], context: str
                                        ) -> None:
    """The semantics keeps the gap open across an operand that matched nothing (it used to
    fail on the empty match); the engine is sound against it in every context and complete
    under unrestricted."""
    test_engine_is_sound.hypothesis.inner_test(p, events, context)
    if context == "unrestricted":
        complete(p, events)


def test_not_before_an_optional_operand_example() -> None:
    """``a -> NOT b -> c{*} -> a``: the gap ends at the first ``c``, or at the last ``a`` when
    no ``c`` is taken; the semantics and the engine (unrestricted: every run) agree."""
    a, b, c = (A.Atom(t, ("x",)) for t in "abc")
    p = A.Fol(a, A.Fol(A.Not(b), A.Fol(A.Mult(c, "*"), a)))
    prog = compiled(p, "unrestricted")
    for spec, expected in [("a@0 a@1", {(0, 1)}), ("a@0 b@1 a@2", set()),
                           ("a@0 c@1 b@2 a@3", {(0, 1, 3)}), ("a@0 b@1 c@2 a@3", set())]:
        events = _events(spec)
        sem = {s for s, _ in matches(p, events, prog.schemas, horizon=float("inf"))}
        found = {tuple(m.event_refs) for m in run(prog, events, close=True)}
        assert sem == found == expected, (spec, sem, found)


def complete(p: A.Pattern, events: list[Event]) -> None:
    """The completeness check itself (see test_automaton_is_complete)."""
    assume(not has_holds_for(p))
    prog = compiled(p, "unrestricted")
    found = run(prog, events, close=True)
    sem = matches(p, events, prog.schemas, horizon=float("inf"))
    assert {m.event_refs[0] for m in found} == {s[0] for s, _ in sem}, (found, sorted(sem))


B, N, C = A.Atom("b", ("x",)), A.Atom("a", ("x",)), A.Atom("c", ("x",))


def _events(spec: str) -> list[Event]:
    """``"b@0 a@0 b@1"``: events of key 1 (``a(2)@3``: another key), ids = positions."""
    out = []
    for i, tok in enumerate(spec.split()):
        head, ts = tok.split("@")
        t, _, key = head.partition("(")
        out.append(Event(t, (int(key.rstrip(")")) if key else 1,), float(ts), id=i))
    return out


#: iteration before a NOT (docs/semantics.md, "An iteration before a NOT"): a forbidden event
#: ends the gap, not the iteration — pattern, stream, the matches each context reports
ITERATION_BEFORE_NOT = [
    # the published example: the gap after the last b has no a
    (A.Window(A.Fol(A.Mult(B, "+"), A.Not(N)), 1), "b@0 a@0 b@1 a@2",
     {"chronicle": [[0, 2]], "unrestricted": [[0, 2]], "immediate": [], "strict": []}),
    # an a after the last b still ends the window's gap
    (A.Window(A.Fol(A.Mult(B, "+"), A.Not(N)), 3), "b@0 a@0 b@1 a@2",
     {"chronicle": [], "unrestricted": [], "immediate": [], "strict": []}),
    # b+ -> NOT a -> c: the iteration goes on after the a, c closes the gap from the last b
    # (under immediate and strict the a, which no partial match takes, is noise)
    (A.Fol(A.Mult(B, "+"), A.Fol(A.Not(N), C)), "b@0 a@1 b@2 c@3",
     {"chronicle": [[0, 2, 3]], "unrestricted": [[0, 2, 3], [2, 3]], "immediate": [[2, 3]],
      "strict": [[2, 3]]}),
    # ... but not across an a of the gap's own key after the last b
    (A.Fol(A.Mult(B, "+"), A.Fol(A.Not(N), C)), "b@0 b@1 a@2 c@3",
     {"chronicle": [], "unrestricted": [], "immediate": [], "strict": []}),
    # an a of another key is no part of the gap (and under immediate it is noise)
    (A.Fol(A.Mult(B, "+"), A.Fol(A.Not(N), C)), "b@0 a(2)@1 b@2 c@3",
     {"chronicle": [[0, 2, 3]], "unrestricted": [[0, 2, 3], [2, 3]], "immediate": [[2, 3]],
      "strict": [[2, 3]]}),
    # a repeated sequence: (b -> c)+ -> NOT a -> b, the gap from the last c
    (A.Fol(A.Mult(A.Fol(B, C), "+"), A.Fol(A.Not(N), B)), "b@0 c@1 a@2 b@3 c@4 b@5",
     {"chronicle": [[0, 1, 3, 4, 5]], "unrestricted": [[0, 1, 3, 4, 5], [3, 4, 5]],
      "immediate": [[3, 4, 5]], "strict": [[3, 4, 5]]}),
    # zero or more: c -> b* -> NOT a -> c; the a before the last b is not in the gap
    (A.Fol(C, A.Fol(A.Mult(B, "*"), A.Fol(A.Not(N), C))), "c@0 b@1 a@2 b@3 c@4",
     {"chronicle": [[0, 1, 3, 4]], "unrestricted": [[0, 1, 3, 4]], "immediate": [],
      "strict": []}),
    # nested windows: the inner window bounds the iteration, the outer one the gap
    (A.Window(A.Fol(A.Window(A.Mult(B, "+"), 2), A.Not(N)), 4), "b@0 a@1 b@2 a@5",
     {"chronicle": [[0, 2]], "unrestricted": [[0, 2]], "immediate": [], "strict": []}),
    # ... and the inner window expires a copy that could only go on too late (so b@3 starts
    # a partial match of its own instead of going to the copy)
    (A.Window(A.Fol(A.Window(A.Mult(B, "+"), 2), A.Not(N)), 4), "b@0 a@1 b@3",
     {"chronicle": [[2]], "unrestricted": [[2]], "immediate": [[2]], "strict": [[2]]}),
    # nested loops over one position: c stays in the inner window or leaves and re-enters
    # it (two edges from c to c); here only the second one lets the iteration go on
    (A.Window(A.Fol(A.Mult(A.Window(A.Mult(C, "+"), 1), "+"), A.Not(C)), 2), "c@3 c@5",
     {"chronicle": [[0, 1]], "unrestricted": [[0, 1], [1]], "immediate": [[0, 1]],
      "strict": [[0, 1]]}),
    # two NOTs after the same iteration: each ends only its own gap
    (A.Fol(A.Mult(B, "+"), A.Fol(A.Not(N), A.Fol(A.Not(A.Atom("d", ("x",))), C))),
     "b@0 a@1 d@2 b@3 c@4",
     {"chronicle": [[0, 3, 4]], "unrestricted": [[0, 3, 4], [3, 4]], "immediate": [[3, 4]],
      "strict": [[3, 4]]}),
]


@pytest.mark.parametrize("context", ["chronicle", "immediate", "strict", "unrestricted"])
@pytest.mark.parametrize(("p", "spec", "expected"), ITERATION_BEFORE_NOT)
def test_iteration_before_not(p: A.Pattern, spec: str, expected: dict[str, list],
                              context: str) -> None:
    """A forbidden event inside an iteration's gap moves the partial match to a copy of its
    state that may only go on iterating; it used to trap it (found by
    test_automaton_is_complete). Each case is checked against the semantics too."""
    events = _events(spec)
    prog = program(p, context=context, types=(*TYPES, "d"), arity=1)
    found = [m.event_refs for m in run(prog, events, close=True)]
    assert found == expected[context]
    sem = matches(p, events, prog.schemas, horizon=float("inf"))
    assert {tuple(f) for f in found} <= {s for s, _ in sem}
    assert bool(sem) == bool(expected["unrestricted"])


@SETTINGS
@given(st.one_of(iterated, patterns), streams(), st.sampled_from(
    ["chronicle", "immediate", "strict", "unrestricted"]))
def test_execution_paths_agree(p: A.Pattern, events: list[Event], context: str) -> None:
    """The general token path, the chronicle fast path and Engine.run (the batch path, which
    declines patterns with NOT: runtime.shapes.chain_of) report the same matches, also where a
    forbidden event moves a partial match to a restricted copy of its state."""
    prog = compiled(p, context)

    def key(ms: list) -> list:
        return [(m.ts, tuple(m.event_refs), m.params) for m in ms]

    general = key(run(prog, events, close=True, fast_path=False))
    assert key(run(prog, events, close=True)) == general
    eng = Engine(prog)
    assert key([*eng.run(events), *eng.finish(close_windows=True)]) == general


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


def test_distributivity_with_a_not_reading_an_outer_variable() -> None:
    """A NOT inside an operand of ``or`` reads a variable an earlier step outside binds (found by
    CI's random draw, session 40): the denotation checked its gap with the operand's own
    bindings, so ``x`` was a wildcard there and the ``a(1)`` in the gap forbade the match after
    ``a(2)``."""
    p = q = A.Atom("a", ("x",))
    r = A.Fol(A.Atom("a", ("y",)), A.Fol(A.Not(A.Atom("a", ("x",))), A.Fol(
        A.Atom("a", ("y",)), A.Atom("a", ("x",)))))
    events = [Event("a", (v,), 0) for v in (2, 1, 1, 1, 2)]
    assert semantics(A.Fol(p, A.Or(q, r)), events) == semantics(
        A.Or(A.Fol(p, q), A.Fol(p, r)), events)


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
