"""A time window's arrival rows over a column source made without their events (issue 21;
kernels.window_block ``WindowBlock._on_demand``, runtime.rows ``Triggers``): over an Arrow
batch a ``win:time`` statement's rows take their fields from the type's columns and their
times from the batch's time columns, their parts (the arriving event) are made when first
read, all of a block's at once, and the batch decodes only the events of the records the
window keeps after it. Over random programs (fields of every kind, current_timestamp(),
aggregates, group keys of texts and numbers, filters, a having — which reads the events and
so keeps them made —, grade patterns and a time batch over the rows) and streams (whole and
fractional times, ints, floats, -0.0, booleans, texts, nulls), fed as Arrow batches cut
anywhere with a save/restore between, everything equals the per-event engine: complex events
(their parts' types, parameters, times and their types, ids, sequence numbers), match ids,
rows written, statistics, saved state and the end of input."""

import itertools

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import SCHEMA, fed_columns, rows, state
from tests.esper.test_split import restored

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.rows import Triggers

ITEMS = ["a.s as s", "a.k as k", "a.x as x", "a.v as v", "current_timestamp() as t",
         "avg(a.x) as ax", "count(*) as c", "sum(a.v) as sv", "max(a.x) as mx"]


@st.composite
def programs(draw: st.DrawFn) -> str:
    """One or two ``win:time`` statements over ``A`` (select items drawn from ``ITEMS``, a
    group key or none, a filter or none, perhaps a having), perhaps a grade pattern over
    the first one's rows and a time batch over the grades."""
    text = ""
    for w in range(draw(st.integers(1, 2))):
        items = draw(st.lists(st.sampled_from(ITEMS), min_size=1, max_size=5, unique=True))
        flt = draw(st.sampled_from(["", "(a.k != 1)", "(a.s = 'x')", "(a.v >= 1)"]))
        group = draw(st.sampled_from(["", "\ngroup by a.s", "\ngroup by a.k"]))
        having = draw(st.sampled_from(["", "", "", "\nhaving count(*) > 1"]))
        size = draw(st.sampled_from([2, 3, 5]))
        text += (f"@Name('W{w}')\ninsert into W{w}\nselect {', '.join(items)}\n"
                 f"from A{flt}.win:time({size} msec) as a{group}{having};\n")
    if draw(st.booleans()):
        text += ("@Name('G')\ninsert into Grade\nselect 1 as grade, current_timestamp() as t"
                 "\nfrom pattern [every g = W0];\n")
        if draw(st.booleans()):
            text += ("@Name('Level')\ninsert into Level\nselect max(l.grade) as grade, "
                     "count(*) as c\nfrom Grade.win:time_batch(3 msec) as l;\n")
    return text


#: per event: k, v, x, s, the time step (whole or fractional: the times' types mix), the
#: type (a B moves the batch's end past the windows' last rows: their clocks then stop at
#: their last expiry)
readings = st.lists(st.tuples(st.sampled_from([0, 1, 2]), st.sampled_from([0, 1, 2, 1]),
                              st.sampled_from([0.0, -0.0, 0.7, 2.0, 1.5]),
                              st.sampled_from(["x", "y", "é", "", "x"]),
                              st.sampled_from([0, 1, 2, 0.5, 1]),
                              st.sampled_from("AAAB")), max_size=50)
#: texts mixed with numbers, booleans and nulls in ``s`` (no text codes for the key)
mixed = st.lists(st.tuples(st.sampled_from([0, 1]), st.sampled_from([0, 1, 2]),
                           st.sampled_from([0.0, 0.7, 2.0]),
                           st.sampled_from(["x", 1, 1.0, True, None, "y"]),
                           st.sampled_from([0, 1, 0.5]), st.sampled_from("AAB")), max_size=40)


def make(spec) -> list[Event]:
    ts, out = 0, []
    for i, (k, v, x, s, dt, *t) in enumerate(spec):
        ts += dt
        out.append(Event(t[0] if t else "A", (k, v, x, s), ts, id=f"e{i}" if i % 3 else i,
                         seq=i))
    return out


def parts(found) -> list:
    """Each complex event's parts as values and types (``rows`` compares times by ``==``):
    type, parameters and time by ``repr`` (1 is not 1.0), id, sequence number."""
    return [[(p.type, repr(p.params), repr(p.ts), repr(p.id), p.seq) for p in m.parts]
            for m in found]


def check(prog, spec, cuts, restore_at) -> None:
    """``spec`` as Arrow batches cut at ``cuts`` through ``Engine.process_columns``, saved
    and restored at ``restore_at``, against event by event."""
    one, many = Engine(prog, strict_actions=False), Engine(prog, strict_actions=False)
    if not many.columnar:  # (a program the column route does not take: not this test's case)
        return
    ref = [m for e in make(spec) for m in one.process(e)]
    evs, got, written = make(spec), [], []
    n = len(evs)
    restore_at = min(restore_at, n)
    for lo, hi in itertools.pairwise(sorted({0, n, restore_at, *(min(c, n) for c in cuts)})):
        if lo == restore_at:
            many = restored(many, prog)
        found, out = fed_columns(many, evs[lo:hi], {"A": 4, "B": 4})
        got += found
        written += out
    from cepflow.spark.columns import encode_matches

    assert rows(got) == rows(ref)
    assert parts(got) == parts(ref)
    assert [repr(m.ts) for m in got] == [repr(m.ts) for m in ref]
    assert written == (encode_matches(ref).to_pylist() if ref else [])
    assert many.stats == one.stats
    assert state(many) == state(one)
    assert rows(many.finish(close_windows=True)) == rows(one.finish(close_windows=True))


AV = ("@Name('W0')\ninsert into W0\nselect a.s as s, a.x as x, current_timestamp() as t, "
      "avg(a.x) as ax\nfrom A.win:time(3 msec) as a\ngroup by a.s;\n")
LEVEL = ("@Name('G')\ninsert into Grade\nselect g.s as s, 1 as grade\nfrom pattern "
         "[every g = W0(g.ax < 1)];\n@Name('Level')\ninsert into Level\nselect "
         "max(l.grade) as grade, count(*) as c\nfrom Grade.win:time_batch(3 msec) as l;\n")
#: A(k, v, x, s) at whole and fractional times
PINNED = [(0, 1, 0.0, "x", 0), (1, 2, 2.0, "y", 1), (0, 0, -0.0, "x", 0.5), (2, 1, 0.7, "x", 2),
          (1, 1, 1.5, "y", 1), (0, 2, 2.0, "x", 1)]


@settings(max_examples=70, deadline=None)
@given(programs(), st.one_of(readings, mixed), st.lists(st.integers(0, 50), max_size=3),
       st.integers(0, 50))
@example(AV, PINNED, [2, 4], 3)
@example(AV + LEVEL, PINNED * 3, [5, 11], 8)
@example(  # (a filter and a text key over a column source: the key codes of the rows taken)
    "@Name('W0')\ninsert into W0\nselect a.s as s, count(*) as c\nfrom A(a.k != 1)"
    ".win:time(3 msec) as a\ngroup by a.s;\n",
    [(k, 1, 0.7, s, 1) for k, s in zip([0, 1, 2, 1, 0, 2, 1, 0], "xyxéyxx ", strict=True)],
    [], 50)
@example(  # (B events after the last reading: the window's clock is its last expiry)
    AV, [*PINNED, (0, 0, 0.0, "x", 2, "B"), (0, 0, 0.0, "x", 1, "B")], [2, 7], 50)
@example(  # (the clock after a restore: an expiry at 2 and the row at 2.0 — the runner keeps
    # the row's time, as event by event)
    "@Name('W0')\ninsert into W0\nselect a.s as s\nfrom A.win:time(2 msec) as a;\n",
    [(0, 0, 0.0, "x", 0, "A")] * 6 + [(0, 0, 0.0, "x", 1, "A"), (0, 0, 0.0, "x", 0.5, "A"),
                                      (0, 0, 0.0, "x", 0.5, "B"), (0, 0, 0.0, "x", 0, "A")],
    [], 9)
def test_time_window_rows_on_demand_equal_event_by_event(text, spec, cuts, restore_at
                                                         ) -> None:
    """The column route with the window rows made on demand against the per-event engine."""
    check(load_module(parse_epl(SCHEMA + text)), spec, cuts, restore_at)


#: the rows of W0 over PINNED in one batch (hand-derived: avg of x per s over 3 msec; times
#: 0, 1, 1.5, 3.5, 4.5, 5.5 — the ints stay ints; at 3.5 the reading at 0 has left, at 4.5
#: those at 1 and 1.5: y's group emptied and began again)
PINNED_ROWS = [
    (("x", 0.0, 0, 0.0), "0"), (("y", 2.0, 1, 2.0), "1"), (("x", -0.0, 1.5, 0.0), "1.5"),
    (("x", 0.7, 3.5, (-0.0 + 0.7) / 2), "3.5"), (("y", 1.5, 4.5, 1.5), "4.5"),
    (("x", 2.0, 5.5, (0.7 + 2.0) / 2), "5.5")]


def test_rows_made_without_their_events() -> None:
    """Hand-derived: W0 over PINNED in one Arrow batch, its rows read by a pattern (G: so
    made, as objects). The rows' values are the columns', their parts unmade until read; the
    batch decodes only the records the window keeps after it (times > 5.5 - 3: rows 3, 4 and
    5), the first record of x's group, never emptied (row 0, its state's first event), and
    the last record that left (row 2: the window's clock is the later of its time + 3 and the
    last row's); reading one row's parts makes the block's triggers, the very events the
    window holds."""
    from cepflow.spark.columns import ArrowRows, encode

    prog = load_module(parse_epl(SCHEMA + AV + "@Name('G')\ninsert into G\nselect g.s as s"
                                 "\nfrom pattern [every g = W0(g.ax > 99)];\n"))
    engine = Engine(prog, strict_actions=False)
    evs = make(PINNED)
    src = ArrowRows(encode(evs, 4, [None] * 6, [None] * 6), {"A": 4, "B": 4}, 4)
    table = engine.process_columns(src)
    found = table.complex_events()
    assert [(m.params, repr(m.ts)) for m in found] == PINNED_ROWS
    assert all(m._at is not None for m in found)  # (no part made yet)
    assert sorted(src._made) == [0, 2, 3, 4, 5]
    assert engine.windows[0].time == max(5.5, 1.5 + 3)  # (the last row, the last expiry)
    held = [r[-1] for r in engine.windows[0].window.items]
    assert [e.ts for e in held] == [3.5, 4.5, 5.5]
    assert found[4].parts[0] is held[1]  # (the block's triggers made: the held events)
    assert isinstance(found[4]._at, type(None)) and isinstance(found[0]._at, Triggers)
    assert [m.parts[0] for m in found] == evs
    assert sorted(src._made) == [0, 1, 2, 3, 4, 5]
    assert [m.parts[0].seq for m in found] == list(range(6))


def test_rows_nothing_reads_are_not_made() -> None:
    """Hand-derived: W0 alone over PINNED in one Arrow batch — only the output reads its rows
    (``WindowBlock.unread``), so the batch makes none: the table holds them as one block of
    columns without objects (the file job writes it so), and the batch decodes only the
    records the window keeps (rows 0, 2, 3, 4, 5, as above). Asked for, the table makes the
    rows from those columns — the same values, times, ids and parts (the source's own events,
    those the window holds)."""
    from cepflow.runtime.rows import StageMatches
    from cepflow.spark.columns import ArrowRows, encode

    engine = Engine(load_module(parse_epl(SCHEMA + AV)), strict_actions=False)
    evs = make(PINNED)
    src = ArrowRows(encode(evs, 4, [None] * 6, [None] * 6), {"A": 4, "B": 4}, 4)
    table = engine.process_columns(src)
    (block,) = table.blocks
    assert isinstance(block, StageMatches) and block.events is None
    assert block.rank.tolist() == list(range(6)) and table.first_id == 1
    assert sorted(src._made) == [0, 2, 3, 4, 5]
    found = table.complex_events()
    assert [(m.params, repr(m.ts)) for m in found] == PINNED_ROWS
    assert [m.match_id for m in found] == list(range(1, 7))
    held = [r[-1] for r in engine.windows[0].window.items]
    assert found[4].parts[0] is held[1]
    assert [m.parts[0] for m in found] == evs
    check(load_module(parse_epl(SCHEMA + AV)), PINNED, [2, 4], 3)


def test_a_having_keeps_the_events() -> None:
    """A having reads the rows' events: its window makes them with the batch (no Triggers),
    and the route still equals event by event."""
    text = AV.replace("group by a.s;", "group by a.s\nhaving count(*) >= 1;")
    prog = load_module(parse_epl(SCHEMA + text))
    from cepflow.spark.columns import ArrowRows, encode

    engine = Engine(prog, strict_actions=False)
    evs = make(PINNED)
    found = engine.process_columns(ArrowRows(encode(evs, 4, [None] * 6, [None] * 6),
                                             {"A": 4, "B": 4}, 4)).complex_events()
    assert len(found) == 6 and not any(hasattr(m, "_at") for m in found)
    check(prog, PINNED, [3], 6)


@settings(max_examples=30, deadline=None)
@given(programs(), readings, st.lists(st.integers(0, 49), max_size=6))
@example(AV, PINNED, [5, 0, 3])
def test_rows_not_made_are_made_as_the_block_makes_them(text, spec, places) -> None:
    """A block whose rows nothing reads (``unread``: ``found`` a ``Deferred``) makes the rows
    asked for — those a row the split steps for another reason emits — as the block that
    makes them all does: type, parameters, times (by ``repr``), parts (values, and the
    source's own events), in any order, repeats allowed."""
    from cepflow.runtime.kernels.column_blocks import Deferred
    from cepflow.runtime.kernels.window_block import plan_window
    from cepflow.runtime.rows import TypeColumns
    from cepflow.spark.columns import ArrowRows, encode

    prog = load_module(parse_epl(SCHEMA + text))
    evs = make(spec)
    if not evs:
        return
    made = []
    for unread in (False, True):
        engine = Engine(prog, strict_actions=False)
        src = ArrowRows(encode(evs, 4, [None] * len(evs), [None] * len(evs)),
                        {"A": 4, "B": 4}, 4)
        src.number(engine)
        b = plan_window(engine, engine.windows[0], TypeColumns(src, prog.schemas), src,
                        unread=unread)
        if b is None or not len(b.found):
            return
        if unread and not isinstance(b.found, Deferred):  # (not on demand: made anyway)
            assert not b.unread
            return
        at = [p % len(b.found) for p in places] or [0]
        got = (b.found[np.array(at, np.int64)] if unread
               else [b.found[i] for i in at])
        made.append(([(m.type, repr(m.params), repr(m.ts)) for m in got], parts(got),
                     [src.lookup(np.array([i], np.int64))[i] is m.parts[0]
                      for i, m in zip([b.at[j] for j in at], got, strict=True)]))
    assert made[0] == made[1]
    assert all(made[1][2])
