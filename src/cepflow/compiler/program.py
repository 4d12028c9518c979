"""A compiled pattern module: event schemas, one automaton per complex event, data-window
statements, and rules.

Automata and window statements are ordered so that each comes after every pattern or statement
whose events it reads (higher-order patterns, 000 §4.1), which gives dependent patterns a
deterministic processing order; a declared ``priority`` comes first: the lists are sorted by
priority (higher first), dependency order breaking ties, then position in the file. That is
the order in which the engine gives one event to the patterns (then the statements) that
read it, and so the order in which their complex events re-enter the stream (Esper's
``@Priority``; docs/semantics.md, "Priorities"). A window statement (``ast.WindowDecl``)
compiles to a :class:`cepflow.windows.WindowStatement`, validated against the schemas; its
output type (from its select list) joins the schemas, so patterns, rules and other
statements can read its rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cepflow.automaton.automaton import Automaton
from cepflow.compiler.automata import CompileError, compile_pattern
from cepflow.compiler.esper import EsperError, is_esper, lower
from cepflow.events.event import EventType, ParamSpec, canonical_type
from cepflow.language import ast
from cepflow.language.walk import atoms
from cepflow.windows.declaration import statement_of
from cepflow.windows.plan import compile_statement
from cepflow.windows.statement import WindowError, WindowStatement


@dataclass
class Program:
    """Everything the engine needs to run a pattern module."""

    schemas: dict[str, EventType]
    automata: list[Automaton]
    rules: list[ast.RuleDecl]
    module: ast.Module
    query_events: dict[str, ast.QueryEventDecl] = field(default_factory=dict)
    #: data-window statements, in dependency order (run by the engine with the automata)
    windows: list[WindowStatement] = field(default_factory=list)
    #: the registered functions the module was compiled with (window statements call them
    #: at run time)
    functions: Mapping[str, Callable[..., Any]] | None = None

    def automaton(self, name: str) -> Automaton:
        for a in self.automata:
            if a.name == name:
                return a
        raise KeyError(name)

    @property
    def fingerprint(self) -> str:
        """Identifies the compiled patterns, so saved engine state is not restored onto others."""
        text = "\n".join([*(f"{a.name}|{a.context}|{a.partition_by}|{a.pattern_text}"
                           for a in self.automata),
                           *(repr(w) + (f"|{w.more_inputs}" if w.more_inputs else "")
                             for w in self.windows)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _params(ps: tuple[ast.Param, ...]) -> tuple[ParamSpec, ...]:
    return tuple(ParamSpec(p.name, canonical_type(p.type), p.type) for p in ps)


def event_schemas(module: ast.Module) -> dict[str, EventType]:
    """The event type of every declaration: atomic (own + trait parameters), query, complex."""
    traits = {d.name: d for d in module.decls if isinstance(d, ast.Trait)}
    out: dict[str, EventType] = {}
    for d in module.decls:
        if isinstance(d, ast.AtomicEventDecl):
            ps = list(d.params)
            for tname in d.traits:
                if tname not in traits:
                    raise CompileError(f"unknown trait '{tname}'", d.loc, d.name)
                ps.extend(traits[tname].params)
            out[d.name] = EventType(d.name, _params(tuple(ps)))
        elif isinstance(d, ast.QueryEventDecl | ast.ComplexEventDecl):
            out[d.name] = EventType(d.name, _params(d.params))
    return out


def _dependency_order(names: list[str], edges: list[tuple[str, str]]
                      ) -> list[str] | tuple[str, str]:
    """The declarations in an order where each comes after those it reads, earlier
    declarations first where free (Kahn's algorithm, the free declarations in a heap by
    position: networkx's lexicographical topological sort, without its import's ≈ 0.25 s at
    every start of a program whose statements read others); or, if they read each other in a
    cycle, its first name and the cycle as text (networkx finds it: an error's path only)."""
    import heapq

    position = {n: i for i, n in enumerate(names)}
    succ: dict[str, set[str]] = {n: set() for n in names}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
        succ.setdefault(b, set())
    indeg = dict.fromkeys(succ, 0)
    for out in succ.values():
        for b in out:
            indeg[b] += 1
    free = [(position[n], n) for n, d in indeg.items() if d == 0]
    heapq.heapify(free)
    order: list[str] = []
    while free:
        _p, n = heapq.heappop(free)
        order.append(n)
        for b in succ[n]:
            indeg[b] -= 1
            if indeg[b] == 0:
                heapq.heappush(free, (position[b], b))
    if len(order) == len(succ):
        return order
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(names)
    graph.add_edges_from(edges)
    cycle = nx.find_cycle(graph)
    return cycle[0][0], " -> ".join([cycle[0][0], *(v for _, v in cycle)])



def compile_module(
    module: ast.Module,
    functions: Mapping[str, Callable[..., Any]] | None = None,
    default_context: str | None = None,
    extra_schemas: Mapping[str, EventType] | None = None,
) -> Program:
    """Compile every complex event of ``module``; ``default_context`` overrides the file's."""
    schemas = {**(extra_schemas or {}), **event_schemas(module)}
    context = default_context or module.context or "chronicle"
    complex_decls: dict[str, ast.ComplexEventDecl | ast.WindowDecl] = {
        d.name: d for d in module.decls if isinstance(d, ast.ComplexEventDecl | ast.WindowDecl)}
    edges = [(ref, name) for name, d in complex_decls.items()
             for ref in sorted({d.source.name, *d.more_inputs} if isinstance(d, ast.WindowDecl)
                               else {a.name for a in atoms(d.body)})
             if ref in complex_decls]
    order = _dependency_order(list(complex_decls), edges) if edges else list(complex_decls)
    if isinstance(order, tuple):
        raise CompileError(f"complex events reference each other in a cycle: {order[1]}",
                           complex_decls[order[0]].loc)
    automata = []
    windows: list[WindowStatement] = []
    for n in order:
        d, plan = complex_decls[n], None
        if isinstance(d, ast.WindowDecl):
            try:
                stmt = statement_of(d)
                schemas[d.name] = compile_statement(stmt, schemas, functions).output_schema
            except WindowError as e:
                raise CompileError(str(e), e.loc or d.loc) from None  # names the statement
            windows.append(stmt)
            continue
        if is_esper(d):
            try:
                d, plan = lower(d, schemas)
            except EsperError as e:
                raise CompileError(str(e), e.loc or d.loc, d.name) from None
            schemas[d.name] = EventType(d.name, _params(d.params))
        automata.append(compile_pattern(d, schemas, functions, context, plan))
    # priority first (stable: dependency order, then file position, among equal priorities)
    priority = {n: d.priority for n, d in complex_decls.items()}
    automata.sort(key=lambda a: -priority[a.name])
    windows.sort(key=lambda w: -priority[w.name])
    for rule in module.rules:
        for ref in rule.on:
            if ref.name not in schemas:
                raise CompileError(f"rule '{rule.name}' is triggered by unknown pattern "
                                   f"'{ref.name}'", ref.loc or rule.loc)
    queries = {d.name: d for d in module.decls if isinstance(d, ast.QueryEventDecl)}
    return Program(schemas, automata, list(module.rules), module, queries, windows,
                   functions)
