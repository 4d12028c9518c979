"""Esper's inner ``every`` after one stage in the pair kernel (runtime/kernels/inner_every.py,
``EsperPair.fork``): ``every a = A(f) -> every b = B(g, key) [where timer:within(Δ)]`` — each
``A`` passing ``f`` opens an instance that stays open (until its deadline, or for ever without
a window) and forks at every later ``B`` of its key passing ``g``: a match per such ``B``, each
fork taking a token id (Matcher._spawn).

Over random statements of that shape (keyed or not, filters, windows of 0, 1, 3 and 10 ms or
none, one type at both stages, select lists reading both tags, computing, literals) beside
the pair kernel's other shapes, and random streams, the kernel equals the per-event general
token path: complex events (parameters, parts, bindings, ids) in order, rule firings,
statistics, open instances and saved state — through ``Engine.process_batch`` with batches
cut anywhere and single events between, ``Engine.run`` with a save/restore in the middle,
``Engine.process_columns`` over event lists and Arrow batches (the rows written too),
``advance_to`` after a batch. In the program split it is a kernel pattern (its forks take
their token ids at their rows): the split's random programs with forks among their kernel
statements, batches cut anywhere, save/restore, Arrow, ``advance_to``, and two hand-derived
two-statement examples. Over a kernel pattern's output it stays per event (declined), equal
all the same."""

import itertools

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_alternatives import (
    C_SCHEMA,
    TYPES,
    check_pair_run,
    check_statements,
    stream,
)
from tests.esper.test_esper_kernel import FILTERS, SCHEMA, check, events, rows, statements
from tests.esper.test_esper_kernel import stream as kernel_stream
from tests.esper.test_split import (
    OTHERS,
    check_split,
    check_split_columns,
    check_time_passing,
    in_lists,
    keyed_others,
    program,
)

from cepflow.language import ast as A
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels import inner_every
from cepflow.runtime.kernels.cascade import higher_candidates
from cepflow.runtime.state import save_state

#: (long windows and none most often: instances then live across batches)
WINDOWS = ["", "", " where timer:within(3 msec)", " where timer:within(1 msec)",
           " where timer:within(10 milliseconds)", " where timer:within(10 msec)",
           " where timer:within(0 msec)"]


def written(a: str, b: str, within: str, select: str = "", name: str = "P") -> str:
    """The statement ``every a = <a> -> (every b = <b>) <within>`` (the parentheses: Esper's
    ``where`` would bind to ``every b`` alone, which cepflow reports)."""
    body = f"(every b = {b}){within}" if within else f"every b = {b}"
    return (f"@Name('{name}')\ninsert into {name}\n{select}from pattern [every a = {a} -> "
            f"{body}];\n")


@st.composite
def forks(draw: st.DrawFn) -> str:
    """``every a = T(f) -> every b = T(g[, key]) [where within]``, a select list or none."""
    fa = draw(st.sampled_from(["", *FILTERS])).format(a="a")
    fb = draw(st.sampled_from(["", "", *FILTERS])).format(a="b")
    if draw(st.sampled_from([True, True, True, False])):  # (keyed, most often)
        k = draw(st.sampled_from(["a.k = b.k", "b.k = a.k", "k = a.k"]))
        fb = f"({fb}) and {k}" if fb else k
    select = draw(st.sampled_from([
        "", "select a.v as av, b.x as bx, current_timestamp() as t, b.k as key ",
        "select a.v + b.v as total, b.s as s, 'lit' as c ", "select a.k as k, b.v as v "]))
    return written(f"{draw(st.sampled_from(TYPES))}({fa})", f"{draw(st.sampled_from(TYPES))}({fb})",
                   draw(st.sampled_from(WINDOWS)), select, draw(st.sampled_from(["P", "Q"])))


def takes_the_fork(stmt: str) -> None:
    """``stmt`` runs in the pair kernel, as a fork when it is one (an inner every)."""
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + stmt))
    engine = Engine(prog)
    assert engine._pairs is not None, stmt
    assert all(m.pattern.pair.fork == ("every b" in stmt) for m in engine.matchers), stmt


#: the benchmark's shape (esper_every_inner) with a 10 ms window
BENCH = written("A", "B(b.k = a.k)", " where timer:within(10 msec)",
                "select a.k as k, b.v as v ")
# hand-derived: A(0)@0 and A(0)@3 open instances 1 and 2 (token ids); B(0)@5 forks both
# (tokens 3, 4: matches (e0, e2) then (e1, e2)); A(1)@7 opens token 5; B(0)@10 is exactly
# 10 ms after e0 (its timer fired first: expired), so it forks instance 2 alone (token 6:
# (e1, e4)); B(1)@12 forks instance 5 (token 7: (e3, e5)); A(0)@13 opens token 8; B(0)@13
# after it is 10 ms after e1 — too late for it — and 0 ms after e6 at the same instant, in
# its window: (e6, e7) by token 9
PINNED = [("A", 0, 1, 0.0, 0), ("A", 0, 2, 0.0, 3), ("B", 0, 7, 0.7, 2), ("A", 1, 3, 0.0, 2),
          ("B", 0, 8, 0.7, 3), ("B", 1, 9, 0.7, 2), ("A", 0, 4, 0.0, 1), ("B", 0, 6, 0.7, 0)]
PINNED_WANT = [("P", 5, ("e0", "e2"), "(0, 7)", 1), ("P", 5, ("e1", "e2"), "(0, 7)", 2),
               ("P", 10, ("e1", "e4"), "(0, 8)", 3), ("P", 12, ("e3", "e5"), "(1, 9)", 4),
               ("P", 13, ("e6", "e7"), "(0, 6)", 5)]
#: one type at both stages: an A forks the instances of its key before it opens its own
SAME = written("A", "A(k = a.k)", " where timer:within(3 msec)", "select a.v as av, b.v as bv ")
SAME_STREAM = [("A", 0, 1, 0.0, 0), ("A", 0, 2, 0.0, 1), ("A", 0, 3, 0.0, 1), ("A", 0, 4, 0.0, 1)]
#: no window: the instances never close
OPEN = written("A", "B(k = a.k)", "")


def test_the_fork_pinned() -> None:
    """The benchmark's shape matches as worked out by hand, with the token ids the forks
    take, on every route."""
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + BENCH))
    takes_the_fork(BENCH)
    for engine in (Engine(prog), Engine(prog, fast_path=False)):
        got = engine.process_batch(events(PINNED))
        assert [(m.type, m.ts, tuple(m.event_refs), repr(m.params), m.match_id)
                for m in got] == PINNED_WANT
        assert engine.host.counters.token == 9
        # (open: instance 2 of e1 is past its deadline at 13; 5 of e3 and 8 of e6 wait)
        assert [t.id for t in engine.matchers[0].all_tokens()] == [5, 8]
    # one type at both stages: e1 forks e0's instance (token 2) then opens token 3, …
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + SAME))
    for engine in (Engine(prog), Engine(prog, fast_path=False)):
        got = engine.process_batch(events(SAME_STREAM))
        assert [(tuple(m.event_refs), m.params) for m in got] == [
            (("e0", "e1"), (1, 2)), (("e0", "e2"), (1, 3)), (("e1", "e2"), (2, 3)),
            (("e1", "e3"), (2, 4)), (("e2", "e3"), (3, 4))]
        assert engine.host.counters.token == 9  # (4 opened, 5 forks)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(forks(), forks(), statements()), min_size=1, max_size=2),
       stream([0, 1], 20), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 8))
@example([BENCH], PINNED, [3], 0)
@example([BENCH], PINNED, [5, 6], 1)
@example([SAME], SAME_STREAM, [2], 0)
@example([OPEN, BENCH.replace("'P'", "'Q'")], PINNED, [4], 2)
# (P's A at row 1 opens token 2 before Q forks there — token 3 —: patterns in engine order,
# each forking before it opens; Q's instance of row 0 is token 1)
@example([written("A", "B(k = a.k)", " where timer:within(3 msec)"),
          written("B", "A(k = a.k)", "", name="Q")],
         [("B", 0, 1, 0.0, 0), ("A", 0, 1, 0.0, 1), ("B", 0, 1, 0.0, 1)], [], 0)
def test_forks_equal_event_by_event(stmts, spec, cuts, tail) -> None:
    """Batches cut anywhere (single events between them, per-event steps after), the column
    route over event lists, rules firing, beside the pair kernel's other shapes (the token
    ids interleave): as the general token path."""
    check_statements(stmts, spec, cuts, tail, takes_the_fork)


NAN = float("nan")


@settings(max_examples=60, deadline=None)
# (one NaN object as both keys: the bucket is found, unification fails — no match)
@example(BENCH, [("A", NAN, 1, 0.0, 0), ("B", NAN, 2, 0.7, 1), ("A", 1, 1, 0.0, 0),
                 ("B", 1.0, 3, 0.7, 1), ("B", True, 4, 0.7, 1)], [], 5)
@example(OPEN, [("A", NAN, 1, 0.0, 0), ("B", NAN, 2, 0.7, 1)], [1], 0)
@given(forks(), st.one_of(stream([0, 1, 1.0, True, "1", None], 20),
                          stream([0, 1, 1.0, True, "1", None, float("nan")], 20)),
       st.lists(st.integers(0, 70), max_size=2), st.integers(0, 5))
def test_forks_with_mixed_keys(stmt, spec, cuts, tail) -> None:
    """Keys that unify across types (1, 1.0, True), text, None — and NaN (which unifies with
    nothing: a batch holding one goes event by event)."""
    check(C_SCHEMA + stmt, spec, cuts, tail)


@settings(max_examples=80, deadline=None)
@given(forks(), stream([0, 1], 20), st.integers(1, 30), st.integers(0, 70),
       st.lists(st.integers(0, 70), max_size=3))
@example(BENCH, PINNED, 2, 3, [4])
def test_forks_saved_and_restored(stmt, spec, batch, restore_at, cuts) -> None:
    """``Engine.run`` in batches with a save/restore in the middle, and Arrow batches through
    ``Engine.process_columns`` (the rows written column-wise too): as event by event."""
    check_pair_run(stmt, spec, batch, restore_at, cuts)


@settings(max_examples=80, deadline=None)
@given(forks(), stream([0, 1], 20), st.sampled_from([0, 1, 2, 3, 9, 10, 11, 100]))
@example(BENCH, PINNED, 10)
@example(BENCH, PINNED[:3], 6)
def test_forks_time_passing_after_a_batch(stmt, spec, later) -> None:
    """One batch, then ``advance_to`` past its last event: the instances' deadlines (queued,
    one engine timer) move the clock and expire them as per event."""
    check_time_passing(load_module(parse_epl(SCHEMA + C_SCHEMA + stmt)), spec, later)


def split_program(stmts: list[str], others: list[str], ruled: int = -1):
    """tests.esper.test_split.program of the statements ``stmts`` (forks among them) and
    ``others``, with the schema of C; the forks in it are kernel patterns of its split."""
    prog = program([C_SCHEMA + stmts[0], *stmts[1:]], others, ruled)
    engine = Engine(prog)
    if engine._split is None:  # (every statement the pair kernel's: not the split's case)
        assert engine._pairs is not None or not engine.matchers
    else:
        mine = {m.name for m in engine._split}
        assert all(m.name in mine for m in engine.matchers if m.pattern.pair is not None
                   and m.pattern.pair.fork)
    return prog


#: split programs with forks among their kernel statements (test_split.PROGRAMS' shape):
#: kernel statements, other statements (over the input and over P's and Q's output), cuts,
#: where to save and restore, how many patterns a rule reads
SPLIT_PROGRAMS = (st.lists(st.one_of(forks(), forks(), statements()), min_size=1, max_size=3),
                  st.lists(st.sampled_from(OTHERS), min_size=1, max_size=3, unique=True),
                  st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70),
                  st.integers(-1, 2))

#: beside the fork ``P`` (BENCH), ``R``, which the split runs per event: every B opens an
#: instance (a token id) that matches 5 ms later at its timer
BESIDE = ("@Name('R')\ninsert into R\nselect x.v as v\nfrom pattern [every x = B -> "
          "timer:interval(5 msec)];\n")
# hand-derived (PINNED: A(0)@0, A(0)@3, B(0)@5, A(1)@7, B(0)@10, B(1)@12, A(0)@13, B(0)@13):
# P opens 1 at e0 and 2 at e1; e2 forks 1 and 2 (tokens 3, 4), then R opens 5; P opens 6 at
# e3; at 10 R's timer fires first (match R (e2)), P's instance 1 is past its deadline, e4
# forks 2 (7) and R opens 8; e5 forks 6 (9), R opens 10; P opens 11 at e6; e7 is 10 ms after
# e1 (too late) and forks 11 (12), R opens 13. After the batch P's 6 and 11 wait, R's 8, 10,
# 13, whose timers fire at 15, 17, 18 as time passes to 20
BESIDE_WANT = [("P", 5, ("e0", "e2"), 1), ("P", 5, ("e1", "e2"), 2), ("R", 10, ("e2",), 3),
               ("P", 10, ("e1", "e4"), 4), ("P", 12, ("e3", "e5"), 5),
               ("P", 13, ("e6", "e7"), 6)]
BESIDE_LATER = [("R", 15, ("e4",), 7), ("R", 17, ("e5",), 8), ("R", 18, ("e7",), 9)]
# one type at both stages beside R over A (SAME_STREAM: A(0) at 0, 1, 2, 3): e0 opens P's 1
# and R's 2; e1 forks 1 (3), opens 4, R's 5; e2 forks 1 and 4 (6, 7), opens 8, R's 9; at e3
# instance 1 has expired (3 ms), e3 forks 4 and 8 (10, 11), opens 12, R's 13
SAME_BESIDE = BESIDE.replace("x = B", "x = A")


def test_the_fork_in_the_split_pinned() -> None:
    """Two statements, the fork planned and ``R`` per event at the stepped rows (a rule reads
    R's matches): a stepped row gives the fork every token id it takes there (its forks, then
    its own start) before ``R`` opens; a timer at an event's instant fires before the fork's
    matches there. Without the rule R (the interval right after ``x``) is a timer-end
    pattern of the split too (since session 36): the same."""
    for (stmt, spec, want, later, tokens), ruled in itertools.product([
            (BENCH + BESIDE, PINNED, BESIDE_WANT, BESIDE_LATER, [6, 11, 8, 10, 13]),
            (SAME + SAME_BESIDE, SAME_STREAM,
             [("P", t, refs, i) for i, (t, refs) in enumerate(
                 [(1, ("e0", "e1")), (2, ("e0", "e2")), (2, ("e1", "e2")), (3, ("e1", "e3")),
                  (3, ("e2", "e3"))], 1)],
             [("R", 5 + i, (f"e{i}",), 6 + i) for i in range(4)], [4, 8, 12, 2, 5, 9, 13])],
            (True, False)):
        prog = load_module(parse_epl(SCHEMA + C_SCHEMA + stmt))
        if ruled:  # (a rule without an action: R's matches are read, so R runs per event)
            prog.rules.append(A.RuleDecl("r", (A.PatternRef("R"),), None))
        split_engine = Engine(prog)
        assert [m.name for m in split_engine._split] == (["P"] if ruled else ["P", "R"])
        for engine in (split_engine, Engine(prog, fast_path=False)):
            got = engine.process_batch(events(spec))
            assert [(m.type, m.ts, tuple(m.event_refs), m.match_id) for m in got] == want
            assert engine.host.counters.token == 13
            assert [t.id for m in engine.matchers for t in m.all_tokens()] == tokens
            assert [(m.type, m.ts, tuple(m.event_refs), m.match_id)
                    for m in engine.advance_to(20)] == later
    check_split(load_module(parse_epl(SCHEMA + C_SCHEMA + BENCH + BESIDE)), PINNED, [3], 5)


@settings(max_examples=100, deadline=None)
@given(*SPLIT_PROGRAMS[:2], stream([0, 1, 2], 20), *SPLIT_PROGRAMS[2:])
@example([BENCH], [BESIDE], PINNED, [2, 7], 4, -1)
@example([SAME], [SAME_BESIDE], SAME_STREAM, [1], 2, 0)
def test_forks_in_the_split(stmts, others, spec, cuts, restore_at, ruled) -> None:
    """Forks as the split's kernel patterns beside other kernel statements and statements
    per event (over the input and over the forks' output): batches cut anywhere, single
    events between, a save/restore in the middle — as event by event (check_split)."""
    check_split(split_program(stmts, others, ruled), spec, cuts, restore_at)


@settings(max_examples=60, deadline=None)
@given(*SPLIT_PROGRAMS[:2], stream([0, 1, 2], 20), *SPLIT_PROGRAMS[2:],
       st.sampled_from([0, 1, 3]))
def test_forks_in_the_split_stepping_many_rows(stmts, others, spec, cuts, restore_at, ruled,
                                               short) -> None:
    """The same with the rows looked up in lists (split._Replay.as_lists), stretches of up to
    ``short`` loose matches recorded one by one."""
    with in_lists(short):
        check_split(split_program(stmts, others, ruled), spec, cuts, restore_at)


@settings(max_examples=80, deadline=None)
@given(*SPLIT_PROGRAMS[:2], kernel_stream([0, 1, 2]), *SPLIT_PROGRAMS[2:])
@example([BENCH], [BESIDE], [s for s in PINNED], [3], 6, -1)
def test_forks_in_the_split_over_arrow(stmts, others, spec, cuts, restore_at, ruled) -> None:
    """The split over Arrow batches (Engine.process_columns: events made only for the rows
    stepped, in matches or left open; the rows written column-wise), a save/restore after
    which the reader numbers from 0 again: as event by event (check_split_columns)."""
    check_split_columns(split_program(stmts, others, ruled), spec, cuts, restore_at)


@settings(max_examples=60, deadline=None)
@given(forks(), keyed_others(1), stream([0, 1], 20), st.sampled_from([0, 1, 2, 3, 9, 11, 100]))
@example(BENCH, [], PINNED, 7)
def test_forks_in_the_split_time_passing(stmt, others, spec, later) -> None:
    """One split batch, then ``advance_to`` past its last event: the forks' instances and the
    other statements' timers move the clock and end as per event (check_time_passing)."""
    others = others or [BESIDE]
    check_time_passing(split_program([stmt], others), spec, later)


#: a pair whose matches a fork reads (the program split's kernel pattern)
OVER = ("@Name('P')\ninsert into P\nselect a.k as k, a.v as v\nfrom pattern [every a = "
        "A(a.v > 0) -> b = B(b.k = a.k) where timer:within(3 msec)];\n")


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([
    written("P", "B(b.k = a.k)", " where timer:within(3 msec)", "select a.k as k ", "Q"),
    written("C", "P(b.k = a.k)", " where timer:within(2 msec)", "select a.k as k ", "Q"),
    written("P", "P(k = a.k)", "", "select a.v as av, b.v as bv ", "Q")]),
    stream([0, 1], 20), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
def test_forks_over_a_kernel_patterns_output(q, spec, cuts, restore_at) -> None:
    """A fork reading a kernel pattern's matches is not planned over the derived stream
    (declined: per event), and equals event by event."""
    prog = program([C_SCHEMA + OVER + q], [])
    engine = Engine(prog)
    assert engine._split is not None and [m.name for m in engine._split] == ["P"]
    assert higher_candidates(engine, engine._split) == []
    check_split(prog, spec, cuts, restore_at)


def test_what_the_fork_declines() -> None:
    """Shapes around the fork that stay per event (or go through another route)."""
    for s in [
        # (g reads a's fields: the token path evaluates it per instance)
        "every a = A -> every b = B(b.k = a.k and b.v > a.v)",
        # (every-distinct around the start: not proved with the fork)
        "every-distinct(a.k) a = A -> every b = B(b.k = a.k)",
        # (after two stages, or before one)
        "every a = A -> b = B(b.k = a.k) -> every c = C(c.k = a.k)",
        "every a = A -> every b = B(b.k = a.k) -> c = C(c.k = a.k)",
    ]:
        prog = load_module(parse_epl(SCHEMA + C_SCHEMA + f"@Name('P')\ninsert into P\n"
                                     f"from pattern [{s}];\n"))
        engine = Engine(prog)
        assert engine._pairs is None, s
        pr = engine.matchers[0].pattern.pair
        assert pr is None or not pr.fork, s
    # the fork's instance after the batch is the token path's (a pair's waiting instance)
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + BENCH))
    batch, ref = Engine(prog), Engine(prog, fast_path=False)
    assert rows(batch.process_batch(events(PINNED))) == rows(
        [m for e in events(PINNED) for m in ref.process(e)])
    assert save_state(batch) == save_state(ref)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.7, 0.9999999999999999, 1e-17, 1.0,
                                 3.0, 1e16, 1e16 + 2]), min_size=1, max_size=30),
       st.lists(st.integers(0, 29), min_size=1, max_size=8),
       st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.7, 1.0, 0.30000000000000004, 1e-16, 2.0]))
# (0.3 + 0.7 rounds up to 1.0, though 0.9999999999999999 - 0.3 is not below 0.7: the search
# by start + Δ ends one row late; 1e16 + 1 rounds down to 1e16, though 1e16 + 2 - 1e16 = 2
# is not below 1 … and 1e16 - 1e16 is: one row early)
@example([0.3, 0.9999999999999999, 1.0], [0], 0.7)
@example([1e16, 1e16 + 2], [0], 1.0)
def test_window_cut_is_the_windows_end(times, at, window) -> None:
    """Per instance, every row before the cut — none at or after it — is less than Δ after
    its window's start, in the float arithmetic the pair kernel checks (``ts - start <
    Δ``): float times where ``start + Δ`` rounds, equal instants, huge ones."""
    ts = np.array(sorted(times), np.float64)
    starts = ts[[min(i, len(ts) - 1) for i in at]]
    cut = inner_every.window_cut(ts, starts, window)
    for c, s in zip(cut.tolist(), starts.tolist(), strict=True):
        assert all(t - s < window for t in ts[:c].tolist() if t >= s)
        assert not any(t - s < window for t in ts[c:].tolist())
