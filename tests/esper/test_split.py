"""The program split (runtime/kernels/split.py): Esper pair and chain statements run
column-wise while the rest of the program — patterns no kernel takes, data-window statements
over the input and over the kernel statements' output, patterns over derived events, rules —
runs per event. Over random programs and streams, batches cut anywhere, single events between
them and a save/restore in the middle, it equals the per-event engine: the same complex events
(parameters, parts, match ids), rule firings, statistics, open instances and saved state."""

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import (
    FILTERS,
    PAIR_FILTERS,
    SCHEMA,
    _nan,
    assert_alike,
    events,
    fed_columns,
    state,
    statements,
    stream,
)

from cepflow.events.event import Event
from cepflow.language import ast as A
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels import split
from cepflow.runtime.kernels.split import timer_end_shape
from cepflow.runtime.shapes import esper_each_of, esper_whole_of
from cepflow.runtime.state import StateError, restore_state, save_state

#: window statements over the input that a split batch plans column-wise
#: (kernels/window_block.py), with patterns over their rows: a sliding window's one row per
#: arriving event (grouped, float and int sums, read by a pattern; ungrouped, read by
#: nothing, its filter failing on a null: that batch declines it), time batches per group
#: and per event
WINDOW_BLOCKS = [
    "@Name('WK')\ninsert into WK\nselect a.k as k, a.x as x, avg(a.x) as ax, sum(a.k) as sk, "
    "count(*) as c\nfrom A(a.k > 0).win:time(4 msec) as a\ngroup by a.k;\n"
    "@Name('GW')\ninsert into GW\nselect g.k as k, g.ax as ax\n"
    "from pattern [every g = WK(g.ax > 0.8)];\n",
    "@Name('WV')\ninsert into WV\nselect a.v as v, avg(a.x) as ax, sum(a.x) as sx\n"
    "from A(a.v > 0.2).win:time(3 msec) as a;\n",
    "@Name('TK')\ninsert into TK\nselect b.k as k, avg(b.x) as ax, count(*) as c\n"
    "from B.win:time_batch(3 msec) as b\ngroup by b.k;\n"
    "@Name('GT')\ninsert into GT\nfrom pattern [every t = TK(t.c > 1)];\n",
    "@Name('TV')\ninsert into TV\nselect b.k as k, b.v as v, sum(b.k) as s, "
    "current_timestamp() as t\nfrom B(b.x > 0.5).win:time_batch(5 msec) as b;\n",
    # fully aggregated sliding windows (a row per group at every arrival and every expiry
    # instant): grouped, read by a pattern (which takes their rows per event); ungrouped over
    # a pattern's output, contractions' Counter (its filter failing on a null: declined)
    "@Name('WG')\ninsert into WG\nselect a.k as k, count(*) as c, sum(a.x) as sx, "
    "avg(a.k) as ak\nfrom A(a.x > 0.5).win:time(3 msec) as a\ngroup by a.k;\n"
    "@Name('GG')\ninsert into GG\nselect g.k as k, g.sx as sx\n"
    "from pattern [every g = WG(g.c > 1)];\n",
    "@Name('WC')\ninsert into WC\nselect count(p.x) as n, avg(p.x) as ax\n"
    "from pattern [(every p = B(p.k >= 1))].win:time(4 msec);\n",
    "@Name('WN')\ninsert into WN\nselect count(p.x) as n\n"
    "from pattern [(every p = A(p.v >= 1))].win:time(2 msec);\n",
    # air quality's shape: grades over a sliding average, the worst grade per time batch
    # over their union (kernels/cascade.py: nothing of it stepped but the boundaries)
    "@Name('WL')\ninsert into WL\nselect a.k as k, a.x as x, avg(a.x) as ax\n"
    "from A.win:time(5 msec) as a\ngroup by a.k;\n"
    "@Name('GL1')\ninsert into Grade\nselect g.k as k, 1 as grade\n"
    "from pattern [every g = WL(g.ax < 1)];\n"
    "@Name('GL2')\ninsert into Grade\nselect g.k as k, 2 as grade\n"
    "from pattern [every g = WL(g.ax >= 1)];\n"
    "@Name('Level')\ninsert into Level\nselect l.k as k, max(l.grade) as grade, "
    "count(*) as c\nfrom Grade.win:time_batch(3 msec) as l\ngroup by l.k;\n",
]

#: statements no kernel takes, over the input and over the kernel statements' output (P, Q)
OTHERS = [
    "@Name('D')\ninsert into D\nfrom pattern [every (x = A(x.v > 1) -> y = B(y.k = x.k))];\n",
    "@Name('F')\ninsert into F\nselect x.k as k\nfrom pattern [every x = A(x.v > 0) -> "
    "y = B(y.k = x.k and y.v > x.v) where timer:within(3 msec)];\n",
    "@Name('W')\ninsert into W\nselect count(*) as c, sum(x) as s\nfrom A.win:time(4 msec);\n",
    "@Name('TB')\ninsert into TB\nselect count(*) as c\nfrom B.win:time_batch(3 msec);\n",
    "@Name('G')\ninsert into G\nfrom pattern [every p = P -> x = A "
    "where timer:within(5 msec)];\n",
    "@Name('WP')\ninsert into WP\nselect count(*) as c\n"
    "from pattern [every p = P].win:length(2);\n",
    "@Name('H')\ninsert into H\nfrom pattern [every q = Q -> p = P];\n",
    *WINDOW_BLOCKS,
]


def keyed_others(min_size: int = 0) -> st.SearchStrategy:
    """Up to two of :data:`OTHERS` beside the statements under test, not the window blocks:
    their aggregates take numbers, and the keys these tests draw are any value."""
    return st.lists(st.sampled_from([o for o in OTHERS if o not in WINDOW_BLOCKS]),
                    min_size=min_size, max_size=2, unique=True)


@st.composite
def restarts(draw: st.DrawFn) -> str:
    """``every (a = T(f) -> b = T(g))``, ``g`` with or without a key, perhaps reading a's
    fields (the restart kernel, kernels/restart.py)."""
    f = draw(st.sampled_from(FILTERS)).format(a="a")
    g = draw(st.sampled_from([*FILTERS, *PAIR_FILTERS, "b.v >= a.v + 2"])).format(a="b")
    if draw(st.booleans()):
        g = f"({g}) and a.k = b.k" if g else "a.k = b.k"
    ta, tb = draw(st.sampled_from(["A", "B"])), draw(st.sampled_from(["A", "B"]))
    select = draw(st.sampled_from(["", "select a.v as av, b.x as bx, current_timestamp() as t "]))
    name = draw(st.sampled_from(["R", "S"]))
    return (f"@Name('{name}')\ninsert into {name}\n{select}from pattern [every "
            f"(a = {ta}({f}) -> b = {tb}({g}))];\n")


@st.composite
def consecs(draw: st.DrawFn) -> str:
    """Esper's consecutive chains, ``every a = T(f) -> (b = T(g) and not T(h) …) -> …
    [where timer:within(Δ)]``: two to four stages, each with up to two forbidden events (or
    none), filters reading only their event or the earlier stages' fields, the forbidden event
    the stage's own complement among them, every later stage and forbidden event unified with
    ``a`` on its key or none (the consecutive kernel, kernels/consec.py)."""
    n = draw(st.sampled_from([2, 2, 3, 4]))
    tags = "abcd"[:n]
    f = draw(st.sampled_from(["", *FILTERS[:5]])).format(a="a")
    keyed = draw(st.booleans())  # (every later stage and forbidden event on a's key)

    def on_key(cond: str, field: str) -> str:
        if not keyed:
            return cond
        return f"({cond}) and {field} = a.k" if cond else f"{field} = a.k"

    steps = []
    for j, tag in enumerate(tags[1:], 1):
        prev = tags[j - 1]
        t = draw(st.sampled_from(["A", "B"]))
        g = draw(st.sampled_from(["", "", "{a}.v >= 1", "{a}.v > " + prev + ".v",
                                  "{a}.v >= a.v", "{a}.v >= a.v + 1 and {a}.x < 2",
                                  "{a}.x * 2 > a.v", *FILTERS[4:]]))
        step = f"{tag} = {t}({on_key(g.format(a=tag), tag + '.k')})"
        # (the consecutive idiom most often: the forbidden event is the stage's complement)
        own = f"not ({g.format(a=tag).replace(tag + '.', '')})" if g else "v = 2"
        nots = draw(st.lists(st.tuples(st.sampled_from([t, t, "A", "B"]), st.sampled_from(
            [own, own, own, "", "v < 1", f"v <= {prev}.v", "x > a.x", "s = 'y'"])),
            max_size=2))
        for t2, h in nots:
            h = on_key(h, "k")
            step += f" and not {t2}({h})" if h else f" and not {t2}"
        steps.append(f"({step})" if nots else step)
    within = draw(st.sampled_from(["", "", " where timer:within(4 msec)",
                                   " where timer:within(2 msec)",
                                   " where timer:within(0 msec)"]))
    body = " -> ".join(steps)
    if n > 2 and within:
        body = f"({body})"  # (the guard binds to the parenthesised chain)
    select = draw(st.sampled_from(["", f"select a.v as av, {tags[-1]}.x as lx, "
                                       "current_timestamp() as t "]))
    name = draw(st.sampled_from(["P", "Q", "K"]))
    return (f"@Name('{name}')\ninsert into {name}\n{select}from pattern [every "
            f"a = {draw(st.sampled_from(['A', 'B']))}({f}) -> {body}{within}];\n")


def rows(found) -> list:
    # (values by repr, which tells 1 from 1.0 and True; a NaN read back from saved state is
    # another float object: compared as a marker)
    return [(m.type, m.ts, tuple(m.event_refs), repr(tuple(map(_nan, m.params))), m.match_id,
             repr(sorted((k, _nan(v)) for k, v in m.bindings.items())))
            for m in found]


def restored(engine: Engine, prog) -> Engine:
    """``engine`` saved and restored (itself when JSON cannot hold its state: a NaN key),
    its statistics kept (they are no part of the saved state)."""
    try:
        saved = save_state(engine)
    except StateError:
        return engine
    again = restore_state(Engine(prog), saved)
    again.host.stats = engine.stats
    return again


def in_two_batches(prog, spec, cut: int) -> tuple[list, list, list[Event], Engine, Engine]:
    """``spec`` event by event and through ``process_batch`` in two batches cut at ``cut``,
    saved and restored between: the rows of both, the events the batches stepped, and both
    engines (the batches' restored)."""
    one, many = Engine(prog), Engine(prog)
    ref = rows([m for e in events(spec) for m in one.process(e)])
    evs = events(spec)
    with stepping() as stepped:
        got = rows(many.process_batch(evs[:cut]))
        many = restored(many, prog)
        got += rows(many.process_batch(evs[cut:]))
    return got, ref, stepped, one, many


@contextmanager
def stepping() -> Iterator[list[Event]]:
    """Within the block, the events the engine steps one by one (Engine.process), in order."""
    stepped: list[Event] = []
    process = Engine.process

    def spy(self, event, out=None):
        stepped.append(event)
        return process(self, event, out)

    with patch.object(Engine, "process", spy):
        yield stepped


@contextmanager
def in_lists(short: int) -> Iterator[None]:
    """Within the block a split batch looks its rows up in lists from the first stepped row
    and records stretches of up to ``short`` loose rows one by one (split._Replay.as_lists)."""
    with (patch.object(split, "_MANY_STEPS", 0), patch.object(split, "_STRETCH", 1 << 40),
          patch.object(split, "_SHORT", short)):
        yield


def program(kernel_stmts: list[str], others: list[str], ruled: int = -1):
    names = set()
    text = ""
    for s in kernel_stmts:
        name = s.split("'")[1]
        if name not in names:
            names.add(name)
            text += s
    for o in others:
        reads = [n for n in ("P", "Q") if f"= {n}" in o or f"{n}]" in o]
        if all(r in names for r in reads):
            text += o
    prog = load_module(parse_epl(SCHEMA + text))
    # rules without an action: they count firings (the split takes no registered action)
    # (on the first ``ruled`` patterns, every one for -1: a match no rule, pattern or window
    # reads is recorded without a per-event step, kernels.split._Replay.record_loose)
    on = prog.automata if ruled < 0 else prog.automata[:ruled]
    if on:
        prog.rules.append(A.RuleDecl("r", tuple(A.PatternRef(a.name) for a in on), None))
    return prog


#: the random split programs and their runs: kernel statements, other statements, a stream,
#: cuts, where to save and restore, how many patterns a rule reads (-1: all)
PROGRAMS = (st.lists(st.one_of(statements(), restarts(), consecs()), min_size=1, max_size=3),
            st.lists(st.sampled_from(OTHERS), min_size=1, max_size=3, unique=True),
            stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70),
            st.integers(-1, 2))


@settings(max_examples=150, deadline=None)
@given(*PROGRAMS)
def test_split_equals_event_by_event(kernel_stmts, others, spec, cuts, restore_at,
                                     ruled) -> None:
    check_split(program(kernel_stmts, others, ruled), spec, cuts, restore_at)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(statements(), restarts(), consecs()), min_size=1, max_size=3),
       st.lists(st.sampled_from(OTHERS), min_size=1, max_size=3, unique=True),
       stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70),
       st.integers(-1, 2), st.sampled_from([0, 1, 3]))
def test_split_stepping_many_rows_equals_event_by_event(kernel_stmts, others, spec, cuts,
                                                        restore_at, ruled, short) -> None:
    """A batch stepping many rows looks the loose matches and the instances up in lists
    (split._Replay.as_lists) and records the short stretches between stepped rows match by
    match (those up to ``short`` here; longer ones as before): as the per-event engine."""
    with in_lists(short):
        check_split(program(kernel_stmts, others, ruled), spec, cuts, restore_at)


@settings(max_examples=200, deadline=None)
@given(st.lists(consecs(), min_size=1, max_size=2),
       keyed_others(),
       st.lists(st.tuples(st.sampled_from(["A", "B"]),
                          st.sampled_from([*[0, 1, 2] * 6, 1.0, True, None, "1",
                                           float("nan")]),
                          st.sampled_from([0, 1, 2, 3, 4, 5, None, True, 1.5]),
                          st.sampled_from([0.0, 0.7, 1.2, 2.0]), st.integers(0, 2)),
                min_size=20, max_size=80),
       st.lists(st.integers(0, 80), max_size=4), st.integers(0, 80), st.integers(-1, 2))
def test_consecutive_chains_equal_event_by_event(kernel_stmts, others, spec, cuts, restore_at,
                                                 ruled) -> None:
    """The consecutive kernel alone or beside statements over the input and its output:
    every generated chain has its shape (none falls back unseen; a pair without a forbidden
    event is the pair kernel's), and the split equals the per-event engine."""
    prog = program(kernel_stmts, others, ruled)
    mine = {s.split("'")[1] for s in kernel_stmts}
    assert all(m.pattern.consec is not None or m.pattern.pair is not None
               for m in Engine(prog).matchers if m.name in mine)
    check_split(prog, spec, cuts, restore_at)


# (A at 0 begins an instance B of its key completes at 1: the token path's timer for it, at
# 0 + 3 ms, fires idle later and moves the clock there)
IDLE = ("@Name('P')\ninsert into P\nselect a.k as k\nfrom pattern [every a = A() -> (b = "
        "B(k = a.k) and not A(k = a.k)) where timer:within(3 msec)];\n")


@settings(max_examples=150, deadline=None)
@given(consecs(), st.lists(st.tuples(st.sampled_from(["A", "B"]), st.sampled_from([0, 1, 2]),
                                     st.sampled_from([0, 1, 2, 3, 4, 5]),
                                     st.sampled_from([0.0, 0.7]), st.integers(0, 2)),
                           max_size=40),
       st.sampled_from([0, 1, 2, 3, 4, 50]))
@example(IDLE, [("A", 0, 1, 0.0, 0), ("B", 0, 1, 0.0, 1)], 9)
def test_consecutive_time_passing_after_a_batch(stmt, spec, later) -> None:
    """A batch then ``advance_to``: the clock moves over the idle deadlines of the instances
    the batch began and ended (completed, or by the NOT) as the token path's timers move it
    (Matcher.skipped) — the saved state's ``time`` — and the matches are the token path's."""
    check_time_passing(program([stmt], []), spec, later)


def check_time_passing(prog, spec, later) -> None:
    """``spec`` in one batch, then time passes ``later`` past its last event, against the
    general token path event by event: the same matches and ids, saved state (its ``time``)
    and statistics."""
    evs = events(spec)
    end = (evs[-1].ts if evs else 0) + later
    batch, ref = Engine(prog), Engine(prog, fast_path=False)
    got = batch.process_batch(events(spec)) + batch.advance_to(end)
    want = [m for e in evs for m in ref.process(e)] + ref.advance_to(end)
    assert [(m.type, m.match_id, m.event_refs, m.params) for m in got] == [
        (m.type, m.match_id, m.event_refs, m.params) for m in want]
    assert save_state(batch) == save_state(ref)
    assert batch.stats == ref.stats


def check_split(prog, spec, cuts, restore_at, events=events) -> None:
    """``spec`` through the split in batches cut at ``cuts``, a single event between them and
    a save/restore at ``restore_at``, against event by event: the same complex events, ids,
    statistics, open instances, saved state and end of input. ``events`` makes the events of
    ``spec`` (tests.esper.test_esper_kernel.events)."""
    one = Engine(prog)
    many = Engine(prog)
    split = many._split
    if split is None:  # (every statement a kernel or none: not this test's case)
        return
    assert all(m.pattern.pair is not None or m.pattern.restart is not None
               or m.pattern.consec is not None or m.pattern.esper_and is not None
               or timer_end_shape(many, m) is not None
               or esper_each_of(m.pattern) is not None
               or esper_whole_of(m.pattern) is not None for m in split)
    ref = rows([m for e in events(spec) for m in one.process(e)])
    evs = events(spec)
    bounds = sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})
    restore_at = min(restore_at, len(spec))
    got = []
    for n, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        if n % 2 and hi > lo:  # one event on its own between batches
            got += rows(many.process(evs[lo]))
            lo += 1
        if lo <= restore_at < hi:  # save and restore in the middle of the stream
            got += rows(many.process_batch(evs[lo:restore_at]))
            many = restored(many, prog)
            lo = restore_at
        got += rows(many.process_batch(evs[lo:hi]))
    assert got == ref
    assert many.stats == one.stats
    # (the counts per pattern in the order the engine first met each: reports list them so)
    assert list(many.stats.by_pattern) == list(one.stats.by_pattern)
    assert state(many) == state(one)
    assert rows(many.finish(close_windows=True)) == rows(one.finish(close_windows=True))
    assert many.partial_matches() == one.partial_matches()


def test_temperature_alerts_run_in_the_kernel() -> None:
    """examples/temperature's Warning and Critical (alerts.epl) run in the consecutive kernel:
    no event goes the per-event way, and the matches, ids and state are the per-event
    engine's."""
    import random
    from pathlib import Path

    from cepflow.events.event import Event
    from cepflow.loader import load

    prog = load(Path(__file__).parents[2] / "examples" / "temperature" / "alerts.epl")
    one, many = Engine(prog), Engine(prog)
    assert [m.name for m in many._split] == ["Warning", "Critical"]
    rng = random.Random(7)
    temps = [rng.choice([90, 150, 390, 420, 500, 700]) + rng.randrange(0, 40)
             for _ in range(3000)]
    evs = [Event("TemperatureEvent", (t, i), i * 1000, id=f"t{i}") for i, t in enumerate(temps)]
    ref = rows([m for e in evs for m in one.process(e)])

    def no_step(*_: object) -> None:
        raise AssertionError("a batch went event by event")

    many._one_by_one = no_step  # type: ignore[method-assign]
    got = rows(list(many.run(evs, batch_size=701)))
    assert got == ref and {r[0] for r in ref} == {"Warning", "Critical"}
    assert many.stats == one.stats and state(many) == state(one)


def test_motorbike_splits_kernels_from_the_rest() -> None:
    """The motorbike set: GhostRider (one event), BlowOutTire (a pair whose guard reads a1's
    fields), DriverLeftSeat (every (a -> b)) and Crash (a keyed pair) run in the kernels; the
    statements over derived events per event."""
    from pathlib import Path

    from cepflow.loader import load

    prog = load(Path(__file__).parents[2] / "examples" / "motorbike" / "motorbike.epl")
    assert [m.name for m in Engine(prog)._split] == ["GhostRider", "BlowOutTire",
                                                     "DriverLeftSeat", "Crash"]


def test_examples_window_statements_are_planned_column_wise() -> None:
    """Air quality's six averages (a sliding window, one row per reading) and temperature's
    Monitor (a time batch) are window blocks of the split (kernels/window_block.py); the
    time batch over the grades' union (AirQualityLevel) is not (it reads derived events)."""
    from pathlib import Path

    from cepflow.loader import load
    from cepflow.runtime.kernels.window_block import window_kernels

    ex = Path(__file__).parents[2] / "examples"
    air = Engine(load(ex / "air_quality" / "air_quality.epl"))
    assert air._split == []
    assert [air.windows[i].statement.name for i in window_kernels(air)] == [
        f"{p}Average" for p in ("CO", "O3", "NO2", "SO2", "PM10", "PM25")]
    temp = Engine(load(ex / "temperature" / "temperature.epl"))
    assert [temp.windows[i].statement.name for i in window_kernels(temp)] == ["Monitor"]


def test_contractions_counter_is_a_window_block() -> None:
    """examples/contractions: Duration runs in the pair kernel and Counter (a fully aggregated
    sliding window over a pattern's output, rows at arrivals and at expiries) is planned
    column-wise; no batch goes event by event, and the rows, ids, statistics, state and end
    of input are the per-event engine's."""
    import random
    from pathlib import Path

    from cepflow.events.event import Event
    from cepflow.loader import load
    from cepflow.runtime.kernels import pair
    from cepflow.runtime.kernels.window_block import window_kernels

    prog = load(Path(__file__).parents[2] / "examples" / "contractions" / "contractions.epl")
    one, many = Engine(prog), Engine(prog)
    assert [m.name for m in many._split] == ["Duration"]
    assert [many.windows[i].statement.name for i in window_kernels(many)] == ["Counter"]
    rng = random.Random(11)
    evs = [Event("Patient", (i // 20, f"P{i % 20}", rng.randrange(0, 61)), i // 20 * 60_000,
                 id=f"p{i}") for i in range(6000)]
    ref = rows([m for e in evs for m in one.process(e)])

    def no_step(*_: object) -> None:
        raise AssertionError("a batch went event by event")

    # (Duration's guard, `contrDuration > 35 and ts - a1.ts <= 5`, decided column-wise)
    decided: list[bool] = []
    truth = pair._GuardColumns.truth

    def spy(self: pair._GuardColumns, sel: Any, q: Any) -> Any:
        mask = truth(self, sel, q)
        decided.append(mask is not None)
        return mask

    with patch.object(pair._GuardColumns, "truth", spy):
        many._one_by_one = no_step  # type: ignore[method-assign]
        got = rows(list(many.run(evs[:2500], batch_size=701)))
        many = restored(many, prog)
        many._one_by_one = no_step  # type: ignore[method-assign]
        got += rows(list(many.run(evs[2500:], batch_size=997)))
    assert decided and all(decided)
    assert got == ref and {r[0] for r in ref} == {"Duration", "Counter"}
    assert many.stats == one.stats and state(many) == state(one)
    assert rows(many.finish(close_windows=True)) == rows(one.finish(close_windows=True))


def test_matches_nothing_reads_keep_the_per_event_order() -> None:
    """Two kernel patterns completing at the same rows, read by nothing (no rule, pattern or
    window): recorded without a per-event step, in the engine's order and with its ids."""
    text = ("@Name('P')\ninsert into P\nfrom pattern [every a = A(a.v >= 1)];\n"
            "@Name('Q')\ninsert into Q\nselect a.k as k\nfrom pattern [every a = A -> "
            "b = A(b.k = a.k)];\n"
            "@Name('W')\ninsert into W\nselect count(*) as c\nfrom B.win:time_batch(3 msec);\n")
    prog = load_module(parse_epl(SCHEMA + text))
    # (each batch records more than split._MANY matches at once, counted per plan; Q's
    # first: the counts per pattern in the order the engine first met each)
    spec = [("A", 0, 0, 0.5, 0), ("A", 0, 0, 0.5, 1)] + [
        ("A" if i % 5 else "B", i % 3, i % 4, 0.5, i % 2) for i in range(160)]
    one, many = Engine(prog), Engine(prog)
    assert [m.name for m in many._split] == ["P", "Q"]
    ref = rows([m for e in events(spec) for m in one.process(e)])
    evs = events(spec)
    got = rows(many.process_batch(evs[:85])) + rows(many.process_batch(evs[85:]))
    assert got == ref and len({r[4] for r in ref}) == len(ref)
    assert many.stats == one.stats
    assert list(many.stats.by_pattern) == list(one.stats.by_pattern) == ["Q", "P", "W"]
    assert state(many) == state(one)


@settings(max_examples=150, deadline=None)
@given(*PROGRAMS)
def test_split_over_arrow_columns_equals_event_by_event(kernel_stmts, others, spec, cuts,
                                                         restore_at, ruled) -> None:
    """The split over a column source (Engine.process_columns over Arrow batches of the file
    job's layout: events made only for the rows stepped, in matches or left open), batches cut
    anywhere and a save/restore in the middle after which the reader numbers from 0 again:
    the same complex events, rows written, statistics, open instances and saved state as the
    per-event engine."""
    check_split_columns(program(kernel_stmts, others, ruled), spec, cuts, restore_at)


def check_split_columns(prog, spec, cuts, restore_at, events=events) -> Any:
    """:func:`check_split` through Engine.process_columns over Arrow batches cut at ``cuts``
    (tests.esper.test_esper_kernel.fed_columns), a save/restore at ``restore_at`` after which
    the reader numbers from 0 again (some rows without an id): the same complex events, rows
    written, statistics, open instances, saved state and end of input as event by event.
    ``events`` makes the events of ``spec``; returns both engines (ended) and the complex
    events per batch (None when the split does not apply)."""
    one, many = Engine(prog), Engine(prog)
    if many._split is None:
        return None
    assert many.columnar

    def numbered(first: int = 0) -> list:  # (the reader numbers the rows; some have no id)
        evs = events(spec)
        for i, e in enumerate(evs):
            e.seq = i - first
            if i % 3 == 1:
                e.id = None
        return evs

    ref = [m for e in numbered() for m in one.process(e)]
    restore_at = min(restore_at, len(spec))
    # after the restore the rest is read from its own file: numbered from 0 again
    evs = numbered()[:restore_at] + numbered(restore_at)[restore_at:]
    bounds = sorted({0, len(spec), restore_at, *(min(c, len(spec)) for c in cuts)})
    got, written, batches = [], [], []
    for lo, hi in itertools.pairwise(bounds):
        if lo == restore_at and lo:
            many = restored(many, prog)
        found, rows_written = fed_columns(many, evs[lo:hi], {"A": 4, "B": 4})
        got += found
        written += rows_written
        batches.append(found)
    assert_alike(one, ref, many, got, written)
    assert rows(many.finish(close_windows=True)) == rows(one.finish(close_windows=True))
    assert many.partial_matches() == one.partial_matches()
    return one, many, batches


#: fully aggregated sliding windows (kernels/window_block.py, rows on expiry), over the input
#: and over a single-stage pattern's output as contractions' Counter: grouped and not, int and
#: float sums, averages, counts of a field, filters
EXPIRING = [
    "@Name('E1')\ninsert into E1\nselect count(p.x) as n\n"
    "from pattern [(every p = A(p.x >= 0.7))].win:time(3 msec);\n",
    "@Name('E2')\ninsert into E2\nselect p.k as k, count(*) as c, sum(p.x) as sx, avg(p.k) as ak\n"
    "from pattern [(every p = A(p.x > 0.5))].win:time(4 msec)\ngroup by p.k;\n",
    "@Name('E3')\ninsert into E3\nselect b.k as k, sum(b.k) as sk, avg(b.x) as ax\n"
    "from B.win:time(2 msec) as b\ngroup by b.k;\n",
    "@Name('E4')\ninsert into E4\nselect count(*) as c, current_timestamp() as t\n"
    "from A.win:time(5 msec);\n",
    "@Name('E5')\ninsert into E5\nselect b.k as k, count(*) as c\n"
    "from B(b.x < 1.5).win:time(1 msec) as b\ngroup by b.k;\n"
    "@Name('GE')\ninsert into GE\nselect e.k as k\nfrom pattern [every e = E5(e.c = 0)];\n",
]


@settings(max_examples=200, deadline=None)
@given(st.lists(statements(), min_size=1, max_size=2),
       st.lists(st.sampled_from(EXPIRING), min_size=1, max_size=3, unique=True),
       st.lists(st.tuples(st.sampled_from(["A", "A", "B"]), st.sampled_from([0, 1, 2, 3]),
                          st.sampled_from([0, 1, 2, 5]),
                          st.sampled_from([0.0, 0.7, 1.2, 2.0, 0.1]),
                          st.sampled_from([0, 0, 0, 1, 2, 4])), max_size=80),
       st.lists(st.integers(0, 80), max_size=4), st.integers(0, 80), st.integers(-1, 2))
def test_expiring_windows_equal_event_by_event(kernel_stmts, windows, spec, cuts, restore_at,
                                               ruled) -> None:
    """Fully aggregated sliding windows beside kernel patterns, over streams where many events
    share an instant (so several groups leave at once): their rows at arrivals and at expiry
    instants (the order of the groups, their values after everything leaving then, a group
    left empty), ids, state and end of input are the per-event engine's."""
    check_split(program(kernel_stmts, windows, ruled), spec, cuts, restore_at)
