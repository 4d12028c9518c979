"""The denotational semantics of 000 §4.3, evaluated naively — the oracle for the automata.

``matches(pattern, events)`` returns *every* way the pattern is satisfied by the stream: a set of
(event positions, bindings) pairs, straight from the operator definitions (fol: all of the left
operand before all of the right one; or; and ≡ or(fol, fol); mult by repetition; win by the
timestamps of the first and last contributing events, Prop. 1; NOT as the absence of a match in
the gap between its neighbours; unification by consistent bindings, Def. 7). It enumerates
subsequences, so it is exponential and meant for streams of a dozen events in tests. The engine
is *sound* w.r.t. it (every match the engine reports is in this set, 000 Prop. 3) under every
context, and *complete* (000 Prop. 2: a match exists ⇒ the engine reports one) under
unrestricted, which follows every run.

``context_matches(pattern, events, schemas, context)`` is §4.4 on top of it: the matches the
chronicle, immediate and strict contexts report, from viable partial matches (below).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cepflow.compiler.evaluator import compile_expr
from cepflow.compiler.normalize import fol_items, forbidden_atoms
from cepflow.events.event import Event, EventType
from cepflow.language import ast
from cepflow.language.walk import unused_variables

Match = tuple[tuple[int, ...], frozenset[tuple[str, Any]]]
#: a NOT's gap not yet checked: (its forbidden atoms, first and past-last position, the bindings
#: known there) — checked once every variable the atoms read is bound, or at the end
_Gap = tuple[tuple[ast.Atom, ...], int, int, frozenset]
#: a match of a sub-pattern with the gaps inside it that still wait for an outer binding
_Part = tuple[tuple[int, ...], frozenset[tuple[str, Any]], frozenset[_Gap]]
_CLEAN: frozenset[_Gap] = frozenset()


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

    def seq(self, left: set[_Part], right: set[_Part]) -> set[_Part]:
        out: set[_Part] = set()
        for s1, b1, p1 in left:
            for s2, b2, p2 in right:
                if s1 and s2 and s1[-1] >= s2[0]:
                    continue
                b = _merge(b1, b2)
                if b is None:
                    continue
                pend = self.settle(p2, b1)
                if pend is not None:
                    out.add((s1 + s2, b, p1 | pend))
        return out

    def absent(self, negs: list[ast.Atom], s: tuple[int, ...], b: frozenset,
               lo: int, hi: int) -> bool:
        """True if no forbidden atom, unifying with ``b``, occurs at positions lo..hi-1."""
        for n in negs:
            for _, nb in self.atom(n, lo, hi):
                if _merge(b, nb) is not None:
                    return False
        return True

    def settle(self, pend: frozenset[_Gap], earlier: frozenset) -> frozenset[_Gap] | None:
        """The gaps ``pend`` once the bindings of ``earlier`` steps (all before them) are known:
        a gap whose forbidden atoms' variables are all bound is checked now (None: it is not
        clean), the others wait for an outer step that binds them (or for the end)."""
        out = []
        for negs, lo, hi, bg in pend:
            b = _merge(bg, earlier) or bg
            names = dict(b)
            if all(v in names for n in negs for v in n.args or () if not ast.is_wildcard(v)):
                if not self.absent(list(negs), (), b, lo, hi):
                    return None
                continue
            out.append((negs, lo, hi, b))
        return frozenset(out)

    def denote(self, p: ast.Pattern) -> set[_Part]:
        if isinstance(p, ast.Atom):
            return {(s, b, _CLEAN) for s, b in self.atom(p)}
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
            acc: set[_Part] = {((), frozenset(), _CLEAN)} if p.count == "*" else set()
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

    def fol(self, items: list[ast.Pattern]) -> set[_Part]:
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
        acc: set[tuple[tuple[int, ...], Any, frozenset, tuple[ast.Atom, ...]]] = {
            (s0, b0, p0, ()) for s0, b0, p0 in self.denote(groups[0][0])}
        for k in range(1, len(groups)):
            negs = tuple(groups[k - 1][1])
            nxt = self.denote(groups[k][0])
            out: set[tuple[tuple[int, ...], Any, frozenset, tuple[ast.Atom, ...]]] = set()
            for s1, b1, p1, open_ in acc:
                for s2, b2, p2 in nxt:
                    if s1 and s2 and s1[-1] >= s2[0]:
                        continue
                    b = _merge(b1, b2)
                    if b is None:
                        continue
                    pend = self.settle(p2, b1)
                    if pend is None:
                        continue
                    gap = open_ + negs
                    if not s2:
                        out.add((s1, b, p1 | pend, gap))
                        continue
                    if gap and s1:
                        # the gap's atoms read the bindings of both neighbours and of every
                        # step before it, also outside this sequence (settled there)
                        own = self.settle(frozenset({(gap, s1[-1] + 1, s2[0], b)}), b)
                        if own is None:
                            continue
                        pend = pend | own
                    out.add((s1 + s2, b, p1 | pend, ()))
            acc = out
        trailing = groups[-1][1]
        if trailing:
            self._trailing = trailing
        # a gap still open at the end closes with the match (its last event completes it)
        return {(s, b, p) for s, b, p, _ in acc}

    def window(self, p: ast.Window) -> set[_Part]:
        self._trailing = []
        inner = self.denote(p.pattern)
        trailing = self._trailing
        self._trailing = []
        out: set[_Part] = set()
        for s, b, pend in inner:
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
                if passed:
                    own = self.settle(frozenset({(tuple(trailing), lo, hi, b)}), b)
                    if own is not None:
                        out.add((s, b, pend | own))
                continue
            span = t1 - t0
            if (p.kind == "within" and span <= p.duration) or (
                    p.kind == "holds_for" and span >= p.duration):
                out.add((s, b, pend))
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
    # a gap whose variables no step binds reads them as wildcards
    return {(s, b) for s, b, pend in d.denote(pattern)
            if s and all(d.absent(list(negs), (), bg, lo, hi) for negs, lo, hi, bg in pend)}


# -- 000 §4.4: the event processing contexts, evaluated naively ----------------------------
#
# A partial match (Def. 8) is the sequence of events it has taken: some sub-patterns matched,
# others not yet. It is *viable* while some parse of exactly those events is a prefix of a match
# of the pattern (the NOT gaps seen so far clean, its windows still open). An event contributes
# to a partial match (P_c(e), Def. 11) iff appending it keeps it viable or completes a match.
# chronicle gives the event to the oldest such partial match, else it starts a new one;
# immediate also disposes every partial match when the event contributes to none and starts
# none (noise); strict allows one partial match at a time. Nothing of the automata is used:
# this is the oracle the engine's contexts are tested against (tests/runtime/test_contexts.py).

# holds-for windows are left out: the automata trap a run that leaves one too early at the event
# that tries to (docs/semantics.md, "violations trap"), which this reference does not model.

#: kinds of a prefix: may take more events / is a match / is a match of a window ending in NOT
#: at its deadline
PART, DONE, TIMER = "part", "done", "timer"
#: (event positions, bindings, kind, forbidden atoms of a gap still open after the last event,
#: the deadline of a TIMER match)
Prefix = tuple[tuple[int, ...], frozenset, str, tuple, float | None]
#: a prefix of a sub-pattern and the gaps inside it that wait for an outer binding (_Part)
_Pre = tuple[tuple[int, ...], frozenset, str, tuple, float | None, frozenset[_Gap]]


class _Prefixes(_Denote):
    """Prefixes of matches over the first ``h`` events, at time ``now`` (see above)."""

    def __init__(self, events: Sequence[Event], schemas: Mapping[str, EventType],
                 functions: Mapping[str, Callable[..., Any]] | None, h: int,
                 now: float) -> None:
        super().__init__(events[:h], schemas, functions, None)
        self.h = h
        self.now = now
        self._atoms: dict[int, set[Match]] = {}

    def _atom(self, a: ast.Atom) -> set[Match]:
        got = self._atoms.get(id(a))
        if got is None:
            got = self._atoms[id(a)] = self.atom(a)
        return got

    def gap(self, negs: Sequence[ast.Atom], b: frozenset, lo: int, hi: int
            ) -> frozenset[_Gap] | None:
        """The gap ``lo..hi-1`` where ``negs`` are forbidden, checked now if ``b`` binds every
        variable they read (None: not clean), else left to an outer step (:meth:`settle`)."""
        if not negs:
            return _CLEAN
        return self.settle(frozenset({(tuple(negs), lo, hi, b)}), b)

    def top(self, p: ast.Pattern) -> set[Prefix]:
        """The prefixes of the whole pattern ``p``: the gaps no step binds every variable of
        checked with those variables as wildcards."""
        return {x[:5] for x in self.pre(p) if all(
            self.absent(list(negs), (), bg, lo, hi) for negs, lo, hi, bg in x[5])}

    def pre(self, p: ast.Pattern) -> set[_Pre]:
        if isinstance(p, ast.Atom):
            return {((), frozenset(), PART, (), None, _CLEAN)} | {
                (s, b, DONE, (), None, _CLEAN) for s, b in self._atom(p)}
        if isinstance(p, ast.Or):
            return self.pre(p.left) | self.pre(p.right)
        if isinstance(p, ast.And):
            return self.pre(ast.Or(ast.Fol(p.left, p.right), ast.Fol(p.right, p.left)))
        if isinstance(p, ast.Fol):
            return self.pre_fol(fol_items(p))
        if isinstance(p, ast.Mult):
            if isinstance(p.count, int):
                return self.pre_fol([p.pattern] * p.count)
            return self.pre_loop(p)
        if isinstance(p, ast.Window):
            return self.pre_window(p)
        raise ValueError(f"no prefix semantics for {type(p).__name__}")

    def then(self, acc: set[_Pre], nxt: set[_Pre], negs: tuple) -> set[_Pre]:
        """``acc`` followed by ``nxt`` with ``negs`` forbidden in the gap between them."""
        out: set[_Pre] = set()
        for s1, b1, k1, open1, d1, p1 in acc:
            if k1 != DONE:
                out.add((s1, b1, k1, open1, d1, p1))
                continue
            gap = open1 + negs
            waiting = _CLEAN if not s1 else self.gap(gap, b1, s1[-1] + 1, self.h)
            if waiting is not None:  # waiting for the next operand's first event
                out.add((s1, b1, PART, (), None, p1 | waiting))
            for s2, b2, k2, open2, _, p2 in nxt:
                pend = self.settle(p2, b1)
                if pend is None:
                    continue
                if not s2:
                    if k2 == DONE:  # the next operand matched nothing: the gap stays open
                        out.add((s1, b1, DONE, gap + open2, None, p1 | pend))
                    continue
                if s1 and s1[-1] >= s2[0]:
                    continue
                b = _merge(b1, b2)
                if b is None:
                    continue
                own = _CLEAN if not s1 else self.gap(gap, b, s1[-1] + 1, s2[0])
                if own is None:
                    continue
                out.add((s1 + s2, b, k2, open2, None, p1 | pend | own))
        return out

    def pre_fol(self, items: list[ast.Pattern]) -> set[_Pre]:
        groups: list[tuple[ast.Pattern, list[ast.Atom]]] = []
        for it in items:
            if isinstance(it, ast.Not):
                negs = forbidden_atoms(it.pattern)
                if negs is None or not groups:
                    raise ValueError("unsupported NOT")
                groups[-1][1].extend(negs)
            else:
                groups.append((it, []))
        acc = self.pre(groups[0][0])
        for k in range(1, len(groups)):
            acc = self.then(acc, self.pre(groups[k][0]), tuple(groups[k - 1][1]))
        trailing = tuple(groups[-1][1])
        if trailing:  # only inside a window (the compiler checks): its deadline closes it
            acc = {(s, b, k, o + trailing if k == DONE else o, d, g)
                   for s, b, k, o, d, g in acc}
        return acc

    def pre_loop(self, p: ast.Mult) -> set[_Pre]:
        base = self.pre(p.pattern)
        acc = set(base)
        if p.count == "*":
            acc.add(((), frozenset(), DONE, (), None, _CLEAN))
        layer = {x for x in base if x[2] == DONE and x[0]}
        while layer:
            nxt = {x for x in self.then(layer, base, ()) if x[0] and x not in acc}
            acc |= nxt
            layer = {x for x in nxt if x[2] == DONE}
        return acc

    def pre_window(self, p: ast.Window) -> set[_Pre]:
        out: set[_Pre] = set()
        if p.kind != "within":
            raise ValueError("no context reference for holds-for windows")
        for s, b, k, open_, d, g in self.pre(p.pattern):
            if not s or k == TIMER:
                out.add((s, b, k, open_, d, g))
                continue
            t0 = self.events[s[0]].ts
            span = self.events[s[-1]].ts - t0
            if k == PART:
                if self.now - t0 <= p.duration:
                    out.add((s, b, PART, (), None, g))
                continue
            if open_:  # a window ending in NOT: complete at its deadline if the gap stays clean
                deadline = t0 + p.duration
                if span > p.duration:
                    continue
                if deadline < self.now:
                    upto = s[-1] + 1
                    while upto < self.h and self.events[upto].ts <= deadline:
                        upto += 1
                    own = self.gap(open_, b, s[-1] + 1, upto)
                    if own is not None:
                        out.add((s, b, TIMER, (), deadline, g | own))
                else:
                    own = self.gap(open_, b, s[-1] + 1, self.h)
                    if own is not None:
                        out.add((s, b, PART, (), None, g | own))
                continue
            if span <= p.duration:
                out.add((s, b, DONE, (), None, g))
        return out


def context_matches(
    pattern: ast.Pattern,
    events: Sequence[Event],
    schemas: Mapping[str, EventType],
    context: str,
    functions: Mapping[str, Callable[..., Any]] | None = None,
    close: bool = False,
) -> list[tuple[float, tuple[int, ...], frozenset]]:
    """The matches ``pattern`` reports over ``events`` under ``context`` (chronicle, immediate
    or strict), in report order: (timestamp, event positions, bindings), from the definitions
    of 000 §4.4 over viable partial matches (see above). ``close``: at the end of the input,
    windows ending in NOT complete once their deadline has passed (``--close-windows``)."""
    if context not in ("chronicle", "immediate", "strict"):
        raise ValueError(f"no reference for context {context!r}")
    out: list[tuple[float, tuple[int, ...], frozenset]] = []
    pms: list[tuple[int, ...]] = []  # partial matches, oldest first

    unused = unused_variables(pattern)

    def best(entries: list[Prefix]) -> frozenset:
        """Of several parses of the same events, the engine's choice (runtime.matcher._age)."""
        return min((b for _, b, *_ in entries), key=lambda b: tuple(sorted(
            (kv for kv in b if kv[0] not in unused), key=repr)))

    def by_events(pre: set[Prefix]) -> dict[tuple[int, ...], list[Prefix]]:
        got: dict[tuple[int, ...], list[Prefix]] = {}
        for x in pre:
            got.setdefault(x[0], []).append(x)
        return got

    def expire(h: int, now: float) -> None:
        """Time passes to ``now`` (before the event at ``h``): deadlines strictly before it
        complete windows ending in NOT, in time order; expired partial matches go."""
        table = by_events(_Prefixes(events, schemas, functions, h, now).top(pattern))
        fired = []
        for age, pm in enumerate(pms):
            timers = [x for x in table.get(pm, ()) if x[2] == TIMER]
            if timers:
                deadline = min(x[4] for x in timers)
                fired.append((deadline, age, pm, best([x for x in timers if x[4] == deadline])))
        for deadline, _, pm, b in sorted(fired, key=lambda f: (f[0], f[1])):
            out.append((deadline, pm, b))
        gone = {f[2] for f in fired}
        pms[:] = [pm for pm in pms if pm not in gone and any(
            x[2] == PART for x in table.get(pm, ()))]

    for i, e in enumerate(events):
        expire(i, e.ts)
        table = by_events(_Prefixes(events, schemas, functions, i + 1, e.ts).top(pattern))
        taken = False
        for age, pm in enumerate(pms):
            ext = table.get((*pm, i))
            if not ext:
                continue
            taken = True
            done = [x for x in ext if x[2] == DONE]
            if done:
                out.append((e.ts, (*pm, i), best(done)))
                del pms[age]
            else:
                pms[age] = (*pm, i)
            break
        started = False
        if not taken and not (context == "strict" and pms):
            ext = table.get((i,))
            if ext:
                started = True
                done = [x for x in ext if x[2] == DONE]
                if done:
                    out.append((e.ts, (i,), best(done)))
                else:
                    pms.append((i,))
        # e may end NOT gaps of partial matches that did not take it
        pms[:] = [pm for pm in pms if pm[-1] == i or any(
            x[2] == PART for x in table.get(pm, ()))]
        if not taken and not started and context in ("immediate", "strict"):
            pms.clear()  # noise
    if close:
        expire(len(events), float("inf"))
    return out
