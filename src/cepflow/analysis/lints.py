"""Patterns that can never fire, and traps: the findings of ``cepflow analyze`` besides cycles
and races (docs/analysis.md, "Findings", lists every code with what it means).

* ``contradiction`` — a step's condition can never hold (interval and equality reasoning,
  compiler/conditions.py); ``never-fires`` when every match needs that step, else a dead
  alternative; on a NOT, the NOT forbids nothing.
* ``type-clash`` — a variable unified between parameters of incompatible declared types
  (``A(x)`` with ``x: Integer``, ``B(x)`` with ``x: String``): equal values never occur, so
  the pattern matches only if both are null.
* ``needs-silent-type`` — a pattern whose every match needs an event that can never occur (a
  complex event that never fires); ``rule-never-fires`` for rules triggered only by such.
* ``window-binds-last`` — a window on a single event (always satisfied; ``holds-for`` never),
  or an EPL ``where timer:within`` that limits only the last operands of a sequence.
* ``unbounded-partial-matches`` — partial matches that grow with the stream, as
  ``cepflow check`` announces them (compiler/growth.py); and every-distinct keys kept
  without expiry.
* ``unused-type`` — an input event type nothing reads.
* ``priority-inversion`` — a pattern with a higher priority than one whose events it reads.
"""

from __future__ import annotations

from collections.abc import Iterator

from cepflow.analysis.behaviour import field_types, variable_types
from cepflow.analysis.findings import Finding, Location
from cepflow.analysis.graph import DependencyGraph
from cepflow.analysis.patternset import PatternSet
from cepflow.automaton.automaton import FINAL, INITIAL, TRAP, Automaton, Position
from cepflow.compiler.conditions import satisfiable
from cepflow.compiler.conjunction import is_guard
from cepflow.compiler.growth import growth as pattern_growth
from cepflow.compiler.normalize import fol_items
from cepflow.compiler.program import Program
from cepflow.language import ast
from cepflow.language.printer import format_duration, format_expr, format_pattern

_NUMERIC = {"int", "float", "bool"}


def _at(graph: DependencyGraph, name: str, loc: ast.Loc = None) -> Location:
    n = graph.nodes[name]
    if loc is not None:
        return Location(n.file, loc[0], loc[1])
    return Location(n.file, n.line, n.col)


def _label(pos: Position) -> str:
    """How a message names a step: its event type and line (``the Motorbike of line 38``)."""
    return f"the {pos.type} of line {pos.loc[0]}" if pos.loc else f"the {pos.type} step"


# ---------------------------------------------------------------- reachability


def _completes(auto: Automaton, dead: set[int]) -> bool:
    """Whether a match is still possible without the positions in ``dead``: some path of
    live edges from the initial state reaches the final state, or a state a window's deadline
    completes (a trailing NOT)."""
    timer_states = {s for z in auto.zones for s in z.timer_accept}
    seen = {INITIAL}
    stack = [INITIAL]
    while stack:
        s = stack.pop()
        if s in timer_states:
            return True
        for es in auto.edges.get(s, {}).values():
            for e in es:
                if e.position.id in dead:
                    continue
                if e.target == FINAL or e.final:
                    return True
                if e.target not in seen and e.target != TRAP:
                    seen.add(e.target)
                    stack.append(e.target)
    return False


def _positions(auto: Automaton) -> dict[int, Position]:
    out: dict[int, Position] = {}
    for m in auto.edges.values():
        for es in m.values():
            for e in es:
                out.setdefault(e.position.id, e.position)
    return out


# ---------------------------------------------------------------- per pattern


def contradictions(graph: DependencyGraph, program: Program
                   ) -> tuple[list[Finding], set[str]]:
    """Steps whose conditions never hold; also the patterns that can therefore never fire."""
    findings: list[Finding] = []
    never: set[str] = set()
    for auto in program.automata:
        vtypes = variable_types(auto, program.schemas)
        dead: dict[int, Position] = {}
        for pid, pos in _positions(auto).items():
            types = {**vtypes, **field_types(program.schemas.get(pos.type))}
            if pos.where is not None and not satisfiable(pos.where, types):
                dead[pid] = pos
        for _, pos in sorted(dead.items()):
            cond = format_expr(pos.where)
            if not _completes(auto, set(dead)):
                never.add(auto.name)
                findings.append(Finding(
                    "error", "contradiction", _at(graph, auto.name, pos.loc),
                    f"{auto.name} can never fire: the condition of {_label(pos)} ({cond}) "
                    "can never hold, and every match needs that step",
                    "correct the condition (the bounds exclude each other)"))
            else:
                findings.append(Finding(
                    "warning", "contradiction", _at(graph, auto.name, pos.loc),
                    f"in {auto.name}, the condition of {_label(pos)} ({cond}) can never hold: "
                    "that alternative never matches",
                    "correct the condition or remove the alternative"))
        for m in auto.forbids.values():
            for fs in m.values():
                for f in fs:
                    pos = f.position
                    types = {**vtypes, **field_types(program.schemas.get(pos.type))}
                    if pos.where is not None and not satisfiable(pos.where, types):
                        findings.append(Finding(
                            "warning", "contradiction", _at(graph, auto.name, pos.loc),
                            f"in {auto.name}, NOT {pos.type} where {format_expr(pos.where)} "
                            "forbids nothing: its condition can never hold",
                            "correct the condition of the NOT or remove it"))
    return _unique(findings), never


def type_clashes(graph: DependencyGraph, program: Program) -> tuple[list[Finding], set[str]]:
    """Variables unified between parameters whose declared types never compare equal."""
    findings: list[Finding] = []
    never: set[str] = set()
    for auto in program.automata:
        by_var: dict[str, list[tuple[Position, str, str]]] = {}
        for pos in _positions(auto).values():
            schema = program.schemas.get(pos.type)
            if schema is None:
                continue
            for i, var in pos.binds:
                if i >= len(schema.params):
                    continue
                p = schema.params[i]
                if p.type == "any":
                    continue
                by_var.setdefault(var, []).append((pos, p.name, p.declared_type or p.type))
        for var, uses in by_var.items():
            kinds = {_kind(t) for _, _, t in uses}
            if len(kinds) < 2:
                continue
            a = uses[0]
            b = next(u for u in uses if _kind(u[2]) != _kind(a[2]))
            required = not _completes(auto, {b[0].id}) and not _completes(auto, {a[0].id})
            sev = "error" if required else "warning"
            if required:
                never.add(auto.name)
            findings.append(Finding(
                sev, "type-clash", _at(graph, auto.name, b[0].loc),
                f"in {auto.name}, {var} is unified between {a[0].type}.{a[1]} ({a[2]}) and "
                f"{b[0].type}.{b[1]} ({b[2]}): such values are never equal, so "
                + ("the pattern can never fire (unless both are null)" if required
                   else "that alternative never matches (unless both are null)"),
                f"use different variables, or declare {b[0].type}.{b[1]} as {a[2]}"))
    return findings, never


def _kind(declared: str) -> str:
    from cepflow.events.event import canonical_type

    t = canonical_type(declared)
    return "number" if t in _NUMERIC else t


def _unique(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple] = set()
    out = []
    for f in findings:
        key = (f.code, str(f.location), f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


# ---------------------------------------------------------------- never-firing propagation


def silent(graph: DependencyGraph, program: Program, never: set[str]
           ) -> tuple[list[Finding], set[str]]:
    """Patterns whose every match needs a type that never occurs, and rules never triggered."""
    findings: list[Finding] = []
    silent_types = set(never)
    changed = True
    autos = {a.name: a for a in program.automata}
    wins = {w.name: w for w in program.windows}
    while changed:
        changed = False
        for name, auto in autos.items():
            if name in silent_types:
                continue
            dead = {p.id for p in _positions(auto).values() if p.type in silent_types}
            if dead and not _completes(auto, dead):
                silent_types.add(name)
                changed = True
                need = sorted({p.type for p in _positions(auto).values()
                               if p.type in silent_types})
                findings.append(Finding(
                    "error", "needs-silent-type", _at(graph, name),
                    f"{name} can never fire: every match needs {', '.join(need)}, which never "
                    "occurs", f"fix {', '.join(need)} first"))
        for name, w in wins.items():
            types = getattr(w, "input_types", (w.input_type,))
            if name not in silent_types and all(t in silent_types for t in types):
                silent_types.add(name)
                changed = True
                findings.append(Finding(
                    "error", "needs-silent-type", _at(graph, name),
                    f"{name} never outputs a row: its input {', '.join(types)} never occurs",
                    f"fix {', '.join(types)} first"))
    for rule in program.rules:
        if rule.on and all(ref.name in silent_types for ref in rule.on):
            nid = f"rule:{rule.name}"
            findings.append(Finding(
                "error", "rule-never-fires", _at(graph, nid),
                f"rule {rule.name} can never fire: "
                f"{', '.join(ref.name for ref in rule.on)} never occurs",
                "fix the patterns it is triggered by"))
    return findings, silent_types


# ---------------------------------------------------------------- windows


def window_binding(graph: DependencyGraph, pset: PatternSet) -> list[Finding]:
    """Windows on one event, and EPL guards limiting only the end of a sequence."""
    out: list[Finding] = []
    for name, d in graph.decls.items():
        if not isinstance(d, ast.ComplexEventDecl):
            continue
        epl = graph.nodes[name].file.lower().endswith(".epl")
        for f in _window_traps(d.body, epl):
            win, seq = f
            if win.pattern is not None and _single(win.pattern):
                length = format_duration(win.duration)
                one = format_pattern(win.pattern)
                never = win.kind == "holds_for"
                out.append(Finding(
                    "error" if never else "warning", "window-binds-last",
                    _at(graph, name, win.loc),
                    f"in {name}, " + (
                        f"'holds-for {length}' applies to {one} alone: the span of one "
                        "event is 0, so it never holds and the pattern never fires" if never
                        else f"the window [{length}] applies to {one} alone, a single "
                        "event, so it limits nothing"),
                    "put the window around the whole sequence: "
                    + (format_pattern(seq) if seq is not None else "(… )")))
            elif epl and seq is not None:
                out.append(Finding(
                    "info", "window-binds-last", _at(graph, name, win.loc),
                    f"in {name}, 'where timer:within({format_duration(win.duration)})' "
                    f"limits only {format_pattern(win.pattern)}: Esper starts a guard when its "
                    "sub-expression starts, so the time runs from the operand before it, not "
                    "from the start of the sequence",
                    "to limit the whole sequence, put the guard around it: ("
                    + format_pattern(_strip_window(seq)) + ") where timer:within("
                    + format_duration(win.duration) + ")"))
    return out


def _single(p: ast.Pattern) -> bool:
    if isinstance(p, ast.Atom):
        return True
    if isinstance(p, ast.Every):
        return _single(p.pattern)
    return False


def _strip_window(p: ast.Pattern) -> ast.Pattern:
    if isinstance(p, ast.Window):
        return p.pattern
    return p


def _window_traps(p: ast.Pattern, epl: bool
                  ) -> Iterator[tuple[ast.Window, ast.Pattern | None]]:
    """(window, the sequence it may have been meant for) for windows that are the last operand
    of a sequence (cepflow syntax: on a single event; EPL: any guard), and windows on a single
    event anywhere."""
    if isinstance(p, ast.Fol):
        items = fol_items(p)
        last = items[-1]
        if isinstance(last, ast.Window) and last.kind in ("within", "holds_for"):
            whole = ast.Window(_flatten([*items[:-1], last.pattern]), last.duration, last.kind,
                               last.loc)
            if _single(last.pattern) or (epl and last.kind == "within"):
                yield last, whole
        for it in items:
            if it is not last or not isinstance(it, ast.Window):
                yield from _window_traps(it, epl)
            else:
                yield from _window_traps(it.pattern, epl)
        return
    if isinstance(p, ast.Window) and _single(p.pattern):
        yield p, None
        return
    if isinstance(p, ast.Or | ast.And):
        for side in (p.left, p.right):
            # EPL's guard on an operand runs from the and's / or's start: it limits the
            # operand (docs/esper.md, "Guards on the operands of and / or")
            yield from _window_traps(side.pattern if epl and is_guard(side) else side, epl)
    elif isinstance(p, ast.Until):
        yield from _window_traps(p.pattern, epl)
        yield from _window_traps(p.until, epl)
    elif isinstance(p, ast.Mult | ast.Window | ast.Every | ast.Not):
        yield from _window_traps(p.pattern, epl)


def _flatten(items: list[ast.Pattern]) -> ast.Pattern:
    out = items[-1]
    for it in reversed(items[:-1]):
        out = ast.Fol(it, out)
    return out


# ---------------------------------------------------------------- growth


def growth(graph: DependencyGraph, program: Program) -> list[Finding]:
    """Partial matches that grow with the stream (compiler.growth, as ``cepflow check``
    announces them), and every-distinct keys kept for the statement's life."""
    out: list[Finding] = []
    for auto in program.automata:
        if auto.distinct and auto.distinct_expiry is None:
            out.append(Finding(
                "warning", "unbounded-partial-matches", _at(graph, auto.name),
                f"{auto.name}'s every-distinct keeps every key value it has seen for the "
                "statement's life: its memory grows by one entry per distinct key",
                "give the keys an expiry: every-distinct(keys; 1 d) "
                "(EPL: every-distinct(keys, 1 day))"))
        why = pattern_growth(auto)
        if why is not None:
            out.append(Finding(
                "warning", "unbounded-partial-matches", _at(graph, auto.name),
                f"{auto.name}'s partial matches can grow with the stream: {why}",
                f"put a window around the sequence, e.g. ({format_pattern_of(auto)})"
                "[<duration>], or cap them with cepflow run --max-partial-matches"))
    return out


def format_pattern_of(auto: Automaton) -> str:
    text = auto.pattern_text or auto.name
    return text if len(text) <= 60 else text[:57] + "…"


# ---------------------------------------------------------------- types and priorities


def unused(graph: DependencyGraph) -> list[Finding]:
    """Input event types nothing reads."""
    out = []
    for n, node in graph.nodes.items():
        if node.kind in ("atomic", "query") and not graph.readers(n):
            out.append(Finding(
                "info", "unused-type", Location(node.file, node.line, node.col),
                f"event type {n} is declared but no pattern, statement or rule reads it",
                f"remove {n}, or read it where it was meant to be"))
    return out


def priority_inversions(graph: DependencyGraph) -> list[Finding]:
    """A pattern or statement with a higher priority than one whose events it reads."""
    out = []
    for c, d in graph.decls.items():
        if not graph.nodes[c].produces:
            continue
        pc = int(getattr(d, "priority", 0) or 0)
        for p in graph.reads(c):
            dp = graph.decls.get(p)
            if dp is None or not graph.nodes[p].produces:
                continue
            pp = int(getattr(dp, "priority", 0) or 0)
            if pc > pp:
                out.append(Finding(
                    "warning", "priority-inversion", _at(graph, c),
                    f"{c} (priority {pc}) reads {p} (priority {pp}): a consumer above its "
                    "producer contradicts the level order; in cepflow the producer's events "
                    "still reach it (they follow the event that made them), but the order the "
                    "priorities state is not the one the engine can keep",
                    f"give {p} a higher priority than {c} (cepflow analyze --fix)"))
    return out
