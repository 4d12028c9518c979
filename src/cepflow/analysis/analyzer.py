"""One analysis of a pattern set: its graph, levels, cycles, races, findings and the fix's
priorities — what ``cepflow analyze`` prints in every format."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cepflow.analysis import lints
from cepflow.analysis.findings import Finding, Location, sort_findings
from cepflow.analysis.graph import DependencyGraph, build
from cepflow.analysis.patternset import PatternSet, read
from cepflow.analysis.priorities import Plan, plan
from cepflow.analysis.races import Race, find


@dataclass
class Analysis:
    """Everything ``cepflow analyze`` reports about one pattern set."""

    pset: PatternSet
    graph: DependencyGraph
    races: list[Race] = field(default_factory=list)
    resolved: list[Race] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    plan: Plan = field(default_factory=Plan)

    @property
    def clean(self) -> bool:
        """No race and no error or warning."""
        return not self.races and not any(f.severity in ("error", "warning")
                                          for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        """The public JSON form (docs/analysis.md, "JSON")."""
        g = self.graph
        return {
            "files": list(self.pset.files),
            "nodes": [{"id": n.id, "kind": n.kind, "file": n.file, "line": n.line,
                       "col": n.col, "level": g.levels.get(n.id)} for n in g.nodes.values()],
            "edges": [{"from": u, "to": v, "negated": bool(g.g.edges[u, v].get("negated"))}
                      for u, v in g.edges()],
            "levels": dict(g.levels),
            "cycles": [list(c.nodes) for c in g.cycles],
            "cycle_details": [{"nodes": list(c.nodes), "at_once": c.at_once, "why": c.why}
                              for c in g.cycles],
            "races": [r.to_json() for r in self.races],
            "resolved": [r.to_json() for r in self.resolved],
            "findings": [f.to_json() for f in self.findings],
            "priorities": dict(self.plan.priorities),
        }


def analyze_set(pset: PatternSet) -> Analysis:
    """Analyse a pattern set that read without errors (cycles allowed)."""
    graph = build(pset)
    result = Analysis(pset, graph)
    findings: list[Finding] = []
    for c in graph.cycles:
        first = graph.nodes[c.nodes[0]]
        ring = " -> ".join([*c.nodes, c.nodes[0]])
        if c.at_once:
            findings.append(Finding(
                "error", "cycle", Location(first.file, first.line, first.col),
                f"cycle {ring} can fire at one instant: {c.why}",
                "break the cycle: one of them must not read the next one's events"))
        else:
            findings.append(Finding(
                "warning", "cycle", Location(first.file, first.line, first.col),
                f"cycle {ring} goes round only across time ({c.why}); cepflow refuses cyclic "
                "complex events, and an engine that runs them loops as long as events come",
                "break the cycle, or make sure the waiting step cannot be fed back"))
    findings.extend(lints.unused(graph))
    program = pset.program
    if program is not None:
        races = find(graph, program)
        contra, never = lints.contradictions(graph, program)
        clash, never2 = lints.type_clashes(graph, program)
        quiet, _ = lints.silent(graph, program, never | never2)
        findings += contra + clash + quiet
        findings += lints.growth(graph, program)
        findings += lints.priority_inversions(graph)
        result.plan = plan(graph, races.races + races.resolved)
        result.races = [_with_fix(r, result.plan, graph) for r in races.races]
        result.resolved = [_with_fix(r, result.plan, graph) for r in races.resolved]
    findings += lints.window_binding(graph, pset)
    result.findings = sort_findings(findings)
    return result


def _with_fix(race: Race, p: Plan, graph: DependencyGraph) -> Race:
    first, second = race.wants
    if race.unfixable:
        return replace(race, fix=f"no priority can do it: {race.unfixable}")
    if any(r is race for r, _ in p.dropped):
        why = next(w for r, w in p.dropped if r is race)
        return replace(race, fix=f"no priority order suits every consumer: {why}")
    pf, ps = p.priorities.get(first), p.priorities.get(second)
    return replace(race, fix=f"give {first} a higher priority than {second}: "
                   f"{first} priority {pf}, {second} priority {ps} — "
                   "cepflow analyze --fix FILE writes every priority")


def analyze(paths: Sequence[str | Path],
            actions: Mapping[str, Callable[..., Any]] | None = None) -> Analysis:
    """Read and analyse pattern files; raises ``ValueError`` listing the errors of a set
    that does not read (the same messages as ``cepflow check``)."""
    pset = read(paths, actions)
    if not pset.ok:
        raise ValueError("\n".join(str(d) for d in pset.errors))
    return analyze_set(pset)
