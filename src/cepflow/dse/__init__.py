"""Design space exploration for quick fixes (000 §6.3): hard/soft objectives, transformation
rules (precondition query + registered action), bounded breadth-first search with state
de-duplication, fixes shortest first (docs/live.md).

    from cepflow.dse import HardObjective, TransformationRule, explore
    result = explore(model, queries, [HardObjective("invalid")], [TransformationRule(...)])
    result.solutions[0].apply(model)
"""

from cepflow.dse.objectives import (
    DSEError,
    HardObjective,
    RuleApplication,
    SoftObjective,
    TransformationRule,
)
from cepflow.dse.search import Exploration, RuleStep, Solution, explore, fingerprint

__all__ = [
    "DSEError",
    "Exploration",
    "HardObjective",
    "RuleApplication",
    "RuleStep",
    "SoftObjective",
    "Solution",
    "TransformationRule",
    "explore",
    "fingerprint",
]
