"""Expression trees of window statements: finding aggregates, rewriting, naming, parsing.

Statements use ``cepflow.language.ast`` expressions. Before they are compiled by cepflow's own
evaluator (``cepflow.compiler.evaluator.compile_expr``; nothing is ever ``eval``-ed), every
aggregate call is replaced by a placeholder name bound to the aggregate's current value, the
stream alias is dropped from ``a1.field`` and ``current_timestamp()`` becomes the output time.
"""

from __future__ import annotations

from cepflow.language import ast
from cepflow.language.ast import AGGREGATES
from cepflow.language.parser import parse_expr
from cepflow.language.printer import column_name
from cepflow.language.walk import expr_children as children
from cepflow.language.walk import rewrite

#: name bound to the output row's timestamp (what ``current_timestamp()`` becomes)
NOW = "$now"
CURRENT_TIMESTAMP = "current_timestamp"


def is_star(arg: ast.Expr) -> bool:
    """``*`` as an argument: ``count(*)`` may arrive as ``Call("count", (Name("*"),))``."""
    return isinstance(arg, ast.Name) and arg.name == "*" and not arg.path


def is_aggregate(expr: ast.Expr) -> bool:
    """An aggregate call: ``count()``/``count(*)``/``count(x)``, ``sum(x)``, ``avg(x)``,
    ``min(x)``, ``max(x)``. ``min(a, b)`` and ``max(a, b)`` stay the scalar functions."""
    if not isinstance(expr, ast.Call) or expr.func not in AGGREGATES:
        return False
    return len(expr.args) <= 1 if expr.func == "count" else len(expr.args) == 1


def aggregates_in(expr: ast.Expr) -> list[ast.Call]:
    """The aggregate calls of ``expr``, outermost first, in reading order (nested ones are
    inside their outer call's argument and are not listed)."""
    if is_aggregate(expr):
        assert isinstance(expr, ast.Call)
        return [expr]
    out: list[ast.Call] = []
    for c in children(expr):
        out.extend(aggregates_in(c))
    return out


def names_outside_aggregates(expr: ast.Expr) -> set[str]:
    """Field names ``expr`` reads outside any aggregate (Esper's non-aggregated properties)."""
    if is_aggregate(expr):
        return set()
    if isinstance(expr, ast.Name):
        return set() if is_star(expr) else {expr.name}
    out: set[str] = set()
    for c in children(expr):
        out |= names_outside_aggregates(c)
    return out


def names_in(expr: ast.Expr) -> set[str]:
    """Every field name ``expr`` reads, inside aggregates too."""
    if isinstance(expr, ast.Name):
        return set() if is_star(expr) else {expr.name}
    out: set[str] = set()
    for c in children(expr):
        out |= names_in(c)
    return out


def bind_current_timestamp(expr: ast.Expr) -> ast.Expr:
    """``current_timestamp()`` -> the placeholder bound to the output row's time (the call,
    or ``@ts``, which is what the parsers make of it)."""

    def fn(e: ast.Expr) -> ast.Expr | None:
        if isinstance(e, ast.Call) and e.func == CURRENT_TIMESTAMP and not e.args:
            return ast.Name(NOW, (), e.loc)
        if isinstance(e, ast.Name) and e.name == "@ts" and not e.path:
            return ast.Name(NOW, (), e.loc)
        return None

    return rewrite(expr, fn)


#: the output name of an unaliased select item (a field's name, else the expression's text,
#: as Esper names such columns); shared with the checker
default_alias = column_name


def parse(text: str) -> ast.Expr:
    """Parse a select, group-by, having or filter expression written as in EPL
    (``cepflow.language.parser.parse_expr``, which reads ``count(*)`` as ``count()``)."""
    return parse_expr(text)
