"""Reactive rules in the spirit of VIATRA EVM: rules on events and on query match changes,
an agenda with a documented life cycle and conflict-resolution order (docs/live.md).

    from cepflow.rules import query_rule, event_rule
    session.add_rule(query_rule("warn", "invalidHost", "cps.warn", on=("appeared",)))
"""

from cepflow.rules.agenda import ENABLED, Agenda
from cepflow.rules.rule import (
    QUERY_CHANGES,
    Rule,
    RuleActivation,
    RuleCascadeError,
    RuleError,
    event_rule,
    query_rule,
    rules_from_program,
)

__all__ = [
    "ENABLED",
    "QUERY_CHANGES",
    "Agenda",
    "Rule",
    "RuleActivation",
    "RuleCascadeError",
    "RuleError",
    "event_rule",
    "query_rule",
    "rules_from_program",
]
