"""Esper's ``until`` after a stage in the pair kernel (runtime.kernels.until,
``EsperPair.until``): ``every a = A(f) -> ([m:n] b = B(g, key) until c = C(h, key)) [where
timer:within(Δ)]`` — also ``[m:]``, ``[:n]``, no bound and ``[n] b until c``.

Over random statements of that shape (bounds, filters, keys written three ways, one type at
several places, windows of 0, 1, 3 and 10 ms or none, select lists reading ``b[0]``, ``b[1]``,
``b[2]`` — null past what a match holds —, ``c``, computing, literals, or none where the bound
allows) beside the pair kernel's other shapes, and random streams, the kernel equals the
per-event general token path (``fast_path=False``): complex events (parameters, parts,
bindings, ids) in order, rule firings, statistics, open instances (every thread, in order)
and saved state — batches cut anywhere with single events between, ``Engine.run`` with a
save/restore in the middle, Arrow batches through ``Engine.process_columns`` (the rows written
too), mixed keys, ``advance_to`` after a batch. Pinned: hand-derived streams on every cut.
Declined (per event or in the split): asserted at the end."""

import itertools

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_alternatives import C_SCHEMA, TYPES, check_pair_run, stream
from tests.esper.test_esper_count import WINDOWS, opened, written
from tests.esper.test_esper_kernel import FILTERS, SCHEMA, check, events, statements
from tests.esper.test_split import check_time_passing, keyed_others, program

from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine

BOUNDS = ["[2:3] ", "[1:2] ", "[0:2] ", "[:1] ", "[2:] ", "[1:] ", "", "[1] ", "[2] ", "[3] ",
          "[1:1] ", "[3:4] "]


@st.composite
def untils(draw: st.DrawFn) -> str:
    """``every a = T(f) -> (<bound> b = T(g, key) until c = T(h, key)) [where within]`` with
    a select list (or none, where the bound has an end)."""
    bound = draw(st.sampled_from(BOUNDS))
    fa = draw(st.sampled_from(["", *FILTERS])).format(a="a")
    fb = draw(st.sampled_from(["", "", *FILTERS])).format(a="b")
    fc = draw(st.sampled_from(["", "", *FILTERS])).format(a="c")
    kb = draw(st.sampled_from(["b.k = a.k", "k = a.k", "a.k = b.k"]))
    kc = draw(st.sampled_from(["c.k = a.k", "k = a.k", "a.k = c.k"]))
    b = f"b = {draw(st.sampled_from(TYPES))}({f'({fb}) and ' if fb else ''}{kb})"
    c = f"c = {draw(st.sampled_from(TYPES))}({f'({fc}) and ' if fc else ''}{kc})"
    exact = bound in ("[1] ", "[2] ", "[3] ", "[1:1] ")  # (completes at the n-th b: no c)
    cv = "" if exact else ", c.v as cv"
    selects = [f"select a.k as k, b[0].v as v0, b[1].x as x1, b[2].v as v2{cv} ",
               "select b[0].v + b[1].v as total, a.s as s, 'lit' as lit, "
               "current_timestamp() as t ",
               "select a.v as av, b[0].s as s0 "]
    if bound and ":]" not in bound:  # (bounded: the default columns too)
        selects.append("")
    return written(f"{draw(st.sampled_from(TYPES))}({fa})", f"{bound}{b} until {c}",
                   draw(st.sampled_from(WINDOWS)), draw(st.sampled_from(selects)),
                   draw(st.sampled_from(["P", "Q"])))


def many_b(keys) -> st.SearchStrategy:
    """A stream of mostly ``B``: instances past their m-th ``b`` still open across batch
    cuts, and long runs for the unbounded forms."""
    return st.lists(st.tuples(st.sampled_from(["A", "B", "B", "B", "C"]), st.sampled_from(keys),
                              st.sampled_from([0, 1, 2, 3, 4, -1, 0.5, None, True]),
                              st.sampled_from([0.0, 0.7, 1.2, 2.0]), st.integers(0, 2)),
                    max_size=50)


STREAMS = st.one_of(stream([0, 1], 20), many_b([0, 1]))


def takes_the_until(stmt: str) -> None:
    """``stmt`` runs in the pair kernel as an until."""
    engine = Engine(load_module(parse_epl(SCHEMA + C_SCHEMA + stmt)))
    assert engine._pairs is not None, stmt
    assert engine.matchers[0].pattern.pair.until is not None, stmt


#: the benchmark's shape (esper_until) with a 10 ms window
BENCH = written("A", "[2:3] b = B(b.k = a.k) until c = C(c.k = a.k)",
                " where timer:within(10 msec)",
                "select a.k as k, b[0].v as v0, b[1].v as v1, b[2].v as v2 ")
# hand-derived: A(0)@0 opens 1; B(0) v=2 @1, B(0) v=3 @2, B(0) v=4 @3 are its three b (the
# most); A(0)@3 opens 2; B(0) v=5 @4 (a fourth: 1, one until instance at its top, ignores
# it; 2's b[0]); C(0)@5 completes 1 with its first three b (e1, e2, e3: (0, 2, 3, 4)) and traps 2
# (one b, below 2); A(1)@5 opens 3; B(1) v=6 @6 and v=7 @7 its b[0], b[1]; C(1)@15 is 10 ms
# after e8: its timer fired first (expired); A(1)@16 opens 4, B(1) v=8 @17, v=9 @18, C(1)
# @19 completes 4 with two b (1, 8, 9, null). Left: nothing
PINNED = [("A", 0, 1, 0.0, 0), ("B", 0, 2, 0.7, 1), ("B", 0, 3, 0.7, 1), ("B", 0, 4, 0.7, 1),
          ("A", 0, 0, 0.0, 0), ("B", 0, 5, 0.7, 1), ("C", 0, 1, 0.0, 1), ("A", 1, 0, 0.0, 0),
          ("B", 1, 6, 0.7, 1), ("B", 1, 7, 0.7, 1), ("C", 1, 1, 0.0, 8), ("A", 1, 0, 0.0, 1),
          ("B", 1, 8, 0.7, 1), ("B", 1, 9, 0.7, 1), ("C", 1, 1, 0.0, 1)]
PINNED_WANT = [("P", 5, ("e0", "e1", "e2", "e3", "e6"), (0, 2, 3, 4), 1),
               ("P", 19, ("e11", "e12", "e13", "e14"), (1, 8, 9, None), 2)]


def test_the_until_pinned() -> None:
    """The benchmark's shape matches as worked out by hand, on the kernel and the token
    path, batches cut anywhere (every cut, and every pair of cuts)."""
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + BENCH))
    takes_the_until(BENCH)
    n = len(PINNED)
    for c1, c2 in itertools.combinations_with_replacement(range(n + 1), 2):
        for engine in (Engine(prog), Engine(prog, fast_path=False)):
            evs = events(PINNED)
            got = (engine.process_batch(evs[:c1]) + engine.process_batch(evs[c1:c2])
                   + engine.process_batch(evs[c2:]))
            assert [(m.type, m.ts, tuple(m.event_refs), m.params, m.match_id)
                    for m in got] == PINNED_WANT, (c1, c2)
            assert engine.host.counters.token == 4
            assert engine.partial_matches() == {"P": 0}


def test_the_open_threads_pinned() -> None:
    """After A B B B B (no C), cut anywhere: the instance holds one thread, Esper's one
    until instance — the three first b (the bound reached, the fourth is not taken)."""
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + BENCH))
    spec = [("A", 0, 1, 0.0, 0), ("B", 0, 2, 0.7, 1), ("B", 0, 3, 0.7, 1), ("B", 0, 4, 0.7, 1),
            ("B", 0, 5, 0.7, 1)]
    for cut in range(len(spec) + 1):
        engine = Engine(prog)
        evs = events(spec)
        assert engine.process_batch(evs[:cut]) + engine.process_batch(evs[cut:]) == []
        (tok,) = engine.matchers[0].all_tokens()
        assert [[e.ref for e in th.events] for th in tok.threads] == [["e0", "e1", "e2", "e3"]]
        assert [th.bindings.get("_b[]") for th in tok.threads] == [3]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(untils(), untils(), statements()), min_size=1, max_size=2),
       STREAMS, st.lists(st.integers(0, 70), max_size=4), st.integers(0, 8))
@example([BENCH], PINNED, [3], 0)
@example([BENCH], PINNED, [5, 6], 1)
def test_untils_equal_event_by_event(stmts, spec, cuts, tail) -> None:
    """Batches cut anywhere (single events between them, per-event steps after), the column
    route over event lists, rules firing, beside the pair kernel's other shapes (the token
    ids interleave): as the general token path."""
    names = [s.split("'")[1] for s in stmts]
    if len(set(names)) != len(names):
        stmts = stmts[:1]
    for s in stmts:
        if " until " in s:
            takes_the_until(s)
    check(C_SCHEMA + "".join(stmts), spec, cuts, tail)


@settings(max_examples=50, deadline=None)
@given(untils(), st.one_of(stream([0, 1, 1.0, True, "1", None], 20),
                           stream([0, 1, 1.0, True, "1", None, float("nan")], 20)),
       st.lists(st.integers(0, 70), max_size=2), st.integers(0, 5))
def test_untils_with_mixed_keys(stmt, spec, cuts, tail) -> None:
    """Keys that unify across types (1, 1.0, True), text, None — and NaN (which unifies with
    nothing: a batch holding one goes event by event)."""
    check(C_SCHEMA + stmt, spec, cuts, tail)


@settings(max_examples=80, deadline=None)
@given(untils(), STREAMS, st.integers(1, 30), st.integers(0, 70),
       st.lists(st.integers(0, 70), max_size=3))
@example(BENCH, PINNED, 2, 3, [4])
def test_untils_saved_and_restored(stmt, spec, batch, restore_at, cuts) -> None:
    """``Engine.run`` in batches with a save/restore in the middle, and Arrow batches through
    ``Engine.process_columns`` (the rows written column-wise too): as event by event."""
    check_pair_run(stmt, spec, batch, restore_at, cuts)


@settings(max_examples=60, deadline=None)
@given(untils(), STREAMS, st.lists(st.integers(0, 70), max_size=4))
@example(BENCH, PINNED, [1, 3, 8])
def test_untils_threads_in_the_token_paths_order(stmt, spec, cuts) -> None:
    """The instances left open after each batch — every thread, in order — and the matches
    hold their bindings in the order the token path makes them (the saved state and the
    comparisons above sort them)."""
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + stmt))
    ref, many = Engine(prog, fast_path=False), Engine(prog)
    evs_ref, evs = events(spec), events(spec)
    bounds = sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})
    for lo, hi in itertools.pairwise(bounds):
        want = [m for e in evs_ref[lo:hi] for m in ref.process(e)]
        got = many.process_batch(evs[lo:hi])
        assert [list(m.bindings.items()) for m in got] == [
            list(m.bindings.items()) for m in want]
        assert threads(many) == threads(ref)
        assert opened(many) == opened(ref)


def threads(engine: Engine) -> list:
    """Per open instance its id and threads (state, events, zone entries) in order."""
    return [(t.id, [(th.state, [e.ref for e in th.events], th.zstart) for th in t.threads])
            for m in engine.matchers for t in m.all_tokens()]


@settings(max_examples=60, deadline=None)
@given(untils(), STREAMS, st.sampled_from([0, 1, 2, 3, 9, 10, 11, 100]))
@example(BENCH, PINNED, 10)
@example(BENCH, PINNED[:4], 6)
def test_untils_time_passing_after_a_batch(stmt, spec, later) -> None:
    """One batch, then ``advance_to`` past its last event: the instances' deadlines move the
    clock and expire them as per event."""
    check_time_passing(load_module(parse_epl(SCHEMA + C_SCHEMA + stmt)), spec, later)


@settings(max_examples=20, deadline=None)
@given(untils(), keyed_others(1), stream([0, 1], 20))
def test_untils_stay_out_of_the_split(stmt, others, spec) -> None:
    """In a program the split takes, an until stays per event (kernels.pair.split_pair:
    its open instances' threads are not planned by the split's replay), equal all the same."""
    prog = program([C_SCHEMA + stmt], others)
    engine = Engine(prog)
    if engine._split is not None:
        assert all(m.pattern.pair is None or m.pattern.pair.until is None
                   for m in engine._split)
    ref = Engine(prog, fast_path=False)
    evs, evs_ref = events(spec), events(spec)
    got = engine.process_batch(evs)
    want = [m for e in evs_ref for m in ref.process(e)]
    assert [(m.type, m.ts, m.event_refs, m.params, m.match_id) for m in got] == [
        (m.type, m.ts, m.event_refs, m.params, m.match_id) for m in want]
