"""Rule firing: which rules an event and the complex events it caused trigger, in which order.

After an input event and everything it caused, the rules triggered by that event and by each
complex event it caused fire: higher priority first, then detection order (the event itself
first), then declaration order — the order of VIATRA EVM's agenda for event rules
(:mod:`cepflow.rules.agenda`, used by live sessions, keeps the same order). This is the one
place that order is computed; the per-event step and the column kernels both fire through it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cepflow.events.event import Event
from cepflow.language import ast


class RuleTable:
    """The program's rules by the event type that triggers them, each list in firing order
    (priority, then declaration)."""

    def __init__(self, rules: Sequence[ast.RuleDecl]) -> None:
        by_type: dict[str, list[tuple[int, ast.RuleDecl]]] = {}
        for order, rule in enumerate(rules):
            for ref in rule.on:
                by_type.setdefault(ref.name, []).append((order, rule))
        #: trigger type -> its rules, higher priority first, then declaration order
        self.by_type: dict[str, list[ast.RuleDecl]] = {
            t: [r for _, r in sorted(rs, key=lambda x: (-x[1].priority, x[0]))]
            for t, rs in by_type.items()}

    def __bool__(self) -> bool:
        return bool(self.by_type)

    def triggers(self, event_type: str) -> bool:
        return event_type in self.by_type

    def firings(self, event: Event | None, detected: Sequence[Event]
                ) -> list[tuple[ast.RuleDecl, Event]]:
        """(rule, triggering event) pairs in firing order for ``event`` (None when time
        passing caused ``detected``) and the complex events it caused, in detection order."""
        rules = self.by_type
        if event is None or event.type not in rules:
            trig = [ev for ev in detected if ev.type in rules]
        else:
            trig = [event, *(ev for ev in detected if ev.type in rules)]
        if not trig:
            return []
        if len(trig) == 1:
            ev = trig[0]
            return [(rule, ev) for rule in rules[ev.type]]
        acts = []
        seq = 0
        for ev in trig:
            for rule in rules[ev.type]:
                acts.append((-rule.priority, seq, rule, ev))
                seq += 1
        acts.sort(key=lambda a: (a[0], a[1]))
        return [(rule, ev) for _, _, rule, ev in acts]

    def count(self, counts: Mapping[str, int]) -> int:
        """How many firings ``counts`` events of each type cause (rules without a registered
        action only count their firings: the column path adds them up this way)."""
        return sum(len(self.by_type.get(t, ())) * k for t, k in counts.items())
