"""A runtime error in one event never aborts the run (docs/semantics.md, "Evaluation
errors"): an expression that fails on a value is false (a condition) or null (a value) for
that evaluation, the event goes to the side channel as an ``error`` record naming the
expression, its FILE:LINE:COL and the message, and detection goes on; a rule action that raises
is recorded the same way. Every execution path reports the same records and finds the same
matches: the per-event engine (general and fast steps), the chain and Esper pair kernels
(``process_batch``, ``Engine.run``), the column entry point (``process_columns``) and window
statements."""

import itertools
import json
import math
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.compiler.evaluator import MAX_SEQUENCE, EvaluationError, can_fail, compile_expr
from cepflow.compiler.program import compile_module
from cepflow.events.event import Event, SideChannel
from cepflow.language import ast as A
from cepflow.language.epl import parse_epl
from cepflow.language.parser import parse, parse_expr
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine, EvaluationFailed
from cepflow.runtime.rows import EventRows
from cepflow.runtime.state import StateError, save_state
from support import keyed_chains, tokens_form

SENSORS = """atomicEvent Reading(s: String, temp: Double)
atomicEvent Alarm(s: String)
complexEvent Hot(s: String) { as Reading(s, _) where sqrt(temp) > 3 -> Alarm(s) }
"""


def program(text: str, source: str = "p.vepl"):
    return compile_module(parse(text, source))


def reading(s: str, temp: float, ts: int, ident: str) -> Event:
    return Event("Reading", (s, temp), ts, id=ident)


def alarm(s: str, ts: int, ident: str) -> Event:
    return Event("Alarm", (s,), ts, id=ident)


def sensor_stream() -> list[Event]:
    return [reading("a", 16.0, 1, "r1"), reading("a", -4.0, 2, "r2"), alarm("a", 3, "a1"),
            reading("b", float("nan"), 4, "r3"), reading("b", 25.0, 5, "r4"),
            alarm("b", 6, "a2")]


def test_math_domain_error_is_recorded_and_detection_goes_on() -> None:
    side = SideChannel()
    eng = Engine(program(SENSORS), side=side)
    found = [m for e in sensor_stream() for m in eng.process(e)]
    assert [(m.params, m.event_refs) for m in found] == [(("a",), ["r1", "a1"]),
                                                         (("b",), ["r4", "a2"])]
    assert eng.stats.errors == 1 and eng.errors is side.errors
    (rec,) = side.errors
    assert rec.source == "pattern Hot"
    assert rec.location == "event r2 at 2"
    assert rec.field == "sqrt(temp) > 3"
    assert rec.reason == "p.vepl:3:54: `sqrt(temp) > 3` failed: ValueError: math domain error"
    assert rec.record.id == "r2"


def test_failing_filter_is_false_not_its_negation() -> None:
    """``not (sqrt(temp) > 3)`` fails as a whole: false, not ``not null``."""
    prog = program(SENSORS.replace("where sqrt(temp) > 3", "where not (sqrt(temp) > 3)"))
    eng = Engine(prog)
    found = [m for e in [reading("a", -4.0, 1, "r1"), alarm("a", 2, "a1")]
             for m in eng.process(e)]
    assert found == [] and len(eng.errors) == 1


def test_floor_of_nan_and_size_limit() -> None:
    text = SENSORS.replace("sqrt(temp) > 3", "floor(temp) > 3 or len(str(s) * 200000000) > 0")
    eng = Engine(program(text))
    t0 = time.perf_counter()
    eng.process(reading("a", float("nan"), 1, "r1"))   # floor(NaN): the first operand fails
    eng.process(reading("a", 1.0, 2, "r2"))            # the text would be 200M characters
    assert time.perf_counter() - t0 < 1.0             # refused before it is allocated
    reasons = [r.reason for r in eng.errors]
    assert "ValueError: cannot convert float NaN to integer" in reasons[0]
    assert f"longer than the limit of {MAX_SEQUENCE:,}" in reasons[1]
    assert eng.partial_matches() == {"Hot": 0}


def test_without_a_sink_an_expression_raises_a_located_error() -> None:
    f = compile_expr(parse_expr("sqrt(x) > 1"), {"x": 0}, origin="pattern P")
    with pytest.raises(EvaluationError, match=r"1:1: pattern P: `sqrt\(x\) > 1` failed: "
                                              "ValueError: math domain error"):
        f(Event("X", (-1,), 0), {})
    assert f(Event("X", (4,), 0), {}) is True


def test_remainder_of_a_text_is_null_not_formatting() -> None:
    f = compile_expr(parse_expr('"%0900000000d" % x'), {"x": 0})
    assert f(Event("X", (1,), 0), {}) is None          # (no 900 MB of zeros)
    assert compile_expr(parse_expr("x % 3"), {"x": 0})(Event("X", (7,), 0), {}) == 1


def test_concatenation_over_the_limit_fails() -> None:
    f = compile_expr(parse_expr("s + s"), {"s": 0})
    sink: list = []
    from cepflow.compiler.evaluator import install_sink

    before = install_sink(sink)
    try:
        assert f(Event("X", ("x" * (MAX_SEQUENCE // 2 + 1),), 0), {}) is None
        assert f(Event("X", ("x" * 10,), 0), {}) == "x" * 20
    finally:
        install_sink(before)
    assert len(sink) == 1


def test_on_error_fail_stops_at_the_event_after_its_matches() -> None:
    eng = Engine(program(SENSORS), on_error="fail")
    delivered = []
    with pytest.raises(EvaluationFailed, match="pattern Hot, event r2 at 2") as err:
        for m in eng.run(sensor_stream()):
            delivered.append(m)
    assert err.value.complex_events == []      # (run() yielded them before raising)
    assert delivered == [] and eng.stats.events == 2
    one = Engine(program(SENSORS), on_error="fail")
    one.process(reading("a", 16.0, 1, "r1"))
    with pytest.raises(EvaluationFailed):
        one.process(reading("a", -4.0, 2, "r2"))
    assert len(one.errors) == 1


ESPER = ("create schema A(k integer, x double);\ncreate schema B(k integer, x double);\n"
         "@Name('P')\ninsert into P\nselect a.k as k, floor(b.x) as f\n"
         "from pattern [every a = A(sqrt(a.x) > 1) -> b = B(a.k = b.k)];\n")


def test_failing_select_expression_is_null_and_recorded() -> None:
    prog = load_module(parse_epl(ESPER, "p.epl"))
    for batched in (False, True):
        eng = Engine(prog)
        evs = [Event("A", (1, 4.0), 1, id="a"), Event("B", (1, float("nan")), 2, id="b")]
        found = eng.process_batch(evs) if batched else [m for e in evs for m in eng.process(e)]
        assert [(m.params, m.event_refs) for m in found] == [((1, None), ["a", "b"])]
        (rec,) = eng.errors
        assert (rec.source, rec.location, rec.field) == ("pattern P", "event b at 2",
                                                          "floor(b.x)")


def test_only_expressions_that_can_fail_need_a_sink() -> None:
    """A constant or a variable's value cannot fail (evaluator.can_fail): an engine whose
    expressions are all such installs no sink per event; one computation is enough to need
    it, and its failures are still recorded (the test above, per event)."""
    name, const = parse_expr("a.k"), parse_expr("3")
    assert not can_fail(compile_expr(name, {}, variables=frozenset({"a.k"})))
    assert not can_fail(compile_expr(const, {}))
    assert can_fail(compile_expr(parse_expr("a.k + 1"), {}, variables=frozenset({"a.k"})))
    assert can_fail(compile_expr(parse_expr("sqrt(x)"), {"x": 0}))
    schema = "create schema A(k int, x double); create schema B(k int, x double);\n"
    plain = load_module(parse_epl(schema + "insert into P select a.k as k, b.x as x from "
                                  "pattern [every a=A -> b=B(b.k = a.k)]"))
    assert not Engine(plain)._evaluates
    assert Engine(load_module(parse_epl(ESPER, "p.epl")))._evaluates


def test_raising_action_is_recorded_and_the_next_firing_runs() -> None:
    text = SENSORS + "rule r1 on Hot priority 2 action boom\nrule r2 on Hot action ok\n"
    seen = []

    def boom(act):
        raise RuntimeError(f"cannot notify {act.bindings['s']}")

    for batched in (False, True):
        seen.clear()
        eng = Engine(program(text), actions={"boom": boom, "ok": lambda act: seen.append(1)})
        evs = sensor_stream()
        found = (eng.process_batch(evs) if batched
                 else [m for e in evs for m in eng.process(e)])
        assert len(found) == 2 and seen == [1, 1] and eng.stats.rule_firings == 4
        actions = [r for r in eng.errors if r.source == "rule r1"]
        assert [(r.location, r.field) for r in actions] == [
            ("match 1 of Hot at 3", "action boom"), ("match 2 of Hot at 6", "action boom")]
        assert actions[0].reason == ("p.vepl:4:6: `action boom` failed: RuntimeError: "
                                     "cannot notify a")


WINDOWS = """atomicEvent Reading(s: String, temp: Double)
complexEvent Stats {
  from r = Reading where sqrt(r.temp) >= 0 window length(3)
  select r.s as s, count(*) as n, floor(avg(r.temp)) as f
  group by r.s
}
"""


def test_window_statement_filter_and_select_errors() -> None:
    eng = Engine(program(WINDOWS))
    rows = [m for e in [reading("a", 4.0, 1, "r1"), reading("a", -1.0, 2, "r2"),
                        reading("a", float("inf"), 3, "r3")] for m in eng.process(e)]
    # r2 fails the filter (not taken); r3 is taken, floor(inf) fails in the select: null
    assert [(r.params, r.event_refs) for r in rows] == [(("a", 1, 4), ["r1"]),
                                                        (("a", 2, None), ["r3"])]
    assert [(r.location, r.field) for r in eng.errors] == [
        ("event r2 at 2", "sqrt(r.temp) >= 0"), ("event r3 at 3", "floor(avg(r.temp))")]


def test_window_group_key_failure_refuses_the_event() -> None:
    text = WINDOWS.replace("where sqrt(r.temp) >= 0 ", "").replace(
        "group by r.s", "group by floor(r.temp)").replace("r.s as s", "floor(r.temp) as s")
    eng = Engine(program(text))
    rows = [m for e in [reading("a", 1.5, 1, "r1"), reading("a", float("nan"), 2, "r2"),
                        reading("a", 1.2, 3, "r3")] for m in eng.process(e)]
    assert [r.params[:2] for r in rows] == [(1, 1), (1, 2)]   # r2 not in the window
    assert [r.location for r in eng.errors] == ["event r2 at 2"]


# ---------------------------------------------------------------- the paths agree

DECLS = "atomicEvent A(k: Int, v: Double)\natomicEvent B(k: Int, v: Double)\n"
FILTERS = ("", "sqrt(v) > 1", "floor(v) >= 1", "v > 1", "not (sqrt(v) < 1.5)")
VALUES = [-1.0, 0.0, 2.0, 4.0, float("nan"), None, float("inf")]


def chains():
    return keyed_chains(FILTERS, [None, 1, 4])


streams = st.lists(st.tuples(st.sampled_from("AB"), st.sampled_from([0, 1, 2]),
                             st.sampled_from(VALUES), st.sampled_from([0, 1, 2])), max_size=60)


def make(spec, seq: bool = False) -> list[Event]:
    ts, out = 0, []
    for i, (t, k, v, dt) in enumerate(spec):
        ts += dt
        out.append(Event(t, (k, v), ts, id=f"e{i}", seq=i if seq else -1))
    return out


def matches(found) -> list:
    return [(m.type, m.ts, tuple(m.event_refs), repr(m.params), m.match_id) for m in found]


def records(eng: Engine) -> list:
    """The error records as a multiset (a kernel reports a batch's in its own order)."""
    return sorted((r.source, r.location, r.field, r.reason) for r in eng.errors)


def saved(eng: Engine) -> str | None:
    try:
        return json.dumps(tokens_form(save_state(eng)), sort_keys=True)
    except StateError:  # (NaN in a partial match)
        return None


def failing_action(act) -> None:
    if act.event.ts % 2:
        raise ValueError("odd")


def batched(prog, spec, cuts, more: int) -> tuple[list, list[Engine]]:
    """The matches of ``spec`` and engines fed it: the general per-event path (the reference),
    the default one, one fed ``process_batch`` cut at ``cuts`` (its matches checked against the
    reference), then ``more`` fresh ones."""
    general, one, many, *fresh = (Engine(prog, actions={"act": failing_action},
                                         fast_path=i > 0) for i in range(3 + more))
    ref = matches(m for e in make(spec) for m in general.process(e))
    assert matches(m for e in make(spec) for m in one.process(e)) == ref
    evs, got = make(spec), []
    bounds = sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})
    for lo, hi in itertools.pairwise(bounds):
        got += matches(many.process_batch(evs[lo:hi]))
    assert got == ref
    return ref, [general, one, many, *fresh]


@settings(max_examples=150, deadline=None)
@given(chains(), chains(), streams, st.lists(st.integers(0, 60), max_size=3))
def test_chain_paths_agree_with_failing_filters(p1: str, p2: str, spec, cuts) -> None:
    prog = compile_module(parse(DECLS + f"complexEvent P(s: Int) {{ as {p1} }}\n"
                                f"complexEvent Q(s: Int) {{ as {p2} }}\n"
                                "rule r on P, Q action act\n"))
    ref, (general, one, many, streamed) = batched(prog, spec, cuts, 1)
    assert matches(streamed.run(make(spec), batch_size=7)) == ref
    for eng in (one, many, streamed):
        assert records(eng) == records(general)
        assert eng.stats == general.stats
        assert saved(eng) == saved(general)


@settings(max_examples=80, deadline=None)
@given(chains(), streams, st.lists(st.integers(0, 60), max_size=3))
def test_column_entry_point_agrees_with_failing_filters(p: str, spec, cuts) -> None:
    """``process_columns`` gives a batch back (Declined, nothing changed) when a filter fails
    on a row; fed as events then, the records and matches are the per-event engine's."""
    from cepflow.runtime.kernels import Declined

    prog = compile_module(parse(DECLS + f"complexEvent P(s: Int) {{ as {p} }}\n"))
    one, many = Engine(prog), Engine(prog)
    assert many.columnar
    ref = matches(m for e in make(spec, seq=True) for m in one.process(e))
    evs, got = make(spec, seq=True), []
    bounds = sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})
    for lo, hi in itertools.pairwise(bounds):
        before = (many.time, many.stats.events, saved(many))
        try:
            got += matches(many.process_columns(EventRows(evs[lo:hi])).complex_events())
        except Declined:
            assert (many.time, many.stats.events, saved(many)) == before
            got += matches(many.process_batch(evs[lo:hi]))
    assert got == ref
    assert records(many) == records(one)
    assert saved(many) == saved(one)


SCHEMA = ("create schema A(k integer, x double);\ncreate schema B(k integer, x double);\n")
PAIR_FILTERS = ["", "sqrt({a}.x) > 1", "floor({a}.x) >= 1", "{a}.x > 1"]


@st.composite
def pair_statements(draw: st.DrawFn) -> str:
    fa = draw(st.sampled_from(PAIR_FILTERS)).format(a="a")
    fb = draw(st.sampled_from(PAIR_FILTERS)).format(a="b")
    cond_b = f"({fb}) and a.k = b.k" if fb else "a.k = b.k"
    within = draw(st.sampled_from(["", " where timer:within(3 msec)"]))
    select = draw(st.sampled_from(["", "select a.k as k, floor(b.x) as f ",
                                   "select a.k as k, b.x as x "]))
    return (f"@Name('P')\ninsert into P\n{select}from pattern [every "
            f"a = A({fa}) -> b = B({cond_b}){within}];\n")


pair_streams = st.lists(st.tuples(st.sampled_from("AB"), st.sampled_from([0, 1]),
                                  st.sampled_from(VALUES), st.sampled_from([0, 1, 2])),
                        max_size=50)


@settings(max_examples=120, deadline=None)
@given(pair_statements(), pair_streams, st.lists(st.integers(0, 50), max_size=3))
def test_esper_pair_paths_agree_with_failing_expressions(text: str, spec, cuts) -> None:
    prog = load_module(parse_epl(SCHEMA + text))
    prog.rules.append(A.RuleDecl("r", (A.PatternRef("P"),), "act"))
    _, (general, one, many) = batched(prog, spec, cuts, 0)
    assert many._pairs is not None
    for eng in (one, many):
        assert records(eng) == records(general)
        assert eng.stats == general.stats
    assert matches(general.finish(True)) == matches(many.finish(True))
    assert records(many) == records(general)


def test_nan_key_comparisons_are_not_errors() -> None:
    """(NaN is a value, not a failure: comparisons with it are false, as before.)"""
    eng = Engine(program(SENSORS.replace("sqrt(temp) > 3", "temp > 3")))
    eng.process(reading("a", math.nan, 1, "r1"))
    assert eng.errors == []
