"""Out-of-order policy: bounded lateness with a watermark, and merging of ordered sources.

Patterns are evaluated in timestamp order, but real sources deliver events a little out of
order. :func:`reorder` repairs that within a declared bound:

* It tracks the **watermark** ``w = max_ts_seen - allowed_lateness``: the promise that no event
  with a smaller timestamp is still expected.
* Arriving events wait in a heap and are released in ``(ts, arrival order)`` order as soon as
  ``ts <= w``; so ties keep their arrival order and the output is sorted by ``ts``.
* An event whose ``ts`` is below that of an event already released cannot be put in its place
  any more: it is **late**. It is never dropped silently: it goes to ``side.late`` as a
  :class:`~cepflow.events.event.Rejected` (:func:`late_reason`, with the event as record; its
  location that of its record in the file when the caller can tell it, ``locate``), or, without
  a side channel, raises :class:`LateEventError`. An event is late only if it trails the
  newest timestamp seen before it by more than ``allowed_lateness``. Spark streaming reports
  late events with the same reason (:mod:`cepflow.spark.streaming`).
* ``allowed_lateness=0`` means the input must already be ordered (equal timestamps are fine);
  every event is released at once and out-of-order ones are reported as late.
* At the end of the input everything still buffered is released in order.

The buffer only holds events within ``allowed_lateness`` of the newest timestamp, so memory is
bounded by the lateness bound (not the stream length); each event costs O(log n) heap work.

Several sources that are each ordered are combined with :func:`merge` (by ``ts``, then source
index, then position in the source), typically ``merge(*(reorder(s, L, side) for s in ...))``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator

from cepflow.events.event import Event, Rejected, SideChannel


class LateEventError(ValueError):
    """An event arrived later than the allowed lateness and there was no side channel for it."""

    def __init__(self, rejected: Rejected) -> None:
        super().__init__(str(rejected))
        self.rejected = rejected


def format_ts(value: float) -> str:
    """A timestamp for messages: whole numbers without a trailing ``.0``."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def late_reason(ts: float, released: float, watermark: float) -> str:
    """Why an event at ``ts`` is late: events up to ``released`` were already passed on."""
    return (f"late by {format_ts(released - ts)} ms: events up to {format_ts(released)} were "
            f"already released (watermark {format_ts(watermark)})")


def reorder(
    events: Iterable[Event],
    allowed_lateness: float,
    side: SideChannel | None = None,
    *,
    source: str = "<stream>",
    locate: Callable[[], str] | None = None,
) -> Iterator[Event]:
    """Yield ``events`` sorted by ts within ``allowed_lateness`` ms; report later ones as late.

    ``source`` names the stream in late reports; their location is ``locate()`` — called as the
    late event arrives, e.g. :meth:`cepflow.inputs.records.Cursor.location` of its reader —
    else the 0-based arrival position (and the event's id, if it has one).
    """
    if not allowed_lateness >= 0:  # also rejects NaN
        raise ValueError(f"allowed_lateness must be >= 0, not {allowed_lateness!r}")
    heap: list[tuple[float, int, Event]] = []
    max_ts = -math.inf
    last_released = -math.inf
    for position, event in enumerate(events):
        ts = event.ts
        if ts < last_released:
            if locate is not None:
                location = locate()
            else:
                location = f"position {position}"
                if event.id is not None:
                    location += f" (id {event.id!r})"
            reason = late_reason(ts, last_released, max_ts - allowed_lateness)
            rejected = Rejected(source, location, reason, record=event, field="ts")
            if side is None:
                raise LateEventError(rejected)
            side.late.append(rejected)
            continue
        heapq.heappush(heap, (ts, position, event))
        if ts > max_ts:
            max_ts = ts
        watermark = max_ts - allowed_lateness
        while heap and heap[0][0] <= watermark:
            last_released, _, released = heapq.heappop(heap)
            yield released
    while heap:
        yield heapq.heappop(heap)[2]


def _ordered(stream: Iterable[Event], index: int) -> Iterator[Event]:
    """Pass ``stream`` through, raising ValueError if it goes back in time (merge needs order)."""
    previous = -math.inf
    for position, event in enumerate(stream):
        if event.ts < previous:
            raise ValueError(
                f"stream {index} is not ordered by ts: event at position {position} has ts "
                f"{format_ts(event.ts)} after {format_ts(previous)}; reorder() it first"
            )
        previous = event.ts
        yield event


def _ts(event: Event) -> float:
    return event.ts


def merge(*streams: Iterable[Event]) -> Iterator[Event]:
    """Merge ts-ordered streams into one, ties by stream index then position (multi-source input).

    Raises ValueError if a stream turns out not to be ordered, instead of emitting disorder.
    """
    return heapq.merge(*(_ordered(s, i) for i, s in enumerate(streams)), key=_ts)
