"""Event processing contexts, 000 §4.4 (Fig. 5 and the definitions of Def. 11), and the rule
that a partial match is the sequence of events it took (docs/semantics.md): against examples
derived by hand, against the naive reference (cepflow.denotation.context_matches), and the
properties that follow (renaming a wildcard, NOT monotonicity)."""

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from test_algebra_properties import (
    SETTINGS,
    compiled,
    has_holds_for,
    iterated,
    not_before_optional,
    trailing,
)
from test_algebra_properties import patterns as random_patterns
from test_algebra_properties import streams as random_streams

from cepflow.compiler.automata import CompileError
from cepflow.denotation import context_matches
from cepflow.events.event import Event
from cepflow.language import ast as A
from support import a, b, c, d, program, refs, run, seq, stream

FIG5 = "a1 a1 a1 a2 a3 a2"


def fig5(context: str) -> list[list[str]]:
    prog = program(A.Fol(A.Atom("a1"), A.Atom("a2")), context=context, types=("a1", "a2", "a3"))
    return refs(run(prog, stream(FIG5)))


def test_fig5_chronicle_pairs_oldest_partial_matches() -> None:
    # "a1(1)-a2(1) and a1(2)-a2(2), while a partial event pattern instance is still unmatched"
    assert fig5("chronicle") == [["a11", "a21"], ["a12", "a22"]]


def test_fig5_immediate_disposes_partial_matches_on_noise() -> None:
    # a3 is noise: the two partial matches a1(2), a1(3) are disposed; a2(2) then finds none.
    assert fig5("immediate") == [["a11", "a21"]]


def test_fig5_strict_immediate_tracks_one_partial_match() -> None:
    # a1(2) cannot contribute (one partial match at a time) and is noise: a1(1) is disposed.
    assert fig5("strict") == [["a13", "a21"]]


def test_chronicle_uses_every_event_in_exactly_one_match() -> None:
    prog = program(seq(A.Atom("a"), A.Atom("b")), types=("a", "b"))
    out = run(prog, stream("a a b b b a b"))
    assert refs(out) == [["a1", "b1"], ["a2", "b2"], ["a3", "b4"]]
    used = [r for m in refs(out) for r in m]
    assert len(used) == len(set(used))


def test_immediate_unrelated_event_type_is_noise() -> None:
    prog = program(seq(A.Atom("a"), A.Atom("b")), context="immediate")
    assert refs(run(prog, stream("a c b"))) == []
    assert refs(run(prog, stream("a b c a b"))) == [["a1", "b1"], ["a2", "b2"]]


def test_strict_new_match_starts_only_after_the_previous_one_ends() -> None:
    prog = program(seq(A.Atom("a"), A.Atom("b"), A.Atom("c")), context="strict")
    # the second a is noise (one partial match at a time): the first one is disposed
    assert refs(run(prog, stream("a b a b c"))) == []
    assert refs(run(prog, stream("a b c a b c"))) == [["a1", "b1", "c1"], ["a2", "b2", "c2"]]


def test_partitioned_immediate_judges_noise_per_key() -> None:
    body = seq(A.Atom("a", ("k",)), A.Atom("b", ("k",)))
    shared = program(body, params=("k",), context="immediate", arity=1)
    parted = program(body, params=("k",), context="immediate", arity=1, partition_by=("k",))
    events = stream("a(1) a(2) b(1) b(2)")
    # on the whole stream b(1) contributes, b(2) finds its partial match still there
    assert refs(run(shared, events)) == [["a1", "b1"], ["a2", "b2"]]
    noisy = stream("a(1) c(2) b(1)", arity=1)
    assert refs(run(shared, noisy)) == []  # c(2) is noise for the whole stream
    # c(2) belongs to no partition of the pattern (it does not bind k): nothing is disposed
    assert refs(run(parted, noisy)) == [["a1", "b1"]]
    # strict: one partial match per key; the second a(2) is noise for key 2 only
    strict = program(body, params=("k",), context="strict", arity=1, partition_by=("k",))
    assert refs(run(strict, stream("a(1) a(2) a(2) b(1) b(2)"))) == [["a1", "b1"]]
    whole = program(body, params=("k",), context="strict", arity=1)
    assert refs(run(whole, stream("a(1) a(2) b(1) b(2)"))) == []


def test_context_declared_per_pattern_overrides_module_default() -> None:
    decls = (
        A.AtomicEventDecl("a1"), A.AtomicEventDecl("a2"), A.AtomicEventDecl("a3"),
        A.ComplexEventDecl("X", (), A.Fol(A.Atom("a1"), A.Atom("a2")), "strict"),
        A.ComplexEventDecl("Y", (), A.Fol(A.Atom("a1"), A.Atom("a2"))),
    )
    from cepflow.compiler.program import compile_module
    from cepflow.runtime.engine import run_patterns

    prog = compile_module(A.Module(decls, context="immediate"))
    out = run_patterns(prog, stream(FIG5))
    assert [(m.type, m.event_refs) for m in out] == [
        ("X", ["a13", "a21"]), ("Y", ["a11", "a21"])]


# -- a partial match is the events it took (docs/semantics.md) -----------------------------
# Hand-derived from 000 §4.4: a partial match is the sequence of events it has taken (Def. 8);
# an event contributes to it (P_c(e)) iff the longer sequence is still a prefix of a match.

CONTEXTS = ("chronicle", "immediate", "strict", "unrestricted")


def _x(t: str, *args: str) -> A.Atom:
    return A.Atom(t, args)


def _ids(prog, events) -> list[list]:
    return refs(run(prog, events, close=True))


# A(x) -> B(x) -> C(x) and the same with NOT D(x) after B, over a1 b1 b2 c1 (all x = 1): b2
# contributes to no partial match — (a1, b1) waits for a C — so under immediate and strict it is
# noise with or without the NOT; the NOT only adds a condition (§4.3.1)
NOT_GAP = {"chronicle": [["a1", "b1", "c1"]], "immediate": [], "strict": [],
           "unrestricted": [["a1", "b1", "c1"]]}


@pytest.mark.parametrize("context", CONTEXTS)
def test_a_not_gap_creates_no_match_under_immediate_and_strict(context: str) -> None:
    events = stream("a(1) b(1) b(1) c(1)")
    plain = seq(_x("a", "x"), _x("b", "x"), _x("c", "x"))
    gap = seq(_x("a", "x"), _x("b", "x"), A.Not(_x("d", "x")), _x("c", "x"))
    for body in (plain, gap):
        assert _ids(program(body, context=context, arity=1), events) == NOT_GAP[context]


# A(x) -> B(x, y) -> C(_, y) over a1, b1(1, 1), b2(1, 2), c1(y = 2): b1 binds y = 1, so b2 is noise
# under immediate/strict and c1 does not fit; unrestricted follows the run that skips b1
NEW_BINDING = {"chronicle": [], "immediate": [], "strict": [], "unrestricted": [["a1", "b2", "c1"]]}
# ... and with _ in place of y: b1 is taken, c1 fits under chronicle; b2 is still noise
WILDCARD = {"chronicle": [["a1", "b1", "c1"]], "immediate": [], "strict": [],
            "unrestricted": [["a1", "b1", "c1"]]}


@pytest.mark.parametrize("context", CONTEXTS)
def test_binding_a_variable_does_not_keep_the_old_position(context: str) -> None:
    events = stream("a(1,0) b(1,1) b(1,2) c(0,2)")
    y = seq(_x("a", "x", "_"), _x("b", "x", "y"), _x("c", "_", "y"))
    wild = seq(_x("a", "x", "_"), _x("b", "x", "_"), _x("c", "_", "_"))
    # a variable nothing else uses is a wildcard: z changes nothing
    fresh = seq(_x("a", "x", "_"), _x("b", "x", "z"), _x("c", "_", "_"))
    assert _ids(program(y, context=context, arity=2), events) == NEW_BINDING[context]
    assert _ids(program(wild, context=context, arity=2), events) == WILDCARD[context]
    assert _ids(program(fresh, context=context, arity=2), events) == WILDCARD[context]


def test_or_branch_not_taken_ends_under_chronicle() -> None:
    """A -> ((B -> E) OR C) -> D over a b c d: b commits the partial match to the left branch
    (it took b), so c cannot go on the right one; distributing the fol over the or agrees."""
    left = seq(a, A.Or(seq(b, A.Atom("e")), c), d)
    spread = A.Or(seq(a, b, A.Atom("e"), d), seq(a, c, d))
    types = ("a", "b", "c", "d", "e")
    for body in (left, spread):
        assert refs(run(program(body, types=types), stream("a b c d"))) == []
        assert refs(run(program(body, types=types, context="unrestricted"),
                        stream("a b c d"))) == [["a1", "c1", "d1"]]


@settings(max_examples=int(SETTINGS.max_examples) * 2, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.one_of(random_patterns, trailing, iterated, not_before_optional),
       random_streams(max_size=8), st.sampled_from(["chronicle", "immediate", "strict"]))
# b0 leaves b{+}'s 1 ms window before b1's NOT observation moved its thread to the restricted
# copy (which may only go on with b{+}): dead there, it took b2 from [b1, b2] under chronicle
@example(A.Window(A.Fol(A.Window(A.Mult(A.Atom("b", ("x",)), "+"), 1, "within"),
                        A.Not(A.Atom("b", ("x",)))), 2, "within"),
         [Event("b", (2,), 0, None, 0), Event("b", (2,), 2, None, 1),
          Event("b", (2,), 2, None, 2)], "chronicle")
# a NOT inside an or's operand reads x, which the step before the or binds: c(2) does not forbid
# a(1)'s match (the reference read x as a wildcard there until session 41)
@example(A.Fol(A.Atom("a", ("x",)), A.Or(A.Atom("a", ("x",)), A.Fol(A.Atom("b", ("y",)), A.Fol(
    A.Not(A.Atom("c", ("x",))), A.Atom("b", ("y",)))))),
    [Event(t, (v,), i, None, i) for i, (t, v) in enumerate(
        [("a", 1), ("b", 5), ("c", 2), ("b", 5)])], "chronicle")
def test_contexts_equal_the_reference(p: A.Pattern, events: list[Event], context: str) -> None:
    """The engine reports exactly what the naive §4.4 reference does (cepflow.denotation.
    context_matches: viable partial matches, oldest first, noise disposes): same matches, same
    order, same bindings. Holds-for windows are left out (the reference does not model their
    trap on leaving a window too early)."""
    assume(not has_holds_for(p))
    prog = compiled(p, context)
    unused = prog.automata[0].unused  # (their values are whichever run was reported)

    def shown(b) -> frozenset:
        return frozenset(kv for kv in b if kv[0] not in unused)

    found = [(m.ts, tuple(m.event_refs), shown(m.bindings.items()))
             for m in run(prog, events, close=True)]
    assert found == [(ts, s, shown(b)) for ts, s, b in context_matches(
        p, events, prog.schemas, context, close=True)]


def _rename_one_wildcard(p: A.Pattern, k: int) -> tuple[A.Pattern, int]:
    """``p`` with its k-th ``_`` (in walk order) renamed to the fresh variable ``z``."""
    if isinstance(p, A.Atom):
        args = list(p.args or ())
        for i, v in enumerate(args):
            if v == "_":
                if k == 0:
                    args[i] = "z"
                    return A.Atom(p.name, tuple(args)), -1
                k -= 1
        return p, k
    if isinstance(p, A.Fol | A.Or | A.And):
        left, k = _rename_one_wildcard(p.left, k)
        if k < 0:
            return type(p)(left, p.right), k
        right, k = _rename_one_wildcard(p.right, k)
        return type(p)(p.left, right), k
    if isinstance(p, A.Mult | A.Not):  # a repetition unifies z with itself: no renaming
        return p, k
    if isinstance(p, A.Window):
        inner, k = _rename_one_wildcard(p.pattern, k)
        # (every other field as it is: positional arguments would shift past loc)
        return (p if k >= 0 else replace(p, pattern=inner)), k
    return p, k


@SETTINGS
@given(st.one_of(random_patterns, trailing, iterated), random_streams(),
       st.sampled_from(CONTEXTS), st.integers(0, 4))
def test_renaming_a_wildcard_changes_nothing(p: A.Pattern, events: list[Event], context: str,
                                             k: int) -> None:
    """A variable that nothing else uses binds nothing that matters: writing ``z`` for a ``_``
    gives the same matches (events, times, the other bindings) in every context."""
    q, left = _rename_one_wildcard(p, k)
    assume(left < 0)  # there was a k-th wildcard outside repetitions and NOTs
    try:
        plain, named = program(p, context=context, types=TYPES3, arity=1), program(
            q, context=context, types=TYPES3, arity=1)
    except CompileError:
        assume(False)

    def key(prog) -> list:
        return [(m.ts, tuple(m.event_refs), frozenset(
            (n, v) for n, v in m.bindings.items() if n != "z"))
            for m in run(prog, events, close=True)]

    assert key(named) == key(plain)


TYPES3 = ("a", "b", "c")
TYPES4 = ("a", "b", "c", "d")


@st.composite
def streams4(draw: st.DrawFn, max_size: int = 8) -> list[Event]:
    n = draw(st.integers(1, max_size))
    ts, out = 0, []
    for i in range(n):
        ts += draw(st.integers(0, 3))
        out.append(Event(draw(st.sampled_from(TYPES4)), (draw(st.sampled_from([1, 2])),), ts,
                         id=i))
    return out


def _both(plain: A.Pattern, negated: A.Pattern, context: str):
    try:
        return (program(plain, context=context, types=TYPES4, arity=1),
                program(negated, context=context, types=TYPES4, arity=1))
    except CompileError:
        assume(False)


@SETTINGS
@given(random_patterns, random_patterns, st.sampled_from(["x", "_"]), streams4(),
       st.sampled_from(["immediate", "strict"]))
def test_a_not_of_a_type_the_pattern_never_takes_changes_nothing_under_immediate(
        p: A.Pattern, q: A.Pattern, v: str, events: list[Event], context: str) -> None:
    """Monotonicity under immediate and strict: a d that the pattern never takes is noise, so
    it already disposes every partial match; ``P -> NOT d -> Q`` reports exactly what
    ``P -> Q`` does (it used to report more: a partial match also kept its position before the
    gap, which then took the next event)."""
    plain, negated = _both(A.Fol(p, q), A.Fol(p, A.Fol(A.Not(A.Atom("d", (v,))), q)), context)
    assert _ids(negated, events) == _ids(plain, events)


@SETTINGS
@given(random_patterns, random_patterns, st.sampled_from(TYPES4), st.sampled_from(["x", "_"]),
       streams4())
def test_a_not_never_adds_a_match_under_unrestricted(
        p: A.Pattern, q: A.Pattern, t: str, v: str, events: list[Event]) -> None:
    """Monotonicity where every run is followed: each event that begins a match of
    ``P -> NOT t -> Q`` begins one of ``P -> Q`` (the NOT only removes runs)."""
    assume(not has_holds_for(p) and not has_holds_for(q))
    plain, negated = _both(A.Fol(p, q), A.Fol(p, A.Fol(A.Not(A.Atom(t, (v,))), q)),
                           "unrestricted")
    assert {m[0] for m in _ids(negated, events)} <= {m[0] for m in _ids(plain, events)}


def test_chronicle_is_not_monotone_in_a_not() -> None:
    """Chronicle is a selection policy: a NOT that ends the oldest partial match hands later
    events to younger ones, which may then complete where the plain pattern completes nothing
    (docs/semantics.md). a(x) -> b(x) -> [NOT d(x)] -> c(_) -> a(x) over a(1) b(1) a(2) b(2)
    d(1) c a(2): without the NOT, c goes to the older (a(1), b(1)) and the last a(2) fits
    neither; with it, d(1) ends that one and c goes to (a(2), b(2))."""
    events = stream("a(1) b(1) a(2) b(2) d(1) c(0) a(2)")
    head = (_x("a", "x"), _x("b", "x"))
    plain = program(seq(*head, _x("c", "_"), _x("a", "x")), arity=1)
    negated = program(seq(*head, A.Not(_x("d", "x")), _x("c", "_"), _x("a", "x")), arity=1)
    assert _ids(plain, events) == []
    assert _ids(negated, events) == [["a2", "b2", "c1", "a3"]]


@pytest.mark.parametrize("context", ["chronicle", "immediate", "strict"])
@pytest.mark.parametrize("body", [
    # (a+)[1] -> b over a@0 a@2 b@3: a2 would keep the iteration's window open past 1 ms
    A.Fol(A.Window(A.Mult(A.Atom("a", ("x",)), "+"), 1), A.Atom("b", ("x",))),
    # found by test_contexts_equal_the_reference: a2 is not the iteration's, so the NOT's
    A.Window(A.Fol(A.Window(A.Mult(A.Atom("a", ("x",)), "+"), 1), A.Not(A.Atom("a", ("x",)))),
             2),
])
def test_an_event_past_an_inner_window_does_not_trap_a_run_that_may_leave_it(
        body: A.Pattern, context: str) -> None:
    """A partial match in the last state of a window's zone (its timer kept it: it can leave
    the zone as it is) is not trapped by an event that could only keep it inside past the
    window: that run is excluded by the window, the others remain (000 §4.3.1), as the
    reference says."""
    events = [Event("a", (1,), 0, id="a1"), Event("a", (1,), 2, id="a2"),
              Event("b", (1,), 3, id="b1")]
    prog = compiled(body, context)
    found = [(m.ts, tuple(m.event_refs)) for m in run(prog, events, close=True)]
    ref = [(ts, tuple(events[i].id for i in s)) for ts, s, _ in context_matches(
        body, events, prog.schemas, context, close=True)]
    assert found == ref
    assert found or context != "chronicle"  # (under chronicle each has a match)
