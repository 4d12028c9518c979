"""Aggregates, nulls, having, select expressions, time and ordering of window statements.

Expected outputs follow Esper's documented rules (docs/windows.md cites them): ``count(x)``
counts the non-null values, ``count(*)`` the events, and the other aggregates consider non-null
values only (Esper reference, functionreference.xml, "Aggregation Functions", "SQL-Standard
Functions"); expiry happens when time reaches ``arrival + size``; a batch closes at its
boundary; the insert stream is output.
"""

from __future__ import annotations

import itertools

import pytest
from windows_helpers import events, rows, run, schema, statement

from cepflow.events.event import Event
from cepflow.windows import WindowError, WindowRunner, WindowSpec, run_statements

SCHEMAS = {"R": schema("R", "k", "v"), "Tick": schema("Tick")}


def test_nulls_are_ignored_except_by_count_star() -> None:
    stmt = statement(["count(*)", "count(v)", "sum(v)", "avg(v)", "min(v)", "max(v)"],
                     WindowSpec.length(3))
    evs = events("R", [(0, "a", None), (1, "a", 4), (2, "a", None), (3, "a", 2),
                       (4, "a", None), (5, "a", None), (6, "a", None)])
    assert rows(run(stmt, SCHEMAS, evs)) == [
        (0, 1, 0, None, None, None, None),
        (1, 2, 1, 4, 4.0, 4, 4),
        (2, 3, 1, 4, 4.0, 4, 4),
        (3, 3, 2, 6, 3.0, 2, 4),
        (4, 3, 1, 2, 2.0, 2, 2),       # 4 left with the event at 1
        (5, 3, 1, 2, 2.0, 2, 2),
        (6, 3, 0, None, None, None, None)]


def test_sliding_min_and_max_follow_expiry() -> None:
    # monotonic deques: after the extreme leaves, the next one in arrival order takes over
    stmt = statement(["min(v)", "max(v)"], WindowSpec.time(3))
    evs = events("R", [(0, "a", 5), (1, "a", 1), (2, "a", 9), (3, "a", 4), (4, "a", 4),
                       (5, "a", 7)])
    assert rows(run(stmt, SCHEMAS, evs, until=10)) == [
        (0, 5, 5), (1, 1, 5), (2, 1, 9), (3, 1, 9), (3, 1, 9), (4, 4, 9), (4, 4, 9), (5, 4, 4),
        (5, 4, 7), (6, 4, 7), (7, 7, 7), (8, None, None)]


def test_min_and_max_of_strings_and_type_errors() -> None:
    stmt = statement(["min(k)", "max(k)"], WindowSpec.length_batch(3))
    evs = events("R", [(0, "pear", 1), (1, "apple", 1), (2, "zoo", 1)])
    assert rows(run(stmt, SCHEMAS, evs)) == [(2, "apple", "zoo")]
    with pytest.raises(WindowError, match="sum cannot aggregate the value 'x'"):
        run(statement(["sum(v)"], WindowSpec.length(2)), SCHEMAS, events("R", [(0, "a", "x")]))
    with pytest.raises(WindowError, match="avg/sum cannot aggregate the value True"):
        run(statement(["sum(v)", "avg(v)"], WindowSpec.length(2)), SCHEMAS,
            events("R", [(0, "a", True)]))
    with pytest.raises(WindowError, match="min cannot aggregate"):
        run(statement(["min(v)"], WindowSpec.length(2)), SCHEMAS,
            events("R", [(0, "a", 1), (1, "a", "x")]))


@pytest.mark.parametrize("window", [WindowSpec.time(100), WindowSpec.length(2),
                                    WindowSpec.length(2, per_group=True),
                                    WindowSpec.time_batch(100), WindowSpec.length_batch(3)])
def test_a_rejected_event_leaves_no_trace(window: WindowSpec) -> None:
    # the error names the value; the statement goes on as if the event had not come
    stmt = statement(["k", "count(*)", "sum(v)", "max(w)"], window, group_by=["k"])
    schemas = {"R": schema("R", "k", "v", "w")}
    good = events("R", [(0, "a", 1, 5), (1, "a", 2, 7), (3, "a", 4, 1), (4, "b", 1, 1)])
    clean = WindowRunner(stmt, schemas)
    expected = clean.run(good, finish=False) + clean.advance_to(500)
    runner = WindowRunner(stmt, schemas)
    got = []
    for e in good:
        got += runner.process(e)
        bad = [Event("R", ("a", "x", 1), e.ts)]  # sum of a string
        if not window.is_batch:  # max of a string next to numbers (batches may be empty)
            bad.append(Event("R", ("a", 1, "text"), e.ts))
        for b in bad:
            with pytest.raises(WindowError, match="cannot aggregate"):
                runner.process(b)
    got += runner.advance_to(500)
    assert rows(got) == rows(expected)
    assert runner.window_size == clean.window_size


def test_select_expressions_over_aggregates_and_keys() -> None:
    stmt = statement([("upper(k)", "key"), ("max(v) - min(v)", "spread"),
                      ("sum(v) / count(*)", "mean"), ("current_timestamp()", "at"),
                      ("abs(sum(v)) > 5", "big")],
                     WindowSpec.time(10), group_by=["k"])
    evs = events("R", [(0, "a", 1), (1, "b", -8), (2, "a", 9)])
    assert rows(run(stmt, SCHEMAS, evs)) == [
        (0, "A", 0, 1.0, 0, False), (1, "B", 0, -8.0, 1, True), (2, "A", 8, 5.0, 2, True)]


def test_group_by_expression_and_several_keys() -> None:
    # fields read outside aggregates only inside group-by expressions: one row per group
    stmt = statement([("v % 2", "parity"), "count(*)"], WindowSpec.length_batch(4),
                     group_by=["v % 2"])
    evs = events("R", [(i, "a", v) for i, v in enumerate([1, 2, 3, 5])])
    assert rows(run(stmt, SCHEMAS, evs)) == [(3, 1, 3), (3, 0, 1)]
    two = statement(["k", "v", "count(*)"], WindowSpec.length_batch(4), group_by=["k", "v"])
    evs = events("R", [(0, "a", 1), (1, "b", 1), (2, "a", 1), (3, "a", 2)])
    assert rows(run(two, SCHEMAS, evs)) == [(3, "a", 1, 2), (3, "b", 1, 1), (3, "a", 2, 1)]


def test_having_on_group_rows_and_on_event_rows() -> None:
    evs = events("R", [(0, "a", 1), (1, "b", 2), (2, "a", 3), (3, "a", 4)])
    groups = statement(["k", "count(*)"], WindowSpec.time(100), group_by=["k"],
                       having="count(*) >= 2")
    assert rows(run(groups, SCHEMAS, evs)) == [(2, "a", 2), (3, "a", 3)]
    # a field outside group by in having makes it one row per event (Esper adds having's
    # non-aggregated fields to the select's when choosing the query kind)
    per_event = statement(["k", "sum(v)"], WindowSpec.time(100), group_by=["k"],
                          having="v > 2")
    assert rows(run(per_event, SCHEMAS, evs)) == [(2, "a", 4), (3, "a", 8)]


def test_rows_are_complex_events_with_parts_and_ids() -> None:
    stmt = statement(["k", ("count(*)", "n")], WindowSpec.time(5), group_by=["k"])
    evs = events("R", [(0, "a", 1), (1, "a", 2)])
    ids = itertools.count(100)
    runner = WindowRunner(stmt, SCHEMAS, match_ids=ids.__next__)
    out = runner.run(evs, finish=False) + runner.advance_to(10)
    assert [e.match_id for e in out] == [100, 101, 102, 103]
    assert [e.parts for e in out] == [(evs[0],), (evs[1],), (), ()]  # expiry rows: no trigger
    assert out[1].to_dict() == {"pattern": "Out", "ts": 1, "params": {"k": "a", "n": 2},
                                "events": ["-1"]}
    assert out[1].bindings == {"k": "a", "n": 2}


def test_any_event_moves_the_clock() -> None:
    stmt = statement(["count(*)"], WindowSpec.time(5))
    runner = WindowRunner(stmt, SCHEMAS)
    assert rows(runner.process(Event("R", ("a", 1), 0))) == [(0, 1)]
    assert rows(runner.process(Event("Tick", (), 7))) == [(5, 0)]  # the expiry at 5
    assert runner.window_size == 0 and runner.group_count == 0


def test_order_of_input_and_finish() -> None:
    stmt = statement(["count(*)"], WindowSpec.time(5))
    runner = WindowRunner(stmt, SCHEMAS)
    runner.process(Event("R", ("a", 1), 10))
    runner.process(Event("R", ("a", 1), 10))  # equal timestamps are fine
    with pytest.raises(WindowError, match="time went back from 10 to 9"):
        runner.process(Event("R", ("a", 1), 9))
    with pytest.raises(WindowError, match="time went back"):
        runner.advance_to(3)
    assert runner.finish() == [] and runner.finish() == []
    with pytest.raises(WindowError, match="after finish"):
        runner.process(Event("R", ("a", 1), 11))


def test_expiry_instants_are_visited_one_by_one() -> None:
    # a jump of the clock over several expiry instants gives one update per instant, each at
    # its own time, as a clock passing through them would
    stmt = statement(["count(*)"], WindowSpec.time(10))
    evs = events("R", [(0, "a", 1), (1, "a", 1), (1, "a", 1), (3, "a", 1)])
    assert rows(run(stmt, SCHEMAS, evs, until=100)) == [
        (0, 1), (1, 2), (1, 3), (3, 4), (10, 3), (11, 1), (13, 0)]
    # an event arriving at an expiry instant: the expiry is processed first
    evs = events("R", [(0, "a", 1), (10, "a", 1)])
    assert rows(run(stmt, SCHEMAS, evs)) == [(0, 1), (10, 0), (10, 1)]


@pytest.mark.parametrize(("reference", "first_close"), [
    (None, 7300 + 1000),        # the first event sets the reference point
    (5000, 8000),               # boundaries at 5000 + k * 1000
    (9250, 8250),               # a reference point in the future works the same way
    (0, 8000),
])
def test_time_batch_reference_point(reference: float | None, first_close: float) -> None:
    stmt = statement(["count(*)"], WindowSpec.time_batch(1000, reference))
    evs = events("R", [(7300, "a", 1), (7400, "a", 1)])
    assert rows(run(stmt, SCHEMAS, evs, until=20_000)) == [(first_close, 2),
                                                            (first_close + 1000, 0)]


def test_time_batch_boundaries_stay_aligned_after_idle_time() -> None:
    stmt = statement(["count(*)"], WindowSpec.time_batch(10))
    evs = events("R", [(3, "a", 1), (13, "a", 1), (19, "a", 1), (77, "a", 1), (83, "a", 1)])
    # batches [3,13) [13,23) [23,33) then idle; 77 schedules 83 (= 3 + 8 * 10); the event at
    # exactly 83 belongs to the next batch [83, 93)
    assert rows(run(stmt, SCHEMAS, evs, until=200)) == [
        (13, 1), (23, 2), (33, 0), (83, 1), (93, 1), (103, 0)]


def test_length_batch_posts_groups_of_the_previous_batch_with_count_zero() -> None:
    stmt = statement(["k", "count(*)", "sum(v)"], WindowSpec.length_batch(2), group_by=["k"])
    evs = events("R", [(0, "a", 1), (1, "b", 2), (2, "a", 3), (3, "a", 4), (4, "c", 5),
                       (5, "c", 6)])
    assert rows(run(stmt, SCHEMAS, evs)) == [
        (1, "a", 1, 1), (1, "b", 1, 2), (3, "a", 2, 7), (3, "b", 0, None),
        (5, "c", 2, 11), (5, "a", 0, None)]


def test_incomplete_length_batches_at_the_end() -> None:
    stmt = statement(["k", "count(*)"], WindowSpec.length_batch(3), group_by=["k"])
    evs = events("R", [(0, "a", 1), (1, "b", 1), (2, "a", 1), (3, "b", 1)])
    assert rows(run(stmt, SCHEMAS, evs)) == [(2, "a", 2), (2, "b", 1)]
    assert rows(run(stmt, SCHEMAS, evs, flush=True)) == [(2, "a", 2), (2, "b", 1),
                                                         (3, "b", 1), (3, "a", 0)]
    per_group = statement(["k", "v", "count(*)"], WindowSpec.length_batch(2, per_group=True),
                          group_by=["k"])
    evs = events("R", [(0, "a", 1), (1, "b", 2), (2, "a", 3), (3, "b", 4), (4, "b", 5),
                       (5, "a", 6)])
    # one row per event of the group's batch (v is not grouped)
    assert rows(run(per_group, SCHEMAS, evs, flush=True)) == [
        (2, "a", 1, 2), (2, "a", 3, 2), (3, "b", 2, 2), (3, "b", 4, 2),
        (5, "b", 5, 1), (5, "a", 6, 1)]


def test_per_group_length_window_keeps_the_last_n_of_each_group() -> None:
    stmt = statement(["k", "sum(v)"], WindowSpec.length(2, per_group=True), group_by=["k"])
    evs = events("R", [(0, "a", 1), (1, "b", 10), (2, "a", 2), (3, "a", 4), (4, "b", 20),
                       (5, "b", 40)])
    assert rows(run(stmt, SCHEMAS, evs)) == [
        (0, "a", 1), (1, "b", 10), (2, "a", 3), (3, "a", 6), (4, "b", 30), (5, "b", 60)]
    shared = statement(["k", "sum(v)"], WindowSpec.length(2), group_by=["k"])
    # one shared window: an arrival may push out another group's event (two rows)
    assert rows(run(shared, SCHEMAS, evs)) == [
        (0, "a", 1), (1, "b", 10), (2, "a", 2), (3, "a", 6), (3, "b", None), (4, "b", 20),
        (4, "a", 4), (5, "b", 60), (5, "a", None)]


def test_run_statements_orders_and_checks_statements() -> None:
    first = statement(["k", ("count(*)", "n")], WindowSpec.length_batch(2), name="Pairs",
                      group_by=["k"])
    second = statement(["count(*)"], WindowSpec.length(10), input_type="Pairs", name="Total")
    evs = events("R", [(i, "a", 1) for i in range(4)])
    out = run_statements([second, first], evs, SCHEMAS)
    assert [(e.type, e.ts, e.params) for e in out] == [
        ("Pairs", 1, ("a", 2)), ("Total", 1, (1,)), ("Pairs", 3, ("a", 2)), ("Total", 3, (2,))]
    assert [e.match_id for e in out] == [1, 2, 3, 4]  # one numbering for all statements
    loop_a = statement(["count(*)"], WindowSpec.length(2), input_type="B", name="A")
    loop_b = statement(["count(*)"], WindowSpec.length(2), input_type="A", name="B")
    with pytest.raises(WindowError, match="cycle"):
        run_statements([loop_a, loop_b], [], {**SCHEMAS, "A": schema("A", "x"),
                                              "B": schema("B", "x")})
    with pytest.raises(WindowError, match="distinct output names"):
        run_statements([first, first], [], SCHEMAS)
