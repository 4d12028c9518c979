"""Executing a PCPN: bindings (seed 004 Def. 4), enabling with priorities (Def. 5), firing
(Def. 6), a seeded choice among the enabled binding elements, step / run / run-until, and the
trace of what fired.

**Bindings.** A binding of ``t`` assigns a value to every variable of ``t``. The simulator
finds them by pattern matching the input arcs against the tokens of their places (a variable
term binds, any other term must equal the component), then evaluates the guard; a guard
conjunct ``v == e`` whose ``v`` no input arc binds assigns ``v`` (inscriptions module). Input
arcs are joined one at a time, the next one chosen where a bound value can be looked up in an
index of the place's tokens by component (a term already evaluable, or a guard equality with
a bound side) — the key index of the engine's matcher, derived from the inscriptions — else
the place with the fewest colours; each guard conjunct is checked as soon as its variables are
bound. A binding is enabled when the guard holds and every input place holds the multiset the
input arcs ask for (two arcs asking for the same colour need two tokens).

**Priorities.** Def. 5 condition 3: among all binding elements that satisfy conditions 1 and 2,
only those of the transitions with the smallest priority level are enabled. The simulator
keeps, per transition, its binding elements for the current marking and recomputes them only
when a place it reads changed.

**Choice.** ``choice="random"`` draws uniformly among the enabled binding elements with a
seeded generator (the same seed, the same run); ``choice="first"`` takes the first in the
net's transition order (deterministic and faster: it does not enumerate the others).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cepflow.language import ast
from cepflow.petri.inscriptions import (
    InscriptionError,
    compile_inscription,
    var_name,
    variables,
)
from cepflow.petri.multiset import Multiset
from cepflow.petri.net import Net, plan_guard


class SimulationError(RuntimeError):
    """A firing that cannot happen (an inscription failed, a colour outside its set)."""


@dataclass
class Step:
    """One fired binding element: ``taken`` and ``added`` are (place, colour, count)."""

    index: int
    transition: str
    binding: dict[str, Any]
    taken: list[tuple[str, Any, int]] = field(default_factory=list)
    added: list[tuple[str, Any, int]] = field(default_factory=list)


# term kinds of a compiled arc
_VAR, _CONST, _EXPR = 0, 1, 2


class _Arc:
    __slots__ = ("binds", "builders", "kind", "mult", "multf", "needs", "place", "product",
                 "terms", "text")

    def __init__(self, place: str, kind: str, terms: list[tuple[int, Any, frozenset[str]]],
                 mult: Any, product: bool, text: str) -> None:
        self.place = place
        self.kind = kind
        self.terms = terms
        self.product = product
        self.text = text
        self.binds = {p for k, p, _ in terms if k == _VAR}
        self.mult = mult          # int (input arcs) or an evaluator / None (output arcs)
        self.multf = None
        self.needs = frozenset().union(*(n for _, _, n in terms)) if terms else frozenset()
        self.builders = None


class _Trans:
    __slots__ = ("assigns", "eqs", "index", "inputs", "name", "outputs", "priority",
                 "tests", "vars")

    def __init__(self, name: str, index: int, priority: int) -> None:
        self.name = name
        self.index = index
        self.priority = priority
        self.inputs: list[_Arc] = []
        self.outputs: list[_Arc] = []
        self.assigns: list[tuple[str, Callable, frozenset[str]]] = []
        self.tests: list[tuple[Callable, frozenset[str], str]] = []
        #: guard equalities ``v == e`` usable as index lookups: (var, evaluator, needs)
        self.eqs: list[tuple[str, Callable, frozenset[str]]] = []
        self.vars: set[str] = set()


def _term(e: ast.Expr, functions: dict | None) -> tuple[int, Any, frozenset[str]]:
    if isinstance(e, ast.Name):
        return (_VAR, var_name(e), frozenset({var_name(e)}))
    if isinstance(e, ast.Const):
        return (_CONST, e.value, frozenset())
    return (_EXPR, compile_inscription(e, functions), frozenset(variables(e)))


class Simulator:
    """A marked PCPN ``(N, M)`` that can fire. ``marking`` starts as the net's initial one."""

    def __init__(self, net: Net, seed: int | None = 0, choice: str = "random",
                 record: bool = True, check_types: bool = True,
                 functions: dict[str, Callable[..., Any]] | None = None) -> None:
        if choice not in ("random", "first"):
            raise ValueError("choice is 'random' or 'first'")
        net.check()
        self.net = net
        self.choice = choice
        self.rng = random.Random(seed)
        self.record = record
        self.check_types = check_types
        self.marking: dict[str, Multiset] = {p: Multiset() for p in net.places}
        for p, ms in net.initial.items():
            self.marking[p] = ms.copy()
        self.trace: list[Step] = []
        self.steps = 0
        self._idx: dict[tuple[str, int], dict[Any, dict[Any, None]]] = {}
        self._idx_by_place: dict[str, list[int]] = {}
        self._trans: list[_Trans] = []
        self._readers: dict[str, list[int]] = {p: [] for p in net.places}
        self._sets = {p: pl.colours for p, pl in net.places.items()}
        for i, t in enumerate(net.transitions.values()):
            self._trans.append(self._compile(t.name, i, functions))
        self._enabled: dict[int, list[dict[str, Any]]] = {}
        self._dirty: set[int] = set(range(len(self._trans)))

    # -- compilation ----------------------------------------------------------------------
    def _compile(self, name: str, index: int, functions: dict | None) -> _Trans:
        net = self.net
        t = net.transitions[name]
        ct = _Trans(name, index, t.priority)
        for a in net.arcs_of(name):
            product = (net.places[a.place].colours.kind == "product"
                       and len(a.inscription.terms) > 1)
            terms = [_term(x, functions) for x in a.inscription.terms]
            if a.kind != "out":
                m = a.inscription.mult
                mult = 1 if m is None else int(m.value)  # (check(): a constant)
                arc = _Arc(a.place, a.kind, terms, mult, product, a.inscription.text())
                ct.inputs.append(arc)
                self._readers[a.place].append(index)
                ct.vars |= arc.binds
            if a.kind != "in":
                m = a.inscription.mult
                out = _Arc(a.place, a.kind, terms, None, product, a.inscription.text())
                if m is not None:
                    out.multf = compile_inscription(m, functions)
                ct.outputs.append(out)
        assigns, tests = plan_guard(t.guard, set(ct.vars))
        for v, e in assigns:
            ct.assigns.append((v, compile_inscription(e, functions), frozenset(variables(e))))
        for c in tests:
            fn = compile_inscription(c, functions)
            from cepflow.language.printer import format_expr
            ct.tests.append((fn, frozenset(variables(c)), format_expr(c)))
            if isinstance(c, ast.Binary) and c.op == "==":
                for lhs, rhs in ((c.left, c.right), (c.right, c.left)):
                    if isinstance(lhs, ast.Name) and var_name(lhs) in ct.vars:
                        need = frozenset(variables(rhs))
                        if var_name(lhs) not in need:
                            ct.eqs.append((var_name(lhs), compile_inscription(rhs, functions),
                                           need))
        return ct

    # -- indexes ----------------------------------------------------------------------------
    def _index(self, place: str, comp: int) -> dict[Any, dict[Any, None]]:
        key = (place, comp)
        idx = self._idx.get(key)
        if idx is None:
            idx = {}
            for c in self.marking[place]._c:
                v = c if comp < 0 else c[comp]
                idx.setdefault(_hkey(v), {})[c] = None
            self._idx[key] = idx
            self._idx_by_place.setdefault(place, []).append(comp)
        return idx

    def _added(self, place: str, colour: Any) -> None:
        comps = self._idx_by_place.get(place)
        if comps:
            for comp in comps:
                v = colour if comp < 0 else colour[comp]
                self._idx[(place, comp)].setdefault(_hkey(v), {})[colour] = None

    def _removed(self, place: str, colour: Any) -> None:
        comps = self._idx_by_place.get(place)
        if comps:
            for comp in comps:
                v = _hkey(colour if comp < 0 else colour[comp])
                bucket = self._idx[(place, comp)].get(v)
                if bucket is not None:
                    bucket.pop(colour, None)
                    if not bucket:
                        del self._idx[(place, comp)][v]

    # -- Def. 4 and 5 ---------------------------------------------------------------------
    def _bindings(self, ct: _Trans, limit: int) -> list[dict[str, Any]]:
        marking = self.marking
        for a in ct.inputs:  # an empty input place: nothing to bind (the common case)
            if not marking[a.place]._c:
                return []
        out: list[dict[str, Any]] = []
        name = ct.name
        inputs = ct.inputs
        ntests = len(ct.tests)
        nassign = len(ct.assigns)

        b: dict[str, Any] = {}

        def settle(done_t: int, done_a: int, assigned: list[str]) -> tuple[int, int] | None:
            # apply the assignments and tests whose variables are bound
            changed = True
            while changed:
                changed = False
                for k in range(nassign):
                    if not done_a >> k & 1:
                        v, fn, need = ct.assigns[k]
                        if need <= b.keys():
                            b[v] = _eval(fn, b, name, v)
                            assigned.append(v)
                            done_a |= 1 << k
                            changed = True
                for k in range(ntests):
                    if not done_t >> k & 1:
                        fn, need, text = ct.tests[k]
                        if need <= b.keys():
                            if not _eval(fn, b, name, text):
                                return None
                            done_t |= 1 << k
            return done_t, done_a

        def rec(left: int, done_t: int, done_a: int) -> bool:
            assigned: list[str] = []
            try:
                s = settle(done_t, done_a, assigned)
                if s is None:
                    return False
                done_t, done_a = s
                if not left:
                    if done_t != (1 << ntests) - 1 or done_a != (1 << nassign) - 1:
                        raise SimulationError(f"transition {name}: guard variables not bound")
                    if self._demand_ok(ct, b):
                        out.append(dict(b))
                        return len(out) >= limit
                    return False
                arc_i, cands = self._choose(ct, b, left)
                arc = inputs[arc_i]
                rest = left & ~(1 << arc_i)
                product = arc.product
                terms = arc.terms
                for c in cands:
                    ok = True
                    newly: list[str] = []
                    for j, (kind, p, _) in enumerate(terms):
                        v = c[j] if product else c
                        if kind == _VAR:
                            if p in b:
                                if not _same(b[p], v):
                                    ok = False
                                    break
                            else:
                                b[p] = v
                                newly.append(p)
                        elif kind == _CONST:
                            if not _same(p, v):
                                ok = False
                                break
                        elif not _same(_eval(p, b, name, arc.text), v):
                            ok = False
                            break
                    if ok and rec(rest, done_t, done_a):
                        return True
                    for p in newly:
                        del b[p]
                return False
            finally:
                for v in assigned:
                    del b[v]

        rec((1 << len(inputs)) - 1, 0, 0)
        return out

    def _choose(self, ct: _Trans, b: dict[str, Any], left: int) -> tuple[int, Any]:
        """The next input arc to join and its candidate colours (see module docstring)."""
        marking = self.marking
        best_i, best_size = -1, -1
        inputs = ct.inputs
        for i in range(len(inputs)):
            if not left >> i & 1:
                continue
            arc = inputs[i]
            # a component whose value is known: look it up
            for j, (kind, p, need) in enumerate(arc.terms):
                if kind == _VAR:
                    if p not in b:
                        continue
                    v = b[p]
                elif kind == _CONST:
                    v = p
                elif need <= b.keys():
                    v = _eval(p, b, ct.name, arc.text)
                else:
                    continue
                return i, list(self._index(arc.place, j if arc.product else -1)
                               .get(_hkey(v), ()))
            for var, fn, need in ct.eqs:
                if var in arc.binds and var not in b and need <= b.keys():
                    j = next(j for j, (k, p, _) in enumerate(arc.terms) if k == _VAR and p == var)
                    v = _eval(fn, b, ct.name, var)
                    return i, list(self._index(arc.place, j if arc.product else -1)
                                   .get(_hkey(v), ()))
            size = len(marking[arc.place]._c)
            if best_i < 0 or size < best_size:
                best_i, best_size = i, size
        return best_i, list(marking[inputs[best_i].place]._c)

    def _demand_ok(self, ct: _Trans, b: dict[str, Any]) -> bool:
        if len(ct.inputs) == 1 and ct.inputs[0].mult == 1:
            return True
        need: dict[tuple[str, Any], int] = {}
        for arc in ct.inputs:
            key = (arc.place, self._colour(arc, b, ct.name))
            need[key] = need.get(key, 0) + arc.mult
        return all(self.marking[p].count(c) >= n for (p, c), n in need.items())

    def _colour(self, arc: _Arc, b: dict[str, Any], tname: str) -> Any:
        vals = []
        for kind, p, _ in arc.terms:
            if kind == _VAR:
                vals.append(b[p])
            elif kind == _CONST:
                vals.append(p)
            else:
                vals.append(_eval(p, b, tname, arc.text))
        return tuple(vals) if arc.product else vals[0]

    def _refresh(self) -> None:
        limit = 1 if self.choice == "first" else 1 << 62
        for i in self._dirty:
            bs = self._bindings(self._trans[i], limit)
            if bs:
                self._enabled[i] = bs
            else:
                self._enabled.pop(i, None)
        self._dirty.clear()

    def enabled(self) -> list[tuple[str, dict[str, Any]]]:
        """The enabled binding elements (Def. 5) of the current marking, in transition order
        (with ``choice="first"``, at most one per transition)."""
        self._refresh()
        if not self._enabled:
            return []
        top = min(self._trans[i].priority for i in self._enabled)
        return [(self._trans[i].name, dict(b)) for i in sorted(self._enabled)
                if self._trans[i].priority == top for b in self._enabled[i]]

    # -- Def. 6 ---------------------------------------------------------------------------
    def fire(self, transition: str, binding: dict[str, Any]) -> Step:
        """Fire an enabled binding element: ``M' = M - E(p,t)(b) + E(t,p)(b)``."""
        ct = next((c for c in self._trans if c.name == transition), None)
        if ct is None:
            raise SimulationError(f"unknown transition {transition!r}")
        self._refresh()
        if not self._is_enabled(ct, binding):
            raise SimulationError(f"{transition} with {binding} is not enabled")
        return self._fire(ct, binding)

    def _is_enabled(self, ct: _Trans, binding: dict[str, Any]) -> bool:
        if any(self._trans[i].priority < ct.priority for i in self._enabled):
            return False
        return any(b == binding for b in self._bindings(ct, 1 << 62))

    def _fire(self, ct: _Trans, b: dict[str, Any]) -> Step:
        self.steps += 1
        step = Step(self.steps, ct.name, b) if self.record else None
        marking = self.marking
        touched: set[str] = set()
        for arc in ct.inputs:
            c = self._colour(arc, b, ct.name)
            if arc.kind == "read":
                continue
            ms = marking[arc.place]
            ms.remove(c, arc.mult)
            if c not in ms._c:
                self._removed(arc.place, c)
            touched.add(arc.place)
            if step is not None:
                step.taken.append((arc.place, c, arc.mult))
        for arc in ct.outputs:
            if arc.kind == "read":
                continue
            n = 1
            if arc.multf is not None:
                m = _eval(arc.multf, b, ct.name, arc.text)
                n = 0 if m is None or m is False else (1 if m is True else m)
                if not isinstance(n, int) or n < 0:
                    raise SimulationError(f"{ct.name} -> {arc.place}: multiplicity {m!r} of "
                                          f"{arc.text} is not a natural number")
                if n == 0:
                    continue
            c = self._colour(arc, b, ct.name)
            if self.check_types and not self._sets[arc.place].contains(c):
                raise SimulationError(f"{ct.name} -> {arc.place}: {c!r} is not a colour of "
                                      f"{self._sets[arc.place].name} ({arc.text})")
            ms = marking[arc.place]
            new = c not in ms._c
            ms.add(c, n)
            if new:
                self._added(arc.place, c)
            touched.add(arc.place)
            if step is not None:
                step.added.append((arc.place, c, n))
        for p in touched:
            self._dirty.update(self._readers[p])
        if step is not None:
            self.trace.append(step)
            return step
        return Step(self.steps, ct.name, b)

    # -- running --------------------------------------------------------------------------
    def step(self) -> Step | None:
        """Fire one enabled binding element (None when the marking is dead)."""
        self._refresh()
        en = self._enabled
        if not en:
            return None
        top = min(self._trans[i].priority for i in en)
        if self.choice == "first":
            i = min(i for i in en if self._trans[i].priority == top)
            return self._fire(self._trans[i], en[i][0])
        cands = [(i, b) for i in sorted(en) if self._trans[i].priority == top for b in en[i]]
        i, b = cands[self.rng.randrange(len(cands))] if len(cands) > 1 else cands[0]
        return self._fire(self._trans[i], b)

    def run(self, max_steps: int | None = None,
            until: Callable[[Step], bool] | None = None) -> int:
        """Fire until the marking is dead, ``max_steps`` steps were fired, or ``until`` is
        true of a step just fired. Returns the number of steps fired."""
        n = 0
        while max_steps is None or n < max_steps:
            s = self.step()
            if s is None:
                break
            n += 1
            if until is not None and until(s):
                break
        return n

    def run_until_transition(self, name: str, max_steps: int | None = None) -> Step | None:
        """Fire until ``name`` fires (its step) or the marking is dead (None)."""
        found: list[Step] = []

        def hit(s: Step) -> bool:
            if s.transition == name:
                found.append(s)
                return True
            return False

        self.run(max_steps, hit)
        return found[0] if found else None

    def tokens(self, place: str) -> Multiset:
        return self.marking[place]

    def steps_iter(self) -> Iterator[Step]:
        while True:
            s = self.step()
            if s is None:
                return
            yield s


def _eval(fn: Callable, b: dict[str, Any], tname: str, what: str) -> Any:
    try:
        return fn(b)
    except InscriptionError:
        raise
    except Exception as e:  # a registered function failed on these values
        raise SimulationError(f"transition {tname}: {what}: {type(e).__name__}: {e}") from None


def _same(a: Any, b: Any) -> bool:
    return a is b or a == b


def _hkey(v: Any) -> Any:
    """A dict key for an index (unhashable values cannot occur in colours)."""
    return v
