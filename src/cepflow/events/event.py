"""Event types and instances: the data every other stage passes around.

Atomic instances follow 000 Def. 3, ``e = (t, Ψ, τ)``: a type name, a tuple of parameter values
in the order the type declares them, and a timestamp. Complex instances (Def. 9) carry the
bindings of their pattern, the timestamp of the last contributing event and the ordered events
that made them, and re-enter the stream like any other event (higher-order patterns).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

#: Parameter types an event schema may declare. ``any`` accepts every JSON scalar.
PARAM_TYPES = ("int", "float", "str", "bool", "any")

#: VEPL/Java type names accepted as aliases of ours.
#: Names of the primitive types, lower-case, in event schemas and metamodels alike (Java's and
#: Ecore's spellings included, since seeds and models use them).
PRIMITIVE_ALIASES = {
    "int": "int", "integer": "int", "long": "int", "short": "int", "eint": "int",
    "elong": "int", "eshort": "int",
    "float": "float", "double": "float", "number": "float", "real": "float",
    "edouble": "float", "efloat": "float",
    "str": "str", "string": "str", "estring": "str",
    "bool": "bool", "boolean": "bool", "eboolean": "bool",
}

TYPE_ALIASES = {**PRIMITIVE_ALIASES, "any": "any", "object": "any", "eobject": "any"}

#: the floats JSON has no number for (by ``repr``), as cepflow names them in reasons and writes
#: them in outputs (docs/formats.md, "NaN and Infinity")
NONFINITE_TEXT = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def canonical_type(name: str) -> str:
    """Map a declared parameter type (``Integer``, ``String``, ``Body`` …) to one of PARAM_TYPES.

    Model element types (``Body``, ``HostInstance``) are identifiers of model objects; they
    are kept as ``any`` because their values are object ids of whatever scalar type.
    """
    return TYPE_ALIASES.get(name.lower(), "any")


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """One typed parameter of an event type."""

    name: str
    type: str = "any"
    declared_type: str = ""

    def accepts(self, value: Any) -> bool:
        """True if ``value`` is a valid value of this parameter (None is always allowed)."""
        if value is None or self.type == "any":
            return True
        if self.type == "bool":
            return isinstance(value, bool)
        if self.type == "int":
            return isinstance(value, int) and not isinstance(value, bool)
        if self.type == "float":
            return isinstance(value, int | float) and not isinstance(value, bool)
        return isinstance(value, str)


@dataclass(frozen=True)
class EventType:
    """A named event type with an ordered list of typed parameters."""

    name: str
    params: tuple[ParamSpec, ...] = ()

    @cached_property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def index_of(self, name: str) -> int:
        for i, p in enumerate(self.params):
            if p.name == name:
                return i
        raise KeyError(name)


class Event:
    """An atomic event instance ``(type, params, ts)`` with an optional id.

    ``params`` is a tuple in the order of the event type's declaration. ``seq`` is the position
    in the merged stream, assigned by the engine; it breaks timestamp ties deterministically.
    """

    __slots__ = ("id", "params", "seq", "ts", "type")

    def __init__(
        self,
        type: str,
        params: tuple[Any, ...] = (),
        ts: float = 0,
        id: Any = None,
        seq: int = -1,
    ) -> None:
        self.type = type
        self.params = params
        self.ts = ts
        self.id = id
        self.seq = seq

    @property
    def ref(self) -> Any:
        """The id that names this event in outputs: its own id, else its stream position."""
        return self.id if self.id is not None else self.seq

    def leaves(self) -> Iterator[Event]:
        """The input events this event stands for (itself, for an atomic event)."""
        yield self

    def to_dict(self, schema: EventType | None = None) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type, "ts": self.ts}
        if self.id is not None:
            d["id"] = self.id
        if schema is not None and len(schema.params) == len(self.params):
            d.update(zip(schema.param_names, self.params, strict=True))
        else:
            d["params"] = list(self.params)
        return d

    def __repr__(self) -> str:
        ident = f"#{self.id}" if self.id is not None else (f"@{self.seq}" if self.seq >= 0 else "")
        return f"{self.type}{ident}{self.params!r}@{self.ts}"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Event)
            and not isinstance(other, ComplexEvent)
            and self.type == other.type
            and self.params == other.params
            and self.ts == other.ts
            and self.id == other.id
        )

    def __hash__(self) -> int:
        return hash((self.type, self.params, self.ts, self.id))


class ComplexEvent(Event):
    """A detected match of a complex event pattern, published back into the stream.

    ``params`` holds the values of the pattern's formal parameters (so higher-order patterns
    unify on them like on atomic events); ``bindings`` all variables bound during matching;
    ``parts`` the directly contributing events in match order (atomic or complex).
    """

    __slots__ = ("bindings", "match_id", "parts")

    def __init__(
        self,
        type: str,
        params: tuple[Any, ...],
        ts: float,
        bindings: Mapping[str, Any],
        parts: Sequence[Event],
        match_id: int = -1,
    ) -> None:
        self.type = type
        self.params = params
        self.ts = ts
        self.id = None
        self.seq = -1
        # the engine hands over a dict it no longer uses; copy anything else
        self.bindings = bindings if bindings.__class__ is dict else dict(bindings)
        self.parts = tuple(parts)
        self.match_id = match_id

    def leaves(self) -> Iterator[Event]:
        for p in self.parts:
            yield from p.leaves()

    @property
    def event_refs(self) -> list[Any]:
        """Ids of the contributing *input* events, in match order (:meth:`leaves`' refs,
        without a generator per level: every match written pays for this)."""
        out: list[Any] = []
        for p in self.parts:
            if isinstance(p, ComplexEvent):
                out += p.event_refs
            else:
                out.append(p.id if p.id is not None else p.seq)
        return out

    def to_dict(self, schema: EventType | None = None) -> dict[str, Any]:
        """The match as the record every engine writes (docs/formats.md): ``ts`` integer
        milliseconds (:func:`output_ts`), ``params`` the bindings, ``events`` the ids of the
        contributing input events as strings."""
        return {
            "pattern": self.type,
            "ts": output_ts(self.ts),
            "params": self.bindings_for_output(),
            "events": [str(r) for r in self.event_refs],
        }

    def output_columns(self) -> tuple[Sequence[str], tuple[Any, ...]] | None:
        """``(names, values)`` when the bindings are ``dict(zip(names, values))`` and not
        made yet (a kernel's lazy match, runtime.rows.LazyBindings): the match writer then
        encodes such matches column by column (outputs.records.params_texts); None here."""
        return None

    def bindings_for_output(self) -> dict[str, Any]:
        """The bindings without internal names (those starting with an underscore)."""
        b = self.bindings
        for k in b:
            if k.startswith("_"):
                return {k: v for k, v in b.items() if not k.startswith("_")}
        return dict(b)

    def __repr__(self) -> str:
        return f"{self.type}{self.bindings_for_output()}@{self.ts}<{self.event_refs}>"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ComplexEvent)
            and self.type == other.type
            and self.ts == other.ts
            and self.bindings == other.bindings
            and self.event_refs == other.event_refs
        )

    def __hash__(self) -> int:
        return hash((self.type, self.ts, tuple(self.event_refs)))


def output_ts(ts: float) -> int:
    """A match's time as written: integer milliseconds, a fraction of a millisecond rounded up
    (a match is never stamped before the instant it was complete)."""
    return ts if isinstance(ts, int) else math.ceil(ts)


@dataclass(slots=True)
class Rejected:
    """An input record that was not turned into an event, with where and why (side channel)."""

    source: str
    location: str
    reason: str
    record: Any = None
    field: str | None = None

    def __str__(self) -> str:
        where = f"{self.source}:{self.location}"
        fld = f" (field {self.field!r})" if self.field else ""
        return f"{where}: {self.reason}{fld}"


@dataclass(slots=True)
class SideChannel:
    """Collects rejected and late records, and the events an expression or rule action failed
    on (``errors``, docs/semantics.md "Evaluation errors"), so that nothing is dropped
    silently."""

    malformed: list[Rejected] = field(default_factory=list)
    late: list[Rejected] = field(default_factory=list)
    errors: list[Rejected] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.malformed) + len(self.late) + len(self.errors)

    def all(self) -> list[Rejected]:
        return [*self.malformed, *self.late, *self.errors]

    def items(self) -> list[tuple[str, Rejected]]:
        """Every record with its kind (``malformed``, ``late``, ``error``), as the side file
        writes them."""
        return [*(("malformed", r) for r in self.malformed), *(("late", r) for r in self.late),
                *(("error", r) for r in self.errors)]
