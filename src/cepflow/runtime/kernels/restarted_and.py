"""The kernel of EPL's ``every ((a = A(f) and b = B(g[, key])) where timer:within(Δ))`` over a
batch (runtime.shapes.EsperAnd with a ``clocked`` edge; docs/esper.md, "every ((a and b) where
timer:within(Δ)) in batches") — and of ``every ((a = A(f) -> b = B(g[, key])) where
timer:within(Δ))`` (EsperAnd.followed: one order, ``a`` alone begins an instance): Esper's
guard restarts with the instance (EvalEveryStateNode starts its
child at the statement's start, when it completed and when its guard's timer ended it;
EvalGuardStateNode's timer starts with the child). EPL's reader writes a zero
``timer:interval`` in front inside the guard, so per event each instance is a token made by
the pattern's clock at its restart instant, entering the window then (runtime.interval_clock).

One instance at a time, begun at ``s`` (the statement's start, the row that completed the one
before — it sees only the rows after that one — or the deadline of the one before, ``s_prev
+ Δ``, seeing the rows at or after it: Esper's timer fires before the events of its instant):
it takes the first row of either operand passing its filter before ``s + Δ``, then the first
later row of the other operand of its key passing that one's filter before ``s + Δ`` and
completes; else it ends at ``s + Δ`` and the next begins there — also when no row came at
all (one instance per Δ through a quiet stretch, each taking a token id, as the clock does).

Per row that may begin an instance (numpy, as kernels.conj): the row of the other operand of
its key it would take, whenever that is; the walk (one step per instance, in Python) checks
each against its instance's own deadline, which depends on the instances before it. Each
instance takes its token id before the first row it may see (its restart's timer fires
there): the plan's rows that open instances. It runs in the program split (kernels.split),
beside other patterns where nothing else takes token ids or keeps saved timers as time
passes (split._restarts_alone): its ids, taken between rows, come ahead of every id taken at
the row after them (the split's replay: ``ahead``).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

import numpy as np

from cepflow.events.event import Event
from cepflow.runtime.kernels.conj import (
    _codes,
    _complex_event,
    _matches,
    _take,
    operand_rows,
)
from cepflow.runtime.kernels.filters import passing
from cepflow.runtime.kernels.pair import Uncodable
from cepflow.runtime.kernels.restart import Plan
from cepflow.runtime.rows import EventRows, TypeColumns, distinct
from cepflow.runtime.timers import fired_before
from cepflow.runtime.tokens import Thread, Token

_INF = float("inf")


def plan_restarted_and(m: Any, cols: TypeColumns) -> Plan | None:
    """The pattern ``m`` (shape ``m.pattern.esper_and`` with ``clocked``) over the batch
    ``cols`` (see the module docstring); None when a key value cannot be coded exactly (NaN)
    or the pattern's state is not one the walk starts from, Declined when a filter fails on a
    row."""
    sh = m.pattern.esper_and
    host = m.host
    if m.pending is not None or host.stopped:
        return None
    src = cols.src
    n = src.n
    span = n + 2
    ts = src.ts
    window, z = sh.window, sh.zone
    at_clock = sh.clocked.target  # (the state an instance waits in before either operand)
    old = m.registered_tokens()
    if len(old) > 1 or (old and len(old[0].threads) != 1):
        return None
    holds = bool(old) and old[0].threads[0].state != at_clock  # (the old one took an operand)
    if old:
        s = float(old[0].threads[0].zstart[z])  # (its restart instant)
    elif m.clock_start is not None:  # (a restart due: its clock fires before the first row at
        # or after it — a statement started later than the rows sees none before it)
        s = float(m.clock_start)
    elif host.engine.statement_start is None:  # (the first batch: the statement starts at it)
        s = float(ts[0])
    else:
        return None
    firsts, seconds = [], []
    for first, second in sh.orders:
        firsts.append((first, passing(first, cols)))
        seconds.append((second, passing(second, cols)))
    try:
        old_code, first_codes, second_codes = _codes(sh, cols, firsts, seconds,
                                                     old if holds else [], span)
    except Uncodable:
        return None
    starts, side, code, sorted_seconds = operand_rows(cols, firsts, first_codes, seconds,
                                                      second_codes, span)
    # per row that may begin an instance: the row of the other operand of its key it would
    # take, however late (-1: none in the batch); the walk checks the deadline
    took = np.full(len(starts), -1, np.int64)
    for k in range(len(sh.orders)):
        sel = np.flatnonzero(side == k)
        took[sel] = _take(sorted_seconds[k], code[sel], starts[sel], ts[starts[sel]], ts,
                          _INF, span)
    last = float(ts[-1])
    took_ts = np.where(took >= 0, ts[np.maximum(took, 0)], _INF).tolist()
    start_ts = ts[starts].tolist()
    starts_l, took_l = starts.tolist(), took.tolist()
    # the walk: per instance begun in the batch its row (its id is taken before it) and its
    # restart instant; the matches as indices of starts; the instance open at the end
    inst_rows: list[int] = []
    inst_s: list[float] = []
    done: list[int] = []
    old_took = -1
    p = -1  # (the last row the instance before saw: the next sees the rows after it)
    exists = bool(old)
    open_first = -1  # (the start index the open instance took, -1 none)
    pending: Any = None  # (a restart due after the last row: the clock's)
    if holds:
        th = old[0].threads[0]
        k = next(i for i, (first, _) in enumerate(sh.orders) if first.target == th.state)
        c = int(_take(sorted_seconds[k], np.array([old_code], np.int64),
                      np.array([-1], np.int64), np.array([s]), ts, _INF, span)[0])
        deadline = s + window
        if c >= 0 and float(ts[c]) < deadline:
            old_took, s, p, exists = c, float(ts[c]), c, False
        elif deadline > last:  # (still open: nothing changes)
            return np.zeros(0, np.int64), [], [], _keep_open(m, last)
        else:  # (its timer ends it; the next begins at the deadline)
            s, exists = deadline, False
            p = int(np.searchsorted(ts, deadline, "left")) - 1
    j = 0
    n_starts = len(starts_l)
    completed = old_took >= 0  # (the instance before ended at row p by a match)
    due = m.clock_start if not old else None  # (the clock due, as it was asked for)
    if due is not None:
        p = int(np.searchsorted(ts, s, "left")) - 1
    while True:
        if not exists:
            if p + 1 >= n:  # (the clock as the token path asks for it: at the completing
                # event's own time, or at the deadline)
                pending = (due if due is not None else src.time_at(p) if completed
                           else s)
                break
            inst_rows.append(p + 1)
            inst_s.append(s)
        deadline = s + window
        j = bisect_right(starts_l, p, j)
        if j < n_starts and start_ts[j] < deadline:
            if took_l[j] >= 0 and took_ts[j] < deadline:  # (completes at that row)
                due = None
                done.append(j)
                s, p, exists, completed = took_ts[j], took_l[j], False, True
                continue
            if deadline > last:
                open_first = j
                break
        elif deadline > last:
            break
        # (its timer ends it; the next begins there)
        s, exists, completed, due = deadline, False, False, None
        p = int(np.searchsorted(ts, deadline, "left")) - 1
    open_at_end = pending is None
    # (the instance from before ended, unless it is the one open: it had taken nothing)
    old_ended = bool(old) and not (open_at_end and not inst_rows)
    at = np.array(done, np.int64)
    f_rows, c_rows, sides = starts[at], took[at], side[at]
    if isinstance(src, EventRows):
        evs: Any = src.events
    else:  # (a column source: the events of the matches and of the instance left open)
        used = distinct(np.concatenate([f_rows, c_rows, [old_took],
                                         [starts_l[open_first]] if open_first >= 0 else []]
                                       ).astype(np.int64))
        used = used[used >= 0]
        evs = src.lookup(used) if len(used) else {}
    matches = []
    end_rows: list[int] = []
    if old_took >= 0:
        th = old[0].threads[0]
        k = next(i for i, (first, _) in enumerate(sh.orders) if first.target == th.state)
        held = [e for e in th.events if e.type not in m.pattern.synthetic]
        matches.append(_complex_event(m, sh, k, [*held, evs[old_took]], th.bindings))
        end_rows.append(old_took)
    end_rows += c_rows.tolist()
    matches += _matches(m, sh, cols, f_rows, c_rows, sides, evs)
    first_e = evs[starts_l[open_first]] if open_first >= 0 else None
    first_side = int(side[open_first]) if open_first >= 0 else -1

    def commit(token_ids: np.ndarray) -> None:
        if matches:
            m.done = True
        if old and old_ended:
            m.unregister(old[0])
        # (the timers the per-event engine fired before the last row, its clock's among them)
        host.timers.keep(lambda h: h[3] != m.slot or not fired_before(h, last))
        m.clock_start = None
        ids = token_ids.tolist()
        # each instance's deadline asked for at its restart, in that order; those after the
        # last row stay (the completed ones' fire idle, as the token path's)
        for tid, begun in zip(ids, inst_s, strict=True):
            if begun + window > last:
                host.schedule(begun + window, m, tid, z, begun)
        if open_at_end:
            if inst_rows:
                begun = inst_s[-1]
                clock = m.pattern.clock
                tick = Event(clock.type, (), begun, clock.type)
                tok = Token(ids[-1], None, begun, [Thread(at_clock, {}, [tick], {z: begun},
                                                          tick)])
            else:  # (the instance from before, which had taken nothing)
                tok = old[0]
                m.unregister(tok)
            if first_e is not None:
                th = tok.threads[0]
                first = sh.orders[first_side][0]
                tok.threads = [Thread(first.target, {v: first_e.params[i]
                                                     for i, v in first.position.binds},
                                      [*th.events, first_e], th.zstart, first_e)]
            m.register(tok)
        else:
            m.start_clock(pending)  # (the restart due at the last row's instant)

    return np.array(inst_rows, np.int64), end_rows, matches, commit


def _keep_open(m: Any, last: float) -> Any:
    """The commit of a batch in which the instance from before took nothing and stays open."""

    def commit(token_ids: np.ndarray) -> None:
        m.host.timers.keep(lambda h: h[3] != m.slot or not fired_before(h, last))

    return commit
