"""Esper's ``every (group) -> more`` (start policy *group*, docs/esper.md "every (group) ->
more"): ``every (a=A -> b=B) -> c=C``, ``every [2] a=A -> b=B``, ``every (a=A and b=B) ->
c=C`` — one instance of the group at a time, each completion going on as an instance of the
rest while the group restarts (Esper's EvalEveryStateNode / EvalFollowedByStateNode).

Hand-derived streams are pinned in both syntaxes (matches, their order, token and match
ids); what stays unsupported is reported where it is written. The pattern runs per event on
every route (no kernel, split or cascade takes it): over random group statements and streams,
``Engine.run`` in batches with a save/restore, the program split beside other statements
(also over Arrow batches) and over a kernel pattern's output, ``advance_to`` after a batch and
``advance_to`` with a save/restore in the middle of the stream all equal the uninterrupted
run event by event (complex events, ids, statistics, open instances, saved state)."""

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_alternatives import C_SCHEMA, check_run, stream
from tests.esper.test_esper_kernel import FILTERS, SCHEMA, events, rows, state
from tests.esper.test_esper_operators import DOC, cep, combos, epl
from tests.esper.test_esper_operators import events as events_of
from tests.esper.test_esper_operators import test_unsupported_operator_forms_are_located as located
from tests.esper.test_split import (
    check_split,
    check_split_columns,
    check_time_passing,
    keyed_others,
    program,
    restored,
)
from tests.support import load_script

from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels.cascade import higher_candidates

#: benchmarks/pattern_shapes.py, whose route_of names the route Engine.run takes
PS = load_script(Path(__file__).resolve().parents[2] / "benchmarks" / "pattern_shapes.py",
                 "pattern_shapes")

#: (EPL, cepflow syntax, events one a second, the matches worked out by hand: docs/esper.md)
PINNED = [
    ("every (A -> B) -> C", "every (A -> B) -> C", "A1 B1 A2 C1 B2 C2 A3 B3 C3",
     ["A1 B1 C1", "A2 B2 C2", "A3 B3 C3"]),
    # (one group: A2 comes while it waits for B; every A -> B -> C reports A2 B1 C1 too)
    ("every (A -> B) -> C", "every (A -> B) -> C", "A1 A2 B1 C1", ["A1 B1 C1"]),
    ("every A -> B -> C", "every A -> B -> C", "A1 A2 B1 C1", ["A1 B1 C1", "A2 B1 C1"]),
    # (two instances of the rest, oldest first)
    ("every (A -> B) -> C", "every (A -> B) -> C", "A1 B1 A2 B2 C1", ["A1 B1 C1", "A2 B2 C1"]),
    # (A2 ends the first group and begins nothing: the next group is A3's)
    ("every (A -> A) -> C", "every (A -> A) -> C", "A1 A2 A3 A4 A5 C1",
     ["A1 A2 C1", "A3 A4 C1"]),
    # (A2 ends the first rest and begins the next group)
    ("every (A -> B) -> A", "every (A -> B) -> A", "A1 B1 A2 B2 A3", ["A1 B1 A2", "A2 B2 A3"]),
    ("every [2] A -> B", "every A{2} -> B", DOC, ["A1 A2 B3", "A3 A4 B4"]),
    ("every [1] A -> B", "every A{1} -> B", "A1 A2 B1", ["A1 B1", "A2 B1"]),
    ("every (A and B) -> C", "every (A AND B) -> C", "B1 A1 C1 A2 A3 B2 C2",
     ["B1 A1 C1", "A2 B2 C2"]),
    # (one event is both operands of the and: the group completes at its first event)
    ("every (a=A and b=A) -> c=C", "every (a = A AND b = A) -> c = C", "A1 A2 C1",
     ["A1 C1", "A2 C1"]),
    ("every ((a=A -> b=B) or c=C) -> d=D", "every ((a = A -> b = B) OR c = C) -> d = D",
     "A1 C1 D1 A2 B1 D2", ["C1 D1", "A2 B1 D2"]),
    # (C1 ends the first group — its A1 -> B branch goes with it — and A2 begins the next)
    ("every ((a=A -> b=B) or c=C) -> d=D", "every ((a = A -> b = B) OR c = C) -> d = D",
     "A1 C1 A2 B1 D1", ["C1 D1", "A2 B1 D1"]),
    # (the group's run that waits for C after B1 ends with it: A2 begins the next group)
    ("every (a=A -> (b=B or c=C)) -> d=D", "every (a = A -> (b = B OR c = C)) -> d = D",
     "A1 B1 A2 C1 D1", ["A1 B1 D1", "A2 C1 D1"]),
    ("every (A -> B) -> (C or E) -> F", "every (A -> B) -> (C OR E) -> F", "A1 B1 C1 F1",
     ["A1 B1 C1 F1"]),
    # (an or in the rest: the instance keeps waiting for C while it goes on with E)
    ("every (A -> B) -> (C or (E -> F))", "every (A -> B) -> (C OR (E -> F))",
     "A1 B1 E1 F1 A2 B2 E2 C1", ["A1 B1 E1 F1", "A2 B2 C1"]),
    # (a group completed by its first event, whose key was seen)
    ("every-distinct(a.n) (a=A and b=A) -> c=C", "every-distinct(a.n) (a = A AND b = A) -> c = C",
     "A1 A1 A2 C1", ["A1 C1", "A2 C1"]),
    ("every (a=A -> (b=B and not C)) -> d=D", "every (a = A -> (b = B AND NOT C)) -> d = D",
     "A1 C1 B1 A2 B2 D1", ["A2 B2 D1"]),
    ("every ([2] A until B) -> C", "every (A{2} UNTIL B) -> C", "A1 B1 A2 A3 C1", ["A2 A3 C1"]),
    ("every ([1:2] a=A until b=B) -> c=C", "every (a = A{1..2} UNTIL b = B) -> c = C",
     "A1 A2 B1 C1 A3 B2 A4 C2", ["A1 A2 B1 C1", "A3 B2 C2"]),
    # (the second group's key 1 was seen: it begins no rest; the group restarts all the same)
    ("every-distinct(a.n) (a=A -> b=B) -> c=C", "every-distinct(a.n) (a = A -> b = B) -> c = C",
     "A1 B1 A1 B2 A2 B3 C1", ["A1 B1 C1", "A2 B3 C1"]),
    ("every (A -> B) -> every C", "every (A -> B) -> every C", "A1 B1 C1 C2",
     ["A1 B1 C1", "A1 B1 C2"]),
    ("every (A -> B) -> (C and not D)", "every (A -> B) -> (C AND NOT D)",
     "A1 B1 D1 C1 A2 B2 C2", ["A2 B2 C2"]),
]


@pytest.mark.parametrize(("e", "c", "seq", "expected"), PINNED)
def test_group_then_more_pinned_in_both_syntaxes(e, c, seq, expected) -> None:
    assert combos(epl(e), seq) == expected
    assert combos(cep(c), seq) == expected


#: guards where the syntaxes differ (session 41): Esper's guard runs from the instant its node
#: starts — the statement's start, the group's restart — (EvalGuardStateNode, TimerWithinGuard,
#: EvalEveryStateNode), a window of the cepflow syntax from its instance's first event; events
#: one a second from 1 s, the statement's start (EPL, cepflow syntax, events, EPL's matches,
#: the cepflow syntax's), worked out by hand and checked against tests/esper/esper_tree.py
GUARDED = [
    # (the guard restarts at 1 s, 3 s, 5 s: A1 and B1 fall in two windows; the one from 5 s
    # takes A2 — the timer comes before the events of its instant — and B2)
    ("every (A -> B) where timer:within(2 sec) -> C", "every ((A -> B)[2 s]) -> C",
     "D1 A1 B1 D2 A2 B2 C1", ["A2 B2 C1"], ["A1 B1 C1", "A2 B2 C1"]),
    ("every (A -> B) where timer:within(2 sec) -> C", "every ((A -> B)[2 s]) -> C",
     "D1 A1 B1 C1", [], ["A1 B1 C1"]),
    # (the window from 3 s to 5 s takes A2 at 3 s — its restart's instant, after the timer —, B1)
    ("every (A -> B) where timer:within(2 sec) -> C", "every ((A -> B)[2 s]) -> C",
     "A1 D1 A2 B1 C1", ["A2 B1 C1"], ["A2 B1 C1"]),
    # (the guard around it all ends everything at 4 s: B2 comes at its end, too late; cepflow's
    # window: A2's instance is 2 s old at C1)
    ("(every (A -> B) -> C) where timer:within(3 sec)", "(every (A -> B) -> C)[3 s]",
     "A1 B1 A2 B2 C1", [], ["A2 B2 C1"]),
    ("(every (A -> B) -> C) where timer:within(3 sec)", "(every (A -> B) -> C)[3 s]",
     "A1 B1 C1 A2 B2 C2", ["A1 B1 C1"], ["A1 B1 C1", "A2 B2 C2"]),
]


@pytest.mark.parametrize(("e", "c", "seq", "esper", "window"), GUARDED)
def test_guarded_group_runs_from_the_guards_start(e, c, seq, esper, window) -> None:
    assert combos(epl(e), seq) == esper
    assert combos(cep(c), seq) == window


def test_group_then_more_token_ids() -> None:
    """The instance that completes the group goes on as the rest's with the group's token id;
    the next group takes a new one; matches in token order."""
    engine = Engine(epl("every (a=A -> b=B) -> c=C"))
    out = []
    for e in events_of("A1 B1 A2 B2 A3 C1 B3"):
        out += [(m.match_id, [p.params[0] for p in m.parts]) for m in engine.process(e)]
    assert out == [(1, [1, 1, 1]), (2, [2, 2, 1])]
    # (tokens: 1 = A1's group then rest, 2 = A2's, 3 = A3's group, completed by B3)
    assert engine.host.counters.token == 3
    [matcher] = engine.matchers
    assert [(t.id, [th.state in matcher.pattern.auto.group_end for th in t.threads])
            for t in matcher.all_tokens()] == [(3, [True])]
    # every-distinct: the group that completes with a seen key begins no rest
    engine = Engine(epl("every-distinct(a.n) (a=A -> b=B) -> c=C"))
    got = [m for e in events_of("A1 B1 A1 B2 A2 B3 C1") for m in engine.process(e)]
    assert [[p.params[0] for p in m.parts] for m in got] == [[1, 1, 1], [2, 3, 1]]
    assert engine.host.counters.token == 3 and not engine.matchers[0].all_tokens()


@pytest.mark.parametrize(("pattern", "col", "what"), [
    ("every (A -> every B) -> C", 41, "every inside every"),
    ("every (every (A -> B) -> C) -> D", 36, "at the start of the whole pattern only"),
    ("every-distinct(n) (a=A -> B) where timer:within(1 sec) -> C", 29,
     "every-distinct on a group that can end"),
    ("(every-distinct(a.n) (a=A -> B) -> C) where timer:within(1 sec)", 29,
     "a guard around every-distinct"),
    ("every (A -> B) -> (C where timer:within(1 sec))", 48, "a guard on what follows a group"),
    ("every-distinct(c.n) (a=A -> b=B) -> c=C", 44, "'c' is not one of them"),
    ("every (A -> B) -> timer:interval(1 sec)", 47, "timer:interval after a group"),
    # (the guard restarts with the group, at its own end: that instant again; as without -> C)
    ("every (A -> B) where timer:within(0 msec) -> C", 35, "timer:within(0)"),
])
def test_what_stays_unsupported_is_located(pattern, col, what) -> None:
    located(pattern, col, what)  # (x.epl, line 7, col)


@pytest.mark.parametrize(("pattern", "col", "what"), [
    ("every (A -> every B) -> C", 33, "every inside every"),
    ("every-distinct(a.n) ((a = A -> B)[1 s]) -> C", 21, "every-distinct on a group that can"),
    ("every (A -> B) -> (C -> D)[1 s]", 47, "a guard on what follows a group"),
    ("every (every (A -> B) -> C) -> D", 28, "at the start of the whole pattern only"),
    ("every (A -> B{+}) -> C", 14, "a group that can go on after it completed"),
])
def test_what_stays_unsupported_is_located_in_cepflow_syntax(pattern, col, what) -> None:
    with pytest.raises(PatternSyntaxError) as info:
        cep(pattern)
    d = info.value.diagnostics[0]
    assert what in d.message
    assert (d.line, d.col) == (7, col)


# ---- random group statements: per event on every route ---------------------------------------

#: (long windows and none most often: groups and rests then live across batches)
WINDOWS = ["", "", "", " where timer:within(3 msec)", " where timer:within(10 msec)",
           " where timer:within(0 msec)"]


@st.composite
def atom(draw: st.DrawFn, tag: str, keyed: bool) -> str:
    """``tag = T(filter[, key on a])`` of one of the three types."""
    t = draw(st.sampled_from(["A", "B", "C"]))
    f = draw(st.sampled_from(["", "", *FILTERS])).format(a=tag)
    if keyed and draw(st.booleans()):
        f = f"({f}) and {tag}.k = a.k" if f else f"{tag}.k = a.k"
    return f"{tag} = {t}({f})"


@st.composite
def groups(draw: st.DrawFn) -> str:
    """``every[-distinct(a.k)] (G)[ where timer:within(Δ)] -> R`` or the whole in a window:
    G a sequence of two or three, an and, an or of a sequence and an event, [2] (its tag
    read as a[0]), an and not; R one or two events, an and not or an inner every."""
    kind = draw(st.sampled_from(["seq", "seq", "seq3", "and", "or", "count", "andnot"]))
    a, b = draw(atom("a", False)), draw(atom("b", kind != "and"))
    e, nb = draw(atom("e", kind == "seq3")), draw(st.sampled_from("ABC"))
    g = {"seq": f"{a} -> {b}", "seq3": f"{a} -> {b} -> {e}", "and": f"{a} and {b}",
         "or": f"({a} -> {b}) or {e}", "count": f"[2] {a}",
         "andnot": f"{a} -> ({b} and not {nb})"}[kind]
    keyed = kind not in ("or", "count")  # (a is surely bound, and no array)
    c, d, nc = draw(atom("c", keyed)), draw(atom("d", keyed)), draw(st.sampled_from("ABC"))
    r = draw(st.sampled_from([c, c, f"{c} -> {d}", f"({c} and not {nc})", f"every {c}"]))
    window = draw(st.sampled_from(WINDOWS))
    whole = window and draw(st.booleans())
    if not whole and "(0 msec)" in window:  # (the group's own guard restarts: refused)
        window = " where timer:within(10 msec)"
    distinct = (not window and kind not in ("andnot", "or") and draw(st.booleans()))
    head = "every-distinct(a.k)" if distinct else "every"
    if kind == "count":
        head = "every-distinct(a[0].k)" if distinct else "every"
    body = f"{head} ({g}){'' if whole else window} -> {r}"
    if whole:
        body = f"({body}){window}"
    select = draw(st.sampled_from(["", "select c.v as cv, current_timestamp() as t, "
                                   + ("a[1].x" if kind == "count" else "a.x") + " as ax "]))
    return f"@Name('P')\ninsert into P\n{select}from pattern [{body}];\n"


def per_event(stmt: str):
    """The program of ``stmt``, asserted to run per event on Engine.run's route (every
    kernel declines the group)."""
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + stmt))
    engine = Engine(prog)
    assert PS.route_of(engine) == "per event", stmt
    assert not engine.columnar  # (no column route: the file job feeds it event by event)
    assert prog.automata[0].start == "group"
    m = engine.matchers[0].pattern
    assert (m.pair, m.restart, m.consec, m.esper_and, m.absence, m.single, m.chain) == (
        None,) * 7
    return prog


BENCH = ("@Name('P')\ninsert into P\nfrom pattern [every (a = A(a.v >= 1) -> b = B(b.k = a.k))"
         " where timer:within(3 msec) -> c = C(c.k = a.k)];\n")
STREAM = [("A", 0, 1, 0.0, 0), ("A", 0, 2, 0.0, 1), ("B", 0, 1, 0.0, 1), ("A", 1, 1, 0.0, 0),
          ("C", 0, 1, 0.0, 1), ("B", 1, 1, 0.0, 3), ("A", 1, 2, 0.0, 0), ("B", 1, 1, 0.0, 1),
          ("C", 1, 1, 0.0, 1)]


@settings(max_examples=120, deadline=None)
@given(groups(), stream([0, 1, 2]), st.integers(1, 30), st.integers(0, 70))
@example(BENCH, STREAM, 2, 4)
# (the group's rest left the guard's zone after its deadline fired: a restore asked for that
# timer again — state._fired, session 41)
@example("@Name('P')\ninsert into P\nfrom pattern [every ((a = A() -> b = A()) or e = A()) "
         "where timer:within(3 msec) -> c = A(c.v != 2)];\n",
         [("A", 0, 0, 0.0, 0)] * 7 + [("A", 0, 2, 0.0, 3)], 1, 8)
def test_groups_run_equal_event_by_event(stmt, spec, batch, restore_at) -> None:
    """``Engine.run`` in batches with a save/restore in the middle: as event by event (the
    fast per-event steps and the general token path)."""
    check_run(per_event(stmt), spec, batch, restore_at)


@settings(max_examples=50, deadline=None)
@given(groups(), stream([0, 1, 1.0, True, "1", None, float("nan")]), st.integers(1, 30),
       st.integers(0, 70))
def test_groups_with_mixed_keys(stmt, spec, batch, restore_at) -> None:
    """Keys that unify across types (1, 1.0, True), text, None and NaN (unifies with
    nothing; a NaN key cannot be saved: the run goes on unsaved)."""
    check_run(per_event(stmt), spec, batch, restore_at)


@settings(max_examples=60, deadline=None)
@given(groups(), stream([0, 1]), st.sampled_from([0, 1, 2, 3, 9, 10, 11, 100]))
@example(BENCH, STREAM, 3)
def test_groups_time_passing_after_a_batch(stmt, spec, later) -> None:
    check_time_passing(per_event(stmt), spec, later)


@settings(max_examples=80, deadline=None)
@given(groups(), stream([0, 1]), st.integers(0, 70), st.integers(0, 70), st.integers(0, 3))
@example(BENCH, STREAM, 3, 5, 2)
def test_groups_advance_and_restore_mid_stream(stmt, spec, advance_at, restore_at, ahead
                                               ) -> None:
    """Event by event with ``advance_to`` (up to the next event's time) before event
    ``advance_at`` and a save/restore before event ``restore_at``: as the uninterrupted run
    — the same complex events and ids, open instances, saved state and end of input."""
    prog = per_event(stmt)
    evs = events(spec)
    one = Engine(prog, fast_path=False)
    ref = rows([m for e in evs for m in one.process(e)])
    many = Engine(prog)
    got = []
    for i, e in enumerate(events(spec)):
        if i == advance_at:
            prev = evs[i - 1].ts if i else e.ts
            got += rows(many.advance_to(min(prev + ahead, e.ts)))
        if i == restore_at:
            many = restored(many, prog)
        got += rows(many.process(e))
    assert got == ref
    assert state(many) == state(one)
    assert rows(many.finish(close_windows=True)) == rows(one.finish(close_windows=True))


@settings(max_examples=40, deadline=None)
@given(groups(), keyed_others(1), stream([0, 1]), st.lists(st.integers(0, 70), max_size=4),
       st.integers(0, 70))
# (a restarted group guard: a clock; the split began the statements at the batch's first time
# as a float, the event its integer — session 41's Engine.start_statements keeps a float)
@example("@Name('P')\ninsert into P\nfrom pattern [every (a = A() -> b = A()) where "
         "timer:within(3 msec) -> c = A()];\n",
         ["@Name('D')\ninsert into D\nfrom pattern [every (x = A(x.v > 1) -> y = B(y.k = "
          "x.k))];\n"], [("A", 0, 0, 0.0, 0)], [], 0)
def test_groups_beside_the_split(stmt, others, spec, cuts, restore_at) -> None:
    """In a program the split takes, the group statement is none of its kernel patterns
    (per event), and the program equals event by event."""
    prog = program([C_SCHEMA + stmt], others)
    engine = Engine(prog)
    assert all(m.name != "P" for m in engine._split or ())
    check_split(prog, spec, cuts, restore_at)
    check_split_columns(prog, spec, cuts, restore_at)


#: a pair the split plans column-wise, whose matches the group statement reads
OVER = ("@Name('Q')\ninsert into Q\nselect a.k as k, a.v as v\nfrom pattern [every a = "
        "A(a.v > 0) -> b = B(b.k = a.k) where timer:within(3 msec)];\n")


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([
    "@Name('P')\ninsert into P\nfrom pattern [every (x = Q -> y = Q(y.k = x.k)) -> "
    "z = B(z.k = x.k)];\n",
    "@Name('P')\ninsert into P\nselect x.v as v\nfrom pattern [every (x = Q and y = C) "
    "where timer:within(4 msec) -> z = Q];\n",
    "@Name('P')\ninsert into P\nfrom pattern [every [2] x = Q -> z = C];\n"]),
    stream([0, 1]), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
def test_groups_over_a_kernel_patterns_output(p, spec, cuts, restore_at) -> None:
    """A group statement reading a kernel pattern's matches is not planned over the derived
    stream (the cascade declines it: per event), and equals event by event."""
    prog = program([C_SCHEMA + OVER + p], [])
    engine = Engine(prog)
    assert engine._split is not None and [m.name for m in engine._split] == ["Q"]
    assert higher_candidates(engine, engine._split) == []
    check_split(prog, spec, cuts, restore_at)
