"""Esper's pattern semantics on cepflow's automata (docs/esper.md).

An Esper-style complex event — from an ``.epl`` file or a cepflow pattern with ``every`` or
event aliases — is *lowered* to the ordinary algebra before it is compiled, so it runs on the
same automata and engine:

* ``every`` placement becomes the pattern's **start policy**: ``every A -> P`` (and
  ``every-distinct(keys) A -> P``) starts a new instance at each ``A`` (*spawn*);
  ``every (P)`` runs one instance at a time and starts the next after it completed
  (*restart*); ``every (G) -> R`` with a group ``G`` (a sequence, ``and``, ``[n]`` …) runs
  one instance of ``G`` at a time and each completion of it goes on as an instance of ``R``
  while ``G`` restarts (*group*: the head's every stays in the lowered pattern to mark ``G``,
  compiler.automata's Automaton.group; docs/esper.md, "every (group) -> more"); without
  ``every`` the pattern matches once (*once*). ``every X or every Y``
  is ``every (X or Y)`` (Esper documents the equivalence). ``every`` on a single event inside
  a pattern (``A -> every B``, ``every A -> every B -> C``) marks that event's occurrence: the
  partial match that takes it stays waiting for the next one, and a new one goes on
  (:attr:`Position.every <cepflow.automaton.automaton.Position.every>`, run by the matcher).
* ``P and not C`` after an event (``A -> (B and not C)``) forbids ``C`` from ``A`` until ``P``
  completes: it is VEPL's ``A -> NOT C -> B`` (``NOT C`` before every step of ``P``), the
  same automaton. ``A -> (timer:interval(Δ) and not C)`` is ``(A -> NOT C)[Δ]`` and
  ``A -> timer:interval(Δ)`` the same window with nothing forbidden: a timed zone that
  completes when its deadline passes.
* ``[m:n] P until Q`` (``P``, ``Q`` single events): ``m`` times ``P`` with ``NOT Q`` in every
  gap, then up to ``n - m`` more ``P`` (any number without ``n``) and ``Q``; with ``m == n``
  (``[n] P until Q``) it completes at the n-th ``P``. When one event would both advance and
  end a sub-pattern (it fits ``P`` and ``Q``, or ``B`` and ``C`` of ``B and not C``) the
  ending wins, as Esper starts ``until`` first (matcher, context ``esper``).
* Anything else with these operators is reported with its location (:class:`EsperError`).
* **Aliases** ``a1 = Motorbike(...)`` become unification variables ``a1.<field>`` for every
  field of the event; a top-level conjunct ``a2.f = a1.g`` of ``a2``'s filter, where ``a1`` was
  bound before, becomes unification (``a2``'s ``f`` binds ``a1.g``), so it is served by the
  same per-key index as VEPL parameters and costs nothing more; so does ``f = a1.g`` (the own
  field named bare, as Esper allows, also in an event without a tag, which then binds only
  such fields); other conditions stay filters.
* Esper's guard ``X -> (P where timer:within(Δ))`` starts when ``P`` is activated, i.e. at
  ``X``'s (last) event: the EPL reader writes it as the window ``(X -> P)[Δ]``, begun at the
  end of ``X`` when ``X`` is a step of several events (ast.Window.after; :func:`guard_windows`).
* A pattern that **starts with** ``timer:interval(Δ)`` or ``(timer:interval(Δ) and not C …)``
  (``every timer:interval(Δ)``, ``timer:interval(Δ) -> A``, ``every (timer:interval(Δ) and
  not A)``) begins at the statement's start, not at an event: the interval becomes the
  pattern's :class:`Clock`, run by the matcher from the engine's statement start time, and
  the rest of the pattern follows the synthetic event :data:`CLOCK` that the clock feeds when
  its interval passed without a forbidden event. The start policy says when the next interval
  begins: ``every`` on the interval alone restarts it at once (each end starts a new rest),
  ``every (…)`` around the pattern when the instance ended, without ``every`` never.
* **Tags inside a repetition** (``[n] a=A``, ``a=A until B``) collect every event they tag
  (:mod:`cepflow.language.tags`): the atom keeps its alias, and the automaton's position
  assigns ``a[k].<field>`` for the k-th event and ``_a.<field>`` for the current one (what
  ``a.field`` means inside the repetition) instead of unifying.
* The **select list** is kept, with names rewritten to the variables above; it computes the
  complex event's parameters at completion (``@ts`` is the match's time).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from itertools import count
from typing import Literal

from cepflow.automaton.automaton import TIMER
from cepflow.compiler.conjunction import is_guard
from cepflow.compiler.normalize import and_items, fol_items, or_items
from cepflow.events.event import EventType
from cepflow.language import ast
from cepflow.language.tags import RepeatedTag, indexed, misuses, repeated_tags
from cepflow.language.walk import atoms, map_atoms, names, rewrite, strip_alias, walk
from cepflow.schedule import Schedule

StartPolicy = Literal["once", "restart", "spawn", "group", "respawn"]

#: the synthetic event type a pattern's :class:`Clock` feeds it (never an input event)
CLOCK = "@clock"


class EsperError(Exception):
    """An Esper construct cepflow cannot lower, with its location."""

    def __init__(self, message: str, loc: ast.Loc = None) -> None:
        super().__init__(message)
        self.loc = loc


@dataclass(frozen=True)
class Clock:
    """A leading ``timer:interval(duration)`` or ``timer:at(schedule)`` (and ``not
    forbidden``): true ``duration`` ms after it starts — at the schedule's next instant after
    it starts (cepflow.schedule) — unless a ``forbidden`` event (untagged atoms, or an or of
    them) came."""

    duration: float
    forbidden: ast.Pattern | None = None
    loc: ast.Loc = None
    schedule: Schedule | None = None


@dataclass(frozen=True)
class EsperPlan:
    """How instances of a lowered pattern begin (see module docstring)."""

    start: StartPolicy
    distinct: tuple[ast.Expr, ...] = ()
    expiry: float | None = None
    #: the pattern as written (the lowered one has variables like ``a1.speed``)
    text: str = ""
    #: the leading interval of a pattern that starts at the statement's start
    clock: Clock | None = None
    #: tags collected without bound under ``select *`` (``a=A until D``): the complex event
    #: carries ``a[k].<field>`` for as many events as each took (Automaton.spread)
    spread: tuple[str, ...] = ()
    #: start policy "restart" of ``every (G) and not N`` (:func:`_every_group_not`): an
    #: instance that a ``not`` ended ends the pattern for good; the next begins only after one
    #: completed
    final: bool = False
    #: start policy "respawn": the fresh instances each result starts (see :func:`_respawn`)
    respawn: int = 0


def is_esper(decl: ast.ComplexEventDecl) -> bool:
    """Does ``decl`` use Esper's pattern semantics (context, ``every``, aliases, select)?"""
    if decl.context == "esper" or decl.select is not None:
        return True
    return any(isinstance(n, ast.Every | ast.Interval | ast.At | ast.Until)
               or (isinstance(n, ast.Atom) and n.alias is not None) for n in walk(decl.body))


def _fol(items: list[ast.Pattern]) -> ast.Pattern:
    out = items[0]
    for it in items[1:]:
        out = ast.Fol(out, it, it.loc)
    return out


def _single(p: ast.Pattern) -> bool:
    """One event: an atom or an or of atoms (one step of the automaton)."""
    return all(isinstance(i, ast.Atom) for i in or_items(p))


def _every_or(p: ast.Pattern) -> ast.Pattern:
    """``every X or every Y`` (single events, no distinct keys) is ``every (X or Y)`` — but
    for an event that fits several operands: each of Esper's every nodes reports it
    (EvalOrStateNode passes each child's result on), where ``every (X or Y)``'s or reports
    the first only. When two operands share an event type the or is marked ``each``
    (Position.each: each operand the event fits starts its own instance)."""
    items = or_items(p)
    if (len(items) > 1 and all(isinstance(i, ast.Every) and not i.distinct
                               and i.expiry is None and _single(i.pattern) for i in items)):
        types = [_types(i) for i in items]
        each = len(set().union(*types)) < sum(map(len, types))
        inner = items[0].pattern  # type: ignore[union-attr]
        for i in items[1:]:
            inner = ast.Or(inner, i.pattern, p.loc, each=each)  # type: ignore[union-attr]
        return ast.Every(inner, loc=items[0].loc)
    return p


def _start_policy(body: ast.Pattern) -> tuple[ast.Pattern, EsperPlan]:
    """Strip the ``every`` that decides the start policy; reject the others."""
    if isinstance(body, ast.Window):  # (every a = A -> P)[Δ]: the window stays around it all
        inner, plan = _start_policy(body.pattern)
        if plan.start == "group" and (plan.distinct or plan.expiry is not None):
            raise EsperError("every-distinct on a group inside a window is not supported: "
                             "the window can end the group, and Esper forgets the seen keys "
                             "then", body.loc)
        return replace(body, pattern=inner), plan
    body = _every_or(body)
    if isinstance(body, ast.Fol):
        items = fol_items(body)
        body = _fol([_every_or(items[0]), *items[1:]])
    final = _every_group_not(body)
    if final is not None:
        return final, EsperPlan("restart", final=True)
    if isinstance(body, ast.Every):
        respawn = _respawn(body)
        if respawn is not None:
            return respawn
        inner = body.pattern
        single = _single(inner)
        # every-distinct around a sequence restarts like every (…) and drops a match whose
        # keys were seen (Esper's EvalEveryDistinctStateNode: the keys of each result)
        if not single:
            _distinct_ends(body)
        return inner, EsperPlan("spawn" if single else "restart", body.distinct, body.expiry)
    items = fol_items(body)
    if len(items) > 1 and isinstance(items[0], ast.Window):
        # (every x = X -> P where timer:within(Δ)) -> Q: the guard of P starts at X (the EPL
        # reader made it the window (X -> P)[Δ]), and every x = X is still the start policy
        head, plan = _start_policy(items[0])
        if plan.start == "spawn":
            return _fol([head, *items[1:]]), plan
    if len(items) > 1 and isinstance(items[0], ast.Every):
        first = items[0]
        if _timer_head(first.pattern):  # every timer:interval(Δ) -> P: a new P every Δ
            if first.distinct or first.expiry is not None:
                raise EsperError("every-distinct on timer:interval has no tagged event to "
                                 "compare; write every timer:interval(…)", first.loc)
            return _fol([first.pattern, *items[1:]]), EsperPlan("spawn")
        if not _single(first.pattern):
            # every (G) -> R: the group restarts, each completion begins an instance of R
            _group_distinct(first)
            return _fol([ast.Every(first.pattern, loc=first.loc), *items[1:]]), EsperPlan(
                "group", first.distinct, first.expiry)
        return _fol([first.pattern, *items[1:]]), EsperPlan("spawn", first.distinct,
                                                           first.expiry)
    return body, EsperPlan("once")


def _every_group_not(body: ast.Pattern) -> ast.Pattern | None:
    """``every (G) and not N …`` begun at the statement's start (the EPL reader's
    ``timer:interval(0) -> (…)``), G a followed-by of events, as ``timer:interval(0) -> (G
    and not N …)`` under the start policy restart with :attr:`EsperPlan.final`; None for any
    other body.
    Esper (EvalAndStateNode over EvalEveryStateNode and EvalNotStateNode): the every restarts G
    after each result, the ``and`` pairs each result with the not's report at its start, and
    the first ``N`` after the start makes the ``and`` — and the pattern — false for good. So
    the instances are restart's, a ``not`` in each of their gaps (_Lowering.and_not), one
    begun at once after each completion (the zero interval: it sees every later event), and
    none after an instance that an ``N`` ended."""
    items = fol_items(body)
    if (len(items) != 2 or not isinstance(items[0], ast.Interval) or items[0].duration != 0
            or not isinstance(items[1], ast.And)):
        return None
    ops = and_items(items[1])
    every = [o for o in ops if not isinstance(o, ast.Not)]
    if (len(every) != 1 or len(ops) == 1 or not isinstance(every[0], ast.Every)
            or every[0].distinct or every[0].expiry is not None
            or not isinstance(every[0].pattern, ast.Fol)
            or not all(isinstance(i, ast.Atom) for i in fol_items(every[0].pattern))):
        return None
    group = every[0].pattern
    out: ast.Pattern = group
    for o in ops:
        if isinstance(o, ast.Not):
            out = ast.And(out, o, items[1].loc)
    return _fol([items[0], out])


def _respawning(p: ast.Every) -> tuple[ast.Pattern | None, ast.Pattern, int]:
    """``every (…)`` as the zero interval the EPL reader put in front (None if none), the
    pattern under its stacked ``every`` s, and their number."""
    zero = None
    inner = p.pattern
    items = fol_items(inner)
    if len(items) > 1 and isinstance(items[0], ast.Interval) and items[0].duration == 0:
        zero, inner = items[0], _fol(items[1:])
    stacked = 1
    while isinstance(inner, ast.Every) and not inner.distinct and inner.expiry is None:
        stacked += 1
        inner = inner.pattern
    return zero, inner, stacked


def respawns(p: ast.Pattern) -> bool:
    """Is ``p`` ``every (…)`` around a pattern with ``every`` inside, or nested ``every``
    (``every (every b=B)``, ``every (b=B and every d=D)``, ``every (a=A -> every b=B)``)? Such
    a pattern starts at the statement's start (statement_start) with the policy
    *respawn* (:func:`_respawn`)."""
    if not isinstance(p, ast.Every) or p.distinct or p.expiry is not None:
        return False
    _, core, stacked = _respawning(p)
    return (stacked > 1 and _single(core)) or _events_under_every(core)


def _respawn(p: ast.Every) -> tuple[ast.Pattern, EsperPlan] | None:
    """``every (P)`` where ``P`` does not end at its result — an ``every`` inside it, or
    ``every`` stacked on ``every`` —, as the start policy *respawn* (docs/esper.md, "every
    around every"). Esper's EvalEveryStateNode starts a fresh instance of its child at each
    result of a child that is not a bare filter, and keeps the child that gave it running
    unless that child ended: so each result of an instance of the core pattern starts one
    fresh instance per stacked ``every`` above a non-filter (``every (every b=B)``: one, its
    inner ``every`` being the core's fork; ``every (every (every b=B))``: two), and the
    instance itself goes on as its inner ``every`` says. The first instance begins at the
    statement's start (the EPL reader's zero interval). Only these cores are taken
    (:func:`respawns`); any other ``every (…)`` with ``every`` inside keeps its refusal — a
    core that can end without a result (a guard, ``not`` inside: Esper restarts it then, which
    this policy does not model), a group under nested every — or its old reading (an
    ``until`` over ``every``, which quits at its end: a restart). Without the zero interval
    (cepflow syntax) the form is refused here."""
    if not respawns(p):
        return None
    zero, core, stacked = _respawning(p)
    if zero is None:
        raise EsperError(_EVERY_RESPAWN + "; it runs from the statement's start: write every "
                         "(timer:interval(0) -> …) (the EPL reader does)", p.loc)
    if _single(core):  # every^k over one event: the innermost every is the core's fork
        body: ast.Pattern = ast.Every(core, loc=core.loc)
        fresh = stacked - 1
    else:
        body, fresh = core, stacked
    return _fol([zero, body]), EsperPlan("respawn", respawn=fresh)


def _events_under_every(core: ast.Pattern) -> bool:
    """An ``and``, ``or`` or followed-by of events, some under ``every`` (and nothing else):
    the cores :func:`_respawn` takes besides one event."""
    if isinstance(core, ast.And):
        ops = and_items(core)
    elif isinstance(core, ast.Or) and not core.choice:
        ops = or_items(core)
    elif isinstance(core, ast.Fol):
        ops = fol_items(core)
    else:
        return False
    plain = [o.pattern if isinstance(o, ast.Every) and not o.distinct and o.expiry is None
             else o for o in ops]
    return (any(isinstance(o, ast.Every) for o in ops)
            and all(isinstance(o, ast.Atom) for o in plain))


def _group_distinct(head: ast.Every) -> None:
    """every-distinct on a group is taken when its keys read the group's tags (the keys of
    each result of the group) and the group cannot end without matching: Esper
    (EvalEveryDistinctStateNode.evaluateFalse) restarts such a group with no seen keys, which
    the statement-wide keys of cepflow's every-distinct do not model."""
    if not head.distinct and head.expiry is None:
        return
    tags = {a.alias for a in atoms(head.pattern)}
    for d in head.distinct:
        for n in names(d):
            tag = (indexed(n.name) or (n.name,))[0]
            if n.path and tag not in tags:
                raise EsperError(f"every-distinct on a group reads the group's tags; "
                                 f"'{tag}' is not one of them (the keys are the group's "
                                 "result's, as Esper's)", n.loc or head.loc)
    _distinct_ends(head)


def _distinct_ends(head: ast.Every) -> None:
    """every-distinct around a sub-pattern that can end without matching (a guard, ``not``,
    ``until`` or an interval inside it) is reported: Esper (EvalEveryDistinctStateNode.
    evaluateFalse) restarts it with no seen keys, which cepflow's statement-wide keys do not
    model (``every-distinct(k) (a=A where timer:within(Δ))`` matches a seen key again after
    a guard expired without an event)."""
    if not head.distinct and head.expiry is None:
        return
    for n in walk(head.pattern):
        if isinstance(n, ast.Window | ast.Not | ast.Until | ast.Interval | ast.At):
            raise EsperError("every-distinct on a group that can end without matching (a "
                             "window, not or until inside it) is not supported: Esper forgets "
                             "the seen keys when the group ends so", head.loc)


_START = ("at the start of a pattern the operator has nothing to begin from: cepflow starts an "
          "instance at its first event, Esper at the statement's start")


def _timer_head(p: ast.Pattern) -> bool:
    """``timer:interval(Δ)``, ``timer:at(…)`` or ``(… and not C …)`` of either: what a clock
    starts."""
    if isinstance(p, ast.Interval | ast.At):
        return True
    ops = and_items(p) if isinstance(p, ast.And) else []
    return (any(isinstance(o, ast.Interval | ast.At) for o in ops)
            and all(isinstance(o, ast.Interval | ast.At | ast.Not) for o in ops))


#: where timer:at runs (the clock of a pattern it begins); anywhere else it is reported
_AT_PLACES = ("timer:at is supported at the start of a pattern, which it begins at the "
              "statement's start: timer:at(…) [-> …], every timer:at(…) [-> …], every "
              "(timer:at(…) -> …), (timer:at(…) and not C) [-> …]; not after an event, "
              "inside 'and' / 'or' / until, or under a guard in the middle (not supported yet)")


def _clock_of(body: ast.Pattern) -> tuple[ast.Pattern, Clock | None]:
    """A pattern that starts with a timer (see :func:`_timer_head`), as the :class:`Clock` and
    the rest after the synthetic :data:`CLOCK` event; a window around the start (Esper's
    ``timer:interval(Δ) -> (P where timer:within(w))``) then starts with the clock's event."""
    items = fol_items(body)
    head = items[0]
    if isinstance(head, ast.Window) or (isinstance(head, ast.Every) and len(items) > 1):
        # (every ((timer:interval(0) -> G) where …) -> R: the group the clock begins)
        inner, clock = _clock_of(head.pattern)
        if clock is None:
            return body, None
        return _fol([replace(head, pattern=inner), *items[1:]]), clock
    if not _timer_head(head):
        return body, None
    if isinstance(head, ast.Interval | ast.At):
        clock = _clock(head, None)
    else:
        ops = and_items(head)
        timers = [o for o in ops if isinstance(o, ast.Interval | ast.At)]
        negs = [o for o in ops if isinstance(o, ast.Not)]
        if len(timers) > 1 or len(negs) + 1 != len(ops):
            raise EsperError("timer:interval and timer:at inside 'and' are supported as "
                             "(timer:interval(Δ) and not C), (timer:at(…) and not C) only",
                             timers[0].loc)
        clock = _clock(timers[0], _forbidden(negs).pattern)
    return _fol([ast.Atom(CLOCK, (), None, None, head.loc), *items[1:]]), clock


def _clock(t: ast.Interval | ast.At, forbidden: ast.Pattern | None) -> Clock:
    """The :class:`Clock` of a leading timer (a timer:at's: its schedule, no duration)."""
    if isinstance(t, ast.At):
        return Clock(0.0, forbidden, t.loc, t.schedule)
    return Clock(t.duration, forbidden, t.loc)


class _Lowering:
    """``not``, ``until``, ``timer:interval`` and inner ``every`` onto the plain algebra (see
    the module docstring); ``head`` says that nothing precedes the node in its pattern."""

    def __init__(self, start: StartPolicy, repeating: ast.Pattern | None = None,
                 whole: ast.Pattern | None = None) -> None:
        self.start = start
        #: the and / or with every x = X operands this pattern is (see :func:`_repeating`)
        self.repeating = repeating
        #: the whole pattern being lowered (what may lower to no step: :meth:`seq`)
        self.whole = whole

    def pattern(self, p: ast.Pattern, head: bool) -> ast.Pattern:
        if isinstance(p, ast.Atom):
            return p
        if isinstance(p, ast.Fol):
            return self.seq(p, self.chain(fol_items(p), head))
        if isinstance(p, ast.Window):
            low = replace(p, pattern=self.pattern(p.pattern, head))
            if p.after and fol_items(low.pattern)[0] != self.pattern(fol_items(p.pattern)[0],
                                                                    head):
                # (the zone begins after the first item: it must stay one item)
                raise EsperError("a guard after this step is not supported: its lowering "
                                 "is not one step", p.loc)
            return low
        if isinstance(p, ast.Or):
            if p is self.repeating:  # (every x = X or …) from the statement's start
                return _every_events(p)
            if _or_timer(p) or _beside(p):  # (beside: reported, no event to start from)
                return _fol(self.chain([p], head))
            return replace(p, left=self.pattern(p.left, head),
                           right=self.pattern(p.right, head))
        if isinstance(p, ast.And):
            if _special(p):
                return _fol(self.chain([p], head))
            if p is self.repeating:  # (every x = X and …) from the statement's start
                return _every_events(p)
            if any(isinstance(n, ast.Every) for n in walk(p)):
                if self.start in ("restart", "respawn"):
                    raise EsperError(_EVERY_RESPAWN, p.loc)
                for o in and_items(p):
                    if isinstance(o, ast.Window) and any(isinstance(n, ast.Every)
                                                         for n in walk(o.pattern)):
                        raise EsperError(_GUARDED_EVERY, o.loc)
                raise EsperError(_EVERY_OPERAND.format("and"), p.loc)
            return ast.And(self.pattern(p.left, head), self.pattern(p.right, head), p.loc)
        if isinstance(p, ast.Mult):
            return replace(p, pattern=self.pattern(p.pattern, head))
        if isinstance(p, ast.Every):
            if head and _timer_head(p.pattern):
                raise EsperError("every timer:interval(…) is supported as the start of a "
                                 "pattern (every timer:interval(Δ) [-> …], every "
                                 "(timer:interval(Δ) and not C) [-> …]), not inside "
                                 "'or' or 'and'", p.loc)
            if head:  # a leading every the start policy did not take
                raise EsperError("every in front of a group followed by more pattern is "
                                 "supported at the start of the whole pattern only (not inside "
                                 "a group, a window before more pattern, or, and)", p.loc)
            return self.inner_every(p)
        if isinstance(p, ast.Until | ast.Interval | ast.Not):
            return self.seq(p, self.chain([p], head))
        if isinstance(p, ast.At):
            raise EsperError(_AT_PLACES, p.loc)
        raise EsperError(f"unsupported pattern node {type(p).__name__}", None)

    def seq(self, p: ast.Pattern, items: list[ast.Pattern]) -> ast.Pattern:
        """The lowered steps of ``p`` as one pattern. No step is left where ``p`` is only
        untils ending at ``not`` (true as they start, :meth:`until_not`): the whole pattern
        is then never true after its start (:func:`_never`); elsewhere (an operand of ``and``
        / ``or``, under a guard) it is reported."""
        if items:
            return _fol(items)
        if p is not self.whole:
            raise EsperError("an until ending at 'not' is true as it starts: it is supported "
                             "in a followed-by (A -> (B until not C) -> D) and as the whole "
                             "pattern, not here", p.loc)
        return _never(p)

    @staticmethod
    def group(head: ast.Every, rest: list[ast.Pattern]) -> ast.Every:
        """The group of ``every (G) -> R`` lowered as ``every (G)`` alone would be (one
        instance at a time: no every inside); the every stays around it, the compiler's mark
        of where the group ends (compiler.automata, Automaton.group)."""
        if rest and isinstance(rest[0], ast.Window):
            raise EsperError("a guard on what follows a group (every (…) -> (P where "
                             "timer:within(…)), every (…) -> (P)[Δ]) is not supported: Esper "
                             "starts it when the group completes; put the guard on the group "
                             "or around the whole pattern", rest[0].loc)
        return replace(head, pattern=_Lowering("restart").pattern(head.pattern, head=True))

    def inner_every(self, p: ast.Every) -> ast.Pattern:
        if p.distinct or p.expiry is not None:
            raise EsperError("every-distinct inside a pattern is not supported; put it on the "
                             "first event (every-distinct(k) a = A -> ...)", p.loc)
        if self.start == "restart":
            raise EsperError("every inside every (...) is not supported here; it is on one "
                             "event under nested every (every (every b = B)) and on events of "
                             "an and / or / followed-by under every (every (a = A -> every b = "
                             "B)), with nothing else inside", p.loc)
        inner = p.pattern
        if (isinstance(inner, ast.Window) and inner.kind == "within" and inner.duration > 0
                and _single(inner.pattern)):
            # every (x = X where timer:within(Δ)): Esper's every restarts the guarded event
            # when it is taken and when the guard expires (EvalGuardStateNode.guardQuit is
            # restartable), at that instant — no time is left uncovered, each instance takes
            # one event: every x = X (docs/esper.md, "every inside a pattern")
            return replace(p, pattern=inner.pattern)
        if isinstance(inner, ast.Fol) and all(_single(i) for i in fol_items(inner)):
            # A -> every (B -> C): the group restarts each time it completes (the automaton
            # builder takes it in the pattern's own followed-by: compiler.automata build_loop)
            return p
        if not _single(p.pattern):
            raise EsperError("every on a group inside a pattern is supported on a followed-by "
                             "of events or alternatives of events (A -> every (B -> (C or "
                             "D))); every may stand on one event (A -> every B)", p.loc)
        return p

    def chain(self, items: list[ast.Pattern], head: bool) -> list[ast.Pattern]:
        out: list[ast.Pattern] = []
        for i, it in enumerate(items):
            first = head and i == 0
            last = i == len(items) - 1
            if first and self.start == "group" and isinstance(it, ast.Every):
                out.append(self.group(it, items[1:]))
            elif isinstance(it, ast.And) and _special(it):
                self.and_not(it, out, first, last)
            elif isinstance(it, ast.Until):
                self.until(it, out, first, last)
            elif isinstance(it, ast.Interval):
                self.interval(it, None, out, first, last)
            elif isinstance(it, ast.Or) and _or_timer(it):
                self.or_interval(it, out, first, last)
            elif isinstance(it, ast.Or) and _beside(it):
                self.beside(it, out)
            elif (isinstance(it, ast.Window) and it.kind == "within" and out
                  and len(fol_items(it.pattern)) > 1 and _timer_head(fol_items(it.pattern)[0])):
                # A -> timer:interval(Δ) -> (P where timer:within(w)): the guard starts when P
                # does, at the interval's end (guard_windows put the interval in front of P):
                # the window runs from the synthetic TIMER event on
                inner = fol_items(it.pattern)
                if any(isinstance(n, ast.At) for n in walk(inner[0])):
                    raise EsperError(_AT_PLACES, inner[0].loc)
                if isinstance(inner[0], ast.Interval):
                    self.interval(inner[0], None, out, False, False)
                else:
                    assert isinstance(inner[0], ast.And)
                    self.and_not(inner[0], out, False, False)
                begin = out.pop()
                out.append(replace(it, pattern=_fol([begin, *self.chain(inner[1:], False)])))
            elif isinstance(it, ast.Or) and _or_not(it):
                # A -> (X or not Y): the builder makes A's end report at once and wait for X
                # (compiler.automata, Automaton.reports; the EPL reader took it only there)
                if not last or not out or not all(
                        _single(o) for o in or_items(it) if not isinstance(o, ast.Not)):
                    raise EsperError("'X or not Y' is supported at the end of a pattern "
                                     "after an event, X one event (A -> (X or not Y))", it.loc)
                out.append(it)
            elif (isinstance(it, ast.Window) and out and isinstance(items[i - 1], ast.Every)
                  and not _single(items[i - 1].pattern)):
                raise EsperError("a guard on what follows every (…) inside a pattern (A -> every "
                                 "(B -> C) -> (D where timer:within(…))) is not supported: "
                                 "Esper starts it at each completion of the group", it.loc)
            elif isinstance(it, ast.Not) and first:
                raise EsperError(f"'not' {_START}; write A -> (B and not C)", it.loc)
            elif isinstance(it, ast.Not):  # cepflow syntax: VEPL's NOT in a gap (A -> NOT C -> B)
                out.append(it)
            else:
                out.append(self.pattern(it, first))
        return out

    def beside(self, p: ast.Or, out: list[ast.Pattern]) -> None:
        """Esper's ``or`` (EvalOrStateNode) starts its operands together and is true when the
        first of them is; an operand whose guard ends (EvalGuardStateNode.guardQuit) quits
        alone, and the or fails when all have. After the one event ``X`` it starts at
        (``X -> (P where timer:within(Δ) or Q)``, the statement's start: the clock's event)
        that is the alternatives ``(X -> P)[Δ]``, ``X -> Q``: ``X``'s event begins one run per
        operand, each under its own guard; the first to complete ends the partial match, and
        its tags are the match's (the others' are null, as Esper's). So run: an operand
        with a guard, a nested ``and`` (its product), a tag inside ``[n]`` (its events
        collected) — what the or's product (compiler.conjunction) cannot carry."""
        if not out or not isinstance(out[-1], ast.Atom):
            raise EsperError(_BESIDE, p.loc)
        anchor = out.pop()
        alt: ast.Pattern | None = None
        for o in or_items(p):
            _beside_operand(o)
            inner = o.pattern if is_guard(o) else o  # type: ignore[attr-defined]
            branch = _fol([anchor, self.pattern(inner, False)])
            if is_guard(o):
                branch = replace(o, pattern=branch)
            alt = branch if alt is None else ast.Or(alt, branch, p.loc, choice=True,
                                                    side=True)
        assert alt is not None
        out.append(alt)

    def and_not(self, p: ast.And, out: list[ast.Pattern], first: bool, last: bool) -> None:
        ops = and_items(p)
        negs = [o for o in ops if isinstance(o, ast.Not)]
        timers = [o for o in ops if isinstance(o, ast.Interval)]
        pos = [o for o in ops if not isinstance(o, ast.Not | ast.Interval)]
        if timers and pos:
            self.and_interval(p, timers, pos, negs, out, first, last)
            return
        if timers:
            if len(timers) > 1:
                raise EsperError("timer:interval inside 'and' is supported as "
                                 "(timer:interval(Δ) and not C) and (B and timer:interval(Δ))",
                                 timers[1].loc)
            self.interval(timers[0], negs, out, first, last)
            return
        if len(pos) != 1 or not negs:
            raise EsperError("'and' with 'not' is supported as (B and not C [and not D …]) "
                             "after an event", p.loc)
        if isinstance(pos[0], ast.Every) and not _single(pos[0].pattern):
            raise EsperError(_EVERY_GROUP_NOT, pos[0].loc)
        if first:
            raise EsperError(f"'(... and not ...)' {_START}; write A -> (B and not C)", p.loc)
        forbid = _forbidden(negs)
        for step in self.steps(self.pattern(pos[0], False)):
            out.extend([forbid, step])

    def and_interval(self, p: ast.And, timers: list[ast.Interval], pos: list[ast.Pattern],
                     negs: list[ast.Pattern], out: list[ast.Pattern], first: bool,
                     last: bool) -> None:
        """``A -> (B and timer:interval(Δ))`` at the end of a pattern: true when both are, at
        the later of B and A + Δ (EvalAndStateNode): the window ``(A -> (B and T))[Δ]`` in
        which a B waits for the deadline to complete and A's state steps on at the deadline
        to wait for B (compiler.automata builds both from the one ``and``)."""
        if (len(timers) > 1 or len(pos) > 1 or negs or not _single(pos[0]) or first or not out
                or not last):
            raise EsperError("timer:interval inside 'and' is supported as (timer:interval(Δ) "
                             "and not C) and, at the end of a pattern, as (B and "
                             "timer:interval(Δ)) with B one event", timers[0].loc)
        prev = _event_before(out, " inside 'and'", "(B and timer:interval(…))", timers[0].loc)
        t = timers[0]
        if t.duration == 0:  # fires as it starts: the and is B
            out.extend([prev, pos[0]])
            return
        out.append(ast.Window(ast.Fol(prev, ast.And(pos[0], t, p.loc), p.loc), t.duration,
                              "within", p.loc))

    def steps(self, p: ast.Pattern) -> list[ast.Pattern]:
        """The single-event steps of ``p`` (sequences, [n]) for a NOT before each."""
        out: list[ast.Pattern] = []
        for it in fol_items(p):
            if isinstance(it, ast.Mult) and isinstance(it.count, int):
                out.extend(self.steps(it.pattern) * it.count)
            elif _single(it) or (isinstance(it, ast.Every) and _single(it.pattern)):
                out.append(it)
            else:
                raise EsperError("'and not' around this operand is not supported (a sequence "
                                 "of single events is)", it.loc)
        return out

    def interval(self, t: ast.Interval, negs: list[ast.Pattern] | None,
                 out: list[ast.Pattern], first: bool, last: bool) -> None:
        """``A -> timer:interval(Δ)`` (``… and not C``): the timed zone ``(A -> T)[Δ]`` that
        completes at its deadline; with more pattern after it, the zone's end feeds the
        instance the synthetic :data:`TIMER` event the rest follows (its sub-pattern begins
        when the interval passed, as Esper's followed-by starts it then)."""
        if first or not out:
            raise EsperError("timer:interval is supported at the start of a pattern "
                             "(timer:interval(Δ) -> …, every timer:interval(Δ), "
                             "every (timer:interval(Δ) and not C)) and after one "
                             "event (A -> timer:interval(Δ) [-> …])", t.loc)
        prev = _event_before(out, "", "timer:interval(…)", t.loc)  # (or the TIMER event)
        if not last and t.duration == 0:
            # a zero interval fires as it starts (Esper), before any other event: what
            # follows begins at prev's event, and a not beside it forbids nothing
            out.append(prev)
            return
        tail: ast.Pattern = _forbidden(negs) if negs else t
        out.append(ast.Window(ast.Fol(prev, tail, t.loc), t.duration, "within", t.loc))
        if not last:
            out.append(ast.Atom(TIMER, (), None, None, t.loc))

    def or_interval(self, p: ast.Or, out: list[ast.Pattern], first: bool, last: bool) -> None:
        """``A -> (B or timer:interval(Δ))`` (single events beside the shortest interval): the
        window ``(A -> (B or T))[Δ]`` whose deadline completes the instance with A's tags
        alone (Esper: B's are null) unless a B came first — timers fire before the events of
        their instant, so a B at A + Δ comes too late."""
        ops = or_items(p)
        timers = [o for o in ops if isinstance(o, ast.Interval)]
        shortest = min(timers, key=lambda t: t.duration)
        rest = [o for o in ops if not isinstance(o, ast.Interval)]
        if not rest:  # intervals only: the shortest ends the or
            self.interval(shortest, None, out, first, last)
            return
        events = rest[0]
        for o in rest[1:]:
            events = ast.Or(events, o, p.loc)
        if not _single(events) or first or not out or not last:
            raise EsperError("timer:interval inside 'or' is supported beside single events at "
                             "the end of a pattern (A -> (B or timer:interval(Δ)), "
                             "b=B or timer:interval(Δ))", shortest.loc)
        prev = _event_before(out, " inside 'or'", "(B or timer:interval(…))", shortest.loc)
        out.append(ast.Window(ast.Fol(prev, ast.Or(events, shortest, p.loc), p.loc),
                              shortest.duration, "within", p.loc))

    def until(self, u: ast.Until, out: list[ast.Pattern], first: bool, last: bool) -> None:
        low = u.low or 0
        end_at = _until_end(u.until)
        if isinstance(end_at, ast.Interval):
            self.until_timer(u, end_at, out, first, last)
            return
        if isinstance(end_at, ast.Not):
            self.until_not(u, out)
            return
        silence = _silence(end_at)
        if silence is not None:
            self.until_silence(u, silence, out, first, last)
            return
        u = replace(u, until=end_at)
        if not _single(u.until):
            raise EsperError("until is supported with a single event (or alternatives of "
                             "events), timer:interval(Δ) or 'not' after it, not "
                             f"{_UNTIL_END.get(type(u.until), 'a group')}: [m:n] A until B",
                             u.until.loc or u.loc)
        rep = self.repeated(u.pattern, u.loc)
        if _single(rep):
            # a single-event operand: one instance takes every operand event
            # (EvalMatchUntilStateNode restarts its operand at each result) — a state of its
            # own does not also keep a run that skipped one (Position.until, _try_edges)
            rep, end = _one_instance(rep, u.until)
        else:  # a group: the instance ends for every run when one run leaves it
            rep, end = _one_group(rep, u.until)
        steps = _steps(rep)
        if low > 0 and steps is None:
            raise EsperError("a lower bound on until over a nested until is not supported "
                             "(Esper ends the whole until when an inner one ends before its "
                             "operand matched): [:n] or no bound", u.loc)
        if first and low > 0 and self.start != "restart":
            raise EsperError(f"'[{low}…] … until' {_START}, where a '{_name(u.until)}' before "
                             "the first repetition ends it; write every (…) around it or put "
                             "an event before it", u.loc)
        stop = ast.Not(_untagged(u.until), u.loc)
        items: list[ast.Pattern] = []
        for k in range(low):  # (a NOT before each step of the first m: an end there is false)
            for j, step in enumerate(steps or ()):
                if not (first and k == 0 and j == 0):
                    items.append(stop)
                items.append(step)
        if u.high is not None and u.high == low:
            if low == 0:
                raise EsperError("[0] repeats nothing", u.loc)
            out.extend(items)
            return
        if u.high is None:  # any number more, kept greedily (the longest run is reported)
            items.append(ast.Mult(rep, "*", u.loc))
            items.append(end)
        else:
            tail: ast.Pattern = end
            for _ in range(u.high - low):
                tail = ast.Or(end, ast.Fol(rep, tail, u.loc), u.loc, choice=True)
            items.append(tail)
        out.extend(items)

    def until_timer(self, u: ast.Until, t: ast.Interval, out: list[ast.Pattern], first: bool,
                    last: bool) -> None:
        """``[m:] P until timer:interval(Δ)`` (``P`` one event, or alternatives of events,
        ``every`` on those): Esper's EvalMatchUntilStateNode starts the timer first and then
        its operand, collects each ``P`` and turns true when the timer fires — with what it
        collected when that is at least ``m``, else false. After the event ``X`` it starts at
        (the statement's start: the zero interval's clock event, statement_start) that is the
        timed zone ``(X -> P{m} -> P* -> T)[Δ]`` whose deadline completes the runs past the
        m-th ``P`` (Zone.timer_accept), one run taking every ``P`` (the operand's atoms marked
        as one until's: CompiledPattern.greedy); more pattern after it follows the synthetic
        TIMER event, as after ``X -> timer:interval(Δ)``. ``[n] P until timer:interval(Δ)`` is
        true at the n-th ``P`` before the deadline: ``(X -> P{n})[Δ]``. A ``P`` at the deadline
        comes too late (timers fire before the events of their instant, as Esper's clock
        fires the timer before it delivers the event)."""
        low = u.low or 0
        rep = _unwrapped(u.pattern)
        if not _single(rep):
            raise EsperError("until ending at timer:interval repeats a single event (or "
                             "alternatives of events, every on those), not a group",
                             u.pattern.loc or u.loc)
        if u.high is not None and u.high != low:
            raise EsperError("an upper bound on until ending at timer:interval is not "
                             "supported: [n] (true at the n-th), [m:] or no bound", u.loc)
        if u.high == 0:
            raise EsperError("[0] repeats nothing", u.loc)
        if t.duration <= 0:
            raise EsperError("until ending at timer:interval(0) ends as it starts: write the "
                             "pattern without it", t.loc)
        if first or not out:
            raise EsperError("until ending at timer:interval is supported after one event "
                             "(A -> (b=B until timer:interval(Δ))) and at the start of the "
                             "pattern (the EPL reader starts it at the statement's start)",
                             u.loc)
        prev = _event_before(out, " ending an until", "(b=B until timer:interval(…))", t.loc)
        rep, _ = _one_instance(rep, rep)
        items: list[ast.Pattern] = [prev, *[rep] * low]
        if u.high is not None:  # [n]: true at the n-th, false at the deadline before it
            out.append(ast.Window(_fol(items), t.duration, "within", u.loc))
            return
        _timed_end(out, [*items, ast.Mult(rep, "*", u.loc), t], t, u.loc, last)

    def until_silence(self, u: ast.Until, silence: tuple[ast.Interval, ast.Pattern],
                      out: list[ast.Pattern], first: bool, last: bool) -> None:
        """``P until every (timer:interval(Δ) and not X)``, ``X`` the operand ``P`` untagged
        (one event, or alternatives of events): the end is started first, its ``and`` turns
        false at each ``X`` (EvalNotStateNode) and EvalEveryStateNode starts it again then —
        a new interval from that ``X`` (its new ``not`` does not see the ``X`` that started
        it); the until ends when an interval passes without an ``X``: Δ after the later of
        its start and its last ``P``, every ``P`` collected. After the event ``Y`` it starts
        at (the statement's start: statement_start's clock event) that is the timed zone
        ``(Y -> P* -> T)[Δ]`` whose every step after ``Y`` starts the zone again
        (ast.Window.slide), its deadline completing the run (as :meth:`until_timer`); one
        run takes every ``P`` (the operand's atoms marked as one until's)."""
        t, forbidden = silence
        rep = _unwrapped(u.pattern)
        if not _single(rep) or _text(_untagged(rep)) != _text(forbidden):
            raise EsperError("until ending at every (timer:interval(Δ) and not X) is supported "
                             "when X is the operand, one event untagged (a=A until every "
                             "(timer:interval(Δ) and not A)); not here", u.until.loc or u.loc)
        if u.low or u.high is not None:
            raise EsperError("a bound on until ending at every (timer:interval(Δ) and not …) "
                             "is not supported: write it without", u.loc)
        if t.duration <= 0 or first or not out:
            raise EsperError("until ending at every (timer:interval(Δ) and not X) is supported "
                             "after one event and at the start of the pattern, Δ > 0", u.loc)
        prev = _event_before(out, " ending an until", "(b=B until every (timer:interval(…) and "
                             "not B))", t.loc)
        rep, _ = _one_instance(rep, rep)
        _timed_end(out, [prev, ast.Mult(rep, "*", u.loc), t], t, u.loc, last, slide=True)

    def until_not(self, u: ast.Until, out: list[ast.Pattern]) -> None:
        """``P until not Q``: Esper's EvalMatchUntilStateNode starts its end first, and a
        ``not`` (EvalNotStateNode) is true as it starts, so the until quits its operand
        before starting it and is true at once with nothing collected: in a pattern it is
        no step (``A -> (B until not C) -> D`` is ``A -> D``); alone it is true only as the
        statement starts, which Esper delivers to no listener (PatternTestHarness: a pattern
        true at its start gives no output) — :func:`_never`. Bounds and tags in ``P`` are
        reported (the bounds are read only after the end started; nothing is ever
        collected)."""
        if u.low or u.high is not None:
            raise EsperError("a bound on until ending at 'not' is not supported: the until is "
                             "true as it starts, with nothing repeated; write it without",
                             u.loc)
        if any(a.alias is not None for a in atoms(u.pattern)):
            raise EsperError("a tag in the operand of an until ending at 'not' is not "
                             "supported: the until is true as it starts and never takes an "
                             "event; write the operand without tags", u.pattern.loc or u.loc)
        del out  # true at once: no step

    def repeated(self, p: ast.Pattern, loc: ast.Loc) -> ast.Pattern:
        """The repeated operand of an until, lowered: a single event (or alternatives of
        events); ``[k] A``; ``every`` on either, which is the same operand (EvalEveryStateNode
        starts its operand again when it is true — a filter stays active —, as the until
        itself does: EvalMatchUntilStateNode); a nested ``A until B`` without a lower bound
        (it cannot end false), its own operands so. Anything else is reported."""
        p = _unwrapped(p)
        if _single(p):
            return p
        if isinstance(p, ast.Mult) and isinstance(p.count, int) and _single(p.pattern):
            return p
        if isinstance(p, ast.Until) and not p.low and not isinstance(p.pattern, ast.Until):
            if _types(p.pattern) & _types(p.until):
                raise EsperError("a nested until whose operand and end can take the same event "
                                 "is not supported (Esper's inner until takes it as its end; "
                                 "give them different event types)", p.loc or loc)
            inner: list[ast.Pattern] = []
            self.until(p, inner, False, False)
            return _fol(inner)
        raise EsperError("until repeats a single event (or alternatives of events), [k] of "
                         "one, every on those, or a nested 'A until B' without a lower bound; "
                         "not this group", p.loc or loc)


#: what an until's end may not be, by node type (the message names it)
_UNTIL_END: dict[type, str] = {
    ast.Every: "every (…) around a pattern that can end false, which Esper's every restarts "
               "(every (timer:interval(Δ) and not A): Δ without an A since the start or the "
               "last A); every on one event or on timer:interval(Δ) is supported",
    ast.At: "timer:at (an end at a time: not supported)",
    ast.Fol: "a sequence", ast.And: "'and'", ast.Window: "a guard"}


def _timed_end(out: list[ast.Pattern], items: list[ast.Pattern], t: ast.Interval,
               loc: ast.Loc, last: bool, slide: bool = False) -> None:
    """An until ending at ``t``: its steps ``items`` as the timed zone whose deadline
    completes it, then — with more pattern after it — the synthetic TIMER event the rest
    follows (as after ``X -> timer:interval(Δ)``)."""
    out.append(ast.Window(_fol(items), t.duration, "within", loc, slide=slide))
    if not last:
        out.append(ast.Atom(TIMER, (), None, None, t.loc))


def _until_end(p: ast.Pattern) -> ast.Pattern:
    """An until's end with ``every`` around one event or ``timer:interval`` taken off: the
    until quits at its end's first result (EvalMatchUntilStateNode), and EvalEveryStateNode
    reports its operand's first result as it comes; an operand that cannot end false (one
    event, an interval) is never restarted before it, so ``every X`` ends the until where
    ``X`` does."""
    while (isinstance(p, ast.Every) and not p.distinct and p.expiry is None
           and (_single(p.pattern) or isinstance(p.pattern, ast.Interval | ast.Every))):
        p = p.pattern
    return p


#: ids of the untils that run as one instance (ast.Atom.until), unique in a process
_UNTIL_IDS = count(1)


def _one_instance(rep: ast.Pattern, end: ast.Pattern) -> tuple[ast.Pattern, ast.Pattern]:
    """An until's single-event operand ``rep`` and its end (an atom or an or of atoms each),
    their atoms marked with a fresh until id: the automaton's states whose every edge is a
    step of that until take each operand event without keeping a run that skipped it
    (runtime.compiled ``CompiledPattern.greedy``) — Esper's one instance per until."""
    uid = next(_UNTIL_IDS)

    def mark(a: ast.Atom) -> ast.Atom:
        return replace(a, until=uid)

    def mark_end(a: ast.Atom) -> ast.Atom:
        return replace(a, until=uid, until_end=True)

    return map_atoms(rep, mark), map_atoms(end, mark_end)


def _one_group(rep: ast.Pattern, end: ast.Pattern) -> tuple[ast.Pattern, ast.Pattern]:
    """An until's group operand ``rep`` (``[k] A``, a lowered nested until) and its end, their
    atoms marked with a fresh until id (Position.group): a run that leaves the until's states
    ends its one instance, and the runs still inside, which skipped an operand event, end
    with it (Matcher._apply)."""
    gid = next(_UNTIL_IDS)

    def mark(a: ast.Atom) -> ast.Atom:
        return replace(a, group=(*a.group, gid))

    return map_atoms(rep, mark), map_atoms(end, mark)


def _silence(end: ast.Pattern) -> tuple[ast.Interval, ast.Pattern] | None:
    """An until's end ``every (timer:interval(Δ) and not X)`` as the interval and ``X`` (an
    atom or an or of atoms: ``not X and not Y`` as ``X or Y``); else None."""
    if not (isinstance(end, ast.Every) and not end.distinct and end.expiry is None
            and isinstance(end.pattern, ast.And)):
        return None
    ops = and_items(end.pattern)
    timers = [o for o in ops if isinstance(o, ast.Interval)]
    negs = [o for o in ops if isinstance(o, ast.Not)]
    if len(timers) != 1 or not negs or len(timers) + len(negs) != len(ops) or not all(
            _single(n.pattern) for n in negs):  # type: ignore[attr-defined]
        return None
    return timers[0], _forbidden(negs).pattern


def _text(p: ast.Pattern) -> str:
    """``p`` as cepflow prints it (equal patterns print alike, wherever they were written)."""
    from cepflow.language.printer import format_pattern

    return format_pattern(p)


def _never(p: ast.Pattern) -> ast.Pattern:
    """A pattern true only as the statement starts (only untils ending at ``not``), as one
    that never matches: its events, untagged, each with a filter that fails — Esper delivers
    no output for a pattern true at its start (PatternTestHarness), and once true without
    ``every`` it is over; ``every`` around it quits an operand true at its start
    (EvalEveryStateNode, as for ``every (X or not Y)``)."""
    dead = [replace(a, alias=None, where=ast.Const(False, loc=a.loc), until=0, group=())
            for u in walk(p) if isinstance(u, ast.Until) for a in atoms(u.pattern)]
    out = dead[0]
    for d in dead[1:]:
        out = ast.Or(out, d, p.loc)
    return out


def _types(p: ast.Pattern) -> set[str]:
    """The event types ``p``'s atoms take."""
    return {a.name for a in atoms(p)}


def _unwrapped(p: ast.Pattern) -> ast.Pattern:
    """An until's repeated operand without the plain ``every`` around it (the same operand:
    :meth:`_Lowering.repeated`)."""
    while isinstance(p, ast.Every) and not p.distinct and p.expiry is None:
        p = p.pattern
    return p


def _steps(p: ast.Pattern) -> list[ast.Pattern] | None:
    """The single-event steps of an until's lowered operand (``[k] A``: k of them), for a NOT
    before each; None for a nested until (no fixed steps)."""
    if _single(p):
        return [p]
    if isinstance(p, ast.Mult) and isinstance(p.count, int):
        return [p.pattern] * p.count
    return None


def _forbidden(negs: list[ast.Pattern]) -> ast.Not:
    """``not C and not D`` as one NOT over ``C or D`` (single events, untagged)."""
    inner: ast.Pattern | None = None
    for n in negs:
        assert isinstance(n, ast.Not)
        if not _single(n.pattern):
            raise EsperError("'not' over a sequence or group is not supported; declare it "
                             "as its own event and write not <that event>", n.loc)
        # a tag inside 'not' never binds (Esper leaves it null): the event is forbidden
        # as its untagged form, its filter reading its own fields bare
        forbidden = _untagged(n.pattern)
        inner = forbidden if inner is None else ast.Or(inner, forbidden, n.loc)
    assert inner is not None
    return ast.Not(inner, negs[0].loc)


def _event_before(out: list[ast.Pattern], where: str, form: str, loc: ast.Loc) -> ast.Pattern:
    """The lowered operand a ``timer:interval`` (``where`` it stands: inside an ``or`` / an
    ``and``) follows, taken off ``out``: one event (or alternatives of events, ``every`` on
    them, the end of an interval before it); a group is reported."""
    prev = out.pop()
    if not (_single(prev) or (isinstance(prev, ast.Every) and _single(prev.pattern))):
        raise EsperError(f"timer:interval{where} after a group is not supported; it may follow "
                         f"one event (A -> {form})", loc)
    return prev


def _or_not(p: ast.Or) -> bool:
    """Esper's ``X or not Y`` (epl.py ``or_p``): an or with a ``not`` operand."""
    return any(isinstance(o, ast.Not) for o in or_items(p))


def _or_timer(p: ast.Or) -> bool:
    """An ``or`` with a ``timer:interval`` operand (lowered by _Lowering.or_interval)."""
    return any(isinstance(o, ast.Interval) for o in or_items(p))


_EVERY_OPERAND = ("every inside '{}' is not supported here: it is on operands of one event, "
                  "in a pattern that is that and / or alone (every a = A and b = B, every a = "
                  "A or b = B: without every around it, nothing before or after it)")


_GUARDED_EVERY = ("every inside 'and' under a guard on its operand ((every (b=B -> c=C)) "
                  "where timer:within(Δ) and …) is not supported: Esper's and quits when that "
                  "guard ends, after every result the every gave; (every x = X) where "
                  "timer:within(Δ) with X one event is (the guard then ends the whole and), and "
                  "so is every x = X as an operand, with or without a guard on x")


_EVERY_GROUP_NOT = ("every on a group beside 'not' is supported as the whole pattern only "
                    "(every (b=B -> d=D) and not G, begun at the statement's start, the first "
                    "G ending it for good), with a followed-by of events as the group")


_EVERY_RESPAWN = ("every (…) around a pattern with every inside is supported when that "
                  "pattern is one event under nested every (every (every b = B)), or an and, "
                  "or or followed-by of events some under every (every (b = B and every d = "
                  "D), every (a = A -> every b = B)), not here")


_BESIDE = ("an 'or' with a guarded operand (P where timer:within(Δ) or Q), a nested 'and' or a "
           "tag inside a repetition as an operand is supported where the or starts at one "
           "event: right after one event (A -> (P or Q)), as the whole pattern or under every "
           "(…) around it")


def _beside(p: ast.Or) -> bool:
    """An ``or`` run as alternatives from the event it starts at (_Lowering.beside); one with
    a ``not``, a timer, ``every`` or ``until`` inside keeps its own lowering or report."""
    if p.choice or any(isinstance(n, ast.Not | ast.Interval | ast.Every | ast.Until)
                       for n in walk(p)):
        return False
    return any(
        is_guard(o) or isinstance(o, ast.And) or any(
            isinstance(n, ast.Mult) and any(a.alias is not None for a in atoms(n))
            for n in walk(o)) for o in or_items(p))


def _beside_operand(o: ast.Pattern) -> None:
    """Report an operand of such an ``or`` that its alternative cannot run as Esper's: one
    event, a sequence, ``[n]`` of those, an ``and`` of them (the product), each with a guard
    on the whole operand (or on the and's operands)."""
    inner = o.pattern if is_guard(o) else o  # type: ignore[attr-defined]
    ops = [x.pattern if is_guard(x) else x  # type: ignore[attr-defined]
           for x in and_items(inner)] if isinstance(inner, ast.And) else [inner]
    for x in ops:
        for n in walk(x):
            if not (isinstance(n, ast.Atom | ast.Fol) or (
                    isinstance(n, ast.Mult) and isinstance(n.count, int))):
                raise EsperError(f"{_name_of(n)} inside an operand of 'or' with a guard, a "
                                 "nested 'and' or a repeated tag is not supported (operands of "
                                 "events, sequences, [n] and 'and' of those are)", n.loc or o.loc)


def _name_of(n: ast.Pattern) -> str:
    return {ast.Not: "'not'", ast.Window: "a guard", ast.Every: "every", ast.Until: "until",
            ast.Interval: "timer:interval", ast.Or: "a nested 'or'", ast.And: "'and'",
            ast.Mult: "a repetition [m:n]"}.get(type(n), type(n).__name__)


def _every_event(o: ast.Pattern) -> ast.Atom | None:
    """``every x = X`` or ``every (x = X where timer:within(Δ))`` (the same: Esper restarts
    the guarded filter when it is taken and when the guard ends, _Lowering.inner_every): X."""
    if not isinstance(o, ast.Every) or o.distinct or o.expiry is not None:
        return None
    inner = o.pattern.pattern if is_guard(o.pattern) else o.pattern  # type: ignore[attr-defined]
    return inner if isinstance(inner, ast.Atom) else None


def _every_events(p: ast.And | ast.Or) -> ast.Pattern:
    """``p`` with each ``every (x = X where timer:within(Δ))`` operand as ``every x = X``."""
    ops = and_items(p) if isinstance(p, ast.And) else or_items(p)
    new = [replace(o, pattern=_every_event(o)) if isinstance(o, ast.Every) else o for o in ops]
    out = new[0]
    for o in new[1:]:
        out = type(p)(out, o, p.loc)
    return out


def _repeating(body: ast.Pattern, plan: EsperPlan, clock: Clock | None) -> ast.Pattern | None:
    """The ``and`` / ``or`` with ``every x = X`` operands that the whole pattern is, begun at
    the statement's start (the EPL reader's ``timer:interval(0) -> …``, see statement_start:
    the product's first state then exists before any event, so that an every operand can
    fork from it; an instance begun at its first event would have no state to keep waiting
    in). Esper's EvalAndStateNode and EvalOrStateNode keep such an operand reporting: the
    and pairs each of its results with the other operands' (the combinations), the or
    reports each of them until a once operand ends it. None when ``body`` is no such
    pattern (its every operands are then refused where they stand)."""
    while isinstance(body, ast.Window) and body.guard and body.kind == "within":
        body = body.pattern  # guards around it all (_guarded_operands)
    items = fol_items(body)
    if (plan.start not in ("once", "respawn") or clock is None or clock.duration != 0
            or clock.forbidden is not None or len(items) != 2):
        return None
    p = items[1]
    if isinstance(p, ast.And) and not _special(p):
        ops = and_items(p)
    elif isinstance(p, ast.Or) and not p.choice:
        ops = or_items(p)
    else:
        return None
    if not any(isinstance(o, ast.Every) for o in ops):
        return None
    tags = {a.alias for o in ops for a in atoms(o)}
    for o in ops:
        inner = _every_event(o) if isinstance(o, ast.Every) else o
        if not isinstance(inner, ast.Atom):
            return None
        for n in names(inner.where) if inner.where is not None else ():
            tag = (indexed(n.name) or (n.name,))[0]
            if n.path and tag in tags and tag != inner.alias:
                raise EsperError(f"an operand of every inside and / or that reads '{tag}' "
                                 "of another operand is not supported (Esper starts the "
                                 "operands at once: the tag is not there yet)", inner.loc)
    return p


def _special(p: ast.And) -> bool:
    """An ``and`` with a ``not`` or ``timer:interval`` operand (lowered, not expanded)."""
    return any(isinstance(o, ast.Not | ast.Interval) for o in and_items(p))


def _name(p: ast.Pattern) -> str:
    return " or ".join(a.name for a in or_items(p) if isinstance(a, ast.Atom))


def _untagged(p: ast.Pattern) -> ast.Pattern:
    """``b = B(b.x > 1)`` as the forbidden ``B(x > 1)`` (the tag's own fields made bare)."""
    if isinstance(p, ast.Or):
        return ast.Or(_untagged(p.left), _untagged(p.right), p.loc)
    assert isinstance(p, ast.Atom)
    if p.alias is None:
        return p
    where = None if p.where is None else strip_alias(p.where, p.alias)
    return ast.Atom(p.name, p.args, where, None, p.loc)


def guard_windows(p: ast.Pattern, top: bool = True) -> ast.Pattern:
    """Esper's guard ``X -> (P where timer:within(Δ))`` starts when ``P`` is activated, i.e.
    when ``X`` completed (EvalFollowedByStateNode starts its next child then, and
    EvalGuardStateNode its TimerWithinGuard with it): with ``X`` one event (or the timer a
    pattern starts with) that is the window ``(X -> P)[Δ]`` from ``X``'s event; with ``X`` a
    step of several events (:func:`_ends_at_event`) in the pattern's followed-by (``top``: not
    inside and / or / not / until / a repetition) it is that window begun at ``X``'s last
    event (ast.Window.after). Used by the EPL reader; in cepflow syntax a window means what it
    says."""
    if isinstance(p, ast.Window):
        p = _one_guard(p)
    if isinstance(p, ast.Fol):
        items = [guard_windows(i, top) for i in fol_items(p)]
        out: list[ast.Pattern] = [items[0]]
        for it in items[1:]:
            prev = out[-1]
            single = _single(prev) or (isinstance(prev, ast.Every) and (
                _single(prev.pattern) or _timer_head(prev.pattern) or (
                    _plain_guard(prev.pattern) and _single(prev.pattern.pattern)))) or (
                _timer_head(prev))  # a timer: its end is the clock's or the TIMER event
            # (every on a guarded event: each result is that event)
            guard = isinstance(it, ast.Window) and it.kind == "within"
            if guard and single:
                out[-1] = replace(it, pattern=ast.Fol(prev, it.pattern, it.loc))
            elif guard and it.most is None and not isinstance(prev, ast.Every):
                # (every (G) -> …: _Lowering.group reports it; a counting timer:withinmax:
                # _counted_places)
                # (an and's not in a guarded step before: in its gaps, inside that window)
                why = _ends_at_event(prev, lead=len(out) == 1,
                                     nots=isinstance(prev, ast.Window))
                inside = _ends_at_event(it.pattern, lead=False, nots=True)
                if top and why is None and inside is not None:
                    raise EsperError("a guard 'where timer:within(…)' after a step that is not "
                                     f"one event is supported around events, and, or, [n], "
                                     "followed-by, guards and 'and not' of events, not around "
                                     f"{inside.removeprefix('after ')}",
                                     it.loc or it.pattern.loc or p.loc)
                if top and why is None:
                    out[-1] = replace(it, pattern=ast.Fol(prev, it.pattern, it.loc),
                                      after=True)
                    continue
                # a window from P's own first event would read Esper's guard wrongly
                where = why or "inside and, or, not, until or a repetition"
                raise EsperError("a guard 'where timer:within(…)' after a step that is not one "
                                 f"event ({_name_of(prev)}) is supported in the pattern's "
                                 "followed-by after events, and, or, [n] and guarded steps "
                                 f"of those, not {where}: Esper starts it when that step "
                                 "completes", it.loc or it.pattern.loc or p.loc)
            else:
                out.append(it)
        return _fol(out)
    if isinstance(p, ast.Or | ast.And):
        return type(p)(guard_windows(p.left, False), guard_windows(p.right, False), p.loc)
    if isinstance(p, ast.Atom | ast.Interval | ast.At):
        return p
    if isinstance(p, ast.Until):
        return replace(p, pattern=guard_windows(p.pattern, False),
                       until=guard_windows(p.until, False))
    first = p.pattern if isinstance(p, ast.Mult) else None
    while isinstance(first, ast.Fol):
        first = fol_items(first)[0]
    if isinstance(first, ast.Window) and first.kind == "within" and first.most is None:
        # (read before as a window over each repetition's own events: ([2] (b=B where
        # timer:within(1 sec))) matched B's 1.5 s after the start; guards deeper inside
        # keep their own places' messages; a counting withinmax: _counted_places)
        raise EsperError("a guard inside a repetition ([n] (P where timer:within(Δ))) is not "
                         "supported: Esper starts each repetition's guard when the one before "
                         "completed (EvalMatchUntilStateNode restarts its operand then) and "
                         "the repetition is false when one guard ends; guard the repetition "
                         "(([n] P) where timer:within(Δ))", p.loc)
    return replace(p, pattern=guard_windows(p.pattern, top and isinstance(
        p, ast.Window | ast.Every)))


def _plain_guard(p: ast.Pattern) -> bool:
    return (isinstance(p, ast.Window) and p.guard and p.kind == "within" and p.most is None
            and not p.slide and not p.after)


def _one_guard(w: ast.Window) -> ast.Window:
    """A guard right around a guard (``(P where timer:within(a)) where timer:within(b)``) as
    one guard of the shorter duration: EvalGuardStateNode starts its child with itself, so
    both timers start at one instant and the first to fire quits both. (Kept nested, the
    outer one alone was moved in front of the step before it — ``X -> ((D where …) where
    …)`` as ``(X -> (D)[a])[b]`` — and the inner one spanned ``D`` alone: ``b`` counted.)"""
    while _plain_guard(w) and _plain_guard(w.pattern):
        inner = w.pattern
        assert isinstance(inner, ast.Window)
        short = inner if inner.duration <= w.duration else w
        w = replace(short, pattern=inner.pattern, whole=w.whole or inner.whole)
    return w


def _ends_at_event(x: ast.Pattern, lead: bool, nots: bool = False) -> str | None:
    """Why the step ``x`` before a guard cannot begin the guard at its last event (None: it
    can). Taken: what completes once, at an event, in one automaton run — events, ``and``
    and ``or`` of them (not an or run beside: :func:`_beside`), ``[n]`` (n ≥ 2),
    followed-by, guards (``within``, also begun after a step) of those; at the pattern's
    start (``lead``) also ``every`` on one event or the zero interval in front (the start
    policy and the statement start take them off). A ``not``, an interval, an until, an
    ``every`` inside would make ``x`` true without an event or more than once. With
    ``nots`` (the guarded pattern itself) also ``and not`` of single events (``(B and not
    C)``: compiler.automata's NOT in the gaps, inside the guard's zone)."""
    head = x
    while isinstance(head, ast.Window | ast.Fol):
        head = head.pattern if isinstance(head, ast.Window) else fol_items(head)[0]
    negs = {id(o) for n in walk(x) if nots and isinstance(n, ast.And) and _special(n)
            for o in and_items(n) if isinstance(o, ast.Not) and _single(o.pattern)}
    for n in walk(x):
        if lead and n is head and ((isinstance(n, ast.Every) and _single(n.pattern)
                                    and not n.distinct and n.expiry is None)
                                   or (isinstance(n, ast.Interval) and n.duration == 0)):
            continue
        if isinstance(n, ast.Window):
            if n.kind != "within" or n.most is not None or n.slide:
                return "after a counting timer:withinmax"
        elif isinstance(n, ast.Mult):
            if not isinstance(n.count, int) or n.count < 2:
                return "after a repetition [m:n]"
        elif isinstance(n, ast.And):
            if _special(n) and not (nots and all(id(o) in negs or not isinstance(
                    o, ast.Not | ast.Interval) for o in and_items(n))):
                return "after an 'and' with 'not' or timer:interval"
        elif isinstance(n, ast.Or):
            if n.choice or _or_timer(n) or _beside(n):
                return "after an 'or' with a guard, a timer or a nested 'and'"
        elif isinstance(n, ast.Not) and id(n) in negs:
            continue
        elif not isinstance(n, ast.Atom | ast.Fol):
            return f"after a step with {_name_of(n)} inside"
    return None


def statement_start(p: ast.Pattern) -> ast.Pattern:
    """Esper starts a pattern when its statement starts; an instance of cepflow's begins at an
    event. Where that differs the EPL reader makes the start explicit as the zero interval
    ``timer:interval(0) -> P``, whose :class:`Clock` begins ``P`` at the statement's start
    (``every (…)``: again when the instance ended, as Esper restarts it): a pattern without
    ``every`` that begins with a guard (``B where timer:within(Δ)``, ``(A -> B) where …``: the
    guard runs from the start, and the pattern is over when it expires) or with ``[m:n] B
    until C``, ``m > 0``, and one without ``every`` or with ``every (…)`` around it that begins
    with ``(B and not C)`` (both refused before: nothing to begin from), one without
    ``every`` around it that is an ``and`` / ``or`` with ``every x = X`` operands, and a
    pattern, or ``every (…)`` around one, that begins with an until repeating a group (``([2]
    B) until C``, ``(A until B) until C``: a ``C`` inside the first group ends it). Run
    before :func:`guard_windows`, which writes ``X -> (P where …)`` as ``(X -> P)[Δ]`` and so
    loses which of the two was written. A guard around ``every x = X -> P`` (every on one
    event) so becomes ``timer:interval(0) -> every x = X -> P`` inside the guard: it ends the
    whole pattern Δ after the start, as Esper's; around ``every`` on a group (or a timer, a
    guarded event) the guard is ast.Window.whole (:func:`_whole`): every run enters its window
    at the statement's start. ``every ((…) where timer:within(Δ) [-> …])`` around more than
    one event becomes ``every ((timer:interval(0) -> …) where …)`` (also followed by more:
    ``every ((…) where …) -> R``, :func:`_from_start`): Esper restarts the guard with the
    sub-expression, at the statement's start and when an instance completed or its guard
    ended, so each window runs from that instant (:func:`_restarted_guard`; docs/esper.md,
    "every ((…) where timer:within(Δ))"); no batch kernel takes a clock-started pattern."""
    for n in walk(p):  # (before guard_windows: the guards as written)
        if isinstance(n, ast.Window) and any(
                isinstance(x, ast.At) for x in walk(fol_items(n.pattern)[0])):
            raise EsperError("a guard around timer:at or a pattern that begins with it is not "
                             "supported (Esper starts the guard at the statement's start); a "
                             "guard on what follows is: timer:at(…) -> (P where "
                             "timer:within(Δ))", n.loc)
    if isinstance(p, ast.Every):
        if respawns(p):  # every (…) with every inside: from the start (_respawn)
            zero, _, _ = _respawning(p)
            return p if zero is not None else replace(p, pattern=_zero_first(p.pattern, p.loc))
        if _single(p.pattern) or p.distinct or p.expiry is not None:
            return p
        inner = _from_start(p.pattern, once=False)
        return p if inner is p.pattern else replace(p, pattern=inner)
    return _whole(_from_start(p, once=True))


def _guarded(w: ast.Window, fn: Callable[[ast.Pattern], ast.Pattern]) -> ast.Pattern:
    """The nest of guards ``w`` with ``fn`` applied to the pattern inside them all."""
    inner = w.pattern
    if isinstance(inner, ast.Window) and inner.guard:
        return replace(w, pattern=_guarded(inner, fn))
    return replace(w, pattern=fn(inner))


def _whole(p: ast.Pattern) -> ast.Pattern:
    """``p`` with the guards it begins with (``(P where timer:within(Δ)) [-> …]``, nested
    ones too) marked ast.Window.whole: Esper's root starts them with the statement, and when
    one fires it quits everything under it — each instance an ``every`` inside began, on one
    event, a group or a timer (EvalGuardStateNode quits its child, EvalEveryStateNode's
    instances with it) — so the window runs from the statement's start for every run that
    enters it (Zone.whole). Around a pattern that begins at the statement's start once (the
    zero interval in front, ``every`` on one event inside) that is what the window from the
    clock's event was; around ``every`` on a group (``(every (a=A -> b=B)) where …``) or a
    timer it was each instance's own window before session 41. A counting
    ``timer:withinmax`` keeps its places (_counted_places)."""
    items = fol_items(p)
    head = items[0]
    if not (isinstance(head, ast.Window) and head.guard and head.kind == "within"
            and head.most is None and not head.slide and not head.after):
        return p
    inner = _whole(head.pattern)
    return _fol([replace(head, pattern=inner, whole=True), *items[1:]])


def _from_start(p: ast.Pattern, once: bool) -> ast.Pattern:
    items = fol_items(p)
    head = items[0]
    if (once and len(items) > 1 and isinstance(head, ast.Every) and not head.distinct
            and head.expiry is None and isinstance(head.pattern, ast.Window)
            and _restarted_guard(head.pattern) and not _begins_with_timer(head.pattern)):
        # every ((G) where timer:within(Δ)) -> R: the group's guard restarts with it, as
        # every ((G) where …) alone (below): the zero interval inside the guard, the clock
        # begins the group at the statement's start and again when the group ended — it
        # completed (an instance of R goes on) or its guard ended (docs/esper.md, "every
        # (group) -> more")
        if _zero_guard(head.pattern):
            raise EsperError(_ZERO_RESTART, head.pattern.loc)
        return _fol([replace(head, pattern=_zero_first(head.pattern, head.loc)), *items[1:]])
    if once and len(items) == 1 and _guarded_operands(head):
        # (every x = X and …) where timer:within(Δ) (every_equivalents puts a guard on an
        # every operand around the and): from the start, inside the guard (_repeating)
        return _zero_first(p, head.loc)
    if isinstance(head, ast.Window):
        inner = fol_items(head.pattern)[0]
        core = head.pattern  # (under the nest of guards the pattern begins with)
        while isinstance(core, ast.Window) and core.guard:
            core = core.pattern
        core = fol_items(core)[0]
        if once and any(isinstance(n, ast.Every) and (n.distinct or n.expiry is not None)
                        for n in walk(head.pattern)):
            raise EsperError("a guard around every-distinct is not supported: Esper runs it "
                             "from the statement's start and ends the whole pattern then; put "
                             "the guard on what follows the first event (every-distinct(k) "
                             "a=A -> (b=B where timer:within(…)))", head.loc)
        if once and isinstance(core, ast.Every) and not _single(core.pattern):
            # (every (G) [-> R]) where …: the guard runs from the statement's start (_whole);
            # under it the every starts as it would alone (a guard it restarts, every inside)
            return _fol([_guarded(head, statement_start), *items[1:]])
        if _begins_with_timer(head) or (
                isinstance(inner, ast.Every) and not _single(inner.pattern)):
            return p
        if not once and not _restarted_guard(head):
            return p
        if not once and _zero_guard(head):
            raise EsperError(_ZERO_RESTART, head.loc)
        return _zero_first(p, head.loc)
    ops = (and_items(head) if isinstance(head, ast.And) else or_items(head)
           if isinstance(head, ast.Or) else [])
    if once and len(items) == 1 and _every_operands(head):
        begins = True  # (every x = X and / or …: see _repeating; every X or every Y is
        # every (X or Y), _every_or)
    elif isinstance(head, ast.And):  # (and a guard on an operand: it runs from the start)
        begins = (_special(head) and not _timer_head(head)) or any(is_guard(o) for o in ops)
    elif isinstance(head, ast.Or):  # (b=B or timer:interval(Δ)): the interval from the start;
        # an or run as alternatives from the start (_Lowering.beside)
        begins = _or_timer(head) or _beside(head)
    elif isinstance(head, ast.Until):  # (every (…): the instance from its first B gives the
        # same matches as Esper's restarts — not when B is a group, which the until's end may
        # cut short: ([2] A) until C ends at A C, with nothing taken; nor when an event can
        # fit both B and C: Esper's instance, active from its restart, ends there false)
        low = (head.low or 0) > 0
        overlap = bool(_types(head.until) & _types(head.pattern))
        # (an end at timer:interval: its timer from the start, then again at each restart)
        begins = ((low and (once or overlap)) or not _single(_unwrapped(head.pattern))
                  or isinstance(_until_end(head.until), ast.Interval)
                  or _silence(head.until) is not None)
    else:
        begins = isinstance(head, ast.Not)
    return _zero_first(p, head.loc) if begins else p


_ZERO_RESTART = ("a guard 'where timer:within(0)' around a sub-expression of several events "
                 "under every (…) is not supported: Esper restarts the sub-expression at the "
                 "instant its guard ends, which is that same instant again")


def _restarted_guard(head: ast.Window) -> bool:
    """Under ``every (…)``, does the guard ``head`` that the sub-expression begins with run
    from the instance's restart (EvalEveryStateNode restarts its child at the statement's
    start, when it completed and when it turned false, EvalGuardStateNode's guard quitting
    it; the guard's timer starts with it), so that the zero interval must be put in front of
    it? Not when the guarded operand is one event: each restart then takes the first such
    event, whenever it comes (the window is met at once: ``every (a=A where
    timer:within(Δ))`` is ``every a=A``), nor for a counting ``timer:withinmax`` (its own
    places: _counted_places), nor for a window of the cepflow syntax."""
    return (head.guard and head.kind == "within" and head.most is None
            and not _single(head.pattern))


def _zero_guard(head: ast.Window) -> bool:
    """Is a guard of the nest ``head`` begins with ``timer:within(0)``?"""
    p: ast.Pattern = head
    while isinstance(p, ast.Window):
        if p.duration <= 0:
            return True
        p = p.pattern
    return False


def _every_operands(p: ast.Pattern) -> bool:
    """An ``and`` / ``or`` with ``every x = X`` operands (see :func:`_repeating`)."""
    ops = (and_items(p) if isinstance(p, ast.And) else or_items(p)
           if isinstance(p, ast.Or) else [])
    every = [o for o in ops if isinstance(o, ast.Every)]
    return bool(every) and _every_or(p) is p and all(_every_event(o) is not None for o in every)


def _guarded_operands(p: ast.Pattern) -> bool:
    """Guards (EPL's ``timer:within``) around an ``and`` with ``every x = X`` operands."""
    if not (isinstance(p, ast.Window) and p.guard and p.kind == "within"):
        return False
    inner = p.pattern
    while isinstance(inner, ast.Window) and inner.guard and inner.kind == "within":
        inner = inner.pattern
    return isinstance(inner, ast.And) and _every_operands(inner)


def _zero_first(p: ast.Pattern, loc: ast.Loc) -> ast.Pattern:
    """``p`` with the zero interval in front of its first event, inside the guards around it
    (``(B where …) -> C`` → ``((timer:interval(0) -> B) where …) -> C``): what guard_windows
    would make of ``timer:interval(0) -> p``, written so that the EPL printer's text reads
    back as the same pattern (guard_windows merges one guard a time)."""
    if isinstance(p, ast.Window):
        return replace(p, pattern=_zero_first(p.pattern, loc))
    items = fol_items(p)
    if isinstance(items[0], ast.Window) and len(items) > 1:
        return _fol([_zero_first(items[0], loc), *items[1:]])
    return _fol([ast.Interval(0.0, loc=loc), *items])


def _begins_with_timer(p: ast.Pattern) -> bool:
    """Under its guards, does ``p`` begin with the zero interval that events follow
    (``(timer:interval(0) -> P) where …``: the guard's window starts at the statement's start
    already)? A longer interval does not: the window would begin when it fires, where Esper's
    guard runs from the start (``(timer:interval(2 sec) -> a=A) where timer:within(3 sec)``
    takes an ``A`` from 2 s to 3 s only); nor does a guard around the timer alone
    (``timer:interval(3 sec) where timer:within(2 sec)``)."""
    while True:
        if isinstance(p, ast.Window):
            p = p.pattern
        elif isinstance(p, ast.Fol):
            first = fol_items(p)[0]
            if _timer_head(first):
                return all(t.duration == 0 for t in walk(first) if isinstance(t, ast.Interval))
            p = first
        else:
            return False


_COUNTED = ("timer:withinmax counting results (around every on one event, or with a count of "
            "0) is supported around the whole pattern, after one event of a followed-by (a=A -> "
            "(every b=B) where timer:withinmax(Δ, n) [-> …]) and, with 0, under every (…) around "
            "the whole pattern; not {}")


def _counted_places(body: ast.Pattern) -> None:
    """Report a counted ``timer:withinmax`` (ast.Window.most) where the count of its one
    waiting run is not Esper's count per guard instance, or where the guard would not start
    where Esper's does: it must be the pattern or a step of its followed-by chain, begun at
    one event or at the statement's start (guard_windows / statement_start put that event or
    the zero interval inside the window: two items or more), or — with a count of 0, which
    passes nothing — the pattern under ``every (…)`` (restarted as Esper restarts it)."""
    items = fol_items(body)
    restart = isinstance(body, ast.Every) and isinstance(body.pattern, ast.Window) \
        and body.pattern.most == 0
    for n in walk(body):
        if not isinstance(n, ast.Window) or n.most is None:
            continue
        if restart and n is body.pattern:
            continue
        if not any(n is i for i in items):
            raise EsperError(_COUNTED.format("inside and, or, not, until, a repetition, every "
                                             "(…) or another guard"), n.loc)
        if len(fol_items(n.pattern)) < 2:
            raise EsperError(_COUNTED.format("after a group (Esper starts the guard when the "
                                             "group completes)"), n.loc)


def _stream_properties(body: ast.Pattern, keys: tuple[ast.Expr, ...],
                       schemas: Mapping[str, EventType]) -> tuple[ast.Expr, ...]:
    """every-distinct's keys with a bare field name (``every-distinct(intPrimitive) a=T``)
    read as the tag's field: Esper resolves a property against the tagged streams; the one tag
    of the every-distinct's sub-pattern whose type has that field (else it stays bare and is
    reported as an unknown name)."""
    if not keys:
        return keys
    head = next((n for n in walk(body) if isinstance(n, ast.Every) and n.distinct), None)
    tags = {} if head is None else {a.alias: schemas[a.name] for a in atoms(head.pattern)
                                     if a.alias is not None and a.name in schemas}

    def fn(n: ast.Expr) -> ast.Expr | None:
        if not isinstance(n, ast.Name) or n.path or indexed(n.name) or n.name in tags:
            return None
        owners = [t for t, et in tags.items() if n.name in et.param_names]
        return ast.Name(owners[0], (n.name,), n.loc) if len(owners) == 1 else None

    return tuple(rewrite(k, fn) for k in keys)


def _conjuncts(e: ast.Expr) -> list[ast.Expr]:
    if isinstance(e, ast.Binary) and e.op == "and":
        return [*_conjuncts(e.left), *_conjuncts(e.right)]
    return [e]


def _and(items: list[ast.Expr]) -> ast.Expr | None:
    out: ast.Expr | None = None
    for it in items:
        out = it if out is None else ast.Binary("and", out, it, it.loc)
    return out


def current(alias: str, fld: str) -> str:
    """The variable holding a repeated tag's field for the current repetition (``a.id``
    inside ``[n] (a=A -> B(id = a.id))``); hidden from outputs like every ``_`` name."""
    return f"_{alias}.{fld}"


class _Aliases:
    """Rewrites aliased atoms to unification variables, left to right (binding order). An
    atom with a repeated tag keeps its alias: its position collects (module docstring)."""

    def __init__(self, schemas: Mapping[str, EventType],
                 repeated: Mapping[str, RepeatedTag],
                 negated: Mapping[str, EventType] | None = None,
                 reads: frozenset[str] | None = None) -> None:
        self.schemas = schemas
        #: the ``alias.field`` names read outside their own atom (filters, select list,
        #: distinct keys); None: all (``select *``)
        self.reads = reads
        self.repeated = repeated
        self.negated = dict(negated or {})      # tags inside 'not' only: null in the select
        self.bound: dict[str, EventType] = {}   # alias -> its event type (surely bound)
        self.seen: dict[str, EventType] = {}    # every alias so far, in binding order
        self.rename: dict[str, str] = {}        # "a2.f" -> the variable holding it
        self.spread: list[str] = []             # unbounded repeated tags under select *
        self.optional: list[set[str]] = []      # per enclosing 'or': the tags not in all
        # of its operands (null when another operand matched)

    def var(self, alias: str, fld: str, loc: ast.Loc) -> str:
        """The variable of ``alias.fld``. An alias only some branch of an earlier ``or``
        binds reads as null when another branch matched (Esper: the tag is null), so it is
        never unified (``_unify`` takes surely bound aliases only)."""
        et = self.bound.get(alias) or self.seen.get(alias)
        if et is None:
            if alias in self.negated:
                raise EsperError(f"'{alias}' is a tag inside 'not': it never binds (Esper "
                                 "leaves it null); only the select list may read it", loc)
            raise EsperError(f"'{alias}' is not bound before this point", loc)
        self._field(alias, et, fld, loc)
        name = current(alias, fld) if alias in self.repeated else f"{alias}.{fld}"
        return self.rename.get(name, name)

    @staticmethod
    def _field(alias: str, et: EventType, fld: str, loc: ast.Loc) -> None:
        if fld not in et.param_names:
            raise EsperError(f"'{alias}' ({et.name}) has no field '{fld}' "
                             f"(fields: {', '.join(et.param_names)})", loc)

    def expr(self, e: ast.Expr, own: str | None = None) -> ast.Expr:
        """Names ``alias.field`` → the variable; the atom's own alias → its bare field;
        ``a[k].field`` (a repeated tag's k-th event) stays as it is, a variable itself."""

        def fn(n: ast.Expr) -> ast.Expr | None:
            if not isinstance(n, ast.Name) or not n.path:
                return n if isinstance(n, ast.Name) else None
            if len(n.path) != 1:
                raise EsperError(f"'{n.name}.{'.'.join(n.path)}': only alias.field is "
                                 "supported", n.loc)
            ix = indexed(n.name)
            if ix is not None:
                et = self.seen.get(ix[0])
                if et is None or ix[0] not in self.repeated:
                    raise EsperError(f"'{ix[0]}' is not a repeated tag bound before this "
                                     "point", n.loc)
                self._field(ix[0], et, n.path[0], n.loc)
                return n
            if n.name == own:
                return ast.Name(n.path[0], (), n.loc)
            alias, fld = self.var(n.name, n.path[0], n.loc).split(".", 1)
            return ast.Name(alias, (fld,), n.loc)

        return rewrite(e, fn)

    def atom(self, a: ast.Atom) -> ast.Atom:
        et = self.schemas.get(a.name)
        if a.alias is None:
            if a.where is None:
                return a
            if et is None or a.args is not None:
                return replace(a, where=self.expr(a.where))
        elif et is None:
            raise EsperError(f"unknown event type '{a.name}'", a.loc)
        elif a.args is not None:
            raise EsperError(f"'{a.alias} = {a.name}(...)': an aliased event takes a filter, "
                             "not positional parameters", a.loc)
        repeated = a.alias in self.repeated
        if a.alias in self.bound and not repeated:
            raise EsperError(f"alias '{a.alias}' is bound twice: a tag is taken twice only as "
                             "one event written the same on two operands of 'and' (b=B and "
                             "b=B); with other filters Esper keeps the event of the operand "
                             "that reported first, in a followed-by the later one: not "
                             "supported", a.loc)
        # a repeated tag's own fields are collected (assigned), not unified; an event without
        # a tag binds only the fields its filter equates to an earlier tag's
        args: list[str | None] = ([None] * len(et.param_names) if repeated or a.alias is None
                                  else [f"{a.alias}.{f}" for f in et.param_names])
        rest: list[ast.Expr] = []
        # a tag inside an operand of an or, and not in all of them, is null when another
        # operand matched (Esper): a field of it read elsewhere stays its own variable, not
        # another tag's (a2 = D(k = a1.k) would make a2.k read a1's value), and the equality
        # stays a filter (a repeated tag's fields are its collection's: never renamed)
        branch = not repeated and any(a.alias in tags for tags in self.optional)
        for c in _conjuncts(a.where) if a.where is not None else []:
            unified = self._unify(c, a.alias, et)
            if unified is not None and branch and (
                    self.reads is None or f"{a.alias}.{et.param_names[unified[0]]}" in self.reads):
                unified = None
            if unified is None:
                rest.append(c)
                continue
            i, var = unified
            if args[i] not in (None, f"{a.alias}.{et.param_names[i]}"):
                rest.append(c)  # this field already unifies with another variable
                continue
            args[i] = var
            if not repeated and a.alias is not None:
                self.rename[f"{a.alias}.{et.param_names[i]}"] = var
        where = _and([self.expr(c, a.alias) for c in rest])
        if a.alias is None:
            return ast.Atom(a.name, tuple(args) if any(args) else None, where, None, a.loc,
                            a.until, a.group, a.until_end)
        self.bound[a.alias] = self.seen[a.alias] = et
        return ast.Atom(a.name, tuple(args), where, a.alias if repeated else None, a.loc,
                        a.until, a.group, a.until_end)

    def _unify(self, c: ast.Expr, own: str | None, et: EventType) -> tuple[int, str] | None:
        """``own.f == other.g`` or ``f == other.g`` (the event's own field named bare, as
        Esper allows inside its filter; either order, ``=`` or ``==``) with ``other`` bound
        before (not a repeated tag's current event: that one changes, so it stays a filter)."""
        if not (isinstance(c, ast.Binary) and c.op == "=="):
            return None
        sides = [c.left, c.right]
        for mine, theirs in (sides, sides[::-1]):
            if not (isinstance(mine, ast.Name) and isinstance(theirs, ast.Name)):
                continue
            if len(mine.path) == 1 and mine.name == own:
                fld = mine.path[0]
            elif not mine.path and mine.name not in self.seen and mine.name != own:
                fld = mine.name  # (a bare name that is no tag is the event's own field)
            else:
                continue
            if (len(theirs.path) == 1 and theirs.name != own and theirs.name in self.bound
                    and theirs.name not in self.repeated and fld in et.param_names):
                return et.param_names.index(fld), self.var(theirs.name, theirs.path[0],
                                                           theirs.loc)
        return None

    def pattern(self, p: ast.Pattern) -> ast.Pattern:
        if isinstance(p, ast.Atom):
            return self.atom(p)
        if isinstance(p, ast.Interval):
            return p
        if isinstance(p, ast.Fol | ast.And):
            left = self.pattern(p.left)
            return type(p)(left, self.pattern(p.right), p.loc)
        if isinstance(p, ast.Or):  # after an or, only aliases both branches bind are bound
            before = dict(self.bound)
            tags = [{a.alias for a in atoms(o)} for o in (p.left, p.right)]
            self.optional.append(tags[0] ^ tags[1])
            left = self.pattern(p.left)
            after_left, self.bound = self.bound, before
            right = self.pattern(p.right)
            self.optional.pop()
            self.bound = {k: v for k, v in self.bound.items() if k in after_left}
            return replace(p, left=left, right=right)
        return replace(p, pattern=self.pattern(p.pattern))

    def selected(self, e: ast.Expr) -> ast.Expr:
        """A select item: :meth:`expr`, where a tag inside ``not`` (bound nowhere else)
        reads as null, as Esper's select list gives it (the tag is declared, never set)."""

        def fn(n: ast.Expr) -> ast.Expr | None:
            if (isinstance(n, ast.Name) and len(n.path) == 1 and n.name in self.negated
                    and n.name not in self.seen):
                self._field(n.name, self.negated[n.name], n.path[0], n.loc)
                return ast.Const(None, n.loc)
            return None

        return self.expr(rewrite(e, fn))

    def default_select(self) -> tuple[tuple[str, ast.Expr], ...]:
        """Without a select list: the fields of every tag, as Esper's ``select *`` gives the
        tagged events; a repeated tag's as ``a[0].f`` … up to the most it collects. A tag
        collected without bound (``a=A until D``) is an array of any length in Esper: it has
        no fixed fields, so it goes to :attr:`spread` (the match carries ``a[k].f`` for as
        many events as it took, docs/esper.md "Tags of any length")."""
        out: list[tuple[str, ast.Expr]] = []
        for alias, et in self.seen.items():
            rep = self.repeated.get(alias)
            if rep is None:  # (null when a branch of an or without it matched)
                out.extend((f"{alias}.{f}", ast.Name(alias, (f,))) for f in et.param_names)
                continue
            if rep.most is None:
                self.spread.append(alias)
                continue
            for k in range(rep.most):
                head = f"{alias}[{k}]"
                out.extend((f"{head}.{f}", ast.Name(head, (f,))) for f in et.param_names)
        for alias, et in self.negated.items():  # (a tag inside 'not': null, as in Esper)
            if alias not in self.seen:
                out.extend((f"{alias}.{f}", ast.Const(None)) for f in et.param_names)
        return tuple(out)


def _reads(decl: ast.ComplexEventDecl, keys: Iterable[ast.Expr]) -> frozenset[str] | None:
    """The ``alias.field`` names read outside their own atom: by the other atoms' filters, the
    select list and the distinct keys; None when the select list is ``*`` (it reads all)."""
    if decl.select is None:
        return None
    found = {(n.name, n.path[0]) for a in atoms(decl.body) if a.where is not None
             for n in names(a.where) if len(n.path) == 1 and n.name != a.alias}
    found |= {(n.name, n.path[0]) for e in [*(e for _, e in decl.select), *keys]
              for n in names(e) if len(n.path) == 1}
    return frozenset(f"{name}.{fld}" for name, fld in found)


def lower(decl: ast.ComplexEventDecl, schemas: Mapping[str, EventType]
          ) -> tuple[ast.ComplexEventDecl, EsperPlan]:
    """The plain-algebra form of an Esper-style declaration and its start policy."""
    for m in misuses(decl):
        if m.severity == "error":
            raise EsperError(m.message, m.loc)
    _counted_places(decl.body)
    repeated = repeated_tags(decl.body)
    body, plan = _start_policy(decl.body)
    body, clock = _clock_of(body)
    if clock is not None and decl.partition_by:
        raise EsperError("a pattern that starts with timer:interval or timer:at runs from the "
                         "statement's start over the whole stream; 'partition by' does not "
                         "apply", decl.loc)
    body = _Lowering(plan.start, _repeating(body, plan, clock), body).pattern(body, head=True)
    negated = {a.alias: schemas[a.name] for n in walk(decl.body) if isinstance(n, ast.Not)
               for a in atoms(n.pattern) if a.alias is not None and a.name in schemas}
    keys = _stream_properties(decl.body, plan.distinct, schemas)
    aliases = _Aliases(schemas, repeated, negated, _reads(decl, keys))
    body = aliases.pattern(body)
    distinct = tuple(aliases.expr(d) for d in keys)
    select = decl.select
    params = decl.params
    if select is None and not decl.params:
        select = aliases.default_select()
    if select is not None:
        select = tuple((name, aliases.selected(e)) for name, e in select)
        if not params:
            params = tuple(ast.Param(name) for name, _ in select)
    lowered = replace(decl, body=body, context="esper", select=select, params=params)
    from cepflow.language.printer import format_pattern

    return lowered, replace(plan, distinct=distinct, text=format_pattern(decl.body),
                            clock=clock, spread=tuple(aliases.spread))
