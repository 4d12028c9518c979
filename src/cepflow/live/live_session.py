"""A live session: the whole loop of 000 Fig. 17 (and Fig. 2) in one object.

    model commit ─▶ QueryEngine deltas ─▶ query events ─▶ CEP Engine ─▶ complex events
         ▲                     │                                              │
         └──── rule actions ◀──┴────────────── agenda (rules.Agenda) ◀───────┘

``with session.transaction(ts=...)`` groups model changes into one commit; when the outermost
transaction ends, everything it causes runs to completion before the ``with`` statement
returns: the query engine's deltas become the query events declared in the program
(``queryEvent`` declarations — no second list to write), the CEP engine consumes them, and the
agenda fires the rules triggered by events and by query match changes. Each firing runs its
action inside a model transaction of its own; the commit it makes feeds back through the
queries, and events it emits enter the stream, before the next activation is chosen.

Decisions (docs/live.md):

* **One rule mechanism.** The program's VEPL ``rule`` declarations are handed to the agenda;
  the session's CEP engine runs the program with its rules removed, so nothing fires twice.
  The agenda fires event rules in the engine's own order (priority, then detection order,
  then declaration order); it differs only in that all activations of one commit are collected
  before any fires, so priority also orders rules triggered by different events of a commit.
* **Time.** Query events carry their commit's timestamp. The session's time is the later of
  the model's last commit and the engine's clock; a transaction without ``ts`` takes it; rule
  firings commit at it; events emitted by actions are stamped no earlier than it. A commit
  without query events still advances the engine's clock, so windows expire.
* **Loop guard.** At most ``max_cascade`` rule firings per settle (one top-level transaction or
  publish). Beyond it :class:`~cepflow.rules.RuleCascadeError` names the causal chain of rules;
  the remaining activations are dropped; changes committed before stay (they were committed).
* **Errors in actions** roll back that firing's transaction. With ``on_error="fail"`` (the
  default) they propagate (with a note naming the rule and its chain) out of the ``with``
  statement; the user's own commit stands; the activations still waiting fire at the next
  settle. With ``on_error="skip"`` the error becomes a record in :attr:`LiveSession.errors`
  (kind ``error``, as the CEP engine's, docs/semantics.md "Evaluation errors") and the next
  activation fires. The session's CEP engine runs with the same ``on_error``.
* Changes made directly on ``session.model`` (outside ``session.transaction``) are seen by the
  queries at once and processed by the CEP engine and the agenda at the next settle
  (the next session transaction, :meth:`LiveSession.publish` or :meth:`LiveSession.settle`).
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from cepflow.compiler.evaluator import Failure
from cepflow.compiler.program import Program
from cepflow.events.event import ComplexEvent, Event, Rejected
from cepflow.language import ast
from cepflow.models.changes import Commit, add_listener
from cepflow.models.live_model import Model
from cepflow.queries.events import QueryEventError, QueryEventSource, QueryEventSpec, check_spec
from cepflow.queries.incremental import MatchUpdate, QueryEngine, match_sort_key
from cepflow.queries.ir import QuerySet
from cepflow.rules.agenda import Agenda
from cepflow.rules.rule import (
    Rule,
    RuleActivation,
    RuleCascadeError,
    RuleError,
    rules_from_program,
)
from cepflow.runtime.actions import registered
from cepflow.runtime.engine import Engine


class LiveSessionError(Exception):
    """A session that cannot be wired (query events vs. queries) or is misused."""


@dataclass
class LiveStats:
    """Counters of one session. ``commits``/``changes`` count non-empty commits (the user's and
    the rules') and their elementary changes; ``events_published`` counts events published by
    the user or emitted by actions."""

    commits: int = 0
    changes: int = 0
    query_events: int = 0
    complex_events: int = 0
    rule_firings: int = 0
    events_published: int = 0

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


def query_event_specs(program: Program, queries: QuerySet) -> list[QueryEventSpec]:
    """The program's ``queryEvent`` declarations as query event specs, checked against the
    queries (errors name the declaration's ``file:line:col``)."""
    specs = []
    for decl in program.query_events.values():
        names = tuple(p.name for p in decl.params)
        # `as Q` without arguments maps the declared parameters positionally
        args = decl.query_args if decl.query_args is not None else names
        spec = QueryEventSpec(decl.name, decl.query, decl.change, tuple(args), names)
        try:
            check_spec(spec, queries)
        except QueryEventError as e:
            raise LiveSessionError(f"{_where(program, decl)}: queryEvent {decl.name}: "
                                   f"{e.reason}") from None
        specs.append(spec)
    return specs


def _where(program: Program, decl: ast.QueryEventDecl) -> str:
    line, col = decl.loc or (1, 1)
    return f"{program.module.source}:{line}:{col}"


def _empty_program() -> Program:
    return Program({}, [], [], ast.Module(()))


class LiveSession:
    """Model + incremental queries + query events + CEP engine + reactive rules, wired."""

    def __init__(self, model: Model, queries: QuerySet, program: Program | None = None, *,
                 actions: Mapping[str, Callable[..., Any]] | None = None,
                 max_cascade: int = 1000, rules: Iterable[Rule] = (),
                 on_error: str = "fail") -> None:
        if model.in_transaction:
            raise LiveSessionError("create the session outside a transaction")
        if max_cascade < 1:
            raise LiveSessionError(f"max_cascade must be at least 1, got {max_cascade}")
        program = program if program is not None else _empty_program()
        specs = query_event_specs(program, queries)
        self.model = model
        self.program = program
        self.max_cascade = max_cascade
        self.actions = registered() if actions is None else dict(actions)
        self.queries = QueryEngine(model, queries)
        self.query_events = QueryEventSource(self.queries, specs)
        # the agenda owns the rules: the engine runs the patterns only
        self.engine = Engine(dataclasses.replace(program, rules=[]), actions={},
                             strict_actions=False, on_error=on_error)
        self.on_error = on_error
        #: error records (failed expressions and, with on_error="skip", failed actions)
        self.errors: list[Rejected] = self.engine.errors
        self.agenda = Agenda()
        self.stats = LiveStats()
        self._pending: deque[tuple[Any, ...]] = deque()
        self._current: RuleActivation | None = None
        self._settling = False
        self._closed = False
        self._callbacks: list[Callable[[ComplexEvent], Any]] = []
        self._class_positions: dict[str, tuple[int, ...]] = {}
        for rule in rules_from_program(program):
            self.add_rule(rule)
        for rule in rules:
            self.add_rule(rule)
        self._unsubscribe = model.subscribe(self._on_commit)

    # ------------------------------------------------------------ configuration
    def add_rule(self, rule: Rule) -> None:
        """Add a rule. A query rule sees the query's current matches as appeared (they fire at
        the next settle)."""
        if isinstance(rule.action, str) and rule.action not in self.actions:
            known = ", ".join(sorted(self.actions)) or "none registered"
            raise RuleError(f"rule '{rule.name}': action '{rule.action}' is not registered "
                            f"(registered: {known})")
        for t in rule.events:
            if t not in self.engine.program.schemas:
                raise RuleError(f"rule '{rule.name}': unknown event type '{t}'")
        if rule.query is not None:
            qs = self.queries.queries
            if rule.query not in qs.queries or qs[rule.query].private:
                public = ", ".join(q for q in qs.queries if not qs[q].private)
                raise RuleError(f"rule '{rule.name}': unknown or private query '{rule.query}' "
                                f"(queries: {public})")
        self.agenda.add(rule)
        if rule.query is not None:
            q = qs[rule.query]
            self._class_positions.setdefault(rule.query, tuple(
                i for i, t in enumerate(q.param_types) if t is not None and t in qs.metamodel))
            # other rules on the query already track these matches: only this one reacts
            self.agenda.on_query_change(rule.query, self.queries.sorted_matches(rule.query), (),
                                        (), self)

    def on_complex_event(self, callback: Callable[[ComplexEvent], Any]) -> Callable[[], None]:
        """Call ``callback(event)`` for every complex event, in detection order (before the
        rules it triggers fire). Returns a function that unsubscribes."""
        return add_listener(self._callbacks, callback)

    # ------------------------------------------------------------ driving
    @property
    def time(self) -> float:
        """The session's clock: the later of the last commit and the engine's clock."""
        return max(self.model.ts, self.engine.time)

    def transaction(self, ts: float | None = None) -> _SessionTransaction:
        """Group model changes into one commit; on exit of the outermost transaction run all
        it causes (queries, events, CEP, rules) to completion."""
        self._check_open()
        outer = not self.model.in_transaction
        if outer:
            if ts is None:
                ts = self.time
            elif ts < self.engine.time:
                raise LiveSessionError(f"transaction timestamp {ts} is older than the session's "
                                       f"clock {self.engine.time}")
        return _SessionTransaction(self, self.model.transaction(ts=ts), outer)

    def publish(self, event: Event) -> None:
        """Publish an external (atomic) event into the stream and run what it causes."""
        self._check_open()
        if self.model.in_transaction:
            raise LiveSessionError("publish events outside a transaction (actions use emit)")
        if event.ts < self.engine.time:
            raise LiveSessionError(f"event {event!r} is older than the session's clock "
                                   f"{self.engine.time}")
        self._pending.append(("event", event, None))
        self.settle()

    def emit(self, event: Event, cause: RuleActivation | None = None) -> None:
        """An event from a rule action: processed after the action, at the session's time."""
        if event.ts < self.time:
            event.ts = self.time
        self._pending.append(("event", event, cause if cause is not None else self._current))

    def settle(self) -> None:
        """Process pending commits and events, then fire rules until the agenda is empty."""
        if self._settling or self.model.in_transaction:
            return  # the settle in progress (or the enclosing transaction's) will do it
        self._settling = True
        try:
            fired = 0
            while True:
                self._absorb()
                act = self.agenda.pop()
                if act is None:
                    break
                fired += 1
                if fired > self.max_cascade:
                    self.agenda.clear()
                    self._pending.clear()
                    chain = act.chain()
                    shown = " -> ".join(chain[-12:])
                    raise RuleCascadeError(
                        f"more than {self.max_cascade} rule firings caused by one commit "
                        f"(max_cascade; a feedback loop?); the last chain of "
                        f"{len(chain)} firing(s): {'… -> ' if len(chain) > 12 else ''}{shown}",
                        chain)
                self._fire(act)
        finally:
            self._settling = False

    def finish(self, close_windows: bool = False) -> LiveStats:
        """Run what is pending; with ``close_windows`` time runs out first (pending timers of
        the CEP engine fire, and the rules they trigger run). Then stop following the model."""
        if self._closed:
            return self.stats
        self.settle()
        if close_windows:
            self._detected(self.engine.finish(close_windows=True), None)
            self.settle()
        self._unsubscribe()
        self.query_events.close()
        self.queries.close()
        self._closed = True
        return self.stats

    # ------------------------------------------------------------ internals
    def _check_open(self) -> None:
        if self._closed:
            raise LiveSessionError("the session is finished")

    def _on_commit(self, commit: Commit) -> None:
        update = self.queries.last_update
        if update is None or update.commit != commit.number:  # pragma: no cover - defensive
            raise LiveSessionError(f"commit {commit.number} reached the session before the "
                                   "query engine")
        self._pending.append(("commit", commit, update, self.query_events.drain(),
                              self._current))

    def _absorb(self) -> None:
        pending = self._pending
        while pending:
            item = pending.popleft()
            if item[0] == "event":
                _, event, cause = item
                self.stats.events_published += 1
                self._feed(event, cause)
            else:
                _, commit, update, events, cause = item
                self._commit(commit, update, events, cause)

    def _commit(self, commit: Commit, update: MatchUpdate, events: list[Event],
                cause: RuleActivation | None) -> None:
        if commit.changes:
            self.stats.commits += 1
            self.stats.changes += len(commit.changes)
        agenda = self.agenda
        reacting = agenda.queries  # a copy: read once per commit
        for q in self.queries.queries.queries if reacting else ():
            if q not in reacting:
                continue
            delta = update[q]
            updated = self._updated(q, commit, delta.appeared) if agenda.needs_updates(q) else ()
            if delta.appeared or delta.disappeared or updated:
                agenda.on_query_change(q, delta.appeared, delta.disappeared, updated, self, cause)
        self.stats.query_events += len(events)
        for e in events:
            self._feed(e, cause)
        if not events and commit.ts > self.engine.time:
            self._detected(self.engine.advance_to(commit.ts), cause)

    def _updated(self, query: str, commit: Commit,
                 appeared: tuple[tuple[Any, ...], ...]) -> list[tuple[Any, ...]]:
        """Matches present before and after the commit binding an object it changed."""
        changed = {ch.obj for ch in commit.changes if ch.kind in ("set", "add", "remove")}
        positions = self._class_positions.get(query, ())
        if not changed or not positions:
            return []
        new = set(appeared)
        return sorted((m for m in self.queries.matches(query)
                       if m not in new and any(m[i] in changed for i in positions)),
                      key=match_sort_key)

    def _feed(self, event: Event, cause: RuleActivation | None) -> None:
        out = self.engine.process(event)
        if self.agenda.triggers(event.type):
            self.agenda.on_event(event, self, cause)
        self._detected(out, cause)

    def _detected(self, out: list[ComplexEvent], cause: RuleActivation | None) -> None:
        for ce in out:
            self.stats.complex_events += 1
            for cb in list(self._callbacks):
                cb(ce)
            if self.agenda.triggers(ce.type):
                self.agenda.on_event(ce, self, cause)

    def _fire(self, act: RuleActivation) -> None:
        action = act.rule.action
        fn = action if callable(action) else self.actions[action]
        self._current = act
        try:
            with self.model.transaction(ts=self.time):
                fn(act)
        except Exception as e:
            if self.on_error == "skip":  # (its transaction was rolled back)
                self._failed(act, e)
                self.stats.rule_firings += 1
                return
            e.add_note(f"while firing rule '{act.rule.name}' ({act.describe()}); chain: "
                       f"{' -> '.join(act.chain())}")
            raise
        finally:
            self._current = None
        self.stats.rule_firings += 1

    def _failed(self, act: RuleActivation, error: Exception) -> None:
        """A failed firing as an error record (``on_error="skip"``)."""
        name = act.rule.action if isinstance(act.rule.action, str) else getattr(
            act.rule.action, "__name__", "action")
        loc = act.rule.decl.loc if act.rule.decl is not None else None
        f = Failure(None, f"rule {act.rule.name}", error, act.event,
                    label=f"action {name}", loc=loc)
        self.errors.append(Rejected(f.origin or "rule", act.describe(),
                                    f.describe(self.program.module.source, origin=False),
                                    act.event if act.event is not None else act.match,
                                    f.text))
        self.engine.stats.errors += 1


class _SessionTransaction:
    """``with session.transaction(ts)``: the model's transaction, then (outermost, if the
    block and the commit succeeded) the settle. A plain context manager: one per frame."""

    __slots__ = ("inner", "outer", "session")

    def __init__(self, session: LiveSession, inner: Any, outer: bool) -> None:
        self.session = session
        self.inner = inner
        self.outer = outer

    def __enter__(self) -> Model:
        return self.inner.__enter__()  # type: ignore[no-any-return]

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.inner.__exit__(kind, error, tb)
        if kind is None and self.outer:
            self.session.settle()
