"""Columnar detection of keyed sequences — the batch fast path of the engine.

For a pattern ``T0(k) -> T1(k) -> … -> Tn(k)`` under chronicle (distinct event types, one key
variable, no filter, window or NOT) the token semantics of 000 §4.4/§5 reduce to a FIFO queue of
partial matches per state and key: a ``T0`` event starts a partial match, a ``Tm`` event moves
the oldest one waiting after ``Tm-1`` (if any) and is otherwise ignored. Over a batch this is,
per state, a queue with balking, whose length is the reflected walk
``L_t = S_t - min(0, min_{s<=t} S_s)`` of the arrivals (+1) and attempts (-1) of each key; an
attempt succeeds iff ``L`` was positive before it, and FIFO order pairs the j-th success with the
j-th arrival. numpy evaluates this stage by stage for all keys at once. Partial matches left at
the end stay rows of the matcher (Matcher.pending; tokens are made of them only when something
else needs them, Matcher.materialize), those present before the batch (rows, or tokens of
per-event steps) take part as the oldest arrivals, and token and match ids are assigned in the
order the per-event engine would assign them, so the result — matches, their events and ids,
and the saved state — equals feeding the events one by one (tests/engine/test_batch.py and
test_batch_rows.py check this).

Filters, a type at several stages and a window ``[Δ]`` over the whole sequence (the chains
:func:`chain_of` also accepts) are decided column-wise for the filters (runtime.vector_expr,
else the compiled closure per row) and by :func:`step_chain` for the rest, which steps only the
rows some stage takes, in a plain loop: with a recurring type an event may advance the oldest
partial match of its key at any stage or else start one, and with a window the partial matches
expire at their deadlines, so the stages no longer decouple into queues. Distinct types without
a window keep the numpy queues (a filter only drops rows). Both give the per-event engine's
matches, ids, state, timers and statistics (tests/engine/test_batch_filters.py).

Esper's ``every a = A(f) -> b = B(g, a.k = b.k) [within Δ]`` has a kernel of its own
(:func:`process_esper_batch`, docs/esper.md "Performance"): events are not consumed, so each
instance simply completes at the first later ``B`` of its key passing ``g`` within Δ — one
``searchsorted`` per batch; the instances open after a batch stay rows until tokens are needed
(tests/esper/test_esper_kernel.py checks it against the token path).
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from cepflow.automaton.context import Context
from cepflow.automaton.model import INITIAL
from cepflow.compiler.expressions import current_sink
from cepflow.events.model import ComplexEvent, Event
from cepflow.runtime.errors import EngineError
from cepflow.runtime.timers import fired_before
from cepflow.runtime.tokens import PendingRows

_SEQ, _TS, _TYPE, _PARAMS = (attrgetter(a) for a in ("seq", "ts", "type", "params"))


class Declined(Exception):
    """A column kernel gave a batch back, having changed nothing: a filter failed on some of
    its rows (docs/semantics.md, "Evaluation errors"), so the batch goes event by event, where
    the failures are reported exactly as for events fed one at a time."""


@dataclass
class Chain:
    """A matcher whose automaton is a keyed sequence (see :func:`chain_of`)."""

    matcher: Any
    types: tuple[str, ...]
    key_param: dict[str, int]
    var: str
    states: tuple[int, ...]  # states[m]: waiting for types[m] (states[0] is the initial state)
    #: per stage, the position whose filter (reading only its event) an event must pass
    positions: tuple[Any, ...] = ()
    #: the window ``[Δ]`` over the whole sequence (ms) and its zone, or None
    window: float | None = None
    zone: int | None = None

    @property
    def queued(self) -> bool:
        """Whether the numpy queue kernel (:func:`run_chain`) applies: distinct types and no
        window (filters only drop rows); else :func:`step_chain` steps the rows."""
        return self.window is None and len(set(self.types)) == len(self.types)


#: the most stages the chain kernel takes: an event's stages are a bit mask in an int64
MAX_CHAIN = 62


def chain_of(m: Any) -> Chain | None:
    """The chain view of a matcher, or None if its automaton is not a keyed sequence under
    chronicle: one event type per stage binding the one key variable (a type may recur at
    several stages with the same key field), each stage's filter reading only its event, and
    at most one ``within`` window around the whole sequence; no NOT, no other zone."""
    auto = m.auto
    if (m.context is not Context.CHRONICLE or m.partitioned or auto.forbids
            or len(auto.zones) > 1
            or auto.distinct or auto.select is not None or m.clock is not None):
        return None
    zone = auto.zones[0] if auto.zones else None
    if zone is not None and (zone.kind != "within" or zone.timer_accept):
        return None
    zid = () if zone is None else (zone.id,)
    types: list[str] = []
    states = [INITIAL]
    positions: list[Any] = []
    key_param: dict[str, int] = {}
    var: str | None = None
    state = INITIAL
    while True:
        out = auto.edges.get(state, {})
        if len(out) != 1:
            return None
        (t, es), = out.items()
        if len(es) != 1:
            return None
        e = es[0]
        pos = e.position
        first = state == INITIAL
        if (len(pos.binds) != 1 or pos.every or pos.collect is not None
                or (pos.filter is not None and not pos.local) or pos.zones != zid
                or e.enters != (zid if first else ()) or e.exits != (zid if e.final else ())):
            return None
        i, v = pos.binds[0]
        if var is None:
            var = v
        elif v != var:
            return None
        if key_param.setdefault(t, i) != i:
            return None
        types.append(t)
        positions.append(pos)
        if len(types) > MAX_CHAIN:
            return None  # (the stages of an event are bits of an int64)
        if e.final:
            break
        state = e.target
        if state in states:
            return None
        states.append(state)
    if var is None or any(p != var for p in auto.params):
        return None
    if zone is not None and zone.last & set(states):
        return None
    return Chain(m, tuple(types), key_param, var, tuple(states), tuple(positions),
                 None if zone is None else float(zone.length),
                 None if zone is None else zone.id)


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


def step_chain(k: int, stages: Sequence[Sequence[int]], key: Sequence[int], ts: Sequence[float],
               occupants: Sequence[tuple[int, int, float]], window: float | None, end: float
               ) -> tuple[np.ndarray, list[int], dict[int, list[int]], list[int],
                          list[tuple[int, float]]]:
    """The chain's partial matches stepped row by row (repeated types, windows: the stages
    interact, so no per-stage queue).

    Event ``i`` (items ``0..n-1``, in row order) may take stages ``stages[i]`` (its type's
    stages whose filter it passes; 0 = it may start one) with key code ``key[i]`` at ``ts[i]``;
    the partial matches from before the batch are items ``n..``, ``occupants`` (stage, key
    code, window start), oldest first. As Matcher._find/_start under chronicle: first the
    partial matches whose window deadline ``start + Δ`` is before ``ts`` expire (the engine's
    timers); then the oldest partial match of the key waiting at one of the event's stages
    takes it — it is trapped instead when the span ``ts - start`` exceeds Δ (Matcher._zones)
    — and only if none took it may the event start a new one. Returns ``pred``, the
    completing items (row order), per stage the items left waiting (their partial matches'
    last items; those whose deadline is before ``end``, the batch's last timestamp, expired),
    the items that started a partial match, and the timers the engine still holds after the
    batch (every start and non-final step in a window sets one, Matcher._schedule; those
    before ``end`` fired): per partial match, its first item (start or occupant) and start.
    """
    n, n_occ = len(key), len(occupants)
    pred = np.full(n + n_occ, -1, dtype=np.int64)
    pr = pred.tolist()
    queues: dict[tuple[int, int], deque[list]] = {}
    for j, (st, kc, start) in enumerate(occupants):
        # a partial match: [age, window start, last item, first item]
        queues.setdefault((kc, st), deque()).append([j, start, n + j, n + j])
    timed: dict[int, float] = {}  # first item -> window start, of those that set a timer
    age = n_occ
    done: list[int] = []
    started: list[int] = []
    inf = float("inf")
    w = inf if window is None else window
    last = k - 1
    for i in range(n):
        kc, t, sts = key[i], ts[i], stages[i]
        best = None
        for s in sts:
            if not s:
                continue
            q = queues.get((kc, s))
            if not q:
                continue
            while q and q[0][1] + w < t:  # its deadline passed before t (the engine's timer)
                q.popleft()
            if q and (best is None or q[0][0] < best[0]):
                best, bq, bs = q[0], q, s
        if best is not None:
            bq.popleft()
            if t - best[1] > w:  # the window exceeded at this very event: trapped
                continue
            pr[i] = best[2]
            if bs == last:
                done.append(i)
            else:
                best[2] = i
                if window is not None:
                    timed[best[3]] = best[1]
                nq = queues.get((kc, bs + 1))
                if nq is None:
                    nq = queues[kc, bs + 1] = deque()
                nq.append(best)
        elif sts[0] == 0:
            started.append(i)
            if k == 1:
                done.append(i)
                continue
            q = queues.get((kc, 1))
            if q is None:
                q = queues[kc, 1] = deque()
            q.append([age, t, i, i])
            age += 1
            if window is not None:
                timed[i] = t
    waiting: dict[int, list[tuple[int, int]]] = {}
    for (_, s), q in queues.items():
        waiting.setdefault(s, []).extend((tok[0], tok[2]) for tok in q
                                         if not (tok[1] + w < end))
    pred[:] = pr
    return (pred, done, {s: [it for _, it in sorted(v)] for s, v in waiting.items()}, started,
            [(it, start) for it, start in timed.items() if not (start + w < end)])


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

    def unnumber(self) -> None:
        """Undo what :meth:`number` changed in events the caller holds (a declined batch)."""


class EventRows(Rows):
    """A list of events as kernel rows."""

    def __init__(self, events: Sequence[Event]) -> None:
        self.events = events
        self.n = len(events)
        #: events number() shifted after a restore, with their reader's numbers
        self._shifted: list[tuple[Event, int]] = []
        self._params: list[tuple] | None = None
        self.ts = np.fromiter(map(_TS, events), dtype=np.float64, count=self.n)
        types = list(map(_TYPE, events))
        type_code = {t: i for i, t in enumerate(dict.fromkeys(types))}
        self.type_names = list(type_code)
        self.codes = (np.zeros(self.n, dtype=np.int64) if len(type_code) == 1 else
                      np.fromiter(map(type_code.__getitem__, types), dtype=np.int64,
                                  count=self.n))

    def last_ts(self) -> Any:
        return self.events[-1].ts

    def all_params(self) -> list[tuple]:
        """Every row's parameter tuple (read once)."""
        if self._params is None:
            self._params = list(map(_PARAMS, self.events))
        return self._params

    def values(self, param: int, rows: np.ndarray) -> tuple[np.ndarray, list[Any]]:
        ev = self.events
        return np.arange(len(rows), dtype=np.int64), [ev[i].params[param] for i in rows.tolist()]

    def lookup(self, rows: np.ndarray) -> Sequence[Event]:
        return self.events

    def number(self, engine: Any) -> None:
        counters = engine.host.counters
        events, base = self.events, counters.input
        if not self.n:
            return
        if counters.renumber:  # (after a restore: the saved stream's numbering goes on)
            self._shifted = [(e, e.seq) for e in events if e.seq >= 0]
            for e, seq in self._shifted:
                e.seq = counters.continued(seq)
        seqs = np.fromiter(map(_SEQ, events), dtype=np.int64, count=self.n)
        low, high = int(seqs.min()), int(seqs.max())
        if low >= 0:  # numbered already (the usual case): only the counter moves
            counters.input = max(base, high + 1)
            return
        if high < 0:
            for e, q in zip(events, range(base, base + self.n), strict=True):
                e.seq = q
            counters.input = base + self.n
            return
        for e in events:
            if e.seq < 0:
                e.seq = counters.input
            if e.seq >= counters.input:
                counters.input = e.seq + 1

    def unnumber(self) -> None:
        for e, seq in self._shifted:
            e.seq = seq
        self._shifted = []

    def check(self, engine: Any) -> None:
        if not self.n:
            return
        arities = engine.host.arity
        arity = np.array([arities.get(t, -1) for t in self.type_names], dtype=np.int64)
        want = arity[self.codes]
        lens = np.fromiter(map(len, self.all_params()), dtype=np.int64, count=self.n)
        wrong = np.flatnonzero((want >= 0) & (want != lens))
        if len(wrong):
            e = self.events[int(wrong[0])]
            raise EngineError(f"event {e!r} has {len(e.params)} parameter(s), type "
                              f"'{e.type}' declares {arities[e.type]}")


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
    """Feed ``events`` (time-ordered) to an engine all of whose patterns are chains (raises
    :class:`Declined`, having changed nothing, when a filter fails on a row)."""
    with gc_paused():
        table = _run(engine, chains, EventRows(events))
        out = table.complex_events()
        if engine.host.rules:
            _fire(engine.host, events, out, table.positions())
        return out


def process_columns(engine: Any, chains: list[Chain], rows: Rows) -> MatchTable:
    """Feed a column batch to an engine all of whose patterns are chains and none of whose
    rules has a registered action: the complex events stay columns, rules are counted (raises
    :class:`Declined`, having changed nothing, when a filter fails on a row)."""
    with gc_paused():
        table = _run(engine, chains, rows)
        rules = engine.host.rules
        if rules:
            counts: dict[str, int] = {}
            for b in table.blocks:
                counts[b.pattern] = counts.get(b.pattern, 0) + len(b.at)
            for i, t in enumerate(rows.type_names):
                if rules.triggers(t):
                    counts[t] = counts.get(t, 0) + int(np.count_nonzero(rows.codes == i))
            engine.host.stats.rule_firings += rules.count(counts)
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
    host = engine.host
    ts, n = src.ts, src.n
    if n and (ts[0] < host.time or bool((ts[1:] < ts[:-1]).any())):
        bad = 0 if ts[0] < host.time else int(np.flatnonzero(ts[1:] < ts[:-1])[0]) + 1
        prev = host.time if bad == 0 else ts[bad - 1]
        e = src.lookup(np.array([bad]))[bad]
        raise EngineError(f"event {e!r} at {e.ts} is older than {prev:g}; "
                          "order the input (cepflow.inputs.reorder) before feeding the engine")
    src.check(engine)
    src.number(engine)
    host.stats.events += n
    if n:
        host.time = src.last_ts()


@dataclass
class _ChainRun:
    """One chain's items over a batch: events (``positions`` = their rows) then the partial
    matches from before the batch (``occupants``, as rows), with the queues' result."""

    positions: np.ndarray
    vidx: np.ndarray  # per item, index of its key value in the batch's value list
    occupants: PendingRows
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

    def paths(self, last: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The paths of :meth:`walk`: their items, the batch row of each of their events (-1
        where the path is not in the batch) and per path the occupant item it continues (-1:
        it began in the batch, at ``items[0]``)."""
        n_ev = len(self.positions)
        items = self.walk(last, k)
        real = (items >= 0) & (items < n_ev)
        rows = np.where(real, self.positions[np.where(real, items, 0)], -1)
        return items, rows, np.where(items >= n_ev, items, -1).max(axis=0)


def _run(engine: Any, chains: list[Chain], src: Rows) -> MatchTable:
    before = _counters(engine)
    _prepare(engine, src)
    try:
        return _chains(engine, chains, src)
    except Declined:
        # (the chains' loop changes nothing before every filter is decided)
        _unprepare(engine, before, src)
        raise


def _counters(engine: Any) -> tuple[Any, ...]:
    """What :func:`_prepare` changes in the engine (for :func:`_unprepare`)."""
    host = engine.host
    return host.time, host.stats.events, host.counters.snapshot()


def _unprepare(engine: Any, before: tuple[Any, ...], src: Rows) -> None:
    """Undo :func:`_prepare` when a kernel gives its batch back: the clock, counters and a
    restored stream's numbering as they were (the numbers given to unnumbered events stay:
    fed one by one they get the same ones)."""
    host = engine.host
    host.time, host.stats.events, numbering = before
    host.counters.rewind(numbering)
    src.unnumber()


def _chains(engine: Any, chains: list[Chain], src: Rows) -> MatchTable:
    """The chain kernel over a prepared batch (:func:`_run`)."""
    type_code = {t: i for i, t in enumerate(src.type_names)}
    codes = src.codes
    values: list[Any] = []
    runs: list[_ChainRun] = []
    start_keys = []  # (position * n_chains + slot) of every token start, for token ids
    done_pos, done_slot, done_item = [], [], []
    n_chains = len(chains)
    last_ts = float(src.ts[-1]) if src.n else float("-inf")
    filter_cols: dict[tuple[str, int], np.ndarray] = {}
    timers: list[tuple[int, list[tuple[int, float]]]] = []  # per windowed chain (step_chain)
    for slot, c in enumerate(chains):
        occupants = _occupants(c)
        k = len(c.types)
        pos_parts, bits_parts, key_parts, vidx_parts = [], [], [], []
        table: dict[Any, int] = {}
        # a NaN key unifies with nothing (Algorithm 1 compares values): at any stage after
        # the first a NaN row takes no partial match
        strict = [st > 0 for st in range(len(c.types))]
        for t in dict.fromkeys(c.types):
            code = type_code.get(t)
            if code is None:
                continue
            idx = np.flatnonzero(codes == code)
            sts = [st for st, u in enumerate(c.types) if u == t]
            passes = [_filter_rows(c.positions[st], src, idx, engine.program.schemas,
                                   filter_cols) for st in sts]
            if any(p is not None for p in passes):
                keep = np.zeros(len(idx), dtype=bool)
                for p in passes:
                    keep |= True if p is None else p
                idx = idx[keep]
                passes = [None if p is None else p[keep] for p in passes]
            local, uniq = src.values(c.key_param[t], idx)
            local = np.asarray(local, dtype=np.int64)
            remap = np.array([table.setdefault(v, len(table)) for v in uniq], dtype=np.int64)
            nan = (np.array([v != v for v in uniq], dtype=bool)[local]
                   if len(uniq) and any(strict[st] for st in sts) else None)
            bits = np.zeros(len(idx), dtype=np.int64)
            for st, p in zip(sts, passes, strict=True):
                if p is None and (nan is None or not strict[st]):
                    bits |= 1 << st
                    continue
                take = np.ones(len(idx), dtype=bool) if p is None else p
                if strict[st] and nan is not None:
                    take = take & ~nan
                bits |= take.astype(np.int64) << st
            key_parts.append(remap[local] if len(remap) else np.zeros(0, np.int64))
            vidx_parts.append(local + len(values))
            values.extend(uniq)
            pos_parts.append(idx)
            bits_parts.append(bits)
        occ_values = occupants.keys
        n_occ = len(occupants)
        occ_key = np.array([table.setdefault(v, len(table)) for v in occ_values], dtype=np.int64)
        occ_vidx = np.arange(len(values), len(values) + n_occ, dtype=np.int64)
        values.extend(occ_values)
        stage_of = {s: st for st, s in enumerate(c.states)}
        occ_stage = [stage_of[s] for s in occupants.states]
        positions = np.concatenate(pos_parts) if pos_parts else np.zeros(0, np.int64)
        bits = np.concatenate(bits_parts) if bits_parts else np.zeros(0, np.int64)
        key = np.concatenate(key_parts) if key_parts else np.zeros(0, np.int64)
        vidx = np.concatenate(vidx_parts) if vidx_parts else np.zeros(0, np.int64)
        live = bits != 0  # (a row no stage takes: a NaN key at a general step)
        if not live.all():
            positions, bits, key, vidx = positions[live], bits[live], key[live], vidx[live]
        if c.queued:
            n_ev = len(positions)
            stage = np.concatenate([np.log2(bits).astype(np.int64) if n_ev else bits,
                                    np.array(occ_stage, dtype=np.int64)])
            pos = np.concatenate([positions, np.arange(-n_occ, 0, dtype=np.int64)])
            items = np.arange(n_ev + n_occ, dtype=np.int64)
            pred, complete, waiting = run_chain(k, items, stage, np.concatenate([key, occ_key]),
                                                pos, n_ev + n_occ)
            started = np.flatnonzero(stage[:n_ev] == 0)
        else:
            order = np.argsort(positions, kind="stable")
            positions, bits, key, vidx = positions[order], bits[order], key[order], vidx[order]
            n_ev = len(positions)
            stage_sets = {b: [st for st in range(k) if b >> st & 1]
                          for b in np.unique(bits).tolist()}
            z = c.zone
            pred, done, left, begun, timed = step_chain(
                k, list(map(stage_sets.__getitem__, bits.tolist())), key.tolist(),
                src.ts[positions].tolist(),
                [(st, kc, evs[0].ts if z is not None else 0.0) for st, kc, evs
                 in zip(occ_stage, occ_key.tolist(), occupants.events, strict=True)],
                c.window, last_ts)
            complete = np.array(done, dtype=np.int64)
            waiting = {st: np.array(its, dtype=np.int64) for st, its in left.items()}
            started = np.array(begun, dtype=np.int64)
            if c.zone is not None:
                timers.append((slot, timed))
        start_keys.append(positions[started] * n_chains + slot)
        done_pos.append(positions[complete])
        done_slot.append(np.full(len(complete), slot, dtype=np.int64))
        done_item.append(complete)
        runs.append(_ChainRun(positions, np.concatenate([vidx, occ_vidx]), occupants, pred,
                              waiting))

    host = engine.host
    all_starts = np.sort(np.concatenate(start_keys)) if start_keys else np.zeros(0, np.int64)
    first_token = host.counters.reserve_tokens(len(all_starts))

    # complex events, in the order the per-event engine detects them: by position, then pattern
    blocks: list[ChainMatches] = []
    first_id = host.counters.match + 1
    total = 0
    if done_pos:
        dp, ds, di = (np.concatenate(done_pos), np.concatenate(done_slot),
                      np.concatenate(done_item))
        order = np.lexsort((ds, dp))
        ds, di = ds[order], di[order]
        total = len(order)
        by_pattern = host.stats.by_pattern
        for slot in np.unique(ds).tolist():
            rank = np.flatnonzero(ds == slot)
            c, run = chains[slot], runs[slot]
            n_ev = len(run.positions)
            items, rows, occ = run.paths(di[rank], len(c.types))
            first = np.where(occ >= 0, occ, items[0])
            old = {r: run.occupants.events[o - n_ev]
                   for r, o in enumerate(occ.tolist()) if o >= 0}
            blocks.append(ChainMatches(c.matcher.name, c.var, c.matcher.auto.params,
                                       rows[-1].copy(), rank, rows, old, run.vidx[first]))
            by_pattern[c.matcher.name] = by_pattern.get(c.matcher.name, 0) + len(rank)
        host.counters.reserve_matches(total)
        host.stats.complex_events += total

    # partial matches left waiting: rows of the matcher in their new state (tokens are made
    # of them only when needed, Matcher.materialize), events made only for them
    for slot, c in enumerate(chains):
        m, run = c.matcher, runs[slot]
        occ = run.occupants
        n_ev = len(run.positions)
        left: list[tuple[int, int, Any, list[Event]]] = []  # (token id, state, key, events)
        for st, its in run.waiting.items():
            stay = its >= n_ev
            for o in (its[stay] - n_ev).tolist():  # waited through the whole batch: unchanged
                left.append((occ.ids[o], occ.states[o], occ.keys[o], occ.events[o]))
            moved = its[~stay]
            if not len(moved):
                continue
            items, rows, old = run.paths(moved, st)
            ev = src.lookup(rows[rows >= 0])
            new = old < 0
            ids = iter((first_token + np.searchsorted(
                all_starts, rows[0, new] * n_chains + slot)).tolist())
            new_keys = iter([values[v] for v in run.vidx[items[0, new]].tolist()])
            state = c.states[st]
            for o, path in zip((old - n_ev).tolist(), rows.T.tolist(), strict=True):
                if o < 0:
                    left.append((next(ids), state, next(new_keys), [ev[r] for r in path]))
                else:
                    left.append((occ.ids[o], state, occ.keys[o],
                                 [*occ.events[o], *(ev[r] for r in path if r >= 0)]))
        left.sort(key=itemgetter(0))
        m.tokens.clear()  # (every token of the matcher was an occupant: now a row or gone)
        m.buckets.clear()
        m.pending = None
        if left:
            tids, states, keys, evss = map(list, zip(*left, strict=True))
            m.pending = PendingRows(tids, evss, c.zone, states, keys, c.var)
    if src.n and timers:
        # the timers before the last event have fired (they only expired partial matches,
        # which the kernel did); the later ones of the batch's partial matches are set, also
        # those of completed ones (they fire idle, as in the per-event engine)
        host.timers.keep(lambda h: not fired_before(h, last_ts))
        for slot, timed in timers:
            c, run = chains[slot], runs[slot]
            n_ev = len(run.positions)
            length = c.matcher.zone_by_id[c.zone].length
            firsts = [it for it, _ in timed if it < n_ev]
            ids = iter((first_token + np.searchsorted(
                all_starts, run.positions[firsts] * n_chains + slot)).tolist())
            for it, start in timed:
                tid = next(ids) if it < n_ev else run.occupants.ids[it - n_ev]
                host.schedule(start + length, c.matcher, tid, c.zone, start)
    return MatchTable(blocks, values, first_id, total, src)


def _occupants(c: Chain) -> PendingRows:
    """The chain's partial matches as rows, oldest first: its tokens (from per-event steps or
    a restored state; the batch drops them) and then the rows the last batch left."""
    m = c.matcher
    rows = m.pending
    toks = m.registered_tokens()
    if not toks:
        return rows if rows is not None else PendingRows([], [], c.zone, [], [], c.var)
    ths = [t.threads[0] for t in toks]
    out = PendingRows([t.id for t in toks], [th.events for th in ths], c.zone,
                      [th.state for th in ths], [th.bindings.get(c.var) for th in ths], c.var)
    if rows is not None:  # (younger than every token)
        for col in ("ids", "events", "states", "keys"):
            getattr(out, col).extend(getattr(rows, col))
    return out


_NOB: dict[str, Any] = {}  # the bindings given to a filter that reads only its event


def _filter_rows(pos: Any, src: Rows, idx: np.ndarray, schemas: Any,
                 cols: dict[tuple[str, int], np.ndarray]) -> np.ndarray | None:
    """Which rows ``idx`` (all of the position's type) pass the position's filter
    (:func:`_filter_mask`; None: it has none). ``cols`` caches the columns read (per type and
    field) for the other stages."""
    if pos.filter is None:
        return None
    t = pos.type

    def column(k: int) -> np.ndarray:
        c = cols.get((t, k))
        if c is None:
            local, uniq = src.values(k, idx)
            c = cols[t, k] = _as_column(uniq)[np.asarray(local, dtype=np.int64)]
        return c

    fields = {name: i for i, name in enumerate(schemas[t].param_names)}
    return _filter_mask(pos, idx, fields, column, src.lookup)


def _filter_mask(pos: Any, rows: np.ndarray, fields: Mapping[str, int],
                 column: Any, lookup: Any) -> np.ndarray | None:
    """Mask over ``rows`` (event positions) of the events passing ``pos``'s filter, which reads
    only its event (None: no filter): column-wise when runtime.vector_expr can decide it
    (``column(k)``: parameter ``k`` of those rows), else the compiled closure per event
    (``lookup(rows)[i]``: the event at position ``i``)."""
    from cepflow.runtime.vector_expr import filter_mask

    if pos.filter is None:
        return None
    mask = (filter_mask(pos.where, fields, column)
            if pos.where is not None and len(rows) else None)
    if mask is None:
        ev, flt = lookup(rows), pos.filter
        sink = current_sink()
        mark = len(sink) if sink is not None else 0
        mask = np.fromiter((bool(flt(ev[i], _NOB)) for i in rows.tolist()), dtype=bool,
                           count=len(rows))
        if sink is not None and len(sink) > mark:
            # the per-event engine evaluates a filter only where a partial match could take
            # the event: to report the same failures, the batch goes event by event
            del sink[mark:]
            raise Declined(f"a filter failed on {len(rows)} row(s)")
    return mask


def _fire(host: Any, events: Sequence[Event], out: list[ComplexEvent],
          out_pos: list[int]) -> None:
    """Fire rules as the per-event engine would: per input event, after its detections
    (``out_pos``: the batch row each complex event was detected at), through the host's one
    rule-firing implementation; then the events actions emitted."""
    rules = host.rules
    marks: dict[int, list[ComplexEvent]] = {}
    for ce, p in zip(out, out_pos, strict=True):
        marks.setdefault(p, []).append(ce)
    triggered = {i for i, e in enumerate(events) if rules.triggers(e.type)} | set(marks)
    for i in sorted(triggered):
        host.fire(events[i], marks.get(i, []))
    if host.pending:
        host.drain(out)


# -- Esper's `every a = A(f) -> b = B(g, key) [within Δ]` ----------------------------------


@dataclass
class EsperPair:
    """A matcher whose automaton is Esper's ``every a = A(f) -> b = B(g)`` (compiler.esper:
    start policy *spawn*), ``B`` unified with ``a`` on one key, optionally in ``within Δ``;
    ``f`` reads only its own event. Each ``A`` passing ``f`` opens an instance; it
    completes at the first later ``B`` of its key passing ``g`` no later than Δ after the ``A``
    (Esper: events are not consumed, so instances do not compete), else it expires."""

    matcher: Any
    first: Any  # Edge from the initial state
    second: Any  # final Edge
    state: int  # where instances wait
    key_a: int  # param of A binding the key variable
    key_b: int  # param of B unified with it
    window: float  # Δ in ms (inf without a within zone)
    zone: int | None
    key_var: str  # the key variable (bound by A, unified by B)
    #: B's other bindings (param, variable): the ones it adds to A's
    b_new: tuple[tuple[int, str], ...]
    #: ``g`` reads only B's own fields, so the column kernel applies (else ``g`` also reads
    #: ``a``'s fields and only the matcher's per-event step does)
    columnar: bool = True


def esper_pair_of(m: Any) -> EsperPair | None:
    """The pair view of a matcher, or None if its automaton is not of that shape."""
    auto = m.auto
    a = auto.spawn_edge()  # (context esper, spawn, not partitioned, no clock, one first edge)
    if a is None:
        return None
    s = a.target
    if a.final or a.exits or set(auto.edges) != {INITIAL, s}:
        return None
    out = auto.edges[s]
    if len(out) != 1:
        return None
    ((tb, es),) = out.items()
    if len(es) != 1:
        return None
    b = es[0]
    if not b.final or b.enters or b.position.every:
        return None
    if a.position.filter is not None and not a.position.local:
        return None
    a_vars = [v for _, v in a.position.binds]
    b_vars = [v for _, v in b.position.binds]
    if len(set(a_vars)) != len(a_vars) or len(set(b_vars)) != len(b_vars):
        return None
    shared = [(i, v) for i, v in b.position.binds if v in a_vars]
    kt = auto.key_index.get(s, {}).get(tb)
    if len(shared) != 1 or kt is None or shared[0] != kt:
        return None
    key_var = kt[1]
    key_a = next(i for i, v in a.position.binds if v == key_var)
    if auto.zones:
        if len(auto.zones) != 1:
            return None
        z = auto.zones[0]
        if (z.kind != "within" or z.timer_accept or a.enters != (z.id,) or b.exits != (z.id,)
                or a.position.zones != (z.id,) or b.position.zones != (z.id,)):
            return None
        window, zone = float(z.length), z.id
    else:
        if a.enters or b.exits:
            return None
        window, zone = float("inf"), None
    columnar = b.position.filter is None or b.position.local
    b_new = tuple((i, v) for i, v in b.position.binds if v != key_var)
    return EsperPair(m, a, b, s, key_a, kt[0], window, zone, key_var, b_new, columnar)


class _TypeColumns:
    """Per event type of a batch: its rows, and parameter columns read once (the filters and
    keys of several patterns often read the same ones)."""

    def __init__(self, src: EventRows, schemas: Any) -> None:
        self.src, self.schemas = src, schemas
        self.type_code = {t: i for i, t in enumerate(src.type_names)}
        self._rows: dict[str, np.ndarray] = {}
        self._cols: dict[tuple[str, int], np.ndarray] = {}
        self._params: dict[str, list[tuple]] = {}

    def rows(self, t: str) -> np.ndarray:
        r = self._rows.get(t)
        if r is None:
            code = self.type_code.get(t)
            r = (np.flatnonzero(self.src.codes == code) if code is not None
                 else np.zeros(0, np.int64))
            self._rows[t] = r
        return r

    def params(self, t: str) -> list[tuple]:
        p = self._params.get(t)
        if p is None:
            ev, rows = self.src.events, self.rows(t)
            p = self._params[t] = (self.src.all_params() if len(rows) == len(ev)
                                   else [ev[i].params for i in rows.tolist()])
        return p

    def column(self, t: str, k: int) -> np.ndarray:
        """Parameter ``k`` of the type's rows as numpy infers it (object for mixed values)."""
        c = self._cols.get((t, k))
        if c is None:
            c = self._cols[t, k] = _as_column(list(map(itemgetter(k), self.params(t))))
        return c

    def fields(self, t: str) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.schemas[t].param_names)}


def _passing(edge: Any, cols: _TypeColumns) -> np.ndarray:
    """Indices (into ``cols.rows(type)``) of the events that pass the edge's event-only
    filter (:func:`_filter_mask`)."""
    pos = edge.position
    t = pos.type
    rows = cols.rows(t)
    mask = _filter_mask(pos, rows, cols.fields(t), lambda k: cols.column(t, k),
                        lambda _rows: cols.src.events)
    return np.arange(len(rows), dtype=np.int64) if mask is None else np.flatnonzero(mask)


def _as_column(values: list[Any]) -> np.ndarray:
    """``values`` as a numpy column: numbers and booleans as numpy infers them, anything else
    (strings, None, mixed) as the Python objects themselves."""
    c = np.array(values)
    if c.ndim != 1 or c.dtype.kind not in "biuf":
        c = np.empty(len(values), dtype=object)
        c[:] = values
    return c


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


def process_esper_batch(engine: Any, pairs: list[EsperPair], events: Sequence[Event]
                        ) -> list[ComplexEvent] | None:
    """Feed ``events`` (time-ordered) to an engine all of whose patterns are Esper pairs.

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
        return _esper_batch(engine, pairs, events)


def _esper_batch(engine: Any, pairs: list[EsperPair], events: Sequence[Event]
                 ) -> list[ComplexEvent] | None:
    src = EventRows(events)
    n = src.n
    before = _counters(engine)
    _prepare(engine, src)
    if not n:
        return []
    cols = _TypeColumns(src, engine.program.schemas)
    try:
        plans = [_pair_rows(pr, cols) for pr in pairs]
    except Declined:
        plans = [None]
    if any(p is None for p in plans):
        _unprepare(engine, before, src)
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
    for slot, (pr, p) in enumerate(zip(pairs, plans, strict=True)):
        rank = np.flatnonzero(ms == slot)
        m = pr.matcher
        if len(rank):
            _emit_pair(pr, p, mi[rank], rank, first_id, events, host.arity, out)
            by_pattern[m.name] = by_pattern.get(m.name, 0) + len(rank)
            m.done = True
        ids = (first_token + np.arange(len(all_starts)) if n_pairs == 1 else
               first_token + np.searchsorted(all_starts, p["new_rows"] * n_pairs + slot))
        open_ids, open_events = _leave_open(pr, p, ids, last_ts, events)
        m.pending = PendingRows(open_ids, open_events, pr.zone) if open_ids else None
    # timers: the per-event path would have run those before last_ts (they only expire
    # instances, done above); each pattern keeps one engine timer, for its first deadline
    # (Matcher._schedule, Matcher.materialize)
    slots = {pr.matcher.slot for pr in pairs}
    host.timers.keep(lambda h: not fired_before(h, last_ts)
                     and not (h[4] == -1 and h[3] in slots))
    for pr in pairs:
        m = pr.matcher
        m.deadlines = deque(d for d in m.deadlines if d[0] > last_ts)  # (Esper: fired at =)
        if pr.zone is None:
            continue
        firsts = [m.deadlines[0][0]] if m.deadlines else []
        if m.pending is not None:
            firsts.append(m.pending.events[0].ts + pr.window)
        if firsts:
            host.schedule(min(firsts), m, -1, pr.zone, min(firsts) - pr.window)
    if host.rules:
        _fire(host, events, out, mr.tolist())
    return out


def _pair_rows(pr: EsperPair, cols: _TypeColumns) -> dict | None:
    """Instances and their completing rows for one pattern over a batch (numpy)."""
    src = cols.src
    a, b = pr.first, pr.second
    ta, tb = a.position.type, b.position.type
    a_loc, b_loc = _passing(a, cols), _passing(b, cols)
    new_rows, b_rows = cols.rows(ta)[a_loc], cols.rows(tb)[b_loc]
    m = pr.matcher
    old = m.registered_tokens()  # instances from before the batch: tokens, then pending rows
    pend_ids, pend_events = (m.pending.ids, m.pending.events) if m.pending else ([], [])
    n = src.n
    span = n + 2
    ka = pr.key_a
    try:
        pend_keys = _as_column([e.params[ka] for e in pend_events])
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


def _emit_pair(pr: EsperPair, p: dict, inst: np.ndarray, rank: np.ndarray, first_id: int,
               events: Sequence[Event], arity: dict[str, int], out: list[Any]) -> None:
    """The complex events of one pattern, as Matcher._complete makes them."""
    m = pr.matcher
    auto = m.auto
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


def _leave_open(pr: EsperPair, p: dict, new_ids: np.ndarray, last_ts: float,
                events: Sequence[Event]) -> tuple[list[int], list[Event]]:
    """Tokens from before the batch that completed or expired are dropped; the instances still
    waiting after it (from the last batch's pending rows or new) are returned as the pattern's
    pending rows (ids, A events) — tokens are made of them only when needed
    (Matcher.materialize)."""
    m = pr.matcher
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
