"""The pattern dependency graph (003 §V.A.1, Fig. 1), its levels and its cycles.

Nodes are the event types and what produces them. cepflow names a complex event's type after
its pattern (``complexEvent Accident`` produces ``Accident`` events; EPL ``insert into
Accident``), so a pattern and its output type are one node — which is exactly Fig. 1, whose
vertices are events. Kinds: ``atomic`` (input events), ``query`` (query events of a live
model), ``pattern`` (a complex event pattern), ``statement`` (a data-window statement, whose
rows are events of its name), ``rule`` (id ``rule:<name>``). Edges go from what a node reads
to the node: the atoms of a pattern (also inside NOT: the pattern reacts to them; such edges
carry ``negated``), a statement's input stream(s), a rule's triggers; and from a rule to the
event types its action emits, when the registered action declares them
(``@cepflow.action(name, emits=(...))``).

**Levels** (decision, §V.F.2's "4 levels"): an input is at level 0, anything else one above
the highest of what it reads (the longest path from an input); the nodes of a cycle share a
level. **Cycles** are listed with whether they can fire at one instant — every node on them
reacts to its predecessor's event at once, so one event could make the engine go round for
ever (an error) — or only across time, when some node waits: it completes only on another
event, only when a window's time is up, or a time batch outputs only when it closes (a
warning; the message says which node waits and why).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import networkx as nx

from cepflow.analysis.patternset import PatternSet
from cepflow.language import ast
from cepflow.language.walk import atoms

#: how many cycles one strongly connected component lists at most
MAX_CYCLES = 20


@dataclass(frozen=True)
class Node:
    """A vertex of the dependency graph."""

    id: str
    kind: str
    name: str
    file: str
    line: int
    col: int

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    @property
    def produces(self) -> bool:
        """A pattern or statement: it produces events of its own name."""
        return self.kind in ("pattern", "statement")


@dataclass(frozen=True)
class Cycle:
    """A cycle of the graph: ``nodes`` in order (the last one leads back to the first)."""

    nodes: tuple[str, ...]
    at_once: bool
    why: str


@dataclass
class DependencyGraph:
    """The dependency graph of a pattern set (see the module docstring)."""

    g: nx.DiGraph
    nodes: dict[str, Node]
    decls: dict[str, ast.Decl] = field(default_factory=dict)
    levels: dict[str, int] = field(default_factory=dict)
    cycles: list[Cycle] = field(default_factory=list)

    def edges(self) -> Iterator[tuple[str, str]]:
        yield from self.g.edges()

    def readers(self, node: str) -> list[str]:
        """The nodes that read ``node``'s events."""
        return list(self.g.successors(node))

    def reads(self, node: str) -> list[str]:
        """The nodes whose events ``node`` reads."""
        return list(self.g.predecessors(node))

    @property
    def depth(self) -> int:
        """The number of levels (1 + the highest level)."""
        return 1 + max(self.levels.values(), default=-1)

    def ancestors(self, node: str) -> set[str]:
        return set(nx.ancestors(self.g, node))


def _loc(d: ast.Decl | ast.PatternRef) -> tuple[int, int]:
    return d.loc if d.loc is not None else (1, 1)


def build(pset: PatternSet) -> DependencyGraph:
    """The dependency graph of ``pset`` (from its declarations; no compilation needed)."""
    g = nx.DiGraph()
    nodes: dict[str, Node] = {}
    decls: dict[str, ast.Decl] = {}

    def add(node: Node, decl: ast.Decl | None) -> None:
        nodes[node.id] = node
        g.add_node(node.id)
        if decl is not None:
            decls[node.id] = decl

    for d in pset.module.decls:
        if isinstance(d, ast.Trait):
            continue
        line, col = _loc(d)
        f = pset.file_of(d)
        if isinstance(d, ast.AtomicEventDecl):
            add(Node(d.name, "atomic", d.name, f, line, col), d)
        elif isinstance(d, ast.QueryEventDecl):
            add(Node(d.name, "query", d.name, f, line, col), d)
        elif isinstance(d, ast.ComplexEventDecl):
            add(Node(d.name, "pattern", d.name, f, line, col), d)
        elif isinstance(d, ast.WindowDecl):
            add(Node(d.name, "statement", d.name, f, line, col), d)
        elif isinstance(d, ast.RuleDecl):
            add(Node(f"rule:{d.name}", "rule", d.name, f, line, col), d)
    for nid, d in list(decls.items()):
        for src, negated in _inputs(d):
            if src not in nodes:
                nodes[src] = Node(src, "undeclared", src, "", 0, 0)
                g.add_node(src)
            if g.has_edge(src, nid):
                g.edges[src, nid]["negated"] &= negated
            else:
                g.add_edge(src, nid, negated=negated)
        if isinstance(d, ast.RuleDecl) and d.action is not None:
            for t in pset.emits.get(d.action, ()):
                if t not in nodes:
                    nodes[t] = Node(t, "undeclared", t, "", 0, 0)
                    g.add_node(t)
                g.add_edge(nid, t, negated=False)
    graph = DependencyGraph(g, nodes, decls)
    graph.levels = _levels(g)
    graph.cycles = _cycles(graph)
    return graph


def _inputs(d: ast.Decl) -> Iterator[tuple[str, bool]]:
    """(type read, only under NOT) for each type a declaration reads."""
    if isinstance(d, ast.ComplexEventDecl):
        positive = {a.name for a in positive_atoms(d.body)}
        for name in dict.fromkeys(a.name for a in atoms(d.body)):
            yield name, name not in positive
    elif isinstance(d, ast.WindowDecl):
        for name in input_types(d):
            yield name, False
    elif isinstance(d, ast.RuleDecl):
        for ref in d.on:
            yield ref.name, False


def input_types(d: ast.WindowDecl) -> tuple[str, ...]:
    """The event types a window statement reads."""
    return (d.source.name, *getattr(d, "more_inputs", ()))


def positive_atoms(p: ast.Pattern) -> Iterator[ast.Atom]:
    """The atoms of ``p`` outside any NOT (events the pattern takes)."""
    if isinstance(p, ast.Atom):
        yield p
    elif isinstance(p, ast.Not):
        return
    elif isinstance(p, ast.Fol | ast.Or | ast.And):
        yield from positive_atoms(p.left)
        yield from positive_atoms(p.right)
    elif isinstance(p, ast.Until):
        yield from positive_atoms(p.pattern)
        yield from positive_atoms(p.until)
    elif isinstance(p, ast.Mult | ast.Window | ast.Every):
        yield from positive_atoms(p.pattern)


def _levels(g: nx.DiGraph) -> dict[str, int]:
    cond = nx.condensation(g)
    level: dict[int, int] = {}
    for c in nx.topological_sort(cond):
        preds = list(cond.predecessors(c))
        level[c] = 0 if not preds else 1 + max(level[p] for p in preds)
    mapping = cond.graph["mapping"]
    return {n: level[mapping[n]] for n in g.nodes}


# ---------------------------------------------------------------- cycles


@dataclass(frozen=True)
class _Last:
    """Which events can complete a pattern: the last atoms, whether it may match no event,
    whether a timer completes it (a trailing NOT in a window, timer:interval)."""

    atoms: tuple[ast.Atom, ...]
    nullable: bool
    timer: bool


def last(p: ast.Pattern) -> _Last:
    """What can complete ``p`` (see :class:`_Last`)."""
    if isinstance(p, ast.Atom):
        return _Last((p,), False, False)
    if isinstance(p, ast.Not):
        return _Last((), True, False)
    if isinstance(p, ast.Interval | ast.At):
        return _Last((), False, True)
    if isinstance(p, ast.Fol):
        left, right = last(p.left), last(p.right)
        found = right.atoms + (left.atoms if right.nullable else ())
        return _Last(found, left.nullable and right.nullable,
                     right.timer or (right.nullable and left.timer))
    if isinstance(p, ast.Or | ast.And):
        a, b = last(p.left), last(p.right)
        nullable = (a.nullable or b.nullable) if isinstance(p, ast.Or) \
            else (a.nullable and b.nullable)
        return _Last(a.atoms + b.atoms, nullable, a.timer or b.timer)
    if isinstance(p, ast.Mult):
        inner = last(p.pattern)
        return _Last(inner.atoms, inner.nullable or p.count in ("*", 0), inner.timer)
    if isinstance(p, ast.Window):
        inner = last(p.pattern)
        return _Last(inner.atoms, inner.nullable,
                     inner.timer or (p.kind == "within" and _ends_with_not(p.pattern)))
    if isinstance(p, ast.Every):
        return last(p.pattern)
    if isinstance(p, ast.Until):
        a, b = last(p.pattern), last(p.until)
        return _Last(a.atoms + b.atoms, False, a.timer or b.timer)
    raise TypeError(f"not a pattern: {p!r}")  # pragma: no cover


def _ends_with_not(p: ast.Pattern) -> bool:
    if isinstance(p, ast.Not):
        return True
    if isinstance(p, ast.Fol):
        return _ends_with_not(p.right)
    return False


def reacts(graph: DependencyGraph, src: str, dst: str) -> tuple[bool, str]:
    """Whether ``dst`` can emit at the instant an event of ``src`` reaches it, and if not why
    (the reason a cycle through this edge waits)."""
    d = graph.decls.get(dst)
    if isinstance(d, ast.RuleDecl):
        return True, ""  # its action's events follow the event at once (at the engine's time)
    if isinstance(d, ast.WindowDecl):
        if d.window.kind == "time_batch":
            return False, (f"{dst} is a time batch: it outputs only when a batch closes, "
                           "a batch length after its first event")
        return True, ""
    if isinstance(d, ast.ComplexEventDecl):
        done = last(d.body)
        if any(a.name == src for a in done.atoms):
            return True, ""
        if done.timer and not done.atoms:
            return False, f"{dst} completes only when its window's time is up"
        ends = ", ".join(sorted({a.name for a in done.atoms})) or "a timer"
        return False, f"{dst} completes only on {ends}, not on {src}"
    return True, ""


def _cycles(graph: DependencyGraph) -> list[Cycle]:
    out: list[Cycle] = []
    for comp in nx.strongly_connected_components(graph.g):
        if len(comp) == 1:
            (n,) = comp
            if not graph.g.has_edge(n, n):
                continue
        sub = graph.g.subgraph(comp)
        for k, cyc in enumerate(nx.simple_cycles(sub)):
            if k >= MAX_CYCLES:
                break
            out.append(_classify(graph, _rotate(graph, cyc)))
    out.sort(key=lambda c: c.nodes)
    return out


def _rotate(graph: DependencyGraph, cyc: list[str]) -> tuple[str, ...]:
    """A cycle starting at its first-declared node (stable output)."""
    order = {n: i for i, n in enumerate(graph.nodes)}
    i = min(range(len(cyc)), key=lambda j: order.get(cyc[j], 0))
    return tuple(cyc[i:] + cyc[:i])


def _classify(graph: DependencyGraph, cyc: tuple[str, ...]) -> Cycle:
    reasons = []
    for i, dst in enumerate(cyc):
        src = cyc[i - 1]
        ok, why = reacts(graph, src, dst)
        if not ok:
            reasons.append(why)
    if reasons:
        return Cycle(cyc, False, "; ".join(reasons))
    return Cycle(cyc, True, "each of them reacts at once to the event of the one before, so "
                 "one event makes the engine go round the cycle for ever at one instant")
