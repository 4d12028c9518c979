"""cepflow's own evaluator for filter conditions: an Expr AST becomes a Python closure.

Nothing from a pattern file is ever handed to ``eval``/``exec``: every node maps to a small
closure over values. Names resolve first to fields of the filtered event (by the event type's
declared parameter names), then to variables bound earlier in the match. ``null`` (None) is
absorbing in arithmetic and makes the ordering comparisons false, as in SQL; ``==``/``!=``
compare it as a value (``x == null`` is the null test; unification agrees); ``and``/``or``
treat None as false. Functions are looked up in a registry of Python callables registered by name.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

from cepflow.language import ast

Evaluator = Callable[[Any, dict[str, Any]], Any]


class ExpressionError(Exception):
    """A condition that cannot be compiled (unknown name or function), with its location."""

    def __init__(self, message: str, loc: ast.Loc = None) -> None:
        super().__init__(message)
        self.loc = loc


BUILTINS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "min": min,
    "max": max,
    "round": round,
    "floor": math.floor,
    "ceil": math.ceil,
    "sqrt": math.sqrt,
    "len": len,
    "lower": lambda s: s.lower(),
    "upper": lambda s: s.upper(),
    "str": str,
}

_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "%": operator.mod,
}
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def compile_expr(
    expr: ast.Expr,
    fields: Mapping[str, int],
    functions: Mapping[str, Callable[..., Any]] | None = None,
    variables: frozenset[str] | None = None,
) -> Evaluator:
    """Compile ``expr`` to ``f(event, bindings)``.

    ``fields`` maps the filtered event's parameter names to positions; ``variables`` (if given)
    are the pattern variables a name may refer to; any other name is an ExpressionError.
    """
    funcs = {**BUILTINS, **(functions or {})}

    def comp(e: ast.Expr) -> Evaluator:
        if isinstance(e, ast.Const):
            v = e.value
            return lambda ev, b: v
        if isinstance(e, ast.Name):
            if e.path:  # alias.field of an Esper-style pattern: a variable (compiler.esper)
                dotted = ".".join((e.name, *e.path))
                if variables is not None and dotted not in variables:
                    raise ExpressionError(
                        f"dotted name '{dotted}' is not supported here", e.loc)
                return lambda ev, b: b.get(dotted)
            name = e.name
            if name in fields:
                i = fields[name]
                return lambda ev, b: ev.params[i]
            if variables is not None and name not in variables:
                known = ", ".join(sorted(set(fields) | set(variables))) or "none"
                raise ExpressionError(f"unknown name '{name}' (known: {known})", e.loc)
            return lambda ev, b: b.get(name)
        if isinstance(e, ast.Unary):
            inner = comp(e.operand)
            if e.op == "not":
                return lambda ev, b: not inner(ev, b)

            def neg(ev: Any, b: dict[str, Any]) -> Any:
                v = inner(ev, b)
                return None if v is None else -v

            return neg
        if isinstance(e, ast.Binary):
            left, right = comp(e.left), comp(e.right)
            op = e.op
            if op == "and":
                return lambda ev, b: bool(left(ev, b)) and bool(right(ev, b))
            if op == "or":
                return lambda ev, b: bool(left(ev, b)) or bool(right(ev, b))
            if op in _COMPARE:
                cmp = _COMPARE[op]
                if op in ("==", "!="):
                    return lambda ev, b: cmp(left(ev, b), right(ev, b))

                def compare(ev: Any, b: dict[str, Any]) -> bool:
                    x, y = left(ev, b), right(ev, b)
                    if x is None or y is None:
                        return False
                    try:
                        return cmp(x, y)
                    except TypeError:
                        return False

                return compare
            if op in _ARITH:
                fn = _ARITH[op]

                def arith(ev: Any, b: dict[str, Any]) -> Any:
                    x, y = left(ev, b), right(ev, b)
                    if x is None or y is None:
                        return None
                    try:
                        return fn(x, y)
                    except (ZeroDivisionError, TypeError):
                        return None

                return arith
            raise ExpressionError(f"unknown operator '{op}'", e.loc)
        if isinstance(e, ast.Call):
            if e.func not in funcs:
                known = ", ".join(sorted(funcs))
                raise ExpressionError(f"unknown function '{e.func}' (registered: {known})", e.loc)
            fn_call = funcs[e.func]
            args = [comp(a) for a in e.args]

            def call(ev: Any, b: dict[str, Any]) -> Any:
                vals = [a(ev, b) for a in args]
                if any(v is None for v in vals):
                    return None
                return fn_call(*vals)

            return call
        raise ExpressionError(f"not an expression: {e!r}")

    return comp(expr)


def names_in(expr: ast.Expr) -> set[str]:
    """The plain names an expression refers to (fields or variables)."""
    if isinstance(expr, ast.Name):
        return {expr.name}
    if isinstance(expr, ast.Unary):
        return names_in(expr.operand)
    if isinstance(expr, ast.Binary):
        return names_in(expr.left) | names_in(expr.right)
    if isinstance(expr, ast.Call):
        out: set[str] = set()
        for a in expr.args:
            out |= names_in(a)
        return out
    return set()
