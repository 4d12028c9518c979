"""Output rows: evaluating the select list and ``having``, and making the output event.

Each row becomes a :class:`~cepflow.events.event.ComplexEvent` of the statement's output type
(``insert into``): ``params`` are the select values in order, ``bindings`` map the output names
to them, ``parts`` is the input event whose arrival made the row (empty for rows made by time
passing), so rows can re-enter the stream like any detected complex event.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from cepflow.compiler.evaluator import Evaluator
from cepflow.events.event import ComplexEvent, Event
from cepflow.windows.expressions import NOW

_PREFIX = "$a"


def placeholder(slot: int) -> str:
    """The name an aggregate slot's value is bound to in compiled expressions."""
    return f"{_PREFIX}{slot}"


def placeholder_slot(name: str) -> int | None:
    """The slot a placeholder name stands for (None for any other name)."""
    return int(name[len(_PREFIX):]) if name.startswith(_PREFIX) else None


class RowBuilder:
    """Evaluates the select list (and ``having``) for one output row and makes the event.

    Select items that are a bare aggregate, a bare field or ``current_timestamp()`` are read
    directly; other items and ``having`` are compiled expressions over the input event's
    fields and the aggregate placeholders. When every item is read directly and there is no
    ``having``, one ``itemgetter`` over ``aggregate values + event fields + (now,)`` makes the
    row.
    """

    def __init__(self, name: str, aliases: tuple[str, ...],
                 items: list[tuple[str, Any]], having: Evaluator | None,
                 n_slots: int, match_ids: Callable[[], int]) -> None:
        self.name = name
        self.aliases = aliases
        self.items = items
        self.having = having
        self.match_ids = match_ids
        self._names = tuple(placeholder(i) for i in range(n_slots))
        self._needs_bindings = having is not None or any(k == "expr" for k, _ in items)
        self._getter: Callable[[tuple[Any, ...]], Any] | None = None
        self._uses_fields = any(k == "field" for k, _ in items)
        if not self._needs_bindings:
            # positions in vals + event.params + (now,); "now" is the last element
            pos = [arg if kind == "agg" else n_slots + arg if kind == "field" else -1
                   for kind, arg in items]
            self._getter = tuple_getter(pos)

    def row(self, event: Event | None, vals: tuple[Any, ...], now: float,
            trigger: Event | None) -> ComplexEvent | None:
        """The output event for ``event`` (the row's representative input event) with the
        aggregate values ``vals`` at time ``now``; None when ``having`` rejects the row."""
        getter = self._getter
        if getter is not None:
            src = vals + event.params if self._uses_fields else vals  # type: ignore[union-attr]
            params = getter((*src, now))
        else:
            bindings = dict(zip(self._names, vals, strict=False))
            bindings[NOW] = now
            if self.having is not None and not self.having(event, bindings):
                return None
            params = tuple([
                vals[arg] if kind == "agg" else
                event.params[arg] if kind == "field" else  # type: ignore[union-attr]
                now if kind == "now" else
                arg(event, bindings)
                for kind, arg in self.items])
        return ComplexEvent(self.name, params, now, dict(zip(self.aliases, params, strict=False)),
                            () if trigger is None else (trigger,), self.match_ids())


def tuple_getter(positions: list[int]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """``f(t) == tuple(t[i] for i in positions)``, at C speed (``itemgetter``)."""
    if len(positions) == 1:
        i = positions[0]
        return lambda t: (t[i],)
    return operator.itemgetter(*positions)
