"""Races and non-confluence (003 §V.A.2): the pairs found, and that what the analysis says
the engine does at that instant is what the engine does."""

from __future__ import annotations

from pathlib import Path

import pytest

import cepflow
from cepflow.analysis import analyze, analyze_set
from cepflow.analysis.patternset import from_text
from cepflow.events.event import Event
from cepflow.runtime.engine import run_patterns


def _bike(ts: int, speed: int, tire1: float, seat: bool) -> Event:
    return Event("Motorbike", (ts // 1000, 3, "Sevilla", speed, tire1, 2.5, seat), ts)


@pytest.mark.parametrize("path", ["examples/motorbike/motorbike.epl",
                                  "examples/motorbike/motorbike.vepl"])
def test_motorbike_races(path: str) -> None:
    a = analyze([path])
    races = {(r.kind, r.patterns): r for r in a.races}
    assert set(races) == {("boundary", ("Accident", "AccidentsReport")),
                          ("siblings", ("BlowOutTire", "DriverLeftSeat")),
                          ("siblings", ("DriverLeftSeat", "Crash"))}
    report = races["boundary", ("Accident", "AccidentsReport")]
    assert report.consumer == "AccidentsReport" and not report.order_dependent
    assert "belongs to the next batch" in report.engine
    crash = races["siblings", ("DriverLeftSeat", "Crash")]
    assert crash.wants == ("Crash", "DriverLeftSeat") and crash.order_dependent
    assert "misses that match" in crash.engine
    tire = races["siblings", ("BlowOutTire", "DriverLeftSeat")]
    assert "only because of the file's order" in tire.engine
    # BlowOutTire needs speed > 0 and Crash speed == 0: never one event, so no race
    assert ("siblings", ("BlowOutTire", "Crash")) not in races
    assert a.plan.priorities["Crash"] > a.plan.priorities["DriverLeftSeat"]
    assert a.plan.priorities["Accident"] > a.plan.priorities["AccidentsReport"]


def test_the_sibling_race_is_what_the_engine_does() -> None:
    """One Motorbike event completes Crash and DriverLeftSeat: the engine gives it to
    DriverLeftSeat first (declared first), so Accident — BlowOutTire, then Crash, then
    DriverLeftSeat — misses it; declared the other way round, the same stream has the
    accident."""
    stream = [_bike(0, 80, 2.5, True), _bike(1000, 60, 1.0, True), _bike(2000, 0, 1.0, False)]
    text = Path("examples/motorbike/motorbike.vepl").read_text(encoding="utf-8")
    as_is = [c.type for c in run_patterns(cepflow.load(text), stream)]
    assert "Crash" in as_is and "DriverLeftSeat" in as_is and "Accident" not in as_is
    assert as_is.index("DriverLeftSeat") < as_is.index("Crash")
    dls = text.index("// Listing 5")
    crash = text.index("// Listing 6")
    acc = text.index("// Listing 7")
    swapped = text[:dls] + text[crash:acc] + text[dls:crash] + text[acc:]
    assert [c.type for c in run_patterns(cepflow.load(swapped), stream)].count("Accident") == 1


def test_the_boundary_is_what_the_engine_does() -> None:
    """An Accident at exactly a day boundary of AccidentsReport counts in the next batch."""
    program = cepflow.load("examples/motorbike/motorbike.epl")
    day = 86_400_000
    one = [_bike(0, 80, 2.5, True), _bike(1000, 60, 1.0, True), _bike(2000, 0, 1.0, True),
           _bike(2500, 0, 1.0, False)]
    two = [Event(e.type, (e.params[0], 4, *e.params[2:]), e.ts + day) for e in one]
    out = run_patterns(program, [*one, *two])
    accidents = [c.ts for c in out if c.type == "Accident"]
    assert accidents == [2500, 2500 + day]  # the second exactly one day after the first
    reports = [(c.ts, c.params[2]) for c in out if c.type == "AccidentsReport"]
    assert reports == [(2500 + day, 1)]  # the batch closing then holds only the first


SIBLINGS = """
atomicEvent T(k: Integer, v: Integer)
complexEvent P(k: Integer) { as T(k, _) where v > 5 }
complexEvent Q(k: Integer) { as T(k, _) where v < 10 }
complexEvent R(k: Integer) { as T(k, _) where v > 20 }
complexEvent C(k: Integer) { as Q(k) -> P(k) }
complexEvent D(k: Integer) { as Q(k) -> R(k) }
"""


def test_siblings_need_a_common_event_and_an_ordered_consumer() -> None:
    a = analyze_set(from_text(SIBLINGS))
    assert [(r.kind, r.patterns, r.wants) for r in a.races] == [
        ("siblings", ("P", "Q"), ("Q", "P"))]  # Q and R never hold together (v < 10, v > 20)
    assert a.plan.priorities["Q"] > a.plan.priorities["P"]
    out = [c.type for c in run_patterns(cepflow.load(SIBLINGS), [Event("T", (1, 7), 0)])]
    assert out == ["P", "Q"]  # P first (declared first): C (Q -> P) misses the pair


def test_derived_types_are_reported_with_the_engine_order() -> None:
    src = """
atomicEvent T(k: Integer)
complexEvent P(k: Integer) { as T(k) }
complexEvent C(k: Integer) { as T(k) -> P(k) }
complexEvent B(k: Integer) { as P(k) -> T(k) }
"""
    a = analyze_set(from_text(src))
    assert [(r.kind, r.patterns, r.types) for r in a.races] == [
        ("derived", ("P", "C"), ("T", "P")), ("derived", ("P", "B"), ("T", "P"))]
    assert "receives each T event before the P events it causes" in a.races[0].engine
    out = [c.type for c in run_patterns(cepflow.load(src), [Event("T", (1,), 0)])]
    assert out == ["P", "C"]  # C and B saw the T, then the P it caused: T -> P, not P -> T


def test_time_batches_ignore_sibling_order_but_report_boundaries() -> None:
    src = """
atomicEvent T(k: Integer, v: Integer)
complexEvent P { from t = T where t.v > 5 window length(3) select t.k as k }
complexEvent Q { from t = T where t.v < 10 window length(3) select t.k as k }
complexEvent S { from p = P window time_batch(1 min) select count(*) as n }
"""
    a = analyze_set(from_text(src))
    assert [(r.kind, r.patterns) for r in a.races] == [("boundary", ("P", "S"))]


def test_priorities_resolve_races_only_in_the_order_the_consumer_needs() -> None:
    right = SIBLINGS.replace("where v < 10 }", "where v < 10 priority 1 }")
    a = analyze_set(from_text(right))
    assert a.races == [] and [set(r.patterns) for r in a.resolved] == [{"P", "Q"}]
    wrong = SIBLINGS.replace("where v > 5 }", "where v > 5 priority 1 }")
    a = analyze_set(from_text(wrong))
    assert [r.patterns for r in a.races] == [("P", "Q")]
    assert "P runs first" in a.races[0].engine and "misses that match" in a.races[0].engine
