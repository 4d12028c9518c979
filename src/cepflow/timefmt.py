"""How times are shown to people (``cepflow explain``, ``cepflow graph``, the engine's
explanations): never as ``1.71456e+12``.

Timestamps are milliseconds. An *instant* from 1973-03-03 on (``ts >= 1e11``) is an epoch time
and is written in ISO-8601 UTC with milliseconds, ``2024-05-01T10:35:12.345Z``; an earlier one
is a stream's own clock (the examples count from 0) and is written as its exact number of
milliseconds, ``1500 ms``. A *duration* is written in the largest unit of the pattern language
that divides it exactly (``5 s``, ``1 d``, ``1500 ms``) — the way a window is written in a
pattern file. docs/cli.md gives the rule to users.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from cepflow.language.printer import format_duration

#: instants at or after this many ms since the epoch (1973-03-03) are shown as dates
EPOCH_FROM_MS = 1e11

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _number(x: float) -> str:
    """A number without exponent or trailing zeros (``1500``, ``1500.25``)."""
    if float(x).is_integer():
        return str(int(x))
    return format(Decimal(repr(float(x))), "f")


def instant_text(ts: float) -> str:
    """A timestamp (ms) as people read it: ISO-8601 UTC for epoch times, else ``N ms``."""
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts):
        return str(ts)
    if ts >= EPOCH_FROM_MS:
        try:
            if float(ts).is_integer():
                when = _EPOCH + timedelta(milliseconds=int(ts))
                return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            when = _EPOCH + timedelta(microseconds=round(ts * 1000))
            return when.isoformat(timespec="microseconds").replace("+00:00", "Z")
        except OverflowError:  # after the year 9999: no calendar date
            pass
    return f"{_number(ts)} ms"


def duration_text(ms: float) -> str:
    """A duration (ms) in the largest unit that divides it exactly: ``5 s``, ``1500 ms``."""
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not math.isfinite(ms):
        return f"{ms} ms"
    if ms < 0:
        return "-" + format_duration(-ms)
    return format_duration(ms)
