"""A window statement's rows and the patterns over them as column blocks
(kernels/column_blocks.py, ``ColumnBlocks.add_window`` and ``_through``): over Arrow batches,
the rows a sliding window makes at its arrivals (air quality's six averages, a row per
reading) come back as a ``StageMatches`` block — a field item the row's input field, an
aggregate a ``(VALUE, i)`` column of the rows' own values — and a single-stage pattern over
them (the grades) as a block in input rows too, its items reading the window row's fields,
values and its own literals; both hold the split's own objects, so ``complex_events()`` is
unchanged and only the writer (``encode_match_table``) reads them column-wise. Over random
programs of air quality's shape and test_split's (kernel patterns beside windows, patterns
over their rows, time batches, rules), random streams, batches cut anywhere and a
save/restore in the middle: the rows written equal ``match_batch`` of the complex events, and
everything equals the split without blocks (every match an object, as before); and
hand-derived blocks and rows."""

from hypothesis import event, given, settings
from hypothesis import strategies as st
from tests.esper.test_air_quality_columns import AIR, AIR_SPEC, MIXED, TEXTS, make, readings
from tests.esper.test_air_quality_columns import programs as air_programs
from tests.esper.test_esper_kernel import SCHEMA
from tests.esper.test_split import PROGRAMS as SPLIT_PROGRAMS
from tests.esper.test_split import program
from tests.esper.test_split_column_blocks import check_blocks, esper_rows, numbered

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.outputs.records import match_batch
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels.column_blocks import ColumnBlocks
from cepflow.runtime.rows import CONST, VALUE, StageMatches
from cepflow.spark.columns import encode_match_table


def air_events(spec: list, restore_at: int) -> list[Event]:
    """test_air_quality_columns' readings, numbered as a reader numbers them (from 0 again
    after the restore)."""
    evs = make(spec)
    for i, e in enumerate(evs):
        e.seq = i - (restore_at if i >= restore_at else 0)
    return evs


def counted(f):
    """Run ``f`` counting the matches the window blocks and the blocks through them hold."""
    n = [0]
    add_window, through = ColumnBlocks.add_window, ColumnBlocks._through

    def spy_window(self, w, src):
        add_window(self, w, src)
        got = self.window_rows.get(id(getattr(w, "found", None)))
        n[0] += 0 if got is None else len(got.at)

    def spy_through(self, b, w):
        got = through(self, b, w)
        n[0] += 0 if got is None else len(got.at)
        return got

    from unittest.mock import patch
    with patch.object(ColumnBlocks, "add_window", spy_window), \
            patch.object(ColumnBlocks, "_through", spy_through):
        f()
    return n[0]


@settings(max_examples=60, deadline=None)
@given(air_programs(), st.sampled_from([TEXTS, MIXED]).flatmap(readings),
       st.lists(st.integers(0, 70), max_size=3), st.integers(0, 70))
def test_air_quality_shape_in_blocks(text, spec, cuts, restore_at) -> None:
    """Sliding averages (text filters, text or integer keys, mixed values), grade patterns
    over them with literals, the worst grade per time batch."""
    n = counted(lambda: check_blocks(load_module(parse_epl(SCHEMA + text)), spec, cuts,
                                     restore_at, make=air_events))
    event(f"window and grade rows in blocks: {'some' if n else 'none'}")


def test_air_quality_pinned_stream_comes_in_window_blocks() -> None:
    """AIR over 60 readings cut twice: both averages' arrival rows and every grade come in
    blocks (the levels, time batch rows, stay objects)."""
    prog = load_module(parse_epl(SCHEMA + AIR))
    n = counted(lambda: check_blocks(prog, AIR_SPEC, [17, 40], 30, make=air_events))
    windows = sum(1 for _k, s, _x, _dt in AIR_SPEC if s in ("CO", "O3"))
    assert n >= 2 * windows - 6  # (rows of both windows, and each one's grade; few levels)


@settings(max_examples=60, deadline=None)
@given(*SPLIT_PROGRAMS)
def test_split_programs_in_blocks(kernel_stmts, others, spec, cuts, restore_at,
                                  ruled) -> None:
    """test_split's programs: kernel patterns beside window statements over the input (a
    row per event, fully aggregated, length windows), patterns over their rows, time
    batches, patterns per event, rules."""
    n = counted(lambda: check_blocks(program(kernel_stmts, others, ruled), spec, cuts,
                                     restore_at))
    event(f"window rows in blocks: {'some' if n else 'none'}")


#: an average per station and a grade over it (air quality's shape, one of each)
PINNED = ("create schema R(s string, v double);\n"
          "@Name('Av')\ninsert into Av\nselect r.s as s, r.v as v, avg(r.v) as mean\n"
          "from R.win:time(10 msec) as r\ngroup by r.s;\n"
          "@Name('Good')\ninsert into Quality\nselect a.s as station, 'X' as p, 1 as grade, "
          "a.mean as average\nfrom pattern [every a = Av(a.mean < 5)];\n")


def _readings() -> list[Event]:
    out = []
    for i, (s, v, ts) in enumerate([("x", 2.0, 1), ("y", 8.0, 2), ("x", 4.0, 3),
                                    ("x", 9.5, 15)]):
        e = Event("R", (s, v), ts, id=f"r{i}")
        e.seq = i
        out.append(e)
    return out


def test_hand_derived_blocks_of_an_average_and_its_grade() -> None:
    """R(x, 2)@1 R(y, 8)@2 R(x, 4)@3 R(x, 9.5)@15: Av's rows (x, 2, 2.0) (y, 8, 8.0)
    (x, 4, 3.0) (x, 9.5, 9.5) — at 15 the x readings of 1 and 3 have left —; Good at the
    first and third (means 2.0 and 3.0 below 5; its type Quality). Detection order: Av#1 Q#2 |
    Av#3 | Av#4 Q#5 | Av#6. Av's block: fields the input row's s and v, the mean a value column;
    Good's: the station through Av's field s (the input row's), its literals, the average
    through Av's value column, gathered."""
    prog = load_module(parse_epl(PINNED))
    engine = Engine(prog)
    src = esper_rows_r(_readings())
    table = engine.process_columns(src)
    blocks = {b.pattern: b for b in table.blocks if isinstance(b, StageMatches)}
    av, good = blocks["Av"], blocks["Quality"]
    assert av.fields == ((0, 0), (0, 1), (VALUE, 0))
    assert av.values == ([2.0, 8.0, 3.0, 9.5],)
    assert av.rank.tolist() == [0, 2, 3, 5] and av.at.tolist() == [0, 1, 2, 3]
    assert av.rows.tolist() == [[0, 1, 2, 3]]
    assert good.fields[0] == (0, 0) and good.fields[3] == (VALUE, 0)
    assert [good.consts[f[1]] for f in good.fields[1:3] if f[0] == CONST] == ["X", 1]
    assert good.values == ([2.0, 3.0],)
    assert good.rank.tolist() == [1, 4] and good.at.tolist() == [0, 2]
    assert good.rows.tolist() == [[0, 2]]
    assert len(table.blocks) == 2  # (nothing left as objects)
    written = encode_match_table(table, src).to_pylist()
    assert [(w["pattern"], w["ts"], w["params"], w["events"]) for w in written] == [
        ("Av", 1, '{"s":"x","v":2.0,"mean":2.0}', ["r0"]),
        ("Quality", 1, '{"station":"x","p":"X","grade":1,"average":2.0}', ["r0"]),
        ("Av", 2, '{"s":"y","v":8.0,"mean":8.0}', ["r1"]),
        ("Av", 3, '{"s":"x","v":4.0,"mean":3.0}', ["r2"]),
        ("Quality", 3, '{"station":"x","p":"X","grade":1,"average":3.0}', ["r2"]),
        ("Av", 15, '{"s":"x","v":9.5,"mean":9.5}', ["r3"])]
    found = table.complex_events()
    assert [(m.type, m.match_id) for m in found] == [
        ("Av", 1), ("Quality", 2), ("Av", 3), ("Av", 4), ("Quality", 5), ("Av", 6)]
    assert written == match_batch(found).to_pylist()
    ref = list(Engine(prog).run(_readings()))
    assert match_batch(ref).to_pylist() == written


def esper_rows_r(evs: list[Event]):
    """``evs`` (type R) as an Arrow batch of the layout."""
    from cepflow.spark.columns import ArrowRows, encode

    return ArrowRows(encode(evs, 2, [None] * len(evs), [None] * len(evs)), {"R": 2}, 2)


def test_a_window_row_pushed_out_of_its_group_stays_objects() -> None:
    """A grouped length window whose arrival pushes out another group's record also makes
    that group's row (its fields the pushed-out record's, not the arriving row's): the block
    is not made (``arrivals`` false), every row an object — and the same rows written."""
    prog = load_module(parse_epl(
        SCHEMA + "@Name('L')\ninsert into L\nselect count(*) as c, a.k as k\n"
        "from A.win:length(1) as a\ngroup by a.k;\n"))
    spec = [(0, 1, 0.5, 1), (1, 2, 0.5, 1), (1, 3, 0.5, 1)]
    evs = numbered([("A", k, v, x, t) for k, v, x, t in spec], 0)
    src = esper_rows(evs)
    table = Engine(prog).process_columns(src)
    assert not [b for b in table.blocks if isinstance(b, StageMatches)]
    assert encode_match_table(table, src).to_pylist() == match_batch(
        list(Engine(prog).run(numbered([("A", k, v, x, t) for k, v, x, t in spec], 0)))
    ).to_pylist()
