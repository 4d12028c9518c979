"""The kernel of Esper's ``every a = A(f) or every b = A(g) …`` whose operands one event can
both fit (runtime/kernels/each.py, in the program split; ast.Or.each): each every node under
the or reports the event on its own — one match per operand the event fits, in the operands'
order, each with its own token id (Matcher._start). Hand-derived streams pinned, and random
statements of that shape over random streams against the per-event engine (and the general
token path): the same complex events (parameters, parts, bindings, match ids), statistics,
saved state and end of input — batches cut anywhere with single events and a save/restore
between them, beside other statements, ``Engine.run``, Arrow batches through
``Engine.process_columns`` and time passing after a batch — and a spy that the kernel plans
the batches."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_alternatives import C_SCHEMA, TYPES, stream
from tests.esper.test_esper_kernel import FILTERS
from tests.esper.test_esper_restarted_and import ROUTE_ARGS, check_routes
from tests.esper.test_split import check_split, keyed_others, program

import cepflow.runtime.kernels.split as split_module
from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.shapes import esper_each_of
from cepflow.runtime.state import save_state


@st.composite
def eaches(draw: st.DrawFn) -> str:
    """``every x1 = T1(f1) or every x2 = T2(f2) …``: two to four operands, at least two of one
    type (else the or is the pair kernel's alternatives), filters reading their own event —
    among them one on a key value —, a select list of the operands' fields (null where the
    operand did not match), none, or the match's time."""
    n = draw(st.integers(2, 4))
    shared = draw(st.sampled_from(TYPES))
    types = [shared, shared, *draw(st.lists(st.sampled_from(TYPES), min_size=n - 2,
                                            max_size=n - 2))]
    types = draw(st.permutations(types))
    tags = [f"x{i}" for i in range(n)]
    ops = []
    for tag, t in zip(tags, types, strict=True):
        f = draw(st.sampled_from(["", *FILTERS, "{a}.k = 1"])).format(a=tag)
        ops.append(f"every {tag} = {t}({f})")
    select = draw(st.sampled_from(
        ["", f"select {tags[0]}.v as v0, {tags[1]}.k as k1 ",
         f"select {tags[-1]}.x as xl, current_timestamp() as t, 'lit' as c "]))
    name = draw(st.sampled_from(["P", "Q"]))
    return f"@Name('{name}')\ninsert into {name}\n{select}from pattern [{' or '.join(ops)}];\n"


def prog_of(stmt: str, others: list[str] = ()):
    prog = program([C_SCHEMA + stmt], list(others))
    assert esper_each_of(Engine(prog).matchers[0].pattern) is not None, stmt
    return prog


@settings(max_examples=200, deadline=None)
@given(eaches(), keyed_others(0), stream([0, 1, 2]),
       st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
def test_each_through_the_split(stmt, others, spec, cuts, restore_at) -> None:
    """Alone or beside other statements (kernels, per event, over its output, windows: its
    ids at its rows in engine order), the kernel planning it: batches cut anywhere, single
    events between them, a save/restore in the middle."""
    prog = prog_of(stmt, others)
    name = stmt.split("'")[1]
    assert name in [m.name for m in Engine(prog)._split]
    check_split(prog, spec, cuts, restore_at)


@settings(max_examples=100, deadline=None)
@given(eaches(), *ROUTE_ARGS)
def test_run_columns_and_time_passing(stmt, spec, batch, restore_at, cuts, later) -> None:
    """``Engine.run`` in batches with a save/restore against the fast per-event steps and the
    general token path; Arrow batches through ``Engine.process_columns`` (rows written too);
    a batch then ``advance_to``. Keys of any value (a filter on a null declines the batch)."""
    check_routes(prog_of(stmt), spec, batch, restore_at, cuts, later)


SCHEMAS = "".join(f"create schema {t}(k int, v int);\n" for t in "ABC")


def _engine(body: str, select: str = "") -> Engine:
    return Engine(load_module(parse_epl(
        SCHEMAS + f"@Name('P')\ninsert into P\n{select}from pattern [{body}];\n")))


def _events(text: str) -> list[Event]:
    """``A1.5@3``: type A, key 1, v 5 at 3 ms."""
    out = []
    for i, w in enumerate(text.split()):
        head, at = w.split("@")
        k, v = head[1:].split(".")
        out.append(Event(head[0], (int(k), int(v)), int(at), id=f"e{i}"))
    return out


def test_pinned() -> None:
    """By hand from EvalOrStateNode over two EvalEveryStateNode: A1.5 fits both operands (two
    matches, a's first; token and match ids 1, 2), A1.1 only b's, A1.9 only a's, B the third
    operand's own — the tags of the operands that did not match are null."""
    body = "every a=A(a.v > 2) or every b=A(b.v < 6) or every c=B"
    select = "select a.v as av, b.v as bv, c.k as ck "
    evs = _events("A1.5@0 A1.1@1 B2.0@1 A1.9@2")
    want = [(0, 1, (5, None, None)), (0, 2, (None, 5, None)), (1, 3, (None, 1, None)),
            (1, 4, (None, None, 2)), (2, 5, (9, None, None))]
    one = _engine(body, select)
    ref = [(ce.ts, ce.match_id, ce.params) for e in evs for ce in one.process(e)]
    assert ref == want
    many = _engine(body, select)
    got = [(ce.ts, ce.match_id, ce.params) for ce in many.run(evs, batch_size=3)]
    assert got == want
    assert save_state(many) == save_state(one)
    assert save_state(many)["counters"]["token"] == 5


def test_the_kernel_plans_the_batches(monkeypatch) -> None:
    """``Engine.run`` plans every batch through the kernel (none declined)."""
    planned: list[int] = []
    real = split_module.plan_each

    def spy(m, sh, cols):
        plan = real(m, sh, cols)
        planned.append(len(plan[2]))
        return plan

    monkeypatch.setattr(split_module, "plan_each", spy)
    evs = _events("A1.5@0 A1.1@1 B2.0@1 A1.9@2 A0.3@4 A0.4@4 B1.1@5")
    many = _engine("every a=A(a.v > 2) or every b=A(b.v < 6)")
    list(many.run(evs, batch_size=4))
    assert planned == [4, 4]  # (A1.5 twice, A1.1, A1.9; A0.3 and A0.4 twice each)


def test_what_the_shape_declines() -> None:
    """Operands of distinct types (the pair kernel's alternatives), an or followed by more,
    operands that are sequences, a guard around it (per event)."""
    assert _engine("every a=A(a.v > 2) or every b=B").matchers[0].pattern.pair is not None
    for body in ["(every a=A(a.v > 2) or every b=A(b.v < 6)) -> c=C",
                 "every a=A(a.v > 2) or every (b=A(b.v < 6) -> c=C)",
                 "(every a=A(a.v > 2) or every b=A(b.v < 6)) where timer:within(1 sec)"]:
        try:
            e = _engine(body)
        except Exception:  # (a form the language refuses)
            continue
        assert esper_each_of(e.matchers[0].pattern) is None, body
