"""The abstract syntax of cepflow patterns — what the DSL parser and the Python builder produce.

Pattern expressions follow the algebra of 000 §4.1 (Def. 2): atomic pattern references and the
operators fol (``->``), or, and, mult (``{n}``, ``{*}``, ``{+}``), NOT (NAC) and win (``within`` /
``holds-for``). Declarations mirror VEPL: atomic events, query events, complex events and
rules, plus data-window statements (Esper's windows and aggregates, :class:`WindowDecl`).
``loc`` (line, column) is kept for diagnostics and ignored by equality.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from cepflow.schedule import Schedule

Loc = tuple[int, int] | None


def _loc() -> Any:
    return field(default=None, compare=False, repr=False)


# ---------------------------------------------------------------- value expressions (filters)


@dataclass(frozen=True)
class Const:
    """A literal: number, string, boolean or null (None)."""

    value: Any
    loc: Loc = _loc()


@dataclass(frozen=True)
class Name:
    """A name in a condition: a field of the filtered event or a variable bound earlier.

    ``path`` holds dotted parts after the first (``a.speed`` is Name("a", ("speed",))).
    """

    name: str
    path: tuple[str, ...] = ()
    loc: Loc = _loc()


@dataclass(frozen=True)
class Unary:
    op: Literal["not", "-"]
    operand: Expr
    loc: Loc = _loc()


@dataclass(frozen=True)
class Binary:
    """Arithmetic (+ - * / %), comparison (== != < <= > >=) and logical (and, or) operators."""

    op: str
    left: Expr
    right: Expr
    loc: Loc = _loc()


@dataclass(frozen=True)
class Call:
    """A call of a function registered by name (never a Python name looked up in the file)."""

    func: str
    args: tuple[Expr, ...]
    loc: Loc = _loc()


Expr = Const | Name | Unary | Binary | Call

#: aggregate functions of window statements (one argument; ``count`` also without, meaning
#: ``count(*)``)
AGGREGATES = frozenset({"count", "sum", "avg", "min", "max"})


# ---------------------------------------------------------------- pattern expressions


@dataclass(frozen=True)
class Atom:
    """A reference to an event pattern (atomic, query or complex) with its call parameters.

    ``args`` are variable names; ``None`` (or a name starting with ``_``) is a wildcard that binds
    nothing. ``args is None`` means the call listed no parameters (VEPL ``A`` for ``A()``).
    ``where`` is an optional filter on the referenced event's own fields. ``alias`` (Esper's
    ``a1 = Motorbike(...)``) names the matched event: later conditions and the select list refer
    to its fields as ``a1.speed`` (compiled to unification variables, see compiler.esper).
    """

    name: str
    args: tuple[str | None, ...] | None = None
    where: Expr | None = None
    alias: str | None = None
    loc: Loc = _loc()
    #: set by the Esper lowering only (compiler.esper ``_Lowering.until``): the id of the
    #: ``until`` whose single-event operand or end this atom is — that until takes every
    #: operand event, as one instance (Position.until); 0 elsewhere
    until: int = 0
    #: set by the Esper lowering only: the ids of the untils over a group (``[k] A``, a nested
    #: until) whose operand or end this atom is, innermost first — a run leaving that until's
    #: states ends its one instance (Position.group)
    group: tuple[int, ...] = ()
    #: set with ``until``: this atom is (an alternative of) that until's end — an event that
    #: fits it and the operand ends the until (EvalMatchUntilStateNode starts its until child
    #: first: Matcher._try_edges)
    until_end: bool = False


@dataclass(frozen=True)
class Fol:
    """Followed-by ``fol(left, right)``: every event of ``left`` precedes every one of ``right``."""

    left: Pattern
    right: Pattern
    loc: Loc = _loc()


@dataclass(frozen=True)
class Or:
    """``or(c1, c2)``. ``choice`` marks an alternative the Esper lowering made itself (an
    ``until``'s "end now or take one more"): a plain alternative of the automaton, never run
    side by side like a written Esper ``or`` (compiler.conjunction). ``each`` marks Esper's
    ``every X or every Y`` read as ``every (X or Y)`` (compiler.esper ``_every_or``) when one
    event can fit several operands: each operand it fits reports it (one every node each,
    Position.each), where the or of ``every (X or Y)`` takes the first only. ``side`` marks
    a written Esper ``or`` the lowering runs as alternatives from the event it starts at
    (compiler.esper ``_Lowering.beside``): the first alternative to complete quits the
    others (Position.side)."""

    left: Pattern
    right: Pattern
    loc: Loc = _loc()
    choice: bool = False
    each: bool = False
    side: bool = False


@dataclass(frozen=True)
class And:
    """``and(c1, c2) ≡ or(fol(c1, c2), fol(c2, c1))`` (000 §4.3.1)."""

    left: Pattern
    right: Pattern
    loc: Loc = _loc()


Count = int | Literal["*", "+"]


@dataclass(frozen=True)
class Mult:
    """Multiplicity: exactly ``n`` occurrences, ``*`` (zero or more) or ``+`` (one or more)."""

    pattern: Pattern
    count: Count
    loc: Loc = _loc()


@dataclass(frozen=True)
class Not:
    """Negative application condition: no match of ``pattern`` where this operand stands."""

    pattern: Pattern
    loc: Loc = _loc()


WindowKind = Literal["within", "holds_for"]


@dataclass(frozen=True)
class Window:
    """Time window (000 §4.3.1): ``within`` ⇒ span ≤ duration; ``holds_for`` ⇒ span ≥ duration.

    ``duration`` is in milliseconds.
    """

    pattern: Pattern
    duration: float
    kind: WindowKind = "within"
    loc: Loc = _loc()
    #: read from EPL's ``where timer:within`` (Esper's guard, begun where its operand
    #: begins): on a whole operand of an ``and`` / ``or`` it runs from the and's start
    #: (compiler.conjunction.is_guard); a window written in the cepflow syntax spans its own
    #: events. Not part of equality (the two read alike elsewhere)
    guard: bool = field(default=False, compare=False)
    #: set by the Esper lowering only (compiler.esper ``_Lowering.until_silence``): each step
    #: inside the window after its first event starts its duration again (its deadline is
    #: ``duration`` after the latest event), Esper's ``every (timer:interval(Δ) and not A)``
    #: restarted at each ``A``
    slide: bool = False
    #: EPL's ``timer:withinmax(Δ, n)`` where its count acts (TimerWithinOrMaxCountGuard): the
    #: guard passes at most ``n`` results of its operand and ends it at the next one — around
    #: ``every`` on one event (``n`` ≥ 0) or one event (``n`` = 0: nothing passes). None: a
    #: plain ``timer:within`` (also withinmax around an operand that reports once, ``n`` ≥ 1)
    most: int | None = None
    #: set by the EPL reader only (compiler.esper.guard_windows): Esper's guard after a step
    #: ``X`` that is not one event, ``X -> (P where timer:within(Δ))``, as the window ``(X ->
    #: P)[Δ]`` whose duration counts from the instant ``X`` — the first item of the window's
    #: followed-by — completed (its last event), not from ``X``'s first event: the zone begins
    #: at the steps that complete ``X`` (compiler.automata, Zone.after)
    after: bool = False
    #: set by the EPL reader only (compiler.esper.statement_start): Esper's guard at the top of
    #: the pattern, which its root starts with the statement and which, when it fires, quits
    #: everything under it — every instance, also those an ``every`` inside (on a group, a
    #: timer, a guarded event) begins later: the window's duration counts from the
    #: statement's start for each run that enters it (compiler.automata, Zone.whole)
    whole: bool = False


@dataclass(frozen=True)
class Every:
    """Esper's ``every P`` / ``every-distinct(keys) P``: a new instance of ``P`` each time it
    can begin (or, around a whole pattern, each time the previous instance completed).
    ``distinct`` expressions suppress an instance whose values were seen before; ``expiry``
    (ms) forgets seen values after that long (None: for the pattern's lifetime)."""

    pattern: Pattern
    distinct: tuple[Expr, ...] = ()
    expiry: float | None = None
    loc: Loc = _loc()


@dataclass(frozen=True)
class Interval:
    """Esper's observer ``timer:interval(Δ)``: turns true ``duration`` ms after it starts, i.e.
    after the operand before it in a ``->`` chain completed (compiler.esper lowers it to a
    timed zone that completes when its deadline passes)."""

    duration: float
    loc: Loc = _loc()


@dataclass(frozen=True)
class At:
    """Esper's observer ``timer:at(minutes, hours, days of month, months, days of week [,
    seconds])``: turns true at the first instant of its crontab ``schedule`` after it starts
    (cepflow.schedule; compiler.esper runs it as the clock of a pattern it begins)."""

    schedule: Schedule
    loc: Loc = _loc()


@dataclass(frozen=True)
class Until:
    """Esper's repeat-until ``[low:high] pattern until until``: matches of ``pattern`` are
    collected until ``until`` turns true; fewer than ``low`` of them make the whole false, at
    most ``high`` are kept. ``low == high`` (``[n] P until Q``) turns true at the n-th match of
    ``pattern`` unless ``until`` came first. ``None`` bounds are open."""

    pattern: Pattern
    until: Pattern
    low: int | None = None
    high: int | None = None
    loc: Loc = _loc()


Pattern = Atom | Fol | Or | And | Mult | Not | Window | Every | Interval | At | Until


# ---------------------------------------------------------------- declarations

ContextName = Literal["chronicle", "immediate", "strict", "unrestricted", "esper"]
#: 000 §4.4's three contexts, plus ``unrestricted`` (every partial match takes every event) and
#: ``esper`` (Esper's pattern semantics: events are shared, each instance takes the first match,
#: instances begin as ``every`` says — docs/esper.md).
CONTEXTS: tuple[str, ...] = ("chronicle", "immediate", "strict", "unrestricted", "esper")


@dataclass(frozen=True)
class Param:
    """A typed formal parameter, ``name : Type``."""

    name: str
    type: str = "any"
    loc: Loc = _loc()


@dataclass(frozen=True)
class Trait:
    """A named list of parameters atomic events may include (VEPL ``trait``)."""

    name: str
    params: tuple[Param, ...]
    loc: Loc = _loc()


@dataclass(frozen=True)
class AtomicEventDecl:
    """``atomicEvent Name(params) [with Trait, …]`` — an event type observed on the stream."""

    name: str
    params: tuple[Param, ...] = ()
    traits: tuple[str, ...] = ()
    loc: Loc = _loc()


@dataclass(frozen=True)
class QueryEventDecl:
    """``queryEvent Name(params) as Query(args) found|lost`` (000 Def. 1, query event pattern)."""

    name: str
    params: tuple[Param, ...]
    query: str
    query_args: tuple[str | None, ...] | None
    change: Literal["found", "lost"] = "found"
    loc: Loc = _loc()


@dataclass(frozen=True)
class Limit:
    """Esper's followed-by maximum ``-[n]>`` on an arrow of a whole pattern's followed-by:
    at most ``most`` right-hand sides of that arrow under way at once. ``before``: the places
    of the atoms of the operand before the arrow (one event), which the compiler finds among
    the automaton's positions (compiler.automata ``limit_states``)."""

    most: int
    before: tuple[Loc, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class ComplexEventDecl:
    """``complexEvent Name(params) { as <pattern> [context …] }``.

    ``partition_by`` (a cepflow extension) names parameters whose values split the stream into
    independent sub-streams; the event processing context then applies per sub-stream.
    ``select`` (Esper's select list) computes each parameter from the match's bindings instead
    of taking the variable of the same name; ``@ts`` is the match's time. ``priority``
    (``priority n``, EPL ``@Priority(n)``) orders the patterns that take one event: higher
    first (docs/semantics.md, "Higher-order patterns and rules").
    """

    name: str
    params: tuple[Param, ...]
    body: Pattern
    context: ContextName | None = None
    partition_by: tuple[str, ...] = ()
    select: tuple[tuple[str, Expr], ...] | None = None
    loc: Loc = _loc()
    priority: int = 0
    #: Esper's ``-[n]>`` on the arrows of the whole pattern's followed-by, in order
    limits: tuple[Limit, ...] = ()


@dataclass(frozen=True)
class PatternRef:
    """A rule trigger: a pattern name with optional call parameters."""

    name: str
    args: tuple[str | None, ...] | None = None
    loc: Loc = _loc()


@dataclass(frozen=True)
class RuleDecl:
    """``rule Name on P, … [priority n] action name`` — actions are registered Python callables.

    ``opaque_action`` keeps the source span of a VEPL Xbase block, which is never executed.
    """

    name: str
    on: tuple[PatternRef, ...]
    action: str | None = None
    priority: int = 0
    opaque_action: str | None = None
    loc: Loc = _loc()


DataWindowKind = Literal["time", "time_batch", "length", "length_batch"]
#: the data window kinds, in the order messages list them
DATA_WINDOW_KINDS: tuple[str, ...] = get_args(DataWindowKind)


@dataclass(frozen=True)
class DataWindow:
    """An Esper data window (docs/windows.md): ``time`` / ``time_batch`` hold ``size``
    milliseconds, ``length`` / ``length_batch`` ``size`` events; ``per_group`` keeps one length
    window per ``group by`` value (Esper's ``#groupwin(<group by>)#length…``)."""

    kind: DataWindowKind
    size: float
    per_group: bool = False
    loc: Loc = _loc()


@dataclass(frozen=True)
class WindowDecl:
    """A data-window statement: ``insert into name select … from source#window group by …
    having …`` (EPL) or ``complexEvent name { from source window … select … }`` (cepflow).

    ``source`` is the input stream: an :class:`Atom` with the event type, an optional alias
    (``a1`` in ``a1.location``) and an optional filter applied before the window; ``args`` is
    always None. ``select`` items are ``(output name or None, expression)``; without a name
    the output parameter is named as Esper names the column (a field by its name, anything
    else by its text). Aggregates are calls of ``count`` (``count()`` is ``count(*)``),
    ``sum``, ``avg``, ``min``, ``max``; ``current_timestamp()`` is the row's time. Compiled to
    a :class:`cepflow.windows.WindowStatement`; its rows re-enter the stream as events of type
    ``name``. ``priority`` orders the statements that take one event or update at one
    instant, as for patterns. ``more_inputs`` are further input types read as one stream with
    ``source.name`` (a union: ``from g = A | B``; EPL: several statements inserting into one
    stream), all with the same fields; ``stream`` is that stream's name when EPL gave one.
    """

    name: str
    source: Atom
    window: DataWindow
    select: tuple[tuple[str | None, Expr], ...]
    group_by: tuple[Expr, ...] = ()
    having: Expr | None = None
    loc: Loc = _loc()
    priority: int = 0
    more_inputs: tuple[str, ...] = ()
    stream: str | None = field(default=None, compare=False)


Decl = Trait | AtomicEventDecl | QueryEventDecl | ComplexEventDecl | RuleDecl | WindowDecl


@dataclass(frozen=True)
class Module:
    """One pattern file: package, imports, an engine-wide default context and declarations."""

    decls: tuple[Decl, ...]
    package: str | None = None
    imports: tuple[str, ...] = ()
    context: ContextName | None = None
    source: str = "<string>"

    def by_name(self) -> dict[str, Decl]:
        return {d.name: d for d in self.decls}

    @property
    def complex_events(self) -> list[ComplexEventDecl]:
        return [d for d in self.decls if isinstance(d, ComplexEventDecl)]

    @property
    def windows(self) -> list[WindowDecl]:
        return [d for d in self.decls if isinstance(d, WindowDecl)]

    @property
    def rules(self) -> list[RuleDecl]:
        return [d for d in self.decls if isinstance(d, RuleDecl)]


def is_wildcard(arg: str | None) -> bool:
    """VEPL anonymous parameters: ``_`` and any name starting with an underscore."""
    return arg is None or arg.startswith("_")
