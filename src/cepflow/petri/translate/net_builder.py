"""What every part of the translation shares: the net being built, names that never clash, the
colour sets of events and control tokens, the priority levels, and small helpers that write
inscriptions as expression trees.

**Priority levels** (docs/petri.md, "Priorities"): only one event is processed at a time, so
the levels order the phases of processing it; Def. 5 makes a phase wait until every binding of
the phases above it has fired.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cepflow.compiler.program import Program
from cepflow.events.event import EventType
from cepflow.language import ast
from cepflow.petri.colours import ANY, FOR_PARAM, INT, UNIT, ColourSet, list_of, product
from cepflow.petri.inscriptions import ArcInscription
from cepflow.petri.net import Net

#: the levels of the translation, highest priority first (Def. 2: a lower value is higher)
LOWER = 1    # P_HIGH: finding a minimum (the next instant, the next queued event, emit order)
STEP = 2     # P_NORMAL: a pattern takes the event; timers fire; a window takes an event
BUSY = 3     # P_LOW: a restarting pattern notes that an instance is alive
START = 4    # P_LOW2: a new instance begins
TRAP = 5     # a forbidden event ends a sub-pattern
CHOOSE = 6   # of two runs of one instance, the preferred one stays
KILL = 7     # a completed instance's other runs end
EMIT = 8     # complex events are output, in the engine's order
CLEAR = 9    # a statement forgets what its output needed (empty groups, a closed batch)
PASS = 10    # the event goes on to the next subscriber
POP = 11     # the next queued complex event is dispatched
TPICK = 12   # the next instance whose window closes at this instant
CONTROL = 13  # the stream goes on: time, the next input event

TIME = ColourSet("TIME", "REAL")
#: a queued complex event's key (inscriptions.qkey): the root's component and local order, the
#: dispatch number of what caused it, its own component and local order; a pattern's local
#: order is (instance, 0), or (forking instance, new instance) for a run an inner every forked
KEY = product("KEY", [("r1", INT), ("r2", ANY), ("s", INT), ("c", INT), ("l", ANY)])
EVREF = product("EVREF", [("t", TIME), ("k", INT), ("n", INT)])
EVS = list_of("EVS", EVREF)
PARTS = list_of("PARTS", INT)


class Untranslatable(Exception):
    """Constructs of a pattern set the translation does not cover, each with its statement,
    line, column and what it is (never translated wrongly)."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class Problem:
    statement: str
    construct: str
    reason: str
    loc: ast.Loc = None
    source: str = ""

    def __str__(self) -> str:
        where = f"{self.loc[0]}:{self.loc[1]}: " if self.loc else ""
        src = f"{self.source}:" if self.source and self.loc else (
            f"{self.source}: " if self.source else "")
        return (f"{src}{where}cannot translate {self.construct} in statement "
                f"'{self.statement}': {self.reason}")


def name(v: str) -> ast.Name:
    """The expression naming variable ``v`` (``a1.k`` is Name("a1", ("k",)))."""
    head, *rest = v.split(".")
    return ast.Name(head, tuple(rest))


def const(v: Any) -> ast.Const:
    return ast.Const(v)


def binop(op: str, a: ast.Expr, b: ast.Expr) -> ast.Binary:
    return ast.Binary(op, a, b)


def call(f: str, *args: ast.Expr) -> ast.Call:
    return ast.Call(f, tuple(args))


def and_(*xs: ast.Expr | None) -> ast.Expr | None:
    parts = [x for x in xs if x is not None and not (isinstance(x, ast.Const)
                                                      and x.value is True)]
    if any(isinstance(x, ast.Const) and x.value is False for x in parts):
        return const(False)
    out: ast.Expr | None = None
    for x in parts:
        out = x if out is None else binop("and", out, x)
    return out


def or_(*xs: ast.Expr) -> ast.Expr:
    parts = [x for x in xs if not (isinstance(x, ast.Const) and x.value is False)]
    if not parts:
        return const(False)
    out = parts[0]
    for x in parts[1:]:
        out = binop("or", out, x)
    return out


def not_(x: ast.Expr) -> ast.Expr:
    return ast.Unary("not", x)


def tup(*xs: ast.Expr) -> ast.Call:
    return call("tuple", *xs)


def field_set(t: str) -> ColourSet:
    return FOR_PARAM.get(t, FOR_PARAM["any"])


@dataclass
class Builder:
    """The net under construction and the translation's shared bookkeeping."""

    program: Program
    net: Net
    #: every name the program's events and patterns use (fields, variables): control
    #: variables and places never take one of them
    taken: set[str] = field(default_factory=set)
    #: complex event type -> its place
    complex_places: dict[str, str] = field(default_factory=dict)
    #: event type -> its subscribers' inbox places, in the engine's order
    inboxes: dict[str, list[str]] = field(default_factory=dict)
    #: event type -> queue place (complex types some component reads)
    queues: dict[str, str] = field(default_factory=dict)
    #: timed components' stage numbers (tick stages), by component name
    stages: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: event type -> the components that read it (patterns, then statements: engine order)
    readers: dict[str, list[str]] = field(default_factory=dict)
    #: the field names of every event type (pattern variables never take one)
    field_names: set[str] = field(default_factory=set)
    #: the event types of the input (immediate and strict patterns read them all: noise)
    input_types: set[str] = field(default_factory=set)
    #: inbox -> a place whose copy of the event its pass transition also takes (a union's)
    pass_also: dict[str, str] = field(default_factory=dict)
    #: the statements' start (the first input event's time, as the engine's when none is
    #: given; None without input): where the patterns' clocks begin
    start: float | None = None
    #: how many input events there are (the stream's event n past them: the input ended)
    inputs: int = 0
    _colour_sets: dict[str, ColourSet] = field(default_factory=dict)

    # -- names ------------------------------------------------------------------------------
    def var(self, preferred: str) -> str:
        """A control variable named ``preferred`` unless the program uses that name."""
        v, k = preferred, 0
        while v in self.taken:
            k += 1
            v = f"{preferred}{k}"
        return v

    # -- colour sets ------------------------------------------------------------------------
    def colour_set(self, cs_name: str, fields: Iterable[tuple[str, ColourSet]]) -> ColourSet:
        """A product colour set ``cs_name`` (one per name: the same name, the same set)."""
        cs = product(cs_name, list(fields))
        old = self._colour_sets.get(cs_name)
        if old is not None and old != cs:
            raise ValueError(f"colour set {cs_name} defined twice differently")
        self._colour_sets[cs_name] = cs
        return cs

    def schema(self, t: str) -> EventType:
        return self.program.schemas[t]

    def event_fields(self, t: str) -> list[tuple[str, ColourSet]]:
        return [(p.name, field_set(p.type)) for p in self.schema(t).params]

    def inbox_set(self, t: str) -> ColourSet:
        """An event being processed: (s, n, t, kd, key, fields…) — its dispatch number, its
        event number, time, kind (0 input, 1 complex) and queue key (docs/petri.md)."""
        return self.colour_set(f"IN_{t}", [("s", INT), ("n", INT), ("t", TIME), ("kd", INT),
                                           ("key", KEY), *self.event_fields(t)])

    # -- the stream: subscriptions, time, output ------------------------------------------------
    def subscribe(self, t: str, inbox: str, page: str) -> None:
        """``inbox`` receives each event of type ``t`` in its turn (stream.py routes it)."""
        self.net.place(inbox, self.inbox_set(t), "inbox", page,
                       f"the {t} event {page} is processing (004's replicated event place)")
        self.inboxes.setdefault(t, []).append(inbox)

    def stage(self, component: str) -> int:
        """The tick stage at which ``component``'s timers fire (stage 0: every statement's
        window, then one stage per pattern with timers, in the engine's order)."""
        if component not in self.stages:
            self.stages[component] = len(self.stages)
        return self.stages[component]

    def time_lowering(self, transition: str, deadline: ast.Expr) -> None:
        """Arcs of a transition that lowers the candidate next instant to ``deadline``."""
        n, nts, cand = (name(self.var(v)) for v in ("n", "nts", "cand"))
        self.arc("stream.time", transition, "in", [n, nts, cand])
        self.arc("stream.time", transition, "out", [n, nts, deadline])

    def tick_terms(self, ctl: dict[str, str] | None = None) -> list[ast.Expr]:
        return [name(self.var(v)) for v in ("n", "nts", "d", "f", "st")]

    def tick_fired(self, transition: str, tick: list[ast.Expr]) -> None:
        """A timer fired at the tick's instant: the tick notes it (another round follows)."""
        self.arc("stream.tick", transition, "in", tick)
        self.arc("stream.tick", transition, "out", [*tick[:3], const(True), tick[4]])

    def complex_set(self, x: str) -> ColourSet:
        """A complex event: (n, t, parameters…, parts) — its number, time, values and the
        numbers of the events that made it."""
        return self.colour_set(f"CE_{x}", [("n", INT), ("t", TIME),
                                           *self.event_fields(x), ("parts", PARTS)])

    def emit_output(self, transition: str, x: str, params: list[ast.Expr], t: ast.Expr,
                    key: ast.Expr, parts: ast.Expr, ctl: dict[str, str] | None = None) -> None:
        """Arcs of a transition that outputs complex event ``x``: its number from
        ``stream.dn``, the token in the complex-event place, and in ``x``'s queue when a
        pattern or statement reads it."""
        dn = name(self.var("dn"))
        self.arc("stream.dn", transition, "in", [dn])
        self.arc("stream.dn", transition, "out", [binop("+", dn, const(1))])
        self.arc(self.complex_places[x], transition, "out", [dn, t, *params, parts])
        if self.readers.get(x):
            self.arc(self.queues[x], transition, "out", [key, dn, t, *params])
        self.activate(transition, x, dn)

    def activate(self, transition: str, x: str, n: ast.Expr, mult: ast.Expr | None = None
                 ) -> None:
        """The rules triggered by an event of type ``x`` (number ``n``) are to fire."""
        for rule in self.program.rules:
            if any(ref.name == x for ref in rule.on):
                self.arc(f"{rule.name}.todo", transition, "out", [n], mult)

    def ordered(self, prefix: str, source: str, terms: list[ast.Expr], key: ast.Expr) -> None:
        """Tokens of ``source`` leave one at a time, smallest ``key`` first: ``prefix.pick``
        takes any one's key into ``prefix.first``, ``prefix.lower`` (P_HIGH) replaces it by a
        smaller one; the transition that takes the token reads the key back (:meth:`in_order`).
        (Several outputs at one event come out in the engine's order, whichever fires first.)"""
        page = self.net.places[source].page
        k2 = name(self.var("key2"))
        self.net.place(f"{prefix}.idle", UNIT, "control", page, "no output being ordered")
        self.net.mark(f"{prefix}.idle", ())
        self.net.place(f"{prefix}.first", KEY, "control", page, "the key of the next output")
        pick = f"{prefix}.pick"
        self.net.transition(pick, None, EMIT, page, "outputs to order: start with any")
        self.arc(f"{prefix}.idle", pick, "in", [call("unit")])
        self.arc(source, pick, "read", terms)
        self.arc(f"{prefix}.first", pick, "out", [key])
        lw = f"{prefix}.lower"
        self.net.transition(lw, binop("<", key, k2), LOWER, page, "an output that comes earlier")
        self.arc(f"{prefix}.first", lw, "in", [k2])
        self.arc(f"{prefix}.first", lw, "out", [key])
        self.arc(source, lw, "read", terms)

    def in_order(self, prefix: str, transition: str, key: ast.Expr) -> None:
        """Arcs of the transition that takes the next token of an :meth:`ordered` source."""
        self.arc(f"{prefix}.first", transition, "in", [key])
        self.arc(f"{prefix}.idle", transition, "out", [call("unit")])

    # -- arcs -------------------------------------------------------------------------------
    def arc(self, place: str, transition: str, kind: str, terms: Iterable[ast.Expr],
            mult: ast.Expr | None = None) -> None:
        self.net.arc(place, transition, kind, ArcInscription(tuple(terms), mult))  # type: ignore[arg-type]


