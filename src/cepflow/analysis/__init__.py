"""Analysing pattern sets before deployment (003 §V): the dependency graph, its levels and
cycles, races with their fix by priorities, patterns that can never fire and other traps
(docs/analysis.md). ``cepflow analyze`` prints it; ``cepflow search`` explores input sequences
for a witness (analysis.bounded_search)."""

from cepflow.analysis.analyzer import Analysis, analyze, analyze_set
from cepflow.analysis.findings import Finding, Location
from cepflow.analysis.graph import Cycle, DependencyGraph, Node
from cepflow.analysis.patternset import PatternSet, read
from cepflow.analysis.races import Race

__all__ = ["Analysis", "Cycle", "DependencyGraph", "Finding", "Location", "Node",
           "PatternSet", "Race", "analyze", "analyze_set", "read"]
