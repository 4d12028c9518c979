"""The clock of a pattern that starts with ``timer:interval`` or ``timer:at`` (compiler.esper;
docs/esper.md, "Statement start", "timer:at"): the interval under way, the events that end it
early, a new instance when it fires — a part of the Matcher (runtime.matcher)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.binding import NO_BINDINGS, bind
from cepflow.runtime.tokens import Token
from cepflow.timefmt import duration_text as _ms

#: the token id of a pattern's clock in the engine's timer queue (no token has it)
CLOCK_TOKEN = -2


class IntervalClock:
    """The interval clock of a Matcher (mixed into runtime.matcher.Matcher)."""

    pattern: Any
    host: Any
    name: str
    tokens: dict[Any, dict[int, Token]]
    clock_start: float | None
    completed: bool
    _group_alive: Callable[[], bool]
    quit: Callable[[float], bool]

    # -- a pattern's clock (a leading timer:interval) ------------------------------------------
    def start_clock(self, t: float) -> None:
        """Begin the pattern's leading interval at ``t`` (the statement's start, or when the
        start policy restarts it); nothing once the engine's input has ended."""
        clock = self.pattern.clock
        if clock is None or self.host.stopped or self.quit(t):
            return
        self.clock_start = t
        due = clock.due(t)
        if due != math.inf:  # (a timer:at past the year 9999 never fires)
            self.host.schedule(due, self, CLOCK_TOKEN, -1, t)
        if self.host.trace is not None:
            what = (f"interval of {_ms(clock.length)}" if clock.schedule is None
                    else f"timer:at({clock.schedule.text()})")
            self.host.trace.add(kind="clock", pattern=self.name, token=CLOCK_TOKEN,
                                  event=None, ts=t, reason=f"{what} starts")

    def _clock_forbid(self, e: Event) -> None:
        """An event that ends the interval under way (``timer:interval(Δ) and not C``)."""
        assert self.pattern.clock is not None and self.clock_start is not None
        if e.ts < self.clock_start:
            return
        for pos in self.pattern.clock.forbids:
            if pos.type == e.type and bind(pos, e.params, {}) is not None and (
                    pos.filter is None or pos.filter(e, NO_BINDINGS)):
                break
        else:
            return
        self.clock_start = None  # (its timer, still in the engine's heap, is now stale)
        if self.host.trace is not None:
            self.host.trace.add(kind="clock", pattern=self.name, token=CLOCK_TOKEN,
                                  event=e.ref, ts=e.ts,
                                  reason=f"interval ended: NOT {pos.label.lstrip('¬')} observed")
        if self.pattern.auto.start == "spawn":  # every on the interval alone: it starts again
            self.start_clock(e.ts)

    def _clock_fired(self, start: float, emit: Callable[[ComplexEvent], None]) -> None:
        """The interval begun at ``start`` passed: the rest of the pattern begins (or the
        pattern completes) with the clock's event at the interval's end."""
        clock = self.pattern.clock
        assert clock is not None
        if start != self.clock_start:
            return  # an interval that ended early (or restarted)
        self.clock_start = None
        at = clock.due(start)
        self._start(Event(clock.type, (), at, clock.type), None, emit)
        if self.pattern.auto.start == "spawn":
            self.start_clock(at)

    def _clock_idle(self, t: float) -> None:
        """``every (timer:interval(…) …)``: one instance at a time; when it has ended (the
        interval ended early, the rest completed or died) the next begins at ``t`` — under
        Automaton.final only when it completed (a match in this step): Esper's ``every (G)
        and not N`` is over for good once an ``N`` ended it. ``every ((timer:interval(0) ->
        G) where …) -> R`` (start policy group): when no instance of the group is under way
        (it completed, the rest's instances go on, or its guard ended it)."""
        completed, self.completed = self.completed, False
        start = self.pattern.auto.start
        if self.clock_start is None and (
                (start == "restart" and not self.tokens
                 and (completed or not self.pattern.auto.final))
                or (start == "group" and not self._group_alive())):
            self.start_clock(t)
