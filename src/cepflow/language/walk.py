"""Walking and rewriting the AST: what a node's children are, written once.

Pattern trees (:data:`~cepflow.language.ast.Pattern`) and value expressions
(:data:`~cepflow.language.ast.Expr`) are walked by the checker, the Esper lowering, the compiler
and the window runtime; they all use the functions here, so a new node kind is taught to every
one of them in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TypeVar

from cepflow.language import ast

T = TypeVar("T")

# ---------------------------------------------------------------- patterns


def pattern_children(node: ast.Pattern) -> tuple[ast.Pattern, ...]:
    """The direct sub-patterns of ``node`` (an ``until``: the repeated one, then the ending)."""
    if isinstance(node, ast.Fol | ast.Or | ast.And):
        return (node.left, node.right)
    if isinstance(node, ast.Mult | ast.Not | ast.Window | ast.Every):
        return (node.pattern,)
    if isinstance(node, ast.Until):
        return (node.pattern, node.until)
    return ()  # Atom, Interval, At


def _preorder(node: T, children: Callable[[T], tuple[T, ...]]) -> Iterator[T]:
    yield node
    for child in children(node):
        yield from _preorder(child, children)


def walk(node: ast.Pattern) -> Iterator[ast.Pattern]:
    """``node`` and every pattern below it, in pre-order (left to right)."""
    return _preorder(node, pattern_children)


def map_atoms(node: ast.Pattern, fn: Callable[[ast.Atom], ast.Atom]) -> ast.Pattern:
    """``node`` rebuilt with each atom ``a`` below it replaced by ``fn(a)`` (the rest kept)."""
    if isinstance(node, ast.Atom):
        return fn(node)
    if isinstance(node, ast.Fol | ast.Or | ast.And):
        return replace(node, left=map_atoms(node.left, fn), right=map_atoms(node.right, fn))
    if isinstance(node, ast.Mult | ast.Not | ast.Window | ast.Every):
        return replace(node, pattern=map_atoms(node.pattern, fn))
    if isinstance(node, ast.Until):
        return replace(node, pattern=map_atoms(node.pattern, fn),
                       until=map_atoms(node.until, fn))
    return node  # Interval, At


def atoms(node: ast.Pattern) -> Iterator[ast.Atom]:
    """The atoms (event pattern references) of ``node``, left to right."""
    return (n for n in walk(node) if isinstance(n, ast.Atom))


def bound_variables(node: ast.Pattern) -> tuple[set[str], set[str]]:
    """(variables every match of ``node`` binds, variables some match binds): positional
    parameters of atoms; ``or`` binds surely what both sides bind, an optional repetition
    (``{*}``, ``{0}``) nothing surely, ``NOT`` and ``timer:interval`` nothing."""
    if isinstance(node, ast.Atom):
        names = {a for a in node.args or () if not ast.is_wildcard(a)}
        return set(names), set(names)
    if isinstance(node, ast.Fol | ast.And | ast.Or):
        ld, lp = bound_variables(node.left)
        rd, rp = bound_variables(node.right)
        return (ld & rd if isinstance(node, ast.Or) else ld | rd), lp | rp
    if isinstance(node, ast.Mult):
        inner_d, inner_p = bound_variables(node.pattern)
        return (set() if node.count in ("*", 0) else inner_d), inner_p
    if isinstance(node, ast.Window | ast.Every):
        return bound_variables(node.pattern)
    if isinstance(node, ast.Until):  # the repetitions may be none; the ending always binds
        inner_d, inner_p = bound_variables(node.pattern)
        until_d, until_p = bound_variables(node.until)
        return (until_d | (inner_d if (node.low or 0) > 0 else set())), inner_p | until_p
    return set(), set()


def sure_variables(node: ast.Pattern) -> set[str]:
    """The variables every match of ``node`` binds."""
    return bound_variables(node)[0]


def unused_variables(node: ast.Pattern, reads: tuple[str, ...] = ()) -> frozenset[str]:
    """Variables one atom binds that nothing else reads — no other atom, no filter, none of
    ``reads`` (the complex event's parameters, select list, distinct keys): like ``_`` they
    constrain nothing."""
    count: dict[str, int] = {}
    read = set(reads)

    def visit(n: ast.Pattern, times: int) -> None:
        if isinstance(n, ast.Atom):
            for v in n.args or ():
                if not ast.is_wildcard(v):
                    count[v] = count.get(v, 0) + times
            if n.where is not None:
                read.update(dotted(x) for x in names(n.where))
            return
        if isinstance(n, ast.Mult | ast.Until) or (
                isinstance(n, ast.Every) and n is not node):
            times = 2  # a repetition unifies the variable with itself across its rounds
        for child in pattern_children(n):
            visit(child, times)

    visit(node, 1)
    return frozenset(v for v, k in count.items() if k == 1 and v not in read)


# ---------------------------------------------------------------- expressions

#: a rewriting step: the replacement of a node, or None to keep it (and rewrite below it)
Rewrite = Callable[[ast.Expr], ast.Expr | None]


def expr_children(expr: ast.Expr) -> tuple[ast.Expr, ...]:
    """The direct operands of ``expr``."""
    if isinstance(expr, ast.Unary):
        return (expr.operand,)
    if isinstance(expr, ast.Binary):
        return (expr.left, expr.right)
    if isinstance(expr, ast.Call):
        return expr.args
    return ()


def expr_nodes(expr: ast.Expr) -> Iterator[ast.Expr]:
    """``expr`` and every expression below it, in pre-order."""
    return _preorder(expr, expr_children)


def names(expr: ast.Expr) -> Iterator[ast.Name]:
    """The names ``expr`` reads, left to right."""
    return (n for n in expr_nodes(expr) if isinstance(n, ast.Name))


def dotted(name: ast.Name) -> str:
    """The variable a name reads: ``a1.speed`` for the field of a tag, else the name."""
    return ".".join((name.name, *name.path))


def rewrite(expr: ast.Expr, fn: Rewrite) -> ast.Expr:
    """Rebuild ``expr`` top-down: where ``fn(node)`` returns a node it replaces the subtree."""
    new = fn(expr)
    if new is not None:
        return new
    if isinstance(expr, ast.Unary):
        return ast.Unary(expr.op, rewrite(expr.operand, fn), expr.loc)
    if isinstance(expr, ast.Binary):
        return ast.Binary(expr.op, rewrite(expr.left, fn), rewrite(expr.right, fn), expr.loc)
    if isinstance(expr, ast.Call):
        return ast.Call(expr.func, tuple(rewrite(a, fn) for a in expr.args), expr.loc)
    return expr


def strip_alias(expr: ast.Expr, alias: str | None) -> ast.Expr:
    """``a1.location`` -> ``location`` for the alias ``a1`` (an event's own tag)."""
    if alias is None:
        return expr

    def fn(e: ast.Expr) -> ast.Expr | None:
        if isinstance(e, ast.Name) and e.name == alias and len(e.path) == 1:
            return ast.Name(e.path[0], (), e.loc)
        return None

    return rewrite(expr, fn)
