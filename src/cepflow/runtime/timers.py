"""The pattern timers of one engine: window deadlines, the deadlines Esper instances wait for,
and the clocks of patterns that begin with ``timer:interval`` — one queue, in time order.

At one instant two kinds of timer differ (docs/esper.md, "One instant"): an Esper-style
pattern's timer fires *before* the events of its instant (phase 0), a VEPL window's deadline
*after* them (phase 1: 000 §4.3.1's ``|c1.τ - c2.τ| ≤ Δ`` includes the end instant). Entries
are plain tuples ``(deadline, phase, seq, slot, token, zone, start)`` — ``slot`` the pattern's
place in the engine, ``token`` the token id (or a pattern-wide marker), ``zone`` and ``start``
the timed zone and when it was entered — ordered by deadline, phase and scheduling order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

Timer = tuple[float, int, int, int, int, int, float]

#: phases of a timer at its instant
BEFORE_EVENTS, AFTER_EVENTS = 0, 1
#: the token of a timer that only moves the clock when it comes due: a restored engine's for
#: the deadlines of instances that ended before them (runtime.state; Matcher.on_deadline)
IDLE_TOKEN = -3


def fired_before(timer: Timer, ts: float) -> bool:
    """Would ``timer`` have fired before an event at ``ts``?"""
    return timer[0] < ts or (timer[0] == ts and timer[1] == BEFORE_EVENTS)


class TimerQueue:
    """Pattern timers in firing order (see the module docstring)."""

    __slots__ = ("_seq", "heap")

    def __init__(self) -> None:
        #: the timers as a heap (read by the engine's per-event check; change it only
        #: through the methods)
        self.heap: list[Timer] = []
        self._seq = 0

    def schedule(self, deadline: float, phase: int, slot: int, token: int, zone: int,
                 start: float) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (deadline, phase, self._seq, slot, token, zone, start))

    def due_before(self, ts: float) -> bool:
        """Is the first timer due before an event at ``ts``?"""
        heap = self.heap
        if not heap:
            return False
        top = heap[0]
        return top[0] < ts or (top[0] == ts and top[1] == BEFORE_EVENTS)

    def first(self) -> float | None:
        """The earliest deadline (the timer may have become moot), or None."""
        return self.heap[0][0] if self.heap else None

    def pop(self) -> Timer:
        return heapq.heappop(self.heap)

    def keep(self, wanted: Callable[[Timer], bool]) -> None:
        """Drop the timers ``wanted`` refuses (the kernels drop those a batch has passed)."""
        self.heap = [h for h in self.heap if wanted(h)]
        heapq.heapify(self.heap)

    def copy(self) -> TimerQueue:
        """An independent queue with the same timers (a fork of the engine's state:
        cepflow.analysis.fork)."""
        new = TimerQueue()
        new.heap = list(self.heap)
        new._seq = self._seq
        return new

    def entries(self) -> list[Timer]:
        """The timers, in no particular order (for tests and saved state)."""
        return list(self.heap)

    def __len__(self) -> int:
        return len(self.heap)
