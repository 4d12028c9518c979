"""Guards and arc expressions (seed 004 Def. 2: ``G`` and ``E``) in cepflow's own expression
language — data, never Python.

Every inscription is a :mod:`cepflow.language.ast` expression tree, evaluated by cepflow's
evaluator (:func:`cepflow.compiler.evaluator.compile_expr`): nothing read from a net file is
ever ``eval``-ed. A variable is a name (``x``) or a dotted name (``a1.k``: Esper's tag fields
keep their spelling). The net functions below are pure, registered by name, and listed in
docs/petri.md; they build what CPN ML writes with syntax (tuples, lists).

An arc expression is ``m`(t1, …, tk)``: a multiplicity ``m`` (an integer, or a condition
counting 1 when true and 0 when false — CPN ML's ``if c then 1`x else empty``) and one term per
component of the place's colour set (a single term, without parentheses, for a set that is not
a product). On an input arc a term that is a plain variable not bound yet *binds* it to the
token's component (CPN Tools' binding by pattern matching); any other term is evaluated and
must equal the component. A guard conjunct ``v == e`` whose ``v`` no input arc binds *assigns*
``v`` (CPN Tools binds a guard's ``=`` the same way), so a transition can name an intermediate
result once and use it on several arcs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from cepflow.compiler.evaluator import compile_expr
from cepflow.language import ast
from cepflow.language.parser import parse_expr
from cepflow.language.printer import format_expr


class InscriptionError(ValueError):
    """An inscription that cannot be read or compiled, with what and where."""


def _tuple(*xs: Any) -> tuple:
    return xs


def _nil() -> tuple:
    return ()


def _append(xs: tuple, x: Any) -> tuple:
    return (*xs, x)


def _concat(xs: tuple, ys: tuple) -> tuple:
    return (*xs, *ys)


def _nth(xs: tuple, i: int) -> Any:
    return xs[i]


def _inf() -> float:
    return math.inf


def _older(evs1: tuple, binds1: tuple, evs2: tuple, binds2: tuple) -> bool:
    """Is the run that took ``evs1`` (bound to ``binds1``) preferred to the other? The
    engine's order (runtime.matcher._age): at the first different event the older wins, a run
    that extends the other wins (greedy loops), then the bindings (name, value) sorted by their
    text; nulls are unbound. ``binds`` alternate names and values."""
    def key(evs: tuple, binds: tuple) -> tuple:
        items = [(binds[i], binds[i + 1]) for i in range(0, len(binds), 2)
                 if binds[i + 1] is not None]
        return (*evs, (math.inf,)), tuple(sorted(items, key=repr))
    return key(evs1, binds1) < key(evs2, binds2)


def _cond(c: Any, a: Any, b: Any) -> Any:
    """``cond(c, a, b)``: ``a`` when ``c`` is true, else ``b`` (CPN ML's if-then-else; both
    are evaluated: inscriptions have no side effects)."""
    return a if c else b


def _qkey(kd: int, key: tuple, s: int, c: int, local: int) -> tuple:
    """The queue key of an event produced while processing event number ``s`` (see
    docs/petri.md, "Dispatch"): a root (``kd`` 0: produced by an input event or a timer) is
    ``(c, local, -1, 0, 0)``, a descendant of the root ``key[0:2]`` is ``(key[0], key[1], s,
    c, local)``."""
    if kd == 0:
        return (c, local, -1, 0, 0)
    return (key[0], key[1], s, c, local)


def _bindex(r: float, size: float, t: float) -> int:
    """The index ``k`` of the first time-batch boundary ``r + k·size`` after ``t`` (as the
    engine's TimeBatchWindow schedules it, rounding guards included)."""
    k = math.floor((t - r) / size) + 1
    while r + (k - 1) * size > t:
        k -= 1
    while r + k * size <= t:
        k += 1
    return k


def _numbers(evs: tuple) -> tuple:
    """The event numbers of a run's events (its ``(ts, kind, n)`` references)."""
    return tuple(e[2] for e in evs)


def _settled(evs: tuple, track: tuple, i: int) -> tuple:
    """The events a run keeps when operand ``i`` completes an or's product (the engine's
    Position.settle): ``evs`` ends with the product's events, one per entry of ``track``
    (which operands took each, as a bit mask); of those only operand ``i``'s stay."""
    n = len(track)
    head, tail = evs[:len(evs) - n], evs[len(evs) - n:]
    return (*head, *(ev for ev, m in zip(tail, track, strict=True) if m >> i & 1))


def _first_done(track: tuple, ops: tuple) -> int:
    """Of the operands ``ops`` that one step of an or's product completes together, the one
    that reports first (the engine's Position.ties): the one whose filter started first —
    compared by the steps where each took its earlier events, latest first, then by writing
    order (at the or's start its operands start in that order)."""
    def started(i: int) -> tuple:
        return (*(k for k in range(len(track) - 2, -1, -1) if track[k] >> i & 1), -1, i)
    return min(ops, key=started)


def _rev(xs: tuple) -> tuple:
    return tuple(reversed(xs))


for _f in (_tuple, _append, _concat, _older, _cond):
    _f.accepts_null = True  # type: ignore[attr-defined]

#: the functions net inscriptions may call, besides cepflow's built-ins (abs, min, max, …)
NET_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "tuple": _tuple,     # tuple(a, b, …): a product value (a key, an event reference)
    "nil": _nil,         # nil(): the empty list
    "unit": _nil,        # unit(): the one colour of UNIT, CPN ML's ()
    "append": _append,   # append(xs, x): the list xs with x at its end
    "concat": _concat,   # concat(xs, ys)
    "nth": _nth,         # nth(xs, i): the i-th element (from 0)
    "inf": _inf,         # inf(): infinity (no deadline, the end of time)
    "older": _older,     # older(evs1, b1, evs2, b2): see _older
    "cond": _cond,       # cond(c, a, b): a if c else b
    "qkey": _qkey,       # qkey(kd, key, s, c, local): a queued event's key (see _qkey)
    "numbers": _numbers,  # numbers(evs): the event numbers of a run
    "bindex": _bindex,   # bindex(r, size, t): the next time-batch boundary's index after t
    "settled": _settled,  # settled(evs, track, i): the events operand i keeps (or's product)
    "rev": _rev,         # rev(xs): the list xs latest first
    "first_done": _first_done,  # first_done(track, ops): the operand that reports first
}

Evaluator = Callable[[dict[str, Any]], Any]


def var_name(node: ast.Name) -> str:
    """The variable a name stands for: ``a1.k`` for Name("a1", ("k",))."""
    return ".".join((node.name, *node.path))


def variables(expr: ast.Expr | None) -> set[str]:
    """The variables an expression reads."""
    out: set[str] = set()
    if expr is None:
        return out
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.Name):
            out.add(var_name(e))
        elif isinstance(e, ast.Unary):
            stack.append(e.operand)
        elif isinstance(e, ast.Binary):
            stack += [e.left, e.right]
        elif isinstance(e, ast.Call):
            stack += list(e.args)
    return out


def compile_raw(expr: ast.Expr, functions: dict[str, Callable[..., Any]] | None = None
                ) -> Callable[[Any, dict[str, Any]], Any]:
    """``expr`` compiled by cepflow's evaluator: ``f(None, binding)`` is its value."""
    try:
        return compile_expr(expr, {}, {**NET_FUNCTIONS, **(functions or {})})
    except Exception as e:  # ExpressionError: unknown function or operator
        raise InscriptionError(f"{format_expr(expr)}: {e}") from None


def compile_inscription(expr: ast.Expr, functions: dict[str, Callable[..., Any]] | None = None
                        ) -> Evaluator:
    """``expr`` as a function of a binding (variable -> value)."""
    fn = compile_raw(expr, functions)
    return lambda b: fn(None, b)


def conjuncts(expr: ast.Expr | None) -> list[ast.Expr]:
    """A guard split at its top-level ``and`` (each part is checked as soon as it can be)."""
    if expr is None:
        return []
    if isinstance(expr, ast.Binary) and expr.op == "and":
        return [*conjuncts(expr.left), *conjuncts(expr.right)]
    return [expr]


def conjunction(parts: list[ast.Expr]) -> ast.Expr | None:
    out: ast.Expr | None = None
    for p in parts:
        out = p if out is None else ast.Binary("and", out, p)
    return out


@dataclass(frozen=True)
class ArcInscription:
    """``mult`(terms)``: see the module docstring. ``mult`` None is 1."""

    terms: tuple[ast.Expr, ...]
    mult: ast.Expr | None = None

    def text(self) -> str:
        """The inscription as written in step output, reports and PNML ``<text>``."""
        body = (format_expr(self.terms[0]) if len(self.terms) == 1
                else "(" + ", ".join(format_expr(t) for t in self.terms) + ")")
        if self.mult is None:
            return body
        m = format_expr(self.mult)
        if not (isinstance(self.mult, ast.Const | ast.Name)):
            m = f"({m})"
        return f"{m}`{body}"

    def variables(self) -> set[str]:
        out = variables(self.mult)
        for t in self.terms:
            out |= variables(t)
        return out

    def __str__(self) -> str:
        return self.text()


def expr(text: str) -> ast.Expr:
    """Parse one expression of cepflow's language (InscriptionError when it is not one)."""
    try:
        return parse_expr(text, "<inscription>")
    except Exception as e:
        raise InscriptionError(f"{text!r}: {e}") from None


def _split_top(text: str, sep: str) -> list[str]:
    """Split at ``sep`` outside parentheses and string literals."""
    out, depth, cur, quote, i = [], 0, [], "", 0
    while i < len(text):
        c = text[i]
        if quote:
            cur.append(c)
            if c == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
            cur.append(c)
        elif c in "([":
            depth += 1
            cur.append(c)
        elif c in ")]":
            depth -= 1
            cur.append(c)
        elif depth == 0 and text.startswith(sep, i):
            out.append("".join(cur))
            cur = []
            i += len(sep)
            continue
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur))
    return out


def arc(text: str) -> ArcInscription:
    """Read an arc expression written as :meth:`ArcInscription.text` writes it."""
    parts = _split_top(text.strip(), "`")
    if len(parts) > 2:
        raise InscriptionError(f"{text!r}: more than one ` in an arc expression")
    mult = expr(parts[0]) if len(parts) == 2 else None
    body = parts[-1].strip()
    if _enclosed(body):
        items = _split_top(body[1:-1], ",")
        if len(items) > 1:
            return ArcInscription(tuple(expr(i) for i in items), mult)
    return ArcInscription((expr(body),), mult)


def _enclosed(text: str) -> bool:
    """Is ``text`` one parenthesised group, ``( … )``, from its first to its last character?"""
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth, quote, i = 0, "", 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return False
        i += 1
    return True


def walk_names(e: ast.Expr) -> Iterator[ast.Name]:
    if isinstance(e, ast.Name):
        yield e
    elif isinstance(e, ast.Unary):
        yield from walk_names(e.operand)
    elif isinstance(e, ast.Binary):
        yield from walk_names(e.left)
        yield from walk_names(e.right)
    elif isinstance(e, ast.Call):
        for a in e.args:
            yield from walk_names(a)
