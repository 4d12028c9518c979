"""What a design space exploration is configured with (000 §6.3, after VIATRA-DSE).

* :class:`HardObjective` — a query that must have **no match** (``ModelQueryType.NO_MATCH``):
  every solution satisfies every hard objective.
* :class:`SoftObjective` — a cost that orders solutions (lower is better): ``weight`` times the
  number of matches of ``query``, or ``weight`` times ``score(model)``.
* :class:`TransformationRule` — a precondition query (the left-hand side) plus an action: a
  registered callable (by name) or, from Python, a callable; it is applied once per match of
  the precondition and receives a :class:`RuleApplication`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cepflow.models.live_model import Model


class DSEError(Exception):
    """A bad exploration set-up (unknown query, unregistered action) or a stale fix."""


@dataclass(frozen=True)
class HardObjective:
    """Satisfied when ``query`` has no match."""

    query: str


@dataclass(frozen=True)
class SoftObjective:
    """A cost: ``weight * len(matches of query)`` or ``weight * score(model)`` (exactly one)."""

    name: str
    query: str | None = None
    score: Callable[[Model], float] | None = None
    weight: float = 1.0

    def __post_init__(self) -> None:
        if (self.query is None) == (self.score is None):
            raise DSEError(f"soft objective '{self.name}': give a query or a score function")


@dataclass(frozen=True)
class RuleApplication:
    """What a transformation rule's action receives: the precondition match and the model."""

    rule: TransformationRule
    match: tuple[Any, ...]
    bindings: dict[str, Any]
    model: Model


@dataclass(frozen=True)
class TransformationRule:
    """``precondition`` query + ``action`` (registered name or callable)."""

    name: str
    precondition: str
    action: str | Callable[[RuleApplication], Any]
