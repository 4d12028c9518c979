"""Esper's pattern semantics on cepflow's automata (docs/esper.md).

An Esper-style complex event — from an ``.epl`` file or a cepflow pattern with ``every`` or
event aliases — is *lowered* to the ordinary algebra before it is compiled, so it runs on the
same automata and engine:

* ``every`` placement becomes the pattern's **start policy**: ``every A -> P`` (and
  ``every-distinct(keys) A -> P``) starts a new instance at each ``A`` (*spawn*);
  ``every (P)`` runs one instance at a time and starts the next after it completed
  (*restart*); without ``every`` the pattern matches once (*once*). ``every`` anywhere else is
  reported as not supported yet.
* **Aliases** ``a1 = Motorbike(...)`` become unification variables ``a1.<field>`` for every
  field of the event; a top-level conjunct ``a2.f = a1.g`` of ``a2``'s filter, where ``a1`` was
  bound before, becomes unification (``a2``'s ``f`` binds ``a1.g``), so it is served by the
  same per-key index as VEPL parameters and costs nothing more; other conditions stay filters.
* Esper's guard ``X -> (P where timer:within(Δ))`` starts when ``P`` is activated, i.e. at
  ``X``'s event: the EPL reader writes it as the window ``(X -> P)[Δ]`` (:func:`guard_windows`).
* The **select list** is kept, with names rewritten to the variables above; it computes the
  complex event's parameters at completion (``@ts`` is the match's time).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from cepflow.compiler.normalize import fol_items
from cepflow.events.model import EventType
from cepflow.language import ast

StartPolicy = Literal["once", "restart", "spawn"]


class EsperError(Exception):
    """An Esper construct cepflow cannot lower, with its location."""

    def __init__(self, message: str, loc: ast.Loc = None) -> None:
        super().__init__(message)
        self.loc = loc


@dataclass(frozen=True)
class EsperPlan:
    """How instances of a lowered pattern begin (see module docstring)."""

    start: StartPolicy
    distinct: tuple[ast.Expr, ...] = ()
    expiry: float | None = None
    #: the pattern as written (the lowered one has variables like ``a1.speed``)
    text: str = ""


def is_esper(decl: ast.ComplexEventDecl) -> bool:
    """Does ``decl`` use Esper's pattern semantics (context, ``every``, aliases, select)?"""
    if decl.context == "esper" or decl.select is not None:
        return True

    def walk(p: ast.Pattern) -> bool:
        if isinstance(p, ast.Every):
            return True
        if isinstance(p, ast.Atom):
            return p.alias is not None
        if isinstance(p, ast.Fol | ast.Or | ast.And):
            return walk(p.left) or walk(p.right)
        return walk(p.pattern)

    return walk(decl.body)


def _fol(items: list[ast.Pattern]) -> ast.Pattern:
    out = items[0]
    for it in items[1:]:
        out = ast.Fol(out, it, it.loc)
    return out


def _start_policy(body: ast.Pattern) -> tuple[ast.Pattern, EsperPlan]:
    """Strip the ``every`` that decides the start policy; reject the others."""
    if isinstance(body, ast.Window):  # (every a = A -> P)[Δ]: the window stays around it all
        inner, plan = _start_policy(body.pattern)
        return replace(body, pattern=inner), plan
    if isinstance(body, ast.Every):
        inner = body.pattern
        single = isinstance(inner, ast.Atom)
        if body.distinct and not single:
            raise EsperError("every-distinct around a sequence is not supported yet; put it on "
                             "the first event (every-distinct(k) a = A -> ...)", body.loc)
        return inner, EsperPlan("spawn" if single else "restart", body.distinct, body.expiry)
    items = fol_items(body)
    if len(items) > 1 and isinstance(items[0], ast.Every):
        first = items[0]
        if not isinstance(first.pattern, ast.Atom):
            raise EsperError("every in front of a parenthesised group followed by more pattern "
                             "is not supported yet (write every (A -> B) or every a = A -> B)",
                             first.loc)
        return _fol([first.pattern, *items[1:]]), EsperPlan("spawn", first.distinct,
                                                           first.expiry)
    return body, EsperPlan("once")


def _reject_inner_every(p: ast.Pattern) -> None:
    if isinstance(p, ast.Every):
        raise EsperError("every inside a pattern (A -> every B) is not supported yet; "
                         "every may stand at the start of the pattern or around all of it",
                         p.loc)
    if isinstance(p, ast.Fol | ast.Or | ast.And):
        _reject_inner_every(p.left)
        _reject_inner_every(p.right)
    elif not isinstance(p, ast.Atom):
        _reject_inner_every(p.pattern)


def guard_windows(p: ast.Pattern) -> ast.Pattern:
    """Esper's guard ``X -> (P where timer:within(Δ))`` starts when ``P`` is activated, i.e. at
    ``X``'s event: with ``X`` one event that is the window ``(X -> P)[Δ]`` (used by the EPL
    reader; in cepflow syntax a window means what it says)."""
    if isinstance(p, ast.Fol):
        items = [guard_windows(i) for i in fol_items(p)]
        out: list[ast.Pattern] = [items[0]]
        for it in items[1:]:
            prev = out[-1]
            single = isinstance(prev, ast.Atom) or (isinstance(prev, ast.Every)
                                                    and isinstance(prev.pattern, ast.Atom))
            if isinstance(it, ast.Window) and it.kind == "within" and single:
                out[-1] = ast.Window(ast.Fol(prev, it.pattern, it.loc), it.duration,
                                     it.kind, it.loc)
            else:
                out.append(it)
        return _fol(out)
    if isinstance(p, ast.Or | ast.And):
        return type(p)(guard_windows(p.left), guard_windows(p.right), p.loc)
    if isinstance(p, ast.Atom):
        return p
    return replace(p, pattern=guard_windows(p.pattern))


def _conjuncts(e: ast.Expr) -> list[ast.Expr]:
    if isinstance(e, ast.Binary) and e.op == "and":
        return [*_conjuncts(e.left), *_conjuncts(e.right)]
    return [e]


def _and(items: list[ast.Expr]) -> ast.Expr | None:
    out: ast.Expr | None = None
    for it in items:
        out = it if out is None else ast.Binary("and", out, it, it.loc)
    return out


class _Aliases:
    """Rewrites aliased atoms to unification variables, left to right (binding order)."""

    def __init__(self, schemas: Mapping[str, EventType]) -> None:
        self.schemas = schemas
        self.bound: dict[str, EventType] = {}   # alias -> its event type
        self.rename: dict[str, str] = {}        # "a2.f" -> the variable holding it

    def var(self, alias: str, fld: str, loc: ast.Loc) -> str:
        et = self.bound.get(alias)
        if et is None:
            raise EsperError(f"'{alias}' is not bound before this point", loc)
        if fld not in et.param_names:
            raise EsperError(f"'{alias}' ({et.name}) has no field '{fld}' "
                             f"(fields: {', '.join(et.param_names)})", loc)
        name = f"{alias}.{fld}"
        return self.rename.get(name, name)

    def expr(self, e: ast.Expr, own: str | None = None) -> ast.Expr:
        """Names ``alias.field`` → the variable; the atom's own alias → its bare field."""
        if isinstance(e, ast.Name):
            if not e.path:
                return e
            if len(e.path) != 1:
                raise EsperError(f"'{e.name}.{'.'.join(e.path)}': only alias.field is "
                                 "supported", e.loc)
            if e.name == own:
                return ast.Name(e.path[0], (), e.loc)
            alias, fld = self.var(e.name, e.path[0], e.loc).split(".", 1)
            return ast.Name(alias, (fld,), e.loc)
        if isinstance(e, ast.Unary):
            return ast.Unary(e.op, self.expr(e.operand, own), e.loc)
        if isinstance(e, ast.Binary):
            return ast.Binary(e.op, self.expr(e.left, own), self.expr(e.right, own), e.loc)
        if isinstance(e, ast.Call):
            return ast.Call(e.func, tuple(self.expr(a, own) for a in e.args), e.loc)
        return e

    def atom(self, a: ast.Atom) -> ast.Atom:
        if a.alias is None:
            if a.where is not None:
                return replace(a, where=self.expr(a.where))
            return a
        et = self.schemas.get(a.name)
        if et is None:
            raise EsperError(f"unknown event type '{a.name}'", a.loc)
        if a.args is not None:
            raise EsperError(f"'{a.alias} = {a.name}(...)': an aliased event takes a filter, "
                             "not positional parameters", a.loc)
        if a.alias in self.bound:
            raise EsperError(f"alias '{a.alias}' is bound twice", a.loc)
        args: list[str] = [f"{a.alias}.{f}" for f in et.param_names]
        rest: list[ast.Expr] = []
        for c in _conjuncts(a.where) if a.where is not None else []:
            unified = self._unify(c, a.alias, et)
            if unified is None:
                rest.append(c)
                continue
            i, var = unified
            if args[i] != f"{a.alias}.{et.param_names[i]}":
                rest.append(c)  # this field already unifies with another variable
                continue
            args[i] = var
            self.rename[f"{a.alias}.{et.param_names[i]}"] = var
        where = _and([self.expr(c, a.alias) for c in rest])
        self.bound[a.alias] = et
        return ast.Atom(a.name, tuple(args), where, None, a.loc)

    def _unify(self, c: ast.Expr, own: str, et: EventType) -> tuple[int, str] | None:
        """``own.f == other.g`` (either order, ``=`` or ``==``) with ``other`` bound before."""
        if not (isinstance(c, ast.Binary) and c.op == "=="):
            return None
        sides = [c.left, c.right]
        for mine, theirs in (sides, sides[::-1]):
            if (isinstance(mine, ast.Name) and isinstance(theirs, ast.Name)
                    and len(mine.path) == 1 and len(theirs.path) == 1
                    and mine.name == own and theirs.name != own and theirs.name in self.bound
                    and mine.path[0] in et.param_names):
                return et.param_names.index(mine.path[0]), self.var(theirs.name,
                                                                    theirs.path[0], theirs.loc)
        return None

    def pattern(self, p: ast.Pattern) -> ast.Pattern:
        if isinstance(p, ast.Atom):
            return self.atom(p)
        if isinstance(p, ast.Fol | ast.And):
            left = self.pattern(p.left)
            return type(p)(left, self.pattern(p.right), p.loc)
        if isinstance(p, ast.Or):  # after an or, only aliases both branches bind are bound
            before = dict(self.bound)
            left = self.pattern(p.left)
            after_left, self.bound = self.bound, before
            right = self.pattern(p.right)
            self.bound = {k: v for k, v in self.bound.items() if k in after_left}
            return ast.Or(left, right, p.loc)
        return replace(p, pattern=self.pattern(p.pattern))


def lower(decl: ast.ComplexEventDecl, schemas: Mapping[str, EventType]
          ) -> tuple[ast.ComplexEventDecl, EsperPlan]:
    """The plain-algebra form of an Esper-style declaration and its start policy."""
    body, plan = _start_policy(decl.body)
    _reject_inner_every(body)
    aliases = _Aliases(schemas)
    body = aliases.pattern(body)
    distinct = tuple(aliases.expr(d) for d in plan.distinct)
    select = decl.select
    params = decl.params
    if select is None and not decl.params:
        # no select list: the fields of every alias, as Esper's select * gives the tagged events
        select = tuple((f"{a}.{f}", ast.Name(a, (f,)))
                       for a, et in aliases.bound.items() for f in et.param_names)
    if select is not None:
        select = tuple((name, aliases.expr(e)) for name, e in select)
        if not params:
            params = tuple(ast.Param(name) for name, _ in select)
    lowered = replace(decl, body=body, context="esper", select=select, params=params)
    from cepflow.language.printer import format_pattern

    return lowered, replace(plan, distinct=distinct, text=format_pattern(decl.body))
