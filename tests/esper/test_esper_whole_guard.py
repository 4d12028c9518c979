"""The kernel of Esper's ``(every a = A(f)) where timer:within(Δ)`` (runtime/kernels/whole.py,
in the program split; Zone.whole): the guard at the top of the pattern starts with the
statement and quits everything when its timer fires (EvalGuardStateNode), the every restarting
its child after each result until then (EvalEveryStateNode) — per event a zero clock at the
start begins one instance (a token id ahead of the first row at or after the start), which
forks a match per event passing the filter (a token id each) until the deadline. Against the
per-event engine: a hand-derived stream pinned with its saved state, random statements over
random streams — batches cut anywhere with single events and a save/restore between them,
alone and beside other statements (per event, other kernels, the restarted and; beside
statements that take ids or keep saved timers as time passes it stays per event),
``Engine.run`` against the token path, Arrow batches, time passing, statements started
after the first rows — and a spy that the kernel plans the batches."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_alternatives import C_SCHEMA, TYPES, stream
from tests.esper.test_esper_each import _events
from tests.esper.test_esper_kernel import FILTERS
from tests.esper.test_esper_restarted_and import (
    BESIDE,
    ROUTE_ARGS,
    TIMED,
    check_routes,
    check_taken,
    guarded_ands,
)
from tests.esper.test_split import check_split, keyed_others, program

import cepflow.runtime.kernels.split as split_module
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.shapes import esper_whole_of
from cepflow.runtime.state import save_state


@st.composite
def wholes(draw: st.DrawFn) -> str:
    """``(every x = T(f)) where timer:within(Δ)``, Δ of a few of the streams' steps (1-40 ms:
    the deadline inside the stream or after it), a select list of x's fields, none, or the
    match's time."""
    t = draw(st.sampled_from(TYPES))
    f = draw(st.sampled_from(["", *FILTERS, "{a}.k = 1"])).format(a="x")
    within = draw(st.sampled_from([1, 2, 3, 5, 10, 20, 40]))
    select = draw(st.sampled_from(["", "select x.v as v, x.k as k ",
                                   "select x.x as xx, current_timestamp() as t, 'lit' as c "]))
    name = draw(st.sampled_from(["P", "Q"]))
    return (f"@Name('{name}')\ninsert into {name}\n{select}from pattern "
            f"[(every x = {t}({f})) where timer:within({within} msec)];\n")


def prog_of(stmt: str, others: list[str] = ()):
    prog = program([C_SCHEMA + stmt], list(others))
    assert esper_whole_of(Engine(prog).matchers[0].pattern) is not None, stmt
    return prog


@settings(max_examples=200, deadline=None)
@given(wholes(), st.lists(st.sampled_from(BESIDE), max_size=2, unique=True), keyed_others(0),
       st.lists(st.sampled_from(TIMED), max_size=1), stream([0, 1, 2]),
       st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
@example("@Name('P')\ninsert into P\nfrom pattern [(every x = B()) where timer:within(5 msec)];\n",
         BESIDE[:1], [], [], [("C", 0, 1, 0.0, 0), ("B", 0, 1, 0.0, 1)], [], 0)
# (the instance's id before U4's at C@0, a stepped row)
def test_whole_through_the_split(stmt, beside, others, timed, spec, cuts, restore_at) -> None:
    """Alone or beside other statements the kernel plans it — its beginning's id ahead of the
    row after it — unless a statement beside takes ids or keeps saved timers as time passes;
    per event, the same answer either way (ids, state, batches cut anywhere, save/restore)."""
    prog = prog_of(stmt, [*beside, *others, *timed])
    engine = Engine(prog)
    mine = next(m for m in engine.matchers if m.name == stmt.split("'")[1])
    check_taken(engine, mine, bool(timed))
    check_split(prog, spec, cuts, restore_at)


@settings(max_examples=60, deadline=None)
@given(wholes(), guarded_ands(), stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=4),
       st.integers(0, 70))
def test_beside_the_restarted_and(stmt, other, spec, cuts, restore_at) -> None:
    """Two patterns taking ids as time passes: neither kernel takes its pattern (each has a
    clock: split._restarts_alone) — per event, the same answer."""
    if other.split("'")[1] == stmt.split("'")[1]:
        other = other.replace("'P'", "'R'").replace("into P", "into R").replace(
            "'Q'", "'R'").replace("into Q", "into R")
    prog = prog_of(stmt, [other])
    engine = Engine(prog)
    assert engine._split is None or all(not split_module._clocked(m) for m in engine._split)
    check_split(prog, spec, cuts, restore_at)


@settings(max_examples=100, deadline=None)
@given(wholes(), *ROUTE_ARGS)
def test_run_columns_and_time_passing(stmt, spec, batch, restore_at, cuts, later) -> None:
    """``Engine.run`` in batches with a save/restore against the fast per-event steps and the
    general token path; Arrow batches through ``Engine.process_columns`` (rows written too);
    a batch then ``advance_to`` (the deadline passing after the last row)."""
    check_routes(prog_of(stmt), spec, batch, restore_at, cuts, later)


SCHEMAS = "".join(f"create schema {t}(k int, v int);\n" for t in "ABC")
BODY = "(every a=A(a.v > 1)) where timer:within(5 msec)"


def _engine(body: str = BODY, start: float | None = 0) -> Engine:
    return Engine(load_module(parse_epl(
        SCHEMAS + f"@Name('P')\ninsert into P\nselect a.v as av from pattern [{body}];\n")),
        start=start)


def test_pinned() -> None:
    """By hand: the guard starts at 0, its timer at 5 (before the events of 5). The clock's
    instance takes token 1 before A1.2@0; A1.2 and A1.3 (v > 1) are matches with tokens 2
    and 3, A1.0 fails the filter, A1.7@5 comes after the guard ended: nothing more, ever.
    After A1.3@3 the instance is open (token 1, its clock event at 0, the window from 0) and
    its deadline queued."""
    evs = _events("A1.2@0 A1.0@1 A1.3@3 A1.7@5 A1.8@6")
    want = [(0, 1, (2,)), (3, 2, (3,))]
    one = _engine()
    ref = [(ce.ts, ce.match_id, ce.params) for e in evs for ce in one.process(e)]
    assert ref == want
    for cut in range(len(evs) + 1):
        many = _engine()
        got = [(ce.ts, ce.match_id, ce.params) for ce in [*many.run(evs[:cut]),
                                                          *many.run(evs[cut:])]]
        assert got == want
        assert save_state(many) == save_state(one)
        mid = _engine()
        list(mid.run(evs[:3]))
        saved = save_state(mid)
        assert saved["counters"]["token"] == 3
        assert saved["patterns"]["P"][0]["id"] == 1
        assert saved["timers"]["queue"]["deadline"] == [5.0]


def test_the_kernel_plans_the_batches(monkeypatch) -> None:
    """``Engine.run`` over the pinned stream plans every batch — the statement started before
    the first row, by it, or after some rows (the clock due in a later batch)."""
    planned: list[bool] = []
    real = split_module.plan_whole

    def spy(m, sh, cols):
        plan = real(m, sh, cols)
        planned.append(plan is not None)
        return plan

    monkeypatch.setattr(split_module, "plan_whole", spy)
    evs = _events("A1.2@0 A1.0@1 A1.3@3 A1.4@4 A1.7@5 A1.8@6 A1.9@9 A1.3@12")
    for start in (0, None, 2, 4, 8, 20):
        one = _engine(start=start)
        ref = [(ce.ts, ce.match_id, ce.params) for e in evs for ce in one.process(e)]
        for cut in range(len(evs) + 1):
            many = _engine(start=start)
            got = [(ce.ts, ce.match_id, ce.params) for ce in [*many.run(evs[:cut]),
                                                              *many.run(evs[cut:])]]
            assert got == ref, (start, cut)
            assert save_state(many) == save_state(one)
    assert planned and all(planned)


def test_what_the_shape_declines() -> None:
    """A guard of 0 (over as it starts: no instance), a group under the every, an or of
    operands, a guard inside the every (restarted with it: kernels.restarted_and's form or
    per event)."""
    for body in ["(every a=A(a.v > 1)) where timer:within(0 msec)",
                 "(every (a=A -> b=B)) where timer:within(5 msec)",
                 "(every a=A or every b=B) where timer:within(5 msec)",
                 "every (a=A where timer:within(5 msec))"]:
        assert esper_whole_of(_engine(body).matchers[0].pattern) is None, body
