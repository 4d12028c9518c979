"""Helpers shared by the window tests: schemas, events and statements written as EPL text."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from cepflow.events.event import ComplexEvent, Event, EventType, ParamSpec
from cepflow.windows import WindowRunner, WindowSpec, WindowStatement, parse


def schema(name: str, *fields: str | tuple[str, str]) -> EventType:
    """``schema("R", "k", ("v", "float"))``: an event type with untyped or typed fields."""
    params = tuple(ParamSpec(f) if isinstance(f, str) else ParamSpec(*f) for f in fields)
    return EventType(name, params)


def statement(
    select: Sequence[str | tuple[str, str]],
    window: WindowSpec,
    *,
    input_type: str = "R",
    name: str = "Out",
    group_by: Sequence[str] = (),
    having: str | None = None,
    filter: str | None = None,
    alias: str | None = None,
) -> WindowStatement:
    """A statement from EPL-like text: select items are ``"expr"`` or ``("expr", "alias")``."""
    items = [(parse(s), None) if isinstance(s, str) else (parse(s[0]), s[1]) for s in select]
    return WindowStatement(
        name, input_type, window, items,
        filter=parse(filter) if filter else None,
        group_by=tuple(parse(g) for g in group_by),
        having=parse(having) if having else None,
        alias=alias)


def events(type_: str, rows: Iterable[tuple[Any, ...]]) -> list[Event]:
    """``events("R", [(ts, p1, p2), ...])``."""
    return [Event(type_, tuple(r[1:]), r[0]) for r in rows]


def rows(out: Iterable[ComplexEvent]) -> list[tuple[Any, ...]]:
    """Output rows as ``(ts, *params)``, the form the expected tables are written in."""
    return [(e.ts, *e.params) for e in out]


def run(stmt: WindowStatement, schemas: dict[str, EventType], evs: Iterable[Event],
        until: float | None = None, flush: bool = False) -> list[ComplexEvent]:
    """Feed ``evs`` one by one, then advance to ``until`` and finish."""
    runner = WindowRunner(stmt, schemas)
    out: list[ComplexEvent] = []
    for e in evs:
        out.extend(runner.process(e))
    if until is not None:
        out.extend(runner.advance_to(until))
    out.extend(runner.finish(flush_batches=flush))
    return out
