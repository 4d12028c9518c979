"""The agenda: rule activations, their life cycle, and the order in which they fire.

**Life cycle** (after VIATRA EVM's default CRUD life cycle). An *event activation* — one per
(rule, triggering event) — is ``scheduled`` when its event is seen and ``fired`` (then dropped)
when its action has run. A *query activation* — one per (rule, match) — lives while the match
does::

    inactive --appears--> appeared --fire--> fired --an object of the match changes--> updated
                             |                 |   <-------------fire---------------------'
                             |                 '--disappears--> disappeared --fire--> inactive
                             '--disappears before firing--> inactive  (never fired)

A phase the rule does not react to is passed straight through: a rule ``on=("disappeared",)``
goes from ``inactive`` directly to the resting ``fired`` state when its match appears, and a
rule without ``disappeared`` goes from ``fired`` directly to ``inactive``. A ``disappeared``
activation whose match reappears before it fires returns to ``fired`` (the rule never saw the
match go). ``updated`` is not re-enabled while an activation is already waiting to fire.

**Enabled** activations are those ``scheduled``, ``appeared``, ``updated`` or ``disappeared``
(the *conflict set*). **Conflict resolution** — :meth:`Agenda.pop` returns the enabled
activation with the highest rule priority; among equal priorities the one enabled first
(FIFO by a global sequence number). Activations are enabled in a deterministic order: within a
commit, first the query changes (queries in declaration order; per query its disappeared, then
appeared, then updated matches, each sorted; per match, the rules in declaration order), then
the events the commit produced in stream order (complex events in detection order right after
the event that completed them; per event, the rules in declaration order). For event rules this
is exactly the order of the CEP engine's own rule firing (priority, then detection order, then
declaration order).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any

from cepflow.events.event import Event
from cepflow.rules.rule import Rule, RuleActivation, RuleError

#: states in which an activation waits in the conflict set
ENABLED = frozenset({"scheduled", "appeared", "updated", "disappeared"})


class Agenda:
    """Holds the rules, tracks their activations and hands them out in firing order."""

    def __init__(self, rules: Iterable[Rule] = ()) -> None:
        self.rules: list[Rule] = []
        self._by_event: dict[str, list[Rule]] = {}
        self._by_query: dict[str, list[Rule]] = {}
        self._activations: dict[tuple[str, tuple[Any, ...]], RuleActivation] = {}
        self._heap: list[tuple[int, int, RuleActivation]] = []
        self._seq = 0
        for rule in rules:
            self.add(rule)

    # ------------------------------------------------------------ rules
    def add(self, rule: Rule) -> None:
        """Add a rule (names must be unique)."""
        if any(r.name == rule.name for r in self.rules):
            raise RuleError(f"a rule named '{rule.name}' already exists")
        self.rules.append(rule)
        for t in rule.events:
            self._by_event.setdefault(t, []).append(rule)
        if rule.query is not None:
            self._by_query.setdefault(rule.query, []).append(rule)

    def triggers(self, event_type: str) -> bool:
        """Whether some rule is triggered by events of ``event_type``."""
        return event_type in self._by_event

    @property
    def queries(self) -> set[str]:
        """The queries some rule reacts to."""
        return set(self._by_query)

    def needs_updates(self, query: str) -> bool:
        """Whether some rule on ``query`` reacts to ``updated`` (which costs a scan)."""
        return any("updated" in r.on for r in self._by_query.get(query, ()))

    # ------------------------------------------------------------ triggering
    def _enable(self, act: RuleActivation, state: str) -> None:
        self._seq += 1
        act.state = state
        act.seq = self._seq
        heapq.heappush(self._heap, (-act.rule.priority, self._seq, act))

    def on_event(self, event: Event, session: Any, cause: RuleActivation | None = None) -> None:
        """Schedule one activation per rule triggered by ``event`` (declaration order)."""
        for rule in self._by_event.get(event.type, ()):
            self._enable(RuleActivation(rule, "event", session, event=event, cause=cause),
                         "scheduled")

    def on_query_change(self, query: str, appeared: Sequence[tuple[Any, ...]],
                        disappeared: Sequence[tuple[Any, ...]],
                        updated: Sequence[tuple[Any, ...]], session: Any,
                        cause: RuleActivation | None = None) -> None:
        """Move the activations of the rules on ``query`` through their life cycle."""
        rules = self._by_query.get(query)
        if not rules:
            return
        acts = self._activations
        for m in disappeared:
            for rule in rules:
                key = (rule.name, m)
                act = acts.get(key)
                if act is None or act.state == "appeared":
                    acts.pop(key, None)
                    if act is not None:
                        act.state = "inactive"
                elif act.state in ("fired", "updated"):
                    if "disappeared" in rule.on:
                        act.cause = cause
                        self._enable(act, "disappeared")
                    else:
                        del acts[key]
                        act.state = "inactive"
        for m in appeared:
            for rule in rules:
                key = (rule.name, m)
                act = acts.get(key)
                if act is not None:
                    if act.state == "disappeared":
                        act.state = "fired"  # it came back before the rule saw it go
                    continue
                act = RuleActivation(rule, "appeared", session, match=m, cause=cause)
                acts[key] = act
                if "appeared" in rule.on:
                    self._enable(act, "appeared")
                else:
                    act.state = "fired"
        for m in updated:
            for rule in rules:
                act = acts.get((rule.name, m))
                if act is not None and act.state == "fired" and "updated" in rule.on:
                    act.kind = "updated"
                    act.cause = cause
                    self._enable(act, "updated")

    # ------------------------------------------------------------ firing
    def pop(self) -> RuleActivation | None:
        """The next activation to fire (see the module docstring), or None; its state
        becomes the post-firing one and its ``kind`` names the phase being fired."""
        heap = self._heap
        while heap:
            _, seq, act = heapq.heappop(heap)
            if act.seq != seq or act.state not in ENABLED:
                continue  # superseded or disabled since it was queued
            if act.state == "scheduled":
                act.state = "fired"
            elif act.state == "disappeared":
                act.kind = "disappeared"
                act.state = "inactive"
                self._activations.pop((act.rule.name, act.match), None)  # type: ignore[arg-type]
            else:
                act.kind = act.state
                act.state = "fired"
            return act
        return None

    def conflict_set(self) -> list[RuleActivation]:
        """The enabled activations, in the order they would fire."""
        live = [(p, s, a) for p, s, a in self._heap if a.seq == s and a.state in ENABLED]
        return [a for _, _, a in sorted(live, key=lambda x: (x[0], x[1]))]

    def activations(self, rule: str | None = None) -> list[RuleActivation]:
        """The live query activations (of one rule), any state."""
        return [a for (name, _), a in self._activations.items() if rule is None or name == rule]

    def clear(self) -> None:
        """Drop every enabled activation (query activations keep their resting state)."""
        for _, seq, act in self._heap:
            if act.seq == seq and act.state in ENABLED:
                if act.match is None:
                    act.state = "inactive"
                elif act.state in ("appeared", "disappeared"):
                    self._activations.pop((act.rule.name, act.match), None)
                    act.state = "inactive"
                else:
                    act.state = "fired"
        self._heap.clear()

    def __len__(self) -> int:
        return len(self.conflict_set())
