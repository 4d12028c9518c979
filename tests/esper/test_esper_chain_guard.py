"""The pair kernel's guard that opens at a later stage (runtime/kernels/pair.py,
``EsperPair.zone_at``; runtime.shapes._guard): ``every a = A(f) -> b = B(g, key) -> c = C(h,
key) where timer:within(Δ)`` — Esper's ``where`` binds tighter than ``->``, so the guard is
``c``'s alone and its window opens at ``b``'s event — and generally a window opened by the
event of stage ``at`` around the stages after it (``every a -> b -> (c -> d) where
timer:within(Δ)``). An instance waits for the stages up to ``at`` without a deadline; from
there each later stage must come less than Δ after the event of stage ``at``.

Over random chains of two to four stages with the window opening at each stage, filters,
keys that unify across types, windows of 1, 3 and 10 ms (and none), select lists, and random
streams, the kernel equals the per-event general token path: complex events (parameters,
parts, bindings, ids) in order, rule firings, statistics, open instances and saved state —
through ``Engine.process_batch`` with batches cut anywhere and single events between,
``Engine.run`` with a save/restore in the middle, ``Engine.process_columns`` over event
lists and Arrow batches (the rows written too), ``advance_to`` after a batch, and the program
split beside statements no kernel takes."""

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_alternatives import (
    C_SCHEMA,
    TYPES,
    check_pair_run,
    check_statements,
    stream,
)
from tests.esper.test_esper_kernel import FILTERS, SCHEMA, check, events, rows
from tests.esper.test_split import (
    check_split,
    check_time_passing,
    keyed_others,
    program,
)

from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels.cascade import higher_candidates
from cepflow.runtime.state import save_state

WINDOWS = [" where timer:within(3 msec)", " where timer:within(1 msec)",
           " where timer:within(10 milliseconds)", ""]


def written(tags: str, types: list[str], filters: list[str], at: int, within: str,
            select: str = "", name: str = "P", parens: bool = True, to: int | None = None
            ) -> str:
    """The statement ``every a = T(f) -> … -> (x = T(g) -> …) <within> [-> …]`` whose
    window opens at the event of stage ``at`` and holds the stages up to ``to`` (the last
    without; ``parens`` False for a last stage alone, written bare as the benchmark's shape
    is; ``((x = T(g) -> …) <within>) -> y = …`` when ``to`` is before the last)."""
    steps = [f"{t} = {ty}({f})" for t, ty, f in zip(tags, types, filters, strict=True)]
    to = len(steps) - 1 if to is None else to
    head, mid, tail = steps[:at + 1], steps[at + 1:to + 1], steps[to + 1:]
    if within:
        inner = " -> ".join(mid)
        mid = [f"({inner}){within}" if parens or len(mid) > 1 else f"{inner}{within}"]
        if tail:
            mid = [f"({mid[0]})"]
    return (f"@Name('{name}')\ninsert into {name}\n{select}from pattern [every "
            f"{' -> '.join(head + mid + tail)}];\n")


@st.composite
def guarded(draw: st.DrawFn) -> str:
    """A chain of two to four stages on one key (a pair may have none) whose window opens at
    a random stage's event and ends at a later one (the last, or one before it)."""
    n = draw(st.sampled_from([2, 3, 3, 4]))
    tags = "abcd"[:n]
    keyed = n > 2 or draw(st.booleans())
    within = draw(st.sampled_from(WINDOWS))
    at = draw(st.integers(0, n - 2))
    to = draw(st.integers(at + 1, n - 1))
    if draw(st.integers(0, 4)) == 0:  # (a window of 0: nothing after its opening completes)
        within = " where timer:within(0 msec)"
    types, filters = [], []
    for j, tag in enumerate(tags):
        types.append(draw(st.sampled_from(TYPES)))
        # (no filter half the time: instances then go far enough to cross batches)
        f = draw(st.sampled_from(["", *FILTERS])).format(a=tag)
        if j and keyed:
            k = draw(st.sampled_from([f"a.k = {tag}.k", f"{tag}.k = a.k", "k = a.k"]))
            f = f"({f}) and {k}" if f else k
        filters.append(f)
    last, second = tags[-1], tags[1]
    select = draw(st.sampled_from([
        "", f"select a.v as av, {last}.x as lx, current_timestamp() as t, {second}.k as key ",
        f"select a.v + {last}.v as total, {second}.s as s, 'lit' as c "]))
    return written(tags, types, filters, at, within, select, draw(st.sampled_from(["P", "Q"])),
                   draw(st.booleans()), to)


def zone_at(stmt: str) -> int:
    """The stage whose event opens the statement's window, asserting the pair kernel takes it."""
    return window_of(stmt)[0]


def window_of(stmt: str) -> tuple[int, int | None]:
    """The stages where the statement's window opens and ends (EsperPair.zone_at, zone_to),
    asserting the pair kernel takes it."""
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + stmt))
    engine = Engine(prog)
    assert engine._pairs is not None, stmt
    pr = engine.matchers[0].pattern.pair
    return pr.zone_at, pr.zone_to


#: the benchmark's shape (esper_chain_guard), keyed, with a 10 ms window
CHAIN_GUARD = written("abc", ["A", "B", "C"], ["", "k = a.k", "k = a.k"], 1,
                      " where timer:within(10 msec)", "select a.k as k, b.v as bv ",
                      parens=False)
# hand-derived: A(0)@0 waits for its B with no deadline; B(0)@50 opens the window, C(0)@55 is
# 5 ms after it (55 ms after A: a window opened at A would have closed), so (e0, e1, e2) at 55;
# A(1)@56, B(1)@57, C(1)@67 is exactly 10 ms after B: too late (Esper's timer fires first);
# the C(0)@67 completes nothing (the instance of key 0 completed, a new A(0) came never)
PINNED = [("A", 0, 1, 0.0, 0), ("B", 0, 7, 0.7, 50), ("C", 0, 2, 0.7, 5),
          ("A", 1, 1, 0.0, 1), ("B", 1, 3, 0.7, 1), ("C", 1, 2, 0.7, 10), ("C", 0, 2, 0.7, 0)]
# (two instances of one key: A(0)@0, A(0)@1, B(0)@2 moves both into the window at 2, C(0)@5
# completes both, oldest first; a B(0)@20 after it opens nothing: no instance waits)
PINNED_TWO = [("A", 0, 1, 0.0, 0), ("A", 0, 2, 0.0, 1), ("B", 0, 7, 0.7, 1),
              ("C", 0, 2, 0.7, 3), ("B", 0, 2, 0.7, 15)]


#: four stages, the window opening at c's event (which a later batch brings: the token that
#: waited for it from an earlier batch gets its window and timer there): A(0)@0, B(0)@1,
#: C(0)@3 opens the window, so the d = A(0)@13 is exactly 10 ms late (no match; the instance
#: expired at 13 before it) and begins an instance of its own
FOUR = written("abcd", ["A", "B", "C", "A"], ["", "k = a.k", "k = a.k", "k = a.k"], 2,
               " where timer:within(10 msec)", "select a.k as k, d.v as dv ")
FOUR_STREAM = [("A", 0, 1, 0.0, 0), ("B", 0, 1, 0.0, 1), ("A", 1, 1, 0.0, 1),
               ("C", 0, 1, 0.0, 1), ("A", 1, 1, 0.0, 1), ("A", 0, 5, 0.0, 9)]
#: the same with the d 9 ms after the C: a match at 12, (e0, e1, e3, e5)
FOUR_IN_TIME = [*FOUR_STREAM[:5], ("A", 0, 5, 0.0, 8)]


#: a window around a middle stage: b within 10 ms of a, c any time after b
MIDDLE = written("abc", ["A", "B", "C"], ["", "k = a.k", "k = a.k"], 0,
                 " where timer:within(10 msec)", "select a.k as k, b.v as bv ", to=1)
# hand-derived: A(0)@0, B(0)@5 in its window, A(1)@6, A(2)@50, C(0)@100 completes e0 long
# after the window (the deadline at 10 left it waiting for its c; a batch may end past it):
# (e0, e1, e4) at 100; B(1)@116 is past e2's deadline (16: expired), so C(1)@120 completes
# nothing
MIDDLE_STREAM = [("A", 0, 1, 0.0, 0), ("B", 0, 7, 0.7, 5), ("A", 1, 1, 0.0, 1),
                 ("A", 2, 1, 0.0, 44), ("C", 0, 2, 0.7, 50), ("B", 1, 3, 0.7, 16),
                 ("C", 1, 2, 0.7, 4)]

#: a window of 0 opened at b: no c can come in it; an instance whose b is a batch's last
#: event outlives the batch, its deadline (the batch's last instant) still to fire — before
#: the next event, here a C of another key that leaves it alone
ZERO = written("abc", ["A", "B", "C"], ["", "k = a.k", "k = a.k"], 1,
               " where timer:within(0 msec)")
ZERO_STREAM = [("A", 0, 1, 0.0, 0), ("B", 0, 1, 0.0, 1), ("A", 1, 1, 0.0, 1),
               ("C", 1, 1, 0.0, 0)]

#: four stages, the window around b alone: after c an instance waits for its d with no
#: deadline, its window's timer still to fire (idle)
MIDDLE4 = written("abcd", ["A", "B", "C", "A"], ["", "k = a.k", "k = a.k", "k = a.k"], 0,
                  " where timer:within(10 msec)", to=1)


def test_the_guard_opens_at_its_stage() -> None:
    """The benchmark's shape matches as worked out by hand: the window opens at ``b``."""
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + CHAIN_GUARD))
    for spec, want in [(PINNED, [("P", 55, ("e0", "e1", "e2"), "(0, 7)")]),
                       (PINNED_TWO, [("P", 5, ("e0", "e2", "e3"), "(0, 7)"),
                                     ("P", 5, ("e1", "e2", "e3"), "(0, 7)")])]:
        for engine in (Engine(prog), Engine(prog, fast_path=False)):
            got = engine.process_batch(events(spec))
            assert [(m.type, m.ts, tuple(m.event_refs), repr(m.params)) for m in got] == want
    assert zone_at(CHAIN_GUARD) == 1
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + MIDDLE))
    assert window_of(MIDDLE) == (0, 1)
    for engine in (Engine(prog), Engine(prog, fast_path=False)):
        got = engine.process_batch(events(MIDDLE_STREAM))
        assert [(m.type, m.ts, tuple(m.event_refs), repr(m.params)) for m in got] == [
            ("P", 100, ("e0", "e1", "e4"), "(0, 7)")]
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + FOUR))
    for spec, want in [(FOUR_STREAM, []), (FOUR_IN_TIME, [("P", 12, ("e0", "e1", "e3", "e5"),
                                                          "(0, 5)")])]:
        for engine in (Engine(prog), Engine(prog, fast_path=False)):
            got = engine.process_batch(events(spec))
            assert [(m.type, m.ts, tuple(m.event_refs), repr(m.params)) for m in got] == want


@settings(max_examples=150, deadline=None)
@given(st.lists(guarded(), min_size=1, max_size=2), stream([0, 1, 2]),
       st.lists(st.integers(0, 70), max_size=4), st.integers(0, 8))
@example([CHAIN_GUARD], PINNED, [2], 0)
@example([CHAIN_GUARD], PINNED, [5], 1)
@example([CHAIN_GUARD], PINNED_TWO, [3], 0)
@example([FOUR], FOUR_STREAM, [2, 4], 1)
@example([FOUR], FOUR_IN_TIME, [2, 4], 1)
@example([FOUR], FOUR_STREAM, [2], 2)
@example([MIDDLE], MIDDLE_STREAM, [2, 4], 1)
@example([MIDDLE], MIDDLE_STREAM, [4], 0)  # (the first batch ends past e0's deadline)
# (e0 left its window at its c and waits for its d: its token has no zone entry)
@example([MIDDLE4], [*MIDDLE_STREAM[:2], ("C", 0, 2, 0.7, 1)], [], 0)
@example([ZERO], ZERO_STREAM, [2], 2)
def test_guarded_chains_equal_event_by_event(stmts, spec, cuts, tail) -> None:
    """Batches cut anywhere (single events between them, per-event steps after), the column
    route over event lists, rules firing: as the general token path."""
    check_statements(stmts, spec, cuts, tail, zone_at)


@settings(max_examples=60, deadline=None)
@given(guarded(), stream([0, 1, 2, 1.0, True, "1", None, float("nan")]),
       st.lists(st.integers(0, 70), max_size=2), st.integers(0, 5))
def test_guarded_chains_with_mixed_keys(stmt, spec, cuts, tail) -> None:
    """Keys that unify across types (1, 1.0, True), text, None and NaN (which unifies with
    nothing: that batch goes event by event)."""
    check(C_SCHEMA + stmt, spec, cuts, tail)


@settings(max_examples=100, deadline=None)
@given(guarded(), stream([0, 1, 2]), st.integers(1, 30), st.integers(0, 70),
       st.lists(st.integers(0, 70), max_size=3))
@example(CHAIN_GUARD, PINNED, 2, 3, [4])
def test_guarded_chains_saved_and_restored(stmt, spec, batch, restore_at, cuts) -> None:
    """``Engine.run`` in batches with a save/restore in the middle, and Arrow batches through
    ``Engine.process_columns`` (the rows written column-wise too): as event by event."""
    check_pair_run(stmt, spec, batch, restore_at, cuts)


@settings(max_examples=100, deadline=None)
@given(guarded(), stream([0, 1, 2]), st.sampled_from([0, 1, 2, 3, 9, 10, 11, 100]))
@example(CHAIN_GUARD, PINNED[:2], 10)
@example(MIDDLE, MIDDLE_STREAM[:2], 6)
# (e0 left its window at c, 6, and waits for its d: its deadline, 10, fires idle — the clock
# reads 10 after time passes 15)
@example(MIDDLE4, [*MIDDLE_STREAM[:2], ("C", 0, 2, 0.7, 1)], 9)
@example(MIDDLE, [*MIDDLE_STREAM[:2], ("C", 0, 2, 0.7, 1)], 6)
@example(CHAIN_GUARD, PINNED_TWO, 7)
def test_guarded_chains_time_passing_after_a_batch(stmt, spec, later) -> None:
    """One batch, then ``advance_to`` past its last event: the windows opened in the batch
    (and the idle timers of the instances that completed) move the clock as per event."""
    check_time_passing(load_module(parse_epl(SCHEMA + C_SCHEMA + stmt)), spec, later)


@settings(max_examples=100, deadline=None)
@given(guarded(), stream([0, 1]), st.integers(0, 70), st.sampled_from([0, 1, 3, 9, 10, 100]))
@example(FOUR, FOUR_STREAM, 2, 0)
# (the token of e0 waits for its c from the first batch, takes it and its d in the second:
# its deadline, 13, fires idle when time passes it — the clock reads 13, not 5)
@example(FOUR, [*FOUR_STREAM[:4], ("A", 0, 1, 0.0, 1)], 2, 10)
# (e0's window, opened at 0, holds its b at 5 and is left by its c at 100: its deadline, 10,
# fires idle after the second batch, whose b it took)
@example(MIDDLE, MIDDLE_STREAM[:2], 1, 9)
@example(MIDDLE, [*MIDDLE_STREAM[:2], ("C", 0, 2, 0.7, 1)], 1, 9)
def test_guarded_chains_time_passing_after_batches(stmt, spec, cut, later) -> None:
    """Two batches with one event between them (the pending rows become tokens there), then
    ``advance_to``: the tokens whose windows opened or that completed in the second batch —
    their timers (idle for those that completed) — move the clock as the token path's."""
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + stmt))
    evs = events(spec)
    cut = min(cut, len(evs))
    end = (evs[-1].ts if evs else 0) + later
    batch, ref = Engine(prog), Engine(prog, fast_path=False)
    got = (batch.process_batch(evs[:cut]) + (batch.process(evs[cut]) if cut < len(evs) else [])
           + batch.process_batch(evs[cut + 1:]) + batch.advance_to(end))
    want = [m for e in events(spec) for m in ref.process(e)] + ref.advance_to(end)
    assert rows(got) == rows(want)
    assert save_state(batch) == save_state(ref)
    assert batch.stats == ref.stats


@settings(max_examples=60, deadline=None)
@given(st.lists(guarded(), min_size=1, max_size=2),
       keyed_others(1),
       stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
def test_guarded_chains_in_the_split(stmts, others, spec, cuts, restore_at) -> None:
    """Beside statements no kernel takes (over the input and over these statements'
    output): the program split plans them column-wise, as event by event."""
    check_split(program([C_SCHEMA + stmts[0], *stmts[1:]], others), spec, cuts, restore_at)


def test_what_the_guard_declines() -> None:
    """Windows opened at a later stage or ending before the last are the pair kernel's; these
    stay per event."""
    for s, window in [
            ("every a = A -> b = B(k = a.k) -> c = C(k = a.k) where timer:within(1 sec)",
             (1, None)),
            ("every a = A -> b = B(k = a.k) -> (c = C(k = a.k) -> d = A(k = a.k)) "
             "where timer:within(1 sec)", (1, None)),
            ("every a = A -> b = B(k = a.k) -> c = C(k = a.k) -> d = A(k = a.k) "
             "where timer:within(1 sec)", (2, None)),
            ("every a = A -> (b = B(k = a.k) -> c = C(k = a.k)) where timer:within(1 sec)",
             (0, None)),
            # (a guard on the alternatives alone, after a chain)
            ("every a = A -> b = B(k = a.k) -> (c = C(k = a.k) or d = A(k = a.k)) "
             "where timer:within(1 sec)", (1, None)),
            # (a window around middle stages: left at the next stage's edge)
            ("every a = A -> (b = B(k = a.k) where timer:within(1 sec)) -> c = C(k = a.k)",
             (0, 1)),
            ("every a = A -> b = B(k = a.k) -> (c = C(k = a.k) where timer:within(1 sec)) -> "
             "d = A(k = a.k) -> e = B(k = a.k)", (1, 2)),
            ("every a = A -> ((b = B(k = a.k) -> c = C(k = a.k)) where timer:within(0 sec)) "
             "-> d = A(k = a.k)", (0, 2)),
            # (a window of 0 opened at a later stage: no c can come less than 0 ms after its
            # b; the instances end at the deadline, which a batch's last b leaves to come)
            ("every a = A -> b = B(k = a.k) -> c = C(k = a.k) where timer:within(0 msec)",
             (1, None))]:
        stmt = f"@Name('P')\ninsert into P\nselect a.v as av\nfrom pattern [{s}];\n"
        assert window_of(stmt) == window, s
    for s in [
        # (a chain on no key)
        "every a = A -> b = B -> c = C where timer:within(1 sec)",
        # (a window around middle stages before alternatives)
        "every a = A -> (b = B(k = a.k) where timer:within(1 sec)) -> (c = C(k = a.k) or "
        "d = A(k = a.k))",
    ]:
        prog = load_module(parse_epl(SCHEMA + C_SCHEMA + f"@Name('P')\ninsert into P\n"
                                     f"from pattern [{s}];\n"))
        assert Engine(prog)._pairs is None, s
    # a window of 0 from b: nothing completes, on every route; the instance whose b is the
    # batch's last event is still open after it (its deadline comes before the next event)
    prog = load_module(parse_epl(
        SCHEMA + C_SCHEMA + "@Name('P')\ninsert into P\nfrom pattern [every a = A -> b = B(k "
        "= a.k) -> c = C(k = a.k) where timer:within(0 msec)];\n"))
    spec = [("A", 0, 1, 0.0, 0), ("B", 0, 7, 0.7, 1), ("C", 0, 2, 0.7, 0), ("A", 0, 1, 0.0, 1),
            ("B", 0, 7, 0.7, 1)]
    for engine in (Engine(prog), Engine(prog, fast_path=False)):
        assert engine.process_batch(events(spec)) == []
        assert [t.id for t in engine.matchers[0].all_tokens()] == [2]


#: a pair whose matches the guarded chains below read (the program split's kernel pattern)
OVER = ("@Name('P')\ninsert into P\nselect a.k as k, a.v as v\nfrom pattern [every a = "
        "A(a.v > 0) -> b = B(b.k = a.k) where timer:within(3 msec)];\n")
#: guarded chains over P's output, planned over the derived stream (kernels.cascade)
HIGHER = [
    "@Name('Q')\ninsert into Q\nselect p.k as k\nfrom pattern [every p = P -> b = B(b.k = "
    "p.k) -> c = C(c.k = p.k) where timer:within(3 msec)];\n",
    "@Name('Q')\ninsert into Q\nselect p.k as k\nfrom pattern [every p = P -> (b = B(b.k = "
    "p.k) where timer:within(2 msec)) -> c = C(c.k = p.k)];\n",
    "@Name('Q')\ninsert into Q\nselect p.k as k\nfrom pattern [every p = P -> b = B(b.k = "
    "p.k) -> (c = C(c.k = p.k) or d = A(d.k = p.k)) where timer:within(3 msec)];\n",
    # (windows of 0 — a later row of one input row's cascade traps an instance at a stage in
    # the window, kernels.pair.pair_rows's trapped — opened at a derived row, around one)
    "@Name('Q')\ninsert into Q\nselect c.k as k\nfrom pattern [every c = C -> p = P(p.k = "
    "c.k) -> (q = P(q.k = c.k) -> d = A(d.k = c.k)) where timer:within(0 msec)];\n",
    "@Name('Q')\ninsert into Q\nselect c.k as k\nfrom pattern [every c = C -> (p = P(p.k = "
    "c.k) where timer:within(0 msec)) -> q = P(q.k = c.k) -> d = A(d.k = c.k)];\n",
    "@Name('Q')\ninsert into Q\nselect p.k as k\nfrom pattern [every p = P -> q = P(q.k = "
    "p.k) -> b = B(b.k = p.k) where timer:within(0 msec)];\n",
]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(HIGHER), stream([0, 1]), st.lists(st.integers(0, 70), max_size=4),
       st.integers(0, 70))
# (P at rows 1 and 3; the Q of the first P takes the second as q at the last input row's
# cascade: its window of 0 opens there and it outlives the batch — trapped only by a later
# row of that cascade at a stage inside the window)
@example(HIGHER[5], [("A", 0, 1, 0.0, 0), ("B", 0, 1, 0.0, 1), ("A", 0, 1, 0.0, 0),
                     ("B", 0, 1, 0.0, 1)], [], 70)
def test_guarded_chains_over_a_kernel_patterns_output(q, spec, cuts, restore_at) -> None:
    """A guarded chain reading a kernel pattern's matches is planned over the derived stream
    (kernels.cascade.higher_candidates takes it): as event by event."""
    prog = program([C_SCHEMA + OVER + q], [])
    engine = Engine(prog)
    assert [m.name for m in higher_candidates(engine, engine._split)] == ["Q"]
    check_split(prog, spec, cuts, restore_at)
