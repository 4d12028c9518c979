"""Column-wise evaluation of an event's own filter (the column kernel's vectorized filters).

The column kernels (runtime/kernels/) check an atom's filter for all rows of a batch at once.
This evaluates the same ``Expr`` AST as compiler/evaluator.py, over numpy columns, for the
subset where numpy's answer is provably the closure's answer: numeric and boolean columns (no
``None``, no Python objects), numeric constants, a field's equality to a text constant (Python's
``==`` on each value, whatever the column holds), comparisons, ``and``/``or``/``not``, unary minus
and ``+ - *`` while integers stay far from int64 overflow — and, when the caller passes the
functions (the live queries' bulk path, cepflow.queries.bulk), calls: ``abs`` as numpy's, any
other function row by row on Python numbers, its results kept when they are all numbers (a
function that raises, or returns anything else, gives None). Anything else — strings,
``null``, division, big integers — gives None and the kernel calls the compiled closure per row
instead, so both ways give the same rows (tests/esper/test_esper_kernel.py,
tests/queries/test_query_bulk.py).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import replace
from itertools import repeat
from typing import Any

import numpy as np

from cepflow.language import ast

_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
}
_SAFE_INT = 1 << 31  # |x|, |y| below this: x + y, x - y, x * y fit in int64


class _Unsupported(Exception):
    pass


#: per parameter, its rows as dictionary codes and the distinct texts, or None
#: (runtime.rows.TypeColumns.codes)
Codes = Callable[[int], "tuple[np.ndarray, list[str]] | None"]


def filter_mask(expr: ast.Expr, fields: dict[str, int],
                values: Callable[[int], Sequence[Any]],
                functions: Mapping[str, Callable[..., Any]] | None = None,
                codes: Codes | None = None) -> np.ndarray | None:
    """Truth of ``expr`` (a filter reading only the event's fields ``fields``) for each row,
    ``values(i)`` giving parameter ``i`` of every row, or None when it cannot be evaluated
    column-wise exactly. ``functions``: what a call may name (None: calls are not taken).
    ``codes(i)``: parameter ``i`` as dictionary codes when all its values are texts, so that
    a comparison with a text compares each distinct value once."""
    v = _evaluate(expr, fields, values, functions, codes)
    return None if v is None else _truth(v, len(v))


def _evaluate(expr: ast.Expr, fields: Mapping[str, int],
              values: Callable[[int], Sequence[Any]],
              functions: Mapping[str, Callable[..., Any]] | None = None,
              codes: Codes | None = None) -> np.ndarray | None:
    """The value of ``expr`` for each row as a column (:func:`filter_mask`'s terms), or None
    when it cannot be evaluated column-wise exactly or reads no field."""
    cols: dict[int, np.ndarray] = {}
    n = -1

    def column(i: int) -> np.ndarray:
        nonlocal n
        c = cols.get(i)
        if c is None:
            c = np.asarray(values(i))
            n = len(c)
            if not _numbers(c):
                raise _Unsupported  # (big numbers: numpy would round what Python compares)
            cols[i] = c
        return c

    def num(v: Any) -> Any:  # booleans take part in arithmetic as 0/1, as in Python
        if isinstance(v, np.ndarray):
            if v.dtype.kind == "b":
                return v.astype(np.int64)
            if v.dtype.kind in "iu" and len(v) and int(np.abs(v).max()) >= _SAFE_INT:
                raise _Unsupported  # (a product of products could leave int64)
            return v
        if isinstance(v, bool):
            return int(v)
        return v

    def ev(e: ast.Expr) -> Any:
        nonlocal n
        if isinstance(e, ast.Const):
            v = e.value
            if isinstance(v, bool | float) or (isinstance(v, int) and abs(v) < _SAFE_INT):
                return v
            raise _Unsupported
        if isinstance(e, ast.Name):
            if e.path or e.name not in fields:
                raise _Unsupported
            return column(fields[e.name])
        if isinstance(e, ast.Unary):
            inner = ev(e.operand)
            if e.op == "not":
                return ~_truth(inner, n)
            return -num(inner)
        if isinstance(e, ast.Binary):
            text = _text_equality(e, fields)
            if text is not None:  # a field = 'text' (or !=): Python's == on each value
                i, const = text
                coded = codes(i) if codes is not None else None
                if coded is not None:  # (texts only: each distinct one compared once)
                    c, uniq = coded
                    n = len(c)
                    eq = np.fromiter(map(operator.eq, uniq, repeat(const)), dtype=bool,
                                     count=len(uniq))[c]
                    return eq if e.op == "==" else ~eq
                vals = values(i)
                raw = np.asarray(vals)
                if raw.ndim != 1 or raw.dtype.kind not in "OU":
                    raise _Unsupported
                if raw.dtype.kind == "U" and not isinstance(vals, np.ndarray):
                    # (numpy makes text of the numbers in a list beside texts, 1 as "1":
                    # the values themselves are compared)
                    raw = np.empty(len(vals), dtype=object)
                    raw[:] = vals
                n = len(raw)
                # (numpy's object loop: Python's == on each value and its truth, in C)
                eq = np.equal(raw, const, dtype=bool)
                return eq if e.op == "==" else ~eq
            if e.op == "and":
                return _truth(ev(e.left), n) & _truth(ev(e.right), n)
            if e.op == "or":
                return _truth(ev(e.left), n) | _truth(ev(e.right), n)
            if e.op in _CMP:
                return _CMP[e.op](ev(e.left), ev(e.right))
            if e.op in _ARITH:
                return _ARITH[e.op](num(ev(e.left)), num(ev(e.right)))
        if isinstance(e, ast.Call) and functions is not None and e.func in functions:
            return _call(functions[e.func], [ev(a) for a in e.args], n, num)
        raise _Unsupported

    try:
        with np.errstate(all="ignore"):
            v = ev(expr)
        if not isinstance(v, np.ndarray) or len(v) != n:  # no field read: the closure decides
            return None
        return v
    except (_Unsupported, TypeError, ValueError, OverflowError):
        return None


def arithmetic_values(expr: ast.Expr, column: Callable[[str], list[Any]]) -> list[Any] | None:
    """The values of ``expr`` — numbers, variables, unary minus and ``+ - *`` — per row, as
    the compiled closure computes them from a match's bindings (a select list: every name a
    variable, ``column(v)`` its value per row), or None when that cannot be done exactly:
    another form, or a variable whose values are not all Python ints or all floats (numpy
    would make ``1 - 1`` a float beside a float, or a boolean a number)."""
    names: dict[str, int] = {}
    cols: list[np.ndarray] = []

    def rename(e: ast.Expr) -> ast.Expr:
        if isinstance(e, ast.Name):
            name = ".".join((e.name, *e.path))
            if name not in names:
                vals = column(name)
                kinds = set(map(type, vals))
                dtype = np.int64 if kinds == {int} else np.float64 if kinds == {float} else None
                if dtype is None:
                    raise _Unsupported
                names[name] = len(cols)
                cols.append(np.array(vals, dtype=dtype))
            return ast.Name(f"#{names[name]}")
        if isinstance(e, ast.Unary) and e.op == "-":
            return replace(e, operand=rename(e.operand))
        if isinstance(e, ast.Binary) and e.op in _ARITH:
            return replace(e, left=rename(e.left), right=rename(e.right))
        if isinstance(e, ast.Const):
            return e
        raise _Unsupported

    try:
        renamed = rename(expr)
    except (_Unsupported, OverflowError):
        return None
    v = _evaluate(renamed, {f"#{i}": i for i in range(len(cols))}, lambda i: cols[i])
    return None if v is None or v.dtype.kind not in "if" else v.tolist()


def pairs_mask(where: ast.Expr, fields: Mapping[str, int], own: Mapping[str, int],
               earlier: Container[str], column: Callable[[str, Any], np.ndarray]
               ) -> np.ndarray | None:
    """Truth of a stage's filter ``where`` on (instance, row) pairs — the column kernels'
    guards that read the earlier stages' variables — or None when :func:`filter_mask` cannot
    decide it exactly. Names read as the compiled closure reads them with the bindings the
    per-event step gives it: a bare name of the row type's ``fields`` is the row's field, a
    variable the row binds (``own``: variable -> parameter) is the row's, one an earlier stage
    bound (in ``earlier``) the instance's; any other name (null to the closure) gives None.
    ``column("own", i)`` is parameter ``i`` of each pair's row, ``column("var", v)`` each
    pair's instance's value of ``v``."""
    keys: dict[tuple[str, Any], str] = {}
    columns: list[np.ndarray] = []

    def rename(e: ast.Expr) -> ast.Expr:
        if isinstance(e, ast.Name):
            name = ".".join((e.name, *e.path))
            if not e.path and name in fields:  # (as the closure: a field first)
                src: tuple[str, Any] = ("own", fields[name])
            elif name in own:
                src = ("own", own[name])
            elif name in earlier:
                src = ("var", name)
            else:  # (not bound yet: the closure reads it as null)
                raise _Unsupported
            key = keys.get(src)
            if key is None:
                key = keys[src] = f"#{len(columns)}"
                columns.append(column(*src))
            return ast.Name(key)
        if isinstance(e, ast.Unary):
            return replace(e, operand=rename(e.operand))
        if isinstance(e, ast.Binary):
            return replace(e, left=rename(e.left), right=rename(e.right))
        if isinstance(e, ast.Call):
            return replace(e, args=tuple(rename(a) for a in e.args))
        return e

    try:
        expr = rename(where)
    except _Unsupported:
        return None
    return filter_mask(expr, {k: int(k[1:]) for k in keys.values()}, lambda i: columns[i])


def _text_equality(e: ast.Binary, fields: Mapping[str, int]) -> tuple[int, str] | None:
    """``field == 'text'`` or ``!=`` (either side): the field's index and the text."""
    if e.op not in ("==", "!="):
        return None
    for a, b in ((e.left, e.right), (e.right, e.left)):
        if (isinstance(a, ast.Name) and not a.path and a.name in fields
                and isinstance(b, ast.Const) and type(b.value) is str):
            return fields[a.name], b.value
    return None


def _call(fn: Callable[..., Any], args: list[Any], n: int,
          num: Callable[[Any], Any]) -> Any:
    """``fn`` over columns (and constants): numpy's ``abs``, else row by row on the Python
    values the closure would pass; a column of numbers, or _Unsupported."""
    if not any(isinstance(a, np.ndarray) for a in args):
        raise _Unsupported  # (constants only: the closure decides)
    if fn is abs and len(args) == 1:
        return np.abs(num(args[0]))
    rows = [a.tolist() if isinstance(a, np.ndarray) else [a] * n for a in args]
    try:
        out = np.asarray([fn(*vals) for vals in zip(*rows, strict=True)])
    except Exception:  # the closure reports it, row by row
        raise _Unsupported from None
    if not _numbers(out):
        raise _Unsupported  # (not numbers, or numbers numpy would round)
    return out


def _numbers(c: np.ndarray) -> bool:
    """Whether ``c`` is a column of booleans or numbers numpy computes with as Python does:
    ints far from int64's limits, floats below 2**53 in size (NaN aside: ``fmax`` skips it)."""
    kind = c.dtype.kind
    if c.ndim != 1 or kind not in "biuf":
        return False
    if kind in "iu" and len(c) and int(np.abs(c).max()) >= _SAFE_INT:
        return False
    return not (kind == "f" and float(np.fmax.reduce(np.abs(c), initial=0.0)) >= 2.0 ** 53)


def _truth(v: Any, n: int) -> np.ndarray:
    if isinstance(v, np.ndarray):
        return v.astype(bool) if v.dtype.kind != "b" else v
    return np.full(n, bool(v))
