"""The column-wise fast path gives the event-by-event path's rows.

``WindowRunner.process_batch`` takes the numpy path for statements with one ``#time`` window,
count/sum/avg of fields and at most one group key (``cepflow.windows.prefix_sums``); the state
moves between the two representations when single events, ``advance_to`` and batches are
mixed. Counts and integer sums must be equal; float sums equal up to rounding.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from windows_helpers import schema, statement

from cepflow.events.event import ComplexEvent, Event
from cepflow.language import ast
from cepflow.windows import (
    SlidingAggregate,
    WindowError,
    WindowRunner,
    WindowSpec,
    WindowStatement,
)
from cepflow.windows.plan import compile_statement
from cepflow.windows.prefix_sums import columnar_plan

SCHEMAS = {"R": schema("R", "k", "v"), "Other": schema("Other", "x")}


def same(a: list[ComplexEvent], b: list[ComplexEvent]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert (x.type, x.ts, x.parts) == (y.type, y.ts, y.parts), (x, y)
        for p, q in zip(x.params, y.params, strict=True):
            if isinstance(p, float) or isinstance(q, float):
                assert p is not None and q is not None and math.isclose(p, q, rel_tol=1e-9,
                                                                        abs_tol=1e-9), (x, y)
            else:
                assert p == q and type(p) is type(q), (x, y)


values = st.one_of(st.none(), st.integers(-50, 50),
                   st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False))
streams = st.lists(st.tuples(st.sampled_from([0, 0, 1, 2, 9]), st.sampled_from(["a", "b", 7]),
                             values, st.sampled_from(["R", "R", "R", "Other"])), max_size=60)
selects = st.lists(st.sampled_from(["count(*)", "count(v)", "sum(v)", "avg(v)"]), min_size=1,
                   max_size=4, unique=True)
#: how the stream is fed: batches of these sizes, or -1 = one event via process(), or
#: -2 = advance_to(next timestamp), then that event via process()
feeding = st.lists(st.sampled_from([-2, -1, 1, 3, 8, 30]), min_size=1, max_size=12)


@settings(max_examples=80, deadline=None)
@given(streams, selects, st.booleans(), st.sampled_from([1, 5, 8.5]), st.booleans(), feeding)
def test_columnar_rows_equal_event_by_event_rows(gaps: list, aggs: list[str], grouped: bool,
                                                 size: float, filtered: bool,
                                                 plan: list[int]) -> None:
    t, evs = 0, []
    for gap, k, v, typ in gaps:
        t += gap
        evs.append(Event(typ, (k, v) if typ == "R" else (k,), t))
    stmt = statement([*(["k"] if grouped else []), *aggs], WindowSpec.time(size),
                     group_by=["k"] if grouped else [],
                     filter="v != 3" if filtered else None)
    slow = WindowRunner(stmt, SCHEMAS, columnar=False)
    expected = slow.run(evs, finish=False) + slow.advance_to(t + 20)
    fast = WindowRunner(stmt, SCHEMAS, columnar_min_batch=1)
    assert fast.columnar_eligible
    got: list[ComplexEvent] = []
    i = 0
    for step in itertools.cycle(plan):
        if i >= len(evs):
            break
        if step == -1:
            got += fast.process(evs[i])
            i += 1
        elif step == -2:
            got += fast.advance_to(evs[i].ts)
            got += fast.process(evs[i])
            i += 1
        else:
            got += fast.process_batch(evs[i:i + step])
            i += step
        assert fast.window_size == slow_size(stmt, evs[:i], fast.time)
    got += fast.advance_to(t + 20)
    same(expected, got)


def slow_size(stmt: Any, seen: list[Event], now: float) -> int:
    runner = WindowRunner(stmt, SCHEMAS, columnar=False)
    runner.run(seen, finish=False)
    if now > runner.time:
        runner.advance_to(now)
    return runner.window_size


def test_large_batches_of_many_groups() -> None:
    rng = np.random.default_rng(7)
    n = 20_000
    ts = np.cumsum(rng.integers(0, 3, n))
    keys = rng.integers(0, 500, n)
    vals = rng.normal(50, 10, n).round(1)
    evs = [Event("R", (int(k), float(v)), int(t)) for t, k, v in zip(ts, keys, vals,
                                                                      strict=True)]
    stmt = statement(["k", "count(*)", "sum(v)", "avg(v)"], WindowSpec.time(100),
                     group_by=["k"])
    slow = WindowRunner(stmt, SCHEMAS, columnar=False).run(evs, finish=False)
    fast = WindowRunner(stmt, SCHEMAS)
    got: list[ComplexEvent] = []
    for i in range(0, n, 4096):
        got += fast.process_batch(evs[i:i + 4096])
    same(slow, got)


def test_pure_column_api() -> None:
    stmt = statement(["k", ("count(*)", "n"), ("avg(v)", "mean")], WindowSpec.time(10),
                     group_by=["k"])
    agg = SlidingAggregate.from_statement(stmt, SCHEMAS)
    out = agg.process(np.array([0, 1, 5, 12]), {"k": np.array(["a", "b", "a", "a"]),
                                                "v": np.array([1.0, 2.0, 3.0, 5.0])})
    assert out.ts.tolist() == [0, 1, 5, 10, 11, 12]
    assert out.trigger.tolist() == [0, 1, 2, -1, -1, 3]
    assert out.columns["k"].tolist() == ["a", "b", "a", "a", "b", "a"]
    assert out.columns["n"].tolist() == [1, 1, 2, 1, 0, 2]
    assert out.values("mean") == [1.0, 2.0, 2.0, 3.0, None, 4.0]
    assert out.nulls["mean"].tolist() == [False, False, False, False, True, False]
    assert len(agg) == 2
    later = agg.advance_to(100)
    assert later.values("n") == [1, 0] and later.ts.tolist() == [15, 22]
    events = later.to_events(itertools.count(1).__next__)
    assert [(e.ts, e.params) for e in events] == [(15, ("a", 1, 5.0)), (22, ("a", 0, None))]
    with pytest.raises(WindowError, match="nondecreasing"):
        agg.process(np.array([50]), {"k": np.array(["a"]), "v": np.array([1.0])})


@pytest.mark.parametrize("select, group_by, window, having", [
    (["k", "min(v)"], ["k"], WindowSpec.time(5), None),
    (["k", "count(*)"], ["k"], WindowSpec.length(5), None),
    (["k", "count(*)"], ["k"], WindowSpec.time(5), "count(*) > 1"),
    (["k", "v", "count(*)"], ["k"], WindowSpec.time(5), None),
    (["k", "count(*)"], ["k", "v"], WindowSpec.time(5), None),
    (["sum(v + 1)"], [], WindowSpec.time(5), None),
    (["count(*) + 1"], [], WindowSpec.time(5), None),
])
def test_statements_outside_the_fast_path(select: list[str], group_by: list[str],
                                          window: WindowSpec, having: str | None) -> None:
    stmt = statement(select, window, group_by=group_by, having=having)
    assert columnar_plan(compile_statement(stmt, SCHEMAS)) is None
    assert not WindowRunner(stmt, SCHEMAS).columnar_eligible
    with pytest.raises(WindowError, match="not eligible"):
        SlidingAggregate.from_statement(stmt, SCHEMAS)


def test_batches_the_fast_path_cannot_take_fall_back() -> None:
    stmt = statement(["k", "sum(v)"], WindowSpec.time(5), group_by=["k"])
    big = [Event("R", ("a", 2**62 + i), i) for i in range(300)]
    out = WindowRunner(stmt, SCHEMAS).process_batch(big)  # beyond int64: exact Python ints
    assert out[2].params == ("a", 3 * 2**62 + 3)
    nan_keys = [Event("R", (float("nan") if i % 2 else None, 1), i) for i in range(300)]
    fast = WindowRunner(stmt, SCHEMAS).process_batch(nan_keys)  # NaN and None stay apart
    slow = WindowRunner(stmt, SCHEMAS, columnar=False).run(nan_keys, finish=False)
    assert [(e.ts, repr(e.params)) for e in fast] == [(e.ts, repr(e.params)) for e in slow]
    text = [Event("R", ("a", "x"), i) for i in range(300)]
    with pytest.raises(WindowError, match="cannot aggregate"):
        WindowRunner(stmt, SCHEMAS).process_batch(text)


def test_count_star_spellings_and_out_of_order_batches() -> None:
    star = WindowStatement("O", "R", WindowSpec.time(5), [(ast.Call("count", (ast.Name("*"),)),
                                                           "n")])
    runner = WindowRunner(star, SCHEMAS, columnar_min_batch=1)
    assert runner.columnar_eligible
    evs = [Event("R", ("a", 1), t) for t in (0, 1, 2, 1, 3)]
    with pytest.raises(WindowError, match="time went back from 2 to 1"):
        runner.process_batch(evs)
    assert runner.time == 2 and runner.window_size == 3  # as event by event: up to the error
