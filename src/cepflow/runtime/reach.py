"""How far back a pair's guard reaches: a conjunct of ``g`` in ``every a = A(f) -> b = B(g)``
that bounds the waiting instance's value from below, ``x - a.y <= k`` in any linear spelling
(``b.ts - a.ts <= 5``, ``ts <= a.ts + 5``, ``a.ts >= ts - 5``; ``x`` a field of ``B``, ``y`` a
variable ``A`` bound, ``k`` a whole number).

Where ``x`` and ``y`` are whole numbers the conjunct is exactly ``y >= x - k``, so an ``B``
event cannot be taken by an instance whose ``y`` is lower: the matcher keeps the instances of
a key ordered by ``y`` and tests only those at or above the bound (Matcher._pair_close), and
the pair kernel stops an instance's search where no later row of its key is low enough
(kernels.pair). Without it a pattern with no ``within`` whose guard is never met — the
contractions' ``Duration`` (004 §IV) — tests every later event of the key against every such
instance: quadratic in the stream. Skipping a test is exact only when it could not have
reported an evaluation failure: the conjuncts evaluated before this one (``and`` evaluates
left to right and stops at the first false) are comparisons of names and constants, which
cannot fail, and whole-number arithmetic cannot fail either (compiler.evaluator). Values that
are not whole numbers (None, a decimal, a text) are tested as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cepflow.language import ast

_ORDER = ("<", "<=", ">", ">=")
_COMPARE = (*_ORDER, "==", "!=")


@dataclass(frozen=True)
class Reach:
    """``x - y <= limit``: ``x`` the event's field ``param``, ``y`` the instance's ``var``."""

    param: int
    var: str
    limit: int

    def lowest(self, x: int) -> int:
        """The lowest ``y`` of an instance an event with ``x`` can still match."""
        return x - self.limit


def whole(v: object) -> bool:
    """Whether ``v`` is a whole number the evaluator computes with exactly (int, or bool,
    which Python's arithmetic takes as 0/1)."""
    return type(v) is int or type(v) is bool


def reach_of(where: ast.Expr | None, fields: Mapping[str, int], bound: frozenset[str]
             ) -> Reach | None:
    """The first conjunct of ``where`` that is a reach (module docstring) over a variable in
    ``bound``, if every conjunct before it cannot fail; else None. ``fields`` maps the event's
    field names to positions (a plain name not among them is a variable)."""
    if where is None:
        return None
    for c in _conjuncts(where):
        r = _reach(c, fields, bound)
        if r is not None:
            return r
        if not _infallible(c):
            return None
    return None


def _conjuncts(e: ast.Expr) -> list[ast.Expr]:
    """The operands of a chain of ``and``, in the order they are evaluated."""
    if isinstance(e, ast.Binary) and e.op == "and":
        return [*_conjuncts(e.left), *_conjuncts(e.right)]
    return [e]


def _infallible(e: ast.Expr) -> bool:
    """Whether evaluating ``e`` cannot report a failure: constants, names, and comparisons,
    ``and``/``or``/``not`` of such (a comparison of mismatched types is false, not a failure)."""
    if isinstance(e, ast.Const | ast.Name):
        return True
    if isinstance(e, ast.Unary):
        return e.op == "not" and _infallible(e.operand)
    if isinstance(e, ast.Binary) and e.op in (*_COMPARE, "and", "or"):
        return _infallible(e.left) and _infallible(e.right)
    return False


def _reach(e: ast.Expr, fields: Mapping[str, int], bound: frozenset[str]) -> Reach | None:
    if not (isinstance(e, ast.Binary) and e.op in _ORDER):
        return None
    left, right = _linear(e.left, fields), _linear(e.right, fields)
    if left is None or right is None:
        return None
    terms = dict(left[0])  # left - right, then "sum(terms) + c  op  0"
    for k, v in right[0].items():
        terms[k] = terms.get(k, 0) - v
    c = left[1] - right[1]
    if len(terms) != len(left[0]) + len(right[0]):
        return None  # (a name twice: its other value could be a decimal that rounds)
    own = [k for k in terms if k[0] == "field"]
    var = [k for k in terms if k[0] == "var"]
    if len(own) != 1 or len(var) != 1 or len(terms) != 2 or var[0][1] not in bound:
        return None
    s = terms[own[0]]
    if s not in (1, -1) or terms[var[0]] != -s:
        return None
    # s * (x - y) + c  op  0, i.e. x - y  op'  -c / s with op' flipped when s = -1
    op = e.op if s == 1 else {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[e.op]
    k = -c * s
    if op == "<=":
        limit = k
    elif op == "<":
        limit = k - 1
    else:  # (a lower bound on x - y bounds y from above: no help against old instances)
        return None
    return Reach(int(own[0][1]), str(var[0][1]), limit)


def _linear(e: ast.Expr, fields: Mapping[str, int]
            ) -> tuple[dict[tuple[str, object], int], int] | None:
    """``e`` as (coefficients of its fields and variables, constant) when it is a sum and
    difference of names and whole-number constants (negated or not), else None."""
    if isinstance(e, ast.Const):
        return ({}, e.value) if type(e.value) is int else None
    if isinstance(e, ast.Name):
        if e.path:
            return {("var", ".".join((e.name, *e.path))): 1}, 0
        if e.name in fields:
            return {("field", fields[e.name]): 1}, 0
        return {("var", e.name): 1}, 0
    if isinstance(e, ast.Unary) and e.op == "-":
        inner = _linear(e.operand, fields)
        return None if inner is None else ({k: -v for k, v in inner[0].items()}, -inner[1])
    if isinstance(e, ast.Binary) and e.op in ("+", "-"):
        a, b = _linear(e.left, fields), _linear(e.right, fields)
        if a is None or b is None:
            return None
        sign = 1 if e.op == "+" else -1
        if a[0].keys() & b[0].keys():
            return None  # (a name twice: see _reach)
        return {**a[0], **{k: sign * v for k, v in b[0].items()}}, a[1] + sign * b[1]
    return None
