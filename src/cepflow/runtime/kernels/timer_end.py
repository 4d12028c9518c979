"""Esper patterns whose match comes at a timer after their events, over a batch (docs/esper.md
"One instant: timers before events"): the missing event ``every a = A(f) -> (timer:interval(Δ)
and not B(g))`` (its per-event steps: runtime/absence.py), the interval after ``b``, ``every
a = A(f) -> b = B(g, key) -> timer:interval(Δ)``, and the interval right after ``a``, ``every
a = A(f) -> timer:interval(Δ)`` (the token path per event: each ``A`` passing ``f`` a match at
``a.t + Δ``).

Per event each ``A`` passing ``f`` opens an instance; its engine timer of its own is asked for
at the event that starts its interval — the ``A`` itself (missing event, interval right after
``a``) or the first ``B`` of
its key after it passing ``g`` (interval after ``b``: that ``B`` moves every waiting instance
of the key, oldest first) — due ``Δ`` later; a ``B`` the NOT fires for traps the missing
event's instances open then (their timers stay in the engine's queue and fire idle); a timer
that finds its instance open completes it — a match at the deadline, *before* the events of
that instant. Over a batch all of this is computable when every pattern of the engine has one
of these shapes and nothing else has timers:

* an instance whose timer is asked for at row ``rc`` (-1: before the batch) with deadline
  ``d`` fires before the first row after ``rc`` whose time is ``>= d`` (``fire_at``), if the
  batch has one;
* the first ``B`` after a row (after the ``A``: the interval's start; after ``rc``: the NOT)
  passing the filter (it reads only its event) whose value equals ``a``'s where the pattern
  compares them (Python's ``==``, as runtime.binding.bind unifies: the pair kernel's key
  codes; a NaN declines) — one ``searchsorted``; a missing event is trapped iff it comes
  before ``fire_at``;
* the timers firing in the batch fire in the engine's order, (deadline, scheduling order): the
  timers from before the batch by their place in the queue, then the batch's by the row that
  asked for them, then pattern, then token id — the order the per-event engine asks for them;
* what stays: the instances open after the batch as the token path's tokens, each with its
  engine timer once its interval started, and the timers of the instances trapped in the batch
  (they fire idle later, moving the clock, as the token path's), asked for in that order after
  the queue's.

Declined (the batch goes event by event; nothing changed): a shape whose filters read
variables, a NOT of several negative transitions or binding more than one variable, repeated
variables in ``A``'s position, a value that cannot be coded exactly (NaN), a filter or select
list failing on a row, a token not where the shape has it or without exactly its one timer.
Equality with the per-event engine: tests/esper/test_esper_absence.py,
tests/esper/test_esper_interval.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np

from cepflow.automaton.automaton import INITIAL, Position
from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.collector import gc_paused
from cepflow.runtime.kernels.filters import type_mask
from cepflow.runtime.kernels.frame import (
    Declined,
    count_rules,
    counters_before,
    declined_on_failure,
    prepare,
    unprepare,
)
from cepflow.runtime.kernels.pair import (
    Uncodable,
    column_key_codes,
    key_codes,
    sorted_search,
    stable_order,
)
from cepflow.runtime.rows import (
    EventRows,
    MatchTable,
    ObjectMatches,
    Rows,
    StageMatches,
    TypeColumns,
    lazy_kind,
)
from cepflow.runtime.timers import fired_before
from cepflow.runtime.tokens import Thread, Token


@dataclass(frozen=True)
class TimerEnd:
    """A pattern the batch route takes: ``first`` the ``A`` position (its edge from the
    initial state to ``wait`` — the interval after ``b`` — or to ``state``: the missing event,
    the interval right after ``a``); ``second`` the ``B`` position into ``state`` (None for
    the missing event and the interval right after ``a``); ``state`` where the instance waits
    for its timer, in ``zone`` of length ``window``; ``forbid`` the NOT's position (None for
    the intervals), on ``other`` — the type of ``B`` either way (None: no ``B``); ``key``
    (``a``'s parameter, ``B``'s) the values compared, or None."""

    first: Position
    second: Position | None
    wait: int | None
    state: int
    zone: int
    window: float
    forbid: Position | None
    other: str | None
    key: tuple[int, int] | None


def _own(pos: Position) -> bool:
    """Whether ``pos``'s filter (if any) reads only its event."""
    return pos.filter is None or pos.local


def _plain(pos: Position) -> bool:
    """A position with no Esper operator of its own (inner every, and, or, collected tag)."""
    return not (pos.every or pos.conj is not None or pos.track is not None
                or pos.collect is not None or pos.settle is not None)


def _compared(first: Position, pos: Position, fresh: bool) -> tuple[int, int] | bool | None:
    """The (``a`` parameter, ``pos`` parameter) whose values ``pos`` must equal — the one
    variable of ``a`` it binds —, None when it binds none of them, False when the route does
    not take it: ``a`` binding a variable twice, ``pos`` binding two of ``a``'s, or (not
    ``fresh``) anything of its own."""
    at = {v: i for i, v in first.binds}
    if len(at) != len(first.binds):
        return False
    shared = [(at[v], i) for i, v in pos.binds if v in at]
    own = [v for i, v in pos.binds if v not in at]
    if len(shared) > 1 or (own and not fresh) or len(set(own)) != len(own):
        return False
    return shared[0] if shared else None


def timer_end_of(pat: Any) -> TimerEnd | None:
    """The :class:`TimerEnd` of CompiledPattern ``pat``, or None (per event): its missing-event
    shape (CompiledPattern.absence) with filters reading only their events and a NOT of one
    negative transition binding at most one of ``a``'s variables; or the interval after ``b``
    read off the automaton — Esper's spawning ``every`` with no distinct keys and no leading
    clock, an ``A`` edge from the initial state, a ``B`` edge (another type) from there into
    the one zone, a ``within`` whose timer accepts at its target and nothing else, no NOT,
    plain positions whose filters read only their events, ``B`` binding at most one of
    ``a``'s variables and variables of its own; or the interval right after ``a`` (the same
    without ``B``: the ``A`` edge enters the zone, whose timer accepts at its target, a state
    with no edge out)."""
    ab = pat.absence
    if ab is not None:
        if len(ab.forbids) != 1:
            return None
        pos = ab.forbids[0].position
        key = _compared(ab.first, pos, fresh=False)
        if key is False or not _own(ab.first) or not _own(pos):
            return None
        return TimerEnd(ab.first, None, None, ab.state, ab.zone, ab.window, pos,
                        ab.forbid_type, key)  # type: ignore[arg-type]
    auto = pat.auto
    if (not pat.context.esper or auto.start != "spawn" or auto.distinct
            or pat.clock is not None or pat.timer_steps or auto.forbids or len(auto.zones) != 1
            or not set(auto.edges) <= {INITIAL, *(
                e.target for d in auto.edges.get(INITIAL, {}).values() for e in d)}):
        return None
    firsts = [e for d in auto.edges.get(INITIAL, {}).values() for e in d]
    if len(firsts) != 1:
        return None
    e1 = firsts[0]
    zone = auto.zones[0]
    a = e1.position
    seconds = [e for d in auto.edges.get(e1.target, {}).values() for e in d]
    if not seconds:  # the interval right after a: the A's edge enters the zone
        if (e1.final or e1.exits or e1.enters != (zone.id,) or e1.target == INITIAL
                or not (_plain(a) and _own(a)) or zone.kind != "within"
                or zone.timer_accept != frozenset({e1.target})
                or len({v for _i, v in a.binds}) != len(a.binds)):
            return None
        return TimerEnd(a, None, None, e1.target, zone.id, zone.length, None, None, None)
    if len(seconds) != 1:
        return None
    e2 = seconds[0]
    b = e2.position
    if (e1.final or e1.exits or e1.enters or e1.target == INITIAL or e2.final or e2.exits
            or e2.enters != (zone.id,) or e2.target in (e1.target, INITIAL)
            or a.type == b.type or not (_plain(a) and _plain(b) and _own(a) and _own(b))
            or zone.kind != "within" or zone.timer_accept != frozenset({e2.target})
            or e2.target in auto.edges):
        return None
    key = _compared(a, b, fresh=True)
    if key is False:
        return None
    return TimerEnd(a, b, e1.target, e2.target, zone.id, zone.length, None, b.type,
                    key)  # type: ignore[arg-type]


def process_timer_end_batch(engine: Any, matchers: list[Any], events: Sequence[Event]
                            ) -> list[ComplexEvent] | None:
    """Feed ``events`` (time-ordered) to an engine every pattern of which (``matchers``) has a
    :class:`TimerEnd` (``engine._timer_ends``); the complex events, or None (having changed
    nothing) when it declines. Rules fire as per event: a timer's match on its own, before
    the row it fired before, and the input rows that trigger rules after it; the events their
    actions emit are processed after the batch (as the other kernels' are)."""
    with gc_paused():
        table = _batch(engine, matchers, EventRows(events))
        if table is None:
            return None
        out = table.complex_events()
        host = engine.host
        if host.rules:
            if host.acting:
                _fire(host, events, out, table.positions())
            else:
                count_rules(host, table, table.source)
        return out


def process_timer_end_columns(engine: Any, matchers: list[Any], rows: Rows
                              ) -> MatchTable | None:
    """:func:`process_timer_end_batch` over a column batch (no rule has a registered action:
    rules are counted); events are made only for the rows of matches and open instances."""
    with gc_paused():
        table = _batch(engine, matchers, rows)
        if table is not None:
            count_rules(engine.host, table, rows)
        return table


def _fire(host: Any, events: Sequence[Event], out: list[ComplexEvent], at: list[int]) -> None:
    """Rule firings in the per-event engine's order: each timer's match on its own (Host.fire
    with no event) before the row ``at`` it fired before, each input row of a triggering type
    after them; then the events actions emitted."""
    triggers = host.rules.triggers
    k, n_out = 0, len(out)
    for i, e in enumerate(events):
        while k < n_out and at[k] <= i:
            host.fire(None, [out[k]])
            k += 1
        if triggers(e.type):
            host.fire(e, [])
    while k < n_out:  # (not reached: a timer firing in the batch fires before one of its rows)
        host.fire(None, [out[k]])
        k += 1
    if host.pending:
        host.drain(out)


def _batch(engine: Any, matchers: list[Any], src: Rows) -> MatchTable | None:
    """The batch's complex events (a block per pattern), the instances left open and the
    timers; None, having changed nothing, when the batch is declined."""
    if any(m.pending is not None for m in matchers):
        return None
    before = counters_before(engine)
    prepare(engine, src)
    n = src.n
    if not n:
        return MatchTable([], [], 0, 0, src)
    host = engine.host
    shapes = engine._timer_end_shapes
    try:
        cols = TypeColumns(src, engine.program.schemas)
        plans = [_plan(m, sh, cols, host.timers.heap)
                 for m, sh in zip(matchers, shapes, strict=True)]
    except (Declined, Uncodable):
        plans = [None]
    if any(p is None for p in plans):
        unprepare(engine, before, src)
        return None
    last_ts = float(src.ts[-1])
    n_pat = len(matchers)
    # token ids of the batch's instances: by row, then pattern (the per-event engine opens
    # them so)
    opened = np.sort(np.concatenate([p["rows"] * n_pat + slot for slot, p in enumerate(plans)]))
    first_token = host.counters.token + 1
    for slot, p in enumerate(plans):
        p["tid"] = np.concatenate([p["old_ids"], first_token + np.searchsorted(
            opened, p["rows"] * n_pat + slot)])
    # the timers the batch asks for, in the order it asks: by row, pattern, token id
    asks = [np.flatnonzero(p["asks"]) for p in plans]
    a_rc, a_slot, a_tid = (np.concatenate(x) for x in (
        [p["rc"][q] for p, q in zip(plans, asks, strict=True)],
        [np.full(len(q), s, np.int64) for s, q in enumerate(asks)],
        [p["tid"][q] for p, q in zip(plans, asks, strict=True)]))
    asked = np.lexsort((a_tid, a_slot, a_rc))
    rank = np.empty(len(asked), np.int64)
    rank[asked] = np.arange(len(asked))
    base = max((h[2] for h in host.timers.heap), default=0) + 1
    bounds = np.cumsum([0, *map(len, asks)])
    for slot, (p, q) in enumerate(zip(plans, asks, strict=True)):
        p["seq"][q] = base + rank[bounds[slot]:bounds[slot + 1]]
    # the timers firing in the batch with an open instance, in the engine's order
    wins = [np.flatnonzero(p["match"]) for p in plans]
    d, sq, sl, qi = (np.concatenate(x) for x in (
        [p["deadline"][w] for p, w in zip(plans, wins, strict=True)],
        [p["seq"][w] for p, w in zip(plans, wins, strict=True)],
        [np.full(len(w), s, np.int64) for s, w in enumerate(wins)], wins))
    order = np.lexsort((sq, d))
    sl, qi = sl[order], qi[order]
    at = np.concatenate([p["fire_at"][w] for p, w in zip(plans, wins, strict=True)])[order]
    # per pattern, its matches: the places in the batch's order (r) and the instances (q);
    # those of the instances the batch opened as one block of rows when the select list
    # copies variables (made only when read: _stage_block)
    per = [np.flatnonzero(sl == slot) for slot in range(n_pat)]
    staged = [_stage_block(m, sh, p, qi[r], at[r], r)
              for m, sh, p, r in zip(matchers, shapes, plans, per, strict=True)]
    # the events the other matches and the open instances hold (a column source makes only
    # these)
    need = [p["match"] | ~p["fired"] for p in plans]
    for w, b in zip(need, staged, strict=True):
        if b is not None:  # (a block's instances: matched, so fired)
            w[b[1]] = False
    used = np.concatenate([p["rows"][w[p["n_old"]:]] for p, w in zip(plans, need, strict=True)]
                          + [p["b_row"][w & (p["b_row"] >= 0)]
                             for p, w in zip(plans, need, strict=True)])
    lookup = src.lookup(np.sort(used)) if len(used) else {}
    total = len(order)
    mark, dones = host.counters.match, [m.done for m in matchers]
    blocks: list[StageMatches | ObjectMatches] = []
    try:
        # (a select list failing on a match declines the batch)
        with declined_on_failure("a select list failed at a timer"):
            for m, sh, p, r, b in zip(matchers, shapes, plans, per, staged, strict=True):
                if b is not None:
                    blocks.append(b[0])
                    m.done = True
                    r = r[qi[r] < p["n_old"]]
                if len(r):
                    made = _matches(m, sh, p, qi[r].tolist(), (mark + 1 + r).tolist(), lookup)
                    blocks.append(ObjectMatches(at[r], r, made))
    except Declined:
        host.counters.match = mark
        for m, done in zip(matchers, dones, strict=True):
            m.done = done
        unprepare(engine, before, src)
        return None
    host.counters.match = mark + total
    host.counters.token += len(opened)
    stats = host.stats
    stats.complex_events += total
    by = stats.by_pattern
    # (the patterns in the order their first match comes: the statistics list them so)
    for m, r in sorted(((m, r) for m, r in zip(matchers, per, strict=True) if len(r)),
                       key=lambda mr: int(mr[1][0])):
        by[m.name] = by.get(m.name, 0) + len(r)
    # the queue: the timers the batch passed fired (with a match, idle or trapped)
    host.timers.keep(lambda h: not fired_before(h, last_ts))
    waiting = sorted(w for m, sh, p in zip(matchers, shapes, plans, strict=True)
                     for w in _leave_open(m, sh, p, lookup))
    schedule = host.schedule
    for _, tid, start, m, sh in waiting:  # (asked for as per event: _batch's order)
        schedule(start + sh.window, m, tid, sh.zone, start)
    return MatchTable(blocks, [], mark + 1, total, src)


def _events(sh: TimerEnd, p: dict, q: int, lookup: Any) -> list[Event]:
    """The events instance ``q`` of plan ``p`` holds: ``a`` (and ``b`` once it took one)."""
    n_old = p["n_old"]
    held = list(p["old"][q].threads[0].events) if q < n_old else [
        lookup[int(p["rows"][q - n_old])]]
    b = int(p["b_row"][q])
    if b >= 0 and len(held) == 1:
        held.append(lookup[b])
    return held


def _bindings(sh: TimerEnd, p: dict, q: int, held: list[Event]) -> dict[str, Any]:
    """The token path's bindings of instance ``q`` holding ``held``: the token's, ``a``'s
    variables, then those ``b`` binds of its own."""
    if q < p["n_old"] and len(p["old"][q].threads[0].events) == len(held):
        return p["old"][q].threads[0].bindings
    base = (p["old"][q].threads[0].bindings if q < p["n_old"]
            else {v: held[0].params[i] for i, v in sh.first.binds})
    if len(held) == 1:
        return base
    out = dict(base)
    for i, v in sh.second.binds:  # type: ignore[union-attr]
        out.setdefault(v, held[1].params[i])
    return out


def _matches(m: Any, sh: TimerEnd, p: dict, qs: list[int], ids: list[int], lookup: Any
             ) -> list[ComplexEvent]:
    """The complex events of pattern ``m``'s instances ``qs`` (their places in plan ``p``),
    completed at their deadlines with match ``ids``: what Matcher._match makes — lazily
    (rows.lazy_kind: bindings made when read) when the select list copies variables, each
    then a field of one of its events (those of instances the batch opened are a block of
    rows instead, :func:`_stage_block`)."""
    window = sh.window
    m.done = True
    pat = m.pattern
    held = [_events(sh, p, q, lookup) for q in qs]
    deadlines = [float(p["start"][q]) + window if q < p["n_old"] and p["asks"][q] == 0
                 else h[-1].ts + window for q, h in zip(qs, held, strict=True)]
    if pat.select_copy is not None:  # (Matcher._match: the values copied, named as params)
        fields = _copied(sh, pat.select_copy)
        return list(map(lazy_kind(m.name, pat.auto.params),
                        [tuple(h[st].params[k] for st, k in fields) for h in held],
                        deadlines, map(tuple, held), ids))
    made: list[ComplexEvent] = []
    counters = m.host.counters
    for q, h, t, mid in zip(qs, held, deadlines, ids, strict=True):
        counters.match = mid - 1  # (Matcher._match takes the next id)
        m._match(None, _bindings(sh, p, q, h), h, h[-1], t, made.append)
    return made


def _copied(sh: TimerEnd, names: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where each variable ``names`` copies is: ``(0, i)`` field i of ``a``'s event, else
    ``(1, i)`` of ``b``'s (the variables ``a`` binds first, as the token path's bindings)."""
    where = {v: (0, i) for i, v in sh.first.binds}
    if sh.second is not None:
        for i, v in sh.second.binds:
            where.setdefault(v, (1, i))
    return [where[v] for v in names]


def _stage_block(m: Any, sh: TimerEnd, p: dict, qs: np.ndarray, at: np.ndarray,
                 rank: np.ndarray) -> tuple[StageMatches, np.ndarray] | None:
    """The matches of pattern ``m``'s instances ``qs`` (places ``rank`` in the batch's order,
    each fired before row ``at``) that began in the batch, as one block of their rows
    (rows.StageMatches: each copied variable a field of ``a``'s or ``b``'s row, the time ``Δ``
    after the last — made when read, written from the columns), with those instances; None
    when the select list computes, or the instances differ in whether they took a ``B`` (or
    lack the ``b`` a variable is copied from), or none began in the batch."""
    if m.pattern.select_copy is None:
        return None
    fresh = qs >= p["n_old"]
    q = qs[fresh]
    if not len(q):
        return None
    b_rows = p["b_row"][q]
    took = b_rows >= 0
    if not (took.all() or not took.any()):
        return None
    rows = [p["rows"][q - p["n_old"]]] + ([b_rows] if took.all() else [])
    fields = _copied(sh, m.pattern.select_copy)
    if any(st >= len(rows) for st, _ in fields):
        return None
    return (StageMatches(m.name, m.pattern.auto.params, tuple(fields), at[fresh], rank[fresh],
                         np.stack(rows), delay=sh.window), q)


def _leave_open(m: Any, sh: TimerEnd, p: dict, lookup: Any) -> list[tuple]:
    """The tokens from before the batch that matched or were trapped leave, those that took
    their ``B`` move on; the instances the batch opened that stay open become the token
    path's tokens. Returns (place in the ask order, token id, start, matcher, shape) of every
    timer the batch asked for that has not fired (trapped instances' too: it fires idle)."""
    n_old = p["n_old"]
    z, state = sh.zone, sh.state
    for q in np.flatnonzero(~p["keep"][:n_old] | p["moved"][:n_old]).tolist():
        m.unregister(p["old"][q])
    for q in np.flatnonzero(p["keep"][:n_old] & p["moved"][:n_old]).tolist():
        tok = p["old"][q]
        th = tok.threads[0]
        held = _events(sh, p, q, lookup)
        b = held[-1]
        th.state, th.bindings, th.events = state, _bindings(sh, p, q, held), held
        th.zstart, th.last = {z: b.ts}, b
        m.register(tok)
    timers = []
    live = p["keep"] & ~p["trapped"]
    for q in np.flatnonzero(p["asks"] & ~p["fired"]).tolist():
        held = _events(sh, p, q, lookup)
        timers.append((int(p["seq"][q]), int(p["tid"][q]), held[-1].ts, m, sh))
    for q in np.flatnonzero(live[n_old:]).tolist():
        qq = q + n_old
        held = _events(sh, p, qq, lookup)
        a = held[0]
        at_state = len(held) > 1 or sh.second is None
        th = Thread(state if at_state else sh.wait, _bindings(sh, p, qq, held), held,
                    {z: held[-1].ts} if at_state else None, held[-1])
        # (younger than every token registered: the new ones come in id order)
        m.register_newest(Token(int(p["tid"][qq]), None, a.ts, [th]))
    return timers


def _plan(m: Any, sh: TimerEnd, cols: TypeColumns, heap: list[tuple]) -> dict | None:
    """Pattern ``m``'s instances over the batch — its tokens from before it, then one per
    ``A`` row passing ``f`` — and per instance: the row of the ``B`` it takes in the batch
    (``b_row``, -1: none), the row that asks for its timer (``rc``, ``asks``) or its timer
    from before (``seq``, ``start``), its deadline, the row its timer fires before
    (``fire_at``), whether it fired, was trapped, matched, is kept open, moved on. None when
    the batch must go event by event."""
    src = cols.src
    ts = src.ts
    n = src.n
    # the tokens from before the batch: waiting for B (no timer), or for their timer (theirs
    # in the queue)
    old = m.registered_tokens()
    timer: dict[int, list[tuple]] = {}
    for h in heap:
        if h[3] == m.slot:
            timer.setdefault(h[4], []).append(h)
    n_old = len(old)
    old_seq = np.zeros(n_old, np.int64)
    start = np.zeros(n_old, np.float64)
    waits = np.zeros(n_old, bool)
    for q, tok in enumerate(old):
        hs = timer.get(tok.id, ())
        th = tok.threads[0]
        if len(tok.threads) != 1:
            return None
        if th.state == sh.wait and not hs and not th.zstart:
            waits[q] = True
            continue
        if th.state != sh.state or len(hs) != 1 or (th.zstart or {}).get(sh.zone) != hs[0][6]:
            return None
        old_seq[q], start[q] = hs[0][2], hs[0][6]
    a_all = cols.rows(sh.first.type)
    mask = type_mask(sh.first, cols)
    rows = a_all[np.flatnonzero(mask)] if mask is not None else a_all
    a_loc = np.flatnonzero(mask) if mask is not None else np.arange(len(a_all))
    r = np.concatenate([np.full(n_old, -1, np.int64), rows])
    b_pos = sh.second if sh.second is not None else sh.forbid
    if b_pos is None:  # (the interval right after a: no B)
        b_rows = b_loc = np.zeros(0, np.int64)
    else:
        b_all = cols.rows(b_pos.type)
        bmask = type_mask(b_pos, cols)
        b_loc = np.flatnonzero(bmask) if bmask is not None else np.arange(len(b_all))
        b_rows = b_all[b_loc]
    var = None if sh.key is None else dict(sh.first.binds)[sh.key[0]]
    held = [tok.threads[0].bindings[var] for tok in old] if var is not None else []
    codes = (_codes(cols, src, (sh.first.type, sh.key[0], a_loc), (sh.other, sh.key[1], b_loc),
                    held, n + 2) if sh.key is not None and len(b_rows) else None)

    def first_b(after: np.ndarray) -> np.ndarray:
        """Per instance the first B row after ``after`` it is compared with (n: none)."""
        if not len(b_rows):
            return np.full(len(after), n, np.int64)
        if codes is None:
            q = np.searchsorted(b_rows, after, "right")
            has = q < len(b_rows)
            return np.where(has, b_rows[np.where(has, q, 0)], n)
        i_code, b_code = codes
        span = n + 2
        order = stable_order(b_code)
        q = sorted_search((b_code * span + b_rows + 1)[order], i_code, after, span, "right")
        has = q < len(order)
        cand = order[np.where(has, q, 0)]
        has &= b_code[cand] == i_code
        return np.where(has, b_rows[cand], n)

    n_inst = len(r)
    b_row = np.full(n_inst, -1, np.int64)
    if sh.second is None:  # the missing event: the timer asked for at the A
        rc = r.copy()
        asks = np.concatenate([np.zeros(n_old, bool), np.ones(len(rows), bool)])
    else:  # the interval after b: asked for at the first B of its key after the A
        waiting = np.concatenate([waits, np.ones(len(rows), bool)])
        nxt = first_b(r)
        asks = waiting & (nxt < n)
        b_row[asks] = nxt[asks]
        rc = np.where(asks, nxt, -1)
    deadline = np.concatenate([start, np.zeros(len(rows))]) + sh.window
    deadline[asks] = ts[rc[asks]].astype(np.float64) + sh.window
    timed = asks | np.concatenate([~waits, np.zeros(len(rows), bool)])
    fire_at = np.where(timed, np.maximum(rc + 1, np.searchsorted(ts, deadline, "left")), n)
    fired = timed & (fire_at < n)
    if sh.forbid is not None:
        trapped = first_b(r) < fire_at
    else:
        trapped = np.zeros(n_inst, bool)
    seq = np.concatenate([old_seq, np.zeros(len(rows), np.int64)])
    moved = b_row >= 0
    return {"old": old, "old_ids": np.array([t.id for t in old], np.int64), "n_old": n_old,
            "rows": rows, "seq": seq, "start": start, "rc": rc, "asks": asks,
            "deadline": deadline, "fire_at": fire_at, "fired": fired, "trapped": trapped,
            "match": fired & ~trapped, "keep": ~fired & ~trapped, "moved": moved,
            "b_row": b_row}


def _codes(cols: TypeColumns, src: Rows, a: tuple[str, int, np.ndarray],
           b: tuple[str, int, np.ndarray], held: list[Any], span: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the instances' values (``held``, then the ``A`` rows') and the ``B`` rows',
    equal iff the values unify (the pair kernel's key_codes / column_key_codes; Uncodable for
    a NaN or an unhashable value)."""
    ka = cols.column(a[0], a[1])[a[2]]
    kb = cols.column(b[0], b[1])[b[2]]
    if isinstance(src, EventRows) and (ka.dtype.kind == "O" or kb.dtype.kind == "O"):
        return column_key_codes(cols, [a, b], held, span)
    try:
        return key_codes(ka, kb, held, span)
    except TypeError:  # (an unhashable value: event by event)
        raise Uncodable from None


@dataclass
class SplitTimers:
    """A timer-end pattern's plan in the program split (kernels.split): ``plan`` as the
    split's other plans (the rows that open its instances, no match at an input step, the
    commit taking their token ids); its timers' matches ``found`` in the engine's timer order,
    (deadline, scheduling order), each with the row it fires before (``rows``), its
    ``deadline`` and its place in the scheduling order (``seq``). The split records those of
    rows no step sees in bulk, before the row's other matches (time passes first:
    ``kernels.split._Replay``'s bounds), and hands those of a stepped row to the engine's
    queue just before it (:meth:`SplitTimerSet.push`), so the engine fires them among the
    other timers and window instants of that row (:meth:`fire`, the pattern's
    ``on_deadline`` during the batch). The program's timer-end patterns of one batch are one
    :class:`SplitTimerSet`, which orders their timers across statements."""

    plan: tuple[np.ndarray, np.ndarray, list[ComplexEvent], Any]
    rows: np.ndarray
    deadline: np.ndarray
    found: list[ComplexEvent]
    matcher: Any
    shape: TimerEnd
    #: the plan (_plan), the matches' places in it (in ``found``'s order), each instance's
    #: age among the pattern's (token id order)
    p: dict
    wins: np.ndarray
    age: np.ndarray
    seq: np.ndarray | None = None
    #: the set this pattern's commit hands its timers left open to
    group: SplitTimerSet | None = None

    def drop(self, host: Any, last_ts: float) -> None:
        """Take the pattern's timers due in the batch out of the queue (the plan holds
        them)."""
        slot = self.matcher.slot
        host.timers.keep(lambda h: h[3] != slot or not fired_before(h, last_ts))

    def fire(self, counters: Any) -> Any:
        """The pattern's ``on_deadline`` during the batch: timer ``i`` (:meth:`SplitTimerSet.push`)
        emits its planned match with the next match id."""

        def on_deadline(i: int, _zone: int, _start: float, emit: Any) -> None:
            ce = self.found[i]
            counters.match += 1
            ce.match_id = counters.match
            emit(ce)
        return on_deadline


class SplitTimerSet:
    """The program's timer-end patterns in one split batch (``members``, in engine order):
    per event their timers fire in the engine's order, (deadline, scheduling order), across
    statements — the order the timers were asked for is by row, then pattern (engine order),
    then token id. So the set gives the batch's timers their scheduling order across the
    patterns (after the queue's: the timers from before the batch keep their own), ranks each
    pattern's matches among all the patterns' of their deadline (``sub``: the split's bounds
    of one rank, a timer before a row ordered by it), queues those due before a stepped row in
    that order (:meth:`push`), and puts the timers left after the batch in the queue in their
    scheduling order once every pattern has committed (:meth:`left`)."""

    def __init__(self, members: list[SplitTimers], host: Any) -> None:
        self.members = members
        self._left: list[tuple] = []
        self._waiting = len(members)
        self._at: dict[int, list[tuple[float, int, int, int]]] | None = None
        base = max((h[2] for h in host.timers.heap), default=0) + 1
        asks = [np.flatnonzero(te.p["asks"]) for te in members]
        rc, slot, age = (np.concatenate([np.zeros(0, np.int64), *x]) for x in (
            [te.p["rc"][q] for te, q in zip(members, asks, strict=True)],
            [np.full(len(q), te.matcher.slot, np.int64)
             for te, q in zip(members, asks, strict=True)],
            [te.age[q] for te, q in zip(members, asks, strict=True)]))
        rank = np.empty(len(rc), np.int64)
        rank[np.lexsort((age, slot, rc))] = np.arange(len(rc))
        bounds = np.cumsum([0, *map(len, asks)])
        for k, (te, q) in enumerate(zip(members, asks, strict=True)):
            te.p["seq"][q] = base + rank[bounds[k]:bounds[k + 1]]
            te.seq = te.p["seq"][te.wins]
            te.group = self
        # (each match's place among all the members' matches of its deadline)
        d, sq = (np.concatenate([np.zeros(0, x), *(getattr(te, f) for te in members)])
                 for x, f in ((np.float64, "deadline"), (np.int64, "seq")))
        order = np.lexsort((sq, d))
        place = np.empty(len(d), np.int64)
        place[order] = np.arange(len(d)) - np.searchsorted(d[order], d[order], "left")
        n = np.cumsum([0, *(len(te.found) for te in members)])
        self.sub = [place[n[k]:n[k + 1]] for k in range(len(members))]

    def bounds(self, rank: int) -> list[tuple[int, np.ndarray, np.ndarray, list[ComplexEvent],
                                              np.ndarray]]:
        """The members' matches as the split's bounds (kernels.split._Replay): one ``rank``
        for all, ordered among themselves at an instant by their places ``sub``."""
        return [(rank, te.rows, te.deadline, te.found, sub)
                for te, sub in zip(self.members, self.sub, strict=True)]

    def push(self, row: int, host: Any) -> None:
        """Queue the members' timers that fire before stepped row ``row``, in the engine's
        order (the engine pops them there: :meth:`SplitTimers.fire`)."""
        if self._at is None:
            self._at = {}
            for k, te in enumerate(self.members):
                for i, (r, d, q) in enumerate(zip(te.rows.tolist(), te.deadline.tolist(),
                                                  te.seq.tolist(), strict=True)):
                    self._at.setdefault(r, []).append((d, q, k, i))
        for d, _q, k, i in sorted(self._at.get(row, ())):
            te = self.members[k]
            host.schedule(d, te.matcher, i, te.shape.zone, d - te.shape.window)

    def left(self, timers: list[tuple], host: Any) -> None:
        """A member's timers left after the batch (:func:`_leave_open`); when every member has
        committed, all of them put in the queue in their scheduling order."""
        self._left += timers
        self._waiting -= 1
        if not self._waiting:
            for _, tid, start, m, sh in sorted(self._left, key=itemgetter(0)):
                host.schedule(start + sh.window, m, tid, sh.zone, start)


def plan_split(m: Any, sh: TimerEnd, cols: TypeColumns, host: Any) -> SplitTimers | None:
    """Pattern ``m``'s plan over the split's batch (:class:`SplitTimers`), or None (the batch
    goes event by event): what :func:`_batch` computes for one pattern, its token ids given
    by the split's replay (the batch's instances open in row order, after the tokens from
    before it) and its match ids when its timers fire; the scheduling order across the
    program's timer-end patterns is :class:`SplitTimerSet`'s. Declined as :func:`_batch`
    declines, and when pending rows are held."""
    if m.pending is not None:
        return None
    try:
        p = _plan(m, sh, cols, host.timers.heap)
    except Uncodable:
        return None
    if p is None:
        return None
    n_old = p["n_old"]
    src = cols.src
    # the order the pattern's timers are asked for: by row, then token id (the tokens from
    # before, then the batch's instances in row order) — across patterns: SplitTimerSet
    age = np.arange(n_old + len(p["rows"]), dtype=np.int64)
    age[:n_old] = np.argsort(np.argsort(p["old_ids"], kind="stable"), kind="stable")
    asks = np.flatnonzero(p["asks"])
    asked = asks[np.lexsort((age[asks], p["rc"][asks]))]
    p["seq"][asked] = max((h[2] for h in host.timers.heap), default=0) + 1 + np.arange(
        len(asked), dtype=np.int64)
    # the timers firing in the batch with an open instance, in the engine's order
    wins = np.flatnonzero(p["match"])
    wins = wins[np.lexsort((p["seq"][wins], p["deadline"][wins]))]
    need = p["match"] | ~p["fired"]
    used = np.concatenate([p["rows"][need[n_old:]], p["b_row"][need & (p["b_row"] >= 0)]])
    lookup = src.lookup(np.sort(used)) if len(used) else {}
    counters = host.counters
    mark, done = counters.match, m.done
    try:  # (made now, their ids given as they fire: a select list failing declines the batch)
        with declined_on_failure("a select list failed at a timer"):
            found = _matches(m, sh, p, wins.tolist(), [0] * len(wins), lookup)
    finally:
        counters.match, m.done = mark, done
    last_ts = float(src.ts[-1])

    def commit(token_ids: np.ndarray) -> None:
        if len(wins):
            m.done = True
        p["tid"] = np.concatenate([p["old_ids"], token_ids]).astype(np.int64)
        host.timers.keep(lambda h: h[3] != m.slot or not fired_before(h, last_ts))
        te.group.left(_leave_open(m, sh, p, lookup), host)  # type: ignore[union-attr]

    empty = np.zeros(0, np.int64)
    te = SplitTimers((p["rows"], empty, [], commit), p["fire_at"][wins],
                     p["deadline"][wins].astype(np.float64), found, m, sh, p, wins, age)
    return te
