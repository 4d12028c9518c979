"""Esper's interval after ``b``, ``every a = A(f) -> b = B(g, key) -> timer:interval(Δ)``, over a
batch (runtime/kernels/timer_end.py), equals the general token path (``fast_path=False``): the
same complex events (parts, parameters, bindings, match ids, times — a match comes when the
instance's timer, asked for at its ``B``, fires: between rows, or at ``advance_to``), rule
firings, statistics, saved state, open instances and pending timers — through ``process_batch``
cut anywhere, with single events between, time passing, a save/restore, over Arrow batches, and
beside missing-event statements whose timers fire at the same instants; and the interval right
after ``a``, ``every a = A(f) -> timer:interval(Δ)`` (each ``A`` a match at ``a.t + Δ``), alone
and beside both."""

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_absence import (
    FIRST,
    _kernel_only,
    batched,
    check_arrow,
    check_taken,
    program,
    stream,
)
from tests.esper.test_esper_kernel import KEYS, events

from cepflow.runtime.engine import Engine

# B's conditions: the key (either way round), the key and B's own field, none, a filter on
# B's own field, another of a's fields
SECONDS = ["b.k = a.k", "a.k = b.k", "b.k = a.k and b.v = 1", "", "b.v > 2", "b.v = a.v",
           "b.k = a.k and b.x > 0.5"]
SELECTS = ["", "select a.k as k, b.v as v ", "select b.s as s, a.v as v, b.k as bk ",
           "select b.v + 1 as w, current_timestamp() as t "]
AFTER_SELECTS = ["", "select a.k as k, a.v as v ", "select a.s as s, a.k as k ",
                 "select a.v + 1 as w, current_timestamp() as t "]


@st.composite
def interval(draw: st.DrawFn, name: str, right_after: bool = False) -> str:
    """``every a = A(f) -> b = B(g) -> timer:interval(Δ)`` (or ``B`` first, then ``A``); with
    ``right_after`` the interval right after a, ``every a = A(f) -> timer:interval(Δ)`` (or over
    ``B``): each ``A`` passing ``f`` a match at ``a.t + Δ``."""
    first, second = draw(st.sampled_from([("A", "B"), ("A", "B"), ("B", "A")]))
    f = draw(st.sampled_from(FIRST))
    b = "" if right_after else f"b = {second}({draw(st.sampled_from(SECONDS))}) -> "
    delta = draw(st.sampled_from([0, 1, 2, 3, 5]))
    select = draw(st.sampled_from(AFTER_SELECTS if right_after else SELECTS))
    return (f"@Name('{name}')\ninsert into {name}\n{select}from pattern [every a = {first}({f}) "
            f"-> {b}timer:interval({delta} msec)];\n")


def programs(draw: st.DrawFn) -> str:
    """One or two statements, each the interval after b or (now and then) the missing event."""
    names = draw(st.sampled_from([["P"], ["P", "Q"]]))
    return "".join(draw(st.one_of(interval(n), interval(n), batched(n))) for n in names)


@settings(max_examples=150, deadline=None)
@given(st.data(), stream([0, 1, 2]), st.lists(st.integers(0, 60), max_size=4),
       st.integers(0, 60), st.sampled_from([0, 1, 4]))
def test_interval_equals_token_path(data, spec, cuts, restore_at, gap) -> None:
    """Batches cut anywhere against the token path event by event (test_esper_absence.check:
    single events between, time passing, a save/restore, rule actions, timers, the end)."""
    check_taken(programs(data.draw), spec, cuts, restore_at, gap)


@settings(max_examples=60, deadline=None)
@given(st.data(), stream([k for k in KEYS if k != 10**20]),  # (Arrow's int64 holds no 10**20)
       st.lists(st.integers(0, 60), max_size=4), st.sampled_from([0, 1, 4]))
def test_interval_over_arrow(data, spec, cuts, gap) -> None:
    """Over Arrow batches, mixed keys (NaN declines the batch: fed as events)."""
    check_arrow(programs(data.draw), spec, cuts, gap)


P = ("@Name('P')\ninsert into P\nselect a.k as k, b.v as v from pattern [every a = A -> "
     "b = B(b.k = a.k) -> timer:interval(3 msec)];\n")


def test_pinned_interval() -> None:
    """Hand-derived, Δ 3. Batch 1: A(k 0)@0 and A(k 0)@1 both take B(k 0, v 5)@2 — their
    timers due at 5, asked for oldest first —, A(k 0)@3 waits. Batch 2: before C@5 the two
    matches (e0, e2) and (e1, e2) at 5; B(k 0, v 7)@6 moves the instance from batch 1 (its
    timer due 9), A(k 1)@6 waits (the next batch would go on); time passing to 9 gives
    (e3, e5) at 9."""
    prog = program(P)
    spec1 = [("A", 0, 0, 0.0, 0), ("A", 0, 0, 0.0, 1), ("B", 0, 5, 0.0, 1), ("A", 0, 0, 0.0, 1)]
    spec2 = [("C", 0, 0, 0.0, 2), ("B", 0, 7, 0.0, 1), ("A", 1, 0, 0.0, 0)]
    for eng in (_kernel_only(Engine(prog, strict_actions=False)),
                Engine(prog, strict_actions=False, fast_path=False)):
        evs = events(spec1 + spec2)
        assert eng.process_batch(evs[:4]) == []
        out = eng.process_batch(evs[4:]) + eng.advance_to(9)
        assert [(m.ts, m.params, tuple(m.event_refs), m.match_id) for m in out] == [
            (5, (0, 5), ("e0", "e2"), 1), (5, (0, 5), ("e1", "e2"), 2),
            (9, (0, 7), ("e3", "e5"), 3)]
        assert eng.partial_matches() == {"P": 1}


def test_pinned_interval_beside_missing_event() -> None:
    """Hand-derived: P the interval after b (Δ 2), Q the missing event (Δ 3, NOT B(v > 2)).
    A(k 0)@0 opens P's 1 and Q's 2 (Q's timer due 3 asked for then); B(k 0, v 0)@1 moves P's 1
    (due 3, asked for after Q's) and traps nothing; before C@3: Q (e0), then P (e0, e1)."""
    q = ("@Name('Q')\ninsert into Q\nselect a.k as k from pattern [every a = A -> "
         "(timer:interval(3 msec) and not B(v > 2))];\n")
    prog = program(P.replace("3 msec", "2 msec") + q)
    spec = [("A", 0, 0, 0.0, 0), ("B", 0, 0, 0.0, 1), ("C", 0, 0, 0.0, 2)]
    for eng in (_kernel_only(Engine(prog, strict_actions=False)),
                Engine(prog, strict_actions=False, fast_path=False)):
        out = eng.process_batch(events(spec))
        assert [(m.type, m.ts, tuple(m.event_refs), m.match_id) for m in out] == [
            ("Q", 3, ("e0",), 1), ("P", 3, ("e0", "e1"), 2)]


def route(pattern: str) -> bool:
    """Whether the batch route takes statement P of ``pattern`` (Engine._timer_ends)."""
    text = f"@Name('P')\ninsert into P\nfrom pattern [{pattern}];\n"
    return Engine(program(text), strict_actions=False)._timer_ends is not None


def test_interval_route_takes() -> None:
    """The shapes the route takes and declines (per event then)."""
    assert route("every a = A -> b = B(b.k = a.k) -> timer:interval(5 msec)")
    assert route("every a = A(v > 1) -> b = B(x > 0.5) -> timer:interval(0 msec)")
    assert not route("every a = A -> b = B(b.v > a.v) -> timer:interval(5 msec)")
    assert not route("every a = A -> b = A(b.k = a.k) -> timer:interval(5 msec)")
    assert not route("every a = A -> b = B(b.k = a.k and b.v = a.v) -> timer:interval(5 msec)")
    assert not route("every a = A -> b = B(b.k = a.k) -> c = C(c.k = a.k) -> "
                     "timer:interval(5 msec)")
    assert not route("a = A -> b = B(b.k = a.k) -> timer:interval(5 msec)")


def test_pinned_timers_in_asking_order() -> None:
    """Hand-derived, Δ 3: A(k 1)@0 (token 1), A(k 2)@0 (token 2); B(k 2)@1 asks for token 2's
    timer, then B(k 1)@1 for token 1's, both due at 4: before C@4 the matches (e1, e2) then
    (e0, e3) — in the order the timers were asked for, not by token id."""
    prog = program(P)
    spec = [("A", 1, 0, 0.0, 0), ("A", 2, 0, 0.0, 0), ("B", 2, 0, 0.0, 1), ("B", 1, 0, 0.0, 0),
            ("C", 0, 0, 0.0, 3)]
    for eng in (_kernel_only(Engine(prog, strict_actions=False)),
                Engine(prog, strict_actions=False, fast_path=False)):
        out = eng.process_batch(events(spec))
        assert [(tuple(m.event_refs), m.match_id) for m in out] == [
            (("e1", "e2"), 1), (("e0", "e3"), 2)]


# -- the interval right after a: ``every a = A(f) -> timer:interval(Δ)`` ---------------------

def after_a(name: str) -> st.SearchStrategy[str]:
    """``every a = A(f) -> timer:interval(Δ)`` (or over ``B``) named ``name``."""
    return interval(name, right_after=True)


def after_a_programs(draw: st.DrawFn) -> str:
    """One or two statements, one at least the interval right after a, the other any shape
    of the route (the interval after b, the missing event)."""
    names = draw(st.sampled_from([["P"], ["P", "Q"], ["P", "Q"]]))
    first, *rest = names
    return draw(after_a(first)) + "".join(
        draw(st.one_of(after_a(n), interval(n), batched(n))) for n in rest)


@settings(max_examples=120, deadline=None)
@given(st.data(), stream([0, 1, 2]), st.lists(st.integers(0, 60), max_size=4),
       st.integers(0, 60), st.sampled_from([0, 1, 4]))
def test_after_a_equals_token_path(data, spec, cuts, restore_at, gap) -> None:
    """The interval right after a, alone or beside the route's other shapes: batches cut
    anywhere against the token path (test_esper_absence.check: single events between, time
    passing, a save/restore, rule actions, pending timers, the end)."""
    check_taken(after_a_programs(data.draw), spec, cuts, restore_at, gap)


@settings(max_examples=50, deadline=None)
@given(st.data(), stream([k for k in KEYS if k != 10**20]),
       st.lists(st.integers(0, 60), max_size=4), st.sampled_from([0, 1, 4]))
def test_after_a_over_arrow(data, spec, cuts, gap) -> None:
    """The interval right after a over Arrow batches (rows written, statistics, state,
    timers)."""
    check_arrow(after_a_programs(data.draw), spec, cuts, gap)


AFTER = ("@Name('P')\ninsert into P\nselect a.k as k from pattern [every a = A -> "
         "timer:interval(3 msec)];\n")


def test_pinned_after_a_beside_missing_event() -> None:
    """Hand-derived: P the interval right after a (Δ 3), Q the missing event (Δ 2, NOT
    B(k = a.k)). A(k 0)@0 opens P's 1 (due 3) and Q's 2 (due 2); A(k 1)@1 opens P's 3 (due 4)
    and Q's 4 (due 3). Before C@5: Q e0 at 2, then at 3 P e0 (asked for at row 0) before Q e1
    (row 1), then P e1 at 4 — cut after the first A too (P's 1 then a timer from before the
    batch, Q's 4 the batch's), and with the route's statements in the other order; the
    statistics list Q first (its match came first)."""
    q = ("@Name('Q')\ninsert into Q\nselect a.k as k from pattern [every a = A -> "
         "(timer:interval(2 msec) and not B(k = a.k))];\n")
    spec = [("A", 0, 0, 0.0, 0), ("A", 1, 0, 0.0, 1), ("C", 0, 0, 0.0, 4)]
    want = [("Q", 2, ("e0",), 1), ("P", 3, ("e0",), 2), ("Q", 3, ("e1",), 3),
            ("P", 4, ("e1",), 4)]
    for text in (AFTER + q, q + AFTER):
        prog = program(text)
        for cut in (0, 1, 2):
            for eng in (_kernel_only(Engine(prog, strict_actions=False)),
                        Engine(prog, strict_actions=False, fast_path=False)):
                evs = events(spec)
                out = eng.process_batch(evs[:cut]) + eng.process_batch(evs[cut:])
                assert [(m.type, m.ts, tuple(m.event_refs), m.match_id) for m in out] == want
                # (the counts in the order the first matches came, whatever the engine order)
                assert list(eng.stats.by_pattern.items()) == [("Q", 2), ("P", 2)]


def test_pinned_after_a_zero_interval() -> None:
    """Hand-derived, Δ 0: A(k 0)@0, A(k 1)@0, A(k 2)@1. The first's timer is due at 0 and
    fires before the second A of that instant (timers before events), the second's before
    the third A, the third's only when time passes (``advance_to(1)``): three matches, each
    at its A's time, the id order the A order; the partial match is left open until then."""
    prog = program(AFTER.replace("3 msec", "0 msec"))
    spec = [("A", 0, 0, 0.0, 0), ("A", 1, 0, 0.0, 0), ("A", 2, 0, 0.0, 1)]
    for eng in (_kernel_only(Engine(prog, strict_actions=False)),
                Engine(prog, strict_actions=False, fast_path=False)):
        out = eng.process_batch(events(spec))
        assert [(m.ts, m.params, m.match_id) for m in out] == [(0, (0,), 1), (0, (1,), 2)]
        assert eng.partial_matches() == {"P": 1}
        late = eng.advance_to(1)
        assert [(m.ts, m.params, m.match_id) for m in late] == [(1, (2,), 3)]


def test_after_a_route_takes() -> None:
    """The interval right after a is taken with a filter on ``a``'s own fields, alone or beside
    the other shapes; declined: a distinct every, no every (the token path then), and the
    interval between two events (its end steps the instance: per event, the token path)."""
    assert route("every a = A -> timer:interval(5 msec)")
    assert route("every a = A(v > 1 and x > 0.5) -> timer:interval(0 msec)")
    assert not route("every-distinct(a.k) a = A -> timer:interval(5 msec)")
    assert not route("a = A -> timer:interval(5 msec)")
    assert not route("every a = A -> timer:interval(5 msec) -> b = B(b.k = a.k)")
    assert not route("every a = A -> (timer:interval(5 msec) -> b = B(b.k = a.k)) "
                     "where timer:within(20 msec)")
