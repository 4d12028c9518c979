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
from collections.abc import Iterator, Mapping, Sequence
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


class Rows:
    """A time-ordered batch as the kernel reads it: ``ts`` (float64) and ``codes`` (the type of
    each row, an index into ``type_names``) as columns; parameter values and events on demand.

    :class:`EventRows` wraps a list of events. A column source (the Spark path's Arrow batches,
    :class:`cepflow.spark.columns.ArrowRows`) subclasses this and makes Python objects only for
    the rows that end up in complex events or partial matches.
    """

    n: int
    ts: np.ndarray
    codes: np.ndarray
    type_names: list[str]

    def last_ts(self) -> Any:
        """The timestamp of the last row as the event has it (an int stays an int)."""
        raise NotImplementedError

    def values(self, param: int, rows: np.ndarray) -> tuple[np.ndarray, list[Any]]:
        """Parameter ``param`` of ``rows``: per row an index into the returned list of values
        (equal values may or may not share an entry)."""
        raise NotImplementedError

    def lookup(self, rows: np.ndarray) -> Mapping[int, Event] | Sequence[Event]:
        """The events of ``rows`` (in any order, repeats allowed), indexable by row number."""
        raise NotImplementedError

    def number(self, engine: Any) -> None:
        """Give rows without a sequence number the engine's next ones; advance its counter."""
        raise NotImplementedError

    def check(self, engine: Any) -> None:
        """Raise EngineError for a row the engine cannot take (beyond the time order)."""


class EventRows(Rows):
    """A list of events as kernel rows."""

    def __init__(self, events: Sequence[Event]) -> None:
        self.events = events
        self.n = len(events)
        self.ts = np.array([e.ts for e in events], dtype=np.float64)
        types = [e.type for e in events]
        type_code = {t: i for i, t in enumerate(dict.fromkeys(types))}
        self.type_names = list(type_code)
        self.codes = np.array([type_code[t] for t in types], dtype=np.int64)

    def last_ts(self) -> Any:
        return self.events[-1].ts

    def values(self, param: int, rows: np.ndarray) -> tuple[np.ndarray, list[Any]]:
        ev = self.events
        return np.arange(len(rows), dtype=np.int64), [ev[i].params[param] for i in rows.tolist()]

    def lookup(self, rows: np.ndarray) -> Sequence[Event]:
        return self.events

    def number(self, engine: Any) -> None:
        events, base = self.events, engine._input_seq
        if self.n and max(e.seq for e in events) < 0:
            for e, q in zip(events, range(base, base + self.n), strict=True):
                e.seq = q
            engine._input_seq = base + self.n
            return
        for e in events:
            if e.seq < 0:
                e.seq = engine._input_seq
            if e.seq >= engine._input_seq:
                engine._input_seq = e.seq + 1

    def check(self, engine: Any) -> None:
        from cepflow.runtime.engine import EngineError  # (engine imports this module)

        if not self.n:
            return
        arity = np.array([engine._arity.get(t, -1) for t in self.type_names], dtype=np.int64)
        want = arity[self.codes]
        lens = np.array([len(e.params) for e in self.events], dtype=np.int64)
        wrong = np.flatnonzero((want >= 0) & (want != lens))
        if len(wrong):
            e = self.events[int(wrong[0])]
            raise EngineError(f"event {e!r} has {len(e.params)} parameter(s), type "
                              f"'{e.type}' declares {engine._arity[e.type]}")


@dataclass
class ChainMatches:
    """The complex events of one chain pattern in a batch, column-wise."""

    pattern: str
    var: str
    params: tuple[str, ...]
    #: batch row of the completing event, per match (ascending)
    at: np.ndarray
    #: place of each match in the batch's detection order (0-based)
    rank: np.ndarray
    #: (chain length, matches): batch row of each contributing event; -1 for the events of a
    #: partial match from an earlier batch, which are in ``old``
    rows: np.ndarray
    old: dict[int, list[Event]]
    #: per match, the index of its key value in :attr:`MatchTable.values`
    value: np.ndarray

    def params_of(self, value: Any) -> tuple[Any, ...]:
        """The complex event's parameters (the pattern's formal parameters) for a key value."""
        if self.params == (self.var,):
            return (value,)
        return tuple(value if p == self.var else None for p in self.params)


@dataclass
class MatchTable:
    """The complex events of one batch, column-wise (:func:`process_columns`)."""

    blocks: list[ChainMatches]
    values: list[Any]
    first_id: int  # match id of the first complex event in detection order
    count: int
    source: Rows

    def positions(self) -> list[int]:
        """Batch row of the completing event of each complex event, in detection order."""
        at = np.zeros(self.count, dtype=np.int64)
        for b in self.blocks:
            at[b.rank] = b.at
        return at.tolist()

    def complex_events(self) -> list[ComplexEvent]:
        """The complex events as objects, in detection order."""
        out: list[Any] = [None] * self.count
        values = self.values
        for b in self.blocks:
            ev = self.source.lookup(b.rows[b.rows >= 0])
            cols = b.rows.T.tolist()
            old = b.old
            name, var, first_id = b.pattern, b.var, self.first_id
            only_key = b.params == (var,)
            for r, (rank, vi) in enumerate(zip(b.rank.tolist(), b.value.tolist(),
                                               strict=True)):
                if r in old:
                    parts = [*old[r], *(ev[q] for q in cols[r] if q >= 0)]
                else:
                    parts = [ev[q] for q in cols[r]]
                value = values[vi]
                out[rank] = ComplexEvent(name, (value,) if only_key else b.params_of(value),
                                         parts[-1].ts, {var: value}, parts, first_id + rank)
        return out


def process_batch(engine: Any, chains: list[Chain], events: Sequence[Event]
                  ) -> list[ComplexEvent]:
    """Feed ``events`` (time-ordered) to an engine all of whose patterns are chains."""
    with gc_paused():
        table = _run(engine, chains, EventRows(events))
        out = table.complex_events()
        if engine.rules_by_type:
            _fire(engine, events, out, table.positions())
        return out


def process_columns(engine: Any, chains: list[Chain], rows: Rows) -> MatchTable:
    """Feed a column batch to an engine all of whose patterns are chains and none of whose
    rules has a registered action: the complex events stay columns, rules are counted."""
    with gc_paused():
        table = _run(engine, chains, rows)
        rules = engine._rules_sorted
        if rules:
            fired = sum(len(rules.get(b.pattern, ())) * len(b.at) for b in table.blocks)
            for i, t in enumerate(rows.type_names):
                if t in rules:
                    fired += len(rules[t]) * int(np.count_nonzero(rows.codes == i))
            engine.stats.rule_firings += fired
        return table


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


def _prepare(engine: Any, src: Rows) -> None:
    """Check order (and what the source checks), number the rows, move the clock."""
    from cepflow.runtime.engine import EngineError  # (engine imports this module)

    ts, n = src.ts, src.n
    if n and (ts[0] < engine.time or bool((ts[1:] < ts[:-1]).any())):
        bad = 0 if ts[0] < engine.time else int(np.flatnonzero(ts[1:] < ts[:-1])[0]) + 1
        prev = engine.time if bad == 0 else ts[bad - 1]
        e = src.lookup(np.array([bad]))[bad]
        raise EngineError(f"event {e!r} at {e.ts} is older than {prev:g}; "
                          "order the input (cepflow.inputs.reorder) before feeding the engine")
    src.check(engine)
    src.number(engine)
    engine.stats.events += n
    if n:
        engine.time = src.last_ts()


@dataclass
class _ChainRun:
    """One chain's items over a batch: events (``positions`` = their rows) then the partial
    matches from before the batch (``occupants``), with the queues' result."""

    positions: np.ndarray
    vidx: np.ndarray  # per item, index of its key value in the batch's value list
    occupants: list[Token]
    pred: np.ndarray
    waiting: dict[int, np.ndarray]

    def walk(self, last: np.ndarray, k: int) -> np.ndarray:
        """(k, len(last)) items of the paths ending in ``last``, stage by stage; an item from
        before the batch (an occupant) ends the walk, -1 before it."""
        n_ev = len(self.positions)
        items = np.empty((k, len(last)), dtype=np.int64)
        items[k - 1] = last
        for j in range(k - 2, -1, -1):
            prev = items[j + 1]
            ok = (prev >= 0) & (prev < n_ev)
            items[j] = np.where(ok, self.pred[np.where(ok, prev, 0)], -1)
        return items

    def path(self, item: int) -> tuple[list[int], Token | None]:
        """Items (events of the batch) of the partial match ending in ``item``, and the token
        it continues if it began before the batch."""
        n_ev = len(self.positions)
        chain_items: list[int] = []
        cur = item
        while cur >= 0:
            if cur >= n_ev:
                chain_items.reverse()
                return chain_items, self.occupants[cur - n_ev]
            chain_items.append(cur)
            cur = int(self.pred[cur])
        chain_items.reverse()
        return chain_items, None


def _run(engine: Any, chains: list[Chain], src: Rows) -> MatchTable:
    _prepare(engine, src)
    type_code = {t: i for i, t in enumerate(src.type_names)}
    codes = src.codes
    values: list[Any] = []
    runs: list[_ChainRun] = []
    start_keys = []  # (position * n_chains + slot) of every token start, for token ids
    done_pos, done_slot, done_item = [], [], []
    n_chains = len(chains)
    for slot, c in enumerate(chains):
        occupants = c.matcher.all_tokens()
        pos_parts, stage_parts, key_parts, vidx_parts = [], [], [], []
        table: dict[Any, int] = {}
        for st, t in enumerate(c.types):
            code = type_code.get(t)
            if code is None:
                continue
            idx = np.flatnonzero(codes == code)
            local, uniq = src.values(c.key_param[t], idx)
            remap = np.array([table.setdefault(v, len(table)) for v in uniq], dtype=np.int64)
            key_parts.append(remap[local] if len(remap) else np.zeros(0, np.int64))
            vidx_parts.append(np.asarray(local, dtype=np.int64) + len(values))
            values.extend(uniq)
            pos_parts.append(idx)
            stage_parts.append(np.full(len(idx), st, dtype=np.int64))
        occ_values = [t.threads[0].bindings.get(c.var) for t in occupants]
        n_occ = len(occupants)
        key_parts.append(np.array([table.setdefault(v, len(table)) for v in occ_values],
                                  dtype=np.int64))
        vidx_parts.append(np.arange(len(values), len(values) + n_occ, dtype=np.int64))
        values.extend(occ_values)
        stage_parts.append(np.array([c.states.index(t.threads[0].state) for t in occupants],
                                    dtype=np.int64))
        positions = np.concatenate(pos_parts) if pos_parts else np.zeros(0, np.int64)
        n_ev = len(positions)
        stage = np.concatenate(stage_parts)
        key = np.concatenate(key_parts)
        pos = np.concatenate([positions, np.arange(-n_occ, 0, dtype=np.int64)])
        items = np.arange(n_ev + n_occ, dtype=np.int64)
        pred, complete, waiting = run_chain(len(c.types), items, stage, key, pos, n_ev + n_occ)
        start_keys.append(positions[stage[:n_ev] == 0] * n_chains + slot)
        done_pos.append(positions[complete])
        done_slot.append(np.full(len(complete), slot, dtype=np.int64))
        done_item.append(complete)
        runs.append(_ChainRun(positions, np.concatenate(vidx_parts), occupants, pred, waiting))

    all_starts = np.sort(np.concatenate(start_keys)) if start_keys else np.zeros(0, np.int64)
    first_token = engine._token_id + 1
    engine._token_id += len(all_starts)

    # complex events, in the order the per-event engine detects them: by position, then pattern
    blocks: list[ChainMatches] = []
    first_id = engine._match_id + 1
    total = 0
    if done_pos:
        dp, ds, di = (np.concatenate(done_pos), np.concatenate(done_slot),
                      np.concatenate(done_item))
        order = np.lexsort((ds, dp))
        ds, di = ds[order], di[order]
        total = len(order)
        by_pattern = engine.stats.by_pattern
        for slot in np.unique(ds).tolist():
            rank = np.flatnonzero(ds == slot)
            c, run = chains[slot], runs[slot]
            n_ev = len(run.positions)
            items = run.walk(di[rank], len(c.types))
            real = (items >= 0) & (items < n_ev)
            rows = np.where(real, run.positions[np.where(real, items, 0)], -1)
            occ = np.where(items >= n_ev, items, -1).max(axis=0)
            first = np.where(occ >= 0, occ, items[0])
            old = {r: run.occupants[o - n_ev].threads[0].events
                   for r, o in enumerate(occ.tolist()) if o >= 0}
            blocks.append(ChainMatches(c.matcher.name, c.var, c.matcher.auto.params,
                                       rows[-1].copy(), rank, rows, old, run.vidx[first]))
            by_pattern[c.matcher.name] = by_pattern.get(c.matcher.name, 0) + len(rank)
        engine._match_id += total
        engine.stats.complex_events += total

    # partial matches left waiting: tokens in their new state (events made only for them)
    for slot, c in enumerate(chains):
        m, run = c.matcher, runs[slot]
        n_ev = len(run.positions)
        paths: list[tuple[int, list[int], Token | None]] = []
        unchanged: set[int] = set()
        for st, its in run.waiting.items():
            for item in its.tolist():
                if item >= n_ev:  # waited through the whole batch: stays registered as is
                    unchanged.add(run.occupants[item - n_ev].id)
                    continue
                chain_items, old = run.path(item)
                paths.append((st, chain_items, old))
        where = run.positions.tolist() if paths else []
        ev = src.lookup(run.positions[[j for _, ch, _ in paths for j in ch]]) if paths else ()
        moved: list[tuple[Token, int, list[Event]]] = []
        new_starts = [where[ch[0]] * n_chains + slot for _, ch, old in paths if old is None]
        ids = iter((first_token + np.searchsorted(all_starts, new_starts)).tolist())
        vidx = run.vidx
        for st, chain_items, old in paths:
            evs = [ev[where[j]] for j in chain_items]
            if old is None:
                first_item = chain_items[0]
                tok = Token(next(ids), None, evs[0].ts,
                            [Thread(INITIAL, {c.var: values[vidx[first_item]]}, [], None, None)])
            else:
                tok, evs = old, [*old.threads[0].events, *evs]
            moved.append((tok, c.states[st], evs))
        for tok in run.occupants:
            if tok.id not in unchanged:
                m.unregister(tok)
        for tok, state, evs in sorted(moved, key=lambda x: x[0].id):
            th = tok.threads[0]
            th.state, th.events, th.last = state, evs, evs[-1]
            m.register(tok)
    return MatchTable(blocks, values, first_id, total, src)


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
