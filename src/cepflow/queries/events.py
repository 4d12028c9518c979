"""Query events (000 §4.2, 002 Listing 3): match appear/disappear as atomic events.

``queryEvent ForwardStartFound(B) as ForwardStart(B, _RH, _RE, _RS, _H) found`` is, in Python,
``QueryEventSpec("ForwardStartFound", "ForwardStart", "found", ("B", None, None, None, None))``
— or simply ``("ForwardStartFound", "ForwardStart", "found", ["B"])``.

* ``args`` are positional over the query's parameters, as in VEPL: entry ``i`` names the event
  parameter that takes query parameter ``i``; ``None``, ``_`` or a name starting with ``_``
  drops it; a shorter list drops the remaining parameters; ``args=None`` keeps every
  parameter under the query's own names. A name used twice keeps only matches whose values
  agree there.
* ``params`` orders the event's parameters (the event type's declaration); by default the kept
  names in query order.
* **Decision — one event per match.** Every appeared (``found``) or disappeared (``lost``)
  match of a commit gives one event, even when dropping parameters makes two events equal
  (as VIATRA-CEP does: the query engine reports matches, not projections).
* **Decision — order.** The events of one commit carry the commit's timestamp and are ordered
  by the order of the specs, then by the match's parameters (numbers before strings, then by
  value). Events ids are ``EventName#k``, k counting that event type's events from 1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cepflow.events.event import Event, EventType, ParamSpec
from cepflow.models.changes import add_listener
from cepflow.queries.incremental import MatchUpdate, QueryDelta, QueryEngine
from cepflow.queries.ir import Query, QuerySet

_CHANGES = {"found": "found", "lost": "lost", "appear": "found", "disappear": "lost",
            "new_match_found": "found", "existing_match_lost": "lost"}


@dataclass(frozen=True)
class QueryEventSpec:
    """Declares the event ``event`` raised when a match of ``query`` is found or lost."""

    event: str
    query: str
    change: Literal["found", "lost"] = "found"
    args: tuple[str | None, ...] | None = None
    params: tuple[str, ...] | None = None


SpecLike = QueryEventSpec | Sequence[Any]


class QueryEventError(ValueError):
    """A query event that does not fit its query (``reason`` without the event's name, so a
    caller can say where the declaration is)."""

    def __init__(self, event: str, reason: str) -> None:
        super().__init__(f"query event {event}: {reason}")
        self.event, self.reason = event, reason


def _kept(name: str | None) -> bool:
    return name is not None and not name.startswith("_")


def check_spec(spec: QueryEventSpec, queries: QuerySet) -> Query:
    """The query ``spec`` raises its events from, after checking that the spec fits it: a
    known public query, no more arguments than the query has parameters, and (when ``params``
    is given) every event parameter bound by the query and every bound name declared."""
    def fail(reason: str) -> QueryEventError:
        return QueryEventError(spec.event, reason)

    if spec.query not in queries.queries:
        known = ", ".join(q for q in queries.queries if not queries[q].private) or "none"
        raise fail(f"unknown query '{spec.query}' (queries: {known})")
    query = queries[spec.query]
    if query.private:
        raise fail(f"query '{spec.query}' is private")
    args = query.params if spec.args is None else spec.args
    if len(args) > len(query.params):
        raise fail(f"query {spec.query} has {len(query.params)} parameter(s), "
                   f"{len(args)} given")
    if spec.params is not None:
        kept = list(dict.fromkeys(a for a in args if _kept(a)))
        missing = [n for n in spec.params if n not in kept]
        if missing:
            raise fail(f"parameter(s) {', '.join(missing)} not bound by {spec.query}(…)")
        extra = [a for a in kept if a not in spec.params]
        if extra:
            raise fail(f"{', '.join(extra)} bound by the query but not a declared parameter "
                       "(use _ to drop it)")
        if len(set(spec.params)) != len(spec.params):
            raise fail(f"parameters {list(spec.params)} name one parameter twice")
    return query


class _Compiled:
    """A spec resolved against its (checked) query: which positions feed which event
    parameter."""

    def __init__(self, spec: QueryEventSpec, query_params: tuple[str, ...],
                 query_types: tuple[str | None, ...], is_class: Callable[[str], bool]) -> None:
        args: Sequence[str | None] = query_params if spec.args is None else spec.args
        positions: dict[str, int] = {}
        self.equal: list[tuple[int, int]] = []
        types: dict[str, str | None] = {}
        for i, name in enumerate(args):
            if not _kept(name):
                continue
            if name in positions:
                self.equal.append((i, positions[name]))
            else:
                positions[name] = i
                types[name] = query_types[i]
        order = tuple(positions) if spec.params is None else tuple(spec.params)
        self.spec = spec
        self.found = spec.change == "found"
        self.pick = tuple(positions[n] for n in order)
        self.type = EventType(spec.event, tuple(
            ParamSpec(n, _event_param_type(types[n], is_class), types[n] or "") for n in order))

    def params_of(self, delta: QueryDelta) -> list[tuple[Any, ...]]:
        """The parameters of the events this spec raises for its query's ``delta``."""
        return [tuple(m[i] for i in self.pick)
                for m in (delta.appeared if self.found else delta.disappeared)
                if all(m[i] == m[j] for i, j in self.equal)]


def _event_param_type(t: str | None, is_class: Callable[[str], bool]) -> str:
    """Objects travel as their ids (strings); values keep their primitive type."""
    if t is None:
        return "any"
    return "str" if is_class(t) else t


def _spec(item: SpecLike) -> QueryEventSpec:
    if isinstance(item, QueryEventSpec):
        spec = item
    else:
        fields = list(item)
        if not 3 <= len(fields) <= 5:
            raise ValueError(f"a query event is (event, query, change[, args[, params]]), "
                             f"got {item!r}")
        event, query, change, *rest = fields
        args = None if not rest or rest[0] is None else tuple(rest[0])
        params = None if len(rest) < 2 or rest[1] is None else tuple(rest[1])
        spec = QueryEventSpec(event, query, change, args, params)
    change = _CHANGES.get(str(spec.change).lower())
    if change is None:
        raise ValueError(f"query event {spec.event}: change must be 'found' or 'lost', "
                         f"got {spec.change!r}")
    return QueryEventSpec(spec.event, spec.query, change, spec.args, spec.params)  # type: ignore[arg-type]


class QueryEventSource:
    """Turns a query engine's match changes into events, commit by commit.

    Events are buffered until :meth:`drain`; listeners registered with :meth:`subscribe` also
    receive each commit's events as a list (possibly empty).
    """

    def __init__(self, engine: QueryEngine, specs: Iterable[SpecLike]) -> None:
        self.engine = engine
        self._compiled: list[_Compiled] = []
        mm = engine.queries.metamodel
        for item in specs:
            spec = _spec(item)
            query = check_spec(spec, engine.queries)
            self._compiled.append(_Compiled(spec, query.params, query.param_types,
                                            lambda t: t in mm))
        names = [c.spec.event for c in self._compiled]
        types = {}
        for c in self._compiled:
            if c.type.name in types and types[c.type.name] != c.type:
                raise ValueError(f"query event {c.type.name} is declared twice with different "
                                 f"parameters")
            types[c.type.name] = c.type
        self.event_types: dict[str, EventType] = {n: types[n] for n in dict.fromkeys(names)}
        self._buffer: list[Event] = []
        self._counts: dict[str, int] = dict.fromkeys(self.event_types, 0)
        self._listeners: list[Callable[[list[Event]], None]] = []
        self._unsubscribe = engine.subscribe(self._on_update)

    def _on_update(self, update: MatchUpdate) -> None:
        events: list[Event] = []
        if update.deltas:  # most commits change no match
            deltas = {d.query: d for d in update.deltas}
            for c in self._compiled:
                delta = deltas.get(c.spec.query)
                if delta is None:
                    continue
                name = c.spec.event
                for params in c.params_of(delta):
                    self._counts[name] += 1
                    events.append(Event(name, params, update.ts, f"{name}#{self._counts[name]}"))
            self._buffer.extend(events)
        if self._listeners:
            for listener in list(self._listeners):
                listener(events)

    def drain(self) -> list[Event]:
        """The events produced since the last drain, in order."""
        out, self._buffer = self._buffer, []
        return out

    def subscribe(self, listener: Callable[[list[Event]], None]) -> Callable[[], None]:
        """Call ``listener(events)`` after every commit; returns a function that unsubscribes."""
        return add_listener(self._listeners, listener)

    def close(self) -> None:
        """Stop following the engine."""
        self._unsubscribe()
