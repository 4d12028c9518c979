"""Esper's ``and`` and ``or`` as products of their operands (docs/esper.md, "and", "or").

In Esper ``P and Q`` starts both operands at once and is true when both have turned true; each
operand takes the *first* event that satisfies its next step, and one event may satisfy steps of
both (``A and A`` fires on a single ``A``; ``a=A(v > 1) and b=A(v < 5)`` on one ``A(v=3)``, with
``a`` and ``b`` the same event). 000's ``and`` — ``or(fol(P, Q), fol(Q, P))`` — needs two events
and no interleaving, so Esper-style patterns get this construction instead (VEPL keeps 000's).

Each operand (atoms, sequences, alternatives, ``[n]`` repetitions) gets its own Glushkov
positions; a state of the product is one position (or "not begun") per operand, and a step
moves a non-empty set ``S`` of the unfinished operands on one event whose type all their next
atoms share. A step of the product is one automaton position (:class:`ProductStep`): the atoms of
``S`` merged — every binding, the conjunction of the filters. Every subset of the operands that
can take an event is a candidate, so the matcher keeps, of the steps that fire, only those whose
``S`` is maximal (``Position.conj``): every operand that can take the event takes it, which is
Esper's "first event" rule, and the product stays deterministic.

Esper's ``or`` runs its operands side by side in the same way and is true as soon as one of them
is (EvalOrStateNode): its product ends at the first step that completes an operand (when an
event completes several, the one whose filter started first — the child that reports first:
:attr:`ProductStep.ties`), and the match keeps only that operand's events and tags
— the others' tags are null, as Esper's result carries only the child that turned true
(:attr:`ProductStep.settles`, applied by the matcher). An ``or`` of single events needs none of
this:
the plain automaton already is its product.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cepflow.compiler.normalize import and_items, fol_items, or_items
from cepflow.language import ast
from cepflow.language.walk import atoms

#: the most product steps one ``and`` may have (states grow with the product of operand sizes)
MAX_STEPS = 4096


class ConjunctionError(Exception):
    """An ``and`` this construction does not take, with the operand's location."""

    def __init__(self, message: str, loc: ast.Loc = None) -> None:
        super().__init__(message)
        self.loc = loc


@dataclass
class _Glushkov:
    """An operand's own positions: atoms, first/last positions and the follow relation."""

    word: str = "'and'"
    atoms: list[ast.Atom] = field(default_factory=list)
    follow: dict[int, set[int]] = field(default_factory=dict)

    def build(self, p: ast.Pattern) -> tuple[set[int], set[int], bool]:
        """(first, last, nullable) of ``p``, adding its positions. A tag inside a repetition
        (its events collected, compiler.esper) is taken in an ``and``'s operands; an ``or``'s
        are run side by side from one event instead (compiler.esper ``_Lowering.beside``)."""
        if isinstance(p, ast.Atom):
            if p.alias is not None and self.word != "'and'":
                raise ConjunctionError(f"a tag inside a repetition inside {self.word} is not "
                                       "supported", p.loc)
            i = len(self.atoms)
            self.atoms.append(p)
            self.follow[i] = set()
            return {i}, {i}, False
        if isinstance(p, ast.Or):
            if not all(isinstance(x, ast.Atom) for x in or_items(p)):
                # (a union would commit to the alternative whose first event came: Esper's
                # or runs them side by side and a later alternative may complete first)
                raise ConjunctionError(f"an 'or' of sequences inside an operand of {self.word}"
                                       " is not supported (an or of single events is)", p.loc)
            parts = [self.build(x) for x in or_items(p)]
            first = set().union(*(f for f, _, _ in parts))
            return first, set().union(*(la for _, la, _ in parts)), any(n for _, _, n in parts)
        if isinstance(p, ast.Fol):
            return self.seq(fol_items(p))
        if isinstance(p, ast.Mult):
            if isinstance(p.count, int):
                return self.seq([p.pattern] * p.count)
            first, last, nullable = self.build(p.pattern)
            for q in last:
                self.follow[q] |= first
            return first, last, nullable or p.count == "*"
        if isinstance(p, ast.Window) and not p.guard:
            raise ConjunctionError(f"a window inside an operand of {self.word} is not "
                                   "supported (a window of the cepflow syntax spans its own "
                                   "events; EPL's guard on a whole operand, P where "
                                   "timer:within(Δ), is)", p.loc)
        if isinstance(p, ast.Window) and self.word == "'and'":
            raise ConjunctionError("timer:within inside an operand of 'and' is supported "
                                   "around the whole operand when that is no sequence ((P "
                                   "where timer:within(Δ)) and Q, P one event, [n] of one or "
                                   "an 'and')", p.loc)
        if isinstance(p, ast.Window):
            raise ConjunctionError("timer:within inside an operand of 'or' is supported "
                                   "around a whole operand that is no sequence, when no "
                                   "operand holds a not, a timer, every or until (P where "
                                   "timer:within(Δ) or Q, P and Q events, [n] of one, 'and' "
                                   "of those)", p.loc)
        what = {ast.Not: "'not'", ast.Every: "every",
                ast.Until: "until", ast.Interval: "timer:interval", ast.And: "a nested 'and'"}
        raise ConjunctionError(f"{what.get(type(p), type(p).__name__)} inside an operand of "
                               f"{self.word} is not supported (operands of single events, "
                               "sequences, alternatives and [n] repetitions are)", p.loc)

    def seq(self, items: list[ast.Pattern]) -> tuple[set[int], set[int], bool]:
        first: set[int] = set()
        last: set[int] = set()
        nullable = True
        for it in items:
            f, la, n = self.build(it)
            for q in last:
                self.follow[q] |= f
            if nullable:
                first |= f
            last = la | (last if n else set())
            nullable = nullable and n
        return first, last, nullable


@dataclass(frozen=True)
class ProductStep:
    """One step of the product: the operands ``moved`` (indices) take the event with the atoms
    ``atoms`` (one per moved operand), reaching ``target`` (per operand its last position, or -1
    when it has not begun). Its ``state`` is the product position's identity."""

    moved: frozenset[int]
    atoms: tuple[ast.Atom, ...]
    target: tuple[int, ...]
    #: an ``or``'s step that completes operand ``settles``: the match keeps its events only
    settles: int | None = None
    #: the step moves an ``every x = X`` operand (alone: see :func:`product`): Esper's every
    #: keeps that operand waiting, so the step forks (``Position.every``)
    every: bool = False
    #: the guarded operands (:attr:`Product.guards`) whose guard this step is inside: those
    #: not done after it and those it completes (their guard is left after the step)
    guarded: frozenset[int] = frozenset()
    #: of ``guarded``, the operands this step completes
    completes: frozenset[int] = frozenset()
    #: an ``or``'s step that completes several operands at once (``settles`` the lowest):
    #: which of them reports first depends on when each one's filter started
    #: (Position.ties, matcher._or_step)
    ties: tuple[int, ...] = ()
    #: every operand the step moves had not begun before it (its position is one its
    #: operand can only begin at): their filters started with the and
    fresh: bool = False

    @property
    def state(self) -> tuple[frozenset[int], tuple[int, ...]]:
        return self.moved, self.target


@dataclass
class Product:
    """The product of an ``and``'s or an ``or``'s operands: its steps, which start it, which
    end it (every operand done / one operand done) and which may follow which; per operand, the
    variables its atoms bind (an ``or`` drops the others' at the end)."""

    steps: list[ProductStep]
    first: list[int]
    last: list[int]
    follow: dict[int, list[int]]
    variables: list[frozenset[str]]
    #: an ``and``'s operands ``P where timer:within(Δ)``: operand index -> the guard (Esper's
    #: EvalGuardStateNode starts with the and; when it ends before its operand is true, the
    #: operand quits and with it the and — EvalAndStateNode.evaluateFalse). The automaton
    #: builder makes each a timed zone begun by the event the and starts at
    guards: dict[int, ast.Window] = field(default_factory=dict)


def product(p: ast.And | ast.Or) -> Product:
    """The product automaton of ``p``'s operands (chains are flattened: Esper's ``and`` and
    ``or`` are n-ary)."""
    conj = isinstance(p, ast.And)
    word = "'and'" if conj else "'or'"
    operands = and_items(p) if conj else or_items(p)
    repeats = _repeating(operands, word)
    guards = {i: op for i, op in enumerate(operands) if conj and is_guard(op)}
    parts = []
    for i, op in enumerate(operands):
        g = _Glushkov(word)
        unwrap = isinstance(op, ast.Every) or i in guards
        first, last, nullable = g.build(op.pattern if unwrap else op)  # type: ignore[union-attr]
        if nullable:
            raise ConjunctionError(f"an operand of {word} that can match nothing",
                                   op.loc or p.loc)
        parts.append((g, first, last))
    n = len(parts)
    index: dict[tuple, int] = {}
    steps: list[ProductStep] = []
    follow: dict[int, list[int]] = {}

    def nexts(state: tuple[int, ...]) -> list[int]:
        """Indices of the steps from ``state``, creating them."""
        out = []
        moves: list[dict[str, list[tuple[int, int]]]] = []  # per operand: type -> (op, pos)
        for i, (g, first, last) in enumerate(parts):
            at = state[i]
            if at in last and conj:  # (an or ends when one operand is done)
                moves.append({})
                continue
            cand = first if at < 0 else g.follow[at]
            by_type: dict[str, list[tuple[int, int]]] = {}
            for q in sorted(cand):
                by_type.setdefault(g.atoms[q].name, []).append((i, q))
            moves.append(by_type)
        types = sorted({t for m in moves for t in m})
        for t in types:
            options = [m.get(t, []) for m in moves]
            # every non-empty choice of operands, each with one of its candidate positions
            combos: list[list[tuple[int, int]]] = [[]]
            for opts in options:
                combos = combos + [[*c, o] for c in combos for o in opts]
            for combo in combos:
                if not combo:
                    continue
                target = list(state)
                for i, q in combo:
                    target[i] = q
                completed = () if conj else tuple(i for i, q in sorted(combo)
                                                  if q in parts[i][2])
                settles = completed[0] if completed else None
                moved = frozenset(i for i, _ in combo)
                ends = frozenset(i for i in guards if target[i] in parts[i][2])
                step = ProductStep(moved, tuple(parts[i][0].atoms[q] for i, q in combo),
                                   tuple(target), settles, any(i in repeats for i, _ in combo),
                                   frozenset(i for i in guards if i not in ends or i in moved),
                                   ends & moved, completed if len(completed) > 1 else (),
                                   all(q in parts[i][1] and not any(
                                       q in f for f in parts[i][0].follow.values())
                                       for i, q in combo))
                k = index.get(step.state)
                if k is None:
                    if len(steps) >= MAX_STEPS:
                        raise ConjunctionError(f"this {word} has more than {MAX_STEPS} steps "
                                               "(the product of its operands); split it into "
                                               "complex events", p.loc)
                    k = index[step.state] = len(steps)
                    steps.append(step)
                out.append(k)
        return out

    start = nexts(tuple([-1] * n))
    todo = list(start)
    seen = set(start)
    while todo:
        k = todo.pop()
        follow[k] = [] if steps[k].settles is not None else nexts(steps[k].target)
        for j in follow[k]:
            if j not in seen:
                seen.add(j)
                todo.append(j)
    if conj:
        done = [k for k, s in enumerate(steps)
                if all(s.target[i] in parts[i][2] for i in range(n))]
    else:
        done = [k for k, s in enumerate(steps) if s.settles is not None]
    variables = [frozenset(v for a in g.atoms for v in a.args or () if not ast.is_wildcard(v))
                 for g, _, _ in parts]
    return Product(steps, start, done, follow, variables, guards)


def is_guard(p: ast.Pattern) -> bool:
    """EPL's ``P where timer:within(Δ)`` (``Window.guard``), Δ > 0, ``P`` no sequence: a
    guard an ``and`` operand may carry. Around a sequence it is not taken: the EPL reader
    writes ``A -> (B where timer:within(Δ))`` as ``(A -> B)[Δ]``
    (compiler.esper.guard_windows), from ``A`` on, and ``(A -> B) where timer:within(Δ)``
    as an operand, from the operand's start, would read the same. A window of the cepflow
    syntax spans its own events and is no such guard."""
    return (isinstance(p, ast.Window) and p.guard and p.kind == "within" and p.duration > 0
            and not isinstance(p.pattern, ast.Fol))


def _repeating(operands: list[ast.Pattern], word: str) -> frozenset[int]:
    """The operands ``every x = X`` (one tagged event, Esper's EvalEveryStateNode over a
    filter: it reports each ``X`` and never quits). Such an operand's type may be no other
    operand's: then no event moves it together with another operand (a step that did would
    have to fork the every and move the other at once), and which of them Esper's filter
    callbacks serve first does not matter."""
    out = set()
    for i, op in enumerate(operands):
        if not isinstance(op, ast.Every):
            continue
        inner = op.pattern
        if not isinstance(inner, ast.Atom) or op.distinct or op.expiry is not None:
            raise ConjunctionError(f"every inside an operand of {word} is supported on one "
                                   "event (every x = X)", op.loc)
        others = {a.name for j, o in enumerate(operands) if j != i for a in atoms(o)}
        if inner.name in others:
            raise ConjunctionError(f"every {inner.name} inside {word} with another operand "
                                   f"of type {inner.name} is not supported (one event would "
                                   "serve both: give the operands different types)", op.loc)
        out.add(i)
    return frozenset(out)
