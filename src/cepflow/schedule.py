"""Crontab schedules: Esper's ``timer:at`` observer (docs/esper.md, "timer:at").

A :class:`Schedule` is the five or six parameters of ``timer:at(minutes, hours, days of month,
months, days of week [, seconds])``, each written as Esper writes it — ``*``, a number, a range
``1:5``, a frequency ``*/5`` or a list ``[1, 5, 10:12, */20]`` of those — and answers one
question: when is an observer that starts at ``now`` due (:meth:`Schedule.next_after`)?

Esper's rule (TimerAtObserver asks ScheduleComputeHelper.computeNextOccurance for the time it
starts): the schedule's resolution is a second when the seconds are given (even as ``*``), a
minute otherwise; the due instant is the first whole second (minute) that fits every field and
is at least one resolution step past ``now`` truncated to that resolution, plus ``now``'s own
milliseconds (Esper keeps them). So it is strictly after ``now``: ``timer:at(*, *, *, *, *)``
started at 9:00:00 is due at 9:01:00, started at 9:00:59.999 at 9:01:00.999; a day matches when
its month is listed and its day of month or its day of week is (either when both are given,
the one given when only one is). **Decisions:** the clock is UTC (cepflow's times are epoch
milliseconds; Esper uses the JVM's zone); the day search is the plain "first instant that fits"
(Esper's documented meaning); a field that selects no value (``*/15`` for months, a range
``20:10``) means every value, as in Esper (an empty set is its wildcard). Not read (reported by
the EPL reader): ``last``, ``weekday``, ``lastweekday``, a time zone, milliseconds.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import date

#: the fields in their order of ``timer:at``: name, lowest and highest value
UNITS: tuple[tuple[str, int, int], ...] = (
    ("minutes", 0, 59), ("hours", 0, 23), ("days of month", 1, 31), ("months", 1, 12),
    ("days of week", 0, 6), ("seconds", 0, 59))

_DAY_MS = 86_400_000
#: 1970-01-01 as a proleptic Gregorian ordinal (date.toordinal)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
_LAST_ORDINAL = date.max.toordinal()
#: the longest month of each month (February in a leap year)
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class ScheduleError(ValueError):
    """A ``timer:at`` parameter Esper would not accept, or a schedule that never fires."""


#: one item of a parameter: ("any",), ("value", n), ("range", low, high), ("every", n)
Item = tuple


def _values(items: tuple[Item, ...], unit: int) -> frozenset[int] | None:
    """The values one parameter selects (None: every value), its numbers checked."""
    name, low, high = UNITS[unit]
    out: set[int] = set()
    for it in items:
        kind = it[0]
        if kind == "any":
            return None
        for n in it[1:]:
            if kind == "every" and n < 1:
                raise ScheduleError(f"a frequency */{n} needs a positive number")
            if kind != "every" and not low <= n <= high:
                raise ScheduleError(f"{name} take {low} to {high}, not {n}")
        if kind == "value":
            out.add(it[1])
        elif kind == "range":
            out.update(range(it[1], it[2] + 1))
        else:  # every n-th: the multiples of n in the unit's range (Esper's FrequencyParameter)
            out.update(v for v in range(low, high + 1) if v % it[1] == 0)
    return frozenset(out) if out else None  # (nothing selected: Esper's wildcard)


def item_text(it: Item) -> str:
    """How one item is written in EPL."""
    kind = it[0]
    if kind == "any":
        return "*"
    if kind == "value":
        return str(it[1])
    if kind == "range":
        return f"{it[1]}:{it[2]}"
    return f"*/{it[1]}"


@dataclass(frozen=True)
class Schedule:
    """``timer:at``'s parameters (each a tuple of items, a list when more than one) and the
    values they select; equal schedules are written alike."""

    params: tuple[tuple[Item, ...], ...]
    #: per field, the values it selects (None: every value); seconds None when not given
    sets: tuple[frozenset[int] | None, ...] = field(init=False, compare=False, repr=False)
    #: the hours, minutes and seconds a day fires at, sorted (seconds [0] when not given)
    times: tuple[list[int], list[int], list[int]] = field(init=False, compare=False,
                                                          repr=False)

    def __post_init__(self) -> None:
        if not 5 <= len(self.params) <= 6:
            raise ScheduleError("timer:at takes 5 or 6 parameters (minutes, hours, days of "
                                f"month, months, days of week [, seconds]), not "
                                f"{len(self.params)}")
        sets = tuple(_values(p, k) for k, p in enumerate(self.params))
        dom, months, dow = sets[2], sets[3], sets[4]
        if dom is not None and len(dom) == 1 and dow is not None:
            raise ScheduleError("timer:at: one day of month with days of week is an invalid "
                                "combination in Esper; give the days of week as * (or two "
                                "or more days of month)")
        if dow is None and dom is not None and not any(
                d <= _MONTH_DAYS[m - 1] for m in (months or range(1, 13)) for d in dom):
            raise ScheduleError("timer:at never fires: no month listed has the days given")
        object.__setattr__(self, "sets", sets)
        object.__setattr__(self, "times", (
            _sorted(sets[1], 24), _sorted(sets[0], 60),
            _sorted(sets[5], 60) if len(self.params) == 6 else [0]))

    @property
    def resolution(self) -> int:
        """A second when the seconds are given, else a minute (ms)."""
        return 1000 if len(self.params) == 6 else 60_000

    def text(self) -> str:
        """The parameters as written in EPL: ``*/5, 8:17, *, *, [1, 2, 3, 4, 5]``."""
        def one(p: tuple[Item, ...]) -> str:
            inner = ", ".join(item_text(it) for it in p)
            return inner if len(p) == 1 else f"[{inner}]"
        return ", ".join(one(p) for p in self.params)

    def next_after(self, now: float) -> float:
        """When an observer started at ``now`` (epoch ms, UTC) is due (see the module's
        docstring); ``math.inf`` past the year 9999 or for a time that is not finite."""
        if not math.isfinite(now):
            return math.inf
        step = self.resolution
        start = math.floor(now / step) * step + step  # (a whole second or minute, in ms)
        extra = now - math.floor(now / 1000) * 1000  # (now's milliseconds, kept)
        day = start // _DAY_MS
        second = (start - day * _DAY_MS) // 1000
        hours, minutes, seconds = self.times
        while day + _EPOCH_ORDINAL <= _LAST_ORDINAL:
            skip = self._skip(day)
            if skip:
                day += skip
                second = 0
                continue
            at = _first_time(hours, minutes, seconds, second)
            if at is not None:
                return float(day * _DAY_MS + at * 1000) + extra
            day += 1
            second = 0
        return math.inf

    def _skip(self, day: int) -> int:
        """0 when the day (since the epoch) fits the month and day fields, else how many days
        to move on (to the next month's first when its month is not listed)."""
        d = date.fromordinal(day + _EPOCH_ORDINAL)
        dom, months, dow = self.sets[2], self.sets[3], self.sets[4]
        if months is not None and d.month not in months:
            if d.year == date.max.year and d.month == 12:  # (past the calendar: the end)
                return _LAST_ORDINAL - d.toordinal() + 1
            nxt = date(d.year + (d.month == 12), d.month % 12 + 1, 1)
            return nxt.toordinal() - d.toordinal()
        if dom is None and dow is None:
            return 0
        weekday = d.isoweekday() % 7  # (0 is Sunday, as Esper's)
        if dow is None:
            return 0 if d.day in dom else 1  # type: ignore[operator]
        if dom is None:
            return 0 if weekday in dow else 1
        return 0 if d.day in dom or weekday in dow else 1


def _sorted(values: frozenset[int] | None, size: int) -> list[int]:
    return list(range(size)) if values is None else sorted(values)


def _first_time(hours: list[int], minutes: list[int], seconds: list[int],
                least: int) -> int | None:
    """The earliest second of the day at or after ``least`` whose hour, minute and second
    are listed; None when none is left that day."""
    h0, rest = divmod(least, 3600)
    m0, s0 = divmod(rest, 60)
    for h in hours[bisect_left(hours, h0):]:
        if h > h0:
            return h * 3600 + minutes[0] * 60 + seconds[0]
        for m in minutes[bisect_left(minutes, m0):]:
            if m > m0:
                return h * 3600 + m * 60 + seconds[0]
            k = bisect_left(seconds, s0)
            if k < len(seconds):
                return h * 3600 + m * 60 + seconds[k]
    return None
