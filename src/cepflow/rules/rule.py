"""Reactive rules (VIATRA EVM style): what triggers a rule and what its action receives.

A :class:`Rule` is triggered either by **events** of the stream (a complex event match, or an
atomic/query event) or by **match changes of a graph query** — a match ``appeared``,
``disappeared`` or was ``updated`` (still present, and an object it binds was changed by the
commit). Its action is a Python callable registered by name (``cepflow.runtime.actions``) or
given directly from Python; nothing read from a file is ever executed. The action receives a
:class:`RuleActivation`: the bindings, the model, the triggering event or match, and ``emit``.

VEPL ``rule R on P, Q priority n action name`` declarations become event rules
(:func:`rules_from_program`); query rules are declared in Python (:func:`query_rule`) — or in
VEPL, by triggering a rule on a ``queryEvent`` (found = appeared, lost = disappeared).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cepflow.events.event import Event
from cepflow.language import ast
from cepflow.runtime.actions import event_bindings

if TYPE_CHECKING:
    from cepflow.compiler.program import Program
    from cepflow.models.live_model import Model

#: the match changes a query rule may react to
QUERY_CHANGES = ("appeared", "disappeared", "updated")

ActionFn = Callable[["RuleActivation"], Any]


class RuleError(Exception):
    """A rule that cannot be set up: unknown trigger, unregistered action, bad change kind."""


class RuleCascadeError(RuleError):
    """Rule firings kept causing further firings beyond the session's ``max_cascade``.

    ``chain`` names the rules of the last causal chain, oldest first.
    """

    def __init__(self, message: str, chain: list[str]) -> None:
        super().__init__(message)
        self.chain = chain


@dataclass(frozen=True)
class Rule:
    """A reactive rule. Exactly one of ``events`` (event types) and ``query`` is given.

    ``on`` lists the match changes a query rule reacts to (a subset of
    :data:`QUERY_CHANGES`); ``priority``: higher fires first; ``decl`` is the VEPL
    declaration a rule came from, if any.
    """

    name: str
    action: str | ActionFn
    events: tuple[str, ...] = ()
    query: str | None = None
    on: tuple[str, ...] = ()
    priority: int = 0
    decl: ast.RuleDecl | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if bool(self.events) == (self.query is not None):
            raise RuleError(f"rule '{self.name}': give either event types or a query")
        if self.query is not None:
            bad = [c for c in self.on if c not in QUERY_CHANGES]
            if bad or not self.on:
                raise RuleError(f"rule '{self.name}': 'on' must name some of "
                                f"{', '.join(QUERY_CHANGES)}, got {list(self.on)}")


def event_rule(name: str, events: str | Iterable[str], action: str | ActionFn, *,
               priority: int = 0) -> Rule:
    """A rule fired once per event (complex or atomic) of the given type(s)."""
    types = (events,) if isinstance(events, str) else tuple(events)
    return Rule(name, action, events=types, priority=priority)


def query_rule(name: str, query: str, action: str | ActionFn, *,
               on: str | Iterable[str] = ("appeared",), priority: int = 0) -> Rule:
    """A rule fired when matches of ``query`` appear / disappear / are updated."""
    changes = (on,) if isinstance(on, str) else tuple(on)
    return Rule(name, action, query=query, on=changes, priority=priority)


def rules_from_program(program: Program) -> list[Rule]:
    """The VEPL ``rule`` declarations of a compiled program, as event rules (same order)."""
    out = []
    for decl in program.rules:
        if decl.action is None:
            # an Xbase block (kept as text, never executed): the rule cannot do anything
            raise RuleError(f"rule '{decl.name}' has no registered action (its action block is "
                            "not executed; name a registered Python action)")
        out.append(Rule(decl.name, decl.action, events=tuple(r.name for r in decl.on),
                        priority=decl.priority, decl=decl))
    return out


class RuleActivation:
    """One activation of a rule: what the action receives.

    ``kind`` is ``"event"`` or a query change; ``event`` the triggering event (event rules),
    ``match`` the query match (query rules); ``bindings`` names their values; ``model``,
    ``engine`` and ``session`` give access to the live session; ``emit`` publishes an event.
    ``state`` follows the life cycle documented in :mod:`cepflow.rules.agenda`. The
    attributes ``rule``, ``event``, ``engine``, ``bindings`` and ``emit`` are those of
    :class:`cepflow.runtime.actions.Activation`, so one action serves both.
    """

    __slots__ = ("_bindings", "cause", "event", "kind", "match", "rule", "seq", "session",
                 "state")

    def __init__(self, rule: Rule, kind: str, session: Any, *, event: Event | None = None,
                 match: tuple[Any, ...] | None = None, cause: RuleActivation | None = None
                 ) -> None:
        self.rule = rule
        self.kind = kind
        self.session = session
        self.event = event
        self.match = match
        self.cause = cause
        self.state = "inactive"
        self.seq = -1
        self._bindings: dict[str, Any] | None = None

    @property
    def bindings(self) -> dict[str, Any]:
        """Parameter name → value: the complex event's bindings, the atomic event's
        parameters by name, or the query match by the query's parameter names."""
        if self._bindings is None:
            self._bindings = self._compute_bindings()
        return self._bindings

    def _compute_bindings(self) -> dict[str, Any]:
        if self.match is not None:
            params = self.session.queries.queries[self.rule.query].params
            return dict(zip(params, self.match, strict=True))
        if self.event is None:
            return {}
        return event_bindings(self.event, self.session.engine.program.schemas)

    @property
    def model(self) -> Model:
        return self.session.model

    @property
    def engine(self) -> Any:
        return self.session.engine

    def emit(self, event: Event) -> None:
        """Publish ``event`` into the stream (at the session's current time, after this
        action returns and before the next activation fires)."""
        self.session.emit(event, cause=self)

    def chain(self) -> list[str]:
        """The names of the rules whose firings led to this activation, oldest first."""
        names = []
        act: RuleActivation | None = self
        while act is not None:
            names.append(act.rule.name)
            act = act.cause
        return names[::-1]

    def describe(self) -> str:
        what = (f"{self.rule.query}{self.match!r} {self.kind}" if self.match is not None
                else repr(self.event))
        return f"{self.rule.name} on {what}"

    def __repr__(self) -> str:
        return f"<RuleActivation {self.describe()} [{self.state}]>"
