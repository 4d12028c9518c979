"""The denotational semantics of 000 §4.3, evaluated naively — the oracle for the automata.

``matches(pattern, events)`` returns *every* way the pattern is satisfied by the stream: a set of
(event positions, bindings) pairs, straight from the operator definitions (fol: all of the left
operand before all of the right one; or; and ≡ or(fol, fol); mult by repetition; win by the
timestamps of the first and last contributing events, Prop. 1; NOT as the absence of a match in
the gap between its neighbours; unification by consistent bindings, Def. 7). It enumerates
subsequences, so it is exponential and meant for streams of a dozen events in tests. The engine
is *sound* w.r.t. it (every match the engine reports is in this set, 000 Prop. 3) under every
context, and *complete* (000 Prop. 2: a match exists ⇒ the engine reports one) under chronicle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cepflow.compiler.expressions import compile_expr
from cepflow.compiler.normalize import fol_items, forbidden_atoms
from cepflow.events.model import Event, EventType
from cepflow.language import ast

Match = tuple[tuple[int, ...], frozenset[tuple[str, Any]]]


def _merge(b1: frozenset, b2: frozenset) -> frozenset | None:
    d = dict(b1)
    for k, v in b2:
        if k in d and d[k] != v:
            return None
        d[k] = v
    return frozenset(d.items())


class _Denote:
    def __init__(self, events: Sequence[Event], schemas: Mapping[str, EventType],
                 functions: Mapping[str, Callable[..., Any]] | None, horizon: float | None):
        self.events = list(events)
        self.schemas = schemas
        self.functions = functions
        self.horizon = horizon
        self.max_len = len(self.events)

    def atom(self, a: ast.Atom, lo: int = 0, hi: int | None = None) -> set[Match]:
        hi = len(self.events) if hi is None else hi
        schema = self.schemas[a.name]
        flt = None
        if a.where is not None:
            flt = compile_expr(a.where, {n: i for i, n in enumerate(schema.param_names)},
                               self.functions)
        out: set[Match] = set()
        for i in range(lo, hi):
            e = self.events[i]
            if e.type != a.name:
                continue
            b: dict[str, Any] = {}
            ok = True
            for j, arg in enumerate(a.args or ()):
                if ast.is_wildcard(arg):
                    continue
                if arg in b and b[arg] != e.params[j]:
                    ok = False
                    break
                b[arg] = e.params[j]
            if ok and (flt is None or flt(e, b)):
                out.add(((i,), frozenset(b.items())))
        return out

    def seq(self, left: set[Match], right: set[Match]) -> set[Match]:
        out: set[Match] = set()
        for s1, b1 in left:
            for s2, b2 in right:
                if s1 and s2 and s1[-1] >= s2[0]:
                    continue
                b = _merge(b1, b2)
                if b is not None:
                    out.add((s1 + s2, b))
        return out

    def absent(self, negs: list[ast.Atom], s: tuple[int, ...], b: frozenset,
               lo: int, hi: int) -> bool:
        """True if no forbidden atom, unifying with ``b``, occurs at positions lo..hi-1."""
        for n in negs:
            for _, nb in self.atom(n, lo, hi):
                if _merge(b, nb) is not None:
                    return False
        return True

    def denote(self, p: ast.Pattern) -> set[Match]:
        if isinstance(p, ast.Atom):
            return self.atom(p)
        if isinstance(p, ast.Or):
            return self.denote(p.left) | self.denote(p.right)
        if isinstance(p, ast.And):
            a, b = self.denote(p.left), self.denote(p.right)
            return self.seq(a, b) | self.seq(b, a)
        if isinstance(p, ast.Mult):
            base = self.denote(p.pattern)
            if isinstance(p.count, int):
                out = base
                for _ in range(p.count - 1):
                    out = self.seq(out, base)
                return out
            acc: set[Match] = {((), frozenset())} if p.count == "*" else set()
            layer = base
            while layer:
                new = layer - acc
                if not new:
                    break
                acc |= new
                layer = self.seq(new, base)
            return acc
        if isinstance(p, ast.Window):
            return self.window(p)
        if isinstance(p, ast.Fol):
            return self.fol(fol_items(p))
        if isinstance(p, ast.Not):
            raise ValueError("NOT is only defined between two operands of '->' or at the end "
                             "of a window")
        raise TypeError(p)

    def fol(self, items: list[ast.Pattern]) -> set[Match]:
        # groups: (operand, forbidden atoms in the gap after it)
        groups: list[tuple[ast.Pattern, list[ast.Atom]]] = []
        for it in items:
            if isinstance(it, ast.Not):
                negs = forbidden_atoms(it.pattern)
                if negs is None or not groups:
                    raise ValueError("unsupported NOT")
                groups[-1][1].extend(negs)
            else:
                groups.append((it, []))
        # per partial sequence also the forbidden atoms whose gap is still open: an operand
        # that matched nothing ({*} zero times) leaves the gap before it open up to the next
        # operand's first event (the engine's gap state has edges to both)
        acc: set[tuple[tuple[int, ...], Any, tuple[ast.Atom, ...]]] = {
            (s0, b0, ()) for s0, b0 in self.denote(groups[0][0])}
        for k in range(1, len(groups)):
            negs = tuple(groups[k - 1][1])
            nxt = self.denote(groups[k][0])
            out: set[tuple[tuple[int, ...], Any, tuple[ast.Atom, ...]]] = set()
            for s1, b1, open_ in acc:
                for s2, b2 in nxt:
                    if s1 and s2 and s1[-1] >= s2[0]:
                        continue
                    b = _merge(b1, b2)
                    if b is None:
                        continue
                    gap = open_ + negs
                    if not s2:
                        out.add((s1, b, gap))
                        continue
                    if gap and s1 and not self.absent(list(gap), s1, b, s1[-1] + 1, s2[0]):
                        continue
                    out.add((s1 + s2, b, ()))
            acc = out
        trailing = groups[-1][1]
        if trailing:
            self._trailing = trailing
        # a gap still open at the end closes with the match (its last event completes it)
        return {(s, b) for s, b, _ in acc}

    def window(self, p: ast.Window) -> set[Match]:
        self._trailing = []
        inner = self.denote(p.pattern)
        trailing = self._trailing
        self._trailing = []
        out: set[Match] = set()
        for s, b in inner:
            t0, t1 = self.events[s[0]].ts, self.events[s[-1]].ts
            if trailing:
                deadline = t0 + p.duration
                if t1 > deadline:
                    continue
                after = [i for i in range(s[-1] + 1, len(self.events))
                         if self.events[i].ts <= deadline]
                lo = s[-1] + 1
                hi = after[-1] + 1 if after else lo
                passed = self.horizon is not None and self.horizon > deadline
                if passed and self.absent(trailing, s, b, lo, hi):
                    out.add((s, b))
                continue
            span = t1 - t0
            if (p.kind == "within" and span <= p.duration) or (
                    p.kind == "holds_for" and span >= p.duration):
                out.add((s, b))
        return out


def matches(
    pattern: ast.Pattern,
    events: Sequence[Event],
    schemas: Mapping[str, EventType],
    functions: Mapping[str, Callable[..., Any]] | None = None,
    horizon: float | None = None,
) -> set[Match]:
    """All matches of ``pattern`` over ``events`` (positions into ``events``, bindings).

    ``horizon`` is the time up to which the stream is known (for windows ending in NOT, which
    complete only once their deadline has passed); default: the last event's timestamp.
    """
    if horizon is None:
        horizon = events[-1].ts if events else None
    d = _Denote(events, schemas, functions, horizon)
    d._trailing = []
    return {m for m in d.denote(pattern) if m[0]}
