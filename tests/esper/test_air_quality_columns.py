"""Air quality's own shape through the program split, column-wise (issue 21, item 2): sliding
averages over the readings of one pollutant each (a text filter, ``pollutant = 'CO'``),
grouped by a text key (the station), grade patterns over their rows and the worst grade per
time batch over the grades' union. Text filters are decided by dictionary codes (each distinct
text compared once: ``TypeColumns.codes``), text keys numbered by code, the grades made with
their parameters column by column, the aggregated time batch's rows made column-wise, and the
rows nothing reads merged into the engine's order by one sort (``split._merged``). Over random
programs and streams — texts only, or texts mixed with numbers and nulls (then the codes do
not apply) — batches cut anywhere, single events between them and a save/restore in the
middle, everything equals the per-event engine: complex events, ids, order, bindings,
statistics, open instances, saved state and the end of input; also over Arrow batches."""

import itertools

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import SCHEMA, check_columns
from tests.esper.test_split import check_split

from cepflow.events.event import Event
from cepflow.language import ast
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.kernels import split
from cepflow.runtime.rows import EventRows, TypeColumns
from cepflow.runtime.vector_expr import filter_mask

#: the pollutant column's values: texts only (dictionary codes), or with numbers and nulls
#: (1 and 1.0 and True one group key; the codes decline and the values are compared as before)
TEXTS = ["CO", "O3", "x", "", "CO"]
MIXED = ["CO", "O3", 1, 1.0, True, None, "1"]


@st.composite
def programs(draw: st.DrawFn) -> str:
    """One or two sliding averages over ``A`` filtered by a text, grouped by ``s`` (the
    text) or ``k``, one or two grade patterns over each (literals in their select lists), and
    perhaps the worst grade per 3 msec batch (grouped or not)."""
    key = draw(st.sampled_from(["s", "s", "k"]))
    text = ""
    for w, pol in enumerate(draw(st.sampled_from([["CO"], ["CO", "O3"], ["O3", "CO"]]))):
        flt = draw(st.sampled_from([f"a.s = '{pol}'", f"s != '{pol}'", f"'{pol}' = a.s",
                                    f"a.s = '{pol}' or a.x > 1.5", f"not (a.s = '{pol}')",
                                    ""]))
        size = draw(st.sampled_from([3, 5]))
        text += (f"@Name('W{w}')\ninsert into W{w}\nselect a.{key} as key, a.x as x, "
                 f"avg(a.x) as ax\nfrom A{f'({flt})' if flt else ''}.win:time({size} msec) "
                 f"as a\ngroup by a.{key};\n")
        for g, bound in enumerate(draw(st.sampled_from([["g.ax < 1", "g.ax >= 1"],
                                                        ["g.ax >= 0.5"], [""]]))):
            text += (f"@Name('G{w}{g}')\ninsert into Grade\nselect g.key as key, '{pol}' as p, "
                     f"{g + 1} as grade, g.ax as average\nfrom pattern [every g = "
                     f"W{w}({bound})];\n")
    if draw(st.booleans()):
        # (read as columns — the station a field of the input, the grade a literal — or from
        # the grades: an average is no field of the input; kernels.window_block.batch_columns)
        group = draw(st.sampled_from(["\ngroup by l.key", "", "\ngroup by l.p"]))
        arg = draw(st.sampled_from(["l.grade", "l.grade", "l.average"]))
        text += (f"@Name('Level')\ninsert into Level\nselect l.key as key, max({arg}) as grade, "
                 f"count(*) as c\nfrom Grade.win:time_batch(3 msec) as l{group};\n")
    return text


def readings(pool: list):
    """Readings ``A(k, v, x, s)``: k a small integer, s from ``pool``, one to three msec
    apart or at the same instant."""
    return st.lists(st.tuples(st.sampled_from([0, 1, 2]), st.sampled_from(pool),
                              st.sampled_from([0.0, 0.7, 1.2, 2.0]), st.integers(0, 3)),
                    max_size=70)


def make(spec) -> list[Event]:
    ts, out = 0, []
    for i, (k, s, x, dt) in enumerate(spec):
        ts += dt
        out.append(Event("A", (k, i % 4, x, s), ts, id=f"e{i}"))
    return out


AIR = ("@Name('W0')\ninsert into W0\nselect a.s as key, a.x as x, avg(a.x) as ax\n"
       "from A(a.s = 'CO').win:time(5 msec) as a\ngroup by a.s;\n"
       "@Name('W1')\ninsert into W1\nselect a.s as key, a.x as x, avg(a.x) as ax\n"
       "from A(a.s = 'O3').win:time(3 msec) as a\ngroup by a.s;\n"
       "@Name('G00')\ninsert into Grade\nselect g.key as key, 'CO' as p, 1 as grade, "
       "g.ax as average\nfrom pattern [every g = W0(g.ax < 1)];\n"
       "@Name('G01')\ninsert into Grade\nselect g.key as key, 'CO' as p, 2 as grade, "
       "g.ax as average\nfrom pattern [every g = W0(g.ax >= 1)];\n"
       "@Name('G10')\ninsert into Grade\nselect g.key as key, 'O3' as p, 1 as grade, "
       "g.ax as average\nfrom pattern [every g = W1()];\n"
       "@Name('Level')\ninsert into Level\nselect l.key as key, max(l.grade) as grade, "
       "count(*) as c\nfrom Grade.win:time_batch(3 msec) as l\ngroup by l.key;\n")
#: a stream where both pollutants' stations come and go across batches of the level
AIR_SPEC = [(i % 3, ["CO", "O3", "x", "CO"][i % 4], [0.0, 0.7, 1.2, 2.0][i % 4], i % 3)
            for i in range(60)]


#: keys 1 then 1.0: one group, keyed as the runner keys it — the time batch's group of a new
#: batch by its first row's key, a sliding group emptied and made again by its new arrival's
KEYS_1_10 = ("@Name('W0')\ninsert into W0\nselect a.s as key, a.x as x, avg(a.x) as ax\n"
             "from A(s != 'O3').win:time(3 msec) as a\ngroup by a.s;\n"
             "@Name('G00')\ninsert into Grade\nselect g.key as key, 'CO' as p, 1 as grade, "
             "g.ax as average\nfrom pattern [every g = W0(g.ax < 1)];\n"
             "@Name('Level')\ninsert into Level\nselect l.key as key, max(l.grade) as grade, "
             "count(*) as c\nfrom Grade.win:time_batch(3 msec) as l\ngroup by l.key;\n")


@settings(max_examples=150, deadline=None)
@given(programs(), st.sampled_from([TEXTS, MIXED]).flatmap(readings),
       st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
@example(AIR, AIR_SPEC, [17, 40], 30)
@example(KEYS_1_10, [(0, "CO", 0.0, 0), (0, 1, 0.0, 1), (0, 1.0, 0.0, 2)], [], 70)
@example(KEYS_1_10, [(0, 1, 0.0, 0), (0, "CO", 0.0, 1), (0, 1.0, 0.0, 3), (0, 1, 0.0, 1)], [],
         70)
@example(AIR, [(k, s, x, dt) for (k, s, x, dt) in AIR_SPEC[:40]], [], 70)
def test_air_quality_shape_equals_event_by_event(text, spec, cuts, restore_at) -> None:
    """The split (window blocks, the cascade, the loose rows) against the per-event engine."""
    check_split(load_module(parse_epl(SCHEMA + text)), spec, cuts, restore_at, events=make)


@settings(max_examples=60, deadline=None)
@given(programs(), st.sampled_from([TEXTS, MIXED]).flatmap(readings),
       st.lists(st.integers(0, 70), max_size=3))
@example(AIR, AIR_SPEC, [23])
def test_air_quality_shape_over_arrow_columns(text, spec, cuts) -> None:
    """Over Arrow batches (Engine.process_columns: a column source's text filter by codes):
    the complex events, rows written, statistics and state of the per-event engine."""
    check_columns(load_module(parse_epl(SCHEMA + text)), lambda: make(spec), cuts)


@given(st.lists(st.sampled_from(["CO", "O3", "", "é", "CO ", 1, 1.0, None, True]),
                max_size=30), st.sampled_from(["CO", "", "é", "O3"]))
@example(["CO", "O3", "CO"], "CO")
def test_text_codes_decide_as_each_value(values, const) -> None:
    """``TypeColumns.codes``: for texts only, codes whose distinct values are the texts
    (equal texts share a code); the text equality filter by codes is ``==`` on each value;
    None (and the per-value comparison) when any value is not a ``str``."""
    evs = [Event("A", (0, 0, 0.0, v), i) for i, v in enumerate(values)]
    cols = TypeColumns(EventRows(evs), load_module(parse_epl(SCHEMA)).schemas)
    coded = cols.codes("A", 3)
    texts = bool(values) and all(type(v) is str for v in values)
    assert (coded is not None) == texts
    if coded is not None:
        codes, uniq = coded
        assert [uniq[c] for c in codes.tolist()] == values
        assert len(set(uniq)) == len(uniq)
    if not values:
        return
    for op, sides in itertools.product(["==", "!="], [(0, 1), (1, 0)]):
        pair = (ast.Name("s"), ast.Const(const))
        where = ast.Binary(op, pair[sides[0]], pair[sides[1]])
        want = [(v == const) == (op == "==") for v in values]
        for codes_of in (None, lambda k: cols.codes("A", k)):
            got = filter_mask(where, {"k": 0, "v": 1, "x": 2, "s": 3},
                              lambda k: cols.column("A", k), codes=codes_of)
            # (a column of numbers only is left to the closure, with or without codes)
            assert (got is None and not texts and coded is None
                    and all(type(v) is not str for v in values)
                    if got is None else got.tolist() == want)


@st.composite
def loose_parts(draw: st.DrawFn) -> list:
    """The loose rows' parts as split._Replay has them: (late, output rank, id rank, rows),
    the late ones (matches) first, then the boundaries' (whose instants tell them apart at a
    row); the ranks distinct among the parts of one lateness (a plan's, a window's)."""
    lates = sorted(draw(st.lists(st.integers(0, 1), min_size=1, max_size=5)), reverse=True)
    n = len(lates)
    outs = draw(st.permutations(range(n)))
    ids = draw(st.permutations(range(n)))
    return [(late, outs[i], ids[i], draw(st.lists(st.integers(0, 6), max_size=6)))
            for i, late in enumerate(lates)]


@given(loose_parts(), st.booleans())
@example([(1, 0, 1, [0, 0, 1]), (1, 1, 0, [0, 1]), (0, 2, 2, [0, 1, 1])], False)
def test_merged_order_is_lexsorts(parts, wide) -> None:
    """``split._merged``: the output order and the ids' ranks of the loose rows are those of
    ``lexsort`` by (row, late, when, rank, each part's own order), with the keys as one int64
    and when they do not fit (``wide``: the ``lexsort`` it falls back on)."""
    # (each part's rows ascending, the boundaries' instants too)
    lens = [len(p[3]) for p in parts]
    rows = np.array([r for p in parts for r in sorted(p[3])], np.int64)
    late = np.array([p[0] for p in parts], np.int64)
    out_rank = np.array([p[1] for p in parts], np.int64)
    id_rank = np.array([p[2] for p in parts], np.int64)
    when = [np.sort(np.array([r * 0.5 + (i % 2) for i, r in enumerate(sorted(p[3]))]))
            for p in parts if not p[0]]
    flat_when = np.concatenate([np.zeros(sum(n for p, n in zip(parts, lens, strict=True)
                                             if p[0])), *when])
    j = np.concatenate([np.arange(n) for n in lens])
    e_late, e_out, e_id = (np.repeat(a, lens) for a in (late, out_rank, id_rank))
    want = np.lexsort((j, e_out, flat_when, e_late, rows))
    want_rank = np.empty(len(rows), np.int64)
    want_rank[np.lexsort((j, e_id, flat_when, e_late, rows))] = np.arange(len(rows))
    fits = split._FITS
    try:
        if wide:
            split._FITS = 0
        o, rank = split._merged(rows, late, when, out_rank, id_rank, lens)
    finally:
        split._FITS = fits
    assert o.tolist() == want.tolist() and rank.tolist() == want_rank.tolist()


def test_the_level_reads_the_grades_station_and_grade_as_columns(monkeypatch) -> None:
    """AirQualityLevel's shape (kernels.window_block.batch_columns): the time batch over the
    grades' union reads each grade's key — the reading's field through the average's row —
    and grade — the grade pattern's literal — as columns, so the grades are made lazily and
    never asked for their parameters (no fill_params, no eager grades); the rows, ids and
    state are the per-event engine's. A level reading the average (an aggregate of the
    window row, no field of the input) reads the grades' parameters as before."""
    from cepflow.runtime.engine import Engine
    from cepflow.runtime.kernels import cascade, window_block

    prog = load_module(parse_epl(SCHEMA + AIR))
    given: list = []
    filled: list = []
    real_columns, real_fill = window_block.batch_columns, cascade.fill_params
    coded: list = []
    real_codes = window_block.batch_codes
    monkeypatch.setattr(cascade, "batch_codes", lambda *a: coded.append(real_codes(*a))
                        or coded[-1])

    def spy_columns(*a):
        out = real_columns(*a)
        given.append(out)
        return out

    def spy_fill(found):
        filled.append(len(found))
        return real_fill(found)

    monkeypatch.setattr(cascade, "batch_columns", spy_columns)
    monkeypatch.setattr(cascade, "fill_params", spy_fill)
    eager: list = []
    real_one = split.one_stage_matches
    monkeypatch.setattr(split, "one_stage_matches",
                        lambda *a: eager.append(1) or real_one(*a))
    evs = make(AIR_SPEC)
    one = Engine(prog)
    ref = [(m.type, m.params, m.ts, m.match_id) for e in make(AIR_SPEC) for m in one.process(e)]
    many = Engine(prog)
    got = [(m.type, m.params, m.ts, m.match_id) for m in many.process_batch(evs)]
    assert got == ref and any(t == "Level" for t, *_ in got)
    assert given and all(g is not None and sorted(g) == [0, 2] for g in given)
    keys = [e.params[3] for e in evs if e.params[3] in ("CO", "O3")]
    assert set(given[0][0]) <= set(keys) and set(given[0][2]) <= {1, 2}
    assert not filled and not eager
    # (the key, texts of the readings' column, as its dictionary codes)
    assert coded and all(list(c) == [0] for c in coded)
    # (the average is the window row's aggregate: read from the grades, made eagerly)
    avg = AIR.replace("max(l.grade)", "max(l.average)")
    given.clear()
    prog = load_module(parse_epl(SCHEMA + avg))
    one, many = Engine(prog), Engine(prog)
    ref = [(m.type, m.params, m.ts, m.match_id) for e in make(AIR_SPEC) for m in one.process(e)]
    got = [(m.type, m.params, m.ts, m.match_id) for m in many.process_batch(make(AIR_SPEC))]
    assert got == ref and given == [None] and eager


def kept(engine) -> list:
    """The events the time batches' groups keep (their FIRST records, the rows last
    posted) as (type, match id, parameters)."""
    from cepflow.windows.aggregates import FIRST
    from cepflow.windows.held import EVENT

    out = []
    for r in engine.windows:
        if r.statement.window.kind != "time_batch":
            continue
        proc = r.window.proc
        recs = [st[FIRST] for st in proc.agg.groups.values()]
        recs += [v for v in getattr(proc, "last", {}).values() if isinstance(v, tuple)]
        out.append([(e.type, getattr(e, "match_id", None), e.params)
                    for e in (rec[EVENT] for rec in recs if rec is not None)])
    return out


@settings(max_examples=80, deadline=None)
@given(programs(), st.sampled_from([TEXTS, MIXED]).flatmap(readings),
       st.lists(st.integers(0, 70), max_size=3), st.integers(0, 70))
@example(AIR, AIR_SPEC, [23], 40)
@example(AIR, AIR_SPEC, [], 17)
def test_unmade_rows_and_grades_over_arrow_columns_with_restore(text, spec, cuts,
                                                                restore_at) -> None:
    """The column route's window rows and grades left unmade (only planned single-stage
    patterns read the rows, ColumnBlocks.planned_readers; only the level reads the grades,
    as columns: ColumnBlocks.defer over a deferred block), batches cut anywhere, a
    save/restore between batches: the complex events, rows written, statistics, state and
    end of input of the per-event engine — and the objects the tables give are one
    another's parts as per event (a grade's part is the very window row the table gives,
    with its id)."""
    from tests.esper.test_split import check_split_columns

    prog = load_module(parse_epl(SCHEMA + text))
    got = check_split_columns(prog, spec, cuts, restore_at, events=make)
    if got is None:
        return
    one, many, per_batch = got
    # (the records the level keeps hold the grades as per event: with their ids)
    assert kept(many) == kept(one)
    for found in per_batch:
        mine = {id(m) for m in found}
        for m in found:
            if m.type.startswith("G"):  # (a grade: its part a window row of the batch's)
                (row,) = m.parts
                assert row.type.startswith("W") and row.match_id < m.match_id
                if row.match_id >= found[0].match_id:
                    assert id(row) in mine
            elif m.type.startswith("W"):
                assert [p.type for p in m.parts] == ["A"]


def test_the_column_route_makes_only_the_rows_the_level_keeps(monkeypatch) -> None:
    """A spy: over Arrow batches AIR's window rows and grades are made only for the level's
    groups' first rows (the batch keeps those records: StreamRows.lookup) — fewer than the
    grades — and written from columns; Engine.run makes every one (its output)."""
    from tests.esper.test_esper_kernel import fed_columns

    from cepflow.runtime.engine import Engine
    from cepflow.runtime.kernels import pair
    from cepflow.runtime.kernels.column_blocks import Made

    made: list[int] = []
    real = pair.lazy_matches
    monkeypatch.setattr(pair, "lazy_matches",
                        lambda *a: made.append(len(out := real(*a))) or out)
    prog = load_module(parse_epl(SCHEMA + AIR))
    many = Engine(prog)
    evs = make(AIR_SPEC)
    for i, e in enumerate(evs):
        e.seq = i
    from cepflow.spark.columns import ArrowRows, encode

    src = ArrowRows(encode(evs, 4, [None] * len(evs), [None] * len(evs)), {"A": 4, "B": 4}, 4)
    table = many.process_columns(src)
    grades = sum(len(b.at) for b in table.blocks if getattr(b, "pattern", "").startswith("G"))
    assert grades and 0 < sum(made) < grades
    shared = [b for b in table.blocks if isinstance(b.events, Made)]
    assert {b.pattern[0] for b in shared} == {"W", "G"}
    made.clear()
    one = Engine(prog)
    ref = [m for e in make(AIR_SPEC) for m in one.process(e)]
    assert [(m.type, m.match_id) for m in table.complex_events()] == [
        (m.type, m.match_id) for m in ref[:table.count]]
    found, _w = fed_columns(Engine(prog), make(AIR_SPEC), {"A": 4, "B": 4})
    assert len(found) == table.count
