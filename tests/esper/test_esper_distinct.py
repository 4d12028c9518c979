"""Esper's ``every-distinct(keys[, Δ]) a = A(f) -> …`` (the spawn form) in the pair kernel
(runtime.shapes.esper_distinct_pair_of, runtime/kernels/pair.py ``distinct_rows``,
runtime/distinct.py): an instance begins at an ``A`` passing ``f`` only if its distinct key
was not seen — within Δ when given —, the seen keys noted and expired as the per-event start
does it (Matcher._start → EsperSteps._distinct_seen), carried across batches and in the saved
state.

Over random single stages, pairs (keyed, unkeyed, with a guard on ``a``), chains and last
stages of alternatives (an or of sequences too), with keys of one or two variables,
expiries of 0, 1, 2 and 5 ms or none, windows, select lists and random streams (keys that
unify across types: 1, 1.0, True; text; None; NaN), the kernel equals the per-event general
token path: complex events (parameters, parts, bindings, ids) in order, rule firings,
statistics, open instances and saved state (the seen keys with their times) — through
``Engine.process_batch`` with batches cut anywhere and single events between, ``Engine.run``
with a save/restore in the middle, ``Engine.process_columns`` over event lists and Arrow
batches, ``advance_to`` after a batch, and the program split beside statements no kernel takes."""

import json
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_alternatives import (
    C_SCHEMA,
    TYPES,
    check_arrow,
    check_pair_run,
    check_statements,
    stream,
)
from tests.esper.test_esper_kernel import FILTERS, PAIR_FILTERS, SCHEMA, check, events, rows
from tests.esper.test_split import (
    check_split,
    check_time_passing,
    keyed_others,
    program,
    stepping,
)

from cepflow.language.epl import parse_epl
from cepflow.loader import load, load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import restore_state, save_state

KEYS = ["a.k", "a.k", "a.k", "a.k, a.v", "a.s", "a.v", "a.k, a.s"]
EXPIRIES = ["", "", ", 2 msec", ", 5 msec", ", 1 msec", ", 0 msec"]
WITHIN = ["", "", " where timer:within(3 msec)", " where timer:within(10 msec)",
          " where timer:within(0 msec)"]


def written(keys: str, expiry: str, steps: list[str], within: str = "", select: str = "",
            name: str = "P") -> str:
    """``every-distinct(keys[, expiry]) <steps[0]> -> (<steps[1]> -> …) <within>``; a last
    step with `` or `` in it is a last stage of alternatives (parenthesised)."""
    head = f"every-distinct({keys}{expiry}) {steps[0]}"
    if len(steps) == 1:
        body = head
    else:
        rest = " -> ".join(steps[1:])
        body = f"{head} -> ({rest}){within}" if len(steps) > 2 or " or " in rest or within \
            else f"{head} -> {rest}"
    return f"@Name('{name}')\ninsert into {name}\n{select}from pattern [{body}];\n"


@st.composite
def distinct_statements(draw: st.DrawFn) -> str:
    """A single stage, a pair (on the key, on none, or with a guard on ``a``), a chain of
    three stages on the key, or ``a`` then alternatives on the key (single events, or a
    sequence and an event: kernels.orseq), under every-distinct."""
    form = draw(st.sampled_from(["single", "pair", "pair", "unkeyed", "guard", "chain",
                                 "alts", "orseq"]))
    keys, expiry = draw(st.sampled_from(KEYS)), draw(st.sampled_from(EXPIRIES))
    # (no filter most of the time: the rows a key refuses then matter)
    first = f"a = {draw(st.sampled_from(TYPES))}({draw(st.sampled_from(['', '', '', *FILTERS]))})"
    first = first.format(a="a")

    def later(tag: str, keyed: bool = True, guard: bool = False) -> str:
        f = draw(st.sampled_from(["", "", "", *FILTERS, *(PAIR_FILTERS if guard else [])]))
        f = f.format(a=tag)
        if keyed:
            k = draw(st.sampled_from([f"a.k = {tag}.k", f"{tag}.k = a.k", "k = a.k"]))
            f = f"({f}) and {k}" if f else k
        return f"{tag} = {draw(st.sampled_from(TYPES))}({f})"

    if form == "single":
        steps = [first]
    elif form in ("pair", "unkeyed"):
        steps = [first, later("b", form == "pair")]
    elif form == "guard":
        steps = [first, later("b", True, guard=True)]
    elif form == "chain":
        steps = [first, later("b"), later("c")]
    elif form == "alts":
        steps = [first, f"{later('b')} or {later('c')}"]
    else:  # (an or of sequences: kernels.orseq)
        steps = [first, f"({later('b')} -> {later('c')}) or {later('d')}"]
    within = "" if form == "single" else draw(st.sampled_from(WITHIN))
    last = "a" if form == "single" else "b"
    # (alternatives keyed on a: select * would read their keys, which stay their own
    # variables then — null when another alternative matched — and run per event)
    select = draw(st.sampled_from(["" if form not in ("alts", "orseq") else "select a.v as av ",
                                   f"select a.v as av, {last}.x as lx, "
                                   f"current_timestamp() as t "]))
    return written(keys, expiry, steps, within, select, draw(st.sampled_from(["P", "Q"])))


def takes_the_kernel(stmt: str) -> None:
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + stmt))
    engine = Engine(prog)
    assert engine._pairs is not None, stmt
    assert all(m.pattern.auto.distinct and not m.pattern.pair.is_pair
               for m in engine.matchers)


#: hand-derived (keys of 5 ms): A(0)@0 opens; A(0)@2 is seen (no instance); B(0)@3 completes
#: (e0, e2); A(0)@5 is exactly 5 ms after the key was noted: it expired, (0,) is noted again at
#: 5 and A(0)@5 opens; B(0)@6 completes (e3, e4); A(1)@6 opens and waits; A(0)@7 is seen (noted
#: at 5). Left: seen {(0,): 5, (1,): 6} and e5 waiting
PAIR = written("a.k", ", 5 msec", ["a = A()", "b = B(b.k = a.k)"],
               select="select a.k as k, b.v as bv ")
PAIR_STREAM = [("A", 0, 1, 0.0, 0), ("A", 0, 2, 0.0, 2), ("B", 0, 3, 0.0, 1),
               ("A", 0, 4, 0.0, 2), ("B", 0, 5, 0.0, 1), ("A", 1, 6, 0.0, 0),
               ("A", 0, 7, 0.0, 1)]
#: the same without an expiry: A(0)@5 is seen too, only (e0, e2)
FOREVER = written("a.k", "", ["a = A()", "b = B(b.k = a.k)"],
                  select="select a.k as k, b.v as bv ")


def test_every_distinct_as_worked_out_by_hand() -> None:
    """The pinned pair, per event (both routes) and in batches cut at every place."""
    for stmt, want, seen in [
            (PAIR, [("P", 3, ("e0", "e2"), "(0, 3)"), ("P", 6, ("e3", "e4"), "(0, 5)")],
             {(0,): 5, (1,): 6}),
            (FOREVER, [("P", 3, ("e0", "e2"), "(0, 3)")], {(0,): 0, (1,): 6})]:
        takes_the_kernel(stmt)
        prog = load_module(parse_epl(SCHEMA + stmt))
        for cut in range(len(PAIR_STREAM) + 1):
            for engine in (Engine(prog), Engine(prog, fast_path=False)):
                evs = events(PAIR_STREAM)
                got = engine.process_batch(evs[:cut]) + engine.process_batch(evs[cut:])
                assert [(m.type, m.ts, tuple(m.event_refs), repr(m.params))
                        for m in got] == want
                assert engine.matchers[0].seen == seen
        restored = restore_state(Engine(prog), save_state(engine))
        assert restored.matchers[0].seen == seen


def test_the_shape_and_what_it_declines() -> None:
    """What every-distinct takes the pair kernel for, and what stays per event."""
    for s in ["every-distinct(a.k) a = A -> b = B(b.k = a.k)",
              "every-distinct(a.k, 2 msec) a = A(v > 1) -> b = B(b.k = a.k) "
              "where timer:within(3 msec)",
              "every-distinct(a.k, a.s) a = A",
              "every-distinct(a.v) a = A -> b = B",
              "every-distinct(a.k) a = A -> (b = B(k = a.k) -> c = C(k = a.k))",
              "every-distinct(a.k) a = A -> (b = B(k = a.k) or c = C(k = a.k))"]:
        takes_the_kernel(f"@Name('P')\ninsert into P\nselect a.v as av\nfrom pattern [{s}];\n")
    for s in ["every-distinct(a.k) (a = A -> b = B(b.k = a.k))",  # (restart: drops matches)
              "every-distinct(a.k + 1) a = A -> b = B(b.k = a.k)"]:  # (a key that can fail)
        prog = load_module(parse_epl(SCHEMA + C_SCHEMA + f"@Name('P')\ninsert into P\n"
                                     f"from pattern [{s}];\n"))
        assert Engine(prog)._pairs is None, s


@settings(max_examples=150, deadline=None)
@given(st.lists(distinct_statements(), min_size=1, max_size=2), stream([0, 1, 2]),
       st.lists(st.integers(0, 70), max_size=4), st.integers(0, 8))
@example([PAIR], PAIR_STREAM, [2, 4], 1)
@example([PAIR], PAIR_STREAM, [3], 0)
@example([FOREVER], PAIR_STREAM, [4], 2)
def test_distinct_equals_event_by_event(stmts, spec, cuts, tail) -> None:
    """Batches cut anywhere (single events between them, per-event steps after), the column
    route over event lists, rules firing: as the general token path."""
    check_statements(stmts, spec, cuts, tail, takes_the_kernel)


@st.composite
def keyed_pairs(draw: st.DrawFn) -> str:
    """``every-distinct(a.k[, …][, Δ]) a = A([f]) -> b = B(k = a.k) [or c = C(k = a.k)]``:
    the plain keyed shape, where a refused row among the opening ones changes which key
    each instance waits on (the random statements above reach it seldom)."""
    first = f"a = A({draw(st.sampled_from(['', '', 'a.v >= 2', 'a.v != 2']))})"
    last = draw(st.sampled_from(["b = B(k = a.k)", "b = B(b.k = a.k and b.v > a.v)",
                                 "b = B(k = a.k) or c = C(c.k = a.k)",
                                 "b = B(k = a.k) -> c = C(k = a.k)"]))
    return written(draw(st.sampled_from(["a.k", "a.k", "a.k, a.s"])),
                   draw(st.sampled_from(EXPIRIES)), [first, last],
                   draw(st.sampled_from(["", " where timer:within(3 msec)"])),
                   draw(st.sampled_from(["", "select a.v as av, b.v as bv "])))


@settings(max_examples=100, deadline=None)
@given(keyed_pairs(), stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=3),
       st.integers(0, 5))
def test_keyed_pairs_equal_event_by_event(stmt, spec, cuts, tail) -> None:
    """The plain keyed shape, batches cut anywhere: as the general token path."""
    check_statements([stmt], spec, cuts, tail, takes_the_kernel)


@settings(max_examples=60, deadline=None)
@given(distinct_statements(), stream([0, 1, 2, 1.0, True, "1", None, float("nan")]),
       st.lists(st.integers(0, 70), max_size=2), st.integers(0, 5))
def test_distinct_with_mixed_keys(stmt, spec, cuts, tail) -> None:
    """Keys that are equal across types (1, 1.0, True: one distinct key, noted as the first
    came), text, None and NaN (a key never seen again, or a batch event by event); and over
    Arrow batches, whose NaN objects are not the events' (such a batch goes event by
    event)."""
    check(C_SCHEMA + stmt, spec, cuts, tail)
    check_arrow(load_module(parse_epl(SCHEMA + C_SCHEMA + stmt)), spec, cuts)


@settings(max_examples=80, deadline=None)
@given(distinct_statements(), stream([0, 1, 2]), st.integers(1, 30), st.integers(0, 70),
       st.lists(st.integers(0, 70), max_size=3))
@example(PAIR, PAIR_STREAM, 3, 4, [2])
def test_distinct_saved_restored_and_in_arrow(stmt, spec, batch, restore_at, cuts) -> None:
    """``Engine.run`` in batches with a save/restore in the middle (the seen keys saved), and
    ``Engine.process_columns`` over Arrow batches: as event by event."""
    check_pair_run(stmt, spec, batch, restore_at, cuts)


@settings(max_examples=60, deadline=None)
@given(distinct_statements(), stream([0, 1, 2]), st.integers(0, 12))
@example(PAIR, PAIR_STREAM, 3)
def test_time_passing_after_a_batch(stmt, spec, later) -> None:
    """One batch, then ``advance_to``: the instances' timers and the seen keys as per event."""
    check_time_passing(load_module(parse_epl(SCHEMA + C_SCHEMA + stmt)), spec, later)


@settings(max_examples=60, deadline=None)
@given(st.lists(distinct_statements(), min_size=1, max_size=2),
       keyed_others(1),
       stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
def test_distinct_in_the_split(stmts, others, spec, cuts, restore_at) -> None:
    """Beside statements no kernel takes (some reading these statements' output, ``every p =
    P -> …``): the split plans every-distinct column-wise, with a save/restore in the middle,
    as event by event."""
    prog = program([C_SCHEMA + stmts[0], *stmts[1:]], others)
    check_split(prog, spec, cuts, restore_at)


def test_motorbike_accident_steps_no_row_for_distinct() -> None:
    """examples/motorbike's Accident (``every-distinct(a1.motorbikeId, a1.timestamp) a1 =
    BlowOutTire -> (a2 = Crash(…) -> a3 = DriverLeftSeat(…)) where timer:within(3 seconds)``,
    over derived events) is planned in the split's cascade: a batch steps only the rows the
    statements over the input step without it, and matches as event by event."""
    from cepflow.events.event import Event

    prog = load(Path(__file__).parents[2] / "examples" / "motorbike" / "motorbike.epl")
    accident = next(m for m in Engine(prog).matchers if m.name == "Accident")
    assert accident.pattern.pair is not None and accident.pattern.auto.distinct

    def stream() -> list[Event]:  # (bike 1 loses a tire twice — at 100 and 150, one
        # distinct key (1, 10) —, crashes and its driver leaves; bike 2 once; bike 3 rides
        # on; DriverLeftSeat waits for one bike at a time: bike 1's first)
        out = []
        for i, (bike, speed, tire, seat, t) in enumerate([
                (1, 60, 2.5, True, 0), (3, 30, 2.5, True, 0), (1, 60, 1.0, True, 100),
                (1, 60, 2.5, True, 120), (1, 60, 1.0, True, 150), (1, 0, 1.0, True, 200),
                (1, 0, 1.0, False, 300), (2, 50, 2.5, True, 400), (2, 50, 1.0, True, 500),
                (2, 0, 1.0, True, 600), (3, 30, 2.5, True, 700), (2, 0, 1.0, False, 800),
                (3, 30, 2.5, True, 900)]):
            out.append(Event("Motorbike", (10, bike, "Cadiz", speed, tire, tire, seat),
                             10_000 + t, id=f"m{i}"))
        return out

    one, many = Engine(prog), Engine(prog)
    ref = rows([m for e in stream() for m in one.process(e)])
    # (three BlowOutTire, two of bike 1 with one distinct key: two Accidents, not three)
    assert [r[0] for r in ref].count("BlowOutTire") == 3
    assert [r[1] for r in ref if r[0] == "Accident"] == [10_300, 10_800]
    with stepping() as stepped:
        got = rows(many.process_batch(stream()))
    assert got == ref
    assert save_state(many) == save_state(one)
    # (the rows stepped are those the program steps with a plain every: the DriverLeftSeat
    # rows that complete the chain, as the split steps them)
    text = (Path(__file__).parents[2] / "examples" / "motorbike" / "motorbike.epl").read_text()
    plain = text.replace("every-distinct(a1.motorbikeId, a1.timestamp)", "every")
    assert plain != text
    with stepping() as without:
        Engine(load_module(parse_epl(plain))).process_batch(stream())
    assert [e.id for e in stepped] == [e.id for e in without]


def test_a_nan_key_is_one_key() -> None:
    """Esper keeps the seen keys in a Java set, where every NaN equals NaN (Double.equals):
    a second NaN key is seen — whichever float object holds it, also after a save and
    restore (which makes a new one)."""
    from cepflow.events.event import Event

    prog = load_module(parse_epl(
        SCHEMA + "insert into P select a.v as v from pattern [every-distinct(a.x) a=A]"))
    engine = Engine(prog)
    got = engine.process(Event("A", (1, 1, float("nan"), "s"), 0))
    got += engine.process(Event("A", (1, 2, float("nan"), "s"), 1))
    engine = restore_state(Engine(prog), json.loads(json.dumps(save_state(engine))))
    got += engine.process(Event("A", (1, 3, float("nan"), "s"), 2))
    got += engine.process(Event("A", (1, 4, 0.5, "s"), 3))
    assert [m.params for m in got] == [(1,), (4,)]
