"""Algebraic normalisation of pattern expressions (000 §4.3.2, Appendix 1).

* Def. 10: ``or`` chains associate to the left, ``fol`` chains to the right (both are
  associative, so flattening nested ones is safe); ``and`` keeps the nesting it was written with.
* §4.3.1: ``and(c1, c2) ≡ or(fol(c1, c2), fol(c2, c1))``; ``mult(c, n) ≡ fol(c, …, c)`` is
  expanded by the automaton construction, ``mult(c, 1) ≡ c``.
* NAC rules: ``¬mult(c, +) ≡ ¬c``; ``¬mult(c, *)`` is undefined (an error); ``¬or(c1, c2)``
  forbids both operands over the same gap (``¬c1 ∧ ¬c2``).
* Prop. 1: a window over ``fol(c1, …, cn)`` only compares the timestamps of the leftmost and
  rightmost sub-patterns — the automaton records them on the edges entering/leaving its zone.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from cepflow.language import ast


class NormalizationError(Exception):
    """A pattern the algebra does not define (e.g. ``NOT A{*}``), with its location."""

    def __init__(self, message: str, loc: ast.Loc = None) -> None:
        super().__init__(message)
        self.loc = loc


def fol_items(p: ast.Pattern) -> list[ast.Pattern]:
    """The operands of a (possibly nested) fol chain, in order."""
    if isinstance(p, ast.Fol):
        return [*fol_items(p.left), *fol_items(p.right)]
    return [p]


def or_items(p: ast.Pattern) -> list[ast.Pattern]:
    if isinstance(p, ast.Or):
        return [*or_items(p.left), *or_items(p.right)]
    return [p]


def each_items(p: ast.Pattern) -> list[ast.Pattern]:
    """The operands of Esper's ``every X or every Y`` read as one every (ast.Or.each)."""
    if isinstance(p, ast.Or) and p.each:
        return [*each_items(p.left), *each_items(p.right)]
    return [p]


def and_items(p: ast.Pattern) -> list[ast.Pattern]:
    if isinstance(p, ast.And):
        return [*and_items(p.left), *and_items(p.right)]
    return [p]


def fold_fol(items: list[ast.Pattern]) -> ast.Pattern:
    """Right-associative fol (Def. 10): fol(c1, c2, c3) ⇝ fol(c1, fol(c2, c3))."""
    out = items[-1]
    for it in reversed(items[:-1]):
        out = ast.Fol(it, out)
    return out


def fold_left(items: list[ast.Pattern], node: type) -> ast.Pattern:
    """Left-associative or/and (Def. 10): or(c1, c2, c3) ⇝ or(or(c1, c2), c3)."""
    out = items[0]
    for it in items[1:]:
        out = node(out, it)
    return out


def normalize(p: ast.Pattern, expand_and: bool = True) -> ast.Pattern:
    """Rewrite ``p`` into the normal form the automaton construction expects."""
    if isinstance(p, ast.Atom):
        return p
    if isinstance(p, ast.Fol):
        return fold_fol([normalize(i, expand_and) for i in fol_items(p)])
    if isinstance(p, ast.Or) and p.each:  # (its operands stay apart: Position.each)
        return fold_left([normalize(i, expand_and) for i in each_items(p)],
                         partial(ast.Or, loc=p.loc, each=True))
    if isinstance(p, ast.Or):
        return fold_left([normalize(i, expand_and) for i in or_items(p)],
                         partial(ast.Or, choice=p.choice, side=p.side) if p.choice
                         else ast.Or)
    if isinstance(p, ast.And):
        # nested ands keep their structure: with operands that can interleave, and is not
        # associative (docs/semantics.md); Def. 10 applies to a flat chain, which the parser
        # and the builder already associate to the left
        node = ast.And(normalize(p.left, expand_and), normalize(p.right, expand_and), loc=p.loc)
        return _expand_and(node) if expand_and else node
    if isinstance(p, ast.Mult):
        inner = normalize(p.pattern, expand_and)
        if p.count == 1:
            return inner
        if isinstance(p.count, int) and p.count < 1:
            raise NormalizationError(f"multiplicity must be at least 1, got {{{p.count}}}", p.loc)
        if isinstance(inner, ast.Mult) and inner.count == "*" and p.count in ("*", "+"):
            return inner
        return ast.Mult(inner, p.count, loc=p.loc)
    if isinstance(p, ast.Not):
        return _normalize_not(normalize(p.pattern, expand_and), p.loc)
    if isinstance(p, ast.Every):  # Esper's every on one event inside a pattern (esper.py)
        return ast.Every(normalize(p.pattern, expand_and), loc=p.loc)
    if isinstance(p, ast.Interval | ast.At | ast.Until):  # lowered by compiler.esper;
        # the builder reports what is left
        return p
    if isinstance(p, ast.Window):
        inner = normalize(p.pattern, expand_and)
        if (isinstance(inner, ast.Window) and inner.kind == p.kind
                and not _accepts(inner, p.guard) and inner.most is None and p.most is None
                and not inner.slide and not p.slide
                and not inner.after and not p.after and not inner.whole
                and not p.whole):  # (a window from a step's end, or from the statement's
            # start, keeps its own zone)
            pick = min if p.kind == "within" else max
            return ast.Window(inner.pattern, pick(inner.duration, p.duration), p.kind, loc=p.loc,
                              guard=p.guard)
        return replace(p, pattern=inner)
    raise TypeError(f"not a pattern: {p!r}")


def _accepts(w: ast.Window, guard: bool) -> bool:
    """Does the window complete its pattern at its deadline — Esper's ``A ->
    timer:interval(Δ)``, ``A -> (B or timer:interval(Δ))``, ``A -> (B and
    timer:interval(Δ))`` and, under an EPL guard (``guard``), ``A -> (timer:interval(Δ) and
    not C)`` (compiler.esper lowers it to the window ending in ``NOT C``)? A guard around it
    is not the shorter of the two windows: it keeps its own zone, which ends the instance when
    it is shorter (``A -> (timer:interval(3 sec) where timer:within(2 sec))`` never matches),
    instead of being merged into the inner one, which would complete the match at the guard's
    end. (Under VEPL a window ending in ``NOT`` is merged as before: the outer window bounds
    the events' span, not the deadline.)"""
    last = fol_items(w.pattern)[-1]
    if isinstance(last, ast.Interval):
        return True
    if isinstance(last, ast.And | ast.Or):
        ops = and_items(last) if isinstance(last, ast.And) else or_items(last)
        return any(isinstance(o, ast.Interval) for o in ops)
    return guard and isinstance(last, ast.Not)


def _expand_and(p: ast.And) -> ast.Pattern:
    return ast.Or(ast.Fol(p.left, p.right), ast.Fol(p.right, p.left), loc=p.loc)


def _normalize_not(inner: ast.Pattern, loc: ast.Loc) -> ast.Pattern:
    if isinstance(inner, ast.Mult):
        if inner.count == "*":
            raise NormalizationError("NOT of a {*} multiplicity is undefined (000 §4.3.1)", loc)
        if inner.count == "+":
            return _normalize_not(inner.pattern, loc)
    if isinstance(inner, ast.Not):
        raise NormalizationError("double negation is not a NAC; write the positive pattern", loc)
    return ast.Not(inner, loc=loc)


def forbidden_atoms(p: ast.Pattern) -> list[ast.Atom] | None:
    """The atoms a NOT operand forbids (``¬or(c1, c2) ≡ ¬c1 ∧ ¬c2``), or None if not atomic."""
    out: list[ast.Atom] = []
    for item in or_items(p):
        if not isinstance(item, ast.Atom):
            return None
        out.append(item)
    return out


def nullable(p: ast.Pattern) -> bool:
    """True if ``p`` can match the empty sequence (a body must not)."""
    if isinstance(p, ast.Atom):
        return False
    if isinstance(p, ast.Fol | ast.And):
        return nullable(p.left) and nullable(p.right)
    if isinstance(p, ast.Or):
        return nullable(p.left) or nullable(p.right)
    if isinstance(p, ast.Mult):
        return p.count == "*" or nullable(p.pattern)
    if isinstance(p, ast.Not):
        return True
    if isinstance(p, ast.Window):
        return nullable(p.pattern)
    raise TypeError(p)
