"""Esper's missing event, ``every a = A(f) -> (timer:interval(Δ) and not B(g))``, stepped
directly per event (runtime/absence.py) equals the general token path (``fast_path=False``):
the same complex events (parts, parameters, bindings, match ids, times — a match comes when
the instance's timer fires, between events or at ``advance_to``), rule firings, statistics,
saved state and open instances — event by event, through ``process_batch`` cut anywhere, with
time passing between batches, a save/restore in the middle, and beside other statements whose
timers fire at the same instants."""

import itertools

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import (
    KEYS,
    SCHEMA,
    VALUES,
    events,
    fed_columns,
    rows,
    state,
)

from cepflow.language import ast as A
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import StateError, restore_state, save_state

# the NOT's conditions: on the key (the instances of the key's group), on the key and a's or
# its own fields, on no key (every instance), on another key field
NOTS = ["k = a.k", "a.k = k", "k = a.k and v > a.v", "k = a.k and v = 1", "v > 2", "",
        "v = a.v"]
FIRST = ["", "v >= 2", "v < 3 and x > 0.5", "k = 1"]


@st.composite
def absence(draw: st.DrawFn) -> str:
    """``every a = A(f) -> (timer:interval(Δ) and not B(g))`` with a select list or none —
    or, now and then, a neighbour the direct steps decline (the NOT on A's own type, a
    ``where timer:within`` pair) to run beside it."""
    name = draw(st.sampled_from(["P", "Q"]))
    f = draw(st.sampled_from(FIRST))
    g = draw(st.sampled_from(NOTS))
    delta = draw(st.sampled_from([0, 2, 3, 5]))
    neg = draw(st.sampled_from(["B", "B", "B", "A"]))
    select = draw(st.sampled_from(["", "select a.k as k, a.v as v ",
                                   "select a.v + 1 as w, current_timestamp() as t "]))
    if draw(st.integers(0, 5)) == 0:
        return (f"@Name('{name}')\ninsert into {name}\nfrom pattern [every a = A({f}) -> "
                f"b = B(b.k = a.k) where timer:within({delta} msec)];\n")
    return (f"@Name('{name}')\ninsert into {name}\n{select}from pattern [every a = A({f}) -> "
            f"(timer:interval({delta} msec) and not {neg}({g}))];\n")


def stream(keys):
    return st.lists(st.tuples(st.sampled_from(["A", "B", "A", "B", "C"]), st.sampled_from(keys),
                              st.sampled_from(VALUES), st.sampled_from([0.0, 0.7, 1.2]),
                              st.integers(0, 3)), max_size=60)


def program(text: str):
    prog = load_module(parse_epl(SCHEMA + "create schema C(k integer, v integer, x double, "
                                 "s string);\n" + text))
    prog.rules.append(A.RuleDecl("r", tuple(A.PatternRef(a.name) for a in prog.automata),
                                 "rec"))
    return prog


def restored(engine: Engine, fresh) -> Engine:
    """``engine`` saved and restored into ``fresh()`` (itself when JSON cannot hold its
    state: a NaN key), its statistics kept (no part of the saved state)."""
    try:
        saved = save_state(engine)
    except StateError:
        return engine
    again = restore_state(fresh(), saved)
    again.host.stats = engine.stats
    return again


def timers(engine: Engine) -> list:
    """The engine's pending timers (deadline, pattern, token, zone, start), in firing order —
    those of trapped instances too, which fire idle and move the clock."""
    return [h[:2] + h[3:] for h in sorted(engine.host.timers.entries())]


def check(text: str, spec, cuts, restore_at: int, gap: int) -> None:
    """``spec`` event by event and through batches cut at ``cuts`` (a single event between
    them, time advanced up to ``gap`` ms past the batch's last event before the next, the
    direct step and the batch route saved and restored at ``restore_at``) against the token
    path, never stopped, with the same time passing: the same rows, rule firings, statistics,
    state and pending timers, and the same at the end of input."""
    prog = program(text)
    fired: dict[str, list] = {"one": [], "fast": [], "many": []}

    def engine(tag: str, fast_path: bool = True) -> Engine:
        return Engine(prog, actions={"rec": lambda act: fired[tag].append(
            (act.event.type, act.event.match_id, act.event.ts))}, fast_path=fast_path)

    one, fast, many = engine("one", fast_path=False), engine("fast"), engine("many")
    assert all(m.pattern.absence is None for m in one.matchers)
    # (the direct steps take every statement of the shape drawn: the NOT on the other type,
    # no within)
    assert [m.pattern.absence is not None for m in fast.matchers] == [
        "within" not in st and "not " in st
        and st.split("every a = ")[1][0] != st.split("not ")[1][0]
        for st in text.split("@Name(")[1:]]
    evs = [events(spec) for _ in range(3)]
    bounds = sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})
    restore_at = min(restore_at, len(spec))
    got: dict[str, list] = {"one": [], "fast": [], "many": []}
    for n, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        if n % 2 and hi > lo:  # one event on its own between batches
            for tag, eng, ev in (("one", one, evs[0]), ("fast", fast, evs[1]),
                                 ("many", many, evs[2])):
                got[tag] += rows(eng.process(ev[lo]))
            lo += 1
        # (the direct step and the batch route saved and restored in the middle, the token
        # path never: the saved timers keep their order and those that fire idle)
        for a, b in ((lo, restore_at), (restore_at, hi)) if lo <= restore_at < hi else [(lo, hi)]:
            if a == restore_at and b == hi:
                fast = restored(fast, lambda: engine("fast"))
                many = restored(many, lambda: engine("many"))
            got["many"] += rows(many.process_batch(evs[2][a:b]))
            for e0, e1 in zip(evs[0][a:b], evs[1][a:b], strict=True):
                got["one"] += rows(one.process(e0))
                got["fast"] += rows(fast.process(e1))
        if hi > lo and gap:  # time passes: the timers due by then fire between batches
            until = evs[0][hi - 1].ts + gap
            if hi < len(spec):  # (not past the next event: the input stays in time order)
                until = min(until, evs[0][hi].ts)
            for tag, eng in (("one", one), ("fast", fast), ("many", many)):
                got[tag] += rows(eng.advance_to(until))
    assert got["fast"] == got["one"]
    assert got["many"] == got["one"]
    assert fired["fast"] == fired["one"] and fired["many"] == fired["one"]
    assert fast.stats == one.stats and many.stats == one.stats
    # (the patterns' counts in the order their first match came, as reports list them)
    assert list(many.stats.by_pattern) == list(one.stats.by_pattern)
    assert state(fast) == state(one) and state(many) == state(one)
    assert fast.partial_matches() == one.partial_matches() == many.partial_matches()
    if all(m.pattern.absence is not None for m in fast.matchers):  # (a pair queues its own)
        assert timers(fast) == timers(one) and timers(many) == timers(one)
    closed = rows(one.finish(close_windows=True))
    assert rows(fast.finish(close_windows=True)) == closed
    assert rows(many.finish(close_windows=True)) == closed


@settings(max_examples=120, deadline=None)
@given(st.lists(absence(), min_size=1, max_size=2), stream([0, 1, 2]),
       st.lists(st.integers(0, 60), max_size=4), st.integers(0, 60), st.sampled_from([0, 1, 4]))
# (two statements' instances due at the same instant: the matches in the engine's timer order
# — P's and Q's interleaved by when they were asked for, not one statement's first)
@example(["@Name('P')\ninsert into P\nfrom pattern [every a = A() -> "
          "(timer:interval(3 msec) and not B(k = a.k))];\n",
          "@Name('Q')\ninsert into Q\nfrom pattern [every a = A(v >= 2) -> "
          "(timer:interval(3 msec) and not B(v > 2))];\n"],
         [("A", 0, 2, 0.0, 0), ("A", 1, 0, 0.0, 0), ("A", 1, 3, 0.0, 1), ("B", 1, 1, 0.0, 1),
          ("A", 2, 2, 0.0, 2), ("B", 0, 3, 0.0, 3), ("C", 0, 0, 0.0, 3)], [2, 5], 3, 1)
# (P's instances 1 and 3 and Q's 2 all due at 3, none trapped: P 1, Q 2, P 3 — a statement's
# deadlines queued behind one timer, as the pair's are, would give P 1, P 3, Q 2)
@example(["@Name('P')\ninsert into P\nfrom pattern [every a = A() -> "
          "(timer:interval(3 msec) and not B(k = a.k))];\n",
          "@Name('Q')\ninsert into Q\nfrom pattern [every a = A(v >= 2) -> "
          "(timer:interval(3 msec) and not B(v > 2))];\n"],
         [("A", 0, 2, 0.0, 0), ("A", 1, 0, 0.0, 0), ("C", 1, 0, 0.0, 1), ("B", 1, 1, 0.0, 3),
          ("A", 2, 2, 0.0, 1)], [], 0, 0)
def test_absence_equals_token_path(stmts, spec, cuts, restore_at, gap) -> None:
    names = [s.split("'")[1] for s in stmts]
    if len(set(names)) != len(names):
        stmts = stmts[:1]
    check("".join(stmts), spec, cuts, restore_at, gap)


@settings(max_examples=40, deadline=None)
@given(absence(), stream(KEYS), st.lists(st.integers(0, 60), max_size=2), st.integers(0, 60))
# (a NaN key: a B of "the same" NaN unifies with nothing, so it traps no instance)
@example("@Name('P')\ninsert into P\nfrom pattern [every a = A() -> "
         "(timer:interval(3 msec) and not B(k = a.k))];\n",
         [("A", KEYS[8], 0, 0.0, 0), ("B", KEYS[8], 0, 0.0, 1), ("A", 1, 0, 0.0, 0),
          ("B", 1.0, 0, 0.0, 1), ("A", "1", 0, 0.0, 0), ("B", True, 0, 0.0, 1)], [], 0)
def test_absence_with_mixed_keys(stmt, spec, cuts, restore_at) -> None:
    """Keys that unify across types (1, 1.0, True), that never unify (NaN), strings, None."""
    check(stmt, spec, cuts, restore_at, 0)


def test_shape_is_stepped_directly() -> None:
    """The direct steps take the missing event (keyed or not, with filters) and decline what
    they do not do as the token path does: the NOT on A's own type, a within pair, a
    distinct ``every``, a leading interval."""
    def shape(pattern: str):
        prog = program(f"@Name('P')\ninsert into P\nfrom pattern [{pattern}];\n")
        return Engine(prog, strict_actions=False).matchers[0].pattern.absence

    ab = shape("every a = A(v > 1) -> (timer:interval(5 msec) and not B(k = a.k, v > a.v))")
    assert ab is not None and (ab.first.type, ab.forbid_type, ab.window) == ("A", "B", 5.0)
    assert shape("every a = A -> (timer:interval(5 msec) and not B)") is not None
    assert shape("every a = A -> (timer:interval(5 msec) and not A(k = a.k))") is None
    assert shape("every a = A -> b = B(k = a.k) where timer:within(5 msec)") is None
    assert shape("every-distinct(a.k) a = A -> (timer:interval(5 msec) and not B(k = a.k))"
                 ) is None
    assert shape("every timer:interval(5 msec) -> (timer:interval(5 msec) and not B)") is None
    assert shape("every a = A -> b = B(k = a.k) -> timer:interval(5 msec)") is None


def test_pinned_missing_event() -> None:
    """Hand-derived: Δ = 10 ms. A(k=1)@0 and A(k=2)@2; B(k=1)@5 ends the first; the second's
    timer fires at 12, before the B(k=2) of that very instant (Esper's timers come first), so
    it is a match at 12 with its id the next one; A(k=2)@12 opens again, B(k=2)@15 ends it;
    A(k=3)@20 is still waiting when time passes to 29 and matches at 30 only with
    ``advance_to(30)``."""
    prog = program("@Name('P')\ninsert into P\nselect a.k as k from pattern [every a = A -> "
                   "(timer:interval(10 msec) and not B(k = a.k))];\n")
    spec = [("A", 1, 0, 0.0, 0), ("A", 2, 0, 0.0, 2), ("B", 1, 0, 0.0, 3),
            ("B", 2, 0, 0.0, 7), ("A", 2, 0, 0.0, 0), ("B", 2, 0, 0.0, 3),
            ("A", 3, 0, 0.0, 5)]
    for eng in (Engine(prog, strict_actions=False),
                Engine(prog, strict_actions=False, fast_path=False)):
        out = eng.process_batch(events(spec))
        assert [(m.ts, m.params, tuple(m.event_refs)) for m in out] == [(12, (2,), ("e1",))]
        assert eng.advance_to(29) == []
        late = eng.advance_to(30)
        assert [(m.ts, m.params, tuple(m.event_refs)) for m in late] == [(30, (3,), ("e6",))]
        assert late[0].match_id > out[0].match_id


# -- the batch route (runtime/kernels/timer_end.py) -----------------------------------------

# the NOTs the batch route takes: none, one of a's variables (the key, another field), a
# filter on B's own fields
TAKEN_NOTS = ["k = a.k", "a.k = k", "k = a.k and v = 1", "v > 2", "", "v = a.v",
              "k = a.k and x > 0.5", "x > 0.5"]


@st.composite
def batched(draw: st.DrawFn, name: str) -> str:
    """A missing-event statement the batch route takes: ``A`` then the NOT on ``B``, or the
    other way round (two statements then open instances on different rows)."""
    first, neg = draw(st.sampled_from([("A", "B"), ("A", "B"), ("B", "A")]))
    f = draw(st.sampled_from(FIRST))
    g = draw(st.sampled_from(TAKEN_NOTS))
    delta = draw(st.sampled_from([0, 1, 2, 3, 5]))
    select = draw(st.sampled_from(["", "select a.k as k, a.v as v ",
                                   "select a.v + 1 as w, current_timestamp() as t "]))
    return (f"@Name('{name}')\ninsert into {name}\n{select}from pattern [every a = {first}({f}) "
            f"-> (timer:interval({delta} msec) and not {neg}({g}))];\n")


def batch_program(draw: st.DrawFn) -> str:
    return "".join(draw(batched(n)) for n in draw(st.sampled_from([["P"], ["P", "Q"]])))


@settings(max_examples=150, deadline=None)
@given(st.data(), stream([0, 1, 2]), st.lists(st.integers(0, 60), max_size=4),
       st.integers(0, 60), st.sampled_from([0, 1, 4]))
def test_batch_route_equals_token_path(data, spec, cuts, restore_at, gap) -> None:
    """Programs the batch route takes whole (Engine._timer_ends): batches cut anywhere against
    the token path event by event (check: single events between, time passing between
    batches, a save/restore in the middle, rule actions, the end of input)."""
    check_taken(batch_program(data.draw), spec, cuts, restore_at, gap)


def check_taken(text: str, spec, cuts, restore_at: int, gap: int) -> None:
    """:func:`check` of a program the batch route takes whole (Engine._timer_ends)."""
    assert Engine(program(text), strict_actions=False)._timer_ends is not None
    check(text, spec, cuts, restore_at, gap)


@settings(max_examples=80, deadline=None)
@given(st.data(), stream([k for k in KEYS if k != 10**20]),  # (Arrow's int64 holds no 10**20)
       st.lists(st.integers(0, 60), max_size=4), st.sampled_from([0, 1, 4]))
def test_batch_route_over_arrow(data, spec, cuts, gap) -> None:
    """The batch route over Arrow batches (check_arrow)."""
    check_arrow(batch_program(data.draw), spec, cuts, gap)


def check_arrow(text: str, spec, cuts, gap: int) -> None:
    """The batch route over Arrow batches of the file job's layout (Engine.process_columns:
    events made only for the rows of matches and open instances; a batch it declines — a NaN
    key, a failing filter — fed as events, as the file job does), time passing between them:
    the same complex events, rows written, statistics, saved state and pending timers as the
    token path event by event."""
    from cepflow.spark.columns import encode_matches

    prog = program(text)  # (its rule's action not registered: counted)
    one = Engine(prog, strict_actions=False, fast_path=False)
    many = Engine(prog, strict_actions=False)
    assert many.columnar and many._timer_ends is not None
    arities = {"A": 4, "B": 4, "C": 4}

    def numbered() -> list:  # (the readers number the rows the layout carries)
        evs = events(spec)
        for i, e in enumerate(evs):
            e.seq = i
        return evs

    ref, got, written = [], [], []
    e1, e2 = numbered(), numbered()
    for lo, hi in itertools.pairwise(sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})):
        for e in e1[lo:hi]:
            ref += one.process(e)
        found, made = fed_columns(many, e2[lo:hi], arities)
        got += found
        written += made
        if gap:
            until = e1[hi - 1].ts + gap if hi == len(spec) else min(e1[hi - 1].ts + gap,
                                                                      e1[hi].ts)
            late, early = one.advance_to(until), many.advance_to(until)
            ref += late
            got += early
            written += encode_matches(early).to_pylist() if early else []
    assert rows(got) == rows(ref)
    assert written == (encode_matches(ref).to_pylist() if ref else [])
    assert many.stats == one.stats
    assert state(many) == state(one)
    assert timers(many) == timers(one)


def _kernel_only(eng: Engine) -> Engine:
    """``eng`` (a fast-path engine), whose batches the route must take: one it declines
    fails the test (Engine._one_by_one raises)."""
    def refuse(events, out):
        raise AssertionError("the batch went event by event")
    eng._one_by_one = refuse  # type: ignore[method-assign]
    return eng


P3 = ("@Name('P')\ninsert into P\nselect a.k as k from pattern [every a = A -> "
      "(timer:interval(3 msec) and not B(k = a.k))];\n")
Q1 = ("@Name('Q')\ninsert into Q\nselect a.k as k from pattern [every a = A -> "
      "(timer:interval(1 msec) and not B(v > 2))];\n")


def test_pinned_timers_of_two_batches_at_one_instant() -> None:
    """Hand-derived, P (Δ 3) before Q (Δ 1). Batch 1: A(k 0)@0 opens P's 1 and Q's 2.
    Batch 2: Q's 2 fires at 1, before A(k 1)@2, which opens P's 3 (due 5) and Q's 4 (due 3);
    before C@3 fire P's 1 — asked for in batch 1 — then Q's 4; before C@6 P's 3. So the
    matches Q e0@1, P e0@3, Q e1@3, P e1@5 with ids 1 to 4: an instance from before the batch
    first at a shared instant (sorting the batch's before it, or by pattern, gives another
    order)."""
    prog = program(P3 + Q1)
    spec = [("A", 0, 0, 0.0, 0), ("A", 1, 0, 0.0, 2), ("C", 0, 0, 0.0, 1), ("C", 0, 0, 0.0, 3)]
    ref = Engine(prog, strict_actions=False, fast_path=False)
    want = [m for e in events(spec) for m in ref.process(e)]
    eng = _kernel_only(Engine(prog, strict_actions=False))
    evs = events(spec)
    got = eng.process_batch(evs[:1]) + eng.process_batch(evs[1:])
    assert [(m.type, m.ts, tuple(m.event_refs), m.match_id) for m in got] == [
        ("Q", 1, ("e0",), 1), ("P", 3, ("e0",), 2), ("Q", 3, ("e1",), 3),
        ("P", 5, ("e1",), 4)]
    assert rows(got) == rows(want)


def test_pinned_trapped_timer_moves_the_clock() -> None:
    """Hand-derived, P (Δ 3): A(k 0)@0 opens an instance, B(k 0)@1 traps it; its timer stays
    and fires idle at 3, so time passing to 10 moves the clock to 3 (not 10: the engine's
    clock moves to what fires), as the token path's; a B at the deadline's instant does not
    trap (A(k 1)@4, B(k 1)@7: the match at 7 comes first)."""
    prog = program(P3)
    for eng in (_kernel_only(Engine(prog, strict_actions=False)),
                Engine(prog, strict_actions=False, fast_path=False)):
        assert eng.process_batch(events([("A", 0, 0, 0.0, 0), ("B", 0, 0, 0.0, 1)])) == []
        assert eng.advance_to(10) == [] and eng.time == 3
        out = eng.process_batch(events([("A", 1, 0, 0.0, 10), ("B", 1, 0, 0.0, 3),
                                        ("C", 1, 0, 0.0, 0)]))
        assert [(m.ts, m.params, m.match_id) for m in out] == [(13, (1,), 1)]


def test_pinned_rule_order() -> None:
    """Hand-derived: a rule on P's matches and one on C events, both with actions. Per event
    a timer's match fires its rule before the event it fired before: A(k 0)@0, C@3 (P's
    timer due at 3 first), C@4 — the firings P, C, C through the batch route too."""
    prog = program(P3)
    prog.rules.append(A.RuleDecl("c", (A.PatternRef("C"),), "rec"))
    for fast in (True, False):
        fired: list = []
        eng = Engine(prog, actions={"rec": lambda act, f=fired: f.append(act.event.type)},
                     fast_path=fast)
        if fast:
            _kernel_only(eng)
        eng.process_batch(events([("A", 0, 0, 0.0, 0), ("C", 0, 0, 0.0, 3),
                                  ("C", 0, 0, 0.0, 1)]))
        assert fired == ["P", "C", "C"]


def test_pinned_timers_left_at_one_instant() -> None:
    """Hand-derived, P and Q both Δ 3 over A: A@0 (P's 1, Q's 2), A@0 (P's 3, Q's 4) in one
    batch, all due at 3 after it; time passing to 3 fires them as asked for — P e0, Q e0,
    P e1, Q e1 —, not one statement's after the other's."""
    prog = program(P3 + Q1.replace("1 msec", "3 msec"))
    eng = _kernel_only(Engine(prog, strict_actions=False))
    assert eng.process_batch(events([("A", 0, 0, 0.0, 0), ("A", 1, 0, 0.0, 0)])) == []
    assert [(m.type, tuple(m.event_refs), m.match_id) for m in eng.advance_to(3)] == [
        ("P", ("e0",), 1), ("Q", ("e0",), 2), ("P", ("e1",), 3), ("Q", ("e1",), 4)]


def test_batch_route_takes() -> None:
    """Which programs the batch route takes whole (Engine._timer_ends): missing events whose
    filters read only their events, the NOT binding nothing or one of a's variables; not a
    NOT filter reading a's fields (its truth is per instance), a NOT binding two variables,
    a program beside another shape (the NOT on A's own type: the token path)."""
    def route(text: str) -> bool:
        return Engine(program(text), strict_actions=False)._timer_ends is not None

    def stmt(g: str, name: str = "P", f: str = "") -> str:
        return (f"@Name('{name}')\ninsert into {name}\nfrom pattern [every a = A({f}) -> "
                f"(timer:interval(3 msec) and not B({g}))];\n")

    for g in TAKEN_NOTS:
        assert route(stmt(g, f="v >= 2"))
    assert route(stmt("k = a.k") + stmt("", "Q"))
    assert not route(stmt("k = a.k and v > a.v"))
    assert not route(stmt("k = a.k and v = a.v"))
    assert not route(stmt("k = a.k") + stmt("k = a.k", "Q").replace("not B", "not A"))
    # (and that one, per event, is what the token path gives: B's v above a's traps)
    spec = [("A", 0, 0, 0.0, 0), ("B", 0, 1, 0.0, 1), ("A", 0, 1, 0.0, 0), ("B", 0, 1, 0.0, 1),
            ("C", 0, 0, 0.0, 5)]
    prog = program(stmt("k = a.k and v > a.v"))
    for fast in (True, False):
        out = Engine(prog, strict_actions=False, fast_path=fast).process_batch(events(spec))
        assert [tuple(m.event_refs) for m in out] == [("e2",)]
