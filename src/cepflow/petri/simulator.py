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

**Evaluation errors** (docs/semantics.md, "Evaluation errors"): an inscription that fails on a
value (``sqrt(-4)`` in a translated filter) is null, so a failing guard is false, as in the
engine; the failures are kept in ``failures``. A net function that raises is a bug of the
net: a :class:`SimulationError`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cepflow.compiler.evaluator import Failure, install_sink
from cepflow.language import ast
from cepflow.petri.inscriptions import compile_raw, var_name, variables
from cepflow.petri.multiset import Multiset
from cepflow.petri.net import Net, plan_guard


class SimulationError(RuntimeError):
    """A firing that cannot happen (an inscription failed, a colour outside its set)."""


@dataclass
class Firing:
    """One fired binding element: ``taken`` and ``added`` are (place, colour, count)."""

    index: int
    transition: str
    binding: dict[str, Any]
    taken: list[tuple[str, Any, int]] = field(default_factory=list)
    added: list[tuple[str, Any, int]] = field(default_factory=list)


# term kinds of a compiled arc, and what a join level does with a component
_VAR, _CONST, _EXPR = 0, 1, 2
_BIND, _SAMEVAR, _SAMECONST, _SAMEEXPR = 0, 1, 2, 3


class _Arc:
    __slots__ = ("kind", "mult", "multf", "place", "product", "terms", "text")

    def __init__(self, place: str, kind: str, terms: list[tuple[int, Any, frozenset[str]]],
                 mult: Any, product: bool, text: str) -> None:
        self.place = place
        self.kind = kind
        self.terms = terms
        self.product = product
        self.text = text
        self.mult = mult          # int (input arcs)
        self.multf = None         # an evaluator (output arcs with a multiplicity)


class _Level:
    """One input arc of a join plan: how its candidate tokens are found (a scan, or a lookup
    by a component whose value is known), what each component does (bind a variable or equal
    a known value), and the guard assignments and tests that become possible after it."""

    __slots__ = ("actions", "assigns", "comp", "key", "keyk", "place", "product", "tests")

    def __init__(self, place: str, product: bool) -> None:
        self.place = place
        self.product = product
        self.comp = -2      # -2: scan; -1: look up the whole colour; j: component j
        self.keyk = _VAR
        self.key: Any = None
        self.actions: list[tuple[int, int, Any]] = []
        self.assigns: list[tuple[str, Callable]] = []
        self.tests: list[Callable] = []


class _Trans:
    __slots__ = ("demand", "index", "inputs", "levels", "name", "outputs", "places", "pre",
                 "priority")

    def __init__(self, name: str, index: int, priority: int) -> None:
        self.name = name
        self.index = index
        self.priority = priority
        self.inputs: list[_Arc] = []
        self.outputs: list[_Arc] = []
        self.levels: list[_Level] = []
        self.pre: list[Callable] = []      # guard tests over constants only
        self.places: list[str] = []        # the input places (any empty: not enabled)
        self.demand = False                # two arcs may ask for the same tokens


def _term(e: ast.Expr, functions: dict | None) -> tuple[int, Any, frozenset[str]]:
    if isinstance(e, ast.Name):
        return (_VAR, var_name(e), frozenset({var_name(e)}))
    if isinstance(e, ast.Const):
        return (_CONST, e.value, frozenset())
    return (_EXPR, compile_raw(e, functions), frozenset(variables(e)))


def _plan(ct: _Trans, tests: list[tuple[Callable, frozenset[str]]],
          assigns: list[tuple[str, Callable, frozenset[str]]],
          eqs: list[tuple[str, Callable, frozenset[str]]], small: set[str]) -> None:
    """The join order of ``ct``'s input arcs and what each level does (module docstring):
    next, an arc one of whose components can be looked up (a constant, a bound variable, an
    expression of bound variables, or a guard equality with a bound side), preferring control
    places; else a control place; else the first arc left."""
    bound: set[str] = set()
    left = list(range(len(ct.inputs)))
    assigns = list(assigns)
    tests = list(tests)
    for fn, need in list(tests):
        if not need:
            ct.pre.append(fn)
            tests.remove((fn, need))
    while left:
        best, best_score, best_key = left[0], (-1, -1), None
        for i in left:
            arc = ct.inputs[i]
            key = None
            for j, (kind, p, need) in enumerate(arc.terms):
                if kind == _CONST or (kind == _VAR and p in bound) or (
                        kind == _EXPR and need <= bound):
                    key = (j, kind, p)
                    break
            if key is None:
                for var, fn, need in eqs:
                    if var not in bound and need <= bound:
                        j = next((j for j, (k, p, _) in enumerate(arc.terms)
                                  if k == _VAR and p == var), None)
                        if j is not None:
                            key = (j, _EXPR, fn)
                            break
            score = (key is not None, arc.place in small)
            if score > best_score:
                best, best_score, best_key = i, score, key
        left.remove(best)
        arc = ct.inputs[best]
        lv = _Level(arc.place, arc.product)
        if best_key is not None:
            j, kind, payload = best_key
            lv.comp = j if arc.product else -1
            lv.keyk, lv.key = kind, payload
        for j, (kind, p, _) in enumerate(arc.terms):
            if kind == _VAR:
                if p in bound:
                    lv.actions.append((_SAMEVAR, j, p))
                else:
                    lv.actions.append((_BIND, j, p))
                    bound.add(p)
            elif kind == _CONST:
                lv.actions.append((_SAMECONST, j, p))
            else:
                lv.actions.append((_SAMEEXPR, j, p))
        progress = True
        while progress:
            progress = False
            for item in list(assigns):
                v, fn, need = item
                if need <= bound:
                    lv.assigns.append((v, fn))
                    bound.add(v)
                    assigns.remove(item)
                    progress = True
        for item in list(tests):
            fn, need = item
            if need <= bound:
                lv.tests.append(fn)
                tests.remove(item)
        ct.levels.append(lv)
    if assigns or tests:
        missing = set().union(*(n for _, _, n in assigns), *(n for _, n in tests)) - bound
        raise SimulationError(f"transition {ct.name}: guard reads unbound variable(s) "
                              f"{', '.join(sorted(missing))}")


def _checker(cs: Any) -> Callable[[Any], bool]:
    """A fast membership test for colour set ``cs`` (ColourSet.contains, specialised)."""
    k = cs.kind
    if k == "product":
        subs = [(i, _checker(f)) for i, (_, f) in enumerate(cs.fields) if f.kind != "ANY"]
        n = len(cs.fields)

        def product(v: Any) -> bool:
            if v.__class__ is not tuple or len(v) != n:
                return False
            for i, c in subs:  # noqa: SIM110 (a plain loop: this runs at every firing)
                if not c(v[i]):
                    return False
            return True
        return product
    if k in ("INT", "INTINF"):
        return lambda v: v is None or (v.__class__ is int) or (
            isinstance(v, int) and not isinstance(v, bool))
    if k == "REAL":
        return lambda v: v is None or v.__class__ in (int, float) or (
            isinstance(v, int | float) and not isinstance(v, bool))
    if k == "STRING":
        return lambda v: v is None or isinstance(v, str)
    return cs.contains


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
        self.trace: list[Firing] = []
        self.steps = 0
        #: evaluation failures of inscriptions (module docstring), in the order they happened
        self.failures: list[Failure] = []
        self._idx: dict[tuple[str, int], dict[Any, dict[Any, None]]] = {}
        self._idx_by_place: dict[str, list[int]] = {}
        self._trans: list[_Trans] = []
        self._by_name: dict[str, _Trans] = {}
        self._readers: dict[str, list[int]] = {p: [] for p in net.places}
        self._sets = {p: pl.colours for p, pl in net.places.items()}
        self._checks = {p: _checker(cs) for p, cs in self._sets.items()}
        small = {p for p, pl in net.places.items() if pl.role in ("control", "inbox")}
        for i, t in enumerate(net.transitions.values()):
            ct = self._compile(t.name, i, functions, small)
            self._trans.append(ct)
            self._by_name[t.name] = ct
        self._enabled: dict[int, list[dict[str, Any]]] = {}
        self._dirty: set[int] = set(range(len(self._trans)))

    # -- compilation ----------------------------------------------------------------------
    def _compile(self, name: str, index: int, functions: dict | None,
                 small: set[str]) -> _Trans:
        net = self.net
        t = net.transitions[name]
        ct = _Trans(name, index, t.priority)
        arc_vars: set[str] = set()
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
                arc_vars |= {p for k, p, _ in terms if k == _VAR}
                if a.place not in ct.places:
                    ct.places.append(a.place)
                else:  # two arcs from one place may ask for the same token
                    ct.demand = True
                if mult > 1:
                    ct.demand = True
            if a.kind != "in":
                m = a.inscription.mult
                out = _Arc(a.place, a.kind, terms, None, product, a.inscription.text())
                if m is not None:
                    out.multf = compile_raw(m, functions)
                ct.outputs.append(out)
        assigns_ast, tests_ast = plan_guard(t.guard, set(arc_vars))
        assigns = [(v, compile_raw(e, functions), frozenset(variables(e)))
                   for v, e in assigns_ast]
        tests = []
        eqs: list[tuple[str, Callable, frozenset[str]]] = []
        for c in tests_ast:
            tests.append((compile_raw(c, functions), frozenset(variables(c))))
            if isinstance(c, ast.Binary) and c.op == "==":
                for lhs, rhs in ((c.left, c.right), (c.right, c.left)):
                    if isinstance(lhs, ast.Name) and var_name(lhs) in arc_vars:
                        need = frozenset(variables(rhs))
                        if var_name(lhs) not in need:
                            eqs.append((var_name(lhs), compile_raw(rhs, functions), need))
        _plan(ct, tests, assigns, eqs, small)
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
        """The bindings of ``ct`` enabled by conditions 1 and 2 of Def. 5 (at most
        ``limit``), by the transition's join plan."""
        marking = self.marking
        for p in ct.places:  # an empty input place: nothing to bind (the common case)
            if not marking[p]._c:
                return []
        out: list[dict[str, Any]] = []
        b: dict[str, Any] = {}
        try:
            for fn in ct.pre:
                if not fn(None, b):
                    return []
            self._join(ct, 0, b, out, limit)
        except SimulationError:
            raise
        except Exception as e:  # a registered function failed on these values
            raise SimulationError(f"transition {ct.name}: {type(e).__name__}: {e}") from None
        return out

    def _join(self, ct: _Trans, i: int, b: dict[str, Any], out: list[dict[str, Any]],
              limit: int) -> bool:
        """Level ``i`` of the join: every candidate token of its arc that agrees with ``b``.
        (No undo is needed: a level's variables are bound again for each candidate, and a
        later level only reads the variables of the levels before it.)"""
        lv = ct.levels[i]
        comp = lv.comp
        # (the marking does not change during a join: its dicts are iterated as they are)
        if comp == -2:
            cands: Any = self.marking[lv.place]._c
        else:
            kk = lv.keyk
            v = b[lv.key] if kk == _VAR else lv.key if kk == _CONST else lv.key(None, b)
            cands = self._index(lv.place, comp).get(v)
            if not cands:
                return False
        product = lv.product
        actions = lv.actions
        assigns = lv.assigns
        tests = lv.tests
        last = i + 1 == len(ct.levels)
        for c in cands:
            ok = True
            for op, j, p in actions:
                x = c[j] if product else c
                if op == _BIND:
                    b[p] = x
                elif op == _SAMEVAR:
                    y = b[p]
                    if y is not x and y != x:
                        ok = False
                        break
                elif op == _SAMECONST:
                    if p is not x and p != x:
                        ok = False
                        break
                else:
                    y = p(None, b)
                    if y is not x and y != x:
                        ok = False
                        break
            if not ok:
                continue
            for var, fn in assigns:
                b[var] = fn(None, b)
            for fn in tests:
                if not fn(None, b):
                    ok = False
                    break
            if not ok:
                continue
            if last:
                if ct.demand and not self._demand_ok(ct, b):
                    continue
                out.append(dict(b))
                if len(out) >= limit:
                    return True
            elif self._join(ct, i + 1, b, out, limit):
                return True
        return False

    def _demand_ok(self, ct: _Trans, b: dict[str, Any]) -> bool:
        need: dict[tuple[str, Any], int] = {}
        for arc in ct.inputs:
            key = (arc.place, self._colour(arc, b, ct.name))
            need[key] = need.get(key, 0) + arc.mult
        return all(self.marking[p].count(c) >= n for (p, c), n in need.items())

    def _colour(self, arc: _Arc, b: dict[str, Any], tname: str) -> Any:
        vals = []
        try:
            for kind, p, _ in arc.terms:
                vals.append(b[p] if kind == _VAR else p if kind == _CONST else p(None, b))
        except Exception as e:
            raise SimulationError(f"transition {tname}: {arc.text}: {type(e).__name__}: "
                                  f"{e}") from None
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
        before = install_sink(self.failures)
        try:
            self._refresh()
        finally:
            install_sink(before)
        if not self._enabled:
            return []
        top = min(self._trans[i].priority for i in self._enabled)
        return [(self._trans[i].name, dict(b)) for i in sorted(self._enabled)
                if self._trans[i].priority == top for b in self._enabled[i]]

    # -- Def. 6 ---------------------------------------------------------------------------
    def fire(self, transition: str, binding: dict[str, Any]) -> Firing:
        """Fire an enabled binding element: ``M' = M - E(p,t)(b) + E(t,p)(b)``."""
        ct = self._by_name.get(transition)
        if ct is None:
            raise SimulationError(f"unknown transition {transition!r}")
        before = install_sink(self.failures)
        try:
            self._refresh()
            if not self._is_enabled(ct, binding):
                raise SimulationError(f"{transition} with {binding} is not enabled")
            return self._fire(ct, binding)
        finally:
            install_sink(before)

    def _is_enabled(self, ct: _Trans, binding: dict[str, Any]) -> bool:
        if any(self._trans[i].priority < ct.priority for i in self._enabled):
            return False
        return any(b == binding for b in self._bindings(ct, 1 << 62))

    def _fire(self, ct: _Trans, b: dict[str, Any]) -> Firing:
        self.steps += 1
        step = Firing(self.steps, ct.name, b) if self.record else None
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
                try:
                    m = arc.multf(None, b)
                except Exception as e:
                    raise SimulationError(f"transition {ct.name}: {arc.text}: "
                                          f"{type(e).__name__}: {e}") from None
                n = 0 if m is None or m is False else (1 if m is True else m)
                if not isinstance(n, int) or n < 0:
                    raise SimulationError(f"{ct.name} -> {arc.place}: multiplicity {m!r} of "
                                          f"{arc.text} is not a natural number")
                if n == 0:
                    continue
            c = self._colour(arc, b, ct.name)
            if self.check_types and not self._checks[arc.place](c):
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
        return Firing(self.steps, ct.name, b)

    def undo(self) -> Firing:
        """Take back the last step fired (its tokens return; needs ``record=True``)."""
        if not self.trace:
            raise SimulationError("no step to take back")
        step = self.trace.pop()
        touched: set[str] = set()
        for p, c, n in step.added:
            ms = self.marking[p]
            ms.remove(c, n)
            if c not in ms._c:
                self._removed(p, c)
            touched.add(p)
        for p, c, n in step.taken:
            ms = self.marking[p]
            new = c not in ms._c
            ms.add(c, n)
            if new:
                self._added(p, c)
            touched.add(p)
        for p in touched:
            self._dirty.update(self._readers[p])
        self.steps -= 1
        return step

    def redo(self, step: Firing) -> Firing:
        """Fire ``step`` again (a step :meth:`undo` took back), whatever the choice would
        draw now: stepping back and forth shows the same run."""
        ct = self._by_name[step.transition]
        before = install_sink(self.failures)
        try:
            self._refresh()
            return self._fire(ct, step.binding)
        finally:
            install_sink(before)

    # -- running --------------------------------------------------------------------------
    def step(self) -> Firing | None:
        """Fire one enabled binding element (None when the marking is dead)."""
        before = install_sink(self.failures)
        try:
            return self._step()
        finally:
            install_sink(before)

    def _step(self) -> Firing | None:
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
            until: Callable[[Firing], bool] | None = None) -> int:
        """Fire until the marking is dead, ``max_steps`` steps were fired, or ``until`` is
        true of a step just fired. Returns the number of steps fired."""
        n = 0
        before = install_sink(self.failures)
        try:
            while max_steps is None or n < max_steps:
                s = self._step()
                if s is None:
                    break
                n += 1
                if until is not None and until(s):
                    break
        finally:
            install_sink(before)
        return n

    def run_until_transition(self, name: str, max_steps: int | None = None) -> Firing | None:
        """Fire until ``name`` fires (its step) or the marking is dead (None)."""
        found: list[Firing] = []

        def hit(s: Firing) -> bool:
            if s.transition == name:
                found.append(s)
                return True
            return False

        self.run(max_steps, hit)
        return found[0] if found else None

    def tokens(self, place: str) -> Multiset:
        return self.marking[place]

    def steps_iter(self) -> Iterator[Firing]:
        while True:
            s = self.step()
            if s is None:
                return
            yield s


def _same(a: Any, b: Any) -> bool:
    return a is b or a == b


def _hkey(v: Any) -> Any:
    """A dict key for an index (unhashable values cannot occur in colours)."""
    return v
