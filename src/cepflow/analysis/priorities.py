"""The fix of §V.A.2 and §V.F.2: levels of the dependency graph turned into priorities.

Every pattern and statement gets a priority such that everything it reads from has a higher
one — "a different priority … to all patterns at the same level in the graph" (003 §V.F.2) —
and, for each race between siblings, the one the consumer takes first gets the higher
priority. The numbers: a node's *level* is the longest chain of producers below it (inputs are
level 0), raised where a sibling must come first; its priority is ``top + 1 - level``, so the
first level gets the highest number and the last level 1. A sibling order that contradicts
another consumer's (a cycle of wishes) is left out and its race stays reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import networkx as nx

from cepflow.analysis.graph import DependencyGraph
from cepflow.analysis.races import Race


@dataclass
class Plan:
    """Priorities for every pattern and statement, and the sibling orders that could not be
    kept (race, why)."""

    priorities: dict[str, int] = field(default_factory=dict)
    levels: dict[str, int] = field(default_factory=dict)
    dropped: list[tuple[Race, str]] = field(default_factory=list)


def plan(graph: DependencyGraph, races: Iterable[Race]) -> Plan:
    """The priorities that order every dependency and every fixable sibling race."""
    out = Plan()
    nodes = [n for n, node in graph.nodes.items() if node.produces]
    if any(set(c.nodes) & set(nodes) for c in graph.cycles):
        return out  # a cyclic set has no level order
    h = nx.DiGraph()
    h.add_nodes_from(nodes)
    for u, v in graph.edges():
        if u in h and v in h:
            h.add_edge(u, v)
    for race in races:
        if race.kind != "siblings" or race.unfixable:
            continue
        first, second = race.wants
        if nx.has_path(h, second, first):
            out.dropped.append((race, f"{second} must come before {first} for another reason "
                                "(a dependency or another consumer's order)"))
            continue
        h.add_edge(first, second)
    level: dict[str, int] = {}
    for n in nx.topological_sort(h):
        preds = [level[p] for p in h.predecessors(n)]
        level[n] = max([graph.levels.get(n, 1), *(p + 1 for p in preds)])
    top = max(level.values(), default=0)
    out.levels = level
    out.priorities = {n: top + 1 - lv for n, lv in level.items()}
    return out
