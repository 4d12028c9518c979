"""Binding an event's parameters to the variables of the position it takes (000 Algorithm 1),
shared by every matching step."""

from __future__ import annotations

from typing import Any

_MISSING = object()
#: the bindings given to a filter that reads only its event
NO_BINDINGS: dict[str, Any] = {}


def bind(pos: Any, params: tuple, b: dict[str, Any]) -> dict[str, Any] | None:
    """Algorithm 1: the bindings after unifying occurrence ``pos`` with the event's parameters
    (``b`` itself when nothing new is bound — binding dicts are never changed in place), or
    None when a bound variable has another value."""
    if not b:  # nothing bound yet (a start): one dict, checking repeated variables
        newb = {}
        for i, var in pos.binds:
            v = params[i]
            cur = newb.setdefault(var, v)
            if cur is not v and cur != v:
                return None
        return newb
    newb = None
    for i, var in pos.binds:
        v = params[i]
        cur = (b if newb is None else newb).get(var, _MISSING)
        if cur is _MISSING:
            if newb is None:
                newb = dict(b)
            newb[var] = v
        elif cur != v:
            return None
    return b if newb is None else newb
