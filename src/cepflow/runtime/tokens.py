"""Tokens and threads: the run-time state of partial matches (000 §5.1, Defs. 13-15).

A token is one partial match instance — the unit event processing contexts select and dispose.
It normally holds one thread (its position in the automaton, its parameter table, the events it
consumed and the entry timestamps of the timed zones it is in); when the automaton offers two
alternatives for the same event type the token follows each with its own thread.
"""

from __future__ import annotations

from typing import Any

from cepflow.events.event import Event


class Thread:
    """One path of a token through the automaton."""

    __slots__ = ("bindings", "events", "last", "state", "zstart")

    def __init__(
        self,
        state: int,
        bindings: dict[str, Any],
        events: list[Event],
        zstart: dict[int, float] | None,
        last: Event | None,
    ) -> None:
        self.state = state
        self.bindings = bindings
        self.events = events
        self.zstart = zstart
        self.last = last

    @property
    def last_ts(self) -> float:
        return self.last.ts if self.last is not None else float("-inf")


class Token:
    """A partial match: ``id`` grows with creation, so smaller means older (chronicle)."""

    __slots__ = ("created", "id", "part", "regs", "threads")

    def __init__(self, id: int, part: Any, created: float, threads: list[Thread]) -> None:
        self.id = id
        self.part = part
        self.created = created
        self.threads = threads
        self.regs: list[tuple[int, Any]] = []

    def __repr__(self) -> str:
        states = ",".join(str(t.state) for t in self.threads)
        return f"Token({self.id}@{states})"


class PendingRows:
    """Partial matches a column kernel left as rows rather than tokens, oldest first, until
    something needs tokens (Matcher.materialize) — making and registering a token per partial
    match at every batch end, only for the next batch to take it apart, cost the chain kernel
    a third of its time with 100,000 keys. Per row: its token id and its events so far; a
    pair's rows (runtime.shapes.EsperPair) hold their one ``A`` event in ``events`` and no
    states, a chain's rows the list of events, their state and their key value (of variable
    ``var``). ``zone``: the window the partial matches entered at their first event."""

    __slots__ = ("events", "ids", "keys", "states", "var", "zone")

    def __init__(self, ids: list[int], events: list[Any], zone: int | None,
                 states: list[int] | None = None, keys: list[Any] | None = None,
                 var: str = "") -> None:
        self.ids, self.events, self.zone = ids, events, zone
        self.states, self.keys, self.var = states, keys, var

    def __len__(self) -> int:
        return len(self.ids)
