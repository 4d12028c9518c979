"""The kernel of Esper's ``(every a = A(f)) where timer:within(Δ)`` — the guard at the top of
the pattern, one window for all instances from the statement's start (runtime.shapes.EsperWhole;
Zone.whole; docs/esper.md). EvalGuardStateNode starts its timer with its child at the
statement's start and quits everything under it when the timer fires; until then
EvalEveryStateNode restarts its child after every result. Per event the pattern is a zero
clock at the start: its timer fires before the first event at or after the start and begins
the one instance (a token id, the window entered at the start, its deadline a timer), which
forks a match per event passing the filter (Matcher._spawn: a token id each) until the
deadline's timer ends it, and with it the pattern (Matcher.quit).

Over a batch (in the program split, kernels.split): the instance begins at the clock's due
instant (the statement's start: the first row's time in the first batch) — its id taken ahead
of the first row at or after it, as time passes (the split's ``ahead`` plans) — or is under
way from an earlier batch; its matches are the rows at or after its beginning and before its
deadline passing their type's filter, each taking a token id at its row. At the batch's end
the state is the token path's: the instance still open (its clock event, the window entered)
with its deadline queued, or nothing once the deadline passed before a row; the clock due when
it is after the last row."""

from __future__ import annotations

from typing import Any

import numpy as np

from cepflow.events.event import Event
from cepflow.runtime.kernels.each import single_matches
from cepflow.runtime.kernels.filters import passing
from cepflow.runtime.kernels.restart import Plan
from cepflow.runtime.rows import TypeColumns
from cepflow.runtime.timers import fired_before
from cepflow.runtime.tokens import Thread, Token

_NONE = np.zeros(0, np.int64)


def plan_whole(m: Any, sh: Any, cols: TypeColumns) -> Plan | None:
    """The pattern ``m`` of shape ``sh`` (runtime.shapes.EsperWhole) over the batch ``cols``
    (see the module docstring): the rows that take token ids (the instance's beginning ahead
    of its first row, then one per match), the matches' rows and complex events, and the
    commit; None when its state is not one the plan starts from. A filter failing on a row
    declines the batch (kernels.frame.Declined, from kernels.filters)."""
    host = m.host
    if m.pending is not None or host.stopped:
        return None
    src = cols.src
    ts = src.ts
    last = float(ts[-1])
    old = m.registered_tokens()
    if len(old) > 1 or (old and len(old[0].threads) != 1):
        return None
    begins = False
    if old:  # (the instance under way: begun at its window's start)
        s = float(old[0].threads[0].zstart[sh.zone])
    elif m.clock_start is not None:  # (the clock due: it fires before the first row at or
        s = float(m.clock_start)  # after it)
        begins = True
    elif host.engine.statement_start is None:  # (the first batch: the statement starts at it)
        s, begins = float(ts[0]), True
    else:  # (over: the deadline ended it)
        return _NONE, _NONE, [], _over(m, last)
    first = int(np.searchsorted(ts, s, "left"))  # (the rows the instance sees)
    if begins and first >= len(ts):  # (the clock fires after the batch: nothing changes)
        return _NONE, _NONE, [], _over(m, last)
    deadline = s + sh.window
    end = int(np.searchsorted(ts, deadline, "left"))  # (its timer fires before row ``end``)
    parts, ops = [], []
    edges = list(sh.by_type.values())
    for k, e in enumerate(edges):
        rows = cols.rows(e.position.type)
        rows = rows[passing(e, cols)]
        rows = rows[(rows >= first) & (rows < end)]
        parts.append(rows)
        ops.append(np.full(len(rows), k, np.int64))
    rows = np.concatenate([_NONE, *parts]).astype(np.int64)
    op = np.concatenate([_NONE, *ops])
    o = np.argsort(rows, kind="stable")  # (one edge per type: one match per row)
    rows, op = rows[o], op[o]
    found = single_matches(m, edges, rows, op, cols)
    ended = end < len(ts)  # (its deadline passed before a row of the batch)
    id_rows = np.concatenate([[first] if begins else _NONE, rows]).astype(np.int64)
    z = sh.zone

    def commit(token_ids: np.ndarray) -> None:
        if found or begins:
            m.done = True
        # (the clock's timer and the window's, where they fired before the last row)
        host.timers.keep(lambda h: h[3] != m.slot or not fired_before(h, last))
        if begins:
            m.clock_start = None
        if ended:
            for tok in old:
                m.unregister(tok)
            return
        if begins:
            tid = int(token_ids[0])
            clock = m.pattern.clock
            tick = Event(clock.type, (), s, clock.type)
            m.register(Token(tid, None, s, [Thread(sh.state, {}, [tick], {z: s}, tick)]))
            host.schedule(deadline, m, tid, z, s)

    #: (the beginning's id comes ahead of its row: the split's ``ahead``, per instance)
    commit.ahead = np.arange(len(id_rows)) < (1 if begins else 0)  # type: ignore[attr-defined]
    return id_rows, rows, found, commit


def _over(m: Any, last: float) -> Any:
    """The commit of a batch that changes nothing of the pattern (over, or its clock after the
    batch): the timers the engine fired before the last row go."""

    def commit(token_ids: np.ndarray) -> None:
        m.host.timers.keep(lambda h: h[3] != m.slot or not fired_before(h, last))

    return commit
