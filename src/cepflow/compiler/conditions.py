"""Can a condition ever hold? Interval and equality reasoning over filter expressions.

The analysis asks three questions of the ``where`` conditions of compiled patterns: is a
condition contradictory (``speed > 50 and speed < 10``), can two conditions hold of one event
at once (two patterns completing on the same event), and does a partial match's next step
cover every event (its step or a NOT ends it at the next event)? All three reduce to
:func:`satisfiable` of a conjunction.

The expression is put in disjunctive normal form with negations pushed down to the
comparisons; each conjunction is checked term by term — a *term* is a name (``speed``,
``c1.temperature``) or any other sub-expression, compared by its text:

* a term against constants: equalities, disequalities, a numeric interval (integer bounds for
  terms declared ``int``), the null test (ordering comparisons are false on null, so they
  require a value; ``== null`` requires null);
* two terms against each other: the relations ``<``, ``=``, ``>`` each comparison allows;
* anything else (a call, a bare name of unknown type) is an opaque proposition that only
  contradicts its own negation.

The answer is ``False`` only when every conjunction is contradictory — a proof. Negating an
ordering comparison adds the null case (``not speed > 5`` is ``speed <= 5 or speed == null``),
so null never makes a sound answer unsound. Expressions whose normal form would exceed
:data:`MAX_DNF` conjunctions are reported satisfiable (unknown). What it cannot see: facts
across terms (``x == y and x > 5 and y < 3``), arithmetic (``x + 1 > x``), functions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cepflow.language import ast
from cepflow.language.printer import format_expr

#: normal forms larger than this are not expanded (the answer is then "satisfiable")
MAX_DNF = 256

_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}
_ORDERING = {"<", "<=", ">", ">="}
#: the relations (-1: less, 0: equal, 1: greater) each comparison allows between two terms
_ALLOWS = {"<": {-1}, "<=": {-1, 0}, "==": {0}, "!=": {-1, 1}, ">=": {0, 1}, ">": {1}}


@dataclass(frozen=True)
class Literal:
    """One comparison in a normal form: ``term op value`` (``value`` a constant, or another
    term's text when ``relational``), or an opaque proposition ``term`` (op ``"is"``, value
    True or False)."""

    term: str
    op: str
    value: Any
    relational: bool = False


Conjunction = tuple[Literal, ...]


class _TooLarge(Exception):
    pass


def term_of(expr: ast.Expr) -> str:
    """The text that names ``expr`` as a term (a name's dotted text, else its printed form)."""
    if isinstance(expr, ast.Name):
        return ".".join((expr.name, *expr.path))
    return format_expr(expr)


def _const(expr: ast.Expr) -> tuple[bool, Any]:
    """(True, value) if ``expr`` is a constant (also a negated number)."""
    if isinstance(expr, ast.Const):
        return True, expr.value
    if isinstance(expr, ast.Unary) and expr.op == "-" and isinstance(expr.operand, ast.Const) \
            and isinstance(expr.operand.value, int | float) \
            and not isinstance(expr.operand.value, bool):
        return True, -expr.operand.value
    return False, None


def _comparison(left: ast.Expr, op: str, right: ast.Expr, positive: bool,
                nulls: bool) -> list[Conjunction]:
    lc, lv = _const(left)
    rc, rv = _const(right)
    if lc and rc:
        try:
            holds = _holds(lv, op, rv)
        except TypeError:
            holds = False
        return [()] if holds == positive else []
    if lc:  # constant on the left: mirror
        left, right, op, rv = right, left, _MIRROR[op], lv
        rc = True
    if not positive:
        negated = _NEGATE[op]
        out: list[Conjunction] = []
        if rc:
            out.append((Literal(term_of(left), negated, rv),))
            if nulls and op in _ORDERING and rv is not None:  # false on null
                out.append((Literal(term_of(left), "==", None),))
        else:
            out.extend(_relational(left, negated, right))
            if nulls and op in _ORDERING:
                out.append((Literal(term_of(left), "==", None),))
                out.append((Literal(term_of(right), "==", None),))
        return out
    if rc:
        if op in _ORDERING and rv is None:
            return []  # null makes ordering comparisons false
        return [(Literal(term_of(left), op, rv),)]
    return _relational(left, op, right)


def _relational(left: ast.Expr, op: str, right: ast.Expr) -> list[Conjunction]:
    a, b = term_of(left), term_of(right)
    if a == b:
        return [()] if op in ("==", "<=", ">=") else []  # x < x, x != x: never
    if b < a:
        a, b, op = b, a, _MIRROR[op]
    return [(Literal(a, op, b, relational=True),)]


def _holds(a: Any, op: str, b: Any) -> bool:
    if op == "==":
        return bool(a == b)
    if op == "!=":
        return bool(a != b)
    if a is None or b is None:
        return False
    return bool({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])


def _product(left: list[Conjunction], right: list[Conjunction]) -> list[Conjunction]:
    if len(left) * len(right) > MAX_DNF:
        raise _TooLarge
    return [a + b for a in left for b in right]


def dnf(expr: ast.Expr, positive: bool = True, types: Mapping[str, str] | None = None,
        nulls: bool = True) -> list[Conjunction]:
    """``expr`` (or its negation) as a list of conjunctions of literals; [] is false, [()]
    true. Raises ``ValueError`` when the form would exceed :data:`MAX_DNF` conjunctions."""
    try:
        return _dnf(expr, positive, types or {}, nulls)
    except _TooLarge:
        raise ValueError("condition too large to normalise") from None


def _dnf(expr: ast.Expr, positive: bool, types: Mapping[str, str], nulls: bool = True
         ) -> list[Conjunction]:
    if isinstance(expr, ast.Binary) and expr.op in ("and", "or"):
        left = _dnf(expr.left, positive, types, nulls)
        right = _dnf(expr.right, positive, types, nulls)
        conjunctive = (expr.op == "and") == positive
        if conjunctive:
            return _product(left, right)
        out = left + right
        if len(out) > MAX_DNF:
            raise _TooLarge
        return out
    if isinstance(expr, ast.Unary) and expr.op == "not":
        return _dnf(expr.operand, not positive, types, nulls)
    if isinstance(expr, ast.Binary) and expr.op in _MIRROR:
        return _comparison(expr.left, expr.op, expr.right, positive, nulls)
    if isinstance(expr, ast.Const):
        truthy = bool(expr.value)
        return [()] if truthy == positive else []
    term = term_of(expr)
    if isinstance(expr, ast.Name) and types.get(term) == "bool":
        return [(Literal(term, "==", positive),)] + (
            [] if positive or not nulls else [(Literal(term, "==", None),)])
    return [(Literal(term, "is", positive),)]


@dataclass
class _Term:
    """What one conjunction says about one term."""

    equal: list[Any] = field(default_factory=list)
    unequal: list[Any] = field(default_factory=list)
    lo: float = -math.inf
    lo_strict: bool = False
    hi: float = math.inf
    hi_strict: bool = False
    text_bounds: list[tuple[str, str]] = field(default_factory=list)
    non_null: bool = False
    truth: set[bool] = field(default_factory=set)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _consistent(conj: Conjunction, types: Mapping[str, str]) -> bool:
    terms: dict[str, _Term] = {}
    pairs: dict[tuple[str, str], set[int]] = {}
    for lit in conj:
        if lit.relational:
            allowed = pairs.setdefault((lit.term, lit.value), {-1, 0, 1})
            allowed &= _ALLOWS[lit.op]
            if not allowed:
                return False
            if lit.op in _ORDERING:
                terms.setdefault(lit.term, _Term()).non_null = True
                terms.setdefault(lit.value, _Term()).non_null = True
            continue
        t = terms.setdefault(lit.term, _Term())
        if lit.op == "is":
            t.truth.add(bool(lit.value))
            if len(t.truth) > 1:
                return False
        elif lit.op == "==":
            t.equal.append(lit.value)
        elif lit.op == "!=":
            t.unequal.append(lit.value)
        else:
            t.non_null = True
            if _is_number(lit.value):
                _bound(t, lit.op, float(lit.value), types.get(lit.term) == "int")
            elif isinstance(lit.value, str):
                t.text_bounds.append((lit.op, lit.value))
    return all(_term_ok(term, t, types.get(term)) for term, t in terms.items())


def _bound(t: _Term, op: str, v: float, integer: bool) -> None:
    if integer:  # x > 5 is x >= 6 for an integer
        if op == ">":
            op, v = ">=", math.floor(v) + 1
        elif op == ">=":
            v = math.ceil(v)
        elif op == "<":
            op, v = "<=", math.ceil(v) - 1
        elif op == "<=":
            v = math.floor(v)
    if op in (">", ">="):
        strict = op == ">"
        if v > t.lo or (v == t.lo and strict):
            t.lo, t.lo_strict = v, strict
    else:
        strict = op == "<"
        if v < t.hi or (v == t.hi and strict):
            t.hi, t.hi_strict = v, strict


def _inside(t: _Term, v: Any) -> bool:
    if v is None:
        return not t.non_null and t.lo == -math.inf and t.hi == math.inf
    if _is_number(v):
        x = float(v)
        if x < t.lo or (x == t.lo and t.lo_strict):
            return False
        if x > t.hi or (x == t.hi and t.hi_strict):
            return False
    elif t.lo != -math.inf or t.hi != math.inf:
        return False  # a number interval and a non-number value
    if isinstance(v, str):
        for op, bound in t.text_bounds:
            if not _holds(v, op, bound):
                return False
    return all(not _same(v, u) for u in t.unequal)


def _same(a: Any, b: Any) -> bool:
    """Equal as cepflow compares values (``1 == 1.0``; None only equals None)."""
    if a is None or b is None:
        return a is b
    try:
        return bool(a == b)
    except Exception:  # pragma: no cover - values of the AST are plain
        return False


def _term_ok(term: str, t: _Term, declared: str | None) -> bool:
    if t.equal:
        first = t.equal[0]
        if any(not _same(first, v) for v in t.equal[1:]):
            return False
        if first is None:
            return not t.non_null and not any(u is None for u in t.unequal)
        if declared == "int" and _is_number(first) and float(first) != math.floor(first):
            return False
        if declared == "bool" and not isinstance(first, bool):
            return False
        return _inside(t, first)
    if t.lo > t.hi or (t.lo == t.hi and (t.lo_strict or t.hi_strict)):
        return False
    if t.lo == t.hi and any(_same(t.lo, u) for u in t.unequal):
        return False
    if declared == "bool":
        excluded = {u for u in t.unequal if isinstance(u, bool)}
        if excluded == {True, False} and (t.non_null or None in t.unequal):
            return False
    return True


def satisfiable(expr: ast.Expr | None, types: Mapping[str, str] | None = None,
                nulls: bool = True) -> bool:
    """False only if ``expr`` can never hold (proved by the reasoning above); ``types`` maps
    terms to their declared type (``int``, ``float``, ``str``, ``bool``, ``any``).
    ``nulls=False`` reasons about values that are present (no field is null)."""
    if expr is None:
        return True
    types = types or {}
    try:
        form = _dnf(expr, True, types, nulls)
    except _TooLarge:
        return True
    return any(_consistent(c, types) for c in form)


def all_of(exprs: Iterable[ast.Expr | None]) -> ast.Expr | None:
    """The conjunction of the given conditions (None for none)."""
    out: ast.Expr | None = None
    for e in exprs:
        if e is None:
            continue
        out = e if out is None else ast.Binary("and", out, e)
    return out


def any_of(exprs: Iterable[ast.Expr | None]) -> ast.Expr | None:
    """The disjunction of the given conditions; a missing condition (None) is true, so the
    disjunction is then None (true)."""
    out: ast.Expr | None = None
    for e in exprs:
        if e is None:
            return None
        out = e if out is None else ast.Binary("or", out, e)
    return out


def negation(expr: ast.Expr | None) -> ast.Expr:
    """``not expr`` (``false`` for a missing, i.e. true, condition)."""
    return ast.Const(False) if expr is None else ast.Unary("not", expr)


def constants(expr: ast.Expr | None) -> dict[str, set[Any]]:
    """The constants each term is compared with in ``expr`` (for a search domain)."""
    out: dict[str, set[Any]] = {}
    if expr is None:
        return out
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ast.Binary) and e.op in _MIRROR:
            lc, lv = _const(e.left)
            rc, rv = _const(e.right)
            if rc and not lc:
                out.setdefault(term_of(e.left), set()).add(rv)
            elif lc and not rc:
                out.setdefault(term_of(e.right), set()).add(lv)
        if isinstance(e, ast.Binary):
            stack.extend((e.left, e.right))
        elif isinstance(e, ast.Unary):
            stack.append(e.operand)
        elif isinstance(e, ast.Call):
            stack.extend(e.args)
    return out
