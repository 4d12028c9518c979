"""Name and type checks on a parsed (or built) pattern module, before compilation.

``check`` never raises on a bad module: it returns every problem it finds as a located
:class:`~cepflow.language.diagnostics.Diagnostic`, sorted by line and column. Errors make the
module unusable; warnings flag code that is accepted but probably not what was meant.
Warnings the parser already recorded (ignored ``check`` blocks) are not repeated here; get them
with :func:`cepflow.language.parser.parse_warnings`.

Signatures follow VIATRA-CEP: an atomic event's parameters are its own followed by those of
its traits, in ``with`` order; query and complex events have their declared parameters.
Patterns may also refer to events declared outside the module through ``known_events``
(name -> ``EventType``, a declaration, a list of parameter names / ``(name, type)`` pairs /
``Param`` / ``ParamSpec`` objects, or just the arity as an int).
"""

from __future__ import annotations

import difflib
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, overload

from cepflow.events.event import EventType, ParamSpec, canonical_type
from cepflow.language.ast import (
    AGGREGATES,
    And,
    At,
    Atom,
    AtomicEventDecl,
    Binary,
    Call,
    ComplexEventDecl,
    Const,
    Every,
    Expr,
    Fol,
    Interval,
    Loc,
    Module,
    Mult,
    Name,
    Not,
    Or,
    Param,
    Pattern,
    QueryEventDecl,
    RuleDecl,
    Trait,
    Unary,
    Window,
    WindowDecl,
    is_wildcard,
)
from cepflow.language.diagnostics import Diagnostic, sort_diagnostics
from cepflow.language.limits import MAX_UNROLLED, declaration_roots, too_deep, unrolled_size
from cepflow.language.printer import column_name
from cepflow.language.tags import indexed, misuses, repeated_tags
from cepflow.language.walk import atoms, bound_variables, expr_nodes, walk
from cepflow.language.walk import names as _names

__all__ = ["check", "errors_only"]

OPAQUE_ACTION_WARNING = (
    "action block is not executed; register a Python action and write `action name`"
)
NOT_POSITION_ERROR = "NOT needs a preceding event or a window"

_COMPARISONS = {"==", "!=", "<", "<=", ">", ">="}
_ARITHMETIC = {"+", "-", "*", "/", "%"}
_NUMERIC = {"int", "float"}
#: what built-in functions of one argument return (compiler.evaluator.BUILTINS): so that
#: ``str(s) * 200000000`` is the error arithmetic on a string is, not an allocation per event
_RETURNS = {"str": "str", "upper": "str", "lower": "str", "len": "int"}


@dataclass(frozen=True)
class _Signature:
    """What a pattern reference can be checked against."""

    kind: str  # "atomic", "query", "complex" or "external"
    params: tuple[tuple[str, str], ...] | None  # (name, declared type); None if unknown
    arity: int | None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.params or ())


def check(module: Module, known_events: Mapping[str, Any] | None = None) -> list[Diagnostic]:
    """Every name and type problem of ``module``, located and sorted by (line, col)."""
    return _Checker(module, known_events or {}).run()


def errors_only(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics that are errors (drop warnings)."""
    return [d for d in diagnostics if d.severity == "error"]


# ---------------------------------------------------------------- pattern helpers


def _start(node: Pattern) -> Loc:
    """Earliest location in a pattern (where its source text begins)."""
    locs = [n.loc for n in walk(node) if n.loc is not None]
    return min(locs) if locs else None


def _nullable(node: Pattern) -> bool:
    """True if the pattern can match without any event (the empty sequence)."""
    if isinstance(node, Fol | And):
        return _nullable(node.left) and _nullable(node.right)
    if isinstance(node, Or):
        return _nullable(node.left) or _nullable(node.right)
    if isinstance(node, Mult):
        return node.count in ("*", 0) or _nullable(node.pattern)
    if isinstance(node, Window | Every):
        return _nullable(node.pattern)
    return False  # atoms need an event; NOT is checked on its own; an interval needs time


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# ---------------------------------------------------------------- the checker


class _Checker:
    def __init__(self, module: Module, known: Mapping[str, Any]) -> None:
        self.module = module
        self.known = known
        self.out: list[Diagnostic] = []
        self.traits: dict[str, Trait] = {}
        self.events: dict[str, _Signature] = {}
        self.decl_loc: dict[str, Loc] = {}
        #: declarations nested beyond limits.MAX_NESTING: not walked (the walks recurse)
        self.deep: set[str] = set()

    # ------------------------------------------------------------ reporting

    def _report(self, loc: Loc, message: str, severity: str = "error") -> None:
        line, col = loc if loc is not None else (0, 0)
        self.out.append(Diagnostic(self.module.source, line, col, message, severity))  # type: ignore[arg-type]

    def _warn(self, loc: Loc, message: str) -> None:
        self._report(loc, message, "warning")

    def run(self) -> list[Diagnostic]:
        self._collect()
        for decl in self.module.decls:
            found = too_deep(*declaration_roots(decl))
            if found is not None:  # (a module built in Python: the parsers refuse these)
                self._report(found[0] or decl.loc, f"in '{decl.name}': {found[1]}")
                self.deep.add(decl.name)
                continue
            if isinstance(decl, Trait | AtomicEventDecl | QueryEventDecl | ComplexEventDecl):
                self._check_params(decl.name, decl.params, decl.loc)
            if isinstance(decl, ComplexEventDecl | WindowDecl):
                self._check_priority(decl)
            if isinstance(decl, AtomicEventDecl):
                self._check_traits(decl)
            elif isinstance(decl, ComplexEventDecl):
                self._check_complex(decl)
            elif isinstance(decl, WindowDecl):
                self._check_window(decl)
            elif isinstance(decl, RuleDecl):
                self._check_rule(decl)
        self._check_cycles()
        return sort_diagnostics(self.out)

    # ------------------------------------------------------------ declarations

    def _collect(self) -> None:
        for name, spec in self.known.items():
            self.events[name] = _external_signature(spec)
        first: dict[tuple[str, str], Loc] = {}
        for decl in self.module.decls:
            space = "rule" if isinstance(decl, RuleDecl) else "pattern"
            key = (space, decl.name)
            if key in first:
                where = f" (first declared at line {first[key][0]})" if first[key] else ""
                self._report(decl.loc, f"duplicate declaration '{decl.name}'{where}")
                continue
            first[key] = decl.loc
            if isinstance(decl, Trait):
                self.traits[decl.name] = decl
                self.decl_loc[decl.name] = decl.loc
        for decl in self.module.decls:
            if isinstance(decl, Trait | RuleDecl) or decl.name in self.decl_loc:
                continue
            self.decl_loc[decl.name] = decl.loc
            if isinstance(decl, WindowDecl):
                self.events[decl.name] = self._window_signature(decl)
                continue
            params = tuple((p.name, p.type) for p in decl.params)
            if isinstance(decl, ComplexEventDecl) and not params and decl.select:
                # an Esper-style select list names the parameters (types known at compile)
                params = tuple((n, "any") for n, _ in decl.select)
            if isinstance(decl, AtomicEventDecl):
                for trait_name in decl.traits:
                    trait = self.traits.get(trait_name)
                    if trait is not None:
                        params += tuple((p.name, p.type) for p in trait.params)
                self.events[decl.name] = _Signature("atomic", params, len(params))
            elif isinstance(decl, QueryEventDecl):
                self.events[decl.name] = _Signature("query", params, len(params))
            else:
                self.events[decl.name] = _Signature("complex", params, len(params))

    def _check_priority(self, decl: ComplexEventDecl | WindowDecl) -> None:
        """A priority is a whole number (the parsers make one; a module built in Python may
        hold anything)."""
        p = decl.priority
        if isinstance(p, bool) or not isinstance(p, int):
            self._report(decl.loc, f"the priority of '{decl.name}' must be a whole number, "
                         f"not {p!r}")

    def _check_params(self, owner: str, params: tuple[Param, ...], loc: Loc) -> None:
        seen: set[str] = set()
        for p in params:
            if p.name in seen:
                self._report(p.loc or loc, f"duplicate parameter '{p.name}' in '{owner}'")
            seen.add(p.name)

    def _check_traits(self, decl: AtomicEventDecl) -> None:
        for name in decl.traits:
            if name in self.traits:
                continue
            if name in self.events:
                self._report(decl.loc, f"'{name}' is an event pattern, not a trait")
            else:
                hint = self._suggest(name, self.traits)
                self._report(decl.loc, f"undeclared trait '{name}'{hint}")

    def _suggest(self, name: str, candidates: Mapping[str, Any]) -> str:
        close = difflib.get_close_matches(name, list(candidates), n=1)
        return f"; did you mean '{close[0]}'?" if close else ""

    def _resolve(
        self, name: str, args: tuple[str | None, ...] | None, loc: Loc
    ) -> _Signature | None:
        """Look up a pattern reference; report undeclared names and arity mismatches."""
        sig = self.events.get(name)
        if sig is None:
            if name in self.traits:
                self._report(loc, f"'{name}' is a trait, not an event pattern")
            else:
                hint = self._suggest(name, self.events)
                self._report(loc, f"undeclared event pattern '{name}'{hint}")
            return None
        if args is not None and sig.arity is not None and len(args) != sig.arity:
            listed = f" ({', '.join(sig.names)})" if sig.names else ""
            self._report(
                loc,
                f"'{name}' takes {_plural(sig.arity, 'parameter')}{listed}, "
                f"but {len(args)} {'is' if len(args) == 1 else 'are'} given",
            )
        return sig

    # ------------------------------------------------------------ complex events

    def _check_complex(self, decl: ComplexEventDecl) -> None:
        body = decl.body
        variables = {a for atom in atoms(body) for a in atom.args or () if not is_wildcard(a)}
        # Esper-style aliases: ``a1 = Motorbike`` makes ``a1.<field>`` a variable
        sigs = {atom: self._resolve(atom.name, atom.args, atom.loc) for atom in atoms(body)}
        for atom, sig in sigs.items():
            if atom.alias is not None and sig is not None and sig.params is not None:
                variables |= set(_aliased(atom.alias, sig.params))
        # Esper's tags inside a repetition: arrays, read as a[k].<field> (language/tags.py)
        for m in misuses(decl):
            self._report(m.loc, m.message, m.severity)
        typed = self._indexed_fields(decl, sigs)
        for atom, sig in sigs.items():
            if atom.where is not None:
                self._check_filter(atom, sig, variables, typed)
        tag_types = {**typed}
        for atom, sig in sigs.items():
            if atom.alias is not None and sig is not None and sig.params is not None:
                tag_types.update(_aliased(atom.alias, sig.params))
        for name, expr in decl.select or ():
            for n in _names(expr):
                full = _dotted(n)
                if full not in variables and full != "@ts" and indexed(n.name) is None:
                    self._report(n.loc or decl.loc, f"unknown name '{full}' in the select "
                                 f"item '{name}' of '{decl.name}'")
            _Typer(tag_types, self._report).infer(expr)
        if decl.select is not None or any(a.alias for a in sigs):
            decl = ComplexEventDecl(decl.name, (), body, decl.context, (), loc=decl.loc)
        for node in walk(body):
            if isinstance(node, Mult) and node.count == 0:
                self._report(node.loc, "multiplicity {0} matches nothing; use NOT for absence")
        steps, where = unrolled_size(body)
        if steps > MAX_UNROLLED:
            self._report(where or decl.loc, f"'{decl.name}' unrolls to more than "
                         f"{MAX_UNROLLED} automaton steps (P{{n}} repeats P n times, P{{m..n}} "
                         "UNTIL Q and Esper's [m:n] P until Q up to n + 1 times, P AND Q "
                         "compiles both orders; see Limits in docs/language.md)")
        definitely, possibly = bound_variables(body)
        for p in decl.params:
            if p.name not in possibly:
                self._report(
                    p.loc or decl.loc,
                    f"parameter '{p.name}' of '{decl.name}' is never bound by its body",
                )
            elif p.name not in definitely:
                self._warn(
                    p.loc or decl.loc,
                    f"parameter '{p.name}' of '{decl.name}' is bound only in some OR branches "
                    "(or optional repetitions) of its body",
                )
        names = {p.name for p in decl.params}
        for key in decl.partition_by:
            if key not in names:
                self._report(
                    decl.loc,
                    f"partition key '{key}' is not a parameter of '{decl.name}'",
                )
        if _nullable(body):
            self._report(
                _start(body) or decl.loc,
                f"body of '{decl.name}' can match the empty sequence "
                "(it would fire without any event)",
            )
        self._check_not(body, first=True, windowed=False)

    def _indexed_fields(self, decl: ComplexEventDecl, sigs: Mapping[Atom, _Signature | None]
                        ) -> dict[str, str]:
        """``a[k].<field>`` names of repeated tags that ``decl`` reads, with the field's type;
        an unknown field is reported (other misuses are :func:`misuses`')."""
        repeated = repeated_tags(decl.body)
        params = {a.alias: sig.params for a, sig in sigs.items()
                  if a.alias is not None and sig is not None and sig.params is not None}
        exprs = [a.where for a in sigs if a.where is not None]
        exprs += [e for _, e in decl.select or ()]
        exprs += [d for n in walk(decl.body) if isinstance(n, Every) for d in n.distinct]
        out: dict[str, str] = {}
        for expr in exprs:
            for n in _names(expr):
                ix = indexed(n.name)
                if ix is None or ix[0] not in repeated or ix[0] not in params or not n.path:
                    continue
                fields = dict(params[ix[0]])  # type: ignore[arg-type]
                if n.path[0] in fields:
                    out[_dotted(n)] = fields[n.path[0]]
                else:
                    self._report(n.loc or decl.loc, f"unknown field '{n.path[0]}' in "
                                 f"'{_dotted(n)}'; '{ix[0]}' ({repeated[ix[0]].type}) has: "
                                 f"{', '.join(fields) or '(none)'}")
        return out

    def _check_not(self, node: Pattern, first: bool, windowed: bool) -> None:
        """Report NOT operands that start a sequence without a window around them."""
        if isinstance(node, Not):
            if first and not windowed:
                self._report(node.loc, NOT_POSITION_ERROR)
            self._check_not(node.pattern, first=False, windowed=windowed)
        elif isinstance(node, Fol):
            self._check_not(node.left, first, windowed)
            self._check_not(node.right, False, windowed)
        elif isinstance(node, Or | And):
            # (timer:interval(Δ) and not C): the NOT is partnered with the interval
            timed = windowed or (isinstance(node, And) and any(
                isinstance(o, Interval | At) for o in (node.left, node.right)))
            self._check_not(node.left, first, timed)
            self._check_not(node.right, first, timed)
        elif isinstance(node, Mult):
            self._check_not(node.pattern, first, windowed)
        elif isinstance(node, Window):
            self._check_not(node.pattern, first, True)

    # ------------------------------------------------------------ window statements

    def _window_fields(self, decl: WindowDecl, sig: _Signature | None) -> dict[str, str] | None:
        """The names a window statement's expressions may read, with their declared types:
        the input's fields, also as ``alias.field``."""
        if sig is None or sig.params is None:
            return None
        fields = dict(sig.params)
        if decl.source.alias is not None:
            fields.update(_aliased(decl.source.alias, sig.params))
        return fields

    def _window_signature(self, decl: WindowDecl) -> _Signature:
        """Output parameters of a window statement: its select items (named as Esper names
        unaliased columns), typed where the type is evident (count, avg, a field)."""
        fields = self._window_fields(decl, self.events.get(decl.source.name)) or {}
        params = []
        for name, expr in decl.select:
            out = name or column_name(expr)
            kind = "any"
            if isinstance(expr, Call) and expr.func in AGGREGATES and len(expr.args) <= 1:
                kind = {"count": "Integer", "avg": "Double"}.get(expr.func, "any")
                if expr.func in ("min", "max", "sum") and expr.args:
                    kind = fields.get(_dotted(expr.args[0]) or "", "any")
            elif isinstance(expr, Name) and expr.name == "@ts" and not expr.path:
                kind = "Long"  # current_timestamp()
            elif isinstance(expr, Name):
                kind = fields.get(_dotted(expr) or "", "any")
            params.append((out, kind))
        return _Signature("complex", tuple(params), len(params))

    def _check_window(self, decl: WindowDecl) -> None:
        src = decl.source
        sig = self._resolve(src.name, None, src.loc or decl.loc)
        for other in decl.more_inputs:  # a union: the same fields, in the same order
            osig = self._resolve(other, None, src.loc or decl.loc)
            if sig is None or osig is None or sig.params is None or osig.params is None:
                continue
            if [n for n, _ in osig.params] != [n for n, _ in sig.params]:
                self._report(src.loc or decl.loc,
                             f"window statement '{decl.name}' reads {src.name} and {other} "
                             "as one stream: they need the same fields in the same order "
                             f"({', '.join(n for n, _ in sig.params)} / "
                             f"{', '.join(n for n, _ in osig.params)})")
        if src.args is not None:
            self._report(src.loc or decl.loc, f"the input '{src.name}' of window statement "
                         f"'{decl.name}' takes no parameter list; read its fields by name")
        fields = self._window_fields(decl, sig)
        parts: list[tuple[str, Expr]] = []
        if src.where is not None:
            parts.append((f"filter on '{src.name}'", src.where))
        parts += [(f"select item {i + 1}", e) for i, (_, e) in enumerate(decl.select)]
        parts += [(f"group by {i + 1}", g) for i, g in enumerate(decl.group_by)]
        if decl.having is not None:
            parts.append(("having", decl.having))
        if fields is not None:
            shown = ", ".join(sorted(fields)) or "(none)"
            for where, expr in parts:
                for n in _names(expr):
                    full = _dotted(n)
                    if full not in fields and full not in ("*", "@ts"):
                        self._report(n.loc or decl.loc, f"unknown name '{full}' in the "
                                     f"{where} of '{decl.name}'; available: {shown}")
        typer = _Typer(fields or {}, self._report)
        for where, expr in parts:
            kind = typer.infer(expr)
            if isinstance(expr, Call) and expr.func in ("count", "sum", "avg"):
                kind = "int" if expr.func == "count" else "float"  # an aggregate's value
            for call in _calls(expr):
                if call.func in ("sum", "avg") and len(call.args) == 1:
                    arg_kind = typer.infer(call.args[0])
                    if arg_kind in ("str", "bool"):
                        self._report(call.loc or decl.loc, f"{call.func}() needs numbers, not "
                                     f"{typer.describe(call.args[0], arg_kind)}")
            if (where == "having" or where.startswith("filter")) \
                    and kind not in ("bool", "any", "null"):
                self._report(_expr_start(expr) or decl.loc, f"the {where} of '{decl.name}' "
                             f"must be a condition, not {_kind_text(kind)}")

    # ------------------------------------------------------------ filters

    def _check_filter(self, atom: Atom, sig: _Signature | None, variables: set[str],
                      typed: Mapping[str, str]) -> None:
        assert atom.where is not None
        fields: dict[str, str] | None = None
        if sig is not None and sig.params is not None:
            fields = dict(sig.params)
        if fields is not None:
            if atom.alias is not None:
                fields.update(_aliased(atom.alias, sig.params))
            available = sorted(set(fields) | variables)
            aliases = {v.split(".", 1)[0] for v in (*fields, *variables) if "." in v}
            fields.update(typed)  # a[k].<field> of repeated tags (checked on their own)
            for name in _names(atom.where):
                if indexed(name.name) is not None:
                    continue
                full = _dotted(name)
                if name.name not in aliases:
                    full = name.name  # a dotted path into a value: only its head is checked
                if full not in fields and full not in variables:
                    shown = ", ".join(available) if available else "(none)"
                    self._report(
                        name.loc or atom.loc,
                        f"unknown name '{full}' in filter on '{atom.name}'; "
                        f"available: {shown}",
                    )
        typer = _Typer(fields or {}, self._report)
        result = typer.infer(atom.where)
        if result not in ("bool", "any", "null"):
            self._report(
                _expr_start(atom.where) or atom.loc,
                f"filter on '{atom.name}' must be a condition, not {_kind_text(result)}",
            )

    # ------------------------------------------------------------ rules

    def _check_rule(self, rule: RuleDecl) -> None:
        for ref in rule.on:
            self._resolve(ref.name, ref.args, ref.loc or rule.loc)
        if rule.action is not None and rule.opaque_action is not None:
            self._report(rule.loc, f"rule '{rule.name}' has both `action` and an action block")
        elif rule.action is None and rule.opaque_action is None:
            self._warn(rule.loc, f"rule '{rule.name}' has no action")
        if rule.opaque_action is not None:
            self._warn(rule.loc, OPAQUE_ACTION_WARNING)

    # ------------------------------------------------------------ cycles

    def _check_cycles(self) -> None:
        complexes: dict[str, ComplexEventDecl] = {}
        for d in self.module.decls:
            sig = self.events.get(d.name)
            if isinstance(d, ComplexEventDecl) and sig is not None and sig.kind == "complex" \
                    and d.name not in self.deep:
                complexes.setdefault(d.name, d)
        graph = {
            name: [a for a in atoms(d.body) if a.name in complexes]
            for name, d in complexes.items()
        }
        for component in _strongly_connected(
            list(complexes), {n: [a.name for a in refs] for n, refs in graph.items()}
        ):
            members = set(component)
            start = component[0]
            if len(members) == 1 and start not in {a.name for a in graph[start]}:
                continue
            path = _cycle_path(start, members, graph)
            first_atom = next(a for a in graph[start] if a.name == path[1])
            self._report(
                first_atom.loc or complexes[start].loc,
                "cyclic reference between complex events: " + " -> ".join(path),
            )


def _cycle_path(start: str, members: set[str], graph: dict[str, list[Atom]]) -> list[str]:
    """Shortest reference path start -> ... -> start inside one strongly connected component."""
    parents: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for atom in graph[node]:
            target = atom.name
            if target not in members:
                continue
            if target == start:
                path = [node]
                while (parent := parents[path[-1]]) is not None:
                    path.append(parent)
                return [*reversed(path), start]
            if target not in parents:
                parents[target] = node
                queue.append(target)
    return [start, start]  # pragma: no cover - a component always leads back to its start


def _strongly_connected(nodes: list[str], edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm; components keep declaration order of their members."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[list[str]] = []
    order = {n: i for i, n in enumerate(nodes)}

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            result.append(sorted(component, key=order.__getitem__))

    for node in nodes:
        if node not in index:
            visit(node)
    return result


# ---------------------------------------------------------------- external signatures


def _external_signature(spec: Any) -> _Signature:
    """Signature of an event declared outside the module (see module docstring)."""
    if isinstance(spec, EventType):
        params = tuple((p.name, p.declared_type or p.type) for p in spec.params)
        return _Signature("external", params, len(params))
    if isinstance(spec, AtomicEventDecl | QueryEventDecl | ComplexEventDecl):
        params = tuple((p.name, p.type) for p in spec.params)
        return _Signature("external", params, len(params))
    if isinstance(spec, int) and not isinstance(spec, bool):
        return _Signature("external", None, spec)
    if spec is None:
        return _Signature("external", None, None)
    items: list[tuple[str, str]] = []
    for item in spec:
        if isinstance(item, str):
            items.append((item, "any"))
        elif isinstance(item, Param):
            items.append((item.name, item.type))
        elif isinstance(item, ParamSpec):
            items.append((item.name, item.declared_type or item.type))
        else:
            name, type_ = item
            items.append((str(name), str(type_)))
    return _Signature("external", tuple(items), len(items))


# ---------------------------------------------------------------- filter typing


@overload
def _dotted(expr: Name) -> str: ...


@overload
def _dotted(expr: Expr) -> str | None: ...


def _dotted(expr: Expr) -> str | None:
    return ".".join((expr.name, *expr.path)) if isinstance(expr, Name) else None


def _aliased(alias: str, params: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """Esper-style ``alias.field`` names of an aliased input's fields, with their types."""
    return {f"{alias}.{f}": t for f, t in params}


def _calls(expr: Expr) -> Iterator[Call]:
    return (e for e in expr_nodes(expr) if isinstance(e, Call))


def _expr_start(expr: Expr) -> Loc:
    """Earliest location in a condition (where its source text begins)."""
    locs = [e.loc for e in expr_nodes(expr) if e.loc is not None]
    return min(locs) if locs else None


def _kind_text(kind: str) -> str:
    return {
        "int": "a number",
        "float": "a number",
        "str": "a string",
        "bool": "a boolean",
        "null": "null",
    }.get(kind, "a value")


def _const_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "any"


def _family(kind: str) -> str:
    return "num" if kind in _NUMERIC else kind


class _Typer:
    """Infers the simple type of a filter expression and reports obvious type errors."""

    def __init__(self, fields: Mapping[str, str], report: Any) -> None:
        self.fields = fields
        self.report = report

    def describe(self, expr: Expr, kind: str) -> str:
        if isinstance(expr, Name):
            full = ".".join((expr.name, *expr.path))
            if full in self.fields:
                return f"{self.fields[full]} field '{full}'"
        return _kind_text(kind)

    def infer(self, expr: Expr) -> str:
        if isinstance(expr, Const):
            return _const_type(expr.value)
        if isinstance(expr, Name):
            full = ".".join((expr.name, *expr.path))
            if full in self.fields:
                return canonical_type(self.fields[full])
            return "any"
        if isinstance(expr, Call):
            for arg in expr.args:
                self.infer(arg)
            return _RETURNS.get(expr.func, "any") if len(expr.args) == 1 else "any"
        if isinstance(expr, Unary):
            kind = self.infer(expr.operand)
            if expr.op == "not":
                self._need_bool("not", expr.operand, kind, expr.loc)
                return "bool"
            if kind in ("str", "bool"):
                self.report(expr.loc, f"unary minus on {self.describe(expr.operand, kind)}")
                return "any"
            return kind if kind in _NUMERIC else "any"
        if isinstance(expr, Binary):
            return self._binary(expr)
        return "any"

    def _need_bool(self, op: str, operand: Expr, kind: str, loc: Loc) -> None:
        if kind in ("int", "float", "str"):
            self.report(
                operand.loc or loc,
                f"'{op}' needs a boolean operand, not {self.describe(operand, kind)}",
            )

    def _binary(self, expr: Binary) -> str:
        left = self.infer(expr.left)
        right = self.infer(expr.right)
        op = expr.op
        if op in ("and", "or"):
            self._need_bool(op, expr.left, left, expr.loc)
            self._need_bool(op, expr.right, right, expr.loc)
            return "bool"
        known = {"any", "null"}
        if op in _COMPARISONS:
            if left not in known and right not in known and _family(left) != _family(right):
                self.report(
                    expr.loc,
                    f"cannot compare {self.describe(expr.left, left)} "
                    f"with {self.describe(expr.right, right)}",
                )
            return "bool"
        if op in _ARITHMETIC:
            kinds = {left, right}
            if op == "+" and kinds == {"str"}:
                return "str"
            for side, kind in ((expr.left, left), (expr.right, right)):
                if kind in ("str", "bool"):
                    self.report(expr.loc, f"arithmetic '{op}' on {self.describe(side, kind)}")
                    return "any"
            if kinds <= _NUMERIC:
                return "int" if kinds == {"int"} and op != "/" else "float"
            return "any"
        return "any"
