"""Sliding windows: ``#time(Δ)`` and ``#length(n)`` (also one length window per group).

A sliding window reports every arriving event to its processor at once (Esper posts the insert
stream on arrival). The time window holds the events with ``ts > now - Δ``: an event that
arrived at ``t`` leaves when time reaches ``t + Δ`` — by a later event or by ``advance_to`` —
and all events leaving at the same instant leave in one update (Esper's appendix: "E3 and E4
leave the time window" at 7.0 give one row). Expiry instants are visited one by one in time
order, as a clock passing through them would, before any event of a later (or the same)
instant enters. The length window pushes out its oldest event when the ``n+1``-th arrives, in
the same update as the arrival.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from cepflow.windows.base import WindowView
from cepflow.windows.held import KEY, SEQ, TS, VALS, Record
from cepflow.windows.processor import Processor, Rows


class TimeWindow(WindowView):
    """``#time(size)``: the events of the last ``size`` time units."""

    def __init__(self, size: float, proc: Processor) -> None:
        self.size = size
        self.proc = proc
        self.items: deque[Record] = deque()

    def load(self, records: Iterable[Record]) -> None:
        """Hold ``records`` (oldest first) without output: state moved from elsewhere."""
        agg = self.proc.agg
        for rec in records:
            if not self.items:
                self.due = rec[TS] + self.size
            self.items.append(rec)
            agg.enter(rec[KEY], rec[VALS], rec[SEQ], rec)

    def insert(self, rec: Record) -> Rows:
        rows = self.proc.arrive(rec, (), rec[TS])  # first: it rejects values it cannot take
        if not self.items:
            self.due = rec[TS] + self.size
        self.items.append(rec)
        return rows

    def advance(self, t: float) -> Rows:
        items, size = self.items, self.size
        out: Rows = []
        while items and items[0][TS] + size <= t:
            instant = items[0][TS] + size
            leaving = [items.popleft()]
            while items and items[0][TS] + size == instant:
                leaving.append(items.popleft())
            out.extend(self.proc.expire(instant, leaving))
        self.due = items[0][TS] + size if items else float("inf")
        return out

    def __len__(self) -> int:
        return len(self.items)


class LengthWindow(WindowView):
    """``#length(n)``: the last ``n`` events."""

    def __init__(self, n: int, proc: Processor) -> None:
        self.n = n
        self.proc = proc
        self.items: deque[Record] = deque()

    def insert(self, rec: Record) -> Rows:
        return _push(self.items, self.n, rec, self.proc)

    def __len__(self) -> int:
        return len(self.items)


def _push(items: deque[Record], n: int, rec: Record, proc: Processor) -> Rows:
    """Append ``rec`` to a length window, pushing out the oldest beyond ``n``; one update."""
    removed = (items[0],) if len(items) >= n else ()
    rows = proc.arrive(rec, removed, rec[TS])  # first: it rejects values it cannot take
    if removed:
        items.popleft()
    items.append(rec)
    return rows


class GroupLengthWindow(WindowView):
    """``#groupwin(<group by>)#length(n)``: the last ``n`` events of every group."""

    def __init__(self, n: int, proc: Processor) -> None:
        self.n = n
        self.proc = proc
        self.items: dict[Any, deque[Record]] = {}

    def insert(self, rec: Record) -> Rows:
        items = self.items.get(rec[KEY])
        if items is None:
            items = deque()
        rows = _push(items, self.n, rec, self.proc)
        self.items[rec[KEY]] = items
        return rows

    def __len__(self) -> int:
        return sum(len(d) for d in self.items.values())
