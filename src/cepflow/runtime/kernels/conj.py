"""The kernel of Esper's ``every (a = A(f) and b = B(g[, key])) [where timer:within(Δ)]``
over a batch (runtime.shapes.EsperAnd; docs/esper.md, "every (a and b)"): one instance at a
time — *restart* — begun by the first row of either operand passing its filter; it takes the
first later row of the other operand of its key passing that one's filter and completes, or
its ``within`` deadline passes first (Esper's timer fires before the events of its instant) and
it ends. The row that completes an instance begins nothing; the next instance begins at the
first row of either operand after it, or at the first at or after the deadline. With operands
of one type (EsperAnd.merged) a row passing both filters is both operands at once: its
instance completes on that row alone.

Per row that may begin an instance (numpy): the row its instance would take (one
``searchsorted`` per operand over the other operand's rows sorted by (key, row), as the pair
kernel's stages) and the first row that may begin the next instance; the instances of the
batch are the chain of those successors from the first such row (a list walk, one step per
instance, as kernels.restart). It runs in the program split (kernels.split), which gives the
ids.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.kernels.filters import passing
from cepflow.runtime.kernels.pair import (
    Uncodable,
    key_codes,
    lazy_matches,
    lazy_shape,
    select_fields,
    skip_idle,
    sorted_search,
    stable_order,
)
from cepflow.runtime.kernels.restart import Plan
from cepflow.runtime.rows import EventRows, TypeColumns, distinct, picked
from cepflow.runtime.timers import fired_before
from cepflow.runtime.tokens import Thread, Token


def plan_and(m: Any, cols: TypeColumns) -> Plan | None:
    """The pattern ``m`` (shape ``m.pattern.esper_and``) over the batch ``cols`` (see the
    module docstring); None when a key value cannot be coded exactly (NaN), Declined when a
    filter fails on a row."""
    sh = m.pattern.esper_and
    src = cols.src
    n = src.n
    span = n + 2
    ts = src.ts
    # per order o: the rows its first operand's event may begin an instance at, and the
    # rows of the other operand that may complete it
    firsts, seconds = [], []
    for first, second in sh.orders:
        firsts.append((first, passing(first, cols)))
        seconds.append((second, passing(second, cols)))
    old = m.registered_tokens()  # (at most one: the instance under way)
    try:
        codes = _codes(sh, cols, firsts, seconds, old, span)
    except Uncodable:
        return None
    old_code, first_codes, second_codes = codes
    starts, side, code, sorted_seconds = operand_rows(cols, firsts, first_codes, seconds,
                                                      second_codes, span)
    if sh.merged is not None:  # (operands of one type: a row passing both filters is both
        # operands at once, side 2 — its instance completes on it)
        dup = np.flatnonzero(starts[1:] == starts[:-1])  # (stable: order 0's, then 1's)
        side[dup] = 2
        keep = np.ones(len(starts), bool)
        keep[dup + 1] = False
        starts, side, code = starts[keep], side[keep], code[keep]
    # per start row: the row its instance takes (-1: none within Δ)
    took = np.where(side == 2, starts, -1)
    for s in range(len(sh.orders)):
        sel = np.flatnonzero(side == s)
        took[sel] = _take(sorted_seconds[s], code[sel], starts[sel], ts[starts[sel]], ts,
                          sh.window, span)
    # per start row: the first row the next instance may begin at (n: the instance is still
    # open at the batch's end)
    after = _after_deadline(ts, starts, ts[starts], sh.window)
    nxt = np.where(took >= 0, took + 1, after)
    still = (took < 0) & (after >= n)
    nxt_start = np.searchsorted(starts, nxt)
    pos, old_took, old_open = 0, -1, False
    if old:  # the instance under way: completed, ended by its deadline or still open
        tok = old[0]
        th = tok.threads[0]
        s = next(i for i, (first, _) in enumerate(sh.orders) if first.target == th.state)
        begun = th.zstart[sh.zone] if sh.zone is not None else tok.created
        old_took = int(_take(sorted_seconds[s], np.array([old_code], np.int64),
                             np.array([-1], np.int64), np.array([begun], np.float64), ts,
                             sh.window, span)[0])
        pos = (old_took + 1 if old_took >= 0
               else int(_after_deadline(ts, np.array([-1]), np.array([begun]), sh.window)[0]))
        old_open = old_took < 0 and pos >= n
    still_l, nxt_start_l = still.tolist(), nxt_start.tolist()
    chain: list[int] = []
    j = int(np.searchsorted(starts, pos)) if not old_open else len(starts)
    waiting = -1
    while j < len(starts):  # (one step per instance: the successors' chain)
        chain.append(j)
        if still_l[j]:  # (open at the batch's end)
            waiting = j
            break
        j = nxt_start_l[j]
    at = np.array(chain, np.int64)
    done = at[took[at] >= 0]
    if isinstance(src, EventRows):
        evs: Any = src.events
    else:  # (a column source: the events of the matches and of the instance left open)
        used = distinct(np.concatenate([starts[done], took[done], [old_took],
                                         [starts[waiting]] if waiting >= 0 else []]
                                       ).astype(np.int64))
        used = used[used >= 0]
        evs = src.lookup(used) if len(used) else {}
    matches: list[ComplexEvent] = []
    end_rows: list[int] = []
    if old_took >= 0:
        tok = old[0]
        th = tok.threads[0]
        s = next(i for i, (first, _) in enumerate(sh.orders) if first.target == th.state)
        matches.append(_complex_event(m, sh, s, [*th.events, evs[old_took]], th.bindings))
        end_rows.append(old_took)
    end_rows += took[done].tolist()
    matches += _matches(m, sh, cols, starts[done], took[done], side[done], evs)

    def commit(token_ids: np.ndarray) -> None:
        if matches:
            m.done = True
        if old and not old_open:
            m.unregister(old[0])
        z = sh.zone
        if z is not None:  # (the timers the per-event engine ran before the last row)
            last_ts = float(ts[-1])
            m.host.timers.keep(lambda h: h[3] != m.slot or not fired_before(h, last_ts))
            # the later ones of the instances it began and completed fire idle, moving the
            # clock (Matcher.skipped, Engine._advance; kernels.pair._skip_completed)
            # (not one that an event completed as both operands: it never waited)
            waited = done[side[done] != 2]
            due = ts[starts[waited]].astype(np.float64) + sh.window
            skip_idle(m, due[due > last_ts].tolist(), last_ts)
        if waiting >= 0:
            r = int(starts[waiting])
            first, _ = sh.orders[int(side[waiting])]
            e: Event = evs[r]
            th = Thread(first.target, {v: e.params[i] for i, v in first.position.binds}, [e],
                        None if z is None else {z: e.ts}, e)
            tok = Token(int(token_ids[-1]), None, e.ts, [th])
            m.register(tok)
            if z is not None:
                m.schedule_zones(tok, th)

    return starts[at], end_rows, matches, commit


def operand_rows(cols: TypeColumns, firsts: list, first_codes: list[np.ndarray],
                 seconds: list, second_codes: list[np.ndarray], span: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple]]:
    """The rows that may begin an instance, in row order, with their order (side) and key
    code; and per order the other operand's rows sorted by (key, row), as :func:`_take` reads
    them."""
    rows = [cols.rows(e.position.type)[loc] for e, loc in firsts]
    starts = np.concatenate(rows)
    side = np.repeat(np.arange(len(rows), dtype=np.int64), [len(r) for r in rows])
    code = np.concatenate(first_codes)
    o = np.argsort(starts, kind="stable")
    sorted_seconds = []
    for (e, loc), c in zip(seconds, second_codes, strict=True):
        r = cols.rows(e.position.type)[loc]
        order = stable_order(c)  # (by key, then row: r ascends)
        sorted_seconds.append(((c * span + r + 1)[order], r[order], c[order]))
    return starts[o], side[o], code[o], sorted_seconds


def _codes(sh: Any, cols: TypeColumns, firsts: list, seconds: list, old: list[Any],
           span: int) -> tuple[int | None, list[np.ndarray], list[np.ndarray]]:
    """The key codes (kernels.pair.key_codes: equal iff the values unify) of the instance
    under way (None: none), of each order's first rows and of its second rows — all zero
    without a key. Uncodable for a NaN."""
    if sh.key_var is None:
        return ((0 if old else None), [np.zeros(len(loc), np.int64) for _, loc in firsts],
                [np.zeros(len(loc), np.int64) for _, loc in seconds])
    ka = [cols.column(e.position.type, k)[loc]
          for (e, loc), (k, _) in zip(firsts, sh.keys, strict=True)]
    kb = [cols.column(e.position.type, k)[loc]
          for (e, loc), (_, k) in zip(seconds, sh.keys, strict=True)]
    if len({c.dtype.kind for c in ka + kb}) > 1:
        ka, kb = [c.astype(object) for c in ka], [c.astype(object) for c in kb]
    held = [t.threads[0].bindings.get(sh.key_var) for t in old]
    a_code, b_code = key_codes(np.concatenate(ka), np.concatenate(kb), held, span)
    split_a = np.cumsum([len(held), *(len(c) for c in ka)])[:-1]
    split_b = np.cumsum([len(c) for c in kb])[:-1]
    parts_a = np.split(a_code, split_a)
    return (int(parts_a[0][0]) if held else None), parts_a[1:], np.split(b_code, split_b)


def _take(seconds: tuple[np.ndarray, np.ndarray, np.ndarray], code: np.ndarray,
          after: np.ndarray, begun: np.ndarray, ts: np.ndarray, window: float, span: int
          ) -> np.ndarray:
    """Per instance (its key ``code``, the row ``after`` which it looks, the time its first
    event ``begun``), the first row of ``seconds`` (``(code * span + row + 1`` sorted, the
    rows, the codes)) of its key after that row within Δ of ``begun``, else -1."""
    keys, rows, codes = seconds
    if not len(code):
        return np.zeros(0, np.int64)
    if not len(keys):
        return np.full(len(code), -1, np.int64)
    q = sorted_search(keys, code, after, span, "right")
    has = q < len(keys)
    q = np.where(has, q, 0)
    has &= codes[q] == code
    row = rows[q]
    # (Esper's timer fires before an event at its deadline: one exactly Δ after is too late)
    has &= ts[np.where(has, row, 0)] - begun < window
    return np.where(has, row, -1)


def _after_deadline(ts: np.ndarray, rows: np.ndarray, begun: np.ndarray, window: float
                    ) -> np.ndarray:
    """Per instance begun at row ``rows`` (-1: before the batch) at time ``begun``, the first
    row after it at or after its deadline ``begun + Δ`` — where its timer has fired — else
    ``len(ts)`` (open at the batch's end)."""
    if window == float("inf"):
        return np.full(len(rows), len(ts), np.int64)
    return np.maximum(np.searchsorted(ts, begun + window, "left"), rows + 1)


def _matches(m: Any, sh: Any, cols: TypeColumns, first_rows: np.ndarray,
             second_rows: np.ndarray, sides: np.ndarray, evs: Any) -> list[ComplexEvent]:
    """The complex events of the instances begun in the batch (in detection order), lazy
    where the select list names only fields of their events (per order: the event first
    taken first, as the token path holds them), else as the token path makes them."""
    out: list[Any] = [None] * len(first_rows)
    arity = {t: len(cols.schemas[t].params) for t in cols.schemas}
    if sh.merged is not None:  # (one event both operands: a match of that event alone)
        idx = np.flatnonzero(sides == 2)
        if len(idx):
            pos = sh.merged.position
            e_rows = first_rows[idx].tolist()
            fields = select_fields(m, [pos.binds])
            if fields is not None:
                shape = lazy_shape(m, [pos.type], fields, arity)
                made = lazy_matches(zip(picked(evs, e_rows), strict=True), shape,
                                    [0] * len(idx))
            else:
                made = []
                for r in e_rows:
                    e = evs[r]
                    made.append(_complex_event(m, sh, -1, [e], {
                        v: e.params[i] for i, v in pos.binds}))
            for i, ce in zip(idx.tolist(), made, strict=True):
                out[i] = ce
    for s, (first, second) in enumerate(sh.orders):
        idx = np.flatnonzero(sides == s)
        if not len(idx):
            continue
        a_rows, b_rows = first_rows[idx].tolist(), second_rows[idx].tolist()
        fields = select_fields(m, [first.position.binds, sh.new[s]])
        if fields is not None:
            shape = lazy_shape(m, [first.position.type, second.position.type], fields, arity)
            made = lazy_matches(zip(picked(evs, a_rows), picked(evs, b_rows), strict=True),
                                shape, [0] * len(idx))
        else:
            made = []
            for a_row, b_row in zip(a_rows, b_rows, strict=True):
                a = evs[a_row]
                made.append(_complex_event(m, sh, s, [a, evs[b_row]],
                                           {v: a.params[i] for i, v in first.position.binds}))
        for i, ce in zip(idx.tolist(), made, strict=True):
            out[i] = ce
    return out


def _complex_event(m: Any, sh: Any, s: int, held: list[Event], bindings: dict[str, Any]
                   ) -> ComplexEvent:
    """The complex event of an instance of order ``s`` that took ``held`` (its last event the
    second operand's), having bound ``bindings`` before it — ``s`` -1: one event that was
    both operands, ``bindings`` all of them —, as the token path makes it (id given
    later)."""
    last = held[-1]
    full = dict(bindings)
    for i, v in sh.new[s] if s >= 0 else ():  # (s -1: the merged step bound them all)
        full[v] = last.params[i]
    params, out = m.result(full, last.ts, last)
    return ComplexEvent(m.name, params, last.ts, out, held, 0)
