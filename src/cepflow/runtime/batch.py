"""Columnar detection of plain keyed sequences — the batch fast path of the engine.

For a pattern ``T0(k) -> T1(k) -> … -> Tn(k)`` under chronicle (distinct event types, one key
variable, no filter, window or NOT) the token semantics of 000 §4.4/§5 reduce to a FIFO queue of
partial matches per state and key: a ``T0`` event starts a partial match, a ``Tm`` event moves
the oldest one waiting after ``Tm-1`` (if any) and is otherwise ignored. Over a batch this is,
per state, a queue with balking, whose length is the reflected walk
``L_t = S_t - min(0, min_{s<=t} S_s)`` of the arrivals (+1) and attempts (-1) of each key; an
attempt succeeds iff ``L`` was positive before it, and FIFO order pairs the j-th success with the
j-th arrival. numpy evaluates this stage by stage for all keys at once. Partial matches left at
the end become ordinary tokens, those present before the batch take part as the oldest arrivals,
and token and match ids are assigned in the order the per-event engine would assign them, so the
result — matches, their events and ids, and the saved state — equals feeding the events one by
one (tests/engine/test_batch.py checks this).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from cepflow.automaton.model import INITIAL
from cepflow.events.model import ComplexEvent, Event
from cepflow.runtime.actions import Activation
from cepflow.runtime.tokens import Thread, Token


@dataclass
class Chain:
    """A matcher whose automaton is a plain keyed sequence."""

    matcher: Any
    types: tuple[str, ...]
    key_param: dict[str, int]
    var: str
    states: tuple[int, ...]  # states[m]: waiting for types[m] (states[0] is the initial state)


def chain_of(m: Any) -> Chain | None:
    """The chain view of a matcher, or None if its automaton is not a plain keyed sequence."""
    auto = m.auto
    if m.context != "chronicle" or m.partitioned or auto.forbids or auto.zones:
        return None
    types: list[str] = []
    states = [INITIAL]
    key_param: dict[str, int] = {}
    var: str | None = None
    state = INITIAL
    while True:
        out = auto.edges.get(state, {})
        if len(out) != 1:
            return None
        (t, es), = out.items()
        if len(es) != 1 or t in key_param:
            return None
        e = es[0]
        pos = e.position
        if pos.filter is not None or e.enters or e.exits or e.keeps_source or len(pos.binds) != 1:
            return None
        i, v = pos.binds[0]
        if var is None:
            var = v
        elif v != var:
            return None
        types.append(t)
        key_param[t] = i
        if e.final:
            break
        state = e.target
        states.append(state)
    if var is None or any(p != var for p in auto.params):
        return None
    return Chain(m, tuple(types), key_param, var, tuple(states))


def _segments(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Segment id per row and the first row of each segment, for rows sorted by key."""
    new = np.empty(len(keys), dtype=bool)
    new[:1] = True
    new[1:] = keys[1:] != keys[:-1]
    return np.cumsum(new) - 1, np.flatnonzero(new)


def _count_in_segment(flag: np.ndarray, segid: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Running count of ``flag`` within each segment, including the current row."""
    c = np.cumsum(flag)
    return c - (c - flag)[starts][segid]


def run_chain(k: int, items: np.ndarray, stage: np.ndarray, key: np.ndarray, pos: np.ndarray,
              n_items: int) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray]]:
    """Queues of one chain over a batch.

    ``items``/``stage``/``key``/``pos`` describe the rows: real events (stage = index of their
    type in the chain) and partial matches from before the batch (stage = the state they wait
    in, flagged by a negative ``pos`` that orders them oldest first, before every event).
    Returns ``pred`` (item -> the item it followed), the completing items, and per state the
    items left waiting there.
    """
    pred = np.full(n_items, -1, dtype=np.int64)
    waiting: dict[int, np.ndarray] = {}
    occupant = pos < 0
    sel = (stage == 0) & ~occupant
    cur_items, cur_key, cur_pos = items[sel], key[sel], pos[sel]
    if k == 1:
        return pred, cur_items, waiting
    for m in range(1, k):
        occ = occupant & (stage == m)
        att = ~occupant & (stage == m)
        a_items = np.concatenate([items[occ], cur_items])
        a_key = np.concatenate([key[occ], cur_key])
        a_pos = np.concatenate([pos[occ], cur_pos])
        allk = np.concatenate([a_key, key[att]])
        allp = np.concatenate([a_pos, pos[att]])
        itm = np.concatenate([a_items, items[att]])
        val = np.concatenate([np.ones(len(a_items), np.int64), -np.ones(int(att.sum()), np.int64)])
        if len(val) == 0:
            cur_items, cur_key, cur_pos = itm, allk, allp
            continue
        order = np.lexsort((allp, allk))
        allk, allp, itm, val = allk[order], allp[order], itm[order], val[order]
        segid, starts = _segments(allk)
        cs = np.cumsum(val)
        walk = cs - (cs - val)[starts][segid]
        big = len(val) + 2
        off = (len(starts) - segid) * big
        low = np.minimum.accumulate(walk + off) - off
        level = walk - np.minimum(low, 0)
        before = np.empty_like(level)
        before[0] = 0
        before[1:] = level[:-1]
        before[starts] = 0
        is_arr = val > 0
        success = ~is_arr & (before > 0)
        arr_rank = _count_in_segment(is_arr, segid, starts) - 1
        succ_rank = _count_in_segment(success, segid, starts) - 1
        arr_rows = np.flatnonzero(is_arr)
        arr_before_seg = (np.cumsum(is_arr) - is_arr)[starts]
        s_rows = np.flatnonzero(success)
        paired = arr_rows[arr_before_seg[segid[s_rows]] + succ_rank[s_rows]]
        pred[itm[s_rows]] = itm[paired]
        n_succ = np.bincount(segid[s_rows], minlength=len(starts))
        left = is_arr & (arr_rank >= n_succ[segid])
        waiting[m] = itm[left]
        cur_items, cur_key, cur_pos = itm[s_rows], allk[s_rows], allp[s_rows]
    return pred, cur_items, waiting


def _prepare(engine: Any, events: Sequence[Event]) -> tuple[np.ndarray, list, dict]:
    """Check order and arity, number the events, and code their types (column-wise)."""
    from cepflow.runtime.engine import EngineError  # (engine imports this module)

    n = len(events)
    ts = np.array([e.ts for e in events], dtype=np.float64)
    if n and (ts[0] < engine.time or bool((ts[1:] < ts[:-1]).any())):
        bad = 0 if ts[0] < engine.time else int(np.flatnonzero(ts[1:] < ts[:-1])[0]) + 1
        prev = engine.time if bad == 0 else ts[bad - 1]
        raise EngineError(f"event {events[bad]!r} at {events[bad].ts} is older than {prev:g}; "
                          "order the input (cepflow.inputs.reorder) before feeding the engine")
    types = [e.type for e in events]
    type_code = {t: i for i, t in enumerate(dict.fromkeys(types))}
    codes = np.array([type_code[t] for t in types], dtype=np.int64)
    params = [e.params for e in events]
    arity = np.array([engine._arity.get(t, -1) for t in type_code], dtype=np.int64)
    if n:
        want = arity[codes]
        lens = np.array(list(map(len, params)), dtype=np.int64)
        wrong = np.flatnonzero((want >= 0) & (want != lens))
        if len(wrong):
            e = events[int(wrong[0])]
            raise EngineError(f"event {e!r} has {len(e.params)} parameter(s), type "
                              f"'{e.type}' declares {engine._arity[e.type]}")
    base = engine._input_seq
    if n and max(e.seq for e in events) < 0:
        for e, q in zip(events, range(base, base + n), strict=True):
            e.seq = q
        engine._input_seq = base + n
    else:
        for e in events:
            if e.seq < 0:
                e.seq = engine._input_seq
            if e.seq >= engine._input_seq:
                engine._input_seq = e.seq + 1
    engine.stats.events += n
    if n:
        engine.time = events[-1].ts
    return codes, params, type_code


def process_batch(engine: Any, chains: list[Chain], events: Sequence[Event]
                  ) -> list[ComplexEvent]:
    """Feed ``events`` (time-ordered) to an engine all of whose patterns are chains."""
    with gc_paused():
        return _process_batch(engine, chains, events)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a batch builds many small objects.

    The engine's objects (events, tokens, bindings) form no reference cycles, so reference
    counting frees them; without the pause, CPython's generational collector repeatedly walks
    every live event of the batch, which costs a third of the time on large batches.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _process_batch(engine: Any, chains: list[Chain], events: Sequence[Event]
                   ) -> list[ComplexEvent]:
    codes, params, type_code = _prepare(engine, events)
    per_chain = []
    start_keys = []  # (position * n_chains + slot) of every token start, for token ids
    done_pos, done_slot, done_item = [], [], []
    n_chains = len(chains)
    for slot, c in enumerate(chains):
        m = c.matcher
        occupants = m.all_tokens()
        pos_parts, stage_parts, keys = [], [], []
        for st, t in enumerate(c.types):
            code = type_code.get(t)
            if code is None:
                continue
            idx = np.flatnonzero(codes == code)
            pi = c.key_param[t]
            keys.extend([params[i][pi] for i in idx.tolist()])
            pos_parts.append(idx)
            stage_parts.append(np.full(len(idx), st, dtype=np.int64))
        positions = np.concatenate(pos_parts) if pos_parts else np.zeros(0, np.int64)
        stages = np.concatenate(stage_parts) if stage_parts else np.zeros(0, np.int64)
        n_ev = len(positions)
        table: dict[Any, int] = {}
        key_codes = [table.setdefault(k, len(table)) for k in keys]
        occ_stage = [c.states.index(t.threads[0].state) for t in occupants]
        key_codes += [table.setdefault(t.threads[0].bindings.get(c.var), len(table))
                      for t in occupants]
        n_occ = len(occupants)
        stage = np.concatenate([stages, np.array(occ_stage, dtype=np.int64)])
        key = np.array(key_codes, dtype=np.int64)
        pos = np.concatenate([positions, np.arange(-n_occ, 0, dtype=np.int64)])
        items = np.arange(n_ev + n_occ, dtype=np.int64)
        pred, complete, waiting = run_chain(len(c.types), items, stage, key, pos, n_ev + n_occ)
        start_keys.append(positions[stages == 0] * n_chains + slot)
        done_pos.append(positions[complete])
        done_slot.append(np.full(len(complete), slot, dtype=np.int64))
        done_item.append(complete)
        per_chain.append((positions, keys, occupants, pred, waiting))

    all_starts = np.sort(np.concatenate(start_keys)) if start_keys else np.zeros(0, np.int64)
    first_token = engine._token_id + 1
    engine._token_id += len(all_starts)

    def token_id(slot: int, first_item: int) -> int:
        k = per_chain[slot][0][first_item] * n_chains + slot
        return first_token + int(np.searchsorted(all_starts, k))

    def path(slot: int, item: int) -> tuple[list[Event], Token | None, int]:
        """Events of the partial match ending in ``item``, the token it continues (if it began
        before the batch) and its first item."""
        positions, _, occupants, pred, _ = per_chain[slot]
        n_ev = len(positions)
        chain_items: list[int] = []
        old = None
        cur = item
        while True:
            if cur >= n_ev:
                old = occupants[cur - n_ev]
                break
            chain_items.append(cur)
            p = int(pred[cur])
            if p < 0:
                break
            cur = p
        chain_items.reverse()
        evs = [events[int(positions[j])] for j in chain_items]
        if old is not None:
            return [*old.threads[0].events, *evs], old, -1
        return evs, None, chain_items[0]

    # complex events, in the order the per-event engine detects them: by position, then pattern
    out: list[ComplexEvent] = []
    out_pos: list[int] = []
    if done_pos:
        dp, ds, di = (np.concatenate(done_pos), np.concatenate(done_slot),
                      np.concatenate(done_item))
        order = np.lexsort((ds, dp))
        dp, ds, di = dp[order], ds[order], di[order]
        match_id = engine._match_id
        stats = engine.stats
        by_pattern = stats.by_pattern
        for slot in np.unique(ds).tolist():
            sel = np.flatnonzero(ds == slot)
            c = chains[slot]
            positions, keys, occupants, pred, _ = per_chain[slot]
            n_ev = len(positions)
            # walk the chain back column-wise: rows[j] = item consumed at stage j
            k = len(c.types)
            rows = np.empty((k, len(sel)), dtype=np.int64)
            rows[k - 1] = di[sel]
            for j in range(k - 2, -1, -1):
                prev = rows[j + 1]
                ok = (prev >= 0) & (prev < n_ev)
                rows[j] = np.where(ok, pred[np.where(ok, prev, 0)], -1)
            real = (rows >= 0) & (rows < n_ev)
            clean_rows = real.all(axis=0).tolist()  # False: began before the batch
            gpos = np.where(real, positions[np.where(real, rows, 0)], -1)
            name = c.matcher.name
            var = c.var
            auto_params = c.matcher.auto.params
            ev = events
            cols = gpos.T.tolist()
            last_items = rows[k - 1].tolist()
            at = dp[sel].tolist()
            only_key = auto_params == (var,)
            for r, item in enumerate(last_items):
                if clean_rows[r]:
                    parts = [ev[q] for q in cols[r]]
                else:
                    parts, _, _ = path(slot, item)
                value = keys[item]
                bindings = {var: value}
                ce = ComplexEvent(name, (value,) if only_key else tuple(
                    bindings.get(q) for q in auto_params), ev[at[r]].ts, bindings, parts)
                out.append(ce)
                out_pos.append(at[r])
            by_pattern[name] = by_pattern.get(name, 0) + len(sel)
        # detection order across patterns: by position, then pattern (out is grouped by
        # pattern, each group in position order)
        if len(out) and len(np.unique(ds)) > 1:
            slot_of_row = np.concatenate([np.full(int((ds == sl).sum()), sl)
                                          for sl in np.unique(ds).tolist()])
            order = np.lexsort((slot_of_row, np.array(out_pos, dtype=np.int64)))
            out = [out[i] for i in order.tolist()]
            out_pos = [out_pos[i] for i in order.tolist()]
        for ce in out:
            match_id += 1
            ce.match_id = match_id
        engine._match_id = match_id
        stats.complex_events += len(out)

    for slot, c in enumerate(chains):
        m = c.matcher
        positions, keys, occupants, pred, waiting = per_chain[slot]
        n_ev = len(positions)
        moved: list[tuple[Token, int, list[Event]]] = []
        unchanged: set[int] = set()
        for st, its in waiting.items():
            for item in its.tolist():
                if item >= n_ev:  # waited through the whole batch: stays registered as is
                    unchanged.add(occupants[item - n_ev].id)
                    continue
                evs, old, first = path(slot, item)
                if old is None:
                    old = Token(token_id(slot, first), None, evs[0].ts,
                                [Thread(INITIAL, {c.var: keys[item]}, [], None, None)])
                moved.append((old, c.states[st], evs))
        for tok in occupants:
            if tok.id not in unchanged:
                m.unregister(tok)
        for tok, state, evs in sorted(moved, key=lambda x: x[0].id):
            th = tok.threads[0]
            th.state, th.events, th.last = state, evs, evs[-1]
            m.register(tok)

    if engine.rules_by_type:
        _fire(engine, events, out, out_pos)
    return out


def _fire(engine: Any, events: Sequence[Event], out: list[ComplexEvent],
          out_pos: list[int]) -> None:
    """Fire rules as the per-event engine would: per input event, after its detections."""
    rules = engine.rules_by_type
    detected = {c.type for c in out}
    atomic = [t for t in rules if t not in detected]
    if atomic and any(e.type in rules for e in events):
        marks: dict[int, list[ComplexEvent]] = {}
        for ce, p in zip(out, out_pos, strict=True):
            marks.setdefault(p, []).append(ce)
        for i in sorted({i for i, e in enumerate(events) if e.type in rules} | set(marks)):
            engine._fire_rules(events[i], marks.get(i, []))
    else:
        # only complex events trigger rules: one input event's detections are adjacent in out
        stats, actions, ordered = engine.stats, engine.actions, engine._rules_sorted
        n = len(out)
        i = 0
        while i < n:
            j = i + 1
            while j < n and out_pos[j] == out_pos[i]:
                j += 1
            if j - i > 1:
                engine._fire_rules(events[out_pos[i]], out[i:j])
            else:
                ce = out[i]
                for rule in ordered.get(ce.type, ()):
                    stats.rule_firings += 1
                    fn = actions.get(rule.action) if rule.action else None
                    if fn is not None:
                        fn(Activation(rule, ce, engine))
            i = j
    if engine._pending:
        engine._drain(out)
