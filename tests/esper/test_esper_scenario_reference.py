"""Esper's own pattern *scenario* tests, run on cepflow step by step.

Besides the cases over event set one (``test_esper_reference_cases.py``), Esper's pattern
regression classes (espertechinc/esper, ``regression-lib/.../suite/pattern/``:
PatternOperatorFollowedBy, PatternOperatorEvery, PatternOperatorNot, PatternOperatorAnd,
PatternOperatorOr, PatternGuardTimerWithin, PatternObserverTimerInterval, PatternUseResult,
PatternCompositeSelect, PatternDeadPattern, PatternStartStop) hold scenarios that send their own
events one by one, move the clock, take *milestones* (the runtime's state saved and restored)
and assert the listener's new events after a step. They are restated here as step lists:

* the support beans become schemas holding the fields the patterns read (``SupportBean(theString,
  intPrimitive)``, ``SupportBean_A``..``_D(id)``, ``SupportMarketDataBean(symbol, volume)``,
  ``SupportRFIDEvent(mac, zoneID)``, ``SupportCallEvent(source, dest, startTime, endTime)``); a
  field a bean's constructor leaves unset is null (``intPrimitive`` is 0, a Java ``int``);
* a milestone is a save and restore of the engine through JSON;
* an assertion is the rows (the select list's values) since the last one, as a multiset; where
  Esper asserts only that the listener was invoked, the rows are the ones Esper's definition
  gives (said at the scenario);
* ``sb.theString like 'E5'``-style filters (PatternUseResult) compare with values holding no
  ``%`` or ``_``, where ``like`` is exactly ``=``: restated with ``=``;
* Esper's ``SupportCallEvent`` times are ``2005-09-26 13:0x:xx.xxx`` dates: restated as
  milliseconds after 13:00:00 (only their order is read).

Each scenario runs per event (with its milestones) and, without them, through ``Engine.run``
with the same rows in total. Left out, because they test the API rather than a pattern:
undeploy/redeploy, iterators, listener add/remove, filter-service counts, statement types,
prepared statements and variables, the 1000-deployment timing of PatternDeadPattern (its
pattern is kept with its answer), month-scoped time periods (calendar months).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepflow
from cepflow.events.event import Event
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.runtime.state import restore_state, save_state

#: the support beans, restated: type -> its fields (in order)
BEANS: dict[str, list[tuple[str, str]]] = {
    "SupportBean": [("theString", "string"), ("intPrimitive", "int")],
    **{f"SupportBean_{t}": [("id", "string")] for t in "ABCD"},
    "SupportMarketDataBean": [("symbol", "string"), ("volume", "long")],
    "SupportRFIDEvent": [("mac", "string"), ("zoneID", "string")],
    "SupportCallEvent": [("source", "string"), ("dest", "string"), ("startTime", "long"),
                         ("endTime", "long")],
    "TypeOne": [("symbol", "string"), ("price", "double")],
}
SCHEMA = "".join(f"create schema {t}({', '.join(f'{n} {k}' for n, k in fs)});\n"
                 for t, fs in BEANS.items())
DEFAULTS = {"SupportBean": {"intPrimitive": 0}}

#: a step: ("t", ms) moves the clock; ("e", type, {field: value}) sends an event; "m" a
#: milestone; ("x", rows) the rows since the last check ([] = none)
Step = Any


def sb(s: str | None, i: int = 0) -> tuple[str, str, dict[str, Any]]:
    """``new SupportBean(s, i)`` (``new SupportBean()``: null and 0)."""
    return ("e", "SupportBean", {"theString": s, "intPrimitive": i})


def bean(kind: str, ident: str) -> tuple[str, str, dict[str, Any]]:
    """``new SupportBean_<kind>(ident)``."""
    return ("e", f"SupportBean_{kind}", {"id": ident})


def a_misses(ids: str) -> list[tuple[str, str, dict[str, Any]]]:
    """A ``SupportBean_A`` for each of the space-separated ids (Esper's ``sendBeanAMiss``)."""
    return [bean("A", i) for i in ids.split()]


def rfid(mac: str, zone: str) -> tuple[str, str, dict[str, Any]]:
    return ("e", "SupportRFIDEvent", {"mac": mac, "zoneID": zone})


def md(symbol: str, volume: int | None = None) -> tuple[str, str, dict[str, Any]]:
    return ("e", "SupportMarketDataBean", {"symbol": symbol, "volume": volume})


def call(source: str, start: int, end: int) -> tuple[str, str, dict[str, Any]]:
    return ("e", "SupportCallEvent", {"source": source, "dest": "123456789014795",
                                      "startTime": start, "endTime": end})


def _event(step: Step, now: int, n: int) -> Event:
    _, kind, values = step
    fields = {**DEFAULTS.get(kind, {}), **values}
    return Event(kind, tuple(fields.get(f) for f, _ in BEANS[kind]), now, id=f"{kind}#{n}")


def _program(pattern: str, select: str) -> Any:
    items = ", ".join(f"{s.strip()} as c{i}" for i, s in enumerate(select.split(";")))
    return cepflow.load_module(parse_epl(
        SCHEMA + f"@Name('s0') select {items} from pattern [{pattern}];"))


def _rows(ces: list[Any]) -> list[str]:
    return sorted(json.dumps(list(ce.params)) for ce in ces)


def _expected(rows: list[tuple[Any, ...]]) -> list[str]:
    return sorted(json.dumps(list(r)) for r in rows)


def _play(pattern: str, select: str, steps: list[Step], fast_path: bool = True) -> None:
    """Per event, milestones included: each check sees the rows Esper's listener got."""
    prog = _program(pattern, select)
    engine = cepflow.Engine(prog, start=0, fast_path=fast_path)
    now, seen, n = 0, [], 0
    for k, step in enumerate(steps):
        if step == "m":
            state = json.loads(json.dumps(save_state(engine)))
            engine = restore_state(cepflow.Engine(prog, start=0, fast_path=fast_path), state)
        elif step[0] == "t":
            now = step[1]
            seen += engine.advance_to(now)
        elif step[0] == "e":
            n += 1
            seen += engine.process(_event(step, now, n))
        else:
            assert _rows(seen) == _expected(step[1]), (pattern, k)
            seen = []
    assert seen == [], (pattern, "rows after the last check")


def _run(pattern: str, select: str, steps: list[Step]) -> None:
    """Through ``Engine.run`` (the kernels and the split where they apply) and then time to the
    last clock step: the same rows in total."""
    prog = _program(pattern, select)
    events, now, n, want = [], 0, 0, []
    for step in steps:
        if step == "m":
            continue
        if step[0] == "t":
            now = step[1]
        elif step[0] == "e":
            n += 1
            events.append(_event(step, now, n))
        else:
            want += step[1]
    engine = cepflow.Engine(prog, start=0)
    got = list(engine.run(events)) + engine.advance_to(now)
    assert _rows(got) == _expected(want), pattern


A_NOT_B_C = ("every a=SupportBean_A -> (timer:interval(10 seconds) and not "
             "(SupportBean_B(id=a.id) or SupportBean_C(id=a.id)))")

#: (class, pattern, select items separated by ';', steps)
AGREE: list[tuple[str, str, str, list[Step]]] = [
    # (session 37, with every on a guarded event inside a pattern and every inside and)
    # Esper: E2 gives (A=E1, B=E2), E3 gives (E1, E3) and (E2, E3); ``where B.source !=
    # A.source`` on the statement (true for these rows: left out). The guard binds tighter
    # than every: A -> every (B where ..). (``startTime in [x:y]``, a closed range, restated
    # as ``>= x, <= y``: cepflow's EPL has no ``in`` range)
    ("FollowedBy.FollowedByTimer",
     "every A=SupportCallEvent -> every B=SupportCallEvent(dest=A.dest, startTime >= "
     "A.startTime, startTime <= A.endTime) where timer:within (7200000)", "A.source; B.source",
     [call("18", 173200, 214400), call("20", 197300, 238600), ("x", [("18", "20")]),
      call("22", 211300, 252100), ("x", [("18", "22"), ("20", "22")])]),
    # Esper adds its listener after B9, then B_last gives (A1, B_last); before it each B
    # paired with A1 (the definition's rows, which Esper's listener did not see)
    ("And.AndWithEveryAndTerminationOptimization", "a=SupportBean_A and every b=SupportBean_B",
     "a.id; b.id",
     [bean("A", "A1"), *(bean("B", f"B{i}") for i in range(10)),
      ("x", [("A1", f"B{i}") for i in range(10)]), "m", bean("B", "B_last"),
      ("x", [("A1", "B_last")])]),
    # PatternOperatorFollowedBy
    ("FollowedBy.FollowedByWithNot", A_NOT_B_C, "a.id",
     [("t", 0), bean("A", "A1"), ("t", 9999), ("x", []), ("t", 10000), ("x", [("A1",)]), "m",
      ("t", 20000), bean("A", "A2"), ("t", 29999), bean("B", "A2"), ("t", 30000), ("x", []),
      "m", ("t", 30000), bean("A", "A3"), ("t", 30000), bean("C", "A3"), ("t", 40000),
      ("x", []), "m", bean("A", "A4"), bean("B", "B4"), bean("C", "A5"), ("t", 50000),
      ("x", [("A4",)])]),
    # Esper asserts nothing here (memory use): the clock never moves, so no row
    ("FollowedBy.MemoryRFIDEvent",
     "every tagMayBeBroken=SupportRFIDEvent -> (timer:interval(10 sec) and not "
     "SupportRFIDEvent(mac=tagMayBeBroken.mac))",
     "'Tag May Be Broken'; tagMayBeBroken.mac; tagMayBeBroken.zoneID",
     [*[rfid("a", "111") for _ in range(20)], ("x", [])]),
    ("FollowedBy.FilterGreaterThen",
     "every a=SupportBean -> b=SupportBean(b.intPrimitive <= a.intPrimitive)", "b.theString",
     [sb("E1", 10), "m", sb("E2", 11), ("x", [])]),
    ("FollowedBy.FilterGreaterThen (tags swapped)",
     "every a=SupportBean -> b=SupportBean(a.intPrimitive >= b.intPrimitive)", "b.theString",
     [sb("E1", 10), "m", sb("E2", 11), ("x", [])]),
    ("FollowedBy.RFIDZoneExit",
     "every a=SupportRFIDEvent(zoneID='1') -> (b=SupportRFIDEvent(mac=a.mac,zoneID!='1') and "
     "not SupportRFIDEvent(mac=a.mac,zoneID='1'))", "b.mac; b.zoneID",
     [rfid("a", "1"), ("x", []), "m", rfid("a", "2"), ("x", [("a", "2")]), rfid("b", "1"),
      ("x", []), "m", rfid("b", "1"), ("x", []), rfid("b", "2"), ("x", [("b", "2")])]),
    ("FollowedBy.RFIDZoneEnter",
     "every a=SupportRFIDEvent(zoneID!='1') -> (b=SupportRFIDEvent(mac=a.mac,zoneID='1') and "
     "not SupportRFIDEvent(mac=a.mac,zoneID=a.zoneID))", "b.mac; b.zoneID",
     [rfid("a", "2"), ("x", []), "m", rfid("a", "1"), ("x", [("a", "1")]), rfid("b", "2"),
      ("x", []), rfid("b", "2"), ("x", []), "m", rfid("b", "1"), ("x", [("b", "1")])]),
    # Esper asserts one delivery of two rows (A is ``new SupportBean()``: theString null)
    ("FollowedBy.FollowedNotEvery",
     "every A=SupportBean -> (timer:interval(1 seconds) and not SupportBean_A)",
     "A.theString; A.intPrimitive",
     [("t", 0), sb(None), "m", sb(None), ("t", 1000), ("x", [(None, 0), (None, 0)])]),
    ("FollowedBy.FollowedEveryMultiple",
     "every a=SupportBean_A -> b=SupportBean_B -> c=SupportBean_C -> d=SupportBean_D",
     "a.id; b.id; c.id; d.id",
     [bean("A", "A1"), "m", bean("A", "A2"), bean("B", "B1"), "m", bean("C", "C1"), ("x", []),
      bean("D", "D1"), ("x", [("A1", "B1", "C1", "D1"), ("A2", "B1", "C1", "D1")])]),
    # PatternOperatorEvery
    ("Every.EverySimple", "every a=SupportBean", "a.theString",
     [sb("E1"), ("x", [("E1",)]), "m", sb("E2"), ("x", [("E2",)]), "m", sb("E3"),
      ("x", [("E3",)]), "m", sb("E4"), ("x", [("E4",)])]),
    ("Every.EveryFollowedBy", "every a=SupportBean -> b=SupportBean(theString=a.theString)",
     "a.theString; a.intPrimitive; b.intPrimitive",
     ["m", sb("E1", 1), ("x", []), "m", sb("E2", 10), ("x", []), "m", sb("E1", 2),
      ("x", [("E1", 1, 2)]), "m"]),
    ("Every.EveryFollowedByWithin",
     "every a=SupportBean -> b=SupportBean(theString=a.theString) where timer:within(10 sec)",
     "a.theString; a.intPrimitive; b.intPrimitive",
     [("t", 0), "m", ("t", 5000), sb("E1", 1), ("x", []), "m", ("t", 8000), sb("E2", 10),
      ("x", []), "m", ("t", 15000), "m", sb("E1", 2), ("x", []), sb("E2", 11),
      ("x", [("E2", 10, 11)])]),
    ("Every.EveryWithAnd",
     "every (a=SupportBean(intPrimitive>0) and b=SupportBean(intPrimitive<0))",
     "a.theString; b.theString",
     ["m", sb("E1", 1), ("x", []), "m", sb("E2", 1), ("x", []), sb("E3", -1),
      ("x", [("E1", "E3")]), "m", sb("E4", -2), ("x", []), "m", sb("E5", 2),
      ("x", [("E5", "E4")])]),
    ("Every.EveryAndNot", "every (timer:interval(6) and not SupportBean)",
     "'No event within 6 seconds'",
     [("t", 0), ("t", 2000), sb(None), ("t", 6000), ("t", 7000), ("t", 7999), ("x", []), "m",
      ("t", 8000), ("x", [("No event within 6 seconds",)]), ("t", 12000), sb(None), "m",
      ("t", 13000), sb(None), ("t", 18999), ("x", []), "m", ("t", 19000),
      ("x", [("No event within 6 seconds",)])]),
    # PatternOperatorNot
    ("Not.NotTimeInterval",
     "every A=SupportBean(intPrimitive=123) -> (timer:interval(30 seconds) and not "
     "SupportMarketDataBean(volume=123, symbol=A.theString))", "A.theString",
     [("t", 0), sb("E1", 123), ("t", 10000), sb("E2", 123), "m", ("t", 20000), md("E1", 123),
      ("t", 30000), sb("E3", 123), ("x", []), "m", ("t", 40000), ("x", [("E2",)])]),
    # Esper asserts the listener invoked: E3 ends the first instance, every restarts it, E4
    # and the market data bean complete it once
    ("Not.NotFollowedBy",
     "every( SupportBean(intPrimitive>0) -> (SupportMarketDataBean and not "
     "SupportBean(intPrimitive=0) ) )", "1",
     [sb("E1", 1), sb("E2", 2), sb("E3", 0), "m", sb("E4", 1), md("E5"), ("x", [(1,)])]),
    ("Not.NotWithEvery",
     "(every a=SupportBean(intPrimitive>=0)) and not SupportBean(intPrimitive<0)", "a.theString",
     ["m", sb("E1", 1), ("x", [("E1",)]), sb("E2", 2), ("x", [("E2",)]), "m", sb("E3", 3),
      ("x", [("E3",)]), sb("E4", -1), ("x", []), "m", sb("E5", 3), sb("E6", -1), ("x", [])]),
    # PatternOperatorAnd
    ("And.AndSimple", "a=SupportBean(intPrimitive=0) and b=SupportBean(intPrimitive=1)",
     "a.theString; b.theString",
     ["m", sb("EB", 1), ("x", []), "m", sb("EA", 0), ("x", [("EA", "EB")]), "m", sb("EB", 1),
      sb("EA", 0), ("x", []), "m", sb("EB", 1), sb("EA", 0), ("x", [])]),
    # PatternOperatorOr
    # (session 38: Esper's or goes on after its not's report; docs/esper.md, "not as an
    # operand of or")
    ("Or.OrAndNotAndZeroStart", "a=SupportBean_A -> (b=SupportBean_B or not SupportBean_B)",
     "a.id; b.id", [bean("A", "A1"), ("x", [("A1", None)]), "m", bean("B", "B1"),
                    ("x", [("A1", "B1")])]),
    ("Or.OrSimple", "a=SupportBean(intPrimitive=0) or b=SupportBean(intPrimitive=1)",
     "a.theString; b.theString",
     ["m", sb("EB", 1), ("x", [(None, "EB")]), "m", sb("EA", 0), sb("EB", 1), ("x", []),
      "m"]),
    # PatternGuardTimerWithin
    # Esper asserts the listener invoked: E1's instance ends at 5 s unmatched, every
    # restarts, E4 then the market data bean match once
    ("TimerWithin.PatternNotFollowedBy",
     "every(SupportBean -> (SupportMarketDataBean where timer:within(5 sec)))", "1",
     [("t", 0), sb("E1", 1), "m", sb("E2", 2), ("t", 6000), sb("E4", 1), "m", md("E5"),
      ("x", [(1,)])]),
    # PatternObserverTimerInterval
    # PatternUseResult (like over values without wildcards restated as =)
    ("UseResult.BooleanExprRemoveConsiderTag",
     "every sb=SupportBean -> SupportBean_A(id = sb.theString)", "sb.intPrimitive",
     [*[sb(f"E{i}", i) for i in range(10)], "m",
      bean("A", "E5"), ("x", [(5,)]), bean("A", "E5"), ("x", []), "m",
      bean("A", "E3"), ("x", [(3,)]), bean("A", "E5"), bean("A", "E3"), ("x", []), "m",
      bean("A", "E1"), ("x", [(1,)]), bean("A", "E8"), ("x", [(8,)]), "m",
      bean("A", "E4"), ("x", [(4,)]), *a_misses("E1 E3 E4 E5 E8"),
      ("x", []), bean("A", "E2"), ("x", [(2,)]), bean("A", "E9"), ("x", [(9,)]),
      bean("A", "E7"), ("x", [(7,)]),
      *a_misses("E1 E2 E3 E4 E5 E7 E8 E9"), ("x", []),
      bean("A", "E0"), ("x", [(0,)]), "m", bean("A", "E6"), ("x", [(6,)]), "m",
      *[bean("A", f"E{i}") for i in range(10)], ("x", [])]),
    ("UseResult.BooleanExprRemoveConsiderArrayTag",
     "every [2] sb=SupportBean -> SupportBean_A(id = sb[1].theString)", "sb[1].intPrimitive",
     [*[s for i in range(6) for s in (sb(f"X{i}", i), sb(f"Y{i}", i))], "m",
      bean("A", "Y2"), ("x", [(2,)]), bean("A", "Y2"), ("x", []), "m",
      bean("A", "Y1"), ("x", [(1,)]), bean("A", "Y1"), bean("A", "Y2"), ("x", []), "m",
      bean("A", "Y4"), ("x", [(4,)]), *a_misses("Y1 Y2 Y4"),
      ("x", []), "m", bean("A", "Y0"), ("x", [(0,)]),
      *a_misses("Y0 Y1 Y2 Y4"), ("x", []), "m",
      bean("A", "Y5"), ("x", [(5,)]), *a_misses("Y0 Y1 Y2 Y4 Y5"),
      ("x", []), "m", bean("A", "Y3"), ("x", [(3,)]),
      *[bean("A", f"Y{i}") for i in range(6)], ("x", [])]),
    ("UseResult.PatternTypeCacheForRepeat", "[2] a=TypeOne", "a[0].symbol",
     [("e", "TypeOne", {"symbol": "GE", "price": 10.0}),
      ("e", "TypeOne", {"symbol": "GE", "price": 10.0}), ("x", [("GE",)])]),
    # PatternCompositeSelect
    ("CompositeSelect.Fragment", "[2] a=SupportBean_A -> b=SupportBean_B",
     "a[0].id; a[1].id; b.id",
     [bean("A", "A1"), bean("A", "A2"), "m", bean("B", "B1"), ("x", [("A1", "A2", "B1")])]),
    ("CompositeSelect.FollowedByFilter", "a=SupportBean_A -> b=SupportBean_B", "a.id; b.id",
     [bean("A", "A1"), bean("B", "B1"), ("x", [("A1", "B1")])]),
    # PatternDeadPattern: C ends the pattern before it starts matching (Esper times that A
    # then costs nothing): no match ever
    ("DeadPattern", "(SupportBean_A -> SupportBean_B) and not SupportBean_C", "1",
     [bean("C", "C1"), bean("A", "A1"), "m", bean("B", "B1"), ("x", [])]),
    # PatternStartStop (StartStopTwo, its 1000 events as 6: every third a SupportBean)
    ("StartStop.StartStopTwo", "every(a=SupportBean or b=SupportBean_A)",
     "a.theString; b.id",
     [*[s for i in range(2) for s in (sb(f"S{i}"), ("x", [(f"S{i}", None)]),
                                      bean("A", f"P{i}"), ("x", [(None, f"P{i}")]),
                                      bean("A", f"Q{i}"), ("x", [(None, f"Q{i}")]))]]),
]

#: multi-part time periods (``1 minute 2 seconds``): Esper adds the parts; cepflow's reader
#: takes one number and unit today (the lead's branch of session 37 adds them up): these run as
#: Esper once it does — strict, so that the change is seen here and they move to AGREE
PERIODS: list[tuple[str, str, str, list[Step]]] = [
    ("TimerWithin.Interval10Min",
     "(every SupportBean) where timer:within(1 days 2 hours 3 minutes 4 seconds 5 "
     "milliseconds)", "1",
     [("t", 0), sb(None), ("x", [(1,)]), ("t", 93784004), sb(None), ("x", [(1,)]), "m",
      ("t", 93784005), sb(None), ("x", [])]),
    ("TimerInterval.IntervalSpec", "timer:interval(1 minute 2 seconds)", "1",
     [("t", 0), ("t", 61999), ("x", []), "m", ("t", 62000), ("x", [(1,)])]),
]

#: (class, pattern, what the located error says): forms cepflow reports instead of answering
REFUSED: list[tuple[str, str, str]] = [
    # Esper: A1 answers at once (both nots are true as they start)
    ("And.AndNotDefaultTrue",
     "every call=SupportBean_A -> (not SupportBean_B(id=call.id) and not "
     "SupportBean_C(id=call.id))", "'and' with 'not' is supported as"),
    # Esper: A1 answers (A1, null) and then B1 (A1, B1): the or goes on after the operand
    # whose not is still watching. cepflow answered (A1, null) only: now reported
    ("Or.OrAndNotAndZeroStart",
     "(a=SupportBean_A -> b=SupportBean_B) or (a=SupportBean_A -> not b=SupportBean_B)",
     "'not' in a followed-by inside 'or' is not supported"),
    # Esper: a match at the statement's start
    ("Or.OrAndNotAndZeroStart", "timer:interval(0) or every timer:interval(1 min)",
     "timer:interval inside 'or' is supported beside single events"),
    # Esper: a match at 11 s (E at 1 s, the interval of 10 s with no C1)
    ("FollowedBy.FollowedOrPermFalse",
     "every s=SupportBean(theString='E') -> (timer:interval(10) and not "
     "SupportBean(theString='C1')) or (SupportBean(theString='C2') and not timer:interval(10))",
     "timer:interval is supported at the start of a pattern"),
    # durations computed from the tags: Esper's E2 at 2 s and 2.999 s, none at 3 s
    ("TimerWithin.WithinFromExpression",
     "a=SupportBean -> (every b=SupportBean) where timer:within(a.intPrimitive seconds)",
     "unexpected 'seconds'"),
    # Esper: E2 at 12 s, E1 at 13 s
    ("TimerInterval.IntervalSpecExpressionWithProperty",
     "every a=SupportBean -> timer:interval(intPrimitive seconds)", "unexpected 'seconds'"),
    ("TimerInterval.IntervalSpecExpressionWithProperty",
     "every a=SupportBean -> timer:interval(a.intPrimitive)",
     "timer:interval needs a duration"),
    # Esper: (E1, E2) at 15 s
    ("TimerInterval.IntervalSpecExpressionWithPropertyArray",
     "[2] a=SupportBean -> timer:interval(a[0].intPrimitive+a[1].intPrimitive seconds)",
     "unexpected 'seconds'"),
]


@pytest.mark.parametrize(("where", "pattern", "select", "steps"), AGREE,
                         ids=[c[0] for c in AGREE])
def test_scenario_as_esper(where: str, pattern: str, select: str, steps: list[Step]) -> None:
    _play(pattern, select, steps)


@pytest.mark.parametrize(("where", "pattern", "select", "steps"), AGREE,
                         ids=[c[0] for c in AGREE])
def test_scenario_on_the_token_path(where: str, pattern: str, select: str,
                                    steps: list[Step]) -> None:
    """The same per event without the fast path (``fast_path=False``: the token path)."""
    _play(pattern, select, steps, fast_path=False)


@pytest.mark.parametrize(("where", "pattern", "select", "steps"), AGREE,
                         ids=[c[0] for c in AGREE])
def test_scenario_through_run(where: str, pattern: str, select: str,
                              steps: list[Step]) -> None:
    _run(pattern, select, steps)


@pytest.mark.parametrize(("where", "pattern", "select", "steps"), PERIODS,
                         ids=[c[0] for c in PERIODS])
def test_time_periods_of_several_parts(where: str, pattern: str, select: str,
                                       steps: list[Step]) -> None:
    _play(pattern, select, steps)
    _run(pattern, select, steps)


@pytest.mark.parametrize(("where", "pattern", "why"), REFUSED,
                         ids=[f"{c[0]}: {c[1]}" for c in REFUSED])
def test_scenario_forms_cepflow_reports(where: str, pattern: str, why: str) -> None:
    """Esper answers these (its answer is at each entry); cepflow reports them with their
    place instead of answering otherwise (docs/esper.md)."""
    with pytest.raises(PatternSyntaxError) as info:
        _program(pattern, "1")
    assert why in str(info.value) and ":10:" in str(info.value)


#: a followed-by with a ``not`` left running, where Esper's answer is not the operand's alone
#: (what Esper answers on A1 A2 B1 C1 A3 C2, from its state nodes: docs/esper.md)
LEFT_RUNNING = [
    # A1, A2, then B1 ends both instances and every starts two more: A3 three times
    ("every (a=SupportBean_A -> not SupportBean_B)", "'every'"),
    ("every ((a=SupportBean_A -> not SupportBean_B) where timer:within(10 sec))", "'every'"),
    ("every (a=SupportBean_A -> not SupportBean_B -> c=SupportBean_C)", "'every'"),
    ("every (c=SupportBean_C -> (a=SupportBean_A -> not SupportBean_B))", "'every'"),
    # B1 turns the and false before C1: no match
    ("(a=SupportBean_A -> not SupportBean_B) and c=SupportBean_C", "'and'"),
    ("c=SupportBean_C and (a=SupportBean_A -> not SupportBean_B)", "'and'"),
    ("(a=SupportBean_A -> b=SupportBean_B) or (a=SupportBean_A -> not b=SupportBean_B)",
     "'or'"),
    ("[2] (a=SupportBean_A -> not SupportBean_B)", "a repetition"),
    ("every-distinct(a.id) (a=SupportBean_A -> not SupportBean_B)", "'every-distinct'"),
]


@pytest.mark.parametrize(("pattern", "where"), LEFT_RUNNING, ids=[c[0] for c in LEFT_RUNNING])
def test_a_not_left_running_is_reported_inside_operators(pattern: str, where: str) -> None:
    """Found by Or.OrAndNotAndZeroStart: cepflow read ``A -> not B`` as ``A`` everywhere,
    which is Esper's answer only where nothing looks at the followed-by after it matches (the
    top of the pattern, a guard or a followed-by around it). Inside these operators it is
    reported at the not."""
    with pytest.raises(PatternSyntaxError) as info:
        _program(pattern, "1")
    text = str(info.value)
    assert f"'not' in a followed-by inside {where} is not supported" in text
    col = len("@Name('s0') select 1 as c0 from pattern [") + pattern.index(" not ") + 2
    assert f":10:{col}:" in text, text


#: random patterns over A, B, C: ("atom", t), ("not", t) (only as a followed-by's item, never
#: all of them), ("fol", items), ("and"|"or", [l, r]), ("every"|"guard"|"rep", inner)
_ATOM = st.sampled_from("ABC").map(lambda t: ("atom", t))
#: (a leaf may be a short followed-by with a not, so that most trees hold one)
_OPEN = st.tuples(_ATOM, st.sampled_from("ABC")).map(
    lambda p: ("fol", [p[0], ("not", p[1])]))
_TREES = st.recursive(st.one_of(_ATOM, _OPEN), lambda inner: st.one_of(
    st.tuples(st.sampled_from(["and", "or"]), st.lists(inner, min_size=2, max_size=2)),
    st.tuples(st.sampled_from(["every", "guard", "rep"]), inner),
    st.tuples(st.just("fol"), st.lists(st.one_of(inner, _ATOM.map(lambda a: ("not", a[1]))),
                                       min_size=2, max_size=3)
              ).filter(lambda f: any(i[0] != "not" for i in f[1]))), max_leaves=8)


def _epl(tree: Any) -> str:
    kind, x = tree
    if kind in ("atom", "not"):
        return ("not " if kind == "not" else "") + f"SupportBean_{x}"
    if kind == "fol":
        return "(" + " -> ".join(_epl(i) for i in x) + ")"
    if kind in ("and", "or"):
        return f"({_epl(x[0])} {kind} {_epl(x[1])})"
    return {"every": "every ({})", "guard": "({}) where timer:within(5 sec)",
            "rep": "[2] ({})"}[kind].format(_epl(x))


def _left_running(tree: Any) -> bool:
    """The oracle, from Esper's state nodes: a followed-by holding a ``not`` (or such a
    followed-by, or a guard around one) is still running after its match."""
    kind, x = tree
    if kind == "fol":
        return any(i[0] == "not" or _left_running(i) for i in x)
    return kind == "guard" and _left_running(x)


def _refused(tree: Any) -> bool:
    """Is such a running followed-by an operand of and, or, every or a repetition?"""
    kind, x = tree
    if kind in ("atom", "not"):
        return False
    inner = x if kind in ("fol", "and", "or") else [x]
    return (kind in ("and", "or", "every", "rep") and any(_left_running(i) for i in inner)
            ) or any(_refused(i) for i in inner)


@settings(max_examples=150, deadline=None)
@given(_TREES)
def test_a_not_left_running_is_reported_exactly_where_esper_keeps_it(tree: Any) -> None:
    """Random nestings of followed-by with ``not``, and, or, every, guards and ``[2]``: the
    reader reports a not left running exactly where the oracle says Esper would look at the
    followed-by after its match, and nowhere else."""
    text = SCHEMA + f"select 1 as c0 from pattern [{_epl(tree)}];"
    try:
        parse_epl(text)
        reported = ""
    except PatternSyntaxError as e:
        reported = str(e)
    assert ("'not' in a followed-by inside" in reported) == _refused(tree), reported


@pytest.mark.parametrize("pattern", [
    "a=SupportBean_A -> not SupportBean_B",
    "(a=SupportBean_A -> not SupportBean_B) where timer:within(10 sec)",
    "every a=SupportBean_A -> (c=SupportBean_C -> not SupportBean_B)",
])
def test_a_not_left_running_at_the_top_still_runs(pattern: str) -> None:
    """Where nothing looks at the followed-by after it matches, Esper's answer is the
    operand's without the not (``b=B -> not d=D`` agrees over event set one): still run."""
    prog = _program(pattern, "a.id")
    engine = cepflow.Engine(prog, start=0)
    rows = []
    for i, (k, v) in enumerate([("A", "A1"), ("B", "B1"), ("C", "C1"), ("A", "A2"),
                                ("C", "C2")]):
        rows += [tuple(ce.params) for ce in engine.process(Event(f"SupportBean_{k}", (v,),
                                                          1000 * (i + 1)))]
    want = {"a=SupportBean_A -> not SupportBean_B": [("A1",)],
            "(a=SupportBean_A -> not SupportBean_B) where timer:within(10 sec)": [("A1",)],
            "every a=SupportBean_A -> (c=SupportBean_C -> not SupportBean_B)":
                [("A1",), ("A2",)]}
    assert rows == want[pattern]


# ---- Esper's harness cases over its other event sets ------------------------------------
# PatternUseResult (PatternNumeric over set three, PatternObjectId over set four) and
# PatternOperatorNot (PatternUniformEvents over set two) run patterns over a fixed stream, one
# event a second from 1 s, and name the matches each event causes with the event each tag
# took. Each event gets a ``name`` field (its name in Esper's set; no pattern reads it).
# ``x in [lo:hi]`` / ``x in (lo:hi)`` are restated as ``x >= lo, x <= hi`` / ``x > lo, x < hi``:
# exactly Esper's range here, where the low end is below the high end (Esper swaps them
# otherwise: na is always N1, with intPrimitive 1 and doublePrimitive 44.0, and 0 < 44.0).
N_FIELDS = [("intPrimitive", "int"), ("intBoxed", "int"), ("doublePrimitive", "double"),
            ("doubleBoxed", "double"), ("boolPrimitive", "boolean"), ("boolBoxed", "boolean"),
            ("name", "string")]
SET_SCHEMA = (f"create schema SupportBean_N({', '.join(f'{n} {k}' for n, k in N_FIELDS)});\n"
              "create schema SupportBean_S0(id int, p00 string, name string);\n"
              "create schema SupportBean_A(id string, name string);\n")
SETS: dict[str, list[tuple[str, tuple[Any, ...]]]] = {
    "two": [("SupportBean_A", (n, n)) for n in ("B1", "B2", "B3", "A4", "A5", "A6")],
    "three": [("SupportBean_N", (*v, f"N{i + 1}")) for i, v in enumerate([
        (1, -56, 44.0, -60.5, True, True), (66, 59, 48.0, 70.999, True, False),
        (87, -5, 44.5, -23.5, False, True), (86, -98, 42.1, -79.5, True, True),
        (0, -33, 48.0, 44.45, True, False), (55, -55, 44.0, -60.5, False, True),
        (34, 92, 39.0, -66.5, False, True), (100, 66, 47.5, 45.0, True, False)])],
    "four": [("SupportBean_S0", (i + 1, p, f"e{i + 1}"))
             for i, p in enumerate("ABCDEBFCGGBF")],
}
N = "SupportBean_N"
S0 = "SupportBean_S0"
#: (set, pattern, tags, Esper's matches: (the event that caused it, the events the tags took))
HARNESS: list[tuple[str, str, str, list[tuple[str, tuple[str | None, ...]]]]] = [
    ("three", f"na={N} -> nb={N}(doublePrimitive = na.doublePrimitive)", "na nb",
     [("N6", ("N1", "N6"))]),
    ("three", f"na={N}(intPrimitive=87) -> nb={N}(intPrimitive > na.intPrimitive)", "na nb",
     [("N8", ("N3", "N8"))]),
    ("three", f"na={N}(intPrimitive=87) -> nb={N}(intPrimitive < na.intPrimitive)", "na nb",
     [("N4", ("N3", "N4"))]),
    ("three", f"na={N}(intPrimitive=66) -> every nb={N}(intPrimitive >= na.intPrimitive)",
     "na nb", [("N3", ("N2", "N3")), ("N4", ("N2", "N4")), ("N8", ("N2", "N8"))]),
    ("three", f"na={N}(boolBoxed=false) -> every nb={N}(boolPrimitive = na.boolPrimitive)",
     "na nb", [("N4", ("N2", "N4")), ("N5", ("N2", "N5")), ("N8", ("N2", "N8"))]),
    ("three", f"every na={N} -> every nb={N}(intPrimitive=na.intPrimitive)", "na nb", []),
    ("three", f"every na={N}() -> every nb={N}(doublePrimitive=na.doublePrimitive)", "na nb",
     [("N5", ("N2", "N5")), ("N6", ("N1", "N6"))]),
    ("three", f"every na={N}(boolBoxed=false) -> every nb={N}(boolBoxed=na.boolBoxed)",
     "na nb", [("N5", ("N2", "N5")), ("N8", ("N2", "N8")), ("N8", ("N5", "N8"))]),
    ("three", f"na={N}(boolBoxed=false) -> nb={N}(intPrimitive<na.intPrimitive) -> "
     f"nc={N}(intPrimitive > nb.intPrimitive)", "na nb nc", [("N6", ("N2", "N5", "N6"))]),
    ("three", f"na={N}(intPrimitive=86) -> nb={N}(intPrimitive<na.intPrimitive) -> "
     f"nc={N}(intPrimitive > na.intPrimitive)", "na nb nc", [("N8", ("N4", "N5", "N8"))]),
    ("three", f"na={N}(intPrimitive=86) -> (nb={N}(intPrimitive<na.intPrimitive) or "
     f"nc={N}(intPrimitive > na.intPrimitive))", "na nb nc", [("N5", ("N4", "N5", None))]),
    ("three", f"na={N}(intPrimitive=86) -> (nb={N}(intPrimitive>na.intPrimitive) or "
     f"nc={N}(intBoxed < na.intBoxed))", "na nb nc", [("N8", ("N4", "N8", None))]),
    ("three", f"na={N}(intPrimitive=86) -> (nb={N}(intPrimitive>na.intPrimitive) and "
     f"nc={N}(intBoxed < na.intBoxed))", "na nb nc", []),
    ("three", f"na={N}() -> every nb={N}(doublePrimitive >= 0, doublePrimitive <= "
     "na.doublePrimitive)", "na nb",
     [("N4", ("N1", "N4")), ("N6", ("N1", "N6")), ("N7", ("N1", "N7"))]),
    ("three", f"na={N}() -> every nb={N}(doublePrimitive > 0, doublePrimitive < "
     "na.doublePrimitive)", "na nb", [("N4", ("N1", "N4")), ("N7", ("N1", "N7"))]),
    ("three", f"na={N}() -> every nb={N}(intPrimitive > na.intPrimitive, intPrimitive < "
     "na.doublePrimitive)", "na nb", [("N7", ("N1", "N7"))]),
    ("three", f"na={N}() -> every nb={N}(intPrimitive > na.intPrimitive, intPrimitive < 60)",
     "na nb", [("N6", ("N1", "N6")), ("N7", ("N1", "N7"))]),
    ("four", f"X1={S0}() -> X2={S0}(p00=X1.p00)", "X1 X2", []),
    ("four", f"X1={S0}(p00='B') -> X2={S0}(p00=X1.p00)", "X1 X2", [("e6", ("e2", "e6"))]),
    ("four", f"X1={S0}(p00='B') -> every X2={S0}(p00=X1.p00)", "X1 X2",
     [("e6", ("e2", "e6")), ("e11", ("e2", "e11"))]),
    ("four", f"every X1={S0}(p00='B') -> every X2={S0}(p00=X1.p00)", "X1 X2",
     [("e6", ("e2", "e6")), ("e11", ("e2", "e11")), ("e11", ("e6", "e11"))]),
    ("four", f"every X1={S0}() -> X2={S0}(p00=X1.p00)", "X1 X2",
     [("e6", ("e2", "e6")), ("e8", ("e3", "e8")), ("e10", ("e9", "e10")),
      ("e11", ("e6", "e11")), ("e12", ("e7", "e12"))]),
    ("four", f"every X1={S0}() -> every X2={S0}(p00=X1.p00)", "X1 X2",
     [("e6", ("e2", "e6")), ("e8", ("e3", "e8")), ("e10", ("e9", "e10")),
      ("e11", ("e2", "e11")), ("e11", ("e6", "e11")), ("e12", ("e7", "e12"))]),
    # (Esper's pattern names the not's event a1; a tag inside not binds nothing in Esper
    # either, so without it the pattern is the same: the tagged form is in HARNESS_PENDING)
    ("two", "every a=SupportBean_A() and not SupportBean_A(id='A4')", "a",
     [("B1", ("B1",)), ("B2", ("B2",)), ("B3", ("B3",))]),
]
#: Esper's form with a tag inside not: cepflow's reader reports such a tag ("never binds an
#: event") today; strict, so that the case moves to HARNESS when it runs
HARNESS_PENDING = [
    ("two", "every a=SupportBean_A() and not a1=SupportBean_A(id='A4')", "a",
     [("B1", ("B1",)), ("B2", ("B2",)), ("B3", ("B3",))]),
]


def _set_program(pattern: str, tags: str) -> Any:
    items = ", ".join(f"{t}.name as {t}" for t in tags.split())
    return cepflow.load_module(parse_epl(
        SET_SCHEMA + f"@Name('s0') select {items} from pattern [{pattern}];"))


def _set_events(name: str) -> list[Event]:
    return [Event(kind, values, 1000 * (i + 1), id=values[-1])
            for i, (kind, values) in enumerate(SETS[name])]


def _canon_matches(rows: list[tuple[str, tuple[Any, ...]]]) -> list[str]:
    return sorted(json.dumps([at, list(tags)]) for at, tags in rows)


@pytest.mark.parametrize(("which", "pattern", "tags", "want"), HARNESS,
                         ids=[c[1] for c in HARNESS])
def test_harness_cases_over_other_sets(which: str, pattern: str, tags: str,
                                       want: list[tuple[str, tuple[Any, ...]]]) -> None:
    _harness(which, pattern, tags, want)


@pytest.mark.parametrize(("which", "pattern", "tags", "want"), HARNESS_PENDING,
                         ids=[c[1] for c in HARNESS_PENDING])
def test_harness_cases_with_a_tag_inside_not(which: str, pattern: str, tags: str,
                               want: list[tuple[str, tuple[Any, ...]]]) -> None:
    _harness(which, pattern, tags, want)


def _harness(which: str, pattern: str, tags: str,
             want: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Per event (fast path and token path), with the state saved and restored before each
    event, and through ``Engine.run``: the matches each event causes, as Esper names them."""
    prog = _set_program(pattern, tags)
    events = _set_events(which)
    for fast_path in (True, False):
        engine = cepflow.Engine(prog, start=0, fast_path=fast_path)
        got = []
        for e in events:
            state = json.loads(json.dumps(save_state(engine)))
            engine = restore_state(cepflow.Engine(prog, start=0, fast_path=fast_path), state)
            got += [(e.id, tuple(ce.params)) for ce in engine.process(e)]
        assert _canon_matches(got) == _canon_matches(want), fast_path
    times = [e.ts for e in events]
    batch = [(events[next(i for i, t in enumerate(times) if t >= ce.ts)].id, tuple(ce.params))
             for ce in cepflow.Engine(prog, start=0).run(events)]
    assert _canon_matches(batch) == _canon_matches(want)


# ---- PatternUseResult.PatternFollowedByFilter ---------------------------------------------
_USERS = "(userId = 'U1000' or userId = 'U1001' or userId = 'U1002')"
TRADES = (f"every t1=SupportTradeEvent{_USERS} -> (t2=SupportTradeEvent({_USERS} and "
          "userId != t1.userId and ccypair = t1.ccypair and direction = t1.direction) -> "
          f"t3=SupportTradeEvent({_USERS} and userId != t1.userId and userId != t2.userId and "
          "ccypair = t1.ccypair and direction = t1.direction)) where timer:within(600 sec)")


def _trade_oracle(trades: list[tuple[int, str, str, str]]) -> list[tuple[int, int, int]]:
    """Esper's answer from its definition: each trade starts an instance (every), whose t2 is
    the first later trade of another user with the same pair and direction and whose t3 is the
    first trade after that of a third user (followed-by takes the first that fits); all within
    600 s, as the stream has one instant."""
    out = []
    for i, (_, u1, pair, side) in enumerate(trades):
        j = next((j for j in range(i + 1, len(trades)) if trades[j][1] != u1
                  and trades[j][2:] == (pair, side)), None)
        if j is None:
            continue
        k = next((k for k in range(j + 1, len(trades)) if trades[k][1] not in (u1, trades[j][1])
                  and trades[k][2:] == (pair, side)), None)
        if k is not None:
            out.append((trades[i][0], trades[j][0], trades[k][0]))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_use_result_followed_by_filter(seed: int) -> None:
    """PatternUseResult.PatternFollowedByFilter: 100 random trades (users U1000..U1002,
    pairs USD/JPY/EUR, directions B/S, sent at one instant) and no match with a user twice
    (Esper asserts that only); here also exactly the matches of its definition, per event
    with a milestone every 25 trades and through ``Engine.run``. ``userId in ('U1000',
    'U1001', 'U1002')`` is restated as three ``=`` joined by ``or`` (the same test)."""
    rnd = random.Random(seed)
    trades = [(i, rnd.choice(["U1000", "U1001", "U1002"]), rnd.choice(["USD", "JPY", "EUR"]),
               rnd.choice("BS")) for i in range(100)]
    prog = cepflow.load_module(parse_epl(
        "create schema SupportTradeEvent(id int, userId string, ccypair string, "
        "direction string);\n"
        f"@Name('s0') select t1.id as a, t2.id as b, t3.id as c from pattern [{TRADES}];"))
    events = [Event("SupportTradeEvent", t, 0, id=f"T{t[0]}") for t in trades]
    engine = cepflow.Engine(prog, start=0)
    got = []
    for e in events:
        if e.params[0] % 25 == 0:
            state = json.loads(json.dumps(save_state(engine)))
            engine = restore_state(cepflow.Engine(prog, start=0), state)
        got += [tuple(ce.params) for ce in engine.process(e)]
    users = {t[0]: t[1] for t in trades}
    assert all(len({users[i] for i in row}) == 3 for row in got)
    want = _trade_oracle(trades)
    assert want and sorted(got) == sorted(want)
    assert sorted(tuple(ce.params) for ce in cepflow.Engine(prog, start=0).run(events)) == \
        sorted(want)
