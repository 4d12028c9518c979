"""What an engine owns that every path through it shares (docs/architecture.md): the clock,
the numbering (:class:`~cepflow.runtime.counters.Counters`), the pattern timers
(:class:`~cepflow.runtime.timers.TimerQueue`), the trace, the statistics, rule firing
(:class:`~cepflow.runtime.firing.RuleTable` and the actions), the events actions emit, and the
sink evaluation failures go to. The matchers, the column kernels, saved state and the Spark
runners reach these through the host, never through the engine's private fields.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Protocol

from cepflow.compiler.evaluator import Failure
from cepflow.compiler.program import Program
from cepflow.events.event import ComplexEvent, Event
from cepflow.language import ast
from cepflow.runtime.actions import Activation
from cepflow.runtime.counters import Counters
from cepflow.runtime.errors import EngineError
from cepflow.runtime.firing import RuleTable
from cepflow.runtime.timers import AFTER_EVENTS, BEFORE_EVENTS, TimerQueue


class HostedEngine(Protocol):
    """What the host needs of its engine (cepflow.runtime.engine.Engine): actions receive it,
    and the events they emit are stepped through it."""

    program: Program

    def step(self, event: Event, out: list[ComplexEvent]) -> None: ...

    def emit(self, event: Event) -> None: ...

Action = Callable[[Activation], Any]
_TYPE = attrgetter("type")


@dataclass
class EngineStats:
    events: int = 0
    complex_events: int = 0
    by_pattern: dict[str, int] = field(default_factory=dict)
    rule_firings: int = 0
    #: events a window statement could not take (put on the side channel)
    rejected: int = 0
    #: failed evaluations and rule actions (records in Engine.errors)
    errors: int = 0


class Trace:
    """Records what happened to every token, for ``explain`` and the run report (off unless
    asked for). An entry is a dict: ``kind`` (start, step, match, trap, dispose, clock),
    ``pattern``, ``token``, ``ts``, ``event`` (the input id), ``frm``/``to`` (states),
    ``reason``; a move's entry has ``threads``, per state of ``to`` the bindings and the
    windows' deadlines then (:meth:`Matcher.snapshot`), a match's ``match`` (its match id),
    ``events`` and ``bindings``. A subclass may keep less (cepflow.reports.record)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def add(self, **kw: Any) -> None:
        self.entries.append(kw)


class Host:
    """The shared state and services of one engine (see the module docstring)."""

    def __init__(self, engine: HostedEngine, program: Program, actions: Mapping[str, Action],
                 trace: Trace | None, max_cascade: int) -> None:
        #: the engine whose these are (actions receive it, emitted events go through it)
        self.engine = engine
        self.time = float("-inf")
        #: the input has ended (advance_to(inf)): no pattern clock starts any more
        self.stopped = False
        self.counters = Counters()
        self.timers = TimerQueue()
        self.trace = trace
        self.stats = EngineStats()
        self.rules = RuleTable(program.rules)
        self.actions = dict(actions)
        #: per trigger type, its rules in firing order with their registered action (or
        #: None): the one table both firing paths read, made once (actions are fixed when
        #: the engine is built)
        self._plans = {t: [(r, self.actions.get(r.action) if r.action else None) for r in rs]
                       for t, rs in self.rules.by_type.items()}
        #: whether some rule has a registered action (else a firing only counts)
        self.acting = any(fn is not None for rs in self._plans.values() for _, fn in rs)
        self.max_cascade = max_cascade
        #: events rule actions emitted, processed after the current one (breadth first)
        self.pending: deque[Event] = deque()
        #: where compiled expressions report failures while the engine runs
        self.failures: list[Failure] = []
        #: declared number of parameters per event type
        self.arity = {name: len(t.params) for name, t in program.schemas.items()}

    # -- timers ---------------------------------------------------------------------------
    def schedule(self, deadline: float, run: Any, token: int, zone: int, start: float
                 ) -> None:
        """A timer of pattern ``run`` (its matcher): Esper's fire before the events of their
        instant, VEPL's after them (timers.py)."""
        phase = BEFORE_EVENTS if run.pattern.timers_first else AFTER_EVENTS
        self.timers.schedule(deadline, phase, run.slot, token, zone, start)

    # -- rules ----------------------------------------------------------------------------
    def fire(self, event: Event | None, detected: Sequence[ComplexEvent]) -> None:
        """Fire the rules ``event`` and the complex events it caused trigger (firing.py)."""
        by_type = self.rules.by_type
        if not by_type:
            return
        if len(detected) == 1 and (event is None or event.type not in by_type):
            self.fire_one(detected[0])
            return
        firings = self.rules.firings(event, detected)
        self.stats.rule_firings += len(firings)
        plans = self._plans
        for rule, ev in firings:
            fn = next(f for r, f in plans[ev.type] if r is rule)
            if fn is not None:
                self.call_action(fn, rule, ev)

    def fire_one(self, ev: Event) -> None:
        """:meth:`fire` for one complex event when nothing else at its instant triggers a rule
        (the common case): its rules in the rule table's order."""
        todo = self._plans.get(ev.type)
        if todo:
            self.stats.rule_firings += len(todo)
            engine = self.engine
            for rule, fn in todo:
                if fn is not None:
                    try:  # (call_action, inlined: one firing per match is the common case)
                        fn(Activation(rule, ev, engine))
                    except Exception as err:
                        self._failed(rule, ev, err)

    def fire_each(self, detected: Sequence[ComplexEvent]) -> None:
        """:meth:`fire_one` of each of ``detected`` in order (a batch's complex events, each
        the only detection of its input event, when only complex events trigger rules:
        kernels.frame.fire_rules). Complex events
        of one type with one rule and a registered action (gesture's ``nextSlide``) call it in
        one loop, the firings counted one by one as fire_one counts them; a failing action
        is reported and the loop goes on with the next complex event."""
        plans = self._plans
        todo = plans.get(detected[0].type) if detected else None
        if (not todo or len(todo) != 1 or todo[0][1] is None
                or len(set(map(_TYPE, detected))) != 1):
            fire_one = self.fire_one
            for ev in detected:
                fire_one(ev)
            return
        (rule, fn), = todo
        engine, stats = self.engine, self.stats
        it = iter(detected)
        while True:
            try:
                for ev in it:
                    stats.rule_firings += 1
                    fn(Activation(rule, ev, engine))
            except Exception as err:
                self._failed(rule, ev, err)
                continue
            return

    def call_action(self, fn: Action, rule: ast.RuleDecl, event: Event) -> None:
        """Run a rule's action; an exception it raises becomes an evaluation failure (an
        error record, docs/semantics.md "Evaluation errors") and the next firing runs."""
        try:
            fn(Activation(rule, event, self.engine))
        except Exception as err:
            self._failed(rule, event, err)

    def _failed(self, rule: ast.RuleDecl, event: Event, err: Exception) -> None:
        """A rule action raised ``err``: an evaluation failure (see call_action)."""
        self.failures.append(Failure(None, f"rule {rule.name}", err, event,
                                     label=f"action {rule.action}", loc=rule.loc))

    # -- events actions emit ----------------------------------------------------------------
    def emit(self, event: Event) -> None:
        """An event a rule action publishes: processed after the current one."""
        self.pending.append(event)

    def drain(self, out: list[ComplexEvent]) -> None:
        """Process the events actions emitted, breadth first, with a runaway guard; an event
        older than the clock takes the clock's time."""
        pending = self.pending
        n = 0
        while pending:
            n += 1
            if n > self.max_cascade:
                pending.clear()
                raise EngineError(f"rule actions emitted more than {self.max_cascade} events "
                                  "in response to one input event (a feedback loop?)")
            nxt = pending.popleft()
            if nxt.ts < self.time:
                nxt.ts = self.time
            self.engine.step(nxt, out)
