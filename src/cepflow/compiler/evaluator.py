"""cepflow's own evaluator for filter conditions: an Expr AST becomes a Python closure.

Nothing from a pattern file is ever handed to ``eval``/``exec``: every node maps to a small
closure over values. Names resolve first to fields of the filtered event (by the event type's
declared parameter names), then to variables bound earlier in the match. ``null`` (None) is
absorbing in arithmetic and makes the ordering comparisons false, as in SQL; ``==``/``!=``
compare it as a value (``x == null`` is the null test; unification agrees); ``and``/``or``
treat None as false. Functions are looked up in a registry of Python callables registered by name;
a call with a null argument is null, unless the function is marked ``accepts_null = True``
(it then receives the nulls: constructors such as the Petri nets' ``tuple``).

**Evaluation errors** (docs/semantics.md, "Evaluation errors"). A compiled expression that
fails on a value — ``sqrt(-4)``, ``floor(NaN)``, a registered function that raises, a text or
list result longer than :data:`MAX_SEQUENCE` — does not raise out of the engine: the failure
(expression, location, message, the event it was evaluated on) goes to the failure sink the
caller installed (:func:`install_sink`; the engine installs its own) and the expression's value
is ``null``, so a failing condition is false. Without an installed sink the expression raises
:class:`EvaluationError` naming the expression and its location. Type mismatches and division by
zero are not failures: they are ``null`` (as above).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from threading import get_ident
from typing import Any

from cepflow.language import ast

Evaluator = Callable[[Any, dict[str, Any]], Any]


class ExpressionError(Exception):
    """A condition that cannot be compiled (unknown name or function), with its location."""

    def __init__(self, message: str, loc: ast.Loc = None) -> None:
        super().__init__(message)
        self.loc = loc


#: the longest text, list or tuple an expression may produce (characters or items): a longer
#: result is an evaluation error, refused before it is allocated where it can be foreseen
#: (``*`` of a text by a number) and as soon as it exists otherwise (``+``, functions)
MAX_SEQUENCE = 1_000_000


class EvaluationError(Exception):
    """An expression that failed on a value, raised where no failure sink is installed."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.describe())
        self.failure = failure


@dataclass(slots=True)
class Failure:
    """One failed evaluation: the expression (AST), what it belongs to (``origin``), the
    error, and the event it was evaluated on (None when it reads only bindings). A rule
    action that raised is one too (``expr`` None, ``label`` and ``loc`` say which)."""

    expr: ast.Expr | None
    origin: str | None
    error: BaseException
    event: Any = None
    label: str | None = None
    loc: ast.Loc = None

    @property
    def text(self) -> str:
        """The expression as it reads in a pattern file (or the label given)."""
        if self.label is not None or self.expr is None:
            return self.label or "?"
        from cepflow.language.printer import format_expr

        try:
            return format_expr(self.expr)
        except Exception:  # (a node the printer does not know: its repr, not a crash)
            return repr(self.expr)

    @property
    def message(self) -> str:
        err = self.error
        if isinstance(err, EvaluationError):
            return str(err)
        text = str(err)
        return f"{type(err).__name__}: {text}" if text else type(err).__name__

    def where(self, source: str | None = None) -> str:
        """``FILE:LINE:COL`` where the expression starts (``LINE:COL`` without a file name)."""
        loc = self.loc
        if self.expr is not None:
            from cepflow.language.walk import expr_nodes

            locs = [n.loc for n in expr_nodes(self.expr) if n.loc]
            loc = min(locs) if locs else None
        pos = f"{loc[0]}:{loc[1]}" if loc else "?:?"
        return f"{source}:{pos}" if source else pos

    def describe(self, source: str | None = None, origin: bool = True) -> str:
        """``FILE:LINE:COL: origin: `text` failed: message`` — the failure in one line."""
        who = f"{self.origin}: " if self.origin and origin else ""
        return f"{self.where(source)}: {who}`{self.text}` failed: {self.message}"


#: per thread (by ``threading.get_ident``), the list failed evaluations go to (absent or None:
#: raise EvaluationError). A dict, not a ``threading.local``: the engine swaps its sink in and
#: out around every call, and a dict item costs a tenth of a thread-local attribute.
SINKS: dict[int, list[Failure] | None] = {}


def install_sink(failures: list[Failure] | None) -> list[Failure] | None:
    """Send this thread's evaluation failures to ``failures`` (None: raise them); returns the
    sink installed before, to be installed again afterwards."""
    ident = get_ident()
    before = SINKS.get(ident)
    SINKS[ident] = failures
    return before


def _deliver(failure: Failure) -> None:
    """A failure to this thread's sink, else raised as EvaluationError. (A module function,
    not inline in the compiled closures: a closure shipped to a Spark worker by value would
    carry a copy of :data:`SINKS` instead of the worker's own.)"""
    sink = SINKS.get(get_ident())
    if sink is None:
        raise EvaluationError(failure) from failure.error
    sink.append(failure)


def _infallible(f: Evaluator) -> Evaluator:
    """Mark ``f`` as an evaluator that cannot fail (a constant, a variable's value)."""
    f.infallible = True  # type: ignore[attr-defined]
    return f


def can_fail(f: Evaluator) -> bool:
    """Whether evaluating ``f`` may fail (report to the sink): every compiled expression but
    a constant or a variable's value. An engine whose expressions cannot fail installs no
    sink per event (runtime.engine)."""
    return not getattr(f, "infallible", False)


def current_sink() -> list[Failure] | None:
    """The list this thread's evaluation failures go to (None: they raise)."""
    return SINKS.get(get_ident())


class ResultTooLong(Exception):
    """A text or list result over :data:`MAX_SEQUENCE` (an evaluation error)."""


def _bounded(value: Any) -> Any:
    """``value`` unless it is a text or list longer than :data:`MAX_SEQUENCE`."""
    if isinstance(value, str | bytes | list | tuple) and len(value) > MAX_SEQUENCE:
        raise ResultTooLong(f"result of {len(value):,} characters or items is longer than the "
                       f"limit of {MAX_SEQUENCE:,}")
    return value


def _repeat(x: Any, y: Any) -> Any:
    """``x * y``, refusing a repeated text or list longer than :data:`MAX_SEQUENCE` before
    it is allocated."""
    for seq, n in ((x, y), (y, x)):
        if (isinstance(seq, str | bytes | list | tuple) and isinstance(n, int)
                and len(seq) * max(n, 0) > MAX_SEQUENCE):
            raise ResultTooLong(f"result of {len(seq) * n:,} characters or items is longer "
                                f"than the limit of {MAX_SEQUENCE:,}")
    return x * y


def _remainder(x: Any, y: Any) -> Any:
    """``x % y`` of numbers; a text on the left is a type mismatch (no printf formatting,
    whose width could allocate without bound)."""
    if isinstance(x, str | bytes):
        raise TypeError("% of a text")
    return x % y


def _coalesce(*values: Any) -> Any:
    """The first of ``values`` that is not null (Esper's ``coalesce``), else null."""
    return next((v for v in values if v is not None), None)


_coalesce.accepts_null = True  # type: ignore[attr-defined]

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
    "coalesce": _coalesce,
}

_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": _repeat,
    "/": operator.truediv,
    "%": _remainder,
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
    origin: str | None = None,
    text: str | None = None,
) -> Evaluator:
    """Compile ``expr`` to ``f(event, bindings)``.

    ``fields`` maps the filtered event's parameter names to positions; ``variables`` (if given)
    are the pattern variables a name may refer to; any other name is an ExpressionError.
    ``origin`` names what the expression belongs to in failure reports (``pattern P``),
    ``text`` how it reads there when ``expr`` was rewritten from what the file says.
    A failure while evaluating goes to the installed sink and gives None (module docstring).
    """
    funcs = {**BUILTINS, **(functions or {})}

    def failed(err: Exception, ev: Any) -> None:
        """The whole expression failed on ``ev``: to the sink (value None), else raise."""
        _deliver(Failure(expr, origin, err, ev, text))

    # Every node that can fail catches at the top of the expression only (``top``): an inner
    # failure propagates to it, so ``not (sqrt(x) > 3)`` is false, not ``not null``. (A try
    # block costs nothing until it catches: no wrapper call is paid per evaluation.)
    def comp(e: ast.Expr, top: bool = False) -> Evaluator:
        if isinstance(e, ast.Const):
            v = e.value
            return _infallible(lambda ev, b: v)
        if isinstance(e, ast.Name):
            if e.path:  # alias.field of an Esper-style pattern: a variable (compiler.esper)
                dotted = ".".join((e.name, *e.path))
                if variables is not None and dotted not in variables:
                    raise ExpressionError(
                        f"dotted name '{dotted}' is not supported here", e.loc)
                return _infallible(lambda ev, b: b.get(dotted))
            name = e.name
            if name in fields:
                i = fields[name]
                return lambda ev, b: ev.params[i]
            if variables is not None and name not in variables:
                known = ", ".join(sorted(set(fields) | set(variables))) or "none"
                raise ExpressionError(f"unknown name '{name}' (known: {known})", e.loc)
            return _infallible(lambda ev, b: b.get(name))
        if isinstance(e, ast.Unary):
            inner = comp(e.operand)
            negate = e.op == "not"

            def unary(ev: Any, b: dict[str, Any]) -> Any:
                try:
                    v = inner(ev, b)
                    if negate:
                        return not v
                    return None if v is None else -v
                except Exception as err:
                    if not top:
                        raise
                    return failed(err, ev)

            return unary
        if isinstance(e, ast.Binary):
            left, right = comp(e.left), comp(e.right)
            op = e.op
            if op == "and" or op == "or":
                conj = op == "and"

                def logic(ev: Any, b: dict[str, Any]) -> Any:
                    try:
                        if conj:
                            return bool(left(ev, b)) and bool(right(ev, b))
                        return bool(left(ev, b)) or bool(right(ev, b))
                    except Exception as err:
                        if not top:
                            raise
                        return failed(err, ev)

                return logic
            if op in _COMPARE:
                cmp = _COMPARE[op]
                ordered = op not in ("==", "!=")

                def compare(ev: Any, b: dict[str, Any]) -> bool | None:
                    try:
                        x, y = left(ev, b), right(ev, b)
                        if not ordered:
                            return cmp(x, y)
                        if x is None or y is None:
                            return False
                        try:
                            return cmp(x, y)
                        except TypeError:
                            return False
                    except Exception as err:
                        if not top:
                            raise
                        return failed(err, ev)

                return compare
            if op in _ARITH:
                fn = _ARITH[op]
                concat = op == "+"

                def arith(ev: Any, b: dict[str, Any]) -> Any:
                    try:
                        x, y = left(ev, b), right(ev, b)
                        if x is None or y is None:
                            return None
                        try:
                            v = fn(x, y)
                        except (ZeroDivisionError, TypeError):
                            return None
                        return _bounded(v) if concat else v
                    except Exception as err:
                        if not top:
                            raise
                        return failed(err, ev)

                return arith
            raise ExpressionError(f"unknown operator '{op}'", e.loc)
        if isinstance(e, ast.Call):
            if e.func not in funcs:
                known = ", ".join(sorted(funcs))
                raise ExpressionError(f"unknown function '{e.func}' (registered: {known})", e.loc)
            fn_call = funcs[e.func]
            args = [comp(a) for a in e.args]
            if getattr(fn_call, "accepts_null", False):  # (e.g. the Petri nets' tuple())
                return lambda ev, b: fn_call(*[a(ev, b) for a in args])

            def call(ev: Any, b: dict[str, Any]) -> Any:
                try:
                    vals = [a(ev, b) for a in args]
                    if any(v is None for v in vals):
                        return None
                    return _bounded(fn_call(*vals))
                except Exception as err:
                    if not top:
                        raise
                    return failed(err, ev)

            return call
        raise ExpressionError(f"not an expression: {e!r}")

    return comp(expr, top=True)


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
