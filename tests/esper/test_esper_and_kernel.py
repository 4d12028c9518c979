"""The and kernel (runtime/kernels/conj.py, in the program split): Esper's ``every (a = A(f)
and b = B(g[, key]))`` — one instance at a time, begun by either operand, completed by the
other's first later event of its key — and the cepflow syntax's ``every ((a = A AND b =
B)[Δ])``, whose window spans the instance's own events (from its first). Over random statements
of that shape (operands of two of three types, filters, keyed or not, select lists) and random
streams, beside statements no kernel takes, it equals the per-event engine: complex events
(parameters, parts, bindings, match ids) in order, statistics, open instances, saved state and
the end of input — batches cut anywhere, single events between them, ``Engine.run`` and a
save/restore in the middle, Arrow batches through ``Engine.process_columns``. EPL's guard
``every ((a = A and b = B) where timer:within(Δ))`` restarts with the sub-expression (session
40: from the statement's start, per event; tests/esper/test_esper_every_guard_restart.py): the
kernel declines it; the restarted and kernel takes it (kernels/restarted_and.py,
tests/esper/test_esper_restarted_and.py)."""

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_alternatives import (
    C_SCHEMA,
    TYPES,
    check_arrow,
    check_run,
    stream,
)
from tests.esper.test_esper_kernel import FILTERS, SCHEMA
from tests.esper.test_split import (
    check_split,
    check_time_passing,
    keyed_others,
    program,
)

from cepflow.language.epl import parse_epl
from cepflow.loader import load, load_module
from cepflow.runtime.engine import Engine


@st.composite
def ands(draw: st.DrawFn) -> str:
    """``every (a = T(f) and b = U(g[, key])) [where within]``, ``T`` and ``U`` distinct or
    one type (an event may then be both operands at once: EsperAnd.merged)."""
    ta, tb = draw(st.permutations(TYPES))[:2]
    if draw(st.booleans()):
        tb = ta
    x, y = draw(st.permutations(["a", "b"]))  # (y, written second, unifies with x)
    f = draw(st.sampled_from(["", "", *FILTERS])).format(a=x)
    g = draw(st.sampled_from(["", "", *FILTERS])).format(a=y)
    key = draw(st.sampled_from([f"{x}.k = {y}.k", f"{y}.k = {x}.k", f"k = {x}.k", ""]))
    g = f"({g}) and {key}" if g and key else g or key
    select = draw(st.sampled_from(["", "select a.v as av, b.x as bx, current_timestamp() as t ",
                                   "select b.k as bk, a.s as s, 'lit' as c, a.k as ak "]))
    first, second = f"{x} = {ta}({f})", f"{y} = {tb}({g})"
    name = draw(st.sampled_from(["P", "Q"]))
    return (f"@Name('{name}')\ninsert into {name}\n{select}from pattern [every ({first} and "
            f"{second})];\n")


def prog_of(stmts: list[str], others: list[str]):
    prog = program([C_SCHEMA + stmts[0], *stmts[1:]], others)
    mine = {s.split("'")[1] for s in stmts}
    assert all(m.pattern.esper_and is not None for m in Engine(prog).matchers
               if m.name in mine)
    return prog


# (operands of one type: A(v=2) is both at once and a match alone; A(v=9) begins an
# instance that A(v=0) of its key completes; A(v=3) is both again)
SAME = ("@Name('P')\ninsert into P\nselect a.v as av, b.v as bv\nfrom pattern [every (a = "
        "A(a.v > 1) and b = A(b.v < 5 and k = a.k))];\n")
SAME_STREAM = [("A", 0, 2, 0.0, 0), ("A", 0, 9, 0.0, 1), ("A", 1, 0, 0.0, 0),
               ("A", 0, 0, 0.0, 1), ("A", 0, 3, 0.0, 1)]


@settings(max_examples=150, deadline=None)
@given(st.lists(ands(), min_size=1, max_size=2),
       keyed_others(),
       stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
@example([SAME], [], SAME_STREAM, [1, 3], 2)
def test_and_equals_event_by_event(stmts, others, spec, cuts, restore_at) -> None:
    """Through the split, alone or beside statements over the input and over its output:
    batches cut anywhere, single events between them, a save/restore in the middle."""
    check_split(prog_of(stmts, others), spec, cuts, restore_at)


@settings(max_examples=100, deadline=None)
@given(ands(), stream([0, 1, 2, 1.0, True, "1", None, float("nan")]),
       st.lists(st.integers(0, 70), max_size=3), st.integers(0, 70))
def test_and_with_mixed_keys(stmt, spec, cuts, restore_at) -> None:
    """Keys that unify across types (1, 1.0, True), text, None and NaN (which unifies with
    nothing: that batch goes event by event)."""
    check_split(prog_of([stmt], []), spec, cuts, restore_at)


@settings(max_examples=100, deadline=None)
@given(ands(), stream([0, 1, 2]), st.integers(1, 30), st.integers(0, 70),
       st.lists(st.integers(0, 70), max_size=3))
@example(SAME, SAME_STREAM, 2, 3, [1])
def test_and_run_and_columns(stmt, spec, batch, restore_at, cuts) -> None:
    """``Engine.run`` in batches of ``batch`` events with a save/restore at ``restore_at``,
    against the general token path; Arrow batches through ``Engine.process_columns`` (rows
    written too) against event by event."""
    prog = prog_of([stmt], [])
    assert Engine(prog)._split is not None
    check_run(prog, spec, batch, restore_at)
    check_arrow(prog, spec, cuts)


def test_the_shape_and_what_it_declines() -> None:
    for s in ["every (a = A and b = B(b.k = a.k))",
              "every (a = A(v > 1) and b = C)",
              "every (a = A(v > 5) and b = A(b.k = a.k, b.v < 3))",
              "every (a = A and b = A)"]:
        prog = load_module(parse_epl(SCHEMA + C_SCHEMA + f"@Name('P')\ninsert into P\n"
                                     f"from pattern [{s}];\n"))
        assert Engine(prog).matchers[0].pattern.esper_and is not None, s
        assert Engine(prog)._split is not None
    # (EPL's guard restarts with the sub-expression, from the statement's start: the
    # restarted and kernel's, kernels/restarted_and.py — not of operands of one type)
    guarded = load_module(parse_epl(SCHEMA + C_SCHEMA + "@Name('P')\ninsert into P\nfrom "
                                    "pattern [every (a = A and b = B(b.k = a.k)) where "
                                    "timer:within(10 sec)];\n"))
    assert Engine(guarded).matchers[0].pattern.esper_and.clocked is not None
    for s in [
        "every (a = A(v > 5) and b = A(b.k = a.k, b.v < 3)) where timer:within(10 sec)",
        # (the key on another field of the second)
        "every (a = A and b = A(k = a.v))",
        "every (a = A and b = B(v > a.v and k = a.k))",  # (a guard on a)
        "every (a = A and b = B(k = a.k) and c = C(k = a.k))",  # (three operands)
        "a = A and b = B(k = a.k)",  # (once)
        "every a = A and b = B(k = a.k)",  # (every on a alone: spawn)
        "every (a = A and b = B(k = a.k) and not C)",
    ]:
        try:
            prog = load_module(parse_epl(SCHEMA + C_SCHEMA + f"@Name('P')\ninsert into P\n"
                                         f"from pattern [{s}];\n"))
        except Exception:  # (not a pattern cepflow takes at all)
            continue
        assert Engine(prog).matchers[0].pattern.esper_and is None, s


# (A and B of key 0 at 0 ms: the instance begun at 0 completes there; the token path's timer
# for it, at 0 + 3 ms, fires idle later and moves the clock there)
IDLE_STREAM = [("A", 0, 1, 0.7, 0), ("B", 0, 2, 1.2, 0)]


@settings(max_examples=150, deadline=None)
@given(ands(), stream([0, 1, 2]), st.sampled_from([0, 1, 2, 2.5, 3, 4, 50]))
@example(SAME, [("A", 0, 2, 0.0, 1)], 4)  # (both operands at once: it never waited, no timer)
def test_time_passing_after_a_batch(stmt, spec, later) -> None:
    """A batch then ``advance_to``: the clock moves over the idle deadlines of the instances
    the batch completed as the token path's timers move it (Matcher.skipped) — the saved
    state's ``time`` — and the matches and statistics are the token path's."""
    check_time_passing(prog_of([stmt], []), spec, later)


#: the cepflow syntax's window around the and (from the instance's first event: it spans the
#: instance's own events), which the kernel takes (conj.py's deadlines)
WINDOWED_SCHEMA = "".join(f"atomicEvent {t}(k: Integer, v: Integer, x: Double, s: String)\n"
                          for t in "ABC")
# (an instance ended by its deadline: the B at exactly Δ after the A begins the next one)
TIMED_STREAM = [("A", 0, 1, 0.0, 0), ("B", 1, 2, 0.7, 1), ("B", 0, 5, 0.7, 2),
                ("A", 0, 1, 1.2, 1), ("A", 1, 1, 1.2, 1)]


def windowed(window: str, keyed: bool, same: bool):
    second = "A" if same else "B"
    key = " where b.k == a.k" if keyed else ""
    prog = load(WINDOWED_SCHEMA + f"complexEvent P {{ as every ((a = A AND b = {second}{key})"
                f"[{window}]) context esper }}\n")
    assert Engine(prog).matchers[0].pattern.esper_and is not None
    return prog


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["3 ms", "10 ms", "0 ms"]), st.booleans(), st.booleans(),
       stream([0, 1, 2]), st.integers(1, 30), st.integers(0, 70),
       st.lists(st.integers(0, 70), max_size=3), st.sampled_from([0, 1, 2, 2.5, 3, 4, 50]))
@example("3 ms", True, False, TIMED_STREAM, 2, 3, [2], 3)
@example("3 ms", True, False, IDLE_STREAM, 2, 3, [1], 3)
def test_the_window_of_the_cepflow_syntax(window, keyed, same, spec, batch, restore_at, cuts,
                                          later) -> None:
    """``every ((a = A AND b = B [where b.k == a.k])[Δ])``: ``Engine.run`` and the split in
    batches with a save/restore against event by event, then time passing after a batch."""
    assume(not (same and window == "0 ms"))  # (declined: the step of both enters, leaves it)
    prog = windowed(window, keyed, same)
    check_run(prog, spec, batch, restore_at)
    check_split(prog, spec, cuts, restore_at)
    check_time_passing(prog, spec, later)
