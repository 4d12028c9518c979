"""Esper's ``timer:at`` observer (docs/esper.md, "timer:at"): the crontab schedule
(cepflow.schedule) against instants derived by hand and from Esper's own tests
(TestScheduleComputeHelper, PatternObserverTimerAt), against a brute-force scan minute by
minute; patterns it begins against an oracle written from Esper's definition (TimerAtObserver
asks for the schedule's next instant when it starts; ``every`` starts it again when it fired;
``and not B`` ends it at a ``B``), per event, on the token path, through ``Engine.run`` in
batches cut anywhere and with a save and restore between; what is reported."""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import cepflow
from cepflow.events.event import Event
from cepflow.language import ast
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.language.epl_printer import format_epl
from cepflow.language.walk import walk
from cepflow.runtime.state import StateError, restore_state, save_state
from cepflow.schedule import UNITS, Schedule, ScheduleError

SCHEMAS = "".join(f"create schema {t}(id string);\n" for t in "ABCDEFG")


def ms(text: str) -> float:
    """``"2004-12-09 16:05:00"`` (UTC; ``.fff`` allowed) as epoch milliseconds."""
    fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"
    return datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp() * 1000


def _read(text: str) -> Schedule:
    """The schedule of ``timer:at(text)`` as the EPL reader reads it."""
    module = parse_epl(SCHEMAS + f"@Name('P') select * from pattern [timer:at({text})];")
    body = next(d for d in module.decls if getattr(d, "name", None) == "P").body
    return next(n for n in walk(body) if isinstance(n, ast.At)).schedule


def program(pattern: str):
    return cepflow.load_module(parse_epl(SCHEMAS + f"@Name('P') select * from pattern "
                                                   f"[{pattern}];", "case.epl"))


# ---- the schedule: Esper's TestScheduleComputeHelper, month ends, leap years, weekdays -------

ESPER_INSTANTS = [  # (timer:at parameters, now, due) — TestScheduleComputeHelper's, in UTC
    ("5, *, *, *, *", "2004-12-09 15:45:01", "2004-12-09 16:05:00"),
    ("5, *, *, *, *", "2004-12-09 16:04:59", "2004-12-09 16:05:00"),
    ("5, *, *, *, *", "2004-12-09 16:05:00", "2004-12-09 17:05:00"),
    ("5, *, *, *, *", "2004-12-09 23:58:01", "2004-12-10 00:05:00"),
    ("[5, 10, 15], *, *, *, *", "2004-12-09 16:10:00", "2004-12-09 16:15:00"),
    ("[5, 10, 15], *, *, *, *", "2004-12-09 16:15:00", "2004-12-09 17:05:00"),
    ("[0, 30, 59], *, *, *, *", "2004-12-09 16:59:30", "2004-12-09 17:00:00"),
    ("[0, 30], *, *, *, *, [0, 30]", "2004-12-09 16:00:00", "2004-12-09 16:00:30"),
    ("[0, 30], *, *, *, *, [0, 30]", "2004-12-09 16:00:30", "2004-12-09 16:30:00"),
    ("*, 10:14, *, *, *, 15", "2004-12-09 15:59:59", "2004-12-10 10:00:15"),
    ("*, 10:14, *, *, *, 15", "2004-12-10 14:59:15", "2004-12-11 10:00:15"),
    ("5, 9, *, *, *", "2004-11-30 15:59:59", "2004-12-01 09:05:00"),
    ("5, 9, *, *, *", "2004-12-31 09:05:01", "2005-01-01 09:05:00"),
    ("*, *, 31, *, *", "2004-11-30 15:59:59", "2004-12-31 00:00:00"),
    ("*, *, 31, *, *", "2004-12-31 00:00:00", "2004-12-31 00:01:00"),
    ("*, *, 31, *, *", "2005-02-01 00:00:00", "2005-03-31 00:00:00"),
    ("*, *, 31, *, *", "2005-04-01 00:00:00", "2005-05-31 00:00:00"),
    ("*, *, 29, *, *", "2004-02-28 15:59:59", "2004-02-29 00:00:00"),
    ("*, *, 29, *, *", "2003-02-28 15:59:59", "2003-03-29 00:00:00"),
    ("0, 16, *, *, *", "2004-12-31 16:00:00", "2005-01-01 16:00:00"),
    ("0, 10, *, *, [1, 2, 3, 4, 5]", "2004-12-05 09:50:59", "2004-12-06 10:00:00"),
    ("0, 10, *, *, [1, 2, 3, 4, 5]", "2004-12-11 00:00:00", "2004-12-13 10:00:00"),
    ("0, 10, *, *, [1, 2, 3, 4, 5]", "2004-12-13 10:00:00", "2004-12-14 10:00:00"),
    ("0, 0, [1, 15], *, 1, 0", "2004-12-06 00:00:00", "2004-12-13 00:00:00"),
    ("0, 0, [1, 15], *, 1, 0", "2004-12-13 23:00:00", "2004-12-15 00:00:00"),
    ("0, 0, [1, 15], *, 1, 0", "2004-12-27 00:01:00", "2005-01-01 00:00:00"),
    ("0, 0, [1, 15], *, 1, 0", "2005-01-31 00:01:00", "2005-02-01 00:00:00"),
    ("*, *, *, [1, 3, 5, 7, 9, 11], [0, 2, 4, 6]", "2004-09-01 00:00:00",
     "2004-09-02 00:00:00"),
    ("*, *, *, [1, 3, 5, 7, 9, 11], [0, 2, 4, 6]", "2004-09-05 23:59:00",
     "2004-09-07 00:00:00"),
    ("*, *, *, [1, 3, 5, 7, 9, 11], [0, 2, 4, 6]", "2004-09-30 23:59:00",
     "2004-11-02 00:00:00"),
    ("*, 9:15, *, *, [1, 2, 3, 4, 5], */5", "2004-12-12 20:00:00", "2004-12-13 09:00:00"),
    ("*, 9:15, *, *, [1, 2, 3, 4, 5], */5", "2004-12-13 09:00:11", "2004-12-13 09:00:15"),
    ("*, 9:15, *, *, [1, 2, 3, 4, 5], */5", "2004-12-13 15:59:55", "2004-12-14 09:00:00"),
    ("*, 9:15, *, *, [1, 2, 3, 4, 5], */5", "2004-12-17 15:59:55", "2004-12-20 09:00:00"),
    ("0, 12, 14, 2, *", "2004-12-12 20:00:00", "2005-02-14 12:00:00"),
    ("0, 12, 14, 2, *", "2004-02-01 20:00:00", "2004-02-14 12:00:00"),
    ("59, 23, 31, 12, *, 50", "2004-12-31 23:59:55", "2005-12-31 23:59:50"),
]

HAND_INSTANTS = [  # derived by hand (a calendar beside)
    # February 29th: the next leap year, and 2100 is none (2096 → 2104)
    ("0, 0, 29, 2, *", "2023-03-01 00:00:00", "2024-02-29 00:00:00"),
    ("0, 0, 29, 2, *", "2096-02-29 00:00:00", "2104-02-29 00:00:00"),
    # the 31st skips the 30-day months; the 30th skips February
    ("0, 12, 31, *, *", "2023-04-15 08:00:00", "2023-05-31 12:00:00"),
    ("0, 12, 30, *, *", "2023-01-30 12:00:00", "2023-03-30 12:00:00"),
    # Saturdays (6) and Sundays (0) only: Friday 2024-03-01 → Saturday the 2nd
    ("30, 7, *, *, [0, 6]", "2024-03-01 12:00:00", "2024-03-02 07:30:00"),
    ("30, 7, *, *, [0, 6]", "2024-03-03 07:30:00", "2024-03-09 07:30:00"),
    # the 13th or a Friday (both given: either)
    ("0, 0, [13, 14], *, [5, 1]", "2024-09-03 00:00:00", "2024-09-06 00:00:00"),
    ("0, 0, [13, 20], *, 5", "2024-09-13 00:00:00", "2024-09-20 00:00:00"),
    # every 15 minutes across midnight and the year's end
    ("*/15, *, *, *, *", "2023-12-31 23:59:00", "2024-01-01 00:00:00"),
    ("*/15, *, *, *, *", "2023-12-31 23:45:00", "2024-01-01 00:00:00"),
    # a frequency that selects nothing (months */15) is Esper's wildcard
    ("0, 0, 1, */15, *", "2023-05-20 00:00:00", "2023-06-01 00:00:00"),
    # seconds given as * : every second
    ("*, *, *, *, *, *", "2023-05-20 10:00:00", "2023-05-20 10:00:01"),
    # milliseconds of the start are kept (Esper's computeNextOccurance)
    ("*, *, *, *, *", "2002-05-30 09:00:00.000", "2002-05-30 09:01:00.000"),
    ("*, *, *, *, *", "2002-05-30 09:00:59.999", "2002-05-30 09:01:00.999"),
    ("*, *, *, *, *, 30", "2002-05-30 09:00:29.500", "2002-05-30 09:00:30.500"),
    ("*, *, *, *, *, 30", "2002-05-30 09:00:30.500", "2002-05-30 09:01:30.500"),
]


@pytest.mark.parametrize(("params", "now", "due"), ESPER_INSTANTS + HAND_INSTANTS)
def test_the_next_instant_is_the_derived_one(params: str, now: str, due: str) -> None:
    assert _read(params).next_after(ms(now)) == ms(due)


def test_a_schedule_past_the_calendar_never_fires() -> None:
    assert _read("0, 0, 29, 2, *").next_after(ms("9996-03-01 00:00:00")) == math.inf
    assert _read("*, *, *, *, *").next_after(math.inf) == math.inf


# ---- the schedule against a brute-force scan ------------------------------------------------

_DAY = 86_400_000
_EPOCH = date(1970, 1, 1)


def _expand(items: tuple, unit: int) -> set[int] | None:
    """Esper's reading of one parameter, restated: None is every value; a frequency the
    multiples in the unit's range; a selection of nothing is every value."""
    _, low, high = UNITS[unit]
    out: set[int] = set()
    for it in items:
        if it[0] == "any":
            return None
        if it[0] == "value":
            out.add(it[1])
        elif it[0] == "range":
            out |= set(range(it[1], it[2] + 1))
        else:
            out |= {v for v in range(low, high + 1) if v % it[1] == 0}
    return out or None


def brute_next(params: tuple, now: float) -> float:
    """Scan day by day, then minute by minute (second by second inside a minute when the
    seconds are given) from the first whole step after ``now``: the first instant whose every
    field is listed, with ``now``'s milliseconds."""
    sets = [_expand(p, k) for k, p in enumerate(params)]
    seconds = len(params) == 6
    step = 1000 if seconds else 60_000
    first = math.floor(now / step) * step + step
    extra = now - math.floor(now / 1000) * 1000

    def ok(values: set[int] | None, v: int) -> bool:
        return values is None or v in values

    for day in range(first // _DAY, first // _DAY + 366 * 9):
        d = _EPOCH + timedelta(days=day)
        dom_ok, dow_ok = ok(sets[2], d.day), ok(sets[4], d.isoweekday() % 7)
        either = (dom_ok or dow_ok) if sets[2] is not None and sets[4] is not None \
            else (dom_ok and dow_ok)
        if not (ok(sets[3], d.month) and either):
            continue
        for minute in range(1440):
            t = day * _DAY + minute * 60_000
            if t + 59_999 < first or not (ok(sets[1], minute // 60) and ok(sets[0], minute % 60)):
                continue
            for s in range(60 if seconds else 1):
                x = t + s * 1000
                if x >= first and (not seconds or ok(sets[5], s)):
                    return x + extra
    return math.inf


def items(unit: int) -> st.SearchStrategy:
    _, low, high = UNITS[unit]
    one = st.one_of(
        st.just(("any",)),
        st.integers(low, high).map(lambda v: ("value", v)),
        st.tuples(st.integers(low, high), st.integers(low, high)).map(
            lambda r: ("range", *r)),
        st.integers(1, high + 2).map(lambda n: ("every", n)))
    return st.one_of(one.map(lambda i: (i,)),
                     st.lists(one, min_size=2, max_size=4).map(tuple))


@st.composite
def schedules(draw: st.DrawFn) -> tuple:
    n = draw(st.sampled_from([5, 6]))
    return tuple(draw(items(k)) for k in range(n))


@settings(max_examples=150, deadline=None)
@given(schedules(), st.integers(ms("2023-01-01 00:00:00"), ms("2025-01-01 00:00:00")),
       st.sampled_from([0.0, 0.5, 999.0, 373.25]))
@example((((("value", 29),), (("value", 0),), (("value", 29),), (("value", 2),),
           (("any",),))), int(ms("2023-03-01 00:00:00")), 0.0)
def test_the_next_instant_is_the_first_the_scan_finds(params: tuple, now: int,
                                                      frac: float) -> None:
    t = now + frac
    try:
        sched = Schedule(params)
    except ScheduleError:  # (never fires, or Esper's invalid day combination: reported)
        sets = [_expand(p, k) for k, p in enumerate(params)]
        assert (sets[2] is not None and len(sets[2]) == 1 and sets[4] is not None) or \
            brute_next(params, t) == math.inf
        return
    assert sched.next_after(t) == brute_next(params, t), sched.text()


# ---- reading and printing --------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "timer:at(*, *, *, *, *)", "every timer:at(*/5, 8:17, *, *, [1, 2, 3, 4, 5])",
    "timer:at(0, 9, 1, [1, 4, 7, 10], *, 30) -> a = A",
    "every (timer:at(0, *, *, *, *) and not A)", "every timer:at(*/30, *, *, *, *) -> b = B",
])
def test_the_epl_printer_writes_timer_at_so_that_it_reads_back(text: str) -> None:
    module = parse_epl(SCHEMAS + f"@Name('P') select * from pattern [{text}];")
    again = parse_epl(format_epl(module))
    assert again == module
    assert text.split("(")[1].split(")")[0].replace(" ", "") in format_epl(module).replace(
        " ", "")


@pytest.mark.parametrize(("pattern", "what"), [
    ("timer:at(*, *, last, *, *)", "special days (last, weekday, lastweekday)"),
    ("timer:at(*, *, *, *, 5 last)", "special days"),
    ("timer:at(*, *, 15 weekday, *, *)", "special days"),
    ("timer:at(*, *, lastweekday, *, *)", "special days"),
    ("timer:at(*, *, *, *, *, 0, 'PST')", "a time zone and milliseconds are not"),
    ("timer:at(*, *, *, *, *, *, *, 200)", "5 or 6 parameters"),
    ("timer:at(*, *, *, *)", "5 or 6 parameters"),
    ("timer:at(60, *, *, *, *)", "minutes take 0 to 59, not 60"),
    ("timer:at(*, *, *, *, 7)", "days of week take 0 to 6, not 7"),
    ("timer:at(*, *, 0, *, *)", "days of month take 1 to 31, not 0"),
    ("timer:at(*, *, 31, [2, 4], *)", "never fires"),
    ("timer:at(*, *, 13, *, 5)", "invalid combination"),
    ("timer:at(7 + 1 - 8, *, *, *, *)", "whole numbers"),
    ("timer:at(*/0, *, *, *, *)", "positive number"),
    ("timer:at(*, *, *, *, *, [[1]])", "unexpected '['"),
    ("a=A -> timer:at(*, *, *, *, *)", "not after an event"),
    ("every a=A -> timer:at(*, *, *, *, *) -> b=B", "not after an event"),
    ("b=B and timer:at(*, *, *, *, *)", "timer:at is supported at the start"),
    ("b=B or timer:at(*, *, *, *, *)", "timer:at is supported at the start"),
    ("b=B until timer:at(*, *, *, *, *)", "not timer:at (an end at a time"),
    # PatternOp's guards around the observer: Esper starts the guard at the statement's start
    ("timer:at(22, 8, *, *, *, 1) where timer:within(1 second)", "a guard around timer:at"),
    ("timer:at(22, 8, *, *, *, 1) where timer:within(31 minutes)", "a guard around timer:at"),
    ("(timer:at(*, *, *, *, *) -> a=A) where timer:within(1 min)", "a guard around timer:at"),
    ("every (timer:at(*, *, *, *, *) where timer:within(1 min))", "a guard around timer:at"),
    ("a=A -> (timer:at(*, *, *, *, *) and not B)", "timer:at is supported at the start"),
    ("timer:at(*, *, *, *, *) -> a=A -> timer:at(*, *, *, *, *)", "not after an event"),
    ("not timer:at(*, *, *, *, *)", "not"),
    ("timer:interval(1 sec, 2)", "timer:interval takes one duration"),
])
def test_what_is_not_run_is_reported_with_its_place(pattern: str, what: str) -> None:
    with pytest.raises(PatternSyntaxError) as e:
        program(pattern)
    assert what in str(e.value)
    assert "case.epl:" in str(e.value)


# ---- patterns: Esper's PatternObserverTimerAt restated ---------------------------------------

SET_ONE = ["A1", "B1", "C1", "B2", "A2", "D1", "E1", "F1", "D2", "B3", "G1", "D3"]
#: PatternOp: event set one, one event every 10 minutes from 2005-04-09 8:10, the statement
#: started at 8:00 (Esper's harness ran it in the JVM's zone; here UTC)
T0 = ms("2005-04-09 08:00:00")


def set_one() -> list[Event]:
    return [Event(e[0], (e,), T0 + 600_000 * (i + 1)) for i, e in enumerate(SET_ONE)]


def per_event(pattern: str, fast: bool = True) -> list[list]:
    """The matches each event of set one causes (time passes to it first, as Esper's harness
    does), with the tags they carry."""
    engine = cepflow.Engine(program(pattern), start=T0, fast_path=fast)
    return [[e.params[0], {k[:-3]: v for k, v in m.bindings.items()
                           if k.endswith(".id") and v is not None}]
            for e in set_one() for m in engine.process(e)]


PATTERN_OP = [  # PatternObserverTimerAt.PatternOp: (pattern, Esper's expected rows)
    ("timer:at(10, 8, *, *, *)", [["A1", {}]]),
    ("timer:at(10, 8, *, *, *, 1)", [["B1", {}]]),
    ("timer:at(5, 8, *, *, *)", [["A1", {}]]),
    ("timer:at(10, 8, *, *, *, *)", [["A1", {}]]),
    ("timer:at(25, 9, *, *, *)", [["D2", {}]]),
    ("timer:at(11, 8, *, *, *)", [["B1", {}]]),
    ("timer:at(19, 8, *, *, *, 59)", [["B1", {}]]),
    ("timer:at(20, 8, *, *, *, 20)", [["C1", {}]]),
    ("every timer:at(* / 30, *, *, *, *)", [["C1", {}], ["D1", {}], ["D2", {}], ["D3", {}]]),
    ("timer:at(59, 8, *, *, *, 59) -> d=D", [["D1", {"d": "D1"}]]),
    ("timer:at(*, 9, *, *, *, 59) -> d=D", [["D2", {"d": "D2"}]]),
    # (a guard on what follows the observer starts when it fired: B1 at 8:20 is within 5
    # minutes of 8:19:59; A2 at 8:50 not of 8:40)
    ("timer:at(19, 8, *, *, *, 59) -> (b=B where timer:within(5 min))", [["B1", {"b": "B1"}]]),
    ("timer:at(40, 8, *, *, *) -> (a=A where timer:within(5 min))", []),
]


@pytest.mark.parametrize(("pattern", "expected"), PATTERN_OP)
def test_esper_pattern_op_cases(pattern: str, expected: list) -> None:
    assert per_event(pattern) == expected
    assert per_event(pattern, fast=False) == expected
    engine = cepflow.Engine(program(pattern), start=T0)
    times = [e.ts for e in set_one()]
    got = [[SET_ONE[next(i for i, t in enumerate(times) if t >= m.ts)],
            {k[:-3]: v for k, v in m.bindings.items() if k.endswith(".id") and v is not None}]
           for m in engine.run(set_one())]
    assert got == expected


def test_every_timer_at_each_minute_fires_at_each_minute_boundary() -> None:
    """PatternTimerAtSimple: started at 9:00:00.000, nothing at 9:00:59.999, a match at
    9:01:00.000 and at 9:02:00.000 (time advanced, no events)."""
    start = ms("2002-05-30 09:00:00")
    engine = cepflow.Engine(program("every timer:at(*,*,*,*,*)"), start=start)
    assert engine.advance_to(ms("2002-05-30 09:00:59.999")) == []
    assert [m.ts for m in engine.advance_to(ms("2002-05-30 09:01:00.001"))] == [
        ms("2002-05-30 09:01:00")]
    assert engine.advance_to(ms("2002-05-30 09:01:59.999")) == []
    assert [m.ts for m in engine.advance_to(ms("2002-05-30 09:02:00.001"))] == [
        ms("2002-05-30 09:02:00")]


def test_every_timer_at_on_weekdays_at_eight() -> None:
    """PatternAtWeekdays: started on Sunday 2008-08-03 10:00, ``every timer:at(0, 8, *, *,
    [1, 2, 3, 4, 5])`` fires Monday to Friday at 8:00, then the next Monday."""
    engine = cepflow.Engine(program("every timer:at(0, 8, *, *, [1, 2, 3, 4, 5])"),
                            start=ms("2008-08-03 10:00:00"))
    got = [m.ts for m in engine.advance_to(ms("2008-08-12 00:00:00"))]
    assert got == [ms(f"2008-08-{d:02d} 08:00:00") for d in (4, 5, 6, 7, 8, 11)]


def test_every_timer_at_chains_at_its_instants_where_esper_jumps() -> None:
    """Decision (as ``every timer:interval``): each firing starts the next observer at its own
    instant, so ``every timer:at(*, *, *, *, *)`` fires at every minute — 120 times over set
    one's two hours — where Esper's harness, whose clock jumps from event to event, starts it
    again at the jump's end and reports one match per event."""
    got = per_event("every timer:at(*, *, *, *, *)")
    assert len(got) == 120 and [r[0] for r in got[:11]] == ["A1"] * 10 + ["B1"]


def test_the_first_event_starts_the_statement_without_a_start() -> None:
    """No ``start``: the statement starts at the first event (as for timer:interval); that
    event is seen by what the observer begins only after the observer fired."""
    engine = cepflow.Engine(program("timer:at(*, *, *, *, *) -> a=A"))
    evs = [Event("A", ("A1",), ms("2024-01-01 10:00:30")),
           Event("A", ("A2",), ms("2024-01-01 10:00:59")),
           Event("A", ("A3",), ms("2024-01-01 10:01:00"))]
    got = [m for e in evs for m in engine.process(e)]
    assert [(m.bindings["a.id"], m.ts) for m in got] == [("A3", ms("2024-01-01 10:01:00"))]


def test_a_pending_timer_at_is_saved_and_restored() -> None:
    """The observer under way (begun at the start) survives a save and restore through JSON
    and fires at its instant; a damaged begin time is refused."""
    prog = program("timer:at(30, 10, *, *, *) -> a=A")
    engine = cepflow.Engine(prog, start=ms("2024-01-01 09:00:00"))
    engine.process(Event("B", ("B1",), ms("2024-01-01 10:00:00")))
    state = json.loads(json.dumps(save_state(engine)))
    again = restore_state(cepflow.Engine(prog), state)
    evs = [Event("A", ("A1",), ms("2024-01-01 10:29:59")),
           Event("A", ("A2",), ms("2024-01-01 10:30:00"))]
    assert [m.bindings["a.id"] for e in evs for m in again.process(e)] == ["A2"]
    assert state["timers"]["queue"]["deadline"] == [ms("2024-01-01 10:30:00")]
    bare = {**state, "timers": {"queue": {k: [] for k in state["timers"]["queue"]}}}
    again = restore_state(cepflow.Engine(prog), bare)  # (a timer the clock needs that the
    # state lacks is asked for again)
    assert [m.bindings["a.id"] for e in evs for m in again.process(e)] == ["A2"]
    state["clocks"]["intervals"]["P"] = ms("2024-01-01 08:00:00")  # (due 10:30: under way)
    assert restore_state(cepflow.Engine(prog), state) is not None
    state["clocks"]["intervals"]["P"] = ms("2023-12-31 09:00:00")  # (due the day before)
    with pytest.raises(StateError, match="not an interval under way"):
        restore_state(cepflow.Engine(prog), state)


def test_the_kernels_and_the_split_leave_it_per_event() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
    from pattern_shapes import route_of

    for pattern in ("every timer:at(*/30, *, *, *, *)", "every timer:at(0, *, *, *, *) -> a=A",
                    "timer:at(*, 9, *, *, *, 59) -> d=D -> b=B"):
        engine = cepflow.Engine(program(pattern), start=T0)
        list(engine.run(set_one()))
        assert route_of(engine) == "per event", pattern


def test_the_petri_translation_reports_it() -> None:
    from cepflow.petri.translate import Untranslatable, translate

    with pytest.raises(Untranslatable, match="timer:at"):
        translate(program("every timer:at(*/30, *, *, *, *) -> a=A"))


# ---- patterns against an oracle from Esper's definition ---------------------------------------

FORMS = ["once", "every", "once then A", "every then A", "every and not B",
         "every (then A)"]


def text(form: str, sched: str) -> str:
    return {"once": f"timer:at({sched})", "every": f"every timer:at({sched})",
            "once then A": f"timer:at({sched}) -> a=A",
            "every then A": f"every timer:at({sched}) -> a=A",
            "every and not B": f"every (timer:at({sched}) and not B)",
            "every (then A)": f"every (timer:at({sched}) -> a=A)"}[form]


def oracle(form: str, sched: Schedule, start: float, evs: list[Event],
           end: float) -> list[tuple[float, str | None]]:
    """Esper's TimerAtObserver: started at ``t`` it fires at ``next(t)`` (timers before the
    events of their instant). ``every`` starts it again when it fires (at that instant), or,
    around ``timer:at and not B``, at a B that came while it was under way; ``every (… -> a=A)``
    when the A ended the instance; ``timer:at -> a=A`` takes the first A at or after the
    firing. Matches up to ``end``: (time, the A's id)."""
    out: list[tuple[float, str | None]] = []
    due = sched.next_after(start)
    waiting: list[float] = []  # (the firings waiting for an A, in order)
    fired_once = False
    for e in [*evs, Event("Z", ("end",), end)]:
        while due <= e.ts and not (form.startswith("once") and fired_once) and (
                form != "every (then A)" or not waiting):
            fired_once = True
            if form in ("once", "every", "every and not B"):
                out.append((due, None))
            else:
                waiting.append(due)
            due = sched.next_after(due) if form in ("every", "every and not B",
                                                    "every then A") else math.inf
        if e.type == "A" and e.ts <= end and waiting:
            for _ in waiting:
                out.append((e.ts, e.params[0]))
            waiting = []
            if form == "every (then A)":
                due = sched.next_after(e.ts)
        if form == "every and not B" and e.type == "B" and e.ts < end:
            due = sched.next_after(e.ts)
    return out


stream_st = st.lists(st.tuples(st.sampled_from("AB"), st.integers(0, 95_000)), max_size=14)
sched_st = st.sampled_from([
    "*, *, *, *, *, */20", "*, *, *, *, *, [5, 45]", "*, *, *, *, *", "*/2, *, *, *, *",
    "*, *, *, *, *, 59", "[0, 1], *, *, *, *, 0:9", "*, *, 29, 2, *, */30",
    "59, 23, *, *, *, [30, 58]"])


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(FORMS), sched_st, stream_st, st.integers(0, 14), st.integers(0, 14),
       st.sampled_from([ms("2024-02-28 23:58:00"), ms("2023-12-31 23:59:59.5")]))
def test_patterns_begun_by_timer_at_match_as_the_oracle(form: str, sched: str, steps: list,
                                                       cut: int, save: int,
                                                       start: float) -> None:
    t, evs = start, []
    for i, (typ, gap) in enumerate(steps):
        t += gap
        evs.append(Event(typ, (f"{typ}{i}",), t))
    end = t + 150_000
    prog = program(text(form, sched))
    want = oracle(form, _read(sched), start, evs, end)

    def rows(got: list) -> list[tuple[float, str | None]]:
        return [(m.ts, m.bindings.get("a.id")) for m in got]

    for fast in (True, False):  # per event: the fast steps and the token path
        engine = cepflow.Engine(prog, start=start, fast_path=fast)
        got = [m for e in evs for m in engine.process(e)] + engine.advance_to(end)
        assert rows(got) == want, (fast, text(form, sched))
    # Engine.run in batches cut at ``cut``, a save and restore through JSON at ``save``
    engine = cepflow.Engine(prog, start=start)
    got = list(engine.run(evs[:cut]))
    at = max(cut, min(save, len(evs)))
    got += list(engine.run(evs[cut:at]))
    state = json.loads(json.dumps(save_state(engine)))
    engine = restore_state(cepflow.Engine(prog), state)
    got += list(engine.run(evs[at:])) + engine.advance_to(end)
    assert rows(got) == want, text(form, sched)
