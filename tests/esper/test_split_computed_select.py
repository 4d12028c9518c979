"""A kernel pair pattern whose select list computes values (contractions' Duration: ``a1.id``,
``a2.ts - a1.ts``) as a column block over Arrow batches (kernels.pair.stage_blocks with the
batch's columns, ``_computed_block``): each item naming a field is that field of its row, the
time the match's own, an arithmetic item a ``(VALUE, i)`` column computed from the batch's
columns exactly as the lazy matches of ``Engine.run`` compute it (runtime.vector_expr; a
column of mixed or null values declines the block, and the matches are objects); so such a
pattern nothing reads is not made (``ColumnBlocks.defer``), and one something reads is
written column-wise. Over random programs of that shape (arithmetic over both stages' fields,
literals, ``current_timestamp()``, a guard, ``within``; read by a pattern or a rule, or by
nothing; a statement per event beside it stepping rows), random streams with nulls, batches
cut anywhere and a save/restore in the middle: everything equals ``Engine.run`` (complex
events, kinds, rows written, statistics, saved state, end of input) and the split without
blocks; and hand-derived blocks and rows."""

from hypothesis import event, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import SCHEMA
from tests.esper.test_split_column_blocks import check_blocks, esper_rows, numbered
from tests.esper.test_split_deferred import check_deferred
from tests.esper.test_split_higher import DENSE, STREAMS

from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.outputs.records import match_batch
from cepflow.runtime.engine import Engine
from cepflow.runtime.rows import VALUE, StageMatches
from cepflow.spark.columns import encode_match_table

#: a statement per event over a type no stream here holds: the program is split (a pair alone
#: is the pair kernel's own program), and no row is stepped for it
QUIET = ("create schema C(k integer);\n@Name('Q')\ninsert into Q\nselect c.k as k\nfrom "
         "pattern [c = C(c.k = 2) and not C];\n")

#: test_split_higher's events without nulls (a null operand declines the block: there, the
#: matches are objects)
CLEAN = st.lists(st.tuples(st.sampled_from(["A", "B"]), st.sampled_from([0, 1, 2]),
                           st.sampled_from([0, 1, 2, 3]), st.sampled_from([0.0, 0.7, 1.2, 2.0]),
                           st.sampled_from([0, 0, 1, 2])), min_size=5, max_size=60)

ITEMS = ["a.k as k", "b.v - a.v as dv", "(a.x + b.x) * 2 as sx", "b.v * a.v - 1 as p",
         "7 as seven", "current_timestamp() as now", "b.x as bx", "-a.v as neg",
         "a.v + 0.5 as half", "b.k as bk", "current_timestamp() - a.v as age"]


@st.composite
def computed(draw: st.DrawFn) -> str:
    """``P``: a keyed pair with a computed select list (some arithmetic item always), perhaps
    a guard over both stages and ``within``; then perhaps a pattern ``H`` over P's output (P
    read: made, written column-wise; H's select list computed over P's and A's fields too,
    over the derived stream), a statement per event reading B (rows stepped)."""
    items = draw(st.lists(st.sampled_from(ITEMS), min_size=1, max_size=4, unique=True))
    if not any(("-" in i or "+" in i or "*" in i) for i in items):
        items.append("b.v - a.v as dv")
    guard = draw(st.sampled_from(["", " and b.v >= a.v", " and b.x - a.x <= 1"]))
    within = draw(st.sampled_from(["", " where timer:within(3 msec)"]))
    first = draw(st.sampled_from(["A()", "A(a.v > 0)"]))
    last = draw(st.sampled_from([f"b = B(b.k = a.k{guard})",  # (or alternatives: objects)
                                 f"(b = B(b.k = a.k{guard}) or d = A(d.k = a.k and d.v = 2))"]))
    text = QUIET + (f"@Name('P')\ninsert into P\nselect {', '.join(items)}\nfrom pattern "
                    f"[every a = {first} -> {last}{within}];\n")
    if draw(st.booleans()) and "a.k as k" in items:
        h = draw(st.sampled_from(["p.k as k", "p.k as k, c.v - p.k as d",
                                  "c.x * 2 - p.k as d, p.k as k"]))
        text += (f"@Name('H')\ninsert into H\nselect {h}\nfrom pattern "
                 "[every p = P -> c = A(c.k = p.k)];\n")
    if draw(st.booleans()):
        text += ("@Name('S')\ninsert into S\nselect b.k as k\nfrom pattern "
                 "[b = B(b.v = 2) and not A];\n")
    return text


@settings(max_examples=80, deadline=None)
@given(computed(), st.one_of(CLEAN, STREAMS, DENSE), st.lists(st.integers(0, 80), max_size=4),
       st.integers(0, 80))
def test_computed_select_against_engine_run(text, spec, cuts, restore_at) -> None:
    """The column route (unread: deferred; read: made, blocks written) against Engine.run."""
    unmade = check_deferred(load_module(parse_epl(SCHEMA + text)), spec, cuts, restore_at)
    event(f"matches unmade: {'some' if unmade else 'none'}")


@settings(max_examples=60, deadline=None)
@given(computed(), st.one_of(CLEAN, STREAMS, DENSE), st.lists(st.integers(0, 80), max_size=4),
       st.integers(0, 80))
def test_computed_select_against_the_split_without_blocks(text, spec, cuts, restore_at
                                                          ) -> None:
    """The blocks against the split whose matches are all objects."""
    in_blocks = check_blocks(load_module(parse_epl(SCHEMA + text)), spec, cuts, restore_at)
    event(f"matches in blocks: {'some' if in_blocks else 'none'}")


#: contractions' Duration in test_esper_kernel's schema
DURATION = QUIET + ("@Name('D')\ninsert into D\nselect a.k as k, b.v - a.v as delay, "
            "current_timestamp() as now\nfrom pattern [every a = A(a.x > 0.5) -> "
            "b = B(b.k = a.k and b.x > 0.5 and b.v - a.v <= 5)];\n")


def test_hand_derived_block_of_a_computed_select_list() -> None:
    """A1(k=1, v=3) B2(k=1, v=10: 7 > 5, no) A3(k=2, v=4) B4(k=1, v=6: A1 → 3) B5(k=2,
    v=9: A3 → 5) B6(k=2, v=10: A3 ended). D nothing reads: one block, no object; k the A
    row's field, now the match's time, the delay a value column [3, 5]; written as
    Engine.run writes them."""
    prog = load_module(parse_epl(SCHEMA + DURATION))
    spec = [("A", 1, 3, 0.7, 1), ("B", 1, 10, 0.7, 1), ("A", 2, 4, 0.7, 1),
            ("B", 1, 6, 0.7, 1), ("B", 2, 9, 0.7, 1), ("B", 2, 10, 0.7, 1)]
    src = esper_rows(numbered(spec, 0))
    table = Engine(prog).process_columns(src)
    (b,) = table.blocks
    assert isinstance(b, StageMatches) and b.events is None
    assert b.fields == ((0, 0), (VALUE, 0), (-1, 0)) and b.values == ([3, 5],)
    assert b.rows.tolist() == [[0, 2], [3, 4]] and b.rank.tolist() == [0, 1]
    written = encode_match_table(table, src).to_pylist()
    assert [(w["pattern"], w["ts"], w["params"]) for w in written] == [
        ("D", 4, '{"k":1,"delay":3,"now":4}'), ("D", 5, '{"k":2,"delay":5,"now":5}')]
    ref = list(Engine(prog).run(numbered(spec, 0)))
    assert written == match_batch(ref).to_pylist()
    found = table.complex_events()
    assert [(m.params, m.match_id, m.bindings) for m in found] == [
        ((1, 3, 4), 1, {"k": 1, "delay": 3, "now": 4}),
        ((2, 5, 5), 2, {"k": 2, "delay": 5, "now": 5})]


def test_a_null_operand_leaves_the_matches_objects() -> None:
    """B4's v null: the delay's column is not all ints (runtime.vector_expr declines), so no
    block is made and the matches are made as objects — the same rows written."""
    prog = load_module(parse_epl(SCHEMA + DURATION.replace(" and b.v - a.v <= 5", "")))
    spec = [("A", 1, 3, 0.7, 1), ("B", 1, None, 0.7, 1)]
    src = esper_rows(numbered(spec, 0))
    table = Engine(prog).process_columns(src)
    assert not [b for b in table.blocks if isinstance(b, StageMatches)]
    assert encode_match_table(table, src).to_pylist() == match_batch(
        list(Engine(prog).run(numbered(spec, 0)))).to_pylist()


def test_a_stepped_row_makes_its_match_and_the_rest_stay_a_narrowed_block() -> None:
    """T (per event, reading A only) waits 2 msec after A1(v=3): its timer is due at 3, so
    the row B3 is stepped and D's match there (A1 B3, delay 3) is made as an object; D's
    matches at B4 (A2, delay 5) and B6 (A5, delay 1) stay unmade, each recorded with its own
    delay only (the block's rows and values narrowed to the places recorded)."""
    prog = load_module(parse_epl(SCHEMA + DURATION + (
        "@Name('T')\ninsert into T\nselect a.k as k\nfrom pattern [every a = A(a.v = 3) -> "
        "timer:interval(2 msec)];\n")))
    spec = [("A", 1, 3, 0.7, 1), ("A", 2, 4, 0.7, 1), ("B", 1, 6, 0.7, 1),
            ("B", 2, 9, 0.7, 1), ("A", 3, 1, 0.7, 1), ("B", 3, 2, 0.7, 1)]
    src = esper_rows(numbered(spec, 0))
    table = Engine(prog).process_columns(src)
    unmade = [(b.rank.tolist(), b.rows.tolist(), b.values) for b in table.blocks
              if isinstance(b, StageMatches) and b.events is None]
    assert unmade == [([2], [[1], [3]], ([5],)), ([3], [[4], [5]], ([1],))]
    written = encode_match_table(table, src).to_pylist()
    assert [(w["pattern"], w["ts"], w["params"]) for w in written] == [
        ("T", 3, '{"k":1}'), ("D", 3, '{"k":1,"delay":3,"now":3}'),
        ("D", 4, '{"k":2,"delay":5,"now":4}'), ("D", 6, '{"k":3,"delay":1,"now":6}')]
    assert check_deferred(prog, spec, [], 0) == 2
