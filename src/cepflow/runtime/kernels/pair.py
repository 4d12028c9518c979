"""The Esper pair kernel: Esper's ``every a = A(f) -> b = B(g, a.k = b.k) [within Δ]`` over a
batch (:func:`process_esper_batch`, docs/esper.md "Performance"). Events are not consumed, so each
instance simply completes at the first later ``B`` of its key passing ``g`` within Δ — one
``searchsorted`` per batch; the instances open after a batch stay rows until tokens are needed
(tests/esper/test_esper_kernel.py checks it against the token path).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np

from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.collector import gc_paused
from cepflow.runtime.kernels.filters import passing
from cepflow.runtime.kernels.frame import (
    Declined,
    counters_before,
    fire_rules,
    prepare,
    unprepare,
)
from cepflow.runtime.rows import EventRows, TypeColumns, as_column
from cepflow.runtime.shapes import EsperPair
from cepflow.runtime.timers import fired_before
from cepflow.runtime.tokens import PendingRows


class _Fallback(Exception):
    """The batch holds key values the kernel cannot code exactly (NaN): go event by event."""



def _key_codes(ka: np.ndarray, kb: np.ndarray, old: list[Any], span: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes for the instances' keys (``old`` values, then ``ka``) and the B rows' keys
    (``kb``), equal iff the values unify (Python ``==``, as Algorithm 1); ``code * span`` must
    fit in int64. Integer columns are their own codes."""
    if ka.dtype.kind in "iub" and kb.dtype.kind in "iub":
        ka, kb = ka.astype(np.int64), kb.astype(np.int64)
        top = max([int(np.abs(x).max()) for x in (ka, kb) if len(x)], default=0) + 1
        if top * span < 1 << 62 and all(_small_int(v, top) or type(v) in (str, type(None))
                                        or (type(v) is float and not v.is_integer())
                                        for v in old):
            # (old keys that equal no int get the code top; anything else: the general way)
            codes = [int(v) if _small_int(v, top) else top for v in old]
            return np.concatenate([np.array(codes, dtype=np.int64), ka]), kb
    table: dict[Any, int] = {}
    out = []
    for v in [*old, *ka.tolist(), *kb.tolist()]:
        if v != v:  # NaN unifies with nothing, not even itself
            raise _Fallback
        out.append(table.setdefault(v, len(table)))
    if len(table) * span >= 1 << 62:
        raise _Fallback
    codes = np.array(out, dtype=np.int64)
    return codes[:len(old) + len(ka)], codes[len(old) + len(ka):]



def _small_int(v: Any, top: int) -> bool:
    """Is ``v`` a Python number equal to an int of magnitude below ``top``?"""
    t = type(v)
    return (t is int or t is bool or (t is float and v.is_integer())) and abs(v) < top



def process_esper_batch(engine: Any, matchers: list[Any], events: Sequence[Event]
                        ) -> list[ComplexEvent] | None:
    """Feed ``events`` (time-ordered) to an engine all of whose patterns (``matchers``) have
    the Esper pair shape (their compiled pattern's ``pair``).

    Per pattern: the instances (those from before the batch, then one per ``A`` row passing
    ``f``) each find the first later ``B`` row of their key passing ``g`` by one
    ``searchsorted`` over the ``B`` rows sorted by (key, row), and complete there if it is
    within Δ. Token and match ids, the complex events (parts, bindings, select list), the
    instances left open (with their timers) and the statistics are those of feeding the events
    one by one (tests/esper/test_esper_kernel.py). Returns None, having changed nothing, when
    a key value cannot be coded exactly (the caller then goes event by event).
    """
    with gc_paused():
        # (in a function of its own: the batch's big temporaries are freed before the
        # collector runs again, else its first pass walks them)
        return _esper_batch(engine, matchers, events)



def _esper_batch(engine: Any, matchers: list[Any], events: Sequence[Event]
                 ) -> list[ComplexEvent] | None:
    pairs: list[EsperPair] = [m.pattern.pair for m in matchers]
    src = EventRows(events)
    n = src.n
    before = counters_before(engine)
    prepare(engine, src)
    if not n:
        return []
    cols = TypeColumns(src, engine.program.schemas)
    try:
        plans = [_pair_rows(m, pr, cols) for m, pr in zip(matchers, pairs, strict=True)]
    except Declined:
        plans = [None]
    if any(p is None for p in plans):
        unprepare(engine, before, src)
        return None
    last_ts = float(src.ts[-1])
    n_pairs = len(pairs)
    start_keys = [p["new_rows"] * n_pairs + slot for slot, p in enumerate(plans)]
    host = engine.host
    all_starts = np.sort(np.concatenate(start_keys))
    first_token = host.counters.reserve_tokens(len(all_starts))
    # detections: by completing row, then pattern, then instance (= token id order)
    m_row, m_slot, m_inst = [], [], []
    for slot, p in enumerate(plans):
        inst = np.flatnonzero(p["match"])
        m_row.append(p["b_row"][inst])
        m_slot.append(np.full(len(inst), slot, np.int64))
        m_inst.append(inst)
    mr, ms, mi = np.concatenate(m_row), np.concatenate(m_slot), np.concatenate(m_inst)
    order = np.lexsort((mi, ms, mr))
    mr, ms, mi = mr[order], ms[order], mi[order]
    total = len(order)
    out: list[Any] = [None] * total
    first_id = host.counters.reserve_matches(total)
    host.stats.complex_events += total
    by_pattern = host.stats.by_pattern
    for slot, (m, pr, p) in enumerate(zip(matchers, pairs, plans, strict=True)):
        rank = np.flatnonzero(ms == slot)
        if len(rank):
            _emit_pair(m, pr, p, mi[rank], rank, first_id, events, host.arity, out)
            by_pattern[m.name] = by_pattern.get(m.name, 0) + len(rank)
            m.done = True
        ids = (first_token + np.arange(len(all_starts)) if n_pairs == 1 else
               first_token + np.searchsorted(all_starts, p["new_rows"] * n_pairs + slot))
        open_ids, open_events = _leave_open(m, pr, p, ids, last_ts, events)
        m.pending = PendingRows(open_ids, open_events, pr.zone) if open_ids else None
    # timers: the per-event path would have run those before last_ts (they only expire
    # instances, done above); each pattern keeps one engine timer, for its first deadline
    # (Matcher._schedule, Matcher.materialize)
    slots = {m.slot for m in matchers}
    host.timers.keep(lambda h: not fired_before(h, last_ts)
                     and not (h[4] == -1 and h[3] in slots))
    for m, pr in zip(matchers, pairs, strict=True):
        m.deadlines = deque(d for d in m.deadlines if d[0] > last_ts)  # (Esper: fired at =)
        if pr.zone is None:
            continue
        firsts = [m.deadlines[0][0]] if m.deadlines else []
        if m.pending is not None:
            firsts.append(m.pending.events[0].ts + pr.window)
        if firsts:
            host.schedule(min(firsts), m, -1, pr.zone, min(firsts) - pr.window)
    if host.rules:
        fire_rules(host, events, out, mr.tolist())
    return out



def _pair_rows(m: Any, pr: EsperPair, cols: TypeColumns) -> dict | None:
    """Instances and their completing rows for one pattern over a batch (numpy)."""
    src = cols.src
    a, b = pr.first, pr.second
    ta, tb = a.position.type, b.position.type
    a_loc, b_loc = passing(a, cols), passing(b, cols)
    new_rows, b_rows = cols.rows(ta)[a_loc], cols.rows(tb)[b_loc]
    old = m.registered_tokens()  # instances from before the batch: tokens, then pending rows
    pend_ids, pend_events = (m.pending.ids, m.pending.events) if m.pending else ([], [])
    n = src.n
    span = n + 2
    ka = pr.key_a
    try:
        pend_keys = as_column([e.params[ka] for e in pend_events])
        a_keys = cols.column(ta, ka)[a_loc]
        if len(pend_keys) and len(a_keys) and pend_keys.dtype.kind != a_keys.dtype.kind:
            pend_keys, a_keys = pend_keys.astype(object), a_keys.astype(object)
        i_code, b_code = _key_codes(np.concatenate([pend_keys, a_keys]) if len(pend_keys)
                                    else a_keys,
                                    cols.column(tb, pr.key_b)[b_loc],
                                    [t.threads[0].bindings.get(pr.key_var) for t in old], span)
    except _Fallback:
        return None
    n_old = len(old) + len(pend_ids)
    n_inst = n_old + len(new_rows)
    z = pr.zone
    i_row = np.concatenate([np.full(n_old, -1, np.int64), new_rows])
    i_ts = np.concatenate([np.array([t.threads[0].zstart[z] if z is not None else t.created
                                     for t in old] + [e.ts for e in pend_events],
                                    dtype=np.float64), src.ts[new_rows]])
    b_comb = b_code * span + b_rows + 1
    order = np.argsort(b_comb, kind="stable")
    b_comb_sorted = b_comb[order]
    j = np.searchsorted(b_comb_sorted, i_code * span + i_row + 1, side="right")
    has = j < len(b_comb_sorted)
    jj = np.where(has, j, 0)
    cand = order[jj] if len(order) else np.zeros(n_inst, np.int64)
    has &= (b_code[cand] == i_code) if len(order) else has
    b_row = np.where(has, b_rows[cand] if len(order) else -1, -1)
    # Esper's timer:within fires before an event at its deadline: a B exactly Δ after its A
    # is too late (docs/esper.md, "One instant")
    within = has & (src.ts[np.where(has, b_row, 0)] - i_ts < pr.window)
    return {"old": old, "pend_ids": pend_ids, "pend_events": pend_events, "new_rows": new_rows,
            "i_ts": i_ts, "i_row": i_row, "b_row": b_row, "match": within}



def _emit_pair(m: Any, pr: EsperPair, p: dict, inst: np.ndarray, rank: np.ndarray, first_id: int,
               events: Sequence[Event], arity: dict[str, int], out: list[Any]) -> None:
    """The complex events of one pattern, as Matcher._complete makes them."""
    auto = m.pattern.auto
    name, params_names, select = m.name, auto.params, auto.select
    a_binds, b_new = pr.first.position.binds, pr.b_new
    a_vars = [v for _, v in a_binds]
    a_idx = [i for i, _ in a_binds]
    b_vars = [v for _, v in b_new]
    b_idx = [i for i, _ in b_new]
    old, pend, new_rows, b_row = p["old"], p["pend_events"], p["new_rows"], p["b_row"]
    n_real = len(old)
    n_old = n_real + len(pend)

    def a_events(qs: list[int]) -> list[Event]:
        """The A event of instances ``qs`` (pending from the last batch or new)."""
        return [pend[q - n_real] if q < n_old else events[new_list[q - n_old]] for q in qs]

    svars = auto.select_vars
    pick = None  # the select list as positions in a.params + b.params + (ts, None)
    if select is not None and svars is not None and all(v is not None for v in svars):
        na, nb = arity[pr.first.position.type], arity[pr.second.position.type]
        where = {v: i for i, v in a_binds} | {v: na + i for i, v in b_new}
        pick = [na + nb if v == "@ts" else where.get(v, na + nb + 1) for v in svars]
    b_list = b_row.tolist()
    new_list = new_rows.tolist()
    if pick is not None:  # the instances begun by an A event in hand: lazy complex events
        fresh = inst >= n_real
        q_new = inst[fresh]
        ae = (a_events(q_new.tolist()) if n_old > n_real else
              [events[i] for i in new_rows[q_new - n_old].tolist()])
        be = [events[i] for i in b_row[q_new].tolist()]
        shape = _PairShape(name, params_names, pick)
        r_new = rank[fresh].tolist()
        for r, ce in zip(r_new, map(_PairMatch, ae, be, repeat(shape),
                                    [first_id + r for r in r_new]), strict=True):
            out[r] = ce
        keep = ~fresh
        inst, rank = inst[keep], rank[keep]
    for q, r in zip(inst.tolist(), rank.tolist(), strict=True):
        be = events[b_list[q]]
        bp = be.params
        ts = be.ts
        if q < n_real:
            th = old[q].threads[0]
            parts = [*th.events, be]
            full = dict(th.bindings)
        else:
            ae = a_events([q])[0]
            parts = [ae, be]
            ap = ae.params
            full = dict(zip(a_vars, [ap[i] for i in a_idx], strict=True))
        full.update(zip(b_vars, [bp[i] for i in b_idx], strict=True))
        vals, bindings = m.result(full, ts, be)
        out[r] = ComplexEvent(name, vals, ts, bindings, parts, first_id + r)



class _PairShape:
    """What the complex events of one pattern share in a batch: its name, the names of its
    parameters, and the select list as positions in ``a.params + b.params + (b.ts, None)``."""

    __slots__ = ("get", "name", "names")

    def __init__(self, name: str, names: Sequence[str], pick: list[int]) -> None:
        self.name, self.names = name, tuple(names)
        #: the parameter tuple from the row ``a.params + b.params + (b.ts, None)``
        self.get: Any = (itemgetter(*pick) if len(pick) > 1 else
                         (lambda row, i=pick[0]: (row[i],)) if pick else (lambda row: ()))



class _PairMatch(ComplexEvent):
    """A complex event of the Esper pair kernel whose select list only names fields of its two
    events: ``params``, ``bindings`` and ``parts`` are made when first read, since most
    consumers of a large batch read a few of them or none (making them eagerly was half of the
    Crash kernel's time). Reads give what Matcher._complete would have built."""

    __slots__ = ("_a", "_b", "_bindings", "_params", "_shape")

    def __init__(self, a: Event, b: Event, shape: _PairShape, match_id: int) -> None:
        self._a, self._b, self._shape = a, b, shape
        self.type, self.ts, self.match_id = shape.name, b.ts, match_id
        self.id, self.seq = None, -1

    @property  # type: ignore[override]
    def params(self) -> tuple[Any, ...]:
        try:
            return self._params
        except AttributeError:
            b = self._b
            p = self._params = self._shape.get((*self._a.params, *b.params, b.ts, None))
            return p

    @property  # type: ignore[override]
    def bindings(self) -> dict[str, Any]:
        try:
            return self._bindings
        except AttributeError:
            d = self._bindings = dict(zip(self._shape.names, self.params, strict=True))
            return d

    @property  # type: ignore[override]
    def parts(self) -> tuple[Event, ...]:
        return (self._a, self._b)

    def __reduce__(self) -> tuple[Any, ...]:
        # (pickled and copied as the plain complex event it stands for)
        return (ComplexEvent, (self.type, self.params, self.ts, self.bindings, self.parts,
                               self.match_id), (None, {"id": self.id, "seq": self.seq}))



def _leave_open(m: Any, pr: EsperPair, p: dict, new_ids: np.ndarray, last_ts: float,
                events: Sequence[Event]) -> tuple[list[int], list[Event]]:
    """Tokens from before the batch that completed or expired are dropped; the instances still
    waiting after it (from the last batch's pending rows or new) are returned as the pattern's
    pending rows (ids, A events) — tokens are made of them only when needed
    (Matcher.materialize)."""
    old, pend_ids, pend_events = p["old"], p["pend_ids"], p["pend_events"]
    new_rows, i_ts, match = p["new_rows"], p["i_ts"], p["match"]
    n_real = len(old)
    n_old = n_real + len(pend_ids)
    # an instance whose deadline is last_ts expired before the batch's last event (Esper's
    # timer fires first) unless that very event began it (Δ = 0: its timer is still to come)
    deadline = i_ts + pr.window
    alive = ~match & ((deadline > last_ts) | ((deadline == last_ts) & (
        p["i_row"] == len(events) - 1)))
    for q in np.flatnonzero(~alive[:n_real]).tolist():
        m.unregister(old[q])
    keep = np.flatnonzero(alive[n_real:n_old]).tolist()
    ids = [pend_ids[q] for q in keep]
    evs = [pend_events[q] for q in keep]
    live = np.flatnonzero(alive[n_old:])
    ids += new_ids[live].tolist()
    evs += [events[i] for i in new_rows[live].tolist()]
    return ids, evs
