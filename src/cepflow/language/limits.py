"""The documented limits of a pattern file (docs/language.md, "Limits").

Every input gets an answer in bounded time and memory: a number too large to represent, a
declaration nested deeper than the compiler and the engine can walk, or a repetition that
would unroll into an enormous automaton is a located error, never a crash, a hang or an
allocation without bound. The VEPL parser, the EPL reader and the checker share these.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation

from cepflow.language import ast
from cepflow.language.diagnostics import Diagnostic
from cepflow.language.walk import expr_children, pattern_children

__all__ = [
    "MAX_DURATION_MS",
    "MAX_ERRORS",
    "MAX_INT",
    "MAX_NESTING",
    "MAX_SOURCE_SIZE",
    "MAX_UNROLLED",
    "LimitError",
    "declaration_roots",
    "duration_ms",
    "nesting_errors",
    "number_value",
    "size_error",
    "too_deep",
    "unrolled_size",
    "whole_number",
]

#: Levels of nesting of a pattern, and separately of a condition (a ``where`` filter, a select
#: item): the nodes on the longest path of its tree, so each operator of a chain is one level
#: (``A -> B -> C`` is ``A -> (B -> C)``, 3 levels; a chain of 100 operands is 100); parentheses
#: alone add none. The checker, the compiler and the engine walk these trees recursively; a
#: pattern and its conditions at this depth still leave Python's stack room to spare
#: (measured: 250 levels pass everything below 150 frames of callers).
MAX_NESTING = 100

#: Automaton steps one complex event may unroll to: ``P{n}`` repeats ``P`` n times,
#: ``[m:n] P until Q`` up to n + 1 times, ``P AND Q`` compiles both orders. Compiling 1,000
#: steps takes about 35 ms; ``A{100000}`` took 27 s and 436 MB before this limit.
MAX_UNROLLED = 1000

#: Integer literals are 64-bit (Esper's and Spark's ``long``); repetition counts, priorities and
#: lengths of data windows too.
MAX_INT = 2**63 - 1

#: Durations (windows, intervals, expiry) are doubles of milliseconds: any finite one.
MAX_DURATION_MS = sys.float_info.max

#: Errors reported per file; the rest of the file is then not read.
MAX_ERRORS = 100

#: Size of one file (bytes) or text (characters). Reading takes about 15 s and 150 MB per
#: MiB on a busy machine, growing linearly; a file of patterns is rarely more than a few KiB.
MAX_SOURCE_SIZE = 2**20

_LIMITS = "see Limits in docs/language.md"


class LimitError(ValueError):
    """A literal beyond a documented limit (the caller attaches the location)."""


def _shown(text: str) -> str:
    """A literal as a message quotes it: long ones shortened, with their length."""
    return text if len(text) <= 24 else f"{text[:12]}…{text[-4:]} ({len(text)} characters)"


def number_value(text: str) -> int | float:
    """The value of a number literal (with an optional sign): an int if it has no ``.`` or
    exponent, else a float.

    Raise LimitError for an integer beyond 64 bits or a float that is not finite (``1e999``).
    """
    if any(c in text for c in ".eE"):
        value = float(text)  # linear in the length of the text, never raises for a NUMBER
        if not math.isfinite(value):
            raise LimitError(f"number {_shown(text)} is too large for a 64-bit floating-point "
                             f"number ({_LIMITS})")
        return value
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > len(str(MAX_INT)) or int(digits) > MAX_INT:
        raise LimitError(f"integer {_shown(text)} is too large (at most {MAX_INT}, a 64-bit "
                         f"integer; {_LIMITS})")
    return -int(digits) if text.startswith("-") else int(digits)


def whole_number(text: str, what: str) -> int | None:
    """A count written as a number (``{3}``, ``priority 10``, ``length(5)``): its value if it is
    a whole number, None if it is not (the caller says what it expects); raise LimitError beyond
    64 bits (``what`` names the count in the message)."""
    try:
        value = Decimal(text)
    except InvalidOperation:  # pragma: no cover - the grammars only let numbers through
        return None
    if not value.is_finite() or value.adjusted() > len(str(MAX_INT)) or (
            value == value.to_integral_value() and int(value) > MAX_INT):
        raise LimitError(f"{what} {_shown(text)} is too large (at most {MAX_INT}; {_LIMITS})")
    return int(value) if value == value.to_integral_value() else None


def duration_ms(text: str, factor: int) -> float:
    """A written duration (``1.5`` of a unit worth ``factor`` ms) in milliseconds, computed
    without drift; raise LimitError if it is beyond the range of a double."""
    value = Decimal(text)
    if value.adjusted() > sys.float_info.max_10_exp or value * factor > MAX_DURATION_MS:
        raise LimitError(f"duration {_shown(text)} is too long for a 64-bit floating-point "
                         f"number of milliseconds ({_LIMITS})")
    return float(value * factor)


def size_error(size: int, source: str, unit: str = "characters") -> Diagnostic | None:
    """The error for a file or text of ``size`` bytes or characters above MAX_SOURCE_SIZE."""
    if size <= MAX_SOURCE_SIZE:
        return None
    return Diagnostic(source, 1, 1, f"more than {MAX_SOURCE_SIZE} {unit} (1 MiB): too large "
                      f"to read as one file ({_LIMITS})")


# ---------------------------------------------------------------- nesting depth


def declaration_roots(decl: ast.Decl) -> tuple[list[ast.Pattern], list[ast.Expr]]:
    """The pattern trees and the condition trees written directly in ``decl`` (conditions
    inside its patterns are reached from the patterns)."""
    if isinstance(decl, ast.ComplexEventDecl):
        return [decl.body], [e for _, e in decl.select or ()]
    if isinstance(decl, ast.WindowDecl):
        exprs = [e for _, e in decl.select] + list(decl.group_by)
        return [decl.source], exprs + ([decl.having] if decl.having is not None else [])
    return [], []


def _pattern_exprs(node: ast.Pattern) -> Iterator[ast.Expr]:
    if isinstance(node, ast.Atom) and node.where is not None:
        yield node.where
    elif isinstance(node, ast.Every):
        yield from node.distinct


def too_deep(patterns: Iterable[ast.Pattern], exprs: Iterable[ast.Expr] = ()
             ) -> tuple[ast.Loc, str] | None:
    """Where and why the first tree nested deeper than MAX_NESTING goes too deep, or None.

    Walked with an explicit stack (never recursively), so any depth is measured safely.
    """
    conditions = list(exprs)
    for kind, roots, children in (("pattern", patterns, pattern_children),
                                  ("condition", conditions, expr_children)):
        stack: list[tuple[object, int, ast.Loc]] = [(r, 1, None) for r in roots]
        while stack:
            node, depth, outer = stack.pop()
            loc = getattr(node, "loc", None) or outer
            if depth > MAX_NESTING:
                advice = "; split it into complex events" if kind == "pattern" else ""
                return loc, (f"{kind} nested more than {MAX_NESTING} levels deep (each "
                             f"operator of a chain counts one level{advice}; {_LIMITS})")
            stack.extend((c, depth + 1, loc) for c in children(node))  # type: ignore[arg-type]
            if kind == "pattern":
                conditions.extend(_pattern_exprs(node))  # type: ignore[arg-type]
    return None


def nesting_errors(decls: Iterable[ast.Decl], source: str) -> list[Diagnostic]:
    """A located error for each declaration nested deeper than MAX_NESTING."""
    out = []
    for decl in decls:
        found = too_deep(*declaration_roots(decl))
        if found is not None:
            line, col = found[0] or decl.loc or (1, 1)
            out.append(Diagnostic(source, line, col, f"in '{decl.name}': {found[1]}"))
    return out


# ---------------------------------------------------------------- unrolled size


def unrolled_size(p: ast.Pattern) -> tuple[int, ast.Loc]:
    """How many automaton steps ``p`` unrolls to, capped just above MAX_UNROLLED, and where
    the limit is first passed (the innermost operator whose operands are within it).

    Atoms, intervals: 1; ``P{n}``: n times P; ``[m:n] P until Q``: up to n + 1 times P and Q
    (the ending may come after each repetition); ``P AND Q``: both orders, twice both; other
    operators: the sum of their operands. An upper bound of the compiled automaton's size.
    """
    cap = MAX_UNROLLED + 1
    size: dict[int, int] = {}
    where: ast.Loc = None
    stack: list[tuple[ast.Pattern, bool]] = [(p, False)]
    while stack:
        node, done = stack.pop()
        kids = pattern_children(node)
        if not done:
            stack.append((node, True))
            stack.extend((k, False) for k in kids)
            continue
        parts = [size[id(k)] for k in kids]
        if isinstance(node, ast.Mult):
            n = parts[0] * (node.count if isinstance(node.count, int) else 1)
        elif isinstance(node, ast.Until):
            bound = max(node.low or 0, node.high if node.high is not None else 0)
            n = (parts[0] + parts[1]) * (bound + 1)  # each repetition may meet the ending
        elif isinstance(node, ast.And):
            n = 2 * sum(parts)
        else:
            n = sum(parts) or 1
        size[id(node)] = min(n, cap)
        if n > MAX_UNROLLED and where is None and all(k <= MAX_UNROLLED for k in parts):
            where = node.loc
    return size[id(p)], where
