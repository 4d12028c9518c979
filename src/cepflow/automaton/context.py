"""The event processing contexts (000 §4.4, and the two cepflow adds) as one enum whose members
say what each context does, so the runtime asks a context about a behaviour instead of
comparing its name (docs/semantics.md, "Event processing contexts"; docs/esper.md)."""

from __future__ import annotations

from enum import StrEnum


class Context(StrEnum):
    """How the events a pattern sees are shared among its partial matches."""

    #: each event goes to the oldest partial match that can take it, else starts one (§4.4)
    CHRONICLE = "chronicle"
    #: chronicle, and an event that contributes to no partial match disposes them all (noise)
    IMMEDIATE = "immediate"
    #: immediate with at most one partial match at a time
    STRICT = "strict"
    #: every partial match that can take an event takes it, every run is followed (Carlson
    #: and Lisper's context: completeness, 000 Prop. 2, is checked under it)
    UNRESTRICTED = "unrestricted"
    #: Esper's pattern semantics (compiler.esper): instances started by the start policy,
    #: events not consumed, operands side by side, timers before the events of their instant
    ESPER = "esper"

    @property
    def shares_events(self) -> bool:
        """An event goes to every partial match that can take it (not only the oldest)."""
        return self in (Context.UNRESTRICTED, Context.ESPER)

    @property
    def follows_every_run(self) -> bool:
        """A run may also skip an event it could take (all runs are followed)."""
        return self is Context.UNRESTRICTED

    @property
    def exact(self) -> bool:
        """A partial match is exactly the events it took: a run that cannot take an event
        the partial match takes ends (docs/semantics.md)."""
        return self in (Context.CHRONICLE, Context.IMMEDIATE, Context.STRICT)

    @property
    def disposes_on_noise(self) -> bool:
        """An event that contributes to no partial match and starts none disposes them all."""
        return self in (Context.IMMEDIATE, Context.STRICT)

    @property
    def one_at_a_time(self) -> bool:
        """At most one partial match (per partition) at a time."""
        return self is Context.STRICT

    @property
    def sees_every_event(self) -> bool:
        """The pattern is given every input event, not only those of the types it names."""
        return self not in (Context.CHRONICLE, Context.ESPER)

    @property
    def timers_first(self) -> bool:
        """Its timers fire before the events of their instant (docs/esper.md, "One
        instant"); otherwise a window's deadline is the last instant inside it."""
        return self is Context.ESPER

    @property
    def esper(self) -> bool:
        """Esper's semantics: start policies, inner every, every-distinct, clocks."""
        return self is Context.ESPER
