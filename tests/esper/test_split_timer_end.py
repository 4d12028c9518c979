"""The timer-end patterns (runtime/kernels/timer_end.py: Esper's missing event ``every a = A(f)
-> (timer:interval(Δ) and not B(g))``, the interval after ``b``, ``every a = A(f) -> b =
B(g) -> timer:interval(Δ)``, and the interval right after ``a``, ``every a = A(f) ->
timer:interval(Δ)``) as kernel patterns of the program split (kernels.split,
``_with_timer_end``, ``timer_end.plan_split``, ``timer_end.SplitTimerSet``): their matches come
at their timers, between rows — recorded in bulk before the row they fire before when no step
sees it, or fired by the engine just before a stepped row among its other timers and window
instants — and several such statements' timers interleave in the engine's order, (deadline,
the order they were asked for) across statements.

Over random split programs — the timer-end statement (named ``T``: nothing reads it) beside
the pair kernel's statements and statements per event without timers, window statements,
patterns over the kernel patterns' output, and up to two more timer-end statements, U and V —
and random streams, against the general token path event by event: the same complex events
(ids, parts, bindings, times) in order, statistics (their per-pattern order too), saved state,
open instances, the timer-end patterns' pending timers (in firing order across them) and the
end of input — through ``process_batch`` cut anywhere,
single events between, ``advance_to`` between batches, a save/restore in the middle; with the
rows looked up in lists; over Arrow batches (Engine.process_columns). Hand-derived two- and
three-statement examples pin the order of a timer's match at one instant with a window's
boundary and with the matches of the row it fires before, and two statements' timers due at
one instant (recorded in bulk, fired by the engine at a stepped row, left after the batch).
What the split declines (a reader of a timer-end pattern's matches, a pattern per event with
timers) is asserted."""

import itertools

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_absence import batched
from tests.esper.test_esper_interval import after_a, interval
from tests.esper.test_esper_kernel import VALUES, events, state, statements
from tests.esper.test_split import (
    OTHERS,
    check_split_columns,
    in_lists,
    program,
    restored,
    rows,
)

from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels.split import timer_end_shape

#: beside the timer-end statement: statements without timers (over the input, over the
#: kernel patterns' output — P's, Q's —, window statements), and F, a pair kernel with a window
BESIDE = [o for o in OTHERS if "timer:within" not in o or o.startswith("@Name('F')")]


def stream() -> st.SearchStrategy:
    """20 to 70 events of A and B, keys 0 to 2, close in time (the timers fire between them)."""
    return st.lists(st.tuples(st.sampled_from(["A", "B"]), st.sampled_from([0, 1, 2]),
                              st.sampled_from(VALUES), st.sampled_from([0.0, 0.7, 1.2, 2.0]),
                              st.sampled_from([0, 0, 1, 1, 2, 3])), min_size=20, max_size=70)


#: the timer-end statements' names: T always, U and V now and then
TE_NAMES = ("T", "U", "V")


def te_statement(name: str = "T") -> st.SearchStrategy:
    """A missing event, an interval after ``b`` (A then B, or B then A) or right after ``a``,
    named ``name``."""
    return st.one_of(batched(name), interval(name), after_a(name))


@st.composite
def te_statements(draw: st.DrawFn) -> str:
    """T, and (half the time) U, or U and V: several timer-end statements, whose timers the
    split orders across them."""
    more = draw(st.sampled_from([(), (), ("U",), ("U", "V")]))
    return draw(te_statement()) + "".join(draw(te_statement(n)) for n in more)


def split_of(kernel_stmts: list[str], te: str, others: list[str], ruled: int):
    """The program of ``kernel_stmts``, the timer-end statement ``te`` and ``others``
    (tests.esper.test_split.program; a rule reads the first ``ruled`` kernel statements, never
    T, U or V); asserts the split takes T (and U, V) exactly when no pattern it leaves per event
    has timers."""
    names = list(dict.fromkeys(s.split("'")[1] for s in kernel_stmts))
    prog = program([*kernel_stmts, te], others, min(ruled, len(names)))
    engine = Engine(prog)
    if engine._split is not None:
        mine = {m.name for m in engine._split}
        ends = {m.name for m in engine.matchers if m.name in TE_NAMES}
        timed = any(m.name not in mine and m.name not in ends
                    and (m.pattern.auto.zones or m.pattern.clock is not None)
                    for m in engine.matchers)
        assert (ends <= mine) == (not timed) and (not ends & mine) == timed
    return prog


def te_timers(engine: Engine) -> list:
    """The timer-end statements' pending timers (statement, deadline, token, zone, start) in
    firing order, across them."""
    names = {m.slot: m.name for m in engine.matchers if m.name in TE_NAMES}
    return [(names[h[3]], h[0], h[4], h[5], h[6]) for h in sorted(engine.host.timers.entries())
            if h[3] in names]


def check(prog, spec, cuts, restore_at: int, gap: int) -> None:
    """``spec`` through the split in batches cut at ``cuts`` (a single event between them,
    time advanced up to ``gap`` ms past a batch before the next, a save/restore at
    ``restore_at``) against the general token path event by event with the same time passing
    and restore: the same complex events, statistics, saved state, open instances, T's pending
    timers, and the same at the end of input."""
    one, many = Engine(prog, fast_path=False), Engine(prog)
    evs1, evs2 = events(spec), events(spec)
    bounds = sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})
    restore_at = min(restore_at, len(spec))
    got, want = [], []
    for n, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        if n % 2 and hi > lo:  # one event on its own between batches
            got += rows(many.process(evs2[lo]))
            want += rows(one.process(evs1[lo]))
            lo += 1
        for a, b in ((lo, restore_at), (restore_at, hi)) if lo <= restore_at < hi else [(lo, hi)]:
            if a == restore_at and b == hi:  # (both saved and restored at the same point)
                many, one = restored(many, prog), restored(one, prog)
            got += rows(many.process_batch(evs2[a:b]))
            want += rows([m for e in evs1[a:b] for m in one.process(e)])
        if hi > lo and gap:  # time passes: the timers due by then fire between batches
            until = evs1[hi - 1].ts + gap
            if hi < len(spec):
                until = min(until, evs1[hi].ts)
            got += rows(many.advance_to(until))
            want += rows(one.advance_to(until))
    assert got == want
    assert many.stats == one.stats
    assert list(many.stats.by_pattern) == list(one.stats.by_pattern)
    assert state(many) == state(one)
    assert te_timers(many) == te_timers(one)
    assert many.partial_matches() == one.partial_matches()
    assert rows(many.finish(close_windows=True)) == rows(one.finish(close_windows=True))


#: the random programs: kernel statements, T, other statements, how many kernel statements a
#: rule reads
PROGRAMS = (st.lists(statements(), max_size=2), te_statements(),
            st.lists(st.sampled_from(BESIDE), max_size=3, unique=True), st.integers(0, 2))

#: hand-derived: T the missing event (Δ 3) beside P, a pair kernel, and W, a time batch of
#: 3 ms over B nothing reads (recorded in bulk, or closed by the engine at a stepped row)
T3 = ("@Name('T')\ninsert into T\nselect a.k as k from pattern [every a = A -> "
      "(timer:interval(3 msec) and not B(k = a.k))];\n")
PAIR = ("@Name('P')\ninsert into P\nselect a.k as k from pattern [every a = A -> "
        "b = B(b.k = a.k) where timer:within(5 msec)];\n")
TB = "@Name('W')\ninsert into W\nselect count(*) as c\nfrom B.win:time_batch(3 msec);\n"
# (P's statement before T's: at a row P takes its token id first) A(0)@0 opens P 1, T 2 (due
# 3); B(1)@1 begins W's first batch (its boundaries at 4, 7, …); A(1)@2 opens P 3, T 4 (due
# 5); before B(1)@3 T 2's timer fires: T (e0) at 3; B(1)@3 completes P 3 — P (e2, e3) — and
# traps T 4 (its key); before A(0)@4 W closes [B(1)@1, B(1)@3] — W at 4 —; A(0)@4 opens P 5,
# T 6 (due 7); before B(0)@8 T 4's timer fires idle at 5, then at 7 W's boundary (empty: a
# row all the same) and T 6's timer — the window first at one instant: W at 7, T (e4) at 7 —;
# B(0)@8 completes P 5 (P 1 expired at 5): P (e4, e5) at 8
PINNED = [("A", 0, 0, 0.0, 0), ("B", 1, 0, 0.0, 1), ("A", 1, 0, 0.0, 1), ("B", 1, 0, 0.0, 1),
          ("A", 0, 0, 0.0, 1), ("B", 0, 0, 0.0, 4)]
PINNED_WANT = [("T", 3, ("e0",), 1), ("P", 3, ("e2", "e3"), 2), ("W", 4, (), 3),
               ("W", 7, (), 4), ("T", 7, ("e4",), 5), ("P", 8, ("e4", "e5"), 6)]


def test_pinned_timer_with_a_window_instant() -> None:
    """At one instant a window's boundary comes before a timer's match, and both before the
    matches of the row they precede — whether that row is stepped (a rule reads P) or not."""
    for ruled in (0, 1):
        prog = program([PAIR, T3], [TB], ruled)
        for engine in (Engine(prog), Engine(prog, fast_path=False)):
            if engine.matchers[0].pattern.pair is not None:
                assert [m.name for m in engine._split] == ["P", "T"]
            got = engine.process_batch(events(PINNED))
            assert [(m.type, m.ts, tuple(m.event_refs), m.match_id) for m in got] == PINNED_WANT
            assert engine.host.counters.token == 6
        check(prog, PINNED, [3], 2, 1)


# interval after b (Δ 2) beside R, per event without timers (``[2]`` after a stage with a
# filter reading x, which the pair kernel declines), reading B: every B row is stepped (a row
# T's timers fire before is then the engine's): A(0)@0 opens T 1; B(0)@1 moves it (due 3), R
# opens 2; A(0)@2 opens T 3 (R's 2 takes it as y[0]); B(0)@3: T 1's timer fires first — T
# (e0, e1) at 3 —, then B moves T 3 (due 5), R opens 4; time passing to 10: T (e2, e3) at 5
TI = ("@Name('T')\ninsert into T\nselect a.k as k, b.v as v from pattern [every a = A -> "
      "b = B(b.k = a.k) -> timer:interval(2 msec)];\n")
R = ("@Name('R')\ninsert into R\nfrom pattern [every x = B -> "
     "([2] y = A(y.k = x.k and y.v < x.v))];\n")
R_STREAM = [("A", 0, 1, 0.0, 0), ("B", 0, 4, 0.0, 1), ("A", 0, 1, 0.0, 1), ("B", 0, 5, 0.0, 1)]


def test_pinned_timer_before_a_stepped_row() -> None:
    """A timer due before a row another statement reads is fired by the engine there, before
    that row's steps; the token ids interleave as per event."""
    prog = program([TI], [R], 0)
    split_engine = Engine(prog)
    assert [m.name for m in split_engine._split] == ["T"]
    for engine in (split_engine, Engine(prog, fast_path=False)):
        got = engine.process_batch(events(R_STREAM)) + engine.advance_to(10)
        assert [(m.type, m.ts, tuple(m.event_refs), m.match_id) for m in got] == [
            ("T", 3, ("e0", "e1"), 1), ("T", 5, ("e2", "e3"), 2)]
        assert engine.host.counters.token == 4
    check(prog, R_STREAM, [2], 1, 0)


def test_what_the_split_declines() -> None:
    """A reader of T's matches (a pattern, a rule), a pattern per event with timers — or a
    second timer-end statement U that a rule reads (per event, with timers): T runs per event
    (equal all the same). A second timer-end statement nothing reads is taken beside T."""
    other_t = T3.replace("'T'", "'U'").replace("into T", "into U")
    reader = "@Name('G')\ninsert into G\nfrom pattern [every t = T -> x = B(x.k = t.k)];\n"
    timed = ("@Name('H')\ninsert into H\nfrom pattern [every x = B -> y = A(y.k = x.k) -> "
             "z = A(z.k = x.k, z.v > y.v) where timer:within(2 msec)];\n")
    for kernel, others, ruled in [([PAIR, other_t], [], 2), ([PAIR], [reader], 0),
                                  ([PAIR], [timed], 0), ([PAIR], [TB], 2)]:
        prog = program([*kernel, T3], others, ruled)
        engine = Engine(prog)
        assert engine._split is not None
        assert not {"T", "U"} & {m.name for m in engine._split}
        check(prog, PINNED, [3], 2, 1)
    # (the second of two timer-end statements read by a pattern: neither is taken)
    reader_u = reader.replace("'G'", "'GU'").replace("into G", "into GU").replace(
        "t = T", "u = U").replace("t.k", "u.k")
    prog = program([PAIR, T3, other_t], [reader_u], 0)
    assert [m.name for m in Engine(prog)._split] == ["P"]
    check(prog, PINNED, [3], 2, 1)
    prog = program([PAIR, other_t, T3], [], 1)
    assert [m.name for m in Engine(prog)._split] == ["P", "U", "T"]
    check(prog, PINNED, [3], 2, 1)


@settings(max_examples=150, deadline=None)
@given(*PROGRAMS, stream(), st.lists(st.integers(0, 70), max_size=4),
       st.integers(0, 70), st.sampled_from([0, 0, 1, 3]))
@example([PAIR], T3, [TB], 0, PINNED, [3], 2, 1)
@example([], TI, [R], 0, R_STREAM, [1, 3], 2, 0)
def test_timer_end_in_the_split(kernel_stmts, te, others, ruled, spec, cuts, restore_at,
                                gap) -> None:
    check(split_of(kernel_stmts, te, others, ruled), spec, cuts, restore_at, gap)


@settings(max_examples=60, deadline=None)
@given(*PROGRAMS, stream(), st.lists(st.integers(0, 70), max_size=4),
       st.integers(0, 70), st.sampled_from([0, 1, 3]))
def test_timer_end_in_the_split_stepping_many_rows(kernel_stmts, te, others, ruled, spec,
                                                   cuts, restore_at, short) -> None:
    """The rows looked up in lists (split._Replay.as_lists), stretches of up to ``short``
    loose matches recorded one by one."""
    with in_lists(short):
        check(split_of(kernel_stmts, te, others, ruled), spec, cuts, restore_at, 0)


@settings(max_examples=80, deadline=None)
@given(*PROGRAMS, stream(), st.lists(st.integers(0, 70), max_size=4),
       st.integers(0, 70))
@example([PAIR], T3, [TB], 0, PINNED, [3], 2)
def test_timer_end_in_the_split_over_arrow(kernel_stmts, te, others, ruled, spec, cuts,
                                           restore_at) -> None:
    """Over Arrow batches (Engine.process_columns; test_split.check_split_columns: the rows
    written, a save/restore after which the reader numbers from 0 again)."""
    check_split_columns(split_of(kernel_stmts, te, others, ruled), spec, cuts, restore_at)


def test_the_shape_is_found_per_matcher() -> None:
    """The engine knows each matcher's timer-end shape in a mixed program (the split reads
    it), and none without the fast path."""
    prog = program([PAIR, T3], [], 0)
    assert [timer_end_shape(Engine(prog), m) is not None
            for m in Engine(prog).matchers] == [False, True]
    slow = Engine(prog, fast_path=False)
    assert all(timer_end_shape(slow, m) is None for m in slow.matchers)


# two timer-end statements at one instant: T the missing event (Δ 2, NOT B(k = a.k)), U the
# interval right after a (Δ 3), beside P (engine order P, T, U). A(0)@0 opens P 1, T 2 (due
# 2), U 3 (due 3); A(1)@1 opens P 4, T 5 (due 3), U 6 (due 4); before A(2)@5: T (e0) at 2,
# then at 3 U (e0) — asked for at row 0 — before T (e1) — row 1 —, then U (e1) at 4; A(2)@5
# opens P 7, T 8, U 9
TWO = ("@Name('T')\ninsert into T\nselect a.k as k from pattern [every a = A -> "
       "(timer:interval(2 msec) and not B(k = a.k))];\n"
       "@Name('U')\ninsert into U\nselect a.k as k from pattern [every a = A -> "
       "timer:interval(3 msec)];\n")
TWO_STREAM = [("A", 0, 0, 0.0, 0), ("A", 1, 0, 0.0, 1), ("A", 2, 0, 0.0, 4)]
TWO_WANT = [("T", 2, ("e0",), 1), ("U", 3, ("e0",), 2), ("T", 3, ("e1",), 3),
            ("U", 4, ("e1",), 4)]


def test_pinned_two_statements_timers_at_one_instant() -> None:
    """Two timer-end statements' timers due at 3, U's asked for before T's though T comes
    first in engine order: U's match first — recorded in bulk (no row stepped), fired by the
    engine before a stepped row (R reads A), left after a batch cut before them and fired by
    ``advance_to``, or one from before the batch (a cut after the first A)."""
    for others in ([], [R]):
        prog = program([PAIR, TWO], others, 0)
        split_engine = Engine(prog)
        assert {"P", "T", "U"} <= {m.name for m in split_engine._split}
        for cut in (0, 1, 2):
            for engine in (Engine(prog), Engine(prog, fast_path=False)):
                evs = events(TWO_STREAM)
                got = engine.process_batch(evs[:cut])
                got += engine.advance_to(4) if cut == 2 else []
                got += engine.process_batch(evs[cut:])
                assert [(m.type, m.ts, tuple(m.event_refs), m.match_id)
                        for m in got] == TWO_WANT
                assert engine.host.counters.token == 9
                assert te_timers(engine) == [("T", 7.0, 8, 0, 5.0), ("U", 8.0, 9, 0, 5.0)]
        check(prog, TWO_STREAM, [1], 1, 1)


def test_pinned_scheduling_order_across_statements() -> None:
    """Hand-derived: T the interval right after a over A (Δ 3), U over B (Δ 2), beside P.
    A(0)@0 asks for T 2's timer (due 3), A(1)@1 for T 4's (due 4), B(2)@2 for U 5's (due 4);
    before C@9 T (e0) at 3, then at 4 T (e1) — asked for at row 1 — before U (e2) — row 2 —:
    the scheduling order is across the statements (each statement's own count of asks would
    put U's first ask before T's second)."""
    te = ("@Name('T')\ninsert into T\nselect a.k as k from pattern [every a = A -> "
          "timer:interval(3 msec)];\n@Name('U')\ninsert into U\nselect a.k as k from pattern "
          "[every a = B -> timer:interval(2 msec)];\n")
    spec = [("A", 0, 0, 0.0, 0), ("A", 1, 0, 0.0, 1), ("B", 2, 0, 0.0, 1), ("C", 0, 0, 0.0, 7)]
    prog = program([PAIR, te], [], 0)
    assert {"P", "T", "U"} <= {m.name for m in Engine(prog)._split}
    for engine in (Engine(prog), Engine(prog, fast_path=False)):
        got = engine.process_batch(events(spec))
        assert [(m.type, m.ts, tuple(m.event_refs), m.match_id) for m in got] == [
            ("T", 3, ("e0",), 1), ("T", 4, ("e1",), 2), ("U", 4, ("e2",), 3)]
    check(prog, spec, [], 0, 0)
