"""A prioritized coloured Petri net (seed 004 Def. 2): ``(P, T, A, V, G, E, π)``.

Places carry a colour set, transitions a guard and a priority, arcs an arc expression
(:mod:`cepflow.petri.inscriptions`); the variables ``V`` are the names the inscriptions use,
typed by the colour-set component they are bound to. Priorities are levels where a lower value
is a higher priority; 004 names four, ``P_HIGH`` (1) > ``P_NORMAL`` (2) > ``P_LOW`` (3) >
``P_LOW2`` (4) — Def. 2 allows any natural number, and the translation of pattern sets uses
more levels below those (``P_LOW3``, … see :data:`PRIORITY_NAMES`). A transition without a
guard is always true; without a priority it is ``P_NORMAL`` (004, Example 1).

A net is plain data: it can be built in Python, translated from a pattern set
(:mod:`cepflow.petri.translate`), written to and read from PNML (:mod:`cepflow.petri.pnml`).
:meth:`Net.check` validates it: every arc joins a place and a transition, every arc has one
term per component of its place's colour set (or one term for the whole colour), every
variable a guard or output arc reads is
bound by an input arc or assigned by the guard, and each variable has one type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from cepflow.language import ast
from cepflow.language.walk import rewrite
from cepflow.petri.colours import ANY, BOOL, ColourSet
from cepflow.petri.inscriptions import (
    ArcInscription,
    InscriptionError,
    conjuncts,
    var_name,
    variables,
)
from cepflow.petri.multiset import Multiset

P_HIGH, P_NORMAL, P_LOW, P_LOW2 = 1, 2, 3, 4

#: level -> name; levels past P_LOW2 are named P_LOW3, P_LOW4, …
PRIORITY_NAMES: dict[int, str] = {1: "P_HIGH", 2: "P_NORMAL", 3: "P_LOW", 4: "P_LOW2"}


def priority_name(level: int) -> str:
    return PRIORITY_NAMES.get(level, f"P_LOW{level - 2}")


def priority_level(name: str) -> int:
    """The level of a priority name (``P_HIGH`` … ``P_LOWn``) or a number."""
    for k, v in PRIORITY_NAMES.items():
        if v == name:
            return k
    if name.startswith("P_LOW") and name[5:].isdigit():
        return int(name[5:]) + 2
    if name.isdigit():
        return int(name)
    raise ValueError(f"unknown priority {name!r} (P_HIGH, P_NORMAL, P_LOW, P_LOW2, P_LOWn)")


@dataclass
class Place:
    """A place with its colour set. ``role`` says what it is for (``event``, ``complex``,
    ``control``, ``state``, ``window`` …: reports group by it); ``page`` is the subnet
    (CPN Tools page) it belongs to."""

    name: str
    colours: ColourSet
    role: str = ""
    page: str = ""
    doc: str = ""


@dataclass
class Transition:
    name: str
    guard: ast.Expr | None = None
    priority: int = P_NORMAL
    page: str = ""
    doc: str = ""


ArcKind = Literal["in", "out", "read"]


@dataclass
class Arc:
    """An arc between ``place`` and ``transition``: ``in`` (place → transition), ``out``
    (transition → place) or ``read`` (both ways with one expression: the token is tested and
    put back, CPN Tools' double arc)."""

    place: str
    transition: str
    kind: ArcKind
    inscription: ArcInscription


class NetError(ValueError):
    """A net that is not well formed, naming the place, transition or arc."""


@dataclass
class Net:
    name: str
    places: dict[str, Place] = field(default_factory=dict)
    transitions: dict[str, Transition] = field(default_factory=dict)
    arcs: list[Arc] = field(default_factory=list)
    #: the initial marking M0 (Def. 3): place -> multiset; places not listed are empty
    initial: dict[str, Multiset] = field(default_factory=dict)
    #: variables a guard assigns, with their colour set (others take their place's)
    var_types: dict[str, ColourSet] = field(default_factory=dict)
    doc: str = ""

    # -- building -------------------------------------------------------------------------
    def place(self, name: str, colours: ColourSet, role: str = "", page: str = "",
              doc: str = "") -> Place:
        if name in self.places or name in self.transitions:
            raise NetError(f"duplicate node name {name!r}")
        p = self.places[name] = Place(name, colours, role, page, doc)
        return p

    def transition(self, name: str, guard: ast.Expr | None = None, priority: int = P_NORMAL,
                   page: str = "", doc: str = "") -> Transition:
        if name in self.places or name in self.transitions:
            raise NetError(f"duplicate node name {name!r}")
        t = self.transitions[name] = Transition(name, guard, priority, page, doc)
        return t

    def arc(self, place: str, transition: str, kind: ArcKind,
            inscription: ArcInscription) -> Arc:
        a = Arc(place, transition, kind, inscription)
        self.arcs.append(a)
        return a

    def mark(self, place: str, *colours: object) -> None:
        """Add tokens to the initial marking of ``place``."""
        ms = self.initial.setdefault(place, Multiset())
        for c in colours:
            ms.add(c)

    # -- queries --------------------------------------------------------------------------
    def arcs_of(self, transition: str) -> list[Arc]:
        return [a for a in self.arcs if a.transition == transition]

    def preset(self, transition: str) -> list[str]:
        """``•t``: the places the transition takes from (or tests)."""
        return [a.place for a in self.arcs if a.transition == transition and a.kind != "out"]

    def postset(self, transition: str) -> list[str]:
        """``t•``."""
        return [a.place for a in self.arcs if a.transition == transition and a.kind != "in"]

    def variable_types(self) -> dict[str, ColourSet]:
        """``V`` with ``Type(v)`` (Def. 2): from the component each input arc binds a variable
        to, then the guard assignments; NetError when one variable gets two types."""
        out: dict[str, ColourSet] = {}
        for a in self.arcs:
            for v, s in self.bound_by(a):
                old = out.get(v)
                if old is not None and old.name != s.name and ANY not in (old, s):
                    raise NetError(f"variable {v!r} is bound to {old.name} and to {s.name} "
                                   f"(transition {a.transition})")
                out.setdefault(v, s)
        for t in self.transitions.values():
            for v, e in plan_guard(t.guard, self.arc_variables(t.name))[0]:
                out.setdefault(v, self.var_types.get(v, BOOL if _boolean(e) else ANY))
        out.update({v: cs for v, cs in self.var_types.items() if v in out})
        return out

    def colour_sets(self, extra: list[ColourSet] | None = None) -> dict[str, ColourSet]:
        """Every colour set the places (and ``extra``) use, each after the sets it is made
        of (the order declarations need)."""
        sets: dict[str, ColourSet] = {}

        def collect(cs: ColourSet) -> None:
            if cs.name in sets:
                return
            for _, f in cs.fields:
                collect(f)
            if cs.element is not None:
                collect(cs.element)
            sets[cs.name] = cs

        for p in self.places.values():
            collect(p.colours)
        for cs in extra or []:
            collect(cs)
        return sets

    def bound_by(self, a: Arc) -> list[tuple[str, ColourSet]]:
        """The variables an input (or read) arc binds, each with its component's colour set."""
        if a.kind == "out":
            return []
        cs = self.places[a.place].colours
        sets = ([f for _, f in cs.fields] if cs.kind == "product"
                and len(a.inscription.terms) > 1 else [cs])
        return [(var_name(term), st) for term, st in zip(a.inscription.terms, sets, strict=False)
                if isinstance(term, ast.Name)]

    def separate_variables(self) -> None:
        """Rename, transition by transition, a variable bound to different colour sets in
        different transitions (``v`` becomes ``v_INT``), so that every variable has one type
        (Def. 2) — the translation reuses short names such as ``r`` freely."""
        seen: dict[str, ColourSet] = {}
        for t in self.transitions:
            arcs = self.arcs_of(t)
            mine: dict[str, ColourSet] = {}
            for a in arcs:
                for v, cs in self.bound_by(a):
                    mine.setdefault(v, cs)
            rename = {}
            for v, cs in mine.items():
                old = seen.get(v)
                if old is not None and old.name != cs.name and ANY not in (old, cs):
                    rename[v] = f"{v}_{cs.name}"
                    seen.setdefault(rename[v], cs)
                else:
                    seen.setdefault(v, cs)
            if not rename:
                continue

            def fn(n: ast.Expr, rename: dict[str, str] = rename) -> ast.Expr | None:
                if isinstance(n, ast.Name) and var_name(n) in rename:
                    head, *rest = rename[var_name(n)].split(".")
                    return ast.Name(head, tuple(rest), n.loc)
                return None

            tr = self.transitions[t]
            if tr.guard is not None:
                tr.guard = rewrite(tr.guard, fn)
            for a in arcs:
                ins = a.inscription
                a.inscription = ArcInscription(
                    tuple(rewrite(x, fn) for x in ins.terms),
                    None if ins.mult is None else rewrite(ins.mult, fn))

    def check(self) -> None:
        """Raise NetError when the net is not well formed (module docstring)."""
        for a in self.arcs:
            if a.place not in self.places:
                raise NetError(f"arc of {a.transition!r}: unknown place {a.place!r}")
            if a.transition not in self.transitions:
                raise NetError(f"arc of {a.place!r}: unknown transition {a.transition!r}")
            arity = self.places[a.place].colours.arity
            if len(a.inscription.terms) not in (arity, 1):
                raise NetError(f"arc {a.place} -> {a.transition}: {len(a.inscription.terms)} "
                               f"term(s) for a colour set of {arity} component(s) "
                               f"({a.inscription.text()})")
            if a.kind != "out" and a.inscription.mult is not None and not (
                    isinstance(a.inscription.mult, ast.Const)
                    and isinstance(a.inscription.mult.value, int)):
                raise NetError(f"arc {a.place} -> {a.transition}: an input arc's multiplicity "
                               f"must be a constant ({a.inscription.text()})")
        for p, ms in self.initial.items():
            if p not in self.places:
                raise NetError(f"initial marking of unknown place {p!r}")
            cs = self.places[p].colours
            for v in ms.distinct():
                if not cs.contains(v):
                    raise NetError(f"initial marking of {p}: {v!r} is not a colour of "
                                   f"{cs.name}")
        self.variable_types()
        for t in self.transitions.values():
            bound = self.arc_variables(t.name)
            assigns, tests = plan_guard(t.guard, bound)
            for v, e in assigns:
                need = variables(e) - bound
                if need:
                    raise NetError(f"transition {t.name}: guard assigns {v} from unbound "
                                   f"variable(s) {', '.join(sorted(need))}")
                bound.add(v)
            for c in tests:
                need = variables(c) - bound
                if need:
                    raise NetError(f"transition {t.name}: guard reads unbound variable(s) "
                                   f"{', '.join(sorted(need))}")
            for a in self.arcs_of(t.name):
                free = a.inscription.variables() - bound
                if free:
                    raise NetError(f"arc {t.name} -> {a.place}: unbound variable(s) "
                                   f"{', '.join(sorted(free))} ({a.inscription.text()})")

    def arc_variables(self, transition: str) -> set[str]:
        """The variables the input (and read) arcs of ``transition`` bind."""
        out: set[str] = set()
        for a in self.arcs_of(transition):
            if a.kind != "out":
                out |= {var_name(x) for x in a.inscription.terms if isinstance(x, ast.Name)}
        return out


def plan_guard(guard: ast.Expr | None, arc_vars: set[str]
               ) -> tuple[list[tuple[str, ast.Expr]], list[ast.Expr]]:
    """A guard's assignments ``v == e`` (``v`` bound by no input arc nor earlier assignment),
    in an order where each reads only what is bound before it, and its tests."""
    assigns: list[tuple[str, ast.Expr]] = []
    tests: list[ast.Expr] = []
    known = set(arc_vars)
    for c in conjuncts(guard):
        v = assigned(c, known)
        if v is None:
            tests.append(c)
        else:
            assigns.append((v, c.right))  # type: ignore[union-attr]
            known.add(v)
    names = {v for v, _ in assigns}
    ordered: list[tuple[str, ast.Expr]] = []
    have: set[str] = set()
    pending = list(assigns)
    while pending:
        for item in pending:
            if variables(item[1]) & names <= have:
                ordered.append(item)
                have.add(item[0])
                pending.remove(item)
                break
        else:  # a cycle among assignments: keep the written order (check() reports it)
            ordered.extend(pending)
            break
    return ordered, tests


def assigned(c: ast.Expr, bound: set[str]) -> str | None:
    """The variable a guard conjunct ``v == e`` assigns when no input arc binds ``v``."""
    if (isinstance(c, ast.Binary) and c.op == "==" and isinstance(c.left, ast.Name)
            and var_name(c.left) not in bound and var_name(c.left) not in variables(c.right)):
        return var_name(c.left)
    return None


def _boolean(e: ast.Expr) -> bool:
    return (isinstance(e, ast.Binary) and e.op in ("and", "or", "==", "!=", "<", "<=", ">",
                                                  ">=")) or (
        isinstance(e, ast.Unary) and e.op == "not") or (
        isinstance(e, ast.Const) and isinstance(e.value, bool))


__all__ = ["Arc", "InscriptionError", "Net", "NetError", "Place", "Transition"]
