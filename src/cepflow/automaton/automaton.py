"""The compiled automaton of one complex event pattern (000 §5.1).

``M = (Q, q0, f, x, E, δ, T)``: states are the initial state ``q0``, one resting state per atom
occurrence that does not complete the pattern, the final state ``f`` and the trap state ``x``.
Transitions are typed by an event type and guarded by unification (Algorithm 1) and filters;
negative transitions (NAC) lead to the trap, or to a restricted copy of their state when an
iteration before the NOT may go on (:class:`Forbid`); timed zones (within / holds-for) are
recorded on the edges that enter and leave them. The construction is Glushkov's: one position
per atom occurrence, which keeps the automaton linear in the pattern size and deterministic
whenever no two alternatives start with the same event type (otherwise a token follows each
alternative as a separate thread, see docs/semantics.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cepflow.automaton.context import Context
from cepflow.schedule import Schedule

INITIAL = 0
FINAL = -1
TRAP = -2
#: the synthetic event a ``timer:interval`` in the middle of an Esper pattern feeds its
#: instance when the interval passed (``A -> timer:interval(Δ) -> B``, compiler.esper: B's
#: sub-pattern begins then); never an input event type
TIMER = "@timer"

Predicate = Callable[[Any, dict[str, Any]], Any]


@dataclass(slots=True)
class Collect:
    """How an occurrence of a repeated tag (Esper's ``[n] a=A``, ``a=A until B``) keeps the
    event it takes: the k-th one assigns ``a[k].<field>`` and the current-event variables
    (``current``, what ``a.<field>`` means inside the repetition); ``count`` is the variable
    counting them. Assigned, not unified: every repetition takes another event."""

    alias: str
    fields: tuple[str, ...]
    current: tuple[str, ...]
    count: str


@dataclass(slots=True)
class Position:
    """One atom occurrence: the event type it matches and how it binds parameters."""

    id: int
    type: str
    #: (param index, variable) pairs to unify, wildcards removed (Algorithm 1).
    binds: tuple[tuple[int, str], ...]
    #: optional filter ``f(event, bindings) -> truthy``; compiled from the pattern's ``where``.
    filter: Predicate | None = None
    filter_src: str | None = None
    label: str = ""
    loc: tuple[int, int] | None = None
    #: ids of the timed zones enclosing this occurrence, outermost first.
    zones: tuple[int, ...] = ()
    #: Esper's ``every`` on an operand inside a pattern (``A -> every B``): an event taken at
    #: this occurrence starts a new partial match and the one that took it keeps waiting.
    every: bool = False
    #: the filter's expression (for the column kernel's vectorized evaluation) and whether it
    #: reads only the event's own fields — then it can be checked before anything is bound.
    where: Any = None
    local: bool = False
    #: Esper's tag inside a repetition: the event is collected (see :class:`Collect`)
    collect: Collect | None = None
    #: a step of Esper's ``and`` (compiler.conjunction): (the and's id, the operands it
    #: moves). Of the steps of one ``and`` that fire on an event only those moving a maximal
    #: set of operands are taken: every operand that can take the event takes it
    conj: tuple[int, frozenset[int]] | None = None
    #: a step of Esper's ``or`` product: the hidden variable recording which operands took
    #: each event of the product (a tuple of operand sets, one per step, in order)
    track: str | None = None
    #: a step of Esper's ``or`` that completes operand ``settle[0]``: the match keeps that
    #: operand's events and drops the variables ``settle[1]`` the other operands bound
    settle: tuple[int, frozenset[str]] | None = None
    #: a step of Esper's ``or`` that completes several operands at once: per operand (in
    #: writing order) its ``settle``. The one that reports first wins — the one whose filter
    #: started first (the ``track`` tells when each operand took its events: matcher._or_step)
    ties: tuple[tuple[int, frozenset[str]], ...] = ()
    #: the event type's declared field names (how the filter's plain names read the event)
    fields: tuple[str, ...] = ()
    #: Esper's ``until`` with a single-event operand (ast.Atom.until): the id of the until
    #: this occurrence is an operand step or the end of; 0 elsewhere. A state whose every
    #: edge is a step of one until takes each event as that until's one instance does
    #: (runtime.compiled ``CompiledPattern.greedy``)
    until: int = 0
    #: of such an until, its end (ast.Atom.until_end): where the end fits an event the
    #: operand's steps do not take it (Matcher._try_edges)
    until_end: bool = False
    #: Esper's ``until`` over a group (ast.Atom.group): the ids of the untils this occurrence
    #: is an operand step or the end of. Their states keep a run per state (the oldest,
    #: CompiledPattern.loose); when a run leaves an until's states — its end fired or its
    #: upper bound was reached — its one instance is over and the runs still in those states
    #: end with it (runtime.compiled ``CompiledPattern.groups``, Matcher._apply)
    group: tuple[int, ...] = ()
    #: Esper's ``timer:withinmax(Δ, n)`` (ast.Window.most) around the operand this occurrence
    #: completes (``every x = X``, or ``x = X`` with n = 0): the run taking an event here is
    #: that guard's next result — passed while fewer than ``n`` were, else the guard ends the
    #: operand (the run ends, the result is dropped). The count of an ``every``'s waiting run
    #: is its hidden binding :data:`TAKEN` (Matcher._try_edges). None: no such guard
    most: int | None = None
    #: Esper's ``or`` of single events built as their union (compiler.automata): the id of
    #: the outermost such or this occurrence is an alternative of; 0 elsewhere. The or quits
    #: when one alternative reports (EvalOrStateNode): of a state's alternatives an event
    #: takes the first that fits, and the run does not stay for the others
    #: (runtime.compiled ``CompiledPattern.alternatives``)
    alt: int = 0
    #: Esper's ``every X or every Y`` with operands one event can both fit (ast.Or.each):
    #: the operand (1, 2, …) this first occurrence of it starts. An event begins one instance
    #: per operand it fits, in the operands' order (Matcher._start), as each of Esper's every
    #: nodes reports it; 0 elsewhere
    each: int = 0
    #: Esper's ``or`` run as alternatives from the event it starts at (ast.Or.side): (the
    #: or's id, the alternative, what the occurrence is — :data:`SIDE_ANCHOR`, the copy of
    #: the event it starts at, and/or :data:`SIDE_DONE`, an occurrence completing the
    #: alternative). The first alternative to complete quits the others (Matcher._sides)
    side: tuple[int, int, int] | None = None
    #: a step of Esper's ``and`` whose operands it moves had not begun: their filters
    #: started with the and (compiler.conjunction ProductStep.fresh)
    fresh: bool = False
    #: Esper's ``every`` on a group of events inside a pattern (``A -> every (B -> C)``,
    #: compiler.automata ``build_loop``): the id of the group this occurrence begins
    #: (``loop_in``) or completes (``loop_out``), 0 elsewhere. A run entering the group notes
    #: where it was (its hidden binding :data:`LOOP`); one completing it goes on as a partial
    #: match of its own and the run goes back there with the bindings it had, to wait for the
    #: group's next instance (EvalEveryStateNode restarts its child when it turns true:
    #: Matcher._try_edges)
    loop_in: int = 0
    loop_out: int = 0


#: Position.side: the copy of the event an alternative starts at; an occurrence completing it
SIDE_ANCHOR, SIDE_DONE = 1, 2

#: the hidden binding that counts the results a ``timer:withinmax`` guard passed from the run
#: waiting at its ``every`` (Position.most); no tag variable has this name (they hold a dot)
TAKEN = "_taken"

#: the hidden binding of a run inside an inner every's group (Position.loop_in): the state it
#: entered the group from, its number of events then and the names it had bound, as text
#: (saved state keeps it as is); no tag variable has this name
LOOP = "_loop"


@dataclass(slots=True)
class Edge:
    """A positive transition into ``target`` (a position id, or FINAL when it completes)."""

    source: int
    target: int
    position: Position
    #: zones left (checked) and entered (timestamp recorded) by this step.
    exits: tuple[int, ...] = ()
    enters: tuple[int, ...] = ()
    final: bool = False


@dataclass(slots=True)
class Forbid:
    """A negative transition: while resting in ``source``, an event matching ``position`` ends
    the gap. The thread goes to ``target``: the trap, or — when ``source`` can also continue the
    operand before the NOT (``B{+} -> NOT A``) — a restricted copy of ``source`` that may only
    continue that operand (see :attr:`Automaton.restricted`)."""

    source: int
    position: Position
    target: int = TRAP


@dataclass(slots=True)
class Zone:
    """A timed zone: ``within`` ⇒ span ≤ length, ``holds_for`` ⇒ span ≥ length (ms).

    ``timer_accept`` lists resting states that complete the pattern when the zone's deadline
    passes with no forbidden event (a trailing NOT in a window: "A not followed by B within Δ").
    """

    id: int
    length: float
    kind: str
    last: frozenset[int] = frozenset()
    timer_accept: frozenset[int] = frozenset()
    loc: tuple[int, int] | None = None
    #: the end instant is outside the window: Esper's ``timer:within`` / ``timer:interval``
    #: fire before the events of their instant, so a within span must stay *below* the length
    #: and a trailing NOT's timer completes before an event at the deadline; VEPL's windows
    #: include it (000 §4.3.1: ``|c1.τ - c2.τ| ≤ Δ``). Set for patterns of context esper.
    open_end: bool = False
    #: begun where a step completed (Esper's guard after a step that is not one event,
    #: ast.Window.after): of the window's first followed-by item only the positions that
    #: complete it are inside, so the zone is entered — its duration starts — at that item's
    #: last event; the per-event token path runs it (no kernel reads such a zone)
    after: bool = False
    #: Esper's guard at the top of the pattern (ast.Window.whole): a run entering the zone
    #: enters it at the statement's start, whatever event it enters with, so its deadline is
    #: the statement's start plus the length for every instance (the guard quits them all
    #: then, EvalGuardStateNode); the per-event token path runs it (no kernel reads such a
    #: zone)
    whole: bool = False

    def exceeded(self, span: float) -> bool:
        """Does a within span of ``span`` ms break this window?"""
        return span > self.length or (self.open_end and span == self.length)


@dataclass(slots=True)
class StartClock:
    """The leading ``timer:interval(length)`` or ``timer:at(schedule)`` of a pattern that
    starts at the statement's start (compiler.esper.Clock): when it is due (:meth:`due`),
    unless an event matching one of ``forbids`` came (they bind nothing: nothing is bound
    yet), it feeds the automaton one synthetic event of type ``type``; the rest of the pattern
    follows that event."""

    length: float
    forbids: list[Position]
    type: str
    #: timer:at's crontab schedule (cepflow.schedule); None for timer:interval
    schedule: Schedule | None = None

    def due(self, start: float) -> float:
        """When the clock begun at ``start`` fires: ``length`` ms later, or the schedule's next
        instant after ``start``."""
        if self.schedule is None:
            return start + self.length
        return self.schedule.next_after(start)


@dataclass
class Automaton:
    """The compiled form of one complex event pattern."""

    name: str
    params: tuple[str, ...]
    context: Context
    positions: list[Position]
    #: state id -> event type -> edges leaving that state on that type (insertion = pattern order).
    edges: dict[int, dict[str, list[Edge]]]
    forbids: dict[int, dict[str, list[Forbid]]]
    zones: list[Zone]
    partition_by: tuple[str, ...] = ()
    #: event type -> param index giving the partition key (only when partition_by is set).
    partition_index: dict[str, int] = field(default_factory=dict)
    #: state -> (event type -> (param index, variable)) for the unification-key index.
    key_index: dict[int, dict[str, tuple[int, str]]] = field(default_factory=dict)
    pattern_text: str = ""
    #: Esper semantics (context ``esper``): how instances start — "once", "restart", "spawn",
    #: "group" or "respawn" (compiler.esper) — and every-distinct keys f(None, bindings) with their
    #: expiry (ms).
    start: str = "spawn"
    #: start policy "respawn" (``every (…)`` around a pattern with every inside, nested
    #: every: compiler.esper._respawn): the fresh instances each result starts; a partial
    #: match then stands for Token.mult identical instances
    respawn: int = 0
    #: start policy "restart" of Esper's ``every (G) and not N`` (compiler.esper
    #: _every_group_not): the next instance begins (at the clock) only after one completed —
    #: one that a forbidden event ended ends the pattern for good
    final: bool = False
    #: start policy "group" (``every (G) -> R``): the states inside the group (before it
    #: completed; with the initial state, one instance at a time) and the states where it
    #: completed (G's last positions: the rest's instance waits there)
    group: frozenset[int] = frozenset()
    group_end: frozenset[int] = frozenset()
    distinct: tuple[Predicate, ...] = ()
    distinct_expiry: float | None = None
    #: Esper's select list: parameter values f(None, bindings) computed at completion.
    select: tuple[Predicate, ...] | None = None
    #: per select item, the variable it copies (``@ts`` for the match's time) or None when it
    #: computes something; lets the column kernel fill parameters without a bindings dict.
    select_vars: tuple[str | None, ...] | None = None
    #: per select item, the expression it was compiled from (names read the bindings): lets
    #: the column kernel compute arithmetic over the matches' fields column-wise.
    select_exprs: tuple[Any, ...] | None = None
    #: per select item, ``(value,)`` when it is a literal (the very value its evaluator
    #: returns) or None; lets the column kernel carry constants without evaluating per match.
    select_consts: tuple[tuple[Any] | None, ...] | None = None
    #: Esper's ``select *`` over a tag collected without bound (``a=A until D``, ``[2:] b=B
    #: until C``): the complex event carries ``a[k].<field>`` for as many events as the tag
    #: took (runtime.binding.spread), after the select list's fixed fields
    spread: tuple[Collect, ...] = ()
    #: a pattern that starts with timer:interval: its clock (run by the matcher from the
    #: engine's statement start); None for every other pattern
    clock: StartClock | None = None
    #: restricted copy -> the state it copies: where a forbidden event moves a thread that may
    #: still continue the operand before the NOT (an iteration); the copy keeps only the edges
    #: that stay inside that operand, so the gap is measured again from its next event
    restricted: dict[int, int] = field(default_factory=dict)
    #: variables one atom binds and nothing reads (language.walk.unused_variables): like ``_``
    #: they decide nothing, not even which of two runs over the same events is reported
    unused: frozenset[str] = frozenset()
    #: Esper's ``A -> (X or not Y)`` (compiler.automata ``report_or_wait``): states where a
    #: run that reaches them reports a match at once and goes on waiting for X
    reports: frozenset[int] = frozenset()
    #: Esper's ``every a=A -[n]> B …`` (compiler.automata ``limit_states``): per acting
    #: limit, ``n`` and the states where a run waits for that arrow's right-hand side — a
    #: run that would enter them while ``n`` runs wait there ends instead
    limits: tuple[tuple[int, frozenset[int]], ...] = ()

    def spawn_edge(self) -> Edge | None:
        """The one edge that begins an Esper spawn pattern (``every a = A(f) -> …``: context
        esper, start spawn, no every-distinct, no NOT, no clock, not partitioned, a single
        initial edge), else None: the first checks of the direct Esper shapes (the matcher's
        ``single``, the column kernel's pair)."""
        if (not self.context.esper or self.start != "spawn" or self.distinct or self.forbids
                or self.partition_by or self.clock is not None):
            return None
        init = self.edges.get(INITIAL, {})
        if len(init) != 1:
            return None
        ((_, es),) = init.items()
        return es[0] if len(es) == 1 else None

    @property
    def alphabet(self) -> set[str]:
        return {p.type for p in self.positions}

    @property
    def states(self) -> list[int]:
        rest = sorted({e.source for m in self.edges.values() for es in m.values() for e in es})
        return [s for s in rest if s != INITIAL]

    def state_label(self, state: int) -> str:
        if state == INITIAL:
            return "q0"
        if state == FINAL:
            return "f"
        if state == TRAP:
            return "x"
        return f"q{state}"

    def types_from(self, state: int) -> set[str]:
        return set(self.edges.get(state, {})) | set(self.forbids.get(state, {}))


def alternative_states(auto: Automaton) -> frozenset[int]:
    """The states whose edges are the alternatives of one Esper ``or`` of single events
    (Position.alt): a run there that takes an event does not stay for the others
    (runtime.compiled ``CompiledPattern.alternatives``, the Petri-net translation)."""
    return frozenset(s for s, m in auto.edges.items() if len(
        alts := {e.position.alt for es in m.values() for e in es}) == 1 and 0 not in alts
        and sum(len(es) for es in m.values()) > 1)
