"""Compilation of one complex event pattern into its automaton (000 §5, Fig. 7).

Glushkov construction over the normalised pattern: every atom occurrence becomes a position;
``fol`` links the last positions of its left operand to the first positions of its right one,
``or`` unites alternatives, ``mult`` copies (``{n}``) or loops (``{*}``, ``{+}``) its operand,
``win`` opens a timed zone whose entering and leaving edges record and compare timestamps, and a
NOT between two operands becomes negative transitions from the resting states of the gap to the
trap, or to a restricted copy of the state when the operand before the NOT may go on (an
iteration: ``_Builder._restrict``). A trailing NOT inside a window completes the pattern when
the window's deadline passes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cepflow.automaton.automaton import (
    FINAL,
    INITIAL,
    SIDE_ANCHOR,
    SIDE_DONE,
    TRAP,
    Automaton,
    Collect,
    Edge,
    Forbid,
    Position,
    StartClock,
    Zone,
)
from cepflow.automaton.context import Context
from cepflow.compiler.conjunction import ConjunctionError, ProductStep, product
from cepflow.compiler.esper import CLOCK, TIMER, EsperPlan, current
from cepflow.compiler.evaluator import ExpressionError, compile_expr
from cepflow.compiler.normalize import (
    NormalizationError,
    and_items,
    each_items,
    fol_items,
    forbidden_atoms,
    normalize,
    or_items,
)
from cepflow.events.event import EventType
from cepflow.language import ast
from cepflow.language.tags import indexed
from cepflow.language.walk import atoms, dotted, sure_variables, unused_variables
from cepflow.language.walk import names as expr_names


class CompileError(Exception):
    """A pattern that cannot be compiled, with its location (line, column)."""

    def __init__(self, message: str, loc: ast.Loc = None, pattern: str | None = None) -> None:
        super().__init__(message)
        self.loc = loc
        self.pattern = pattern

    def __str__(self) -> str:
        where = f"{self.loc[0]}:{self.loc[1]}: " if self.loc else ""
        who = f"in {self.pattern}: " if self.pattern else ""
        return f"{where}{who}{self.args[0]}"


def _ends_in_timed_and(w: ast.Window) -> bool:
    """Is ``w`` the window of Esper's ``A -> (B and timer:interval(Δ))`` itself
    (compiler.esper ``and_interval``), whose B after the deadline is built outside it?"""
    last = fol_items(w.pattern)[-1]
    return isinstance(last, ast.And) and any(isinstance(o, ast.Interval)
                                             for o in and_items(last))


@dataclass
class _Frag:
    first: set[int]
    last: set[int]
    nullable: bool
    created: set[int]
    zones: set[int]
    #: resting position -> forbidden positions, for a NOT that ends this fragment.
    tail: dict[int, list[Position]] = field(default_factory=dict)
    #: positions that complete when a window deadline passes (trailing NOT in a window).
    timer: set[int] = field(default_factory=set)
    #: Esper's ``A -> (B and timer:interval(Δ))``: of ``timer``, the positions after B (they
    #: complete at the deadline), and B, which A's position waits for after the deadline
    #: (built after the window: :meth:`_Builder.resume`)
    done: set[int] = field(default_factory=set)
    resume: ast.Pattern | None = None


def _union(frags: list[_Frag]) -> _Frag:
    """The alternatives ``frags`` side by side: an or's fragment."""
    return _Frag(set().union(*(f.first for f in frags)), set().union(*(f.last for f in frags)),
                 any(f.nullable for f in frags), set().union(*(f.created for f in frags)),
                 set().union(*(f.zones for f in frags)),
                 {k: v for f in frags for k, v in f.tail.items()},
                 set().union(*(f.timer for f in frags)))


class _Builder:
    def __init__(
        self,
        decl: ast.ComplexEventDecl,
        schemas: Mapping[str, EventType],
        functions: Mapping[str, Callable[..., Any]] | None,
        extra: tuple[ast.Expr, ...] = (),
    ) -> None:
        self.decl = decl
        self.schemas = schemas
        self.functions = functions
        self.extra = extra  # other expressions over the bindings (every-distinct keys)
        self.positions: list[Position] = []
        self.negatives: list[Position] = []
        #: negative position -> the positions of the operand before its NOT (what a thread
        #: that observed the forbidden event may still continue: Forbid.target)
        self.neg_keeps: dict[int, frozenset[int]] = {}
        self.n_ids = 0  # position and restricted-copy ids (state ids), 1, 2, …
        self.n_alts = 0  # Esper's ors of single events (Position.alt)
        self.n_sides = 0  # Esper's ors run as alternatives (Position.side)
        self.raw: list[tuple[int, int, frozenset[int]]] = []
        self.forbid: dict[int, list[Position]] = defaultdict(list)
        self.zones: list[Zone] = []
        self.zone_stack: list[int] = []
        #: the zone of an ast.Window.after being built: the sequence under it enters the
        #: zone after its first item (:meth:`enter_after`)
        self.lead_zone: int | None = None
        #: the variables the enclosing sequences bound before the operand being built (a NOT
        #: inside a window in the middle, ``A -> (NOT C(a.k) -> B)[Δ]``, may read them)
        self.bound_before: frozenset[str] = frozenset()
        self.variables = self._variables(decl.body)
        #: Esper's and is a product of its operands (compiler.conjunction), VEPL's 000's sugar
        self.esper = decl.context == Context.ESPER
        self.n_conj = 0
        #: start policy "group" (``every (G) -> R``): the head's every marks G, whose
        #: fragment is kept to tell its positions from the rest's (Automaton.group)
        self.group_head = False
        self.group: _Frag | None = None
        #: positions where Esper's ``A -> (X or not Y)`` reports at once (Automaton.reports)
        self.reports: set[int] = set()
        #: Esper's ``every`` on a group of events inside a pattern that the builder takes: the
        #: items of the pattern's top followed-by after its first (:meth:`build_loop`)
        self.loop_items: set[int] = set()
        self.n_loops = 0
        #: the position of the one event the item being built follows (build_seq), where
        #: the guards of an and's operands begin (build_product)
        self.anchor: Position | None = None

    # -- helpers -------------------------------------------------------------------------
    def err(self, msg: str, loc: ast.Loc) -> CompileError:
        return CompileError(msg, loc or self.decl.loc, self.decl.name)

    def _variables(self, p: ast.Pattern) -> frozenset[str]:
        out = {a for atom in atoms(p) for a in (atom.args or ()) if not ast.is_wildcard(a)}
        # repeated tags (compiler.esper): their current-event and indexed variables
        fields = {atom.alias: self.schemas[atom.name].param_names for atom in atoms(p)
                  if atom.alias is not None and atom.name in self.schemas}
        for tag, names in fields.items():
            out.update(current(tag, f) for f in names)
        exprs = [a.where for a in atoms(p) if a.where is not None]
        exprs += [e for _, e in self.decl.select or ()]
        exprs += list(self.extra)
        for e in exprs:
            for n in expr_names(e):
                ix = indexed(n.name)
                if ix is not None and ix[0] in fields and n.path and n.path[0] in fields[ix[0]]:
                    out.add(".".join((n.name, *n.path)))
        return frozenset(out | {p.name for p in self.decl.params})

    def atom_position(self, atom: ast.Atom, negative: bool = False) -> Position:
        binds, flt, src, label, local = self._atom_parts(atom, negative)
        if atom.name == TIMER:  # (what traces and analyses name the state after it)
            label = "timer:interval"
        pid = self.next_id()
        pos = Position(pid, atom.name, tuple(binds), flt, src, label, atom.loc,
                       tuple(self.zone_stack), where=atom.where, local=local,
                       collect=self._collect(atom),
                       fields=tuple(self.schemas[atom.name].param_names),
                       until=0 if negative else atom.until,
                       until_end=not negative and atom.until_end,
                       group=() if negative else atom.group)
        (self.negatives if negative else self.positions).append(pos)
        return pos

    def _collect(self, atom: ast.Atom) -> Collect | None:
        """A repeated tag's event is collected (compiler.esper); None for other atoms."""
        if atom.alias is None:
            return None
        names = self.schemas[atom.name].param_names
        return Collect(atom.alias, names, tuple(current(atom.alias, f) for f in names),
                       f"_{atom.alias}[]")

    def step_position(self, step: ProductStep, conj: int, track: str | None = None,
                      settle: tuple[int, frozenset[str]] | None = None,
                      zones: tuple[int, ...] = ()) -> Position:
        """A step of Esper's ``and``: its atoms (one type) merged into one position, inside
        the enclosing windows and ``zones`` (its operands' guards, see build_product)."""
        collects = [a for a in step.atoms if a.alias is not None]
        if len(collects) > 1:
            raise self.err(f"one event for the repeated tags '{collects[0].alias}' and "
                           f"'{collects[1].alias}' of two operands of 'and' is not supported "
                           "(give the operands different event types)", collects[1].loc)
        binds: list[tuple[int, str]] = []
        filters, srcs, labels, wheres = [], [], [], []
        local = True
        for atom in step.atoms:
            b, flt, src, label, loc_only = self._atom_parts(atom, False)
            binds.extend(x for x in b if x not in binds)
            if flt is not None:
                filters.append(flt)
                srcs.append(src)
                wheres.append(atom.where)
                local = local and loc_only
            labels.append(label)
        flt = None
        if len(filters) == 1:
            flt = filters[0]
        elif filters:
            def flt(e: Any, b: dict[str, Any], fs: tuple = tuple(filters)) -> bool:
                return all(f(e, b) for f in fs)
        where = None
        for w in wheres:
            where = w if where is None else ast.Binary("and", where, w, w.loc)
        first = step.atoms[0]
        pos = Position(self.next_id(), first.name, tuple(binds), flt,
                       " and ".join(f"({s})" for s in srcs) if srcs else None,
                       " ∧ ".join(labels), first.loc, (*self.zone_stack, *zones), where=where,
                       local=bool(filters) and local, conj=(conj, step.moved), track=track,
                       settle=settle, fresh=step.fresh,
                       fields=tuple(self.schemas[first.name].param_names),
                       every=step.every, collect=self._collect(collects[0]) if collects else None)
        self.positions.append(pos)
        return pos

    def _atom_parts(self, atom: ast.Atom, negative: bool
                    ) -> tuple[list[tuple[int, str]], Any, str | None, str, bool]:
        """An atom's bindings (Algorithm 1), compiled filter, its source, label and whether
        the filter reads only the event's own fields."""
        schema = self.schemas.get(atom.name)
        if schema is None:
            raise self.err(f"unknown event pattern '{atom.name}'", atom.loc)
        binds: list[tuple[int, str]] = []
        if atom.args is not None:
            if len(atom.args) != len(schema.params):
                raise self.err(
                    f"'{atom.name}' takes {len(schema.params)} parameter(s), "
                    f"{len(atom.args)} given",
                    atom.loc,
                )
            binds = [(i, a) for i, a in enumerate(atom.args) if not ast.is_wildcard(a)]
        flt = None
        src = None
        if atom.where is not None:
            fields = {name: i for i, name in enumerate(schema.param_names)}
            try:
                flt = compile_expr(atom.where, fields, self.functions, self.variables,
                                   origin=f"pattern {self.decl.name}")
            except ExpressionError as e:
                raise self.err(str(e), e.loc or atom.loc) from None
            from cepflow.language.printer import format_expr

            src = format_expr(atom.where)
        args = "" if atom.args is None else "(" + ", ".join(a or "_" for a in atom.args) + ")"
        label = f"{'¬' if negative else ''}{atom.name}{args}" + (f" where {src}" if src else "")
        local = atom.where is not None and _event_only(atom.where, schema)
        return binds, flt, src, label, local

    def next_id(self) -> int:
        """A fresh state id (positions and restricted copies share one numbering)."""
        self.n_ids += 1
        return self.n_ids

    def expr(self, e: ast.Expr, loc: ast.Loc) -> Any:
        """A condition over the match's bindings only (select list, distinct keys)."""
        try:
            return compile_expr(e, {}, self.functions, self.variables | {"@ts"},
                                origin=f"pattern {self.decl.name}")
        except ExpressionError as err:
            raise self.err(str(err), err.loc or loc) from None

    # -- construction --------------------------------------------------------------------
    def build(self, p: ast.Pattern) -> _Frag:
        if isinstance(p, ast.Atom):
            pos = self.atom_position(p)
            return _Frag({pos.id}, {pos.id}, False, {pos.id}, set())
        if isinstance(p, ast.Fol):
            return self.build_seq(fol_items(p), p.loc)
        if isinstance(p, ast.Or) and p.each:  # every X or every Y (Position.each)
            frags = [self.build(x) for x in each_items(p)]
            for k, f in enumerate(frags, 1):
                for pos in self.positions:
                    if pos.id in f.first:
                        pos.each = k
            return _union(frags)
        if isinstance(p, ast.Or) and p.side:  # Esper's or run as alternatives (Position.side)
            self.n_sides += 1
            frags = []
            for k, branch in enumerate(or_items(p)):
                n0 = len(self.positions)
                f = self.build(branch)
                frags.append(f)
                for pos in self.positions[n0:]:
                    role = (SIDE_ANCHOR if pos is self.positions[n0] else 0) | (
                        SIDE_DONE if pos.id in f.last else 0)
                    pos.side = (self.n_sides, k, role)
            return _union(frags)
        if isinstance(p, ast.Or):
            if self.esper and not p.choice and not all(_single_event(x)
                                                       for x in or_items(p)):
                # Esper's or of operands longer than one event: side by side (conjunction)
                return self.build_product(p)
            a, b = self.build(p.left), self.build(p.right)
            if self.esper and not p.choice:  # (Position.alt; an or around it overwrites)
                self.n_alts += 1
                for pos in self.positions:
                    if pos.id in a.first | b.first:
                        pos.alt = self.n_alts
            return _Frag(a.first | b.first, a.last | b.last, a.nullable or b.nullable,
                         a.created | b.created, a.zones | b.zones, {**a.tail, **b.tail},
                         a.timer | b.timer)
        if isinstance(p, ast.Mult):
            return self.build_mult(p)
        if isinstance(p, ast.Window):
            return self.build_window(p)
        if isinstance(p, ast.Not):
            raise self.err(
                "NOT needs a preceding event in a '->' sequence (e.g. A -> NOT B -> C, or "
                "(A -> NOT B)[10 s]); to forbid a whole sequence, declare it as a complex "
                "event and negate that", p.loc)
        if isinstance(p, ast.And):
            if self.esper:  # Esper's and: both operands at once, one event may serve both
                anchor, self.anchor = self.anchor, None
                return self.build_product(p, anchor)
            # normalize() expands 000's and; kept for direct callers
            return self.build(ast.Or(ast.Fol(p.left, p.right), ast.Fol(p.right, p.left)))
        if isinstance(p, ast.Every) and self.group_head and self.group is None:
            # every (G) -> R (compiler.esper): G's own positions, and those that complete it
            f = self.build(p.pattern)
            self.group = f
            return f
        if isinstance(p, ast.Every) and id(p) in self.loop_items:
            return self.build_loop(p)
        if isinstance(p, ast.Every):  # Esper's every on one event inside a pattern (esper.py)
            if not all(isinstance(x, ast.Atom) for x in or_items(p.pattern)):
                raise self.err(_LOOP_PLACES, p.loc)
            f = self.build(p.pattern)
            for pos in self.positions:
                if pos.id in f.first:
                    pos.every = True
            return f
        if isinstance(p, ast.Interval):
            raise self.err("timer:interval is supported at the end of a pattern, after an "
                           "event (A -> timer:interval(10 sec))", p.loc)
        if isinstance(p, ast.Until):
            raise self.err("until is an Esper operator: use it in an Esper-style pattern "
                           "(context esper, every or tags)", p.loc)
        raise self.err(f"unsupported pattern node {type(p).__name__}", None)

    def build_loop(self, p: ast.Every) -> _Frag:
        """``A -> every (B -> C …)``: Esper's every around a followed-by of events (or
        alternatives of events) inside a pattern (EvalEveryStateNode): one instance of the
        group at a time per partial match, restarted from the bindings it began with each
        time it completes, each completion
        going on as a partial match of its own. The group's first positions are marked
        ``loop_in``, its last ``loop_out`` (Position.loop_in; Matcher._try_edges); where the
        runs come from is checked in :meth:`_loops`."""
        items = fol_items(p.pattern)
        if p.distinct or p.expiry is not None or len(items) < 2 or not all(
                isinstance(x, ast.Atom) and x.alias is None and not x.until and not x.group
                and x.name not in (TIMER, CLOCK) for i in items for x in or_items(i)):
            raise self.err(_LOOP_PLACES, p.loc)
        n0 = len(self.positions)
        f = self.build(p.pattern)
        self.n_loops += 1
        for pos in self.positions[n0:]:
            if pos.id in f.first:
                pos.loop_in = self.n_loops
            if pos.id in f.last:
                pos.loop_out = self.n_loops
        return f

    def _loops(self, edges: dict[int, dict[str, list[Edge]]]) -> None:
        """The runs that enter an inner every's group (:meth:`build_loop`) go back to the
        state they entered it from: every edge of such a state must enter that group, no
        ``not`` may watch it, and it is not the pattern's start."""
        for src, m in edges.items():
            ids = {e.position.loop_in for es in m.values() for e in es}
            if ids == {0}:
                continue
            if len(ids) > 1 or src == INITIAL or self.forbid.get(src) or any(
                    e.enters or e.exits for es in m.values() for e in es):
                raise self.err(_LOOP_PLACES, self.decl.loc)

    def build_product(self, p: ast.And | ast.Or, anchor: Position | None = None) -> _Frag:
        """Esper's ``and`` / ``or`` as the product of its operands (compiler.conjunction).
        An ``and``'s guarded operands (``P where timer:within(Δ)``, Product.guards) need the
        position ``anchor`` of the one event the and starts at (build_seq): each guard is a
        timed zone that ``anchor`` enters, so it runs from the and's start; a step is inside
        it while its operand is not done and when it completes it (ProductStep.guarded), so
        the zone is left — its span checked — after the operand's last event, and its
        deadline ends the partial matches whose operand is not done (the whole and, as
        Esper's EvalAndStateNode.evaluateFalse)."""
        try:
            prod = product(p)
        except ConjunctionError as e:
            raise self.err(str(e), e.loc or p.loc) from None
        zone_of: dict[int, Zone] = {}
        if prod.guards:
            if anchor is None:
                raise self.err(_GUARD_ANCHOR, p.loc)
            for i, w in sorted(prod.guards.items()):
                zone = zone_of[i] = Zone(len(self.zones), float(w.duration), w.kind,
                                         loc=w.loc)
                self.zones.append(zone)
            anchor.zones = (*anchor.zones, *(z.id for z in zone_of.values()))
        self.n_conj += 1
        cid = self.n_conj
        track = None if isinstance(p, ast.And) else f"_or{cid}"
        # variables an operand of an or binds that no atom outside it binds: dropped when
        # another operand completes the or (Esper: its tags are null)
        inside = [a for a in atoms(p)]
        outside = {v for a in atoms(self.decl.body) if not any(a is b for b in inside)
                   for v in a.args or ()} if track else set()
        ids = []

        def settling(i: int) -> tuple[int, frozenset[str]]:
            others = set().union(*(vs for j, vs in enumerate(prod.variables) if j != i))
            return i, frozenset(others - prod.variables[i] - outside)

        for s in prod.steps:
            settle = None if s.settles is None else settling(s.settles)
            zones = tuple(zone_of[i].id for i in sorted(s.guarded))
            pos = self.step_position(s, cid, track, settle, zones)
            pos.ties = tuple(settling(i) for i in s.ties)
            ids.append(pos.id)
            for i in s.completes:  # (the zone is left after the step's event)
                zone_of[i].last |= {ids[-1]}
        for k, nxt in prod.follow.items():
            for j in nxt:
                self.raw.append((ids[k], ids[j], frozenset()))
        return _Frag({ids[k] for k in prod.first}, {ids[k] for k in prod.last}, False,
                     set(ids), {z.id for z in zone_of.values()})

    def link(self, a: _Frag, b: _Frag, reenter: frozenset[int] = frozenset()) -> None:
        self.link_states(a.last, b, reenter)

    def link_states(self, states: set[int], b: _Frag,
                    reenter: frozenset[int] = frozenset()) -> None:
        """Edges from each of ``states`` into ``b``'s first positions."""
        for p in states:
            for q in b.first:
                self.raw.append((p, q, reenter))

    def beside_interval(self, cur: _Frag, it: ast.And | ast.Or,
                        pending: list[Position]) -> tuple[_Frag, ast.Pattern]:
        """The events beside the ``timer:interval`` of Esper's ``A -> (B and / or
        timer:interval(Δ))`` at the end of a sequence (compiler.esper ``and_interval``,
        ``or_interval``), built after ``cur`` (A) and linked from it; with the pattern built."""
        word = "and" if isinstance(it, ast.And) else "or"
        if cur.nullable or cur.timer or pending or cur.tail:
            raise self.err(f"timer:interval inside '{word}' after an optional operand, a "
                           "timer or a NOT", it.loc)
        ops = and_items(it) if isinstance(it, ast.And) else or_items(it)
        events = [o for o in ops if not isinstance(o, ast.Interval)]
        alt = events[0]
        for o in events[1:]:
            alt = ast.Or(alt, o, it.loc)
        f = self.build(alt)
        self.link(cur, f)
        return f, alt

    def build_seq(self, items: list[ast.Pattern], loc: ast.Loc) -> _Frag:
        lead, self.lead_zone = self.lead_zone, None  # (build_window, ast.Window.after)
        cur: _Frag | None = None
        pending: list[Position] = []
        bound: set[str] = set(self.bound_before)
        wait = False  # a trailing timer:interval: the window's deadline completes the pattern
        for n, it in enumerate(items):
            if isinstance(it, ast.Interval) and cur is not None and n == len(items) - 1:
                if cur.nullable or cur.timer:
                    raise self.err("timer:interval after an optional operand or a timer",
                                   it.loc)
                wait = True
                continue
            if (isinstance(it, ast.And | ast.Or) and cur is not None and n == len(items) - 1
                    and any(isinstance(o, ast.Interval)
                            for o in (and_items(it) if isinstance(it, ast.And)
                                      else or_items(it)))):
                # Esper's A -> (B or / and timer:interval(Δ)): A's state waits for the
                # window's deadline and steps on B as well. Or: the deadline completes A's
                # state, B completes at once. And: B waits for the deadline to complete, A's
                # state steps on at the deadline to wait for B (resume)
                f, event = self.beside_interval(cur, it, pending)
                waits = {p: [] for p in cur.last}
                if isinstance(it, ast.Or):
                    return _Frag(cur.first, f.last, False, cur.created | f.created,
                                 cur.zones | f.zones, waits, set(cur.timer))
                return _Frag(cur.first, set(), False, cur.created | f.created,
                             cur.zones | f.zones, {**waits, **{p: [] for p in f.last}},
                             set(cur.timer), set(f.last), event)
            if (isinstance(it, ast.Or) and self.esper and n == len(items) - 1
                    and any(isinstance(o, ast.Not) for o in or_items(it))):
                cur = self.report_or_wait(cur, it, pending)
                continue
            if isinstance(it, ast.Not):
                atoms = forbidden_atoms(it.pattern)
                if atoms is None:
                    raise self.err(
                        "NOT over a sequence or window is not supported; declare the negated "
                        "pattern as a complex event and write NOT <that event>", it.loc)
                for a in atoms:
                    late = [v for v in (a.args or ()) if not ast.is_wildcard(v)
                            and v not in bound]
                    if late:
                        raise self.err(
                            f"NOT {a.name}: variable '{late[0]}' is not bound before the NOT "
                            "(checking it later would mean remembering every event of the "
                            "gap); bind it in an earlier operand or write _", a.loc or it.loc)
                if cur is None:
                    raise self.err(
                        "NOT cannot start a sequence: the absence needs a preceding event "
                        "(A -> NOT B -> C)", it.loc)
                if cur.nullable:
                    raise self.err("NOT after an optional ({*}) operand is ambiguous", it.loc)
                if cur.timer:
                    raise self.err("a window ending in NOT must end the pattern", it.loc)
                for a in atoms:
                    neg = self.atom_position(a, negative=True)
                    self.neg_keeps[neg.id] = frozenset(cur.created)
                    pending.append(neg)
                continue
            outer, self.bound_before = self.bound_before, frozenset(bound)
            if isinstance(it, ast.And):  # the one event it starts at (its operands' guards)
                self.anchor = _anchor(cur, pending, items[n - 1] if n else None,
                                      self.positions)
            try:
                f = self.build(it)
            finally:
                self.bound_before = outer
                self.anchor = None
            if lead is not None and n == 0:
                self.enter_after(f, lead)
            bound |= sure_variables(it)
            if cur is None:
                cur = f
                continue
            if cur.timer and not pending and f.first and f.first <= {
                    p.id for p in self.positions if p.type == TIMER}:
                # Esper's A -> timer:interval(Δ) -> …: where the window's deadline completed
                # the pattern, its end feeds the synthetic TIMER event the rest follows
                self.link_states(cur.timer, f)
                cur = _Frag(cur.first, f.last, False, cur.created | f.created,
                            cur.zones | f.zones, dict(f.tail), set(f.timer), set(f.done),
                            f.resume)  # (the rest ending in B and timer:interval: resume)
                continue
            if cur.timer:
                raise self.err("a window ending in NOT must end the pattern", it.loc)
            gap = {p: [*cur.tail.get(p, []), *pending] for p in cur.last | set(cur.tail)}
            for p, negs in gap.items():
                self.forbid[p].extend(negs)
            self.link_states(cur.last | set(cur.tail), f)
            cur = _Frag(
                cur.first | (f.first if cur.nullable else set()),
                f.last | (cur.last if f.nullable else set()),
                cur.nullable and f.nullable,
                cur.created | f.created,
                cur.zones | f.zones,
                dict(f.tail),
                set(f.timer),
                set(f.done),  # (a window ending in B and timer:interval(Δ): resume below)
                f.resume,
            )
            pending = []
        if cur is None:
            raise self.err("empty sequence", loc)
        if cur.resume is not None:
            cur = self.resume(cur)
        if pending or wait:
            tail = {p: list(pending) for p in cur.last}
            for p, negs in cur.tail.items():
                tail.setdefault(p, []).extend(negs)
            cur = _Frag(cur.first, set(), False, cur.created, cur.zones, tail, cur.timer)
        return cur

    def report_or_wait(self, cur: _Frag | None, it: ast.Or,
                       pending: list[Position]) -> _Frag:
        """Esper's ``A -> (X or not Y)`` at the end of a sequence (compiler.esper): the or is
        true as it starts (EvalNotStateNode) and goes on, so A's last positions report a match
        when a run reaches them (:attr:`reports`, X's tags null) and the run waits for X,
        which reports again and ends it. ``Y`` decides only when the or turns false, which X
        (one event) never lets happen: it is not built."""
        if cur is None or cur.nullable or cur.timer or cur.tail or pending or cur.resume:
            raise self.err("'X or not Y' is supported after an event (A -> (X or not Y))",
                           it.loc)
        events = [o for o in or_items(it) if not isinstance(o, ast.Not)]
        alt = events[0]
        for o in events[1:]:
            alt = ast.Or(alt, o, it.loc)
        f = self.build(alt)
        self.link(cur, f)
        self.reports |= cur.last
        return _Frag(cur.first, f.last, False, cur.created | f.created, cur.zones | f.zones)

    def build_mult(self, p: ast.Mult) -> _Frag:
        if isinstance(p.count, int):
            return self.build_seq([p.pattern] * p.count, p.loc)
        f = self.build(p.pattern)
        if f.tail or f.timer:
            raise self.err("a repeated pattern cannot end in NOT", p.loc)
        self.link(f, f, frozenset(f.zones))
        return _Frag(f.first, f.last, True if p.count == "*" else f.nullable, f.created, f.zones)

    def build_window(self, p: ast.Window) -> _Frag:
        zid = len(self.zones)
        zone = Zone(zid, float(p.duration), p.kind, loc=p.loc, after=p.after, whole=p.whole)
        self.zones.append(zone)
        if p.after:  # (Esper's guard after a step X: the zone from X's end, enter_after)
            if not isinstance(p.pattern, ast.Fol) or p.slide or p.most is not None:
                raise self.err("a guard begun where a step completed needs that step and "
                               "the guarded pattern after it (X -> (P where "
                               "timer:within(Δ)))", p.loc)
            self.lead_zone = zid
        else:
            self.zone_stack.append(zid)
        first_raw = len(self.raw)
        try:
            f = self.build(p.pattern)
            if f.resume is not None and not _ends_in_timed_and(p):
                # a guard around A -> (B and timer:interval(Δ)): the B after the deadline is
                # inside it too (Esper's guard quits the and when it ends first)
                f = self.resume(f)
        finally:
            self.lead_zone = None
            if self.zone_stack and self.zone_stack[-1] == zid:
                self.zone_stack.pop()
        if f.nullable:
            raise self.err("a time window over a pattern that can be empty", p.loc)
        if p.slide:  # (ast.Window.slide: each step inside enters the zone again)
            self.raw[first_raw:] = [(a, b, r | {zid}) if a in f.created and b in f.created
                                    else (a, b, r) for a, b, r in self.raw[first_raw:]]
        if p.most is not None:  # timer:withinmax counting: its operand's completing steps
            for pos in self.positions:
                if pos.id in f.last:
                    pos.most = p.most
        zone.last = frozenset(f.last)
        timer = set(f.timer)
        if f.tail:
            for q, negs in f.tail.items():
                self.forbid[q].extend(negs)
            zone.timer_accept = frozenset(f.tail)
            timer |= set(f.tail)
        return _Frag(f.first, f.last, False, f.created, f.zones | {zid}, {}, timer, f.done,
                     f.resume)

    def enter_after(self, f: _Frag, zid: int) -> None:
        """The first item ``X`` of an ast.Window.after's sequence is built (``f``): the
        positions that complete it join zone ``zid`` — a step into one of them from outside
        enters the zone, so its duration starts at ``X``'s last event, as Esper's guard starts
        when the followed-by activates it (EvalFollowedByStateNode, TimerWithinGuard) — and
        the rest of the sequence is built inside the zone. ``X`` must end at an event (no
        trailing NOT, timer or optional part: the EPL reader takes no such ``X``)."""
        if f.nullable or f.tail or f.timer or f.resume is not None or not f.last:
            raise self.err("a guard after a step that can end without an event is not "
                           "supported", None)
        for pos in self.positions:
            if pos.id in f.last:
                pos.zones = (*pos.zones, zid)
        f.zones.add(zid)
        self.zone_stack.append(zid)

    def resume(self, f: _Frag) -> _Frag:
        """``A -> (B and timer:interval(Δ))`` after its window: at the deadline the states
        that have not taken B step on the synthetic TIMER event (compiler.esper) to wait for
        B, which then completes; those after B complete at the deadline (Zone.timer_accept)."""
        assert f.resume is not None
        t = self.build(ast.Atom(TIMER, (), None, None, f.resume.loc))
        b = self.build(f.resume)
        self.link_states(f.timer - f.done, t)
        self.link(t, b)
        return _Frag(f.first, b.last, False, f.created | t.created | b.created,
                     f.zones | t.zones | b.zones, {}, set(f.done))

    # -- assembly ------------------------------------------------------------------------
    def assemble(self, default_context: str) -> Automaton:
        decl = self.decl
        try:
            body = normalize(decl.body, expand_and=not self.esper)
        except NormalizationError as e:
            raise self.err(str(e), e.loc) from None
        chain = body.pattern if isinstance(body, ast.Window) else body  # (a guard around it)
        if self.esper and isinstance(chain, ast.Fol):
            self.loop_items = {id(x) for x in _chained(chain)[1:]
                               if isinstance(x, ast.Every) and isinstance(x.pattern, ast.Fol)}
        top = self.build(body)
        if top.resume is not None:
            top = self.resume(top)
        if top.tail:
            raise self.err(
                "a pattern ending in NOT never completes without a window; write "
                "(A -> NOT B)[duration]", decl.loc)
        if top.nullable:
            raise self.err("the pattern can match the empty sequence", decl.loc)
        accept_now = top.last
        by_id = {p.id: p for p in self.positions}
        zone_of = {p.id: set(p.zones) for p in self.positions}
        zone_of[INITIAL] = set()
        edges: dict[int, dict[str, list[Edge]]] = defaultdict(lambda: defaultdict(list))
        raw = [(INITIAL, q, frozenset()) for q in sorted(top.first)] + self.raw
        # one edge per source, target and zone steps: nested loops over the same position
        # (((c{+})[1 s]){+}) link it to itself twice, staying in the inner window and leaving
        # and re-entering it; both runs are possible
        seen: set[tuple[int, int, tuple[int, ...], tuple[int, ...]]] = set()
        for src, q, reenter in raw:
            if src in accept_now:
                continue  # a completing position is never a resting state
            final = q in accept_now
            zs, zq = zone_of[src], zone_of[q]
            enters = tuple(sorted((zq - zs) | (reenter & zq)))
            exits = tuple(sorted((zs | zq) if final else ((zs - zq) | (reenter & zs))))
            if (src, q, exits, enters) in seen:
                continue
            seen.add((src, q, exits, enters))
            pos = by_id[q]
            edges[src][pos.type].append(
                Edge(src, FINAL if final else q, pos, exits, enters, final))
        forbids: dict[int, dict[str, list[Forbid]]] = defaultdict(lambda: defaultdict(list))
        for src, negs in self.forbid.items():
            if src in accept_now:
                continue
            for n in negs:
                forbids[src][n.type].append(Forbid(src, n))
        context = Context(decl.context or default_context)
        # Esper's not ends its sub-pattern for good (compiler.esper): no restricted copies
        restricted = self._restrict(edges, forbids) if not context.esper else {}
        for z in self.zones:  # Esper's timers fire before the events of their instant
            z.open_end = context.timers_first
        auto = Automaton(
            name=decl.name,
            params=tuple(p.name for p in decl.params),
            context=context,
            positions=self.positions + self.negatives,
            edges={s: dict(m) for s, m in edges.items()},
            forbids={s: dict(m) for s, m in forbids.items()},
            zones=self.zones,
            partition_by=tuple(decl.partition_by),
            restricted=restricted,
        )
        if self.group is not None:
            auto.group, auto.group_end = self._group(top)
        if self.n_loops:
            self._loops(auto.edges)
        auto.reports = frozenset(self.reports)
        sure = self._sure_bound(auto)
        self._key_index(auto, sure)
        self._partition_index(auto)
        return auto

    def _group(self, top: _Frag) -> tuple[frozenset[int], frozenset[int]]:
        """The states inside the group of ``every (G) -> R`` and those where it completed
        (Automaton.group): a group must complete once — no step from a completing position
        back into it — and what follows must hold an event."""
        g = self.group
        assert g is not None
        end = frozenset(g.last)
        inner = frozenset(g.created) - end
        if end & top.last or g.tail or g.timer:
            raise self.err("the pattern after every (…) must take an event", self.decl.loc)
        if any(src in end and q in g.created for src, q, _ in self.raw):
            raise self.err("a group that can go on after it completed is not supported after "
                           "every (…) -> (its end must be its last event)", self.decl.loc)
        return inner, end

    def _restrict(self, edges: dict[int, dict[str, list[Edge]]],
                  forbids: dict[int, dict[str, list[Forbid]]]) -> dict[int, int]:
        """Point each negative transition at the trap or at a restricted copy of its state.

        A state inside a NOT's gap may also continue the operand before the NOT (``B{+} ->
        NOT A``: the state after a ``B`` loops on ``B``). A forbidden event there ends only the
        gap, not the operand: the thread moves to a copy that keeps the edges into that
        operand's positions (the iteration goes on, and the gap restarts at its next event) and
        drops the others (crossing the gap, completing at a window's deadline). A copy is named
        by the edges it keeps, so NOTs observed in any order lead to the same copy; with no
        edge left the target is the trap, as before. Returns copy -> copied state.
        """
        timers = {s for z in self.zones for s in z.timer_accept}
        copies: dict[int, int] = {}
        for src in sorted(forbids):
            out = [e for es in edges.get(src, {}).values() for e in es]
            full = frozenset(e.target for e in out) | ({_DEADLINE} if src in timers else set())
            ids = {full: src}
            todo = [full]
            while todo:
                allowed = todo.pop()
                at = ids[allowed]
                for t, fs in list(forbids[src].items()):
                    for f in fs:
                        keep = allowed & self.neg_keeps[f.position.id]
                        if keep == allowed:
                            continue  # nothing left for this NOT to end
                        target = ids.get(keep, TRAP) if keep else TRAP
                        if keep and target == TRAP:
                            target = ids[keep] = self.next_id()
                            copies[target] = src
                            todo.append(keep)
                            for e in out:
                                if e.target in keep:
                                    edges[target][e.position.type].append(
                                        Edge(target, e.target, e.position, e.exits, e.enters,
                                             e.final))
                        if at == src:
                            f.target = target
                        else:
                            forbids[at][t].append(Forbid(at, f.position, target))
        for z in self.zones:  # a copy can leave a zone only by an edge it kept
            z.last = z.last | {c for c, s in copies.items() if s in z.last and any(
                z.id in e.exits for es in edges[c].values() for e in es)}
        return copies

    def _sure_bound(self, auto: Automaton) -> dict[int, set[str]]:
        """Variables bound on every path into each resting state (greatest fixpoint); a
        restricted copy has its state's (it is entered from there, binding nothing)."""
        all_vars = {v for p in self.positions for _, v in p.binds}
        orig = auto.restricted
        preds: dict[int, list[tuple[int, Position]]] = defaultdict(list)
        for src, m in auto.edges.items():
            for es in m.values():
                for e in es:
                    if not e.final:
                        preds[e.target].append((orig.get(src, src), e.position))
        sure = {s: set(all_vars) for s in preds}
        sure[INITIAL] = set()
        changed = True
        while changed:
            changed = False
            for s, ps in preds.items():
                new = set.intersection(*[sure.get(src, set()) | {v for _, v in pos.binds}
                                         for src, pos in ps])
                if new != sure[s]:
                    sure[s] = new
                    changed = True
        for c, s in orig.items():
            sure[c] = sure.get(s, set())
        return sure

    def _key_index(self, auto: Automaton, sure: dict[int, set[str]]) -> None:
        for state in set(auto.edges) | set(auto.forbids):
            if state == INITIAL:
                continue
            bound = sure.get(state, set())
            per_type: dict[str, list[Position]] = defaultdict(list)
            for t, es in auto.edges.get(state, {}).items():
                per_type[t].extend(e.position for e in es)
            for t, fs in auto.forbids.get(state, {}).items():
                per_type[t].extend(f.position for f in fs)
            best: dict[str, tuple[int, str]] = {}
            for var in sorted(bound):
                cand: dict[str, tuple[int, str]] = {}
                for t, poss in per_type.items():
                    idx = {i for pos in poss for i, v in pos.binds if v == var}
                    if len(idx) == 1 and all(any(v == var for _, v in pos.binds) for pos in poss):
                        cand[t] = (idx.pop(), var)
                if len(cand) > len(best):
                    best = cand
            if best:
                auto.key_index[state] = best

    def _partition_index(self, auto: Automaton) -> None:
        if not auto.partition_by:
            return
        if len(auto.partition_by) != 1:
            raise self.err("partition by takes one parameter", self.decl.loc)
        var = auto.partition_by[0]
        if var not in self.variables:
            raise self.err(f"partition by '{var}': not a variable of the pattern", self.decl.loc)
        for pos in auto.positions:
            idx = [i for i, v in pos.binds if v == var]
            if not idx:
                raise self.err(
                    f"partition by '{var}': '{pos.type}' does not bind it, so its events "
                    "belong to no partition", pos.loc)
            prev = auto.partition_index.setdefault(pos.type, idx[0])
            if prev != idx[0]:
                raise self.err(
                    f"partition by '{var}': '{pos.type}' binds it at different parameters",
                    pos.loc)


def compile_pattern(
    decl: ast.ComplexEventDecl,
    schemas: Mapping[str, EventType],
    functions: Mapping[str, Callable[..., Any]] | None = None,
    default_context: str = "chronicle",
    plan: EsperPlan | None = None,
) -> Automaton:
    """Compile one complex event declaration; ``schemas`` gives every referable event type.
    ``plan``: the start policy of a declaration lowered by :func:`cepflow.compiler.esper.lower`.
    """
    clock = plan.clock if plan is not None else None
    if clock is not None:  # the synthetic event its clock feeds the pattern
        schemas = {**schemas, CLOCK: EventType(CLOCK, ())}
    if plan is not None:  # (the end of an interval in the middle: compiler.esper)
        schemas = {**schemas, TIMER: EventType(TIMER, ())}
    builder = _Builder(decl, schemas, functions, plan.distinct if plan is not None else ())
    builder.group_head = plan is not None and plan.start == "group"
    auto = builder.assemble(default_context)
    if clock is not None:
        forbids = [] if clock.forbidden is None else [
            builder.atom_position(a, negative=True) for a in or_items(clock.forbidden)
            if isinstance(a, ast.Atom)]
        auto.clock = StartClock(clock.duration, forbids, CLOCK, clock.schedule)
    from cepflow.language.printer import format_pattern

    if plan is None:
        auto.pattern_text = format_pattern(decl.body)
    else:
        auto.pattern_text = plan.text
        auto.start = plan.start
        auto.respawn = plan.respawn
        auto.final = plan.final
        auto.distinct = tuple(builder.expr(d, decl.loc) for d in plan.distinct)
        auto.distinct_expiry = plan.expiry
        tags = {pos.collect.alias: pos.collect for pos in auto.positions
                if pos.collect is not None}
        auto.spread = tuple(tags[a] for a in plan.spread)
    if decl.limits:
        auto.limits = limit_states(decl, auto, plan)
    if decl.select is not None:
        auto.select = tuple(builder.expr(e, decl.loc) for _, e in decl.select)
        auto.select_vars = tuple(".".join((e.name, *e.path)) if isinstance(e, ast.Name) else None
                                 for _, e in decl.select)
        auto.select_exprs = tuple(e for _, e in decl.select)
        # (a literal's evaluator returns one value and cannot fail: read it once)
        auto.select_consts = tuple((f(None, {}),) if isinstance(e, ast.Const) else None
                                   for f, (_, e) in zip(auto.select, decl.select, strict=True))
    reads = [p.name for p in decl.params] + [
        dotted(n) for e in [*(e for _, e in decl.select or ()),
                            *(plan.distinct if plan is not None else ())]
        for n in expr_names(e)]
    auto.unused = unused_variables(decl.body, tuple(reads))
    return auto


def limit_states(decl: ast.ComplexEventDecl, auto: Automaton, plan: EsperPlan | None
                 ) -> tuple[tuple[int, frozenset[int]], ...]:
    """Esper's acting ``-[n]>`` (the EPL reader's :class:`~cepflow.language.ast.Limit`): per
    limit, ``n`` and the positions of the one event before its arrow — where a run rests while
    it waits for the right-hand side (one event, under a guard or after nots: the reader takes
    no other), so the runs there are the right-hand sides under way. Found by the atoms'
    places; a limit whose atoms the lowering did not keep as positions is an error, never
    dropped."""
    if plan is None or plan.start != "spawn" or auto.group or auto.clock is not None:
        raise CompileError("-[n]> after every is supported as every a=A -[n]> B …",
                           decl.loc, decl.name)
    out = []
    for lim in decl.limits:
        states = frozenset(p.id for p in auto.positions if p.loc is not None
                           and p.loc in lim.before)
        if not states or any(p.every or p.conj is not None or p.collect is not None
                             for p in auto.positions if p.id in states):
            raise CompileError("-[n]> after every is supported as every a=A -[n]> B … with "
                               "one event before each limited arrow", decl.loc, decl.name)
        out.append((lim.most, states))
    return tuple(out)


def _chained(p: ast.Pattern) -> list[ast.Pattern]:
    """The items of a followed-by, nested followed-bys on either side flattened (it is
    associative)."""
    if isinstance(p, ast.Fol):
        return [*_chained(p.left), *_chained(p.right)]
    return [p]


_LOOP_PLACES = ("every on a group inside a pattern is supported on a followed-by of events "
                "(or alternatives of events) in the pattern's own followed-by, after its first "
                "item (A -> every (B -> C), every a=A -> every (b=B -> c=C) -> D, a guard "
                "around all of it), not inside "
                "and / or / [n] / until or a guard of its own, nor beside not")

_DEADLINE = object()  # in _restrict's edge sets: the state completes at a window's deadline


_GUARD_ANCHOR = ("a guard on an operand of 'and' (P where timer:within(Δ) and Q) is supported "
                 "where the and starts at one event: right after one event (A -> (P where "
                 "timer:within(Δ) and Q)), as the whole pattern or under every (…) around it")


def _anchor(cur: _Frag | None, pending: list[Position], prev: ast.Pattern | None,
            positions: list[Position]) -> Position | None:
    """The position of the single event ``prev`` that ``cur`` ends with (no NOT after it,
    no timer, nothing optional), else None."""
    if (cur is None or pending or cur.tail or cur.timer or cur.nullable or len(cur.last) != 1
            or not isinstance(prev, ast.Atom)):
        return None
    (q,) = cur.last
    return next(p for p in positions if p.id == q)


def _single_event(p: ast.Pattern) -> bool:
    """One event: an atom (an or of them is flattened by the caller)."""
    return isinstance(p, ast.Atom)


def _event_only(expr: ast.Expr, schema: EventType) -> bool:
    """Does ``expr`` read only fields of the filtered event (no pattern variable)? Such a
    filter gives the same answer whatever the bindings, so the matcher checks it first."""
    fields = set(schema.param_names)
    if isinstance(expr, ast.Name):
        return not expr.path and expr.name in fields
    if isinstance(expr, ast.Const):
        return True
    if isinstance(expr, ast.Unary):
        return _event_only(expr.operand, schema)
    if isinstance(expr, ast.Binary):
        return _event_only(expr.left, schema) and _event_only(expr.right, schema)
    if isinstance(expr, ast.Call):
        return all(_event_only(a, schema) for a in expr.args)
    return False
