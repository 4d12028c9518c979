"""What the compiled program says about each pattern and statement, as the races and lints
need it: on which events it can emit (its completing steps and their conditions), whether a
timer can complete it, in which order it takes the types it reads, and where the engine runs
it among the patterns and statements that take one event.

The engine's order at one event (runtime/engine.py ``_step``, ``_cascade``): the patterns
that read the event's type take it in program order, then the window statements that read it,
in program order; the complex events they produced are then delivered one after the other,
each followed (breadth first) by everything it causes. Program order is the compiler's
(compiler/program.py): priority (higher first), then dependency order, then position in the
file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from cepflow.automaton.automaton import FINAL, INITIAL, TRAP, Automaton
from cepflow.compiler.conditions import satisfiable
from cepflow.compiler.program import Program
from cepflow.events.event import EventType
from cepflow.language import ast
from cepflow.language.walk import strip_alias


@dataclass(frozen=True)
class EmitStep:
    """An event of ``type`` on which a node can emit, if ``where`` holds of it (the event's own
    fields are bare names; anything else is a variable bound before)."""

    type: str
    where: ast.Expr | None
    loc: ast.Loc = None


@dataclass
class Behaviour:
    """One pattern or statement as the engine runs it."""

    name: str
    kind: str  # "pattern" or "statement"
    #: (0 for patterns, 1 for statements, index in the program's list): the engine's order
    order: tuple[int, int]
    steps: list[EmitStep] = field(default_factory=list)
    #: a timer (window deadline, trailing NOT, timer:interval, batch close) can make it emit
    timed: bool = False
    #: (X, Y): an X event can come before a Y event in one of its matches
    sequence: set[tuple[str, str]] = field(default_factory=set)
    #: statements: the window's kind
    window: str | None = None
    reads: tuple[str, ...] = ()


def field_types(schema: EventType | None) -> dict[str, str]:
    """The canonical type of each field of ``schema``."""
    return {} if schema is None else {p.name: p.type for p in schema.params}


def variable_types(auto: Automaton, schemas: Mapping[str, EventType]) -> dict[str, str]:
    """The type of each variable an automaton binds, from the parameter it is bound to."""
    out: dict[str, str] = {}
    for pos in auto.positions:
        schema = schemas.get(pos.type)
        if schema is None:
            continue
        for i, var in pos.binds:
            if i < len(schema.params):
                out.setdefault(var, schema.params[i].type)
    return out


def _reach(auto: Automaton) -> dict[int, set[int]]:
    """State -> states reachable from it (itself included) through positive edges."""
    succ: dict[int, set[int]] = {}
    for s, m in auto.edges.items():
        for es in m.values():
            for e in es:
                succ.setdefault(s, set()).add(e.target)
    out: dict[int, set[int]] = {}
    for s in [*succ, FINAL]:
        seen = {s}
        stack = [s]
        while stack:
            for t in succ.get(stack.pop(), ()):
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        out[s] = seen
    return out


def _pattern(auto: Automaton, order: tuple[int, int]) -> Behaviour:
    b = Behaviour(auto.name, "pattern", order)
    edges = [e for m in auto.edges.values() for es in m.values() for e in es]
    for e in edges:
        if e.target == FINAL or e.final:
            b.steps.append(EmitStep(e.position.type, e.position.where, e.position.loc))
    b.timed = bool(auto.clock is not None or any(z.timer_accept for z in auto.zones))
    reach = _reach(auto)
    for e1 in edges:
        if e1.target in (FINAL, TRAP):
            continue
        later = reach.get(e1.target, {e1.target})
        for e2 in edges:
            if e2.source in later and e2.source != INITIAL:
                b.sequence.add((e1.position.type, e2.position.type))
    b.reads = tuple(sorted(auto.alphabet))
    return b


def _statement(stmt: object, order: tuple[int, int]) -> Behaviour:
    name = stmt.name  # type: ignore[attr-defined]
    kind = stmt.window.kind  # type: ignore[attr-defined]
    types = tuple(getattr(stmt, "input_types", (stmt.input_type,)))  # type: ignore[attr-defined]
    where = stmt.filter  # type: ignore[attr-defined]
    if where is not None:
        where = strip_alias(where, stmt.alias)  # type: ignore[attr-defined]
    b = Behaviour(name, "statement", order, window=kind, reads=types)
    if kind == "time_batch":
        b.timed = True
    else:  # rows on arrival (length batch: on the n-th arrival, any event may be it)
        b.steps.extend(EmitStep(t, where, stmt.loc) for t in types)  # type: ignore[attr-defined]
        b.timed = kind == "time"
    return b


def behaviours(program: Program) -> dict[str, Behaviour]:
    """The behaviour of every pattern and statement of ``program``, by name."""
    out: dict[str, Behaviour] = {}
    for i, a in enumerate(program.automata):
        out[a.name] = _pattern(a, (0, i))
    for i, w in enumerate(program.windows):
        out[w.name] = _statement(w, (1, i))
    return out


def _renamed(expr: ast.Expr | None, fields: Mapping[str, str], prefix: str
             ) -> ast.Expr | None:
    """``expr`` with every name that is not a field of the event prefixed (two patterns' bound
    variables are different things even when they have the same name)."""
    if expr is None:
        return None
    from cepflow.language.walk import rewrite

    def fn(e: ast.Expr) -> ast.Expr | None:
        if isinstance(e, ast.Name) and not (not e.path and e.name in fields):
            return ast.Name(f"{prefix}{e.name}", e.path, e.loc)
        return None

    return rewrite(expr, fn)


def same_event(a: Behaviour, b: Behaviour, schemas: Mapping[str, EventType]
               ) -> list[tuple[EmitStep, EmitStep]]:
    """Pairs of steps on which ``a`` and ``b`` can both emit for one and the same event (same
    type, conditions that can hold together)."""
    out = []
    for sa in a.steps:
        for sb in b.steps:
            if sa.type != sb.type:
                continue
            fields = field_types(schemas.get(sa.type))
            wa = _renamed(sa.where, fields, "1:")
            wb = _renamed(sb.where, fields, "2:")
            both = wa if wb is None else (wb if wa is None else ast.Binary("and", wa, wb))
            if satisfiable(both, fields):
                out.append((sa, sb))
    return out
