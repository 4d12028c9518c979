"""The restart kernel: Esper's ``every (a = A(f) -> b = B(g[, key]))`` over a batch
(runtime.shapes.EsperRestart; motorbike's DriverLeftSeat, examples/every's every1). One
instance at a time: it takes the first ``A`` passing ``f``, then the first later ``B`` of its
key on which ``g`` holds, and completes; the next instance begins with the events after it.
The batch is walked match by match — two binary searches per match over the rows passing the
filters (``g``, when it reads ``a``'s fields, per candidate) — so its cost follows the number of
matches, not of rows. It runs in the program split (kernels.split), which gives the ids.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from typing import Any

import numpy as np

from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.kernels.filters import passing
from cepflow.runtime.kernels.frame import Declined, declined_on_failure
from cepflow.runtime.kernels.pair import Uncodable, key_codes, reads_own_event
from cepflow.runtime.rows import TypeColumns
from cepflow.runtime.tokens import Thread, Token

#: what a kernel of the split plans for a batch: the rows that open an instance (in order), the
#: rows and complex events of its matches (in detection order), and what makes its state that
#: of the batch's end given the token ids of those instances
Plan = tuple[np.ndarray, list[int], list[ComplexEvent], Callable[[np.ndarray], None]]


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
    order = np.argsort(b_code * span + b_rows, kind="stable")
    b_sorted = (b_code * span + b_rows)[order].tolist()
    b_at = b_rows[order].tolist()
    a_list = a_rows.tolist()
    a_codes = a_code[len(old):].tolist()
    events = src.lookup  # (rows -> events: all of them for an event batch)
    budget = 4 * src.n + 1000

    def bound(inst: int) -> dict[str, Any]:
        if inst < 0:
            return old[0].threads[0].bindings
        a = events(np.array([inst]))[inst]
        return {v: a.params[i] for i, v in a_pos.binds}

    starts: list[int] = []
    pairs: list[tuple[int, int]] = []  # (A row or -1 for the instance from before, B row)
    pos = 0
    inst, code = (-1, int(a_code[0])) if old else (None, 0)
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
            row = b_at[q]
            if guard is None:
                took = row
                break
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
    used = np.array(sorted({r for p in pairs for r in p if r >= 0} | set(starts[-1:])),
                    np.int64)
    evs = events(used) if len(used) else {}
    matches = []
    for a_row, b_row in pairs:
        b = evs[b_row]
        if a_row < 0:
            th = old[0].threads[0]
            held, full = [*th.events, b], dict(th.bindings)
        else:
            a = evs[a_row]
            held, full = [a, b], {v: a.params[i] for i, v in a_pos.binds}
        for i, v in rs.b_new:
            full[v] = b.params[i]
        params, bindings = m.result(full, b.ts, b)
        matches.append(ComplexEvent(m.name, params, b.ts, bindings, held, 0))
    waiting = inst if inst is not None and inst >= 0 else None

    def commit(token_ids: np.ndarray) -> None:
        if old and pairs and pairs[0][0] < 0:
            m.unregister(old[0])
        if pairs:
            m.done = True
        if waiting is not None:
            a: Event = evs[waiting]
            th = Thread(rs.state, {v: a.params[i] for i, v in a_pos.binds}, [a], None, a)
            m.register(Token(int(token_ids[-1]), None, a.ts, [th]))

    return np.array(starts, np.int64), [b for _, b in pairs], matches, commit


def _guard_holds(guard: Any, rs: Any, bindings: dict[str, Any], e: Event) -> bool:
    """``g`` on ``e`` with the instance's bindings and the row's new ones (as the per-event
    step binds them); a failure declines the batch."""
    nb = dict(bindings)
    for i, v in rs.b_new:
        nb[v] = e.params[i]
    with declined_on_failure("a guard failed on a row: event by event"):
        ok = bool(guard(e, nb))
    return ok
