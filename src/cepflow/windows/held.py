"""The record a window keeps for each event it holds.

A record is a plain tuple ``(ts, seq, key, vals, event)`` — tuples are the cheapest object
Python builds, and a window holds one per event it contains:

* ``ts`` — the event's timestamp (the window's notion of time);
* ``seq`` — the event's position among the statement's accepted events (a unique id that
  orders records and identifies them in the min/max deques);
* ``key`` — the group-by value (``()`` without group by; the value itself for one expression;
  a tuple for several);
* ``vals`` — the values of the distinct aggregate arguments, in slot order;
* ``event`` — the input event (for select expressions over fields and for ``parts``).
"""

from __future__ import annotations

from typing import Any

from cepflow.events.event import Event

Record = tuple[float, int, Any, tuple[Any, ...], Event]

TS, SEQ, KEY, VALS, EVENT = 0, 1, 2, 3, 4
