"""Time batches nothing reads, their boundaries recorded in bulk in the program split
(runtime/kernels/split.py, ``quiet`` blocks; docs/windows.md, "In the program split"): over
random programs — time batches of several lengths, grouped or not, a row per batch or per event,
with and without a reader (a pattern, a window, a rule) beside kernel patterns, a pattern whose
timers output and a sliding window — and random streams with equal timestamps and gaps of
several batches, batches cut anywhere, single events between them and a save/restore in the
middle, the split equals the per-event engine: the same complex events (parameters, parts,
match ids, order), statistics, open instances, saved state and end of input; also over Arrow
columns (Engine.process_columns)."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import SCHEMA, assert_alike, events, fed_columns
from tests.esper.test_split import check_split, consecs, restored, rows

from cepflow.events.event import Event
from cepflow.language import ast as A
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine

#: time-batch statements over the input ({n}: the window's length, {name}: its name): a row
#: per batch (ungrouped; with a field and current_timestamp(); with a filter), per
#: group, per event
BATCHES = [
    "select count(*) as c, avg(a.v) as av, sum(a.x) as sx\nfrom A.win:time_batch({n} msec) as a",
    "select a.k as k, count(*) as c, min(a.v) as lo, max(a.x) as hi, current_timestamp() as t"
    "\nfrom A.win:time_batch({n} msec) as a",
    "select count(*) as c, sum(b.v) as s\nfrom B(b.x > 0.5).win:time_batch({n} msec) as b",
    "select a.k as k, avg(a.x) as ax, count(*) as c\nfrom A.win:time_batch({n} msec) as a\n"
    "group by a.k",
    "select b.k as k, b.v as v, sum(b.v) as s\nfrom B.win:time_batch({n} msec) as b",
]

#: what may read a time batch's rows (M1's): a pattern, a window statement, a rule
READERS = ["pattern", "window", "rule", None, None]

#: statements beside them: a pattern whose timers output (at instants that may fall on a
#: boundary), a sliding window (a block of its own), a pattern no kernel takes
OTHERS = [
    "@Name('T')\ninsert into T\nselect x.v as v\n"
    "from pattern [every x = A(x.v > 2) -> timer:interval(2 msec)];\n",
    "@Name('W')\ninsert into W\nselect a.v as v, sum(a.v) as s\nfrom A.win:time(4 msec) as a;\n",
    "@Name('D')\ninsert into D\nfrom pattern [every (x = A(x.v > 1) -> y = B(y.k = x.k))];\n",
]


@st.composite
def programs(draw: st.DrawFn):
    text = SCHEMA
    for i in range(draw(st.integers(1, 2))):
        form = draw(st.sampled_from(BATCHES))
        n = draw(st.sampled_from([1, 2, 3, 5, 10]))
        text += f"@Name('M{i + 1}')\ninsert into M{i + 1}\n{form.format(n=n)};\n"
    reader = draw(st.sampled_from(READERS))
    if reader == "pattern":
        text += "@Name('R')\ninsert into R\nfrom pattern [every m = M1];\n"
    elif reader == "window":
        text += "@Name('R')\ninsert into R\nselect count(*) as c\nfrom M1.win:length(2);\n"
    kernels = draw(st.lists(consecs(), max_size=2))
    seen = set()
    for s in kernels:
        name = s.split("'")[1]
        if name not in seen:
            seen.add(name)
            text += s
    for o in draw(st.lists(st.sampled_from(OTHERS), max_size=2, unique=True)):
        text += o
    prog = load_module(parse_epl(text))
    if reader == "rule":
        prog.rules.append(A.RuleDecl("r", (A.PatternRef("M1"),), None))
    return prog


#: timestamps: equal ones, small steps and gaps of several batches
STEPS = [0, 0, 0, 1, 1, 1, 2, 3, 7, 15, 40]


def stream():
    # (v mostly an integer: a float among them mixes the sums' types, which declines the
    # block for that batch; k a small key)
    return st.lists(st.tuples(st.sampled_from(["A", "A", "B"]), st.integers(0, 2),
                              st.sampled_from([0, 1, 2, 3, 4, -1, 5, 2, 3, 1.5]),
                              st.sampled_from([0.0, 0.7, 1.2, 2.0]),
                              st.sampled_from(STEPS)), max_size=90)


@settings(max_examples=300, deadline=None)
@given(programs(), stream(), st.lists(st.integers(0, 90), max_size=4), st.integers(0, 90))
def test_time_batches_in_bulk_equal_event_by_event(prog, spec, cuts, restore_at) -> None:
    check_split(prog, spec, cuts, restore_at)


@settings(max_examples=120, deadline=None)
@given(programs(), stream(), st.lists(st.integers(0, 90), max_size=3), st.integers(0, 90))
def test_time_batches_in_bulk_over_arrow_columns(prog, spec, cuts, restore_at) -> None:
    check_columns(prog, spec, cuts, restore_at)


def check_columns(prog, spec, cuts, restore_at) -> None:
    """Through Engine.process_columns over Arrow batches (the reader numbers the rows, from 0
    again after the restore), the same as the per-event engine (test_split's column check)."""
    one, many = Engine(prog), Engine(prog)
    if not many.columnar:
        return

    def numbered(first: int = 0) -> list[Event]:
        evs = events(spec)
        for i, e in enumerate(evs):
            e.seq = i - first
        return evs

    ref = [m for e in numbered() for m in one.process(e)]
    restore_at = min(restore_at, len(spec))
    evs = numbered()[:restore_at] + numbered(restore_at)[restore_at:]
    bounds = sorted({0, len(spec), restore_at, *(min(c, len(spec)) for c in cuts)})
    got: list = []
    written: list = []
    for lo, hi in itertools.pairwise(bounds):
        if lo == restore_at and lo:
            many = restored(many, prog)
        g, w = fed_columns(many, evs[lo:hi], many.host.arity)
        got, written = got + g, written + w
    assert_alike(one, ref, many, got, written)
    assert rows(many.finish(close_windows=True)) == rows(one.finish(close_windows=True))


def test_a_time_batch_nothing_reads_steps_no_row(monkeypatch) -> None:
    """Temperature's Monitor alone: the program splits, and no row of the batch is stepped
    (its boundaries are recorded in bulk), with the per-event result."""
    prog = load_module(parse_epl(
        SCHEMA + "@Name('M')\ninsert into M\nselect avg(a.v) as av\n"
                 "from A.win:time_batch(10 msec) as a;\n"))
    evs = [Event("A", (0, i % 7, 0.0, "x"), 3 * i) for i in range(400)]
    one = Engine(prog)
    ref = [(m.type, m.ts, m.params, m.match_id) for e in evs for m in one.process(e)]
    many = Engine(prog)
    assert many._split == []
    stepped = []
    real = Engine.process
    monkeypatch.setattr(Engine, "process",
                        lambda self, e, out=None: stepped.append(e) or real(self, e, out))
    got = [(m.type, m.ts, m.params, m.match_id) for m in many.process_batch(evs)]
    assert got == ref and len(ref) == 119
    assert stepped == []
    assert many.stats == one.stats


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["2.5 msec", "0.1 sec", "3 msec", "1 msec"]),
       st.sampled_from(["", "\ngroup by a.k"]),
       st.lists(st.tuples(st.integers(0, 2), st.sampled_from([0, 1, 2, 3, 4, -1, 5]),
                          st.sampled_from([0.0, 0.0, 0.25, 0.5, 1.0, 2.75, 9.5, 260.0])),
                max_size=80),
       st.lists(st.integers(0, 80), max_size=4))
def test_fractional_times_and_lengths(size, group, spec, cuts) -> None:
    """Float timestamps and fractional window lengths (the boundaries computed in float64
    in one go, window_block._instants, must be TimeBatchWindow.boundary's values to the last
    bit), gaps of many batches: the split equals the per-event engine."""
    prog = load_module(parse_epl(
        SCHEMA + "@Name('M')\ninsert into M\nselect a.k as k, avg(a.v) as av, count(*) as c, "
                 f"current_timestamp() as t\nfrom A.win:time_batch({size}) as a{group};\n"))
    ts, evs = 0.0, []
    for i, (k, v, dt) in enumerate(spec):
        ts += dt
        evs.append(Event("A", (k, v, 0.0, "x"), ts, id=f"e{i}"))
    one, many = Engine(prog), Engine(prog)
    assert many._split == []
    ref = [(m.type, m.ts, m.params, m.match_id) for e in evs for m in one.process(e)]
    bounds = sorted({0, len(evs), *(min(c, len(evs)) for c in cuts)})
    got = [(m.type, m.ts, m.params, m.match_id) for lo, hi in itertools.pairwise(bounds)
           for m in many.process_batch(evs[lo:hi])]
    assert got == ref
    assert many.stats == one.stats
    end = [(m.type, m.ts, m.params, m.match_id) for m in many.finish(close_windows=True)]
    assert end == [(m.type, m.ts, m.params, m.match_id) for m in one.finish(close_windows=True)]
