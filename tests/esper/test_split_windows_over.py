"""Window statements over a kernel pattern's output in the program split
(kernels/cascade.py, ``plan_windows_over``): a window over ``insert into P … every a = A -> b =
B(b.k = a.k)`` is planned as a window block over P's planned matches (the derived stream, each
at its input row's time), so the rows where P completes are not stepped for it. Per event a
window row comes in the cascade of the match it reads — out right after that match, its id
after every id the input step gives at that row — so the split ranks those rows per match
(``_Replay``'s ``subs``). Over random programs and streams, batches cut anywhere, single events
between them, a save/restore in the middle, time passing after a batch and Arrow columns, it
equals the per-event engine: the same complex events (parameters, parts, match ids), rule
firings, statistics, open instances and saved state."""

from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import SCHEMA, events, state
from tests.esper.test_split import (
    check_split,
    check_split_columns,
    in_lists,
    in_two_batches,
    rows,
    stepping,
)
from tests.esper.test_split_higher import STREAMS, program_of
from tests.esper.test_split_higher import programs as higher_programs

from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine, EngineError
from cepflow.runtime.kernels import split
from cepflow.runtime.state import save_state

#: window statements over a kernel pattern's output ({p}: P or Q), one row per arrival
#: (grouped and not), fully aggregated (rows on expiry too), length windows (a push-out's
#: group's row), batches; filters on the derived rows, having, min/max
WINDOWS = [
    "select w.k as k, count(*) as n\nfrom {p}.win:time({d} msec) as w\ngroup by w.k",
    "select count(*) as n, sum(w.v) as s\nfrom {p}.win:time({d} msec) as w",
    "select w.k as k, w.v as v, avg(w.x) as ax\nfrom {p}(w.v >= 1).win:time({d} msec) as w\n"
    "group by w.k",
    "select w.k as k, sum(w.x) as sx, max(w.v) as h\nfrom {p}.win:time({d} msec) as w\n"
    "group by w.k\nhaving count(*) > 1",
    "select avg(w.x) as ax, min(w.v) as lo\nfrom {p}.win:length({n}) as w",
    "select w.k as k, sum(w.v) as s\nfrom {p}.win:length({n}) as w\ngroup by w.k",
    "select w.k as k, sum(w.v) as s, count(*) as c\n"
    "from {p}.std:groupwin(w.k).win:length({n}) as w\ngroup by w.k",
    "select w.k as k, count(*) as n\nfrom {p}.win:time_batch({d} msec) as w\ngroup by w.k",
    "select sum(w.v) as s, w.x as x\nfrom {p}.win:length_batch({n}) as w",
]

#: statements beside them: a pattern over the window's rows (stepped where they come), a
#: pattern over P planned (kernels.cascade.plan_higher), a pattern per event opening
#: instances at P's matches (token ids between), a pattern over the input (its rows stepped)
BESIDE = [
    "@Name('Z')\ninsert into Z\nfrom pattern [every w = W1 -> y = B];\n",
    "@Name('H')\ninsert into H\nselect p.k as k\nfrom pattern [every p = P -> c = A(c.k = p.k) "
    "where timer:within(6 msec)];\n",
    "@Name('R')\ninsert into R\nfrom pattern [every (p = P(p.v >= 2) -> x = B(x.k = p.k))];\n",
    "@Name('D')\ninsert into D\nfrom pattern [every (x = A(x.v > 1) -> y = B(y.k = x.k))];\n",
    # (completing in P's matches' cascade, before the windows' rows: planned, ranked per match)
    "@Name('H2')\ninsert into H2\nselect c.v as v\nfrom pattern [every c = A -> p = P(p.k = c.k) "
    "where timer:within(4 msec)];\n",
    "@Name('H3')\ninsert into H3\nfrom pattern [every c = B(c.v >= 1) -> p = P(p.v != 1)];\n",
    # (within(0) and a guard on the derived stage: per event here — planned once main's
    # within(0) trap is merged, which these programs then check)
    "@Name('H5')\ninsert into H5\nfrom pattern [every c = A -> p = P(p.k = c.k and p.v >= c.v) "
    "where timer:within(0 msec)];\n",
]


@st.composite
def windows(draw: st.DrawFn, name: str, kinds: list[str]) -> str:
    form = draw(st.sampled_from(WINDOWS)).format(p=draw(st.sampled_from(kinds)),
                                                 d=draw(st.sampled_from([1, 2, 3, 5])),
                                                 n=draw(st.sampled_from([1, 2, 3])))
    return f"@Name('{name}')\ninsert into {name}\n{form};\n"


def programs() -> st.SearchStrategy[tuple[str, int]]:
    """Kernel patterns P (and Q), one or two windows over their output, up to three BESIDE."""
    return higher_programs(windows, BESIDE, "W", 3)


#: streams mostly of integers (the blocks plan them), some nulls (a block declines the batch)
INTS = st.lists(st.tuples(st.sampled_from(["A", "B"]), st.sampled_from([0, 1, 2]),
                          st.sampled_from([0, 1, 2, 3, 0, 1, 2, 3, None]),
                          st.sampled_from([0.0, 0.7, 1.2, 2.0]),
                          st.sampled_from([0, 0, 1, 2])), min_size=15, max_size=80)

#: two P matches at one row (the B at 2 completes both A's instances): out P, W1, P, W1; ids
#: P 1, 2 then W1 3, 4 — a per-plan rank would give P, P, W1, W1 or the ids in output order
TWO = ("@Name('P')\ninsert into P\nselect a.k as k, a.v as v, b.x as x\nfrom pattern [every a "
       "= A -> b = B(b.k = a.k)];\n@Name('W1')\ninsert into W1\nselect w.k as k, count(*) as n"
       "\nfrom P.win:time(2 msec) as w\ngroup by w.k;\n", 0)
TWO_SPEC = [("A", 0, 1, 0.0, 0), ("A", 0, 2, 0.0, 0), ("B", 0, 0, 0.0, 1)]


def test_window_rows_come_after_the_match_they_read() -> None:
    """The hand-derived order of TWO: at the B, P's two matches take ids 1 and 2 in the input
    step; each one's window row takes the next id in its cascade (3, 4), coming out right
    after it; 2 ms later both leave at one instant, the group's expiry row (5) — and nothing
    is stepped."""
    prog = program_of(*TWO)
    many = Engine(prog)
    with stepping() as stepped:
        got = many.process_batch(events([*TWO_SPEC, ("A", 1, 0, 0.0, 3)]))
    assert not stepped
    assert [(m.type, m.match_id, m.params) for m in got] == [
        ("P", 1, (0, 1, 0.0)), ("W1", 3, (0, 1)), ("P", 2, (0, 2, 0.0)), ("W1", 4, (0, 2)),
        ("W1", 5, (0, 0))]
    one = Engine(prog)
    assert rows(got) == rows([m for e in events([*TWO_SPEC, ("A", 1, 0, 0.0, 3)])
                              for m in one.process(e)])
    assert state(many) == state(one) and many.stats == one.stats


#: TWO and a pattern completing at P's matches: both its instances (opened by the A's)
#: complete at P's first match, in its cascade, before that match's window row
TWO_H2 = (TWO[0] + "@Name('H2')\ninsert into H2\nselect c.v as v\nfrom pattern [every c = A -> "
          "p = P(p.k = c.k)];\n", 0)


@pytest.mark.parametrize("ruled", [0, -1])
def test_patterns_completing_in_the_cascade_come_after_the_match_they_read(ruled: int) -> None:
    """The hand-derived order of TWO_H2: P's matches take ids 1 and 2 in the input step; in
    the first one's cascade H2's two matches (3, 4, oldest instance first), then its window
    row (5); then P's second match and its window row (6). Nothing is stepped — or, with a
    rule on every pattern (``ruled`` -1), the B is, and the replay emits each pattern's rows
    at the match they read."""
    prog = program_of(TWO_H2[0], ruled)
    many = Engine(prog)
    with stepping() as stepped:
        got = many.process_batch(events(TWO_SPEC))
    assert [e.id for e in stepped] == ([] if ruled == 0 else ["e2"])
    assert [(m.type, m.match_id, m.params) for m in got] == [
        ("P", 1, (0, 1, 0.0)), ("H2", 3, (1,)), ("H2", 4, (2,)), ("W1", 5, (0, 1)),
        ("P", 2, (0, 2, 0.0)), ("W1", 6, (0, 2))]
    one = Engine(prog)
    assert rows(got) == rows([m for e in events(TWO_SPEC) for m in one.process(e)])
    assert state(many) == state(one) and many.stats == one.stats


#: a pattern reading Q at its first stage and completing at P's matches, its rows stepped (a
#: rule reads it): the cascade replay is called with Q's matches too, where nothing completes
QP = ("@Name('P')\ninsert into P\nselect a.k as k, a.v as v, a.x as x\nfrom pattern [every a = "
      "A()];\n@Name('Q')\ninsert into Q\nselect a.k as k, a.v as v, a.x as x\nfrom pattern "
      "[every a = A()];\n@Name('H4')\ninsert into H4\nfrom pattern [every q = Q -> p = P(p.k = "
      "q.k)];\n", -1)
QP_SPEC = [("A", 0, 0, 0.0, 0), ("A", 0, 1, 0.0, 1), ("B", 0, 1, 0.0, 1)]


def test_a_pattern_completing_at_one_kernel_pattern_reading_another() -> None:
    """QP: at the second A, H4's instance (opened at the first A's Q match) completes at P's
    match, in its cascade; the replay is also called with Q's match, which completes
    nothing."""
    prog = program_of(*QP)
    one, many = Engine(prog), Engine(prog)
    ref = rows([m for e in events(QP_SPEC) for m in one.process(e)])
    got = rows(many.process_batch(events(QP_SPEC)))
    assert got == ref and [r[0] for r in ref] == ["P", "Q", "P", "H4", "Q"]
    assert state(many) == state(one) and many.stats == one.stats


@settings(max_examples=250, deadline=None)
@given(programs(), INTS, st.lists(st.integers(0, 80), max_size=4), st.integers(0, 80))
@example(TWO, TWO_SPEC, [], 0)
@example(TWO_H2, TWO_SPEC, [], 0)
def test_windows_over_kernel_output_equal_event_by_event(prog_spec, spec, cuts,
                                                         restore_at) -> None:
    check_split(program_of(*prog_spec), spec, cuts, restore_at)


@settings(max_examples=100, deadline=None)
@given(programs(), INTS, st.lists(st.integers(0, 80), max_size=4), st.integers(0, 80),
       st.sampled_from([0, 1, 3]))
def test_windows_over_kernel_output_stepping_many_rows(prog_spec, spec, cuts, restore_at,
                                                       short) -> None:
    """The same looking rows up in lists from the first stepped row and recording stretches
    of up to ``short`` loose rows one by one (split._Replay.as_lists)."""
    with in_lists(short):
        check_split(program_of(*prog_spec), spec, cuts, restore_at)


@settings(max_examples=100, deadline=None)
@given(programs(), INTS, st.lists(st.integers(0, 80), max_size=4), st.integers(0, 80))
def test_windows_over_kernel_output_over_arrow_columns(prog_spec, spec, cuts,
                                                       restore_at) -> None:
    """The same over Arrow batches (Engine.process_columns), a save/restore in the middle
    after which the reader numbers from 0 again."""
    check_split_columns(program_of(*prog_spec), spec, cuts, restore_at)


@settings(max_examples=100, deadline=None)
@given(programs(), STREAMS, st.sampled_from([0, 1, 2, 3, 7]))
def test_time_passing_after_a_batch(prog_spec, spec, later) -> None:
    """A batch, then time passes ``later`` past its last event (the windows' expiries and
    batch closes after it), against the general token path event by event: the same complex
    events and ids, saved state and statistics."""
    prog = program_of(*prog_spec)
    evs = events(spec)
    end = (evs[-1].ts if evs else 0) + later
    batch, ref = Engine(prog), Engine(prog, fast_path=False)
    got = batch.process_batch(events(spec)) + batch.advance_to(end)
    want = [m for e in evs for m in ref.process(e)] + ref.advance_to(end)
    assert rows(got) == rows(want)
    assert save_state(batch) == save_state(ref)
    assert batch.stats == ref.stats


def test_windows_over_a_pair_are_planned() -> None:
    """Over integers every window form above is a block of the batch (the property tests
    exercise the plan, not a fallback): benchmarks/pattern_shapes.py's ho_win steps no row
    but those before which a timer is due, and equals the per-event engine — also restored in
    the middle."""
    text = ("@Name('P')\ninsert into P\nselect a.k as k, a.v as v, b.x as x\nfrom pattern "
            "[every a = A -> b = B(b.k = a.k) where timer:within(6 msec)];\n"
            + "".join(f"@Name('W{i}')\ninsert into W{i}\n{w.format(p='P', d=30, n=2)};\n"
                      for i, w in enumerate(WINDOWS)))
    prog = load_module(parse_epl(SCHEMA + text))
    spec = [("AB"[(i * 7) % 3 % 2], i % 4, i % 5, 0.5, i % 3) for i in range(600)]
    planned: list[list[int]] = []
    real = split.plan_windows_over

    def spy(*args):
        found = real(*args)
        planned.append([o.index for o in found])
        return found

    with patch.object(split, "plan_windows_over", spy):
        got, ref, stepped, one, many = in_two_batches(prog, spec, 250)
    assert planned == [list(range(len(WINDOWS)))] * 2
    assert len(stepped) <= 2 * 2
    assert got == ref and {r[0] for r in ref} == {"P", *(f"W{i}" for i in range(len(WINDOWS)))}
    assert many.stats == one.stats and state(many) == state(one)
    assert rows(many.finish(close_windows=True)) == rows(one.finish(close_windows=True))


@pytest.mark.parametrize(("prog_spec", "limit", "stops"),
                         [(TWO, 1, True), (TWO, 2, False), (TWO_H2, 3, True), (TWO_H2, 4, False)])
def test_a_cascade_over_the_limit_is_stepped(prog_spec, limit: int, stops: bool) -> None:
    """A P match, its window row and the matches completing at it are complex events of one
    cascade (TWO: 2; TWO_H2: 4 at P's first match): over ``max_cascade`` the per-event engine
    stops there, and so does the batch (those statements are left per event, their rows
    stepped); within it both go on."""
    prog = program_of(*prog_spec)
    evs = events(TWO_SPEC)
    one, many = Engine(prog, max_cascade=limit), Engine(prog, max_cascade=limit)
    if stops:
        with pytest.raises(EngineError, match=f"more than {limit} complex events"):
            for e in evs:
                one.process(e)
        with pytest.raises(EngineError, match=f"more than {limit} complex events"):
            many.process_batch(evs)
    else:
        assert rows(many.process_batch(evs)) == rows([m for e in evs for m in one.process(e)])


def test_merged_ranks_window_rows_per_match() -> None:
    """``split._merged`` with a per-entry ``sub``: parts of one output rank (P's matches and
    a window's rows over them) interleave by it, then by part, as ``lexsort`` by (row, late,
    when, rank, sub, part, own order); with the keys as one int64 and without."""
    lens = [3, 3, 2]
    rows_ = np.array([4, 4, 5, 4, 4, 5, 4, 5], np.int64)
    late = np.ones(3, np.int64)
    out_rank = np.array([0, 0, 0], np.int64)
    id_rank = np.array([0, 1, 1], np.int64)
    sub = np.array([0, 1, 0, 0, 1, 0, 1, 0], np.int64)
    fits = split._FITS
    for wide in (False, True):
        try:
            if wide:
                split._FITS = 0
            o, rank = split._merged(rows_, late, [], out_rank, id_rank, lens, sub)
        finally:
            split._FITS = fits
        # (row 4: P's first match, its W row, P's second, its W and V rows; the ids: P's
        # two first, then the rows by match then part; row 5 likewise)
        assert o.tolist() == [0, 3, 1, 4, 6, 2, 5, 7]
        assert rank[o].tolist() == [0, 2, 1, 3, 4, 5, 6, 7]
