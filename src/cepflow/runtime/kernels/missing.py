"""Esper's missing event, ``every a = A(f) -> (timer:interval(Δ) and not B(g))``, over a batch
(docs/esper.md "One instant: timers before events"; the per-event steps: runtime/absence.py).

Per event each ``A`` passing ``f`` opens an instance with an engine timer of its own at
``a.ts + Δ``; a ``B`` the NOT fires for traps the instances open then (its timer stays in the
engine's queue and fires idle); a timer that finds its instance open completes it — a match at
the deadline, *before* the events of that instant. Over a batch all of this is computable when
every pattern of the engine has the shape and nothing else has timers:

* an instance scheduled at row ``r`` (-1: before the batch) with deadline ``d`` fires before
  the first row after ``r`` whose time is ``>= d`` (``j0``), if the batch has one;
* it is trapped iff a ``B`` row in ``(r, j0)`` passes the NOT: the NOT's filter (it reads
  only its event) and, when the NOT binds one of ``a``'s variables, equal to ``a``'s value
  (Python's ``==``, as runtime.binding.bind unifies: the pair kernel's key codes; a NaN
  declines) — the first such row after ``r`` by one ``searchsorted``;
* the timers firing in the batch fire in the engine's order, (deadline, scheduling order):
  the timers from before the batch by their place in the queue, then the batch's by row and
  pattern — the order their token ids were given in;
* what stays: the instances open after the batch as the per-event step's tokens, each with its
  engine timer, and the timers of the instances trapped in the batch (they fire idle later,
  moving the clock, as the token path's), asked for in token id order after the queue's.

Declined (the batch goes event by event; nothing changed): a pattern whose ``A`` filter or
NOT filter reads variables, a NOT of several negative transitions or binding more than one
variable, repeated variables in ``A``'s position, a key that cannot be coded exactly (NaN), a
filter or select list failing on a row, an instance without exactly one timer in the queue.
Equality with the per-event engine: tests/esper/test_esper_absence.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter
from typing import Any

import numpy as np

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
    TypeColumns,
    lazy_kind,
)
from cepflow.runtime.timers import fired_before
from cepflow.runtime.tokens import Thread, Token


def takes(ab: Any) -> bool:
    """Whether the batch route takes the missing-event shape ``ab``
    (:class:`~cepflow.runtime.absence.EsperAbsence`): ``A``'s filter and the NOT's read only
    their events, ``A`` binds each variable once, and the NOT is one negative transition
    binding nothing or one of ``a``'s variables (see the module docstring)."""
    first = ab.first
    if first.filter is not None and not first.local:
        return False
    names = [v for _, v in first.binds]
    if len(set(names)) != len(names) or len(ab.forbids) != 1:
        return False
    pos = ab.forbids[0].position
    if pos.filter is not None and not pos.local:
        return False
    return not pos.binds or (len(pos.binds) == 1 and pos.binds[0][1] in names)


def process_absence_batch(engine: Any, matchers: list[Any], events: Sequence[Event]
                          ) -> list[ComplexEvent] | None:
    """Feed ``events`` (time-ordered) to an engine every pattern of which (``matchers``) is
    the missing event the batch route takes; the complex events, or None (having changed
    nothing) when it declines. Rules fire as per event: a timer's match on its own, before
    the row it fired before, and the input rows that trigger rules after it; the events their
    actions emit are processed after the batch (as the other kernels' are)."""
    with gc_paused():
        table = _missing_batch(engine, matchers, EventRows(events))
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


def process_absence_columns(engine: Any, matchers: list[Any], rows: Rows) -> MatchTable | None:
    """:func:`process_absence_batch` over a column batch (no rule has a registered action:
    rules are counted); events are made only for the rows of matches and open instances."""
    with gc_paused():
        table = _missing_batch(engine, matchers, rows)
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


def _missing_batch(engine: Any, matchers: list[Any], src: Rows) -> MatchTable | None:
    """The batch's complex events as one :class:`ObjectMatches` block (the token path's
    objects, made by Matcher._match), the instances left open and the timers; None, having
    changed nothing, when the batch is declined."""
    if any(m.pending is not None for m in matchers):
        return None
    before = counters_before(engine)
    prepare(engine, src)
    n = src.n
    if not n:
        return MatchTable([], [], 0, 0, src)
    host = engine.host
    try:
        cols = TypeColumns(src, engine.program.schemas)
        plans = [_plan(m, cols, host.timers.heap) for m in matchers]
    except (Declined, Uncodable):
        plans = [None]
    if any(p is None for p in plans):
        unprepare(engine, before, src)
        return None
    ts = src.ts
    last_ts = float(ts[-1])
    # token ids: by row, then pattern (the per-event engine opens them so)
    n_pat = len(matchers)
    opened = np.sort(np.concatenate([p["rows"] * n_pat + slot for slot, p in enumerate(plans)]))
    first_token = host.counters.token + 1
    # the timers firing in the batch with an open instance, in the engine's order:
    # (deadline, then the queue's order — the batch's after every earlier one, by token id)
    base = max((h[2] for h in host.timers.heap), default=0) + 1
    d_all, seq_all, slot_all, q_all = [], [], [], []
    for slot, p in enumerate(plans):
        n_old = len(p["old"])
        ids = first_token + np.searchsorted(opened, p["rows"] * n_pat + slot)
        p["ids"] = ids
        win = np.flatnonzero(p["match"])
        seq = np.concatenate([p["old_seq"], base + ids - first_token])
        d_all.append(p["deadline"][win])
        seq_all.append(seq[win])
        slot_all.append(np.full(len(win), slot, np.int64))
        q_all.append(win)
        p["n_old"] = n_old
    d, sq, sl, qi = (np.concatenate(x) for x in (d_all, seq_all, slot_all, q_all))
    order = np.lexsort((sq, d))
    sl, qi = sl[order], qi[order]
    # the events the matches and the open instances hold (a column source makes only these)
    used = np.concatenate([p["rows"][(p["match"] | ~p["fired"])[p["n_old"]:]] for p in plans])
    lookup = src.lookup(np.sort(used)) if len(used) else {}
    at = np.concatenate([p["fire_at"][p["match"]] for p in plans])[order]
    total = len(order)
    mark, dones = host.counters.match, [m.done for m in matchers]
    blocks: list[ObjectMatches] = []
    try:
        # (a select list failing on a match declines the batch)
        with declined_on_failure("a select list failed at a timer"):
            for slot, (m, p) in enumerate(zip(matchers, plans, strict=True)):
                rank = np.flatnonzero(sl == slot)
                if len(rank):
                    made = _matches(m, p, qi[rank].tolist(), (mark + 1 + rank).tolist(), lookup)
                    blocks.append(ObjectMatches(at[rank], rank, made))
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
    for b in blocks:
        by[b.events[0].type] = by.get(b.events[0].type, 0) + len(b.events)
    # the queue: the timers the batch passed fired (with a match, idle or trapped)
    host.timers.keep(lambda h: not fired_before(h, last_ts))
    waiting = sorted(w for m, p in zip(matchers, plans, strict=True)
                     for w in _leave_open(m, p, lookup))
    schedule = host.schedule
    for tid, start, m in waiting:  # (asked for as per event: by row, then pattern)
        schedule(start + m.pattern.absence.window, m, tid, m.pattern.absence.zone, start)
    return MatchTable(blocks, [], mark + 1, total, src)


def _matches(m: Any, p: dict, qs: list[int], ids: list[int], lookup: Any
             ) -> list[ComplexEvent]:
    """The complex events of pattern ``m``'s instances ``qs`` (their places in plan ``p``),
    completed at their deadlines with match ``ids``: what Matcher._match makes — lazily
    (rows.lazy_kind: bindings made when read) when the select list copies variables, each
    then a field of ``a``."""
    ab = m.pattern.absence
    window, n_old, old, rows = ab.window, p["n_old"], p["old"], p["rows"]
    evs = [old[q].threads[0].events[0] if q < n_old else lookup[int(rows[q - n_old])]
           for q in qs]
    starts = [p["old_start"][q] if q < n_old else a.ts for q, a in zip(qs, evs, strict=True)]
    m.done = True
    pat = m.pattern
    if pat.select_copy is not None:  # (Matcher._match: the values copied, named as params)
        at = {v: i for i, v in ab.first.binds}
        get = itemgetter(*(at[v] for v in pat.select_copy))
        params = ([get(a.params) for a in evs] if len(pat.select_copy) > 1
                  else [(get(a.params),) for a in evs])
        return list(map(lazy_kind(m.name, pat.auto.params), params,
                        [t + window for t in starts], zip(evs), ids))
    made: list[ComplexEvent] = []
    counters = m.host.counters
    binds = ab.first.binds
    for q, a, t, mid in zip(qs, evs, starts, ids, strict=True):
        bindings = (old[q].threads[0].bindings if q < n_old
                    else {v: a.params[i] for i, v in binds})
        counters.match = mid - 1  # (Matcher._match takes the next id)
        m._match(None, bindings, [a], a, t + window, made.append)
    return made


def _leave_open(m: Any, p: dict, lookup: Any) -> list[tuple[int, Any, Any]]:
    """The instances from before the batch that matched or were trapped leave; those the
    batch opened and that stay open become the per-event step's tokens. Returns (token id,
    start, matcher) of every instance the batch opened whose timer has not fired: each gets
    its timer (trapped ones too: it fires idle), in token id order across patterns."""
    ab = m.pattern.absence
    n_old = p["n_old"]
    gone = p["match"][:n_old] | p["trapped"][:n_old]
    for q in np.flatnonzero(gone).tolist():
        m.unregister(p["old"][q])
    z, state = ab.zone, ab.state
    binds = ab.first.binds
    pending = ~p["fired"][n_old:]
    is_open = p["open"][n_old:]
    timers = []
    for q, tid, live in zip(np.flatnonzero(pending).tolist(), p["ids"][pending].tolist(),
                            is_open[pending].tolist(), strict=True):
        a = lookup[int(p["rows"][q])]
        ts = a.ts
        timers.append((tid, ts, m))
        if live:
            tok = Token(tid, None, ts, [Thread(state, {v: a.params[i] for i, v in binds},
                                               [a], {z: ts}, a)])
            m.register_newest(tok)
    return timers


def _plan(m: Any, cols: TypeColumns, heap: list[tuple]) -> dict | None:
    """Pattern ``m``'s instances over the batch — those from before it (its tokens, each with
    its timer in ``heap``), then one per ``A`` row passing ``f`` — and per instance: its
    deadline, the row its timer fires before (``fire_at``; n: not in the batch), whether it
    fired, was trapped, matched, stays open. None when the batch must go event by event."""
    ab = m.pattern.absence
    src = cols.src
    ts = src.ts
    n = src.n
    # instances from before the batch, with their timers' places in the queue
    old = m.registered_tokens()
    timer = {}
    for h in heap:
        if h[3] == m.slot:
            timer.setdefault(h[4], []).append(h)
    old_seq, old_start = [], []
    for tok in old:
        hs = timer.get(tok.id, ())
        th = tok.threads[0]
        if len(tok.threads) != 1 or len(hs) != 1 or th.state != ab.state or (
                th.zstart or {}).get(ab.zone) != hs[0][6]:
            return None
        old_seq.append(hs[0][2])
        old_start.append(hs[0][6])
    a_type = ab.first.type
    a_all = cols.rows(a_type)
    mask = type_mask(ab.first, cols)
    a_loc = np.flatnonzero(mask) if mask is not None else np.arange(len(a_all))
    rows = a_all[a_loc]
    n_old = len(old)
    r = np.concatenate([np.full(n_old, -1, np.int64), rows])
    deadline = np.concatenate([np.array(old_start, np.float64) + ab.window,
                               ts[rows].astype(np.float64) + ab.window])
    fire_at = np.maximum(r + 1, np.searchsorted(ts, deadline, "left"))
    fired = fire_at < n
    # the first B after each instance's row that the NOT fires for
    pos = ab.forbids[0].position
    b_all = cols.rows(ab.forbid_type)
    bmask = type_mask(pos, cols)
    b_loc = np.flatnonzero(bmask) if bmask is not None else np.arange(len(b_all))
    b_rows = b_all[b_loc]
    if not len(b_rows):
        nxt = np.full(len(r), n, np.int64)
    elif not pos.binds:
        q = np.searchsorted(b_rows, r, "right")
        has = q < len(b_rows)
        nxt = np.where(has, b_rows[np.where(has, q, 0)], n)
    else:
        ib, var = pos.binds[0]
        ia = next(i for i, v in ab.first.binds if v == var)
        held = [tok.threads[0].bindings[var] for tok in old]
        span = n + 2
        i_code, b_code = _codes(cols, src, (a_type, ia, a_loc), (ab.forbid_type, ib, b_loc),
                                held, span)
        comb = b_code * span + b_rows + 1
        order = stable_order(b_code)
        comb_sorted = comb[order]
        q = sorted_search(comb_sorted, i_code, r, span, "right")
        has = q < len(comb_sorted)
        cand = order[np.where(has, q, 0)]
        has &= b_code[cand] == i_code
        nxt = np.where(has, b_rows[cand], n)
    trapped = nxt < fire_at
    return {"old": old, "old_seq": np.array(old_seq, np.int64), "old_start": old_start,
            "rows": rows, "deadline": deadline, "fire_at": fire_at, "fired": fired,
            "trapped": trapped, "match": fired & ~trapped, "open": ~fired & ~trapped}


def _codes(cols: TypeColumns, src: Rows, a: tuple[str, int, np.ndarray],
           b: tuple[str, int, np.ndarray], held: list[Any], span: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the instances' values (``held``, then the ``A`` rows') and the ``B`` rows',
    equal iff the values unify (the pair kernel's key_codes / column_key_codes; Uncodable for
    a NaN)."""
    ka = cols.column(a[0], a[1])[a[2]]
    kb = cols.column(b[0], b[1])[b[2]]
    if isinstance(src, EventRows) and (ka.dtype.kind == "O" or kb.dtype.kind == "O"):
        return column_key_codes(cols, [a, b], held, span)
    try:
        return key_codes(ka, kb, held, span)
    except TypeError:  # (an unhashable value: event by event)
        raise Uncodable from None
