"""The restart kernel: Esper's ``every (a = A(f) -> b = B(g[, key]))`` over a batch
(runtime.shapes.EsperRestart; motorbike's DriverLeftSeat, examples/every's every1). One
instance at a time: it takes the first ``A`` passing ``f``, then the first later ``B`` of its
key on which ``g`` holds, and completes; the next instance begins with the events after it.

When ``g`` reads only its own event (and the key), the walk is numpy's (:func:`_walk`): per
``A`` row, one ``searchsorted`` finds the ``B`` its instance would take and another the ``A``
that would open the next instance after that match; the instances of the batch are then the
chain of those successors from the first ``A`` (a list walk, one step per match) — or, when
the ``A`` rows far outnumber the ``B`` rows (the chain is short: each step but its last takes
a distinct ``B``), the same two searches step by step for the chain's instances only
(:func:`_short_chain`). A guard
reading ``a``'s fields is evaluated per candidate, in the walk's order, as the per-event step
evaluates it (:func:`_guarded_walk`). The matches whose select list names only their events'
fields are lazy complex events (kernels.pair.lazy_matches), the others are made as the token
path makes them. It runs in the program split (kernels.split), which gives the ids.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from itertools import repeat
from typing import Any

import numpy as np

from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.kernels.filters import passing
from cepflow.runtime.kernels.frame import Declined, declined_on_failure
from cepflow.runtime.kernels.pair import (
    Uncodable,
    key_codes,
    lazy_matches,
    lazy_shape,
    reads_own_event,
    select_fields,
    sorted_search,
    stable_order,
)
from cepflow.runtime.rows import EventRows, TypeColumns, distinct, picked
from cepflow.runtime.tokens import Thread, Token

#: what a kernel of the split plans for a batch: the rows that open an instance (in order), the
#: rows (an array or a list) and complex events of its matches (in detection order), and what
#: makes its state that of the batch's end given the token ids of those instances
Plan = tuple[np.ndarray, "np.ndarray | list[int]", list[ComplexEvent],
             Callable[[np.ndarray], None]]

#: what a walk finds: the rows that open instances (in order), per match its A row (-1: the
#: instance from before the batch) and B row, and the A row of the instance left waiting (-1:
#: none begun in the batch)
Walk = tuple[np.ndarray, np.ndarray, np.ndarray, int]


def plan_restart(m: Any, cols: TypeColumns) -> Plan | None:
    """The restart pattern ``m`` over the batch ``cols`` (see the module docstring); None when
    a key value cannot be coded exactly (NaN), Declined when a filter or guard fails on a row."""
    rs = m.pattern.restart
    if m.pending is not None:
        return None
    src = cols.src
    span = src.n + 2
    a_pos, b_pos = rs.first.position, rs.second.position
    a_loc = passing(rs.first, cols)
    a_rows = cols.rows(a_pos.type)[a_loc]
    guard = None if reads_own_event(rs.second) else b_pos.filter
    b_loc = (passing(rs.second, cols) if guard is None
             else np.arange(len(cols.rows(b_pos.type))))
    b_rows = cols.rows(b_pos.type)[b_loc]
    old = m.registered_tokens()  # (at most one: the instance under way)
    if rs.key_var is None:
        a_code = np.zeros(len(a_rows) + len(old), np.int64)
        b_code = np.zeros(len(b_rows), np.int64)
    else:
        ka = dict((v, i) for i, v in a_pos.binds)[rs.key_var]
        try:
            a_code, b_code = key_codes(
                cols.column(a_pos.type, ka)[a_loc], cols.column(b_pos.type, rs.key_b)[b_loc],
                [t.threads[0].bindings.get(rs.key_var) for t in old], span)
        except Uncodable:
            return None
    # the B rows by (key, row): a key's rows after a given row are a run from a searchsorted
    b_keys = b_code * span + b_rows
    order = stable_order(b_code)  # (by key, then row: b_rows ascend)
    b_keys, b_at, b_code = b_keys[order], b_rows[order], b_code[order]
    old_code = int(a_code[0]) if old else None
    events = src.lookup  # (rows -> events: all of them for an event batch)
    if guard is None:
        walk = _walk(a_rows, a_code[len(old):], b_keys, b_at, b_code, old_code, span)
    else:
        walk = _guarded_walk(rs, guard, a_rows, a_code[len(old):], b_keys, b_at, old,
                             old_code, span, events, src.n)
    starts, a_of, b_of, waiting = walk
    if isinstance(src, EventRows):  # (all of them in hand)
        evs: Any = src.events
    else:  # (a column source: the events of the matches and of the instance left open)
        used = distinct(np.concatenate([a_of[a_of >= 0], b_of,
                                         [waiting] if waiting >= 0 else []])).astype(np.int64)
        evs = events(used) if len(used) else {}
    matches: list[ComplexEvent] = []
    fresh = 0
    if len(a_of) and a_of[0] < 0:  # the instance from before the batch completes first
        th = old[0].threads[0]
        matches.append(_complex_event(m, rs, [*th.events, evs[int(b_of[0])]], th.bindings))
        fresh = 1
    a_new, b_new = a_of[fresh:].tolist(), b_of[fresh:].tolist()
    fields = select_fields(m, [a_pos.binds, rs.b_new])
    if fields is not None:  # (their values are fields of their events: made when read)
        shape = lazy_shape(m, [a_pos.type, b_pos.type], fields,
                           {t: len(cols.schemas[t].params) for t in (a_pos.type, b_pos.type)})
        matches += lazy_matches(zip(picked(evs, a_new), picked(evs, b_new), strict=True),
                                shape, repeat(0))
    else:
        for a_row, b_row in zip(a_new, b_new, strict=True):
            a = evs[a_row]
            matches.append(_complex_event(m, rs, [a, evs[b_row]],
                                          {v: a.params[i] for i, v in a_pos.binds}))

    def commit(token_ids: np.ndarray) -> None:
        if len(a_of) and a_of[0] < 0:
            m.unregister(old[0])
        if len(a_of):
            m.done = True
        if waiting >= 0:
            a: Event = evs[waiting]
            th = Thread(rs.state, {v: a.params[i] for i, v in a_pos.binds}, [a], None, a)
            m.register(Token(int(token_ids[-1]), None, a.ts, [th]))

    return starts, b_of, matches, commit


def _complex_event(m: Any, rs: Any, held: list[Event], bindings: dict[str, Any]
                   ) -> ComplexEvent:
    """The complex event of a match that took ``held`` (its last event the B), the instance
    having bound ``bindings`` before it, as the token path makes it (id given later)."""
    b = held[-1]
    full = dict(bindings)
    for i, v in rs.b_new:
        full[v] = b.params[i]
    params, out = m.result(full, b.ts, b)
    return ComplexEvent(m.name, params, b.ts, out, held, 0)


#: a walk steps match by match (:func:`_short_chain`) when the A rows outnumber the B rows
#: this many times: the chain takes a distinct B at each step but its last, so it is short,
#: and per-step searches cost less than the per-A-row columns (motorbike's DriverLeftSeat:
#: 200,000 A rows, 60 B rows, a 61-step chain)
_SHORT_CHAIN = 128


def _walk(a_rows: np.ndarray, a_code: np.ndarray, b_keys: np.ndarray, b_at: np.ndarray,
          b_code: np.ndarray, old_code: int | None, span: int) -> Walk:
    """The instances of a batch whose ``B`` filter reads only its event: ``a_rows`` (their
    key codes ``a_code``) the A rows passing ``f``; ``b_keys`` the B rows passing ``g`` as
    ``code * span + row``, sorted, with their rows ``b_at`` and codes ``b_code``;
    ``old_code`` the key code of the instance from before the batch (None: none)."""
    none = np.zeros(0, np.int64)
    n_a = len(a_rows)
    j, old_b = 0, none
    if old_code is not None:  # the instance under way takes the first B of its key, if any
        q0 = int(np.searchsorted(b_keys, old_code * span))
        if q0 == len(b_keys) or int(b_code[q0]) != old_code:
            return none, none, none, -1
        old_b = b_at[q0:q0 + 1]
        j = int(np.searchsorted(a_rows, old_b[0] + 1))
    if (len(b_keys) + 1) * _SHORT_CHAIN <= n_a:
        at, took_at = _short_chain(j, a_rows, a_code, b_keys, b_at, b_code, span)
    else:
        at, took_at = _chain(j, a_rows, a_code, b_keys, b_at, b_code, span)
    done = took_at >= 0
    waiting = int(a_rows[at[-1]]) if len(at) and took_at[-1] < 0 else -1
    a_of = np.concatenate([np.full(len(old_b), -1, np.int64), a_rows[at[done]]])
    return a_rows[at], a_of, np.concatenate([old_b, took_at[done]]), waiting


def _chain(j: int, a_rows: np.ndarray, a_code: np.ndarray, b_keys: np.ndarray,
           b_at: np.ndarray, b_code: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """The chain of instances from A row ``j`` (:func:`_walk`'s arguments): their places among
    the A rows and the B row each takes (-1: none, the chain's last) — per A row, one
    ``searchsorted`` finds the B its instance would take and another the A that opens the
    next instance after that match, then a list walk, one step per instance."""
    n_a = len(a_rows)
    took = np.full(n_a, -1, np.int64)  # per A row: the B its instance takes (-1: none yet)
    if len(b_keys) and n_a:
        q = sorted_search(b_keys, a_code, a_rows, span)
        has = q < len(b_keys)
        q = np.where(has, q, 0)
        has &= b_code[q] == a_code
        took = np.where(has, b_at[q], -1)
    # per A row: the A that opens the next instance after its match (the first A after its B)
    nxt = np.searchsorted(a_rows, took + 1)
    took_l, nxt_l = took.tolist(), nxt.tolist()
    chain = []
    while j < n_a:  # (one step per instance: the successors' chain from the first A)
        chain.append(j)
        if took_l[j] < 0:
            break
        j = nxt_l[j]
    at = np.array(chain, np.int64)
    return at, took[at]


def _short_chain(j: int, a_rows: np.ndarray, a_code: np.ndarray, b_keys: np.ndarray,
                 b_at: np.ndarray, b_code: np.ndarray, span: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_chain` step by step: at each instance, the first B of its key after its A row
    (a binary search in ``b_keys``), then the first A row after that B — the same searches
    for the chain's instances only. The B rows taken ascend, so the chain has at most one
    step more than there are B rows."""
    keys, rows, codes = b_keys.tolist(), b_at.tolist(), b_code.tolist()
    n_a, n_b = len(a_rows), len(keys)
    chain: list[int] = []
    took: list[int] = []
    for _ in range(n_b + 1):  # (the bound: a step that took no B ends the chain)
        if j >= n_a:
            break
        chain.append(j)
        code = int(a_code[j])
        q = bisect_left(keys, code * span + int(a_rows[j]) + 1)
        b = rows[q] if q < n_b and codes[q] == code else -1
        took.append(b)
        if b < 0:
            break
        j = int(np.searchsorted(a_rows, b + 1))
    return np.array(chain, np.int64), np.array(took, np.int64)


def _guarded_walk(rs: Any, guard: Any, a_rows: np.ndarray, a_code: np.ndarray,
                  b_keys: np.ndarray, b_at: np.ndarray, old: list[Any], old_code: int | None,
                  span: int, events: Any, n: int) -> Walk:
    """The instances of a batch whose ``B`` guard reads ``a``'s fields (arguments as for
    :func:`_walk`, ``b_keys`` every B row; ``old`` the instance from before): match by match,
    two binary searches each, the guard evaluated on the candidates of the instance's key in
    order, with the bindings the per-event step gives it; more evaluations than the batch is
    long times 4 decline it."""
    b_sorted, b_list = b_keys.tolist(), b_at.tolist()
    a_list, a_codes = a_rows.tolist(), a_code.tolist()
    a_pos = rs.first.position
    budget = 4 * n + 1000

    def bound(inst: int) -> dict[str, Any]:
        if inst < 0:
            return old[0].threads[0].bindings
        a = events(np.array([inst]))[inst]
        return {v: a.params[i] for i, v in a_pos.binds}

    starts: list[int] = []
    pairs: list[tuple[int, int]] = []  # (A row or -1 for the instance from before, B row)
    pos = 0
    inst, code = (-1, old_code) if old_code is not None else (None, 0)
    while True:
        if inst is None:  # waiting for an A
            j = bisect_left(a_list, pos)
            if j == len(a_list):
                break
            inst, code = a_list[j], a_codes[j]
            starts.append(inst)
            pos = inst + 1
            continue
        q = bisect_left(b_sorted, code * span + pos)
        took = -1
        while q < len(b_sorted) and b_sorted[q] // span == code:
            row = b_list[q]
            budget -= 1
            if budget < 0:
                raise Declined("too many candidates for a guard: event by event")
            if _guard_holds(guard, rs, bound(inst), events(np.array([row]))[row]):
                took = row
                break
            q += 1
        if took < 0:
            break
        pairs.append((inst, took))
        inst, pos = None, took + 1
    waiting = inst if inst is not None and inst >= 0 else -1
    a_of = np.array([a for a, _ in pairs], np.int64)
    b_of = np.array([b for _, b in pairs], np.int64)
    return np.array(starts, np.int64), a_of, b_of, waiting


def _guard_holds(guard: Any, rs: Any, bindings: dict[str, Any], e: Event) -> bool:
    """``g`` on ``e`` with the instance's bindings and the row's new ones (as the per-event
    step binds them); a failure declines the batch."""
    nb = dict(bindings)
    for i, v in rs.b_new:
        nb[v] = e.params[i]
    with declined_on_failure("a guard failed on a row: event by event"):
        ok = bool(guard(e, nb))
    return ok
