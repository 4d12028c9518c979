"""The chain kernel: columnar detection of keyed sequences, the batch fast path of the engine.

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
and the saved state — equals feeding the events one by one (tests/runtime/test_chain_kernel.py and
test_pending_rows.py check this).

Filters, a type at several stages and a window ``[Δ]`` over the whole sequence (the chains
runtime.shapes.chain_of also accepts) are decided column-wise for the filters
(runtime.vector_expr, else the compiled closure per row) and by kernels.queues.step_chain for
the rest, which steps only the rows some stage takes, in a plain loop: with a recurring type an
event may advance the oldest partial match of its key at any stage or else start one, and with a
window the partial matches expire at their deadlines, so the stages no longer decouple into
queues. Distinct types without
a window keep the numpy queues (a filter only drops rows); one type at every stage without a
window, every row passing every stage (``T{k}``), is numpy too (kernels.queues.repeat_chain).
All give the per-event engine's matches, ids, state, timers and statistics
(tests/runtime/test_chain_kernel_filters.py). NOTs between the stages (their rows trap the
partial matches of their key — or, a NOT of any key, of every key — waiting in the gap,
runtime.kernels.filters.forbid_rows) keep the numpy queues where the chain would (the rows
clear a stage's queue of their key, run_chain's ``clears``), else step_chain; trees (``A(x)
AND B(x)``: a stage per waiting state, each type's step leading to a stage of its own,
runtime.shapes.Chain.after) go through step_chain (tests/runtime/test_chain_nots.py), and
so do chains whose filters read variables bound at earlier stages (runtime.shapes.Chain.
cross, one type per stage: kernels.crossing decides their filters on pairs column-wise and
assigns the rows stage by stage, _assigned; where numpy cannot decide them exactly,
step_chain's ``cross`` tries a key's partial matches oldest first with their bindings,
_cross_tests; tests/runtime/test_chain_cross.py). A window with each type at one stage and no
NOT goes through kernels.crossing too, its stages queues without pair tests (_assigned;
tests/runtime/test_chain_window_queues.py), else step_chain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np

from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.binding import bind
from cepflow.runtime.collector import gc_paused
from cepflow.runtime.kernels.crossing import cross_chain, pair_tests
from cepflow.runtime.kernels.every import plan_every
from cepflow.runtime.kernels.filters import chain_rows, forbid_rows
from cepflow.runtime.kernels.frame import (
    Declined,
    count_rules,
    counters_before,
    declined_on_failure,
    fire_or_count,
    prepare,
    unprepare,
)
from cepflow.runtime.kernels.noise import plan_context
from cepflow.runtime.kernels.queues import Cross, repeat_chain, run_chain, step_chain
from cepflow.runtime.rows import ChainMatches, EventRows, MatchTable, Rows, distinct
from cepflow.runtime.shapes import Chain
from cepflow.runtime.timers import fired_before
from cepflow.runtime.tokens import KeyedRows, PendingRows


def process_batch(engine: Any, matchers: list[Any], events: Sequence[Event]
                  ) -> list[ComplexEvent]:
    """Feed ``events`` (time-ordered) to an engine all of whose patterns are chains (raises
    :class:`Declined`, having changed nothing, when a filter fails on a row)."""
    with gc_paused():
        table = _run(engine, matchers, EventRows(events))
        out = table.complex_events()
        if engine.host.rules:
            fire_or_count(engine.host, table, out)
        return out



def process_columns(engine: Any, matchers: list[Any], rows: Rows) -> MatchTable:
    """Feed a column batch to an engine all of whose patterns are chains and none of whose
    rules has a registered action: the complex events stay columns, rules are counted (raises
    :class:`Declined`, having changed nothing, when a filter fails on a row)."""
    with gc_paused():
        table = _run(engine, matchers, rows)
        count_rules(engine.host, table, rows)
        return table



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



def _run(engine: Any, matchers: list[Any], src: Rows) -> MatchTable:
    before = counters_before(engine)
    prepare(engine, src)
    try:
        return _chains(engine, matchers, src)
    except Declined:
        # (the chains' loop changes nothing before every filter is decided)
        unprepare(engine, before, src)
        raise



def _chains(engine: Any, matchers: list[Any], src: Rows) -> MatchTable:
    """The chain kernel over a prepared batch (:func:`_run`)."""
    chains: list[Chain] = [_chain(m) for m in matchers]
    type_code = {t: i for i, t in enumerate(src.type_names)}
    values: list[Any] = []
    runs: list[_ChainRun] = []
    start_keys = []  # (position * n_chains + slot) of every token start, for token ids
    done_pos, done_slot, done_item = [], [], []
    n_chains = len(chains)
    last_ts = float(src.ts[-1]) if src.n else float("-inf")
    filter_cols: dict[tuple[str, int], np.ndarray] = {}
    timers: list[tuple[int, list[tuple[int, float]]]] = []  # per windowed chain (step_chain)
    for slot, c in enumerate(chains):
        run, started, complete, timed = _plan_one(
            matchers[slot], c, src, type_code, values, engine.program.schemas, filter_cols,
            last_ts)
        if timed is not None:
            timers.append((slot, timed))
        positions = run.positions
        start_keys.append(positions[started] * n_chains + slot)
        done_pos.append(positions[complete])
        done_slot.append(np.full(len(complete), slot, dtype=np.int64))
        done_item.append(complete)
        runs.append(run)

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
        for slot in distinct(ds).tolist():
            rank = np.flatnonzero(ds == slot)
            m = matchers[slot]
            blocks.append(_block(m, chains[slot], runs[slot], di[rank], rank))
            by_pattern[m.name] = by_pattern.get(m.name, 0) + len(rank)
        host.counters.reserve_matches(total)
        host.stats.complex_events += total

    # partial matches left waiting: rows of the matcher in their new state (tokens are made
    # of them only when needed, Matcher.materialize), events made only for them
    for slot, c in enumerate(chains):
        _leave(matchers[slot], c, runs[slot], src, values, lambda rows, slot=slot: (
            first_token + np.searchsorted(all_starts, rows * n_chains + slot)))
    if src.n and timers:
        # (every pattern is a chain: the timers before the last event are all theirs)
        host.timers.keep(lambda h: not fired_before(h, last_ts))
        for slot, timed in timers:
            _set_timers(matchers[slot], chains[slot], runs[slot], timed,
                        lambda rows, slot=slot: (
                            first_token + np.searchsorted(all_starts, rows * n_chains + slot)))
    return MatchTable(blocks, values, first_id, total, src)



def _set_timers(m: Any, c: Chain, run: _ChainRun, timed: list[tuple[int, float]],
                start_ids: Callable[[np.ndarray], np.ndarray]) -> None:
    """The window timers chain ``m`` holds after a batch (its timers before the batch's last
    event dropped by the caller: they only expired partial matches, which the plan did):
    those of the partial matches ``timed`` (kernels.queues.step_chain: (first item, start),
    also of completed ones — they fire idle, as in the per-event engine, and move the clock
    at ``advance_to``); ``start_ids``: the token ids of the partial matches begun at the
    given batch rows."""
    n_ev = len(run.positions)
    length = m.pattern.zone_by_id[c.zone].length
    firsts = [it for it, _ in timed if it < n_ev]
    ids = iter(start_ids(run.positions[firsts]).tolist())
    for it, start in timed:
        tid = next(ids) if it < n_ev else run.occupants.ids[it - n_ev]
        m.host.schedule(start + length, m, tid, c.zone, start)



def drop_passed_timers(host: Any, matchers: Sequence[Any], last_ts: float) -> None:
    """Drop the timers of ``matchers`` that would fire before an event at ``last_ts`` (a
    split batch's last instant): the windowed chains the split plans, whose timers only expire
    partial matches, which their plans did (:func:`plan_chain`) — silenced during the batch
    (Engine.replaying), they would only make the rows they are due before stepped ones."""
    slots = {m.slot for m in matchers
             if m.pattern.pair is None and (c := _chain(m)) is not None and c.zone is not None}
    if slots:
        host.timers.keep(lambda h: h[3] not in slots or not fired_before(h, last_ts))



def split_chain(m: Any) -> Chain | None:
    """The chain of ``m`` when the program split may plan it with :func:`plan_chain`: one the
    kernel takes (chronicle, immediate, strict, unrestricted; with or without a window) and
    not a chain of filters reading variables that the kernel leaves to the row step
    (Chain.columnar), else None."""
    c = _chain(m)
    return c if c is not None and c.columnar else None



def plan_chain(m: Any, src: Rows, schemas: Any, end: float | None = None,
               blocks: Any = None) -> tuple[
        np.ndarray, np.ndarray, list[ComplexEvent], Callable[[np.ndarray], None]]:
    """The chain pattern ``m`` (:func:`split_chain`) over a batch as the program split plans a
    kernel pattern (kernels.restart.Plan): the rows that begin its partial matches
    (ascending: a row begins at most one), the rows its matches complete at with those complex
    events (in detection order; ids to be given by the split), and the commit that leaves its
    partial matches as rows, given the token ids of those beginnings in order. ``src`` is the
    batch, or a derived stream of input rows and complex events (kernels.cascade.plan_higher);
    ``end`` the batch's last instant (default ``src``'s last: a derived stream may end before
    the batch). In a window, the partial matches whose deadline is before ``end`` have expired,
    and the commit also sets the timers of the batch's partial matches the per-event engine
    holds after it (:func:`_set_timers`; the caller drops those before ``end`` before the
    batch is replayed, :func:`drop_passed_timers`). Nothing changes before the commit; raises
    :class:`Declined` when a filter fails on a row or a partial match is no row. ``blocks``
    (kernels.column_blocks.ColumnBlocks) collects its matches' block too."""
    c = _chain(m)
    values: list[Any] = []
    type_code = {t: i for i, t in enumerate(src.type_names)}
    if end is None:
        end = float(src.ts[-1]) if src.n else float("-inf")
    run, started, complete, timed = _plan_one(m, c, src, type_code, values, schemas, {}, end)
    new_rows = np.sort(run.positions[started])
    done_rows = run.positions[complete]
    order = np.argsort(done_rows, kind="stable")
    found: list[ComplexEvent] = []
    if len(order):
        block = _block(m, c, run, complete[order], np.arange(len(order)))
        found = MatchTable([block], values, 0, len(order), src).complex_events()
        if blocks is not None:
            blocks.add_chain(m, block, values, found, src)

    def commit(token_ids: np.ndarray) -> None:
        def start_ids(rows: np.ndarray) -> np.ndarray:
            return token_ids[np.searchsorted(new_rows, rows)]

        _leave(m, c, run, src, values, start_ids)
        if timed is not None:
            _set_timers(m, c, run, timed, start_ids)

    return new_rows, done_rows[order], found, commit



def _block(m: Any, c: Chain, run: _ChainRun, done: np.ndarray, rank: np.ndarray
           ) -> ChainMatches:
    """The matches of chain ``m`` ending at its items ``done`` (in detection order), column-wise,
    ``rank`` their places in the batch's detection order."""
    n_ev = len(run.positions)
    items, rows, occ = run.paths(done, c.length)
    first = np.where(occ >= 0, occ, items[0])
    held = np.flatnonzero(occ >= 0)  # (the few matches of partial matches from before)
    old = {r: run.occupants.events[o - n_ev] for r, o in zip(held.tolist(), occ[held].tolist(),
                                                            strict=True)}
    params = m.pattern.auto.params
    # (bindings that are fields of the rows, not the key alone as the one parameter — or no
    # key, unkeyed —, which the block's key values give)
    where = (c.binding_fields() if c.own or (c.var is not None and params != (c.var,))
             else None)
    return ChainMatches(m.name, c.var, params, rows[-1].copy(), rank, rows, old,
                        run.vidx[first], c.bindings if c.own else None,
                        fields=None if where is None else where[1],
                        bound=None if where is None else where[0])



def _leave(m: Any, c: Chain, run: _ChainRun, src: Rows, values: list[Any],
           start_ids: Callable[[np.ndarray], np.ndarray]) -> None:
    """Make the partial matches ``run`` leaves waiting the rows of ``m`` (its tokens, all of
    them occupants of the run, are dropped); ``start_ids``: the token ids of the partial
    matches begun at the given batch rows."""
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
        items, rows, old = run.paths(moved, c.held(st))
        ev = src.lookup(rows[rows >= 0])
        new = old < 0
        ids = iter(start_ids(rows[0, new]).tolist())
        new_keys = iter([values[v] for v in run.vidx[items[0, new]].tolist()])
        # (the state after the stage's alternative the path's last event took; a tree's
        # stage is one state)
        several = len(c.waits[st]) > 1
        after = {t: e.target for t, e in c.stages[st - 1].items()} if several else {}
        state = c.waits[st][0]
        for o, path in zip((old - n_ev).tolist(), rows.T.tolist(), strict=True):
            if several:
                state = after[ev[path[-1]].type]
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
    if m.pattern.context_chain is not None or m.pattern.unrestricted_chain is not None:
        # (the rows its per-event step takes)
        m.pending = KeyedRows.of(m.pending, [s for ss in c.waits[1:] for s in ss], c.var,
                                 c.zone)



def _chain(m: Any) -> Chain:
    """The chain the kernel runs ``m`` as: under chronicle, immediate or strict (noise.py),
    or unrestricted (every.py)."""
    return m.pattern.chain or m.pattern.context_chain or m.pattern.unrestricted_chain



def _plan_one(m: Any, c: Chain, src: Rows, type_code: dict[str, int], values: list[Any],
              schemas: Any, filter_cols: dict[tuple[str, int], np.ndarray], last_ts: float
              ) -> tuple[_ChainRun, np.ndarray, np.ndarray, list[tuple[int, float]] | None]:
    """One chain over a batch, changing nothing but ``values`` (the batch's key values, which
    its chains share) and ``filter_cols``: its items and queues, the items that start a
    partial match, the items that complete one (in detection order) and, with a window, the
    (item, start) of the partial matches whose timers are set (None without a window). Raises
    :class:`Declined` when a filter fails on a row or a partial match is no row."""
    if m.pattern.unrestricted_chain is not None and (
            m.rowless or (m.tokens and m._keyed_rows() is None)):
        raise Declined("a partial match that is no row of its chain: event by event")
    occupants = _occupants(m, c)
    if m.pattern.unrestricted_chain is not None or m.pattern.context_chain is not None:
        plan = plan_every if m.pattern.unrestricted_chain is not None else plan_context
        positions, vidx, pred, complete, waiting, started, timed = plan(
            m.pattern, src, type_code, values, occupants, schemas, filter_cols)
        return (_ChainRun(positions, vidx, occupants, pred, waiting), started, complete,
                timed if c.zone is not None else None)
    k = len(c.stages)
    positions, bits, key, vidx, table = chain_rows(c, src, type_code, values, schemas,
                                                   filter_cols)
    occ_values = occupants.keys
    n_occ = len(occupants)
    occ_key = np.array([table.setdefault(v, len(table)) for v in occ_values], dtype=np.int64)
    occ_vidx = np.arange(len(values), len(values) + n_occ, dtype=np.int64)
    values.extend(occ_values)
    stage_of = c.stage_of()
    occ_stage = [stage_of[s] for s in occupants.states]
    live = bits != 0  # (a row no stage takes: a NaN key at a general step)
    if not live.all():
        positions, bits, key, vidx = positions[live], bits[live], key[live], vidx[live]
    fbits = abits = None
    forbidden = (forbid_rows(c, src, type_code, table, schemas, filter_cols)
                 if c.forbids else None)
    timed = None
    if c.queued and not c.cross:
        n_ev = len(positions)
        stage = np.concatenate([np.log2(bits).astype(np.int64) if n_ev else bits,
                                np.array(occ_stage, dtype=np.int64)])
        pos = np.concatenate([positions, np.arange(-n_occ, 0, dtype=np.int64)])
        items = np.arange(n_ev + n_occ, dtype=np.int64)
        pred, complete, waiting = run_chain(
            k, items, stage, np.concatenate([key, occ_key]), pos, n_ev + n_occ,
            None if forbidden is None else _clears(k, *forbidden))
        started = np.flatnonzero(stage[:n_ev] == 0)
    else:
        if forbidden is not None:  # (NOTs: the rows they forbid join the stepped ones)
            positions, bits, key, vidx, fbits, abits = _with_forbidden(
                positions, bits, key, vidx, *forbidden)
        else:  # (else in row order already: _with_forbidden)
            order = np.argsort(positions, kind="stable")
            positions, bits, key, vidx = (positions[order], bits[order], key[order],
                                          vidx[order])
        repeat = None
        if (c.window is None and fbits is None and not c.depths and not c.cross
                and all(len(alts) == 1 for alts in c.stages)
                and len(c.types) == 1 and (bits == (1 << k) - 1).all()):
            repeat = repeat_chain(k, key, [(st, kc, 0.0) for st, kc
                                           in zip(occ_stage, occ_key.tolist(), strict=True)])
        if repeat is not None:  # (T{k}, every row at every stage: numpy)
            pred, complete, waiting, started = repeat
        else:
            stage_sets = {b: [st for st in range(k) if b >> st & 1]
                          for b in distinct(bits if fbits is None else
                                            np.concatenate([bits, fbits, abits])).tolist()}
            z = c.zone
            occ_start = [evs[0].ts if z is not None else 0.0 for evs in occupants.events]
            stepped = None if fbits is not None or c.depths else _assigned(
                c, src, schemas, positions, bits, key, occupants, occ_stage, occ_key,
                occ_start, last_ts)
            cross = (None if not c.cross or stepped is not None
                     else _cross_tests(c, src, positions, occupants))
            with declined_on_failure(f"a filter reading variables failed on a row of {m.name}"
                                     ) if cross else nullcontext():
                pred, done, left, begun, timed = stepped or step_chain(
                    k, list(map(stage_sets.__getitem__, bits.tolist())), key.tolist(),
                    src.ts[positions].tolist(),
                    list(zip(occ_stage, occ_key.tolist(), occ_start, strict=True)),
                    c.window, last_ts,
                    None if fbits is None else list(map(stage_sets.__getitem__,
                                                        fbits.tolist())),
                    _targets(c, src, type_code, positions) if c.depths else None,
                    None if abits is None or not abits.any()
                    else list(map(stage_sets.__getitem__, abits.tolist())), cross)
            complete = np.array(done, dtype=np.int64)
            waiting = {st: np.array(its, dtype=np.int64) for st, its in left.items()}
            started = np.array(begun, dtype=np.int64)
            if z is None:
                timed = None
    return (_ChainRun(positions, np.concatenate([vidx, occ_vidx]), occupants, pred, waiting),
            started, complete, timed)



def _assigned(c: Chain, src: Rows, schemas: Any, positions: np.ndarray, bits: np.ndarray,
              key: np.ndarray, occupants: PendingRows, occ_stage: list[int],
              occ_key: np.ndarray, occ_start: list[Any], end: float
              ) -> tuple[np.ndarray, list[int], dict[int, list[int]], list[int],
                         list[tuple[int, Any]]] | None:
    """kernels.queues.step_chain's result for a linear chain without NOTs whose types are
    each at one stage (each row at one stage), decided column-wise by
    kernels.crossing.cross_chain: a chain whose filters read variables (Chain.cross, with
    their pair tests), or one in a window ``[Δ]`` (no tests: its filters read only their
    event and dropped rows already, chain_rows — the oldest partial match of the key takes
    the row, the window expiring and trapping as in the loop). None where that cannot be
    done exactly (the loop then)."""
    if len(c.types) != sum(len(alts) for alts in c.stages):
        return None  # (a type at several stages: a row may be at several)
    stage = np.log2(bits).astype(np.int64) if len(bits) else bits
    if not c.cross:
        tests: tuple[list[Any], np.ndarray | None] | None = ([None] * len(c.stages), None)
    else:
        tests = pair_tests(c, src, schemas, positions, stage,
                           [c.bindings(k, evs) for k, evs in zip(occupants.keys,
                                                                occupants.events,
                                                                strict=True)])
    if tests is None:
        return None
    return cross_chain(len(c.stages), stage, key, src.ts[positions],
                       list(zip(occ_stage, occ_key.tolist(), occ_start, strict=True)),
                       c.window, end, *tests)



def _cross_tests(c: Chain, src: Rows, positions: np.ndarray, occupants: PendingRows
                 ) -> Cross:
    """kernels.queues.step_chain's ``cross`` of a chain whose filters read variables
    (Chain.cross, Chain.columnar: one type per stage): per stage None where its filter reads
    only its event (decided column-wise, :func:`chain_rows`), else the filter as a test of
    stepped row ``i`` with the bindings given; a partial match's bindings after it takes row
    ``i`` at stage m — ``bind`` of the row's parameters, the token path's ``nb``, the key
    kept from its first event (a NaN key takes no row after the first stage: the bits) —;
    and the occupants' bindings, made from their events (Chain.bindings)."""
    rows = positions.tolist()
    ev = src.lookup(positions)
    poss = [{src.type_names.index(t): e.position for t, e in alts.items()
             if t in src.type_names} for alts in c.stages]
    codes = src.codes[positions].tolist()

    def test_of(flt: Any) -> Callable[[int, Any], bool]:
        def test(i: int, b: Any) -> bool:
            return bool(flt(ev[rows[i]], b))
        return test

    def grown(i: int, m: int, b: Any) -> Any:
        return bind(poss[m][codes[i]], ev[rows[i]].params, b or {})

    return ([None if e.position.filter is None or e.position.local
             else test_of(e.position.filter) for alts in c.stages for e in alts.values()],
            grown, [c.bindings(k, evs) for k, evs in zip(occupants.keys, occupants.events,
                                                         strict=True)])



def _targets(c: Chain, src: Rows, type_code: dict[str, int], positions: np.ndarray
             ) -> list[dict[int, int]]:
    """Per row of a tree (runtime.shapes.Chain.depths), per stage its type is at, the stage
    a partial match waits for after it takes the row (``len(c.stages)``: it completes) —
    kernels.queues.step_chain's ``to``."""
    by_code = {type_code[t]: {m: c.after(m, t) for m, alts in enumerate(c.stages) if t in alts}
               for t in c.types if t in type_code}
    none: dict[int, int] = {}
    return [by_code.get(code, none) for code in src.codes[positions].tolist()]



def _clears(k: int, fpos: np.ndarray, fbits: np.ndarray, fkey: np.ndarray, abits: np.ndarray
            ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The rows a chain's NOTs forbid (:func:`forbid_rows`) as the numpy queues' clears
    (kernels.queues.run_chain): per stage, their positions and key codes (-1: of any key)."""
    out = {}
    for m in range(1, k):
        mine, every = (fbits >> m & 1).astype(bool), (abits >> m & 1).astype(bool)
        if mine.any() or every.any():
            out[m] = (np.concatenate([fpos[mine], fpos[every]]),
                      np.concatenate([fkey[mine], np.full(int(every.sum()), -1, np.int64)]))
    return out



def _with_forbidden(positions: np.ndarray, bits: np.ndarray, key: np.ndarray,
                    vidx: np.ndarray, fpos: np.ndarray, fbits: np.ndarray, fkey: np.ndarray,
                    abits: np.ndarray) -> tuple[np.ndarray, ...]:
    """A chain's rows (:func:`chain_rows`: positions, stage bits, key codes, value indices)
    joined with the rows its NOTs forbid (:func:`forbid_rows`), in row order: per row its
    stage bits (0: it only forbids), key code, value index (-1 where only forbidden: such a
    row starts nothing), forbid bits (0: it forbids nothing) and bits of the stages it
    forbids for every key."""
    allpos = distinct(np.concatenate([positions, fpos]))
    n = len(allpos)
    at, fat = np.searchsorted(allpos, positions), np.searchsorted(allpos, fpos)
    out_bits = np.zeros(n, np.int64)
    out_bits[at] = bits
    out_key = np.zeros(n, np.int64)
    out_key[fat] = fkey
    out_key[at] = key
    out_vidx = np.full(n, -1, np.int64)
    out_vidx[at] = vidx
    out_fbits = np.zeros(n, np.int64)
    out_fbits[fat] = fbits
    out_abits = np.zeros(n, np.int64)
    out_abits[fat] = abits
    return allpos, out_bits, out_key, out_vidx, out_fbits, out_abits



def _occupants(m: Any, c: Chain) -> PendingRows:
    """The chain's partial matches as rows, oldest first: its tokens (from per-event steps or
    a restored state; the batch drops them) and then the rows the last batch left."""
    rows = m.pending
    toks = m.registered_tokens()
    if not toks:
        return rows if rows is not None else PendingRows([], [], c.zone, [], [], c.var)
    ths = [t.threads[0] for t in toks]
    if c.extra and any(  # (rows remake a match's bindings from its events, in binding order)
            list(th.bindings.items()) != list(c.bindings(th.bindings.get(c.var),
                                                         th.events).items()) for th in ths):
        # a restored partial match whose bindings come in another order (a state written
        # with sorted keys): the order shows in its match's params, so the token path keeps it
        raise Declined("a partial match's bindings in another order: event by event")
    out = PendingRows([t.id for t in toks], [th.events for th in ths], c.zone,
                      [th.state for th in ths], [th.bindings.get(c.var) for th in ths], c.var)
    if rows is not None:  # (younger than every token)
        for col in ("ids", "events", "states", "keys"):
            getattr(out, col).extend(getattr(rows, col))
    return out
