"""Patterns over a window statement's rows in the program split (kernels/cascade.py,
``rows_candidates``, ``window_rows``, ``plan_higher``): an Esper pair or chain whose first or
middle stages read the rows of window statements over the input (``insert into W select …
from A#…``; a pattern over ``W``) and whose last stage reads input types is planned over the
derived stream — the blocks' rows at arrivals in their input row's cascade, the rows of a
boundary or an expiry instant as time passes before the first input row at or after it, at
the instant's time — merged with its own input rows, so neither the window's rows nor the
pattern's input rows are stepped (benchmarks/pattern_shapes.py's ``ho_esper_win``). Over
random programs and streams, batches cut anywhere, single events between them, a save/restore
in the middle, time passing after a batch and Arrow columns, it equals the per-event engine:
the same complex events (parameters, parts, match ids), token ids, rule firings, statistics,
open instances and saved state."""

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import SCHEMA, events, state
from tests.esper.test_split import (
    check_split,
    check_split_columns,
    check_time_passing,
    in_lists,
    in_two_batches,
    rows,
    stepping,
)
from tests.esper.test_split_higher import (
    STREAMS,
    WITHIN,
    higher_patterns,
    kernel_patterns,
    program_of,
)
from tests.esper.test_split_windows_over import INTS

from cepflow.language import ast as A
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels import cascade

#: window statements over the input ({t}: A or B), each giving ``k``, ``v`` and ``x`` (the
#: fields test_split_higher's patterns read): a grouped fully aggregated sliding window (rows
#: at arrivals and at expiry instants), a row per arrival, an ungrouped one with a filter,
#: length windows (a push-out's group's row), time and length batches (rows at boundaries, at
#: closing rows), ``having``
WINDOWS = [
    "select w.k as k, count(*) as v, avg(w.x) as x\nfrom {t}.win:time({d} msec) as w\n"
    "group by w.k",
    "select w.k as k, w.v as v, avg(w.x) as x\nfrom {t}.win:time({d} msec) as w\ngroup by w.k",
    "select max(w.k) as k, count(*) as v, sum(w.x) as x\nfrom {t}(w.v >= 1).win:time({d} msec) "
    "as w",
    "select w.k as k, sum(w.v) as v, max(w.x) as x\nfrom {t}.win:length({m}) as w\ngroup by w.k",
    "select w.k as k, count(*) as v, min(w.x) as x\nfrom {t}.std:groupwin(w.k).win:length({m}) "
    "as w\ngroup by w.k",
    "select w.k as k, count(*) as v, avg(w.x) as x\nfrom {t}.win:time_batch({d} msec) as w\n"
    "group by w.k",
    "select max(w.k) as k, sum(w.v) as v, w.x as x\nfrom {t}.win:length_batch({m}) as w",
    "select w.k as k, count(*) as v, sum(w.x) as x\nfrom {t}.win:time({d} msec) as w\n"
    "group by w.k\nhaving count(*) > 1",
]


@st.composite
def windows(draw: st.DrawFn, name: str) -> str:
    form = draw(st.sampled_from(WINDOWS)).format(t=draw(st.sampled_from(["A", "B"])),
                                                 d=draw(st.sampled_from([1, 2, 3, 5])),
                                                 m=draw(st.sampled_from([1, 2, 3])))
    return f"@Name('{name}')\ninsert into {name}\n{form};\n"


#: statements beside them: a pattern over the planned pattern's output, a window over a
#: window's rows and a pattern whose last stage reads them (those rows then stepped), a
#: pattern over the input (its rows stepped)
BESIDE = [
    "@Name('Z')\ninsert into Z\nfrom pattern [every h = H1 -> y = B];\n",
    "@Name('V')\ninsert into V\nselect count(*) as c\nfrom W1.win:length(2);\n",
    "@Name('Y')\ninsert into Y\nfrom pattern [every y = B -> w = W1(w.k = y.k)];\n",
    "@Name('D')\ninsert into D\nfrom pattern [every (x = A(x.v > 1) -> y = B(y.k = x.k))];\n",
    # (single stages over a window's rows, kernels.cascade.plan_cascade: their instances take
    # ids in the same cascade as the patterns' above)
    "@Name('S1')\ninsert into S1\nfrom pattern [every s = W1(s.v >= 1)];\n",
    "@Name('S2')\ninsert into S2\nfrom pattern [every s = W2];\n",
]

#: beside a kernel pattern P: a chain reading P's matches, then a window's rows, then input
KERNEL_FIRST = ("@Name('H3')\ninsert into H3\nfrom pattern [every c = P -> (p = W1(p.k = c.k) "
                "-> d = B(d.k = c.k)){within}];\n")


@st.composite
def programs(draw: st.DrawFn) -> tuple[str, int]:
    """One or two windows over the input (W1, W2), perhaps a kernel pattern P (and a chain
    reading its output and W1's rows), one or two patterns over the windows' rows (H1, H2:
    test_split_higher's shapes — pairs, guards, chains with the rows at a middle stage or
    twice, alternatives, within 0 (declined) and more, a last stage of the rows (per event)),
    up to two of BESIDE, and how many patterns a rule reads (-1: all)."""
    kinds = ["W1"] + (["W2"] if draw(st.booleans()) else [])
    text = "".join(draw(windows(k)) for k in kinds)
    text += "".join(draw(higher_patterns(f"H{i}", kinds))
                    for i in range(1, draw(st.integers(1, 2)) + 1))
    if draw(st.booleans()):
        text += draw(kernel_patterns("P"))
        if draw(st.booleans()):
            text += KERNEL_FIRST.format(within=draw(st.sampled_from(WITHIN)))
    beside = [b for b in BESIDE if "W2" not in b or "W2" in kinds]
    text += "".join(draw(st.lists(st.sampled_from(beside), max_size=2, unique=True)))
    return text, draw(st.integers(-1, 2))


#: benchmarks/pattern_shapes.py's ho_esper_win, in these tests' schema and times
HO_ESPER_WIN = ("@Name('P')\ninsert into P\nselect w.k as k, avg(w.v) as m\nfrom "
                "A.win:time(4 msec) as w\ngroup by w.k;\n@Name('Q')\ninsert into Q\nselect "
                "p.k as k\nfrom pattern [every p = P(p.m > 1) -> c = B(c.k = p.k) where "
                "timer:within(6 msec)];\n")

#: at 0 an A of key 0 (P's row 1: arrival, m 3, opens Q's instance 1) and one of key 1 (P's
#: row 2, m 2, instance 2); at 4 both leave (the expiry instant, before the B at 5: P's rows
#: 3 and 4, key 0 then key 1, m None — no instance); the B of key 1 at 5 completes instance 2
#: (Q's match 5: the arrival rows' ids first, then the expiry rows'), the B of key 0 at 7 is
#: past instance 1's window (6 ms): nothing
EXPIRY = [("A", 0, 3, 0.0, 0), ("A", 1, 2, 0.0, 0), ("B", 1, 0, 0.0, 5), ("B", 0, 0, 0.0, 2)]


def test_a_pattern_over_a_window_s_rows_steps_no_row() -> None:
    """The hand-derived rows of HO_ESPER_WIN over EXPIRY, in one batch with no row stepped;
    and over a longer stream cut in two with a save/restore between, no row stepped but those
    before which Q's first timer is due (one per batch), as the per-event engine."""
    prog = load_module(parse_epl(SCHEMA + HO_ESPER_WIN))
    many = Engine(prog)
    assert many._split == []
    with stepping() as stepped:
        got = many.process_batch(events(EXPIRY))
    assert not stepped
    assert [(m.type, m.match_id, m.ts, m.params) for m in got] == [
        ("P", 1, 0, (0, 3.0)), ("P", 2, 0, (1, 2.0)), ("P", 3, 4, (0, None)),
        ("P", 4, 4, (1, None)), ("Q", 5, 5, (1,))]
    one = Engine(prog)
    assert rows(got) == rows([m for e in events(EXPIRY) for m in one.process(e)])
    assert state(many) == state(one) and many.stats == one.stats
    spec = [("AB"[(i * 7) % 3 % 2], i % 4, i % 5, 0.5, i % 3) for i in range(600)]
    got, ref, stepped, one, many = in_two_batches(prog, spec, 250)
    assert len(stepped) <= 2
    assert got == ref and {r[0] for r in ref} == {"P", "Q"}
    assert many.stats == one.stats and state(many) == state(one)
    assert rows(many.finish(close_windows=True)) == rows(one.finish(close_windows=True))


#: an expiry row before the input row at its instant: the A of key 0 at 0 leaves at 2 (P's
#: row n 0, opening Q's instance as time passes to 2), the B of key 0 at 2 completes it
SAME_INSTANT = ("@Name('P')\ninsert into P\nselect w.k as k, count(*) as n\nfrom "
                "A.win:time(2 msec) as w\ngroup by w.k;\n@Name('Q')\ninsert into Q\nfrom "
                "pattern [every p = P(p.n = 0) -> c = B(c.k = p.k) where "
                "timer:within({d} msec)];\n")
SAME_SPEC = [("A", 0, 0, 0.0, 0), ("A", 1, 0, 0.0, 1), ("B", 0, 0, 0.0, 1)]


@pytest.mark.parametrize("cut", [0, 1, 2])
def test_an_instance_opened_as_time_passes_takes_the_row_of_that_instant(cut: int) -> None:
    """SAME_INSTANT: the A at 0 leaves at 2 (P's row 3, n 0, before the B at 2), which opens
    Q's instance; the B at 2 completes it (Q's match 4) — in one batch or cut before the B
    (``cut``), as per event."""
    prog = load_module(parse_epl(SCHEMA + SAME_INSTANT.format(d=6)))
    one, many = Engine(prog), Engine(prog)
    ref = [m for e in events(SAME_SPEC) for m in one.process(e)]
    assert [(m.type, m.match_id, m.ts) for m in ref] == [("P", 1, 0), ("P", 2, 1), ("P", 3, 2),
                                                          ("Q", 4, 2)]
    evs = events(SAME_SPEC)
    got = many.process_batch(evs[:cut]) + many.process_batch(evs[cut:])
    assert rows(got) == rows(ref)
    assert state(many) == state(one) and many.stats == one.stats


def test_an_instance_opened_before_the_last_row_is_not_that_row_s() -> None:
    """SAME_INSTANT with a window of 3 ms, the A of key 0 at 0 and a B of key 1 at 5 (the
    batch's last row): the expiry row at 2 opens Q's instance as time passes before that row,
    its deadline 5 the batch's last instant — its timer ends it before the B (Esper's timer
    first): no instance is left open, though the row it opened at belongs to the last input
    row (``pair_rows``' ``end`` counts only the entries from that row's input step on)."""
    prog = load_module(parse_epl(SCHEMA + SAME_INSTANT.format(d=3)))
    spec = [("A", 0, 0, 0.0, 0), ("B", 1, 0, 0.0, 5)]
    one, many = Engine(prog), Engine(prog)
    ref = [m for e in events(spec) for m in one.process(e)]
    got = many.process_batch(events(spec))
    assert [(m.type, m.match_id, m.ts) for m in got] == [("P", 1, 0), ("P", 2, 2)]
    assert rows(got) == rows(ref)
    assert many.partial_matches() == one.partial_matches() == {"Q": 0}
    assert state(many) == state(one) and many.stats == one.stats


#: two windows' expiry instants before one input row, the later window's first: W2's row at
#: 1 (H2's instance 1) before W1's at 3 (H1's instance 2), then the B at 5 — by instant, not
#: by window
TWO_INSTANTS = ("@Name('W1')\ninsert into W1\nselect w.k as k, count(*) as v, avg(w.x) as x\n"
                "from A.win:time(3 msec) as w\ngroup by w.k;\n@Name('W2')\ninsert into W2\n"
                "select w.k as k, count(*) as v, avg(w.x) as x\nfrom A.win:time(1 msec) as w\n"
                "group by w.k;\n@Name('H1')\ninsert into H1\nfrom pattern [every p = W1(p.v = "
                "0) -> c = B(c.k = p.k)];\n@Name('H2')\ninsert into H2\nfrom pattern [every p = "
                "W2(p.v = 0) -> c = B(c.k = p.k)];\n", 0)
TWO_INSTANTS_SPEC = [("A", 0, 0, 0.0, 0), ("B", 1, 0, 0.0, 5)]

#: at each A, W1's row (opening H1's instance) then W2's (a row per arrival: S2's instance,
#: completing at once) in that cascade — H1's third instance takes its id before S2's third,
#: though W1's third row comes after W2's second block position
ARRIVALS = ("@Name('W1')\ninsert into W1\nselect w.k as k, count(*) as v, avg(w.x) as x\n"
            "from A.win:time(3 msec) as w\ngroup by w.k;\n@Name('W2')\ninsert into W2\n"
            "select w.k as k, w.v as v, avg(w.x) as x\nfrom A.win:time(2 msec) as w\n"
            "group by w.k;\n@Name('S2')\ninsert into S2\nfrom pattern [every s = W2];\n"
            "@Name('H1')\ninsert into H1\nfrom pattern [every p = W1 -> c = B(c.k = p.k)];\n",
            0)
ARRIVALS_SPEC = [("A", 0, 0, 0.0, 0), ("A", 1, 0, 0.0, 0), ("A", 2, 0, 0.0, 1)]


@settings(max_examples=250, deadline=None)
@given(programs(), INTS, st.lists(st.integers(0, 80), max_size=4), st.integers(0, 80))
@example((HO_ESPER_WIN, 0), EXPIRY, [], 0)
@example((SAME_INSTANT.format(d=6), 0), SAME_SPEC, [], 0)
@example(TWO_INSTANTS, TWO_INSTANTS_SPEC, [], 0)
@example(ARRIVALS, ARRIVALS_SPEC, [], 0)
def test_patterns_over_window_rows_equal_event_by_event(prog_spec, spec, cuts,
                                                        restore_at) -> None:
    check_split(program_of(*prog_spec), spec, cuts, restore_at)


@settings(max_examples=80, deadline=None)
@given(programs(), INTS, st.lists(st.integers(0, 80), max_size=4), st.integers(0, 80),
       st.sampled_from([0, 1, 3]))
def test_patterns_over_window_rows_stepping_many_rows(prog_spec, spec, cuts, restore_at,
                                                      short) -> None:
    """The same looking rows up in lists from the first stepped row and recording stretches
    of up to ``short`` loose rows one by one (split._Replay.as_lists)."""
    with in_lists(short):
        check_split(program_of(*prog_spec), spec, cuts, restore_at)


@settings(max_examples=80, deadline=None)
@given(programs(), INTS, st.lists(st.integers(0, 80), max_size=4), st.integers(0, 80))
def test_patterns_over_window_rows_over_arrow_columns(prog_spec, spec, cuts,
                                                      restore_at) -> None:
    """The same over Arrow batches (Engine.process_columns), a save/restore in the middle
    after which the reader numbers from 0 again."""
    check_split_columns(program_of(*prog_spec), spec, cuts, restore_at)


@settings(max_examples=80, deadline=None)
@given(programs(), STREAMS, st.sampled_from([0, 1, 2, 3, 7]))
def test_time_passing_after_a_batch(prog_spec, spec, later) -> None:
    """A batch, then time passes ``later`` past its last event (expiries, batch closes and
    the planned patterns' timers after it), against the general token path event by event."""
    check_time_passing(program_of(*prog_spec), spec, later)


def test_the_candidates() -> None:
    """Which patterns over a window's rows a batch plans: a pair, a chain reading the rows at
    a middle stage, alternatives at the end — not a last stage of the rows (its matches come
    in their cascade) nor within(0) (declined)."""
    text = ("@Name('W1')\ninsert into W1\nselect w.k as k, count(*) as n\nfrom A.win:time(2 msec)"
            " as w\ngroup by w.k;\n"
            "@Name('H1')\ninsert into H1\nfrom pattern [every p = W1 -> c = B(c.k = p.k)];\n"
            "@Name('H2')\ninsert into H2\nfrom pattern [every c = B -> (p = W1(p.k = c.k) -> "
            "d = A(d.k = c.k))];\n"
            "@Name('H3')\ninsert into H3\nfrom pattern [every p = W1 -> (c = A(c.k = p.k) or "
            "d = B(d.v >= 1))];\n"
            "@Name('H4')\ninsert into H4\nfrom pattern [every c = B -> p = W1(p.k = c.k)];\n"
            "@Name('H5')\ninsert into H5\nfrom pattern [every p = W1 -> c = B(c.k = p.k) "
            "where timer:within(0 msec)];\n")
    engine = Engine(load_module(parse_epl(SCHEMA + text)))
    assert [m.name for m in cascade.rows_candidates(engine, set(), {"W1"})] == [
        "H1", "H2", "H3"]


@pytest.mark.parametrize(("beside", "rule", "splits"), [
    ("", False, True), ("", True, False),
    ("@Name('V')\ninsert into V\nselect count(*) as c\nfrom P.win:length(2);\n", False, False),
    ("@Name('Y')\ninsert into Y\nfrom pattern [every y = B -> w = P(w.k = y.k)];\n", False,
     False)])
def test_a_window_read_only_by_planned_patterns_splits(beside: str, rule: bool,
                                                       splits: bool) -> None:
    """HO_ESPER_WIN's window (its rows at expiry instants too), read only by a pattern a batch
    plans over its rows, splits a program without kernel patterns; read also by a rule, a
    window or a pattern per event, its rows and instants would be stepped: per event, as
    before."""
    prog = load_module(parse_epl(SCHEMA + HO_ESPER_WIN + beside))
    if rule:  # (a rule without an action on the window's rows)
        prog.rules.append(A.RuleDecl("r", (A.PatternRef("P"),), None))
    assert Engine(prog)._split == ([] if splits else None)
