"""The restarted and kernel (runtime/kernels/restarted_and.py, in the program split): EPL's
``every ((a = A(f) and b = B(g[, key])) where timer:within(Δ))`` and ``every ((a = A(f) -> b =
B(g[, key])) where timer:within(Δ))``, whose guard restarts with the instance
(EvalEveryStateNode, EvalGuardStateNode: each instance's window runs from its restart — the
statement's start, the row that completed the one before, or the deadline of the
one before — not from its first event; docs/esper.md). Against the per-event engine (the
pattern's clock, runtime.interval_clock): hand-derived streams pinned with their saved state
(token ids of the quiet stretch's restarts, the clock due after the last row), and random
statements of that shape over random streams — the same complex events (parameters, parts,
bindings, match ids), statistics, open instances, saved state and end of input, batches cut
anywhere with single events and a save/restore between them, ``Engine.run``, Arrow batches
through ``Engine.process_columns`` and time passing after a batch."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_alternatives import C_SCHEMA, TYPES, check_arrow, check_run, stream
from tests.esper.test_esper_kernel import FILTERS
from tests.esper.test_split import check_split, check_time_passing, keyed_others, program

import cepflow.runtime.kernels.split as split_module
from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import restore_state, save_state


@st.composite
def guarded_ands(draw: st.DrawFn) -> str:
    """``every ((a = T(f) and b = U(g[, key])) where timer:within(Δ))``, ``T`` and ``U``
    distinct (of one type the shape is declined: per event), Δ of a few of the streams'
    steps (0-3 ms), the guard written inside or outside the every's parentheses; or the
    followed-by ``every ((a = T(f) -> b = U(g[, key])) where timer:within(Δ))``, ``T`` and
    ``U`` perhaps one type (EsperAnd.followed)."""
    ta, tb = draw(st.permutations(TYPES))[:2]
    followed = draw(st.booleans())
    if followed and draw(st.booleans()):
        tb = ta
    x, y = draw(st.permutations(["a", "b"]))  # (y, written second, unifies with x)
    f = draw(st.sampled_from(["", "", *FILTERS])).format(a=x)
    g = draw(st.sampled_from(["", "", *FILTERS])).format(a=y)
    key = draw(st.sampled_from([f"{x}.k = {y}.k", f"k = {x}.k", ""]))
    g = f"({g}) and {key}" if g and key else g or key
    select = draw(st.sampled_from(["", "select a.v as av, b.x as bx, current_timestamp() as t ",
                                   "select b.k as bk, a.s as s, 'lit' as c, a.k as ak "]))
    within = draw(st.sampled_from([1, 2, 3, 5, 10]))
    body = f"{x} = {ta}({f}) {'->' if followed else 'and'} {y} = {tb}({g})"
    pattern = draw(st.sampled_from([f"every (({body}) where timer:within({within} msec))"]
                                   + ([] if followed else
                                      [f"every ({body}) where timer:within({within} msec)"])))
    name = draw(st.sampled_from(["P", "Q"]))
    return f"@Name('{name}')\ninsert into {name}\n{select}from pattern [{pattern}];\n"


def prog_of(stmt: str, others: list[str] = ()):
    prog = program([C_SCHEMA + stmt], list(others))
    m = Engine(prog).matchers[0]
    assert m.pattern.esper_and is not None and m.pattern.esper_and.clocked is not None
    return prog


@settings(max_examples=150, deadline=None)
@given(guarded_ands(), stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=4),
       st.integers(0, 70))
def test_restarted_and_equals_event_by_event(stmt, spec, cuts, restore_at) -> None:
    """Through the split alone (the kernel plans it): batches cut anywhere, single events
    between them, a save/restore in the middle."""
    prog = prog_of(stmt)
    assert [m.name for m in Engine(prog)._split] == [stmt.split("'")[1]]
    check_split(prog, spec, cuts, restore_at)


#: statements beside the kernel that take token ids at input rows only — per event (an until,
#: an or of a sequence, each reading C and one of A, B; over the kernel's output), in other
#: kernels (an and; keyed_others) —: the kernel runs beside them (not where each of its types
#: is read per event: split._all_stepped); and statements that take ids or keep saved timers as time
#: passes (a clock at the start, a missing event, a timer in the middle, a pattern over a time
#: window's rows): beside those it does not (split._restarts_alone)
BESIDE = [
    "@Name('U4')\ninsert into U4\nfrom pattern [every x = C(x.v > 0) -> y = A(y.k = x.k) "
    "until z = C(z.k = x.k)];\n",
    "@Name('O4')\ninsert into O4\nfrom pattern [every x = C(x.v > 0) -> (y = B(y.k = x.k) or "
    "z = C(z.k = x.k) -> w = C)];\n",
    "@Name('S3')\ninsert into S3\nfrom pattern [every x = A(x.v > 0) -> y = B(y.k = x.k) -> "
    "z = C(z.k = x.k)];\n",
    "@Name('OP')\ninsert into OP\nfrom pattern [every p = P -> "
    "y = C(y.v > 1)];\n",
    "@Name('OA')\ninsert into OA\nfrom pattern [every (x = A(x.v > 1) and y = C(y.k = x.k))];\n",
]
TIMED = [
    "@Name('TI')\ninsert into TI\nfrom pattern [timer:interval(2 msec) -> x = C];\n",
    "@Name('NB')\ninsert into NB\nfrom pattern [every x = C -> (timer:interval(2 msec) and "
    "not B(k = x.k))];\n",
    "@Name('TM')\ninsert into TM\nfrom pattern [every x = C -> timer:interval(1 msec) -> "
    "y = A(y.k = x.k)];\n",
    "@Name('TW')\ninsert into TW\nselect count(*) as c\nfrom C.win:time(2 msec);\n"
    "@Name('OW')\ninsert into OW\nfrom pattern [every w = TW(w.c > 1) -> x = A];\n",
]


@settings(max_examples=150, deadline=None)
@given(guarded_ands(), st.lists(st.sampled_from(BESIDE), max_size=2, unique=True),
       keyed_others(0), st.lists(st.sampled_from(TIMED), max_size=1), st.booleans(),
       stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
@example("@Name('P')\ninsert into P\nfrom pattern [every ((a = A() and b = B(a.k = b.k)) "
         "where timer:within(1 msec))];\n", BESIDE[:1], [], [], False,
         [("A", 0, 1, 0.0, 0), ("C", 0, 1, 0.0, 3), ("A", 0, 1, 0.0, 1), ("B", 0, 1, 0.0, 0)],
         [], 0)  # (the restarts at 1, 2, 3 take ids before U4's at C@3, a stepped row)
def test_beside_other_statements(stmt, beside, others, timed, after, spec, cuts,
                                 restore_at) -> None:
    """Beside patterns that take their token ids at input rows (per event, in other kernels,
    over its output) the kernel runs, its restarts' ids ahead of the ids of the row after them
    (``after``: the kernel's statement after another one, its step later at a row); beside a
    statement that takes ids or keeps saved timers as time passes it does not — per event, the
    same answer either way (ids, state, batches cut anywhere, save/restore)."""
    if after and beside and "= P" not in beside[0]:
        prog = program([C_SCHEMA + beside[0], stmt], [*beside[1:], *others, *timed])
    else:
        prog = prog_of(stmt, [*beside, *others, *timed])
    engine = Engine(prog)
    mine = next(m for m in engine.matchers if m.name == stmt.split("'")[1])
    check_taken(engine, mine, bool(timed))
    check_split(prog, spec, cuts, restore_at)


def check_taken(engine: Engine, mine, timed: bool) -> None:
    """The clocked kernel pattern ``mine`` is in the split exactly where nothing else takes
    ids or keeps saved timers as time passes and not each of its types is stepped anyway."""
    taken = engine._split is not None and mine in engine._split
    alone = split_module._restarts_alone(engine, mine)
    assert not taken or alone
    assert not timed or not taken
    if not timed and alone and not split_module._all_stepped(
            engine, mine, [*(engine._split or []), mine]):
        assert taken


@settings(max_examples=100, deadline=None)
@given(guarded_ands(), stream([0, 1, 2, 1.0, True, "1", None, float("nan")]),
       st.integers(1, 30), st.integers(0, 70), st.lists(st.integers(0, 70), max_size=3),
       st.sampled_from([0, 1, 2, 2.5, 3, 4, 50]))
def test_run_columns_and_time_passing(stmt, spec, batch, restore_at, cuts, later) -> None:
    """``Engine.run`` in batches with a save/restore against the fast per-event steps and the
    general token path; Arrow batches through ``Engine.process_columns`` (rows written too);
    a batch then ``advance_to`` (the restarts of a quiet stretch, the timers of completed
    instances firing idle). Keys that unify across types, text, None and NaN (a batch with a
    NaN key goes event by event)."""
    check_routes(prog_of(stmt), spec, batch, restore_at, cuts, later)


#: the arguments of check_routes after the program, for the kernels' own tests: a stream of
#: keys of any value, a batch size, where to restore, the Arrow cuts, the time passing after
ROUTE_ARGS = (stream([0, 1, 2, 1.0, True, "1", None, float("nan")]), st.integers(1, 30),
              st.integers(0, 70), st.lists(st.integers(0, 70), max_size=3),
              st.sampled_from([0, 1, 3, 50]))


def check_routes(prog, spec, batch: int, restore_at: int, cuts, later) -> None:
    """``Engine.run`` in batches of ``batch`` with a save/restore at ``restore_at`` against
    per event and the token path, Arrow batches cut at ``cuts``, then time passing ``later``
    after one batch."""
    check_run(prog, spec, batch, restore_at)
    check_arrow(prog, spec, cuts)
    check_time_passing(prog, spec, later)


SCHEMAS = "".join(f"create schema {t}(k int, v int);\n" for t in "ABC")
KEYED = "every (a=A and b=B(b.k = a.k)) where timer:within(2 sec)"
FOLLOWED = "every ((a=A -> b=B(b.k = a.k)) where timer:within(2 sec))"


def _engine(body: str, start: float | None = 0) -> Engine:
    prog = load_module(parse_epl(SCHEMAS + f"@Name('P') select * from pattern [{body}];\n"))
    return Engine(prog, start=start)


def _events(text: str) -> list[Event]:
    """``"B1@1500 A2@1900"``: type, key, ms; ``v`` the event's place in the stream."""
    out = []
    for i, tok in enumerate(text.split()):
        name, ts = tok.split("@")
        out.append(Event(name[0], (int(name[1:] or 0), i), int(ts)))
    return out


#: (pattern, stream, matches as (ms, (a.v, b.v)), token ids taken, the clock due at the end
#: (None: an instance open), the deadlines left in the timer queue as (token, ms)) — worked
#: out by hand from the state nodes: windows from the restart at 0, at each completion's row
#: and at each deadline, one instance per Δ through a quiet stretch
PINNED = [
    # 0-2 s: B1@1.5 first, no A of key 1 before 2 s (A2 is another key): ended at 2 s (the
    # window from its first event would take A1@2.1); 2-4 s: A1@2.1, B1@3 completes; from 3 s
    # nothing until 5 s, 5-7 s nothing, 7-9 s: A1@7.3, B1@8.1 completes — the clock is due
    # at 8.1 s (the next instance), instance 5's deadline 9 s left in the queue
    (KEYED, "B1@1500 A2@1900 A1@2100 B1@3000 A1@7300 B1@8100",
     [(3000, (2, 3)), (8100, (4, 5))], 5, 8100, [(-2, 8100.0), (5, 9000.0)]),
    # a later event of a completion's instant is the next instance's: 0-2 s A1@0, B1@1 s;
    # from 1 s the second B1@1 s, then A1@2 s (its deadline 3 s); from 2 s the second A1@2 s,
    # B1@2.5 s; the deadlines of 3 s and 4 s stay queued behind the clock
    (KEYED, "A1@0 B1@1000 B1@1000 A1@2000 A1@2000 B1@2500",
     [(1000, (0, 1)), (2000, (3, 2)), (2500, (4, 5))], 3, 2500,
     [(-2, 2500.0), (2, 3000.0), (3, 4000.0)]),
    # an instance open at the end, holding its first: 0-2 s A1@0.1 ended (B1@2.1 too late);
    # from 2 s B1@2.1 waits (A0@2.2 is another key): only its deadline is queued
    (KEYED, "A1@100 B0@900 A0@1500 B1@2100 A0@2200", [], 2, None, [(2, 4000.0)]),
    # the followed-by: 0-2 s A1@1.5 (B1@0.5 before it counts for nothing), B1@2.5 too late
    # (the window from A1 would take it); 2-4 s A1@2.6, B2 another key, B1@4.1 too late;
    # 4-6 s A1@4.2, B1@5.999 completes
    (FOLLOWED, "B1@500 A1@1500 B1@2500 A1@2600 B2@3000 B1@4100 A1@4200 B1@5999",
     [(5999, (6, 7))], 3, 5999, [(-2, 5999.0), (3, 6000.0)]),
    # one type: the A of a's key after a completes (A2 another key); the later A of the
    # completion's instant begins the next instance (0.3-2.3 s), which A1@2.4 is too late
    # for; 2.3-4.3 s A1@2.4, A1@2.5
    ("every ((a=A -> b=A(b.k = a.k)) where timer:within(2 sec))",
     "A1@100 A2@200 A1@300 A1@300 A1@2400 A1@2500", [(300, (0, 2)), (2500, (4, 5))], 3,
     2500, [(-2, 2500.0), (3, 4300.0)]),
]


@pytest.mark.parametrize(("body", "text", "want", "tokens", "clock", "queue"), PINNED)
def test_pinned(body, text, want, tokens, clock, queue) -> None:
    evs = _events(text)

    def seen(found: list) -> list:
        return [(ce.ts, tuple(v for k, v in sorted(ce.bindings.items()) if k.endswith(".v")))
                for ce in found]

    one = _engine(body)
    ref = [ce for e in evs for ce in one.process(e)]
    assert seen(ref) == want
    saved = save_state(one)
    assert saved["counters"]["token"] == tokens
    assert saved["clocks"]["intervals"]["P"] == clock
    q = saved["timers"].get("queue", {"token": [], "deadline": []})
    assert list(zip(q["token"], q["deadline"], strict=True)) == queue
    for cut in range(len(evs) + 1):  # (one batch, or two with a save/restore between)
        many = _engine(body)
        got = list(many.run(evs[:cut]))
        many = restore_state(_engine(body), json.loads(json.dumps(save_state(many))))
        got += many.run(evs[cut:])
        assert [(ce.ts, ce.match_id, ce.params) for ce in got] == [
            (ce.ts, ce.match_id, ce.params) for ce in ref]
        assert save_state(many) == saved


def test_the_kernel_plans_the_batches(monkeypatch) -> None:
    """``Engine.run`` over the pinned streams plans every batch (none declined) — before the
    statement started too (the first event starts it) — and the stream ends where per event."""
    planned: list[bool] = []
    real = split_module.plan_restarted_and

    def spy(m, cols):
        plan = real(m, cols)
        planned.append(plan is not None)
        return plan

    monkeypatch.setattr(split_module, "plan_restarted_and", spy)
    for body, text, *_ in PINNED:
        for start in (0, None):
            evs = _events(text)
            one = _engine(body, start)
            ref = [ce for e in evs for ce in one.process(e)]
            many = _engine(body, start)
            got = [*many.run(evs[:3]), *many.run(evs[3:])]
            assert [(ce.ts, ce.match_id) for ce in got] == [(ce.ts, ce.match_id) for ce in ref]
            assert save_state(many) == save_state(one)
    assert planned and all(planned)


def test_what_the_shape_declines() -> None:
    """Operands of one type of the and (an event both at once), a guard on one event (``every
    a=A``), a guard followed by more, a followed-by of three or whose filter reads ``a``
    (per event)."""
    for body in ["every (a=A(a.v > 5) and b=A(b.k = a.k, b.v < 7)) where timer:within(1 sec)",
                 "every ((a=A and b=B) where timer:within(1 sec)) -> c=C",
                 "every ((a=A -> b=B) where timer:within(1 sec)) -> c=C",
                 "every ((a=A -> b=B -> c=C) where timer:within(1 sec))",
                 "every ((a=A -> b=B(b.v > a.v)) where timer:within(1 sec))",
                 "every (a=A where timer:within(1 sec))"]:
        sh = _engine(body).matchers[0].pattern.esper_and
        assert sh is None or sh.clocked is None, body


@pytest.mark.parametrize("start", [0, 50, 55, 100, 1000])
@pytest.mark.parametrize("body", [KEYED, FOLLOWED])
def test_a_statement_started_after_the_first_rows(body, start) -> None:
    """``Engine(start=…)`` later than the first rows: the first instance begins at the start
    (its clock's timer fires before the first row at or after it) and sees none of the rows
    before — found by hand: the kernel walked them from the first row (A@50 B@60 matched
    with the start at 100). Batches cut anywhere, the first perhaps wholly before the start
    (the clock stays due as it was asked for)."""
    body = body.replace("2 sec", "100 msec")
    evs = _events("A1@50 B1@60 A1@120 B1@130 A1@130 B1@1200 A1@1250 B1@1260")
    one = _engine(body, start)
    ref = [(ce.ts, ce.match_id, ce.params) for e in evs for ce in one.process(e)]
    for cut in range(len(evs) + 1):
        many = _engine(body, start)
        got = [*many.run(evs[:cut]), *many.run(evs[cut:])]
        assert [(ce.ts, ce.match_id, ce.params) for ce in got] == ref
        assert save_state(many) == save_state(one)
