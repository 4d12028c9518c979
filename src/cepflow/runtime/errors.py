"""What the engine raises: misuse (:class:`EngineError`) and the runs it stops as asked
(:class:`RunStopped` and its kinds). One module of their own, so every part of the runtime —
engine, matcher, kernels, saved state — raises them without importing the engine."""

from __future__ import annotations

from cepflow.events.event import ComplexEvent, Rejected


class EngineError(Exception):
    """Misuse of the engine: out-of-order input, a malformed event, a runaway rule cascade."""


class RunStopped(EngineError):
    """The engine stopped the run as it was asked to (:class:`EvaluationFailed`,
    :class:`PartialMatchLimit`), after the event that caused it: ``complex_events`` are what
    the stopped call detected and did not deliver (:meth:`Engine.run` yields them before
    raising, leaving none here)."""

    def __init__(self, message: str, complex_events: list[ComplexEvent]) -> None:
        super().__init__(message)
        self.complex_events = complex_events


class EvaluationFailed(RunStopped):
    """``on_error="fail"``: an expression or rule action failed; ``records`` are the error
    records of the event that failed."""

    def __init__(self, message: str, records: list[Rejected],
                 complex_events: list[ComplexEvent]) -> None:
        super().__init__(message, complex_events)
        self.records = records


class PartialMatchLimit(RunStopped):
    """More partial matches than ``max_partial_matches`` (docs/semantics.md, "Resources:
    partial matches"); ``held`` is the number per pattern at that event."""

    def __init__(self, message: str, held: dict[str, int],
                 complex_events: list[ComplexEvent]) -> None:
        super().__init__(message, complex_events)
        self.held = held
