"""The Esper pair kernel: Esper's ``every a = A(f) -> b = B(g, a.k = b.k) [within Δ]`` over a
batch (:func:`process_esper_batch`, docs/esper.md "Performance"), and the longer chains ``every a
= A(f) -> b = B(g) -> c = C(h) …`` on one key. Events are not consumed, so each instance simply
takes, stage after stage, the first later event of its key passing the stage's filter, within Δ
of its ``A`` — one ``searchsorted`` per stage and batch; the instances still waiting for their
second stage after a batch stay rows until tokens are needed, those further on become tokens
(tests/esper/test_esper_kernel.py checks it against the token path).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from itertools import count, repeat
from operator import attrgetter, itemgetter
from types import SimpleNamespace
from typing import Any

import numpy as np

from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.binding import collect
from cepflow.runtime.collector import gc_paused
from cepflow.runtime.distinct import distinct_openings
from cepflow.runtime.kernels import branch, inner_every, orseq, until
from cepflow.runtime.kernels.filters import passing
from cepflow.runtime.kernels.frame import (
    Declined,
    count_rules,
    counters_before,
    fire_or_count,
    prepare,
    unprepare,
)
from cepflow.runtime.reach import whole
from cepflow.runtime.rows import (
    CONST,
    VALUE,
    EventRows,
    LazyBindings,
    MatchTable,
    ObjectMatches,
    Rows,
    StageMatches,
    TypeColumns,
    as_column,
    distinct,
    kind_of,
    lazy_kind,
    picked,
)
from cepflow.runtime.shapes import EsperPair
from cepflow.runtime.timers import fired_before
from cepflow.runtime.tokens import PairRows, PendingRows, Thread, Token
from cepflow.runtime.vector_expr import arithmetic_values, pairs_mask

_TS = attrgetter("ts")


class Uncodable(Exception):
    """The batch holds key values the kernel cannot code exactly (NaN): go event by event."""



def stable_order(code: np.ndarray) -> np.ndarray:
    """``np.argsort(code, kind="stable")``: by numpy's radix sort when the codes span fewer
    than 2**15 values (a fleet's ids, a few keys: linear, several times faster than the
    merge sort int64 gets)."""
    if len(code) > 256:
        lo, hi = int(code.min()), int(code.max())
        if hi - lo < 1 << 15:
            return np.argsort((code - lo).astype(np.int16), kind="stable")
    return np.argsort(code, kind="stable")



def sorted_search(keys: np.ndarray, major: np.ndarray, minor: np.ndarray, span: int,
                  side: str = "left") -> np.ndarray:
    """``np.searchsorted(keys, major * span + minor + 1, side)`` (``keys`` ascending, ``minor``
    in -1 .. span - 2), with the queries searched in ascending order: numpy's binary search
    starts where the previous key's ended, several times faster than in random order over
    a large batch. When ``minor`` ascends (the instances' rows), a stable sort by ``major``
    orders them (:func:`stable_order`)."""
    values = major * span + minor + 1
    if len(values) < 256:
        return np.searchsorted(keys, values, side=side)  # type: ignore[call-overload]
    if bool((minor[1:] >= minor[:-1]).all()):
        o = stable_order(major)
    else:
        o = np.argsort(values, kind="stable")
    out = np.empty(len(values), np.int64)
    out[o] = np.searchsorted(keys, values[o], side=side)  # type: ignore[call-overload]
    return out



def key_codes(ka: np.ndarray, kb: np.ndarray, old: list[Any], span: int
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
    values = [*old, *ka.tolist(), *kb.tolist()]
    # (NaN unifies with nothing, not even itself; only values of other types can be one)
    if not set(map(type, values)) <= _NEVER_NAN and any(v != v for v in values):
        raise Uncodable
    # (numbered in order of first appearance, by dict equality: Python's == for keys)
    table = dict(zip(dict.fromkeys(values), count()))
    if len(table) * span >= 1 << 62:
        raise Uncodable
    codes = np.fromiter(map(table.__getitem__, values), dtype=np.int64, count=len(values))
    return codes[:len(old) + len(ka)], codes[len(old) + len(ka):]


#: key types no value of which is unequal to itself
_NEVER_NAN = frozenset([str, int, bool, type(None)])


def column_key_codes(cols: TypeColumns, stages: list[tuple[str, int, np.ndarray]],
                     held: list[Any], span: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`key_codes` for an event list's batch whose keys are objects (texts): per stage
    (type, key parameter, its rows' places among the type's rows), each column the stages
    read coded once, in one dict pass over the events' own values — equal codes iff equal as
    dict keys (Python's ``==``), as key_codes numbers them, the codes sparse but below the
    number of values coded —, then the stages' rows picked from it; ``held``, the keys of the
    instances from before the batch (old tokens', then pending rows'), coded first. Returns
    the instances' codes (``held``, then the first stage's rows) and the later stages' rows'
    codes; Uncodable for a NaN key or codes ``span`` times too large for int64."""
    try:
        return _column_key_codes(cols, stages, held, span)
    except TypeError:  # (an unhashable key: event by event)
        raise Uncodable from None


def _column_key_codes(cols: TypeColumns, stages: list[tuple[str, int, np.ndarray]],
                      held: list[Any], span: int) -> tuple[np.ndarray, np.ndarray]:
    table: dict[Any, int] = {}
    number = count()
    held_codes = np.fromiter(map(table.setdefault, held, number), np.int64, count=len(held))
    coded: dict[tuple[str, int], np.ndarray] = {}

    def code(t: str, k: int) -> np.ndarray:
        c = coded.get((t, k))
        if c is None:
            vals = cols.objects(t, k).tolist()
            c = coded[t, k] = np.fromiter(map(table.setdefault, vals, number), np.int64,
                                          count=len(vals))
        return c

    (t0, k0, loc0), *later = stages
    i_code = np.concatenate([held_codes, code(t0, k0)[loc0]])
    b_code = np.concatenate([code(t, k)[loc] for t, k, loc in later])
    # (NaN unifies with nothing, not even itself: a NaN the table holds declines)
    if not set(map(type, table)) <= _NEVER_NAN and any(v != v for v in table):
        raise Uncodable
    if next(number) * span >= 1 << 62:
        raise Uncodable
    return i_code, b_code



def _small_int(v: Any, top: int) -> bool:
    """Is ``v`` a Python number equal to an int of magnitude below ``top``?"""
    t = type(v)
    return (t is int or t is bool or (t is float and v.is_integer())) and abs(v) < top



def process_esper_batch(engine: Any, matchers: list[Any], events: Sequence[Event]
                        ) -> list[ComplexEvent] | None:
    """Feed ``events`` (time-ordered) to an engine all of whose patterns (``matchers``) have
    the Esper pair shape (their compiled pattern's ``pair``: a pair or a longer chain).

    Per pattern: the instances (those from before the batch, then one per ``A`` row passing
    ``f``) take, stage after stage, the first later row of their key passing the stage's
    filter, by one ``searchsorted`` over that stage's rows sorted by (key, row), while within
    Δ. Token and match ids, the complex events (parts, bindings, select list), the instances
    left open (with their timers) and the statistics are those of feeding the events one by
    one (tests/esper/test_esper_kernel.py). Returns None, having changed nothing, when a key
    value cannot be coded exactly (the caller then goes event by event).
    """
    with gc_paused():
        # (in a function of its own: the batch's big temporaries are freed before the
        # collector runs again, else its first pass walks them)
        table = _esper_batch(engine, matchers, EventRows(events), columns=False)
        if table is None:
            return None
        out = table.complex_events()
        if engine.host.rules:
            fire_or_count(engine.host, table, out)
        return out



def process_esper_columns(engine: Any, matchers: list[Any], rows: Rows) -> MatchTable | None:
    """:func:`process_esper_batch` over a column batch (such as an Arrow batch) for an engine
    none of whose rules has a registered action, and its matches column-wise: the matches of
    instances begun in the batch whose select list names only their events' fields are a
    :class:`~cepflow.runtime.rows.StageMatches` block (rows, no objects), the others complex
    events; Python events are made only for the rows those complex events and the partial
    matches left hold; rules are counted (kernels.frame)."""
    with gc_paused():
        table = _esper_batch(engine, matchers, rows, columns=True)
        if table is not None:
            count_rules(engine.host, table, rows)
        return table



def _esper_batch(engine: Any, matchers: list[Any], src: Rows, columns: bool
                 ) -> MatchTable | None:
    """The complex events of the batch (``columns``: those :func:`_select_fields` allows as
    :class:`StageMatches` blocks, else all as objects); None when a key cannot be coded
    exactly (nothing changed)."""
    pairs: list[EsperPair] = [m.pattern.pair for m in matchers]
    n = src.n
    before = counters_before(engine)
    prepare(engine, src)
    if not n:
        return MatchTable([], [], 0, 0, src)
    cols = TypeColumns(src, engine.program.schemas)
    try:
        plans = [pair_rows(m, pr, cols) for m, pr in zip(matchers, pairs, strict=True)]
    except Declined:
        plans = [None]
    if any(p is None for p in plans):
        unprepare(engine, before, src)
        return None
    arity = engine.host.arity
    picks = [_select_fields(m, pr) for m, pr in zip(matchers, pairs, strict=True)]
    # per pattern, the plan its matches are made of: an inner every's, one instance per
    # match (kernels.inner_every.match_plan)
    found = [p if p.get("forked") is None else p["forked"] for p in plans]
    # per pattern, the matches made as rows: those of instances begun in the batch
    for p, fields in zip(found, picks, strict=True):
        p["as_rows"] = (p["match"] & (np.arange(len(p["match"])) >= p["n_old"])
                        if columns and fields is not None else np.zeros_like(p["match"]))
    # the events of the rows the other matches and the instances left open hold (an
    # EventRows source has them all; a column source makes only these)
    if isinstance(src, EventRows):
        events: Any = src.events
    else:
        used = distinct(np.concatenate(
            [p["taken"][:, p["match"] & ~p["as_rows"]].ravel() for p in found]
            + [p["taken"][:, p["alive"]].ravel() for p in plans]
            # (an until's b rows: those its matches made as objects and its open instances
            # take, kernels.until)
            + [p["more_rows"](p["match"] & ~p["as_rows"]) for p in plans if "more_rows" in p]))
        events = cols.events(used[used >= 0])
    last_ts = float(src.ts[-1])
    n_pairs = len(pairs)
    host = engine.host
    forks = [p["end_row"] if q.get("forked") is not None else None
             for p, q in zip(found, plans, strict=True)]
    if any(f is not None for f in forks):  # (each fork takes a token id: kernels.inner_every)
        starts = [p["new_rows"] for p in plans]
        first_token = host.counters.reserve_tokens(
            sum(map(len, starts)) + sum(len(f) for f in forks if f is not None))
        token_ids = inner_every.token_ids(first_token, n_pairs, starts,
                                   [f if f is not None else f0[:0]
                                    for f, f0 in zip(forks, starts, strict=True)])
    else:
        start_keys = [p["new_rows"] * n_pairs + slot for slot, p in enumerate(plans)]
        all_starts = np.sort(np.concatenate(start_keys))
        first_token = host.counters.reserve_tokens(len(all_starts))
        token_ids = [first_token + np.arange(len(all_starts)) if n_pairs == 1 else
                     first_token + np.searchsorted(all_starts, k) for k in start_keys]
    # detections: by completing row, then pattern, then instance age (token id order)
    m_row, m_slot, m_age, m_inst = [], [], [], []
    for slot, p in enumerate(found):
        inst = np.flatnonzero(p["match"])
        m_row.append(p["end_row"][inst])
        m_slot.append(np.full(len(inst), slot, np.int64))
        m_age.append(p["age"][inst])
        m_inst.append(inst)
    mr, ms, ma, mi = (np.concatenate(m_row), np.concatenate(m_slot), np.concatenate(m_age),
                      np.concatenate(m_inst))
    order = np.lexsort((ma, ms, mr))
    mr, ms, mi = mr[order], ms[order], mi[order]
    total = len(order)
    first_id = host.counters.reserve_matches(total)
    host.stats.complex_events += total
    by_pattern = host.stats.by_pattern
    blocks: list[Any] = []
    for slot, (m, pr, p, fields) in enumerate(zip(matchers, pairs, plans, picks, strict=True)):
        rank = np.flatnonzero(ms == slot)
        if len(rank):
            blocks += _emit(m, pr, found[slot], mi[rank], rank, first_id, events, fields,
                            arity)
            by_pattern[m.name] = by_pattern.get(m.name, 0) + len(rank)
            m.done = True
        open_ids, open_events = leave_open(m, pr, p, token_ids[slot], events)
        m.pending = PendingRows(open_ids, open_events, pr.first_zone) if open_ids else None
    reschedule(host, matchers, last_ts)
    return MatchTable(blocks, [], first_id, total, src)



def split_pair(m: Any) -> EsperPair | None:
    """The pair shape of matcher ``m`` the program split plans (kernels.split), or None: none,
    or alternatives before more stages (EsperPair.paths: not proved with the split's replay
    and its token ids yet). An inner every's (EsperPair.fork) is planned there:
    kernels.split.forks_and_starts gives its forks their token ids at their rows; a repeated
    tag's chain (EsperPair.collects) too: its instances take token ids at their starts only,
    as any chain's, and its bindings are made by :func:`_held`."""
    pr = m.pattern.pair
    return None if pr is None or pr.paths or pr.until is not None else pr


def planned_pair(m: Any) -> EsperPair | None:
    """The pair shape of matcher ``m`` the plans over derived events take (kernels.cascade):
    :func:`split_pair`'s but an inner every's, whose forks would take their token ids at
    matches of the cascade, which the replay does not plan."""
    pr = split_pair(m)
    return None if pr is None or pr.fork else pr


def reschedule(host: Any, matchers: list[Any], last_ts: float) -> None:
    """The timers of pair patterns after a batch that ended at ``last_ts``: the per-event path
    would have run those before it (they only expire instances, which the batch did); each
    pattern keeps one engine timer, for its first deadline (Matcher.schedule_zones,
    Matcher.materialize)."""
    slots = {m.slot for m in matchers}
    host.timers.keep(lambda h: h[3] not in slots or (not fired_before(h, last_ts)
                                                     and h[4] != -1))
    for m in matchers:
        pr = m.pattern.pair
        # (Esper: fired at =; but a window of 0 that opened at the batch's last instant —
        # at a later stage, by a token the batch left — fires after it: kept, as the token
        # path's, whose timer would fire before the next event)
        m.deadlines = deque(d for d in m.deadlines if d[0] > last_ts or d[0] == d[3] == last_ts)
        sk = m.skipped
        while sk and sk[0] <= last_ts:  # (passed: the clock is at the batch's last row)
            sk.popleft()
        if pr.zone is None:
            continue
        # (deadline, start) of the first queued instance and of the first pending row; the
        # timer carries the start, so that Matcher._expire_queued knows when it is due
        firsts = [(m.deadlines[0][0], m.deadlines[0][3])] if m.deadlines else []
        if m.pending is not None and pr.first_zone is not None:
            start = m.pending.events[0].ts
            firsts.append((start + pr.window, start))
        if firsts:
            deadline, start = min(firsts)
            host.schedule(deadline, m, -1, pr.zone, start)






def pair_rows(m: Any, pr: EsperPair, cols: TypeColumns,
              end: tuple[float, int] | None = None) -> dict | None:
    """Instances and the rows they take over a batch, stage after stage (numpy): per
    instance its stage at the start of the batch (``stage0``: how many events it holds) and at
    its end (``stage``), the row it took at each stage (``taken``), whether it completed
    (``match``) and at which row (``end_row``); with a last stage of alternatives
    (``pr.alts``) also which one each instance completed by (``alt``: its place in
    ``pr.alts``, -1 for none). ``end``: the batch's last instant and the first of the rows
    the batch's last event brings (a derived stream's rows: kernels.cascade), when the rows
    are not the batch itself (else its last row's)."""
    if (pr.operands or pr.alts) and end is not None and pr.window == 0:
        # Declined: alternatives, an or of sequences (an and alike) in within(0) over a
        # derived stream. (Alternatives of single events: a later row of the cascade that fits
        # one of them traps the instance at its window check, Esper's or having quit the
        # others — CompiledPattern.alternatives — which the kernel's trap does not model.) A
        # later row of the cascade that opened an instance fails the product's window check
        # (no time passes in a cascade), which traps the instance only when every edge out
        # of its state fires on that row — else the token path keeps it, its operands side
        # by side (Matcher._others_wait) — a rule over the operands' next atoms together
        # that the kernel does not model: the pattern goes per event for this batch
        return None
    if pr.until is not None:  # (an until after a stage: kernels.until; not over a derived
        # stream — split_pair declines it)
        return until.until_rows(UNTIL_KIT, m, pr, cols)
    src = cols.src
    # (the alternatives' edges after the stages before them — an or of sequences: every
    # operand's atoms, kernels.orseq — coded and searched alike)
    nb = len(pr.stages)
    ops = orseq.operand_edges(pr) if pr.operands else [v.stages[-1:] for v in pr.alts]
    alt_of = [i for i, op in enumerate(ops) for _ in op]  # (the edges' alternatives)
    stages = [*pr.stages, *(e for op in ops for e in op)]
    keys_of = [*pr.keys, *(k for v, op in zip(pr.alts, ops, strict=True)
                           for k in (v.keys[len(v.keys) - len(op):] if v.keys else [-1]))]
    # (alternatives before more stages: the other alternatives' edges after the chain
    # through the first, kernels.branch)
    stages += [v.stages[pr.branch] for v in pr.paths[1:]]
    keys_of += [v.keys[pr.branch] for v in pr.paths[1:]]
    # (a guard reading the earlier stages' fields is checked per candidate below)
    locs = [passing(e, cols) if reads_own_event(e) else np.arange(len(cols.rows(e.position.type)))
            for e in stages]
    stage_rows = [cols.rows(e.position.type)[loc] for e, loc in zip(stages, locs, strict=True)]
    seen = None
    if m.pattern.auto.distinct:  # (every-distinct: the rows whose keys were not seen)
        opened = distinct_rows(m, stages[0], cols, stage_rows[0])
        if opened is None:
            return None
        keep, seen = opened
        locs[0], stage_rows[0] = locs[0][keep], stage_rows[0][keep]
    new_rows = stage_rows[0]
    alt = lead = None
    if pr.paths and not pr.branch:  # every (x = X(f) or y = Y(g) …) -> d: a row passing an
        # alternative's filter begins an instance (kernels.branch)
        fits = branch.fitting(pr, stage_rows, src.n)
        new_rows = np.flatnonzero(fits.any(axis=0))
        lead = fits[:, new_rows]
    if not pr.stages:  # every (a = A(f) or b = B(g) …): a row's first alternative it passes
        by = np.full(src.n, -1, np.int64)
        for i, r in enumerate(stage_rows):  # (in the order that wins a tie)
            by[r[by[r] < 0]] = i
        new_rows = np.flatnonzero(by >= 0)
        alt = by[new_rows]
    if len(stages) == 1 or alt is not None:  # every a = A(f): each row passing f is an
        k = len(new_rows)                     # instance that completes
        return {"old": [], "pend_ids": [], "pend_events": [], "new_rows": new_rows,
                "n_old": 0, "stage0": np.ones(k, np.int64), "stage": np.ones(k, np.int64),
                "taken": new_rows[None, :].copy(), "end_row": new_rows.copy(),
                "match": np.ones(k, bool), "alive": np.zeros(k, bool),
                "age": np.arange(k, dtype=np.int64), "cols": cols, "alt": alt, "seen": seen}
    if m.pending.__class__ is PairRows:  # (the per-event rows, their deadlines queued)
        m.materialize()
    old = m.registered_tokens()  # instances from before the batch: tokens, then pending rows
    pend_ids, pend_events = (m.pending.ids, m.pending.events) if m.pending else ([], [])
    n = src.n
    span = n + 2
    try:
        if pr.key_var is None:  # (a pair without a key: every instance may take every B)
            later = locs[1:]
            i_code = np.zeros(len(old) + len(pend_ids) + len(new_rows), np.int64)
            b_code = np.zeros(sum(map(len, later)), np.int64)
        else:
            i_code, b_code = keyed_codes(pr, cols, stages, keys_of, locs, old, pend_events,
                                         span)
            later = locs[1:]  # (their lengths)
    except Uncodable:
        return None
    no_key = np.zeros_like(i_code)
    bounds = np.cumsum([0, *(len(c) for c in later)])
    n_real = len(old)
    n_old = n_real + len(pend_ids)
    n_inst = n_old + len(new_rows)
    z, zat, zto = pr.zone, pr.zone_at, _zone_to(pr)
    where = {s: j + 1 for j, s in enumerate(pr.states)}  # a waiting state -> events held
    where.update((s, nb) for s in pr.product.values())  # (past the stages before the or)
    for v in pr.paths[1:]:  # (each alternative's own state)
        where[v.states[pr.branch]] = pr.branch + 1
    stage0 = np.concatenate([np.array([where[t.threads[0].state] for t in old], np.int64),
                             np.ones(n_inst - n_real, np.int64)])
    stage = stage0.copy()
    # each instance's window start: its A's time, or (a guard on the later stages: zone_at)
    # the time of its event at stage zone_at — inf until it takes one, so that every row is
    # within its window and its deadline is inf (set as the stage is taken, below)
    i_ts = np.concatenate([np.array([_zone_start(t, z) for t in old] + [
        e.ts if zat == 0 else np.inf for e in pend_events], dtype=np.float64),
        src.ts[new_rows].astype(np.float64) if zat == 0 else np.full(len(new_rows), np.inf)])
    n_stages = len(pr.stages) + 1 if pr.alts else len(pr.stages)  # (the events a match holds)
    taken = np.full((n_stages, n_inst), -1, np.int64)
    taken[0, n_old:] = new_rows
    last = taken[0].copy()  # the row of each instance's last event (-1: before the batch)
    last_ts, last_row = (src.ts[-1], n - 1) if end is None else end
    # within(0) over a derived stream: a later row of the last input row's cascade that an
    # instance opened there would take traps it — no time passes in a cascade, so its timer
    # has not fired, and the token path's window check ends it (Matcher._zones); over input
    # rows the timer always fires first (an event at the deadline: Esper's timer first)
    trapped = np.zeros(n_inst, bool) if end is not None and pr.window == 0 else None
    middle = len(pr.stages) - (0 if pr.alts else 1)  # (the edges before the last stage's)

    def take(j: int, sel: np.ndarray, after: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
        """The instances ``sel`` that take a row of edge ``j`` (the first later one of their
        key passing its filter, within Δ, after their last row — or ``after``, per
        instance) and the rows they take."""
        rows_j = stage_rows[j]
        if not len(sel) or not len(rows_j):
            return sel[:0], sel[:0]
        code_j = b_code[bounds[j - 1]:bounds[j]]
        i_code_j = i_code if keys_of[j] >= 0 or pr.key_var is None else no_key
        comb = code_j * span + rows_j + 1
        order = stable_order(code_j)  # (by key, then row: rows_j ascend)
        comb_sorted = comb[order]
        q = sorted_search(comb_sorted, i_code_j[sel], (last if after is None else after)[sel],
                          span, "right")
        has = q < len(comb_sorted)
        cand = order[np.where(has, q, 0)]
        has &= code_j[cand] == i_code_j[sel]
        row = np.where(has, rows_j[cand], 0)
        # Esper's timer:within fires before an event at its deadline: an event exactly Δ
        # after the A is too late (docs/esper.md, "One instant"); a stage after the window
        # (zone_to) has none
        ok = has & (src.ts[row] - i_ts[sel] < pr.window) if j <= zto else has
        if trapped is not None and zat < j <= zto and j < middle:  # (Δ = 0: ok is empty
            # for the stages in the window; a middle stage's candidate traps — its filter
            # reads only its own event: a chain's do. At a last stage the per-event pair step
            # skips an instance past its window, which its timer then ends: no trap)
            trapped[sel[has]] = True
        if not reads_own_event(stages[j]):
            # (an alternative's guard is its own chain's last stage: pr.alts)
            if j < nb:
                view, jv, vlocs = pr, j, locs
            else:
                jv = nb
                view, vlocs = pr.alts[alt_of[j - jv]], [*locs[:jv], locs[j]]
            reach = _reach_cut(view, jv, cols, vlocs, order, code_j, old, pend_events)
            if reach is not None:  # (instances no row of the batch can reach wait on)
                near = reach[0][np.where(has, q, 0)] <= reach[1][sel]
                ok &= near
            # (the A events the guard's bindings read — only when the closure decides, not
            # the columns: made in one go by a column source)
            firsts = sel[ok]
            unmade = [not isinstance(src, EventRows)]

            def bound(q: int) -> dict[str, Any]:
                if unmade[0]:
                    unmade[0] = False
                    cols.events(new_rows[firsts[firsts >= n_old] - n_old])
                return _bindings(view, old, pend_events, new_rows, q, cols)

            guard = _GuardColumns(view, jv, cols, vlocs, order, old, pend_events)
            moved, row = _first_guarded(view, jv, firsts, q[ok], order, code_j, i_code_j,
                                        rows_j, i_ts, cols, bound, reach, guard.truth)
        else:
            moved, row = sel[ok], row[ok]
        return moved, row

    forked = None
    if pr.fork:  # an inner every (kernels.inner_every): every later row of the key, within Δ
        order = stable_order(b_code)  # (by key, then row: the stage's rows ascend)
        comb = (b_code * span + stage_rows[1] + 1)[order]
        cut = (np.full(n_inst, n, np.int64) if z is None
               else inner_every.window_cut(src.ts, i_ts, pr.window))
        inst, pos = inner_every.ranges(sorted_search(comb, i_code, last, span, "right"),
                                       sorted_search(comb, i_code, cut - 1, span, "right"))
        forked = inner_every.match_plan(
            {"old": old, "pend_ids": pend_ids, "pend_events": pend_events, "stage0": stage0,
             "taken": taken, "cols": cols, "age": _ages(old, pend_ids, n_old, n_inst),
             "zstart": i_ts}, inst, stage_rows[1][order[pos]])
    if pr.paths:  # (alternatives before more stages: which one each instance took)
        alt = branch.alternative_of(pr, old, n_inst)
        if lead is not None:  # (from the start: the first its row fits, in pr.paths' order)
            alt[n_old:] = lead.argmax(axis=0)
    for j in range(1, 1 if pr.fork else len(pr.stages)):
        if j == pr.branch and pr.paths:
            moved, row = branch.first_of(pr, take, np.flatnonzero(stage == j), alt, n)
        else:
            moved, row = take(j, np.flatnonzero(stage == j))
        stage[moved] = j + 1
        taken[j, moved] = row
        last[moved] = row
        if j == zat and z is not None:  # (the guard's window opens at this stage's event)
            i_ts[moved] = src.ts[row]
    op = None
    if pr.operands:  # an or of sequences, an and: each operand a chain of its own
        sel = np.flatnonzero(stage == nb)  # (kernels.orseq)
        counts0 = np.zeros((len(pr.alts), n_inst), np.int64)
        for q, t in enumerate(old):
            counts0[:, q] = orseq.progress(pr, t.threads[0])
        first, alt, op_rows, counts = orseq.walk(
            pr, take, sel, counts0, last, n,
            None if pr.conj or not old else orseq.prior_rows(pr, old, n_inst))
        won = np.flatnonzero(alt >= 0)
        stage[won] = nb + 1
        last[won] = first[won]
        op = {"counts0": counts0, "counts": counts, "op_rows": op_rows}
    elif pr.alts:  # each instance at the alternatives completes by the first one's row
        j0 = len(pr.stages)
        sel = np.flatnonzero(stage == j0)
        first = np.full(n_inst, n, np.int64)
        alt = np.full(n_inst, -1, np.int64)
        for i in range(len(pr.alts)):  # (in the order that wins a tie: a row strictly less)
            moved, row = take(j0 + i, sel)
            better = row < first[moved]
            moved, row = moved[better], row[better]
            first[moved] = row
            alt[moved] = i
        won = np.flatnonzero(alt >= 0)
        stage[won] = j0 + 1
        taken[j0, won] = first[won]
        last[won] = first[won]
    match = stage == n_stages
    # an instance whose deadline is the batch's last instant expired before its last event
    # (Esper's timer fires first) unless that very event opened its window (Δ = 0: its
    # timer is still to come)
    # (an instance waiting for a stage after the window has no deadline)
    deadline = np.where(stage <= zto, i_ts + pr.window, np.inf)
    alive = ~match & ((deadline > last_ts) | ((deadline == last_ts) & (taken[zat] >= last_row)))
    if trapped is not None:
        alive &= ~trapped
    age = _ages(old, pend_ids, n_old, n_inst)
    if op is not None:  # (the stages before, then every operand's atoms: _taken_by)
        taken = np.concatenate([taken[:nb], *op["op_rows"]])
    return {**(op or {}), "old": old, "pend_ids": pend_ids, "pend_events": pend_events,
            "new_rows": new_rows, "n_old": n_old,
            "stage0": stage0, "stage": stage, "taken": taken,
            "end_row": last, "match": match, "alive": alive, "age": age, "cols": cols,
            "alt": alt, "zstart": i_ts, "seen": seen, "forked": forked,
            "branch_rows": None if not pr.branch else branch.rows_after(
                pr, m.pattern.auto, stages, stage_rows, b_code, bounds, i_code, span),
            "lead": lead}


def _object_keys(cols: TypeColumns, t: str, k: int) -> bool:
    """Whether parameter ``k`` of type ``t``'s rows of an event list's batch is an object
    column (TypeColumns.column's dtype ``O``): known from the first row's value when it is a
    text or null (rows.as_column makes objects of those whatever follows) — a key of texts
    is then coded from the values themselves (:func:`column_key_codes`), not also read into
    a numpy column first (a pass over the events' tuples and an object array: a patient's
    id, 200,000 rows, a tenth of the pair's planning); else the column read."""
    rows = cols.rows(t)
    if len(rows):
        first = cols.src.events[int(rows[0])].params[k]
        if first is None or type(first) is str:
            return True
    return cols.column(t, k).dtype.kind == "O"


def keyed_codes(pr: EsperPair, cols: TypeColumns, stages: Sequence[Any], keys_of: Sequence[int],
                locs: Sequence[np.ndarray], old: Sequence[Token], pend_events: Sequence[Event],
                span: int) -> tuple[np.ndarray, np.ndarray]:
    """The key codes of a keyed pattern's instances (the tokens ``old``, the pending rows'
    ``pend_events``, then the rows ``locs[0]`` of the first stage, ``stages[0]``) and of the
    rows ``locs[j]`` of each later edge ``stages[j]`` (one array, edge after edge; the key at
    param ``keys_of[j]``): equal codes, equal keys as the token path unifies them. An edge on
    no key (``keys_of[j] < 0``: an alternative beside keyed ones) is coded 0, as are the
    instances for it: every instance may take every one of its rows. Raises
    :class:`Uncodable` when a key cannot be coded exactly."""
    src = cols.src
    ka = keys_of[0]
    on_key = [j for j, k in enumerate(keys_of) if k >= 0]
    k_st, k_of, k_locs = ([stages[j] for j in on_key], [keys_of[j] for j in on_key],
                          [locs[j] for j in on_key])
    held = [t.threads[0].bindings.get(pr.key_var) for t in old]
    if isinstance(src, EventRows) and any(_object_keys(cols, e.position.type, k)
                                          for e, k in zip(k_st, k_of, strict=True)):
        i_code, b_code = column_key_codes(
            cols, [(e.position.type, k, loc)
                   for e, k, loc in zip(k_st, k_of, k_locs, strict=True)],
            held + [e.params[ka] for e in pend_events], span)
    else:
        full = [cols.column(e.position.type, k) for e, k in zip(k_st, k_of, strict=True)]
        pend_keys = as_column([e.params[ka] for e in pend_events])
        a_keys = full[0][locs[0]]
        if (len(pend_keys) and len(a_keys)
                and pend_keys.dtype.kind != a_keys.dtype.kind):
            pend_keys, a_keys = pend_keys.astype(object), a_keys.astype(object)
        keyed = [c[loc] for c, loc in zip(full[1:], k_locs[1:], strict=True)]
        if len({c.dtype.kind for c in keyed}) > 1:
            keyed = [c.astype(object) for c in keyed]
        i_code, b_code = key_codes(
            np.concatenate([pend_keys, a_keys]) if len(pend_keys) else a_keys,
            np.concatenate(keyed) if len(keyed) > 1 else keyed[0], held, span)
    if len(on_key) < len(stages):
        parts = iter(np.split(b_code, np.cumsum([len(x) for x in k_locs[1:]])[:-1]))
        b_code = np.concatenate([next(parts) if keys_of[j] >= 0
                                 else np.zeros(len(locs[j]), np.int64)
                                 for j in range(1, len(stages))])
    return i_code, b_code


def _ages(old: list[Token], pend_ids: list[int], n_old: int, n_inst: int) -> np.ndarray:
    """Each instance's place in age (token id) order: the tokens and pending rows from
    before the batch by id, then those it begins, in row order."""
    ids = np.array([t.id for t in old] + list(pend_ids), np.int64)
    return np.concatenate([np.argsort(np.argsort(ids, kind="stable"), kind="stable"),
                           np.arange(n_old, n_inst, dtype=np.int64)])


def distinct_rows(m: Any, first: Any, cols: TypeColumns, rows: np.ndarray
                  ) -> tuple[np.ndarray, dict[tuple, Any]] | None:
    """Every-distinct (spawn form, runtime.shapes.esper_distinct_pair_of): of the ``rows``
    passing the first stage's filter (its edge ``first``), which open an instance — those
    whose distinct key, computed from the bindings the row gives the first stage (the
    values themselves, as the events hold them), was not seen — and the seen keys after
    them (runtime.distinct.distinct_openings; :func:`leave_open` keeps them). None (event by
    event) for a NaN in a key of a column source: its NaN objects are not the events'."""
    auto = m.pattern.auto
    src = cols.src
    t = first.position.type
    names = [v for _, v in first.position.binds]
    values = [cols.pick(t, i, rows) for i, _ in first.position.binds]
    fs = auto.distinct

    def key(q: int) -> tuple:
        b = {v: col[q] for v, col in zip(names, values, strict=True)}
        return tuple(f(None, b) for f in fs)

    if not isinstance(src, EventRows) and any(
            isinstance(v, float) and v != v for col in values for v in col):
        return None
    times = [src.time_at(r) for r in rows.tolist()]
    return distinct_openings(m.seen, key, times, auto.distinct_expiry)


def _zone_to(pr: EsperPair) -> int:
    """The last stage (edge index) inside the pattern's window — ``pr.zone_to``; else every
    stage, the alternatives too (an or of sequences: every operand's atoms; alternatives
    before more stages: the other alternatives' edges after the chain, kernels.branch)."""
    if pr.zone_to is not None:
        return pr.zone_to
    nb = len(pr.stages)
    if pr.paths:
        return nb + len(pr.paths) - 1
    return nb + (sum(len(v.stages) - nb for v in pr.alts) if pr.operands else len(pr.alts))


def _zone_start(tok: Token, z: int | None) -> float:
    """When the window of a token from before the batch opened (inf: not yet, a guard on
    the later stages; its creation without a window, which then never closes)."""
    if z is None:
        return tok.created
    zs = tok.threads[0].zstart
    return zs.get(z, np.inf) if zs else np.inf



def _reach_cut(pr: EsperPair, j: int, cols: TypeColumns, locs: list[np.ndarray],
               order: np.ndarray, code_j: np.ndarray, old: list[Any], pend: list[Event]
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """For a pair whose guard has a reach (runtime.reach: ``x - a.y <= k``): per sorted
    place of stage ``j``'s rows, the lowest ``x`` of its key's rows from there on, and per
    instance the highest ``x`` that can reach it (``y + k``) — an instance whose next
    candidate's lowest is higher can take no row of the batch (the conjunct is false on every
    one, and nothing before it in the guard can fail), so it waits. None when the batch's
    ``x`` or the instances' ``y`` are not all whole numbers in a safe range (no cut)."""
    reach = pr.reach
    if reach is None or j != 1:
        return None
    x = cols.column(pr.stages[1].position.type, reach.param)[locs[1]]
    pa = next((i for i, v in pr.new[0] if v == reach.var), None)
    if x.dtype.kind != "i" or pa is None or not len(x):
        return None
    ys = [t.threads[0].bindings.get(reach.var) for t in old] + [e.params[pa] for e in pend]
    if not all(whole(y) for y in ys):
        return None
    new = cols.column(pr.stages[0].position.type, pa)[locs[0]]
    if len(new) and new.dtype.kind not in "ib":
        return None
    y = np.concatenate([np.array(ys, np.int64) if ys else np.zeros(0, np.int64),
                        new.astype(np.int64)])
    safe = 2 ** 61
    if (abs(reach.limit) >= safe or (len(y) and (y.min() <= -safe or y.max() >= safe))
            or x.min() <= -safe or x.max() >= safe):
        return None
    xs = x[order]
    codes = code_j[order]
    # the lowest x from each sorted place to the end of its key's rows: a running minimum
    # from the end, each key's rows lifted above the keys after them (so they never count)
    seg = np.concatenate([[0], np.cumsum(codes[1:] != codes[:-1])])
    lift = int(xs.max()) - int(xs.min()) + 1
    if lift * (int(seg[-1]) + 1) < safe:
        lowest = np.minimum.accumulate((xs + seg * lift)[::-1])[::-1] - seg * lift
    else:
        lowest = xs.copy()
        bounds = np.flatnonzero(np.diff(seg)) + 1
        for a, b in zip([0, *bounds.tolist()], [*bounds.tolist(), len(xs)], strict=True):
            lowest[a:b] = np.minimum.accumulate(xs[a:b][::-1])[::-1]
    return lowest, y + reach.limit



def reads_own_event(edge: Any) -> bool:
    """Whether the stage's filter reads only its own event (else it is a guard on the earlier
    stages' fields too, checked per candidate: _first_guarded)."""
    return edge.position.filter is None or edge.position.local



def _bindings(pr: EsperPair, old: list[Any], pend: list[Event], new_rows: np.ndarray, q: int,
              cols: TypeColumns) -> dict[str, Any]:
    """What instance ``q`` has bound before its second stage (old tokens, then pending rows,
    then the batch's new instances)."""
    if q < len(old):
        return old[q].threads[0].bindings
    q -= len(old)
    if q < len(pend):
        a = pend[q]
    else:
        r = int(new_rows[q - len(pend)])
        a = cols.events(np.array([r]))[r]
    return {v: a.params[i] for i, v in pr.new[0]}



class _GuardColumns:
    """A pair's guard on stage ``j`` over (instance, candidate) pairs column-wise
    (runtime.vector_expr.pairs_mask): the candidate row's fields and the instances' values of
    the first stage's variables (old tokens' bindings, pending rows' and the batch's new
    instances' fields), each instance column read once per batch."""

    def __init__(self, pr: EsperPair, j: int, cols: TypeColumns, locs: list[np.ndarray],
                 order: np.ndarray, old: list[Any], pend: list[Event]) -> None:
        self.pr, self.j, self.cols, self.locs, self.order = pr, j, cols, locs, order
        self.old, self.pend = old, pend
        pos = pr.stages[j].position
        self.where, self.t = pos.where, pos.type
        self.own = {v: i for i, v in pr.new[j]}
        self.first = {v: i for i, v in pr.new[0]}
        self._inst: dict[str, np.ndarray] = {}
        #: whether a round could not be decided column-wise (the closure takes the rest)
        self.off = self.where is None

    def _instances(self, v: str) -> np.ndarray:
        """Every instance's value of the first stage's variable ``v``."""
        c = self._inst.get(v)
        if c is None:
            i = self.first[v]
            t0 = self.pr.stages[0].position.type
            held = ([t.threads[0].bindings.get(v) for t in self.old]
                    + [e.params[i] for e in self.pend])
            new = self.cols.column(t0, i)[self.locs[0]]
            c = self._inst[v] = _joined(held, new)
        return c

    def truth(self, sel: np.ndarray, q: np.ndarray) -> np.ndarray | None:
        """The guard on instances ``sel`` with the candidates at sorted places ``q``, or None
        (the closure decides)."""
        if self.off:
            return None
        at = self.locs[self.j][self.order[q]]

        def column(kind: str, what: Any) -> np.ndarray:
            if kind == "own":
                return self.cols.column(self.t, what)[at]
            return self._instances(what)[sel]

        mask = pairs_mask(self.where, self.cols.fields(self.t), self.own, self.first, column)
        self.off = mask is None
        return mask


def _joined(held: list[Any], new: np.ndarray) -> np.ndarray:
    """``as_column(held + new.tolist())``: the held instances' values (a Python list), then
    the batch's column — joined as numpy columns when both are numbers or booleans of one
    dtype (numpy infers the joined list's dtype alike, and keeps each value: an int64 or a
    float64 column holds exactly the Python numbers), not the batch's column made a list and
    read back (a batch after the first of Duration: its ≈ 6,000 open instances, then 262,144
    rows)."""
    if not held:
        return new
    h = as_column(held)
    if h.dtype == new.dtype and h.dtype.kind in "bif":
        return np.concatenate([h, new])
    return as_column(held + new.tolist())


def _first_guarded(pr: EsperPair, j: int, sel: np.ndarray, q: np.ndarray, order: np.ndarray,
                   code_j: np.ndarray, i_code: np.ndarray, rows_j: np.ndarray,
                   i_ts: np.ndarray, cols: TypeColumns, bound: Any,
                   reach: tuple[np.ndarray, np.ndarray] | None = None,
                   vector: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Stage ``j`` whose guard reads the earlier stages' fields (BlowOutTire's ``a2.tire1 <
    1.2 and a1.tire1 > 2.0``): each instance ``sel[i]`` takes its first candidate — rows of
    its key from sorted place ``q[i]`` on, within Δ — on which the guard holds, round after
    round over the instances still looking: decided column-wise by ``vector(sel, q)`` where it
    can (:class:`_GuardColumns`), else by the compiled closure with the bindings the per-event
    step gives it (the instance's, then the row's new ones). These are the very (instance,
    row) pairs the per-event engine evaluates; a failure declines the batch, as do more
    evaluations than the batch is long times 4 (an unbounded wait: event by event costs the
    same)."""
    from cepflow.compiler.evaluator import current_sink

    src = cols.src
    flt = pr.stages[j].position.filter
    new = pr.new[j]
    sink = current_sink()
    mark = len(sink) if sink is not None else 0
    budget = 4 * src.n + 1000
    got_inst: list[np.ndarray] = []
    got_row: list[np.ndarray] = []
    bindings: dict[int, dict[str, Any]] = {}
    while len(sel):
        cand = order[q]
        row = rows_j[cand]
        ok = vector(sel, q) if vector is not None else None
        if ok is None:
            ok = np.zeros(len(sel), bool)
            events = cols.events(row)
            for i, (inst, r) in enumerate(zip(sel.tolist(), row.tolist(), strict=True)):
                b = bindings.get(inst)
                if b is None:
                    b = bindings[inst] = bound(inst)
                e = events[r]
                nb = dict(b)
                for k, v in new:
                    nb[v] = e.params[k]
                ok[i] = bool(flt(e, nb))
        budget -= len(sel)
        if (sink is not None and len(sink) > mark) or budget < 0:
            if sink is not None:
                del sink[mark:]
            raise Declined("a guard failed on a row, or too many candidates: event by event")
        got_inst.append(sel[ok])
        got_row.append(row[ok])
        sel, q = sel[~ok], q[~ok] + 1
        has = q < len(order)
        sel, q = sel[has], q[has]
        cand = order[q]
        keep = (code_j[cand] == i_code[sel]) & (src.ts[rows_j[cand]] - i_ts[sel] < pr.window)
        if reach is not None:
            keep &= reach[0][q] <= reach[1][sel]
        sel, q = sel[keep], q[keep]
    if not got_inst:
        return sel, sel
    return np.concatenate(got_inst), np.concatenate(got_row)



def _select_fields(m: Any, pr: EsperPair) -> tuple[tuple[int, int] | None, ...] | None:
    """Where each value of the pattern's select list is (:func:`select_fields` of its stages'
    bindings)."""
    return select_fields(m, pr.new)


def select_fields(m: Any, new: Sequence[Sequence[tuple[int, str]]]
                  ) -> tuple[tuple[int, int] | None, ...] | None:
    """Where each value of the pattern's select list is, when it names only fields of its
    events or literals (:attr:`StageMatches.fields`; a literal ``(CONST, i)``: select item
    ``i``'s value, :func:`select_consts`; ``new``: per stage, the (param, variable) pairs it
    binds that no earlier stage bound), else None (the token path's ``result`` makes it)."""
    auto = m.pattern.auto
    svars, consts = auto.select_vars, auto.select_consts or ()
    if auto.select is None or svars is None:
        return None
    where: dict[str, tuple[int, int]] = {}
    for j, binds in enumerate(new):
        where.update((v, (j, i)) for i, v in binds)
    fields: list[tuple[int, int] | None] = []
    for i, v in enumerate(svars):
        if v is None:
            if i >= len(consts) or consts[i] is None:
                return None
            fields.append((CONST, i))
        else:
            fields.append((-1, 0) if v == "@ts" else where.get(v))
    return tuple(fields)


def select_consts(m: Any) -> tuple[Any, ...]:
    """Per select item of ``m``'s pattern its literal's value (None for the other items): what
    a ``(CONST, i)`` field of :func:`_select_fields` reads."""
    return tuple(None if c is None else c[0] for c in m.pattern.auto.select_consts or ())


def lazy_shape(m: Any, types: Sequence[str], fields: tuple[tuple[int, int] | None, ...],
               arity: dict[str, int]) -> _PairShape:
    """What the lazy complex events (:class:`_PairMatch`) of pattern ``m`` share, its stages'
    events being of ``types`` and its select list at ``fields`` (:func:`select_fields`)."""
    # (the select list as positions in the row ``a.params + b.params + … + (ts, None)`` and
    # the select list's literals after it)
    offsets = np.cumsum([0, *(arity[t] for t in types)]).tolist()
    pick = [offsets[-1] + 1 if f is None else offsets[-1] + 2 + f[1] if f[0] == CONST
            else offsets[-1] if f[0] < 0 else offsets[f[0]] + f[1] for f in fields]
    return _PairShape(m.name, m.pattern.auto.params, pick,
                      select_consts(m) if any(f and f[0] == CONST for f in fields) else (),
                      offsets[-1])


def lazy_matches(parts: Iterable[tuple[Event, ...]], shape: _PairShape,
                 match_ids: Iterable[int]) -> list[ComplexEvent]:
    """The lazy complex events (:class:`_PairMatch`) of matches holding ``parts``, with
    ``match_ids`` (0 when the caller gives the ids later)."""
    return list(map(shape.kind, parts, match_ids))



def _emit(m: Any, pr: EsperPair, p: dict, inst: np.ndarray, rank: np.ndarray, first_id: int,
          events: Any, fields: tuple[tuple[int, int] | None, ...] | None,
          arity: dict[str, int], objects: bool = True) -> list[Any]:
    """:func:`_emit_pair`, for a last stage of alternatives per alternative: the matches it
    completed are those of its own chain (``pr.alts``), whose select list reads the other
    alternatives' tags as null."""
    if pr.until is not None:  # (an until: grouped by the b its matches hold)
        return until.emit(UNTIL_KIT, m, pr, p, inst, rank, first_id, events, fields, arity,
                          objects)
    if not pr.alts and not pr.paths:
        return _emit_pair(m, pr, p, inst, rank, first_id, events, fields, arity, objects)
    if pr.conj:
        return _emit_and(m, pr, p, inst, rank, first_id, events, fields, arity, objects)
    blocks: list[Any] = []
    by = p["alt"][inst]
    if pr.paths:  # (alternatives before more stages: per alternative, its own chain's; a
        # token from before the batch holds one thread, kernels.branch)
        old = p["old"]

        def held_old(q: int) -> tuple[list[Event], dict[str, Any]]:
            return branch.held_winner(old[q])

        # (a token's: its winning thread's events and bindings, to which _held adds the
        # stages it takes in the batch)
        p = {**p, "held_old": held_old}
        for i, view in enumerate(pr.paths):
            w = by == i
            if w.any():
                blocks += _emit_pair(m, view, p, inst[w], rank[w], first_id, events,
                                     None if fields is None else _select_fields(m, view),
                                     arity, objects)
        return blocks
    for i, view in enumerate(pr.alts):
        w = by == i
        if w.any():
            blocks += _emit_pair(m, view, _taken_by(pr, p, i) if pr.track else p, inst[w],
                                 rank[w], first_id, events,
                                 None if fields is None else _select_fields(m, view), arity,
                                 objects)
    return blocks


def _emit_and(m: Any, pr: EsperPair, p: dict, inst: np.ndarray, rank: np.ndarray,
              first_id: int, events: Any, fields: tuple[tuple[int, int] | None, ...] | None,
              arity: dict[str, int], objects: bool = True) -> list[Any]:
    """:func:`_emit_pair` for an and (kernels.orseq): its matches grouped by the chain of
    steps their rows make (orseq.step_groups), each group's as those of the chain of its
    steps would be — the stages before, the token's product steps from before the batch
    (its events and bindings, held), then per step the row its operands took, binding their
    atoms' variables in operand order (the token path's merged step)."""
    nb = len(pr.stages)
    before = np.zeros(len(p["match"]), np.int64)  # (a token's product steps before the batch)
    for q, t in enumerate(p["old"]):
        if p["stage0"][q] == nb and p["counts0"][:, q].any():
            before[q] = len(t.threads[0].events) - nb
    groups, group = orseq.step_groups(pr, p["op_rows"], inst, before)
    taken = p["taken"]
    at = np.cumsum([nb, *(len(r) for r in p["op_rows"])]).tolist()
    blocks: list[Any] = []
    for g, (held, steps) in enumerate(groups):
        w = group == g
        new = [tuple(x for i, k in step for x in pr.alts[i].new[nb + k]) for step in steps]
        view = replace(pr, stages=(*pr.stages, *(None,) * held,  # (held: never read)
                                   *(pr.alts[i].stages[nb + k] for (i, k), *_ in steps)),
                       new=(*pr.new, *((),) * held, *new), alts=(), conj=False, product={})
        rows = np.concatenate([taken[:nb], np.full((held, len(before)), -1, np.int64),
                               *(taken[at[i] + k][None, :] for (i, k), *_ in steps)])
        plan = {**p, "taken": rows, "stage0": p["stage0"] + before,
                "stage": np.full(len(before), nb + held + len(steps), np.int64)}
        blocks += _emit_pair(m, view, plan, inst[w], rank[w], first_id, events,
                             None if fields is None else _select_fields(m, view), arity,
                             objects)
    return blocks


def stage_blocks(m: Any, p: dict, inst: np.ndarray, cols: TypeColumns | None = None
                 ) -> list[StageMatches]:
    """The matches of instances ``inst`` of the plan ``p`` (:func:`pair_rows`) that
    :func:`process_esper_columns` hands over as rows — instances begun in the batch, a select
    list of fields, the time and literals — as :class:`StageMatches` blocks (a last stage of
    alternatives: one per alternative), each match's ``rank`` its place in ``inst``; no
    complex event is made (the program split's column blocks, kernels.column_blocks, whose
    objects :func:`pair_matches` makes). With the batch's columns ``cols``, also a plain
    pair's (no alternatives, and, until) whose select list computes values exactly
    column-wise (:func:`_computed_block`: Duration's ``a2.ts - a1.ts``)."""
    pr = m.pattern.pair
    fields = _select_fields(m, pr)
    computed = (fields is None and cols is not None and m.pattern.auto.select_exprs is not None
                and pr.until is None and not pr.alts and not pr.paths and not pr.conj)
    if (fields is None and not computed) or not len(inst):
        return []
    p["as_rows"] = p["match"] & (np.arange(len(p["match"])) >= p["n_old"])
    try:
        blocks = _emit(m, pr, p, inst, np.arange(len(inst)), 0, None, fields or (), {},
                       objects=False)
    finally:
        p["as_rows"] = np.zeros(len(p["match"]), bool)
    if not computed:
        return blocks
    assert cols is not None
    return [c for c in (_computed_block(m, pr, b, cols) for b in blocks) if c is not None]


def _taken_by(pr: EsperPair, p: dict, i: int) -> dict:
    """The plan ``p`` of an or of sequences (kernels.orseq) as operand ``i``'s chain
    (``pr.alts[i]``) would have it, for its matches: the rows of the stages before and of its
    own atoms, the events it held before the batch (a token's: ``held_old``)."""
    nb = len(pr.stages)
    lens = [len(v.stages) - nb for v in pr.alts]
    at = nb + sum(lens[:i])
    taken = p["taken"]
    stage0 = p["stage0"] + np.where(p["stage0"] == nb, p["counts0"][i], 0)
    old, own = p["old"], orseq.own_variables(pr)
    return {**p, "taken": np.concatenate([taken[:nb], taken[at:at + lens[i]]]),
            "stage0": stage0, "stage": np.full(len(stage0), nb + lens[i], np.int64),
            "held_old": lambda q: orseq.held_by(pr, i, old[q].threads[0], own)}


def _emit_pair(m: Any, pr: EsperPair, p: dict, inst: np.ndarray, rank: np.ndarray, first_id: int,
               events: Any, fields: tuple[tuple[int, int] | None, ...] | None,
               arity: dict[str, int], objects: bool = True) -> list[Any]:
    """The complex events of one pattern as Matcher._complete makes them (``events``: the
    batch's events, indexable by row): a :class:`StageMatches` block for the matches
    ``p["as_rows"]`` marks, an :class:`ObjectMatches` block for the others (not made without
    ``objects``: :func:`stage_blocks`)."""
    blocks: list[Any] = []
    name = m.name
    taken = p["taken"]
    as_rows = p["as_rows"][inst]
    if as_rows.any():
        q = inst[as_rows]
        blocks.append(StageMatches(name, tuple(m.pattern.auto.params), fields,
                                   p["end_row"][q], rank[as_rows], taken[:, q],
                                   select_consts(m)))
        inst, rank = inst[~as_rows], rank[~as_rows]
    if not len(inst) or not objects:
        return blocks
    old, pend = p["old"], p["pend_events"]
    n_real = len(old)
    n_old = n_real + len(pend)
    n_stages = len(pr.stages)
    out: list[Any] = []
    ranks: list[np.ndarray] = []
    lazy = (fields is not None or m.pattern.auto.select_exprs is not None) and bool(
        (inst >= n_real).any())
    if lazy:  # the instances begun by an A event in hand: lazy complex events
        fresh = inst >= n_real
        q_new = inst[fresh]
        stage_rows = [taken[j][q_new] for j in range(n_stages)]
        starts = stage_rows[0].tolist()
        firsts = (picked(events, starts) if n_old == n_real else
                  [pend[q - n_real] if q < n_old else events[s]
                   for q, s in zip(q_new.tolist(), starts, strict=True)])
        later = [picked(events, r.tolist()) for r in stage_rows[1:]]
        r_new = rank[fresh]
        ids = (first_id + r_new).tolist()
        parts = zip(firsts, *later, strict=True)
        if fields is not None:
            shape = lazy_shape(m, [e.position.type for e in pr.stages], fields, arity)
            out += lazy_matches(parts, shape, ids)
        else:
            params = _computed_select(m, pr, [firsts, *later],
                                      _stage_values(pr, p, q_new, stage_rows))
            if params is None:
                lazy = False
            else:
                names = tuple(m.pattern.auto.params)
                out += map(lazy_kind(name, names), params,
                           map(_TS, later[-1] if later else firsts), parts, ids)
    if lazy:
        ranks.append(r_new)
        keep = ~fresh
        inst, rank = inst[keep], rank[keep]
    for q, r in zip(inst.tolist(), rank.tolist(), strict=True):
        evs, full = _held(pr, p, q, events)
        last = evs[-1]
        vals, bindings = m.result(full, last.ts, last)
        out.append(ComplexEvent(name, vals, last.ts, bindings, evs, first_id + r))
    ranks.append(rank)
    r_all = np.concatenate(ranks)
    blocks.append(ObjectMatches(p["end_row"][np.concatenate([q_new, inst])
                                              if lazy else inst], r_all, out))
    return blocks


def _stage_values(pr: EsperPair, p: dict, q_new: np.ndarray, stage_rows: list[np.ndarray]
                  ) -> Any:
    """``values(j, i)``: parameter ``i`` of the stage-``j`` event of each instance ``q_new``
    (``stage_rows[j]``: its batch row, -1 for an A event held before the batch), the events'
    own value objects gathered from the batch's columns (TypeColumns.pick) rather than read
    event by event; None for a column source (its events are made from the columns)."""
    cols = p.get("cols")
    if cols is None or not isinstance(cols.src, EventRows):
        return None
    n_real, pend = len(p["old"]), p["pend_events"]

    def values(j: int, i: int) -> list[Any]:
        rows, t = stage_rows[j], pr.stages[j].position.type
        if not (rows < 0).any():
            return cols.pick(t, i, rows)
        # (instances begun before the batch, by a pending row's event)
        return _with_held(q_new, rows, n_real, n_real + len(pend),
                          lambda r: cols.pick(t, i, r), lambda q: pend[q - n_real].params[i])

    return values


def _with_held(q_new: np.ndarray, rows: np.ndarray, n_real: int, n_old: int,
               batch: Any, held: Any) -> list[Any]:
    """Per instance ``q_new`` (begun before the batch as a pending row — ``n_real <= q <
    n_old`` — or in it) a field of its event at some stage: ``batch(r)`` for the batch rows
    ``r`` (``rows``, -1 where the event came before the batch), ``held(q)`` for an instance's
    event from before the batch, None where neither (a later stage not taken). The batch's
    rows in one call (the held ones given another row's value, then replaced one by one: a
    batch after the first holds the thousands of instances ``every a -> b`` without a window
    leaves open, of which only those completing here are read one by one) — a fourth of the
    time of a loop over every match (115,000 matches, 2,565 held: 36 → 9.5 ms per field)."""
    before = rows < 0
    if bool(before.all()):
        return [held(q) if q < n_old else None for q in q_new.tolist()]
    out = list(batch(np.where(before, rows[int(before.argmin())], rows)))
    at = np.flatnonzero(before)
    for k, q in zip(at.tolist(), q_new[at].tolist(), strict=True):
        out[k] = held(q) if q < n_old else None
    return out


def _computed_select(m: Any, pr: EsperPair, stage_events: list[list[Event]],
                     values: Any = None) -> Iterator[tuple[Any, ...]] | None:
    """Per match (its events at each stage in ``stage_events``), its parameters where the
    select list holds only variables, ``current_timestamp()`` and arithmetic over them that
    runtime.vector_expr computes exactly (Duration's ``a2.ts - a1.ts``), as Matcher.result's
    closures give them; else None (the matches are made as objects, each evaluated).
    ``values(j, i)``, when given, reads parameter ``i`` of the stage-``j`` events
    (:func:`_stage_values`)."""
    if not stage_events[0]:
        return None
    last = stage_events[-1]
    cols = _computed_columns(
        m, pr, len(last),
        values or (lambda j, i: [e.params[i] for e in stage_events[j]]),
        lambda: list(map(_TS, last)))
    return None if cols is None else zip(*cols, strict=True)


def _computed_columns(m: Any, pr: EsperPair, n: int, values: Any, times: Any
                      ) -> list[list[Any]] | None:
    """The select list's values of ``n`` matches, item by item (:func:`_computed_select`):
    ``values(j, i)`` parameter ``i`` of their stage-``j`` events, ``times()`` their times;
    None when an item is not computed exactly column-wise."""
    auto = m.pattern.auto
    where = {v: (j, i) for j, new in enumerate(pr.new) for i, v in new}

    def column(v: str) -> list[Any]:
        if v == "@ts":
            return times()
        at = where.get(v)
        if at is None:  # (bound by no stage: null, as the bindings' get gives it)
            return [None] * n
        return values(*at)

    cols = []
    for v, e in zip(auto.select_vars, auto.select_exprs, strict=True):
        vals = column(v) if v is not None else arithmetic_values(e, column)
        if vals is None:
            return None
        cols.append(vals)
    return cols


def _computed_block(m: Any, pr: EsperPair, b: StageMatches, cols: TypeColumns
                    ) -> StageMatches | None:
    """Block ``b`` (rows only: :func:`stage_blocks`) of a pattern whose select list is
    computed (:func:`_computed_columns`) with its items' values: each item naming a stage's
    field that field, the time the match's own, a computed one a ``(VALUE, i)`` column
    computed from the batch's columns; None when one cannot be computed exactly."""
    src = cols.src

    def values(j: int, i: int) -> list[Any]:
        rows = b.rows[j]
        if isinstance(src, EventRows):
            return cols.pick(pr.stages[j].position.type, i, rows)
        local, uniq = src.values(i, rows)
        return list(map(uniq.__getitem__, local.tolist()))

    def times() -> list[Any]:
        return list(map(src.time_at, b.rows[-1].tolist()))

    got = _computed_columns(m, pr, len(b.at), values, times)
    if got is None:
        return None
    auto, where = m.pattern.auto, {v: (j, i) for j, new in enumerate(pr.new) for i, v in new}
    fields: list[tuple[int, int] | None] = []
    computed: list[list[Any]] = []
    for v, col in zip(auto.select_vars, got, strict=True):
        if v is None:
            fields.append((VALUE, len(computed)))
            computed.append(col)
        else:
            fields.append((-1, 0) if v == "@ts" else where.get(v))
    return replace(b, fields=tuple(fields), values=tuple(computed))


def pair_matches(m: Any, p: dict, inst: np.ndarray, events: Any, arity: dict[str, int]
                 ) -> list[ComplexEvent]:
    """The complex events of instances ``inst`` of the plan ``p`` (:func:`pair_rows`) in that
    order, as objects (match ids to be given by the caller: the program split replays them)."""
    if not len(inst):
        return []
    pr = m.pattern.pair
    p["as_rows"] = np.zeros(len(p["match"]), bool)
    blocks = _emit(m, pr, p, inst, np.arange(len(inst)), 0, events, _select_fields(m, pr),
                   arity)
    if len(blocks) == 1 and bool((blocks[0].rank == np.arange(len(inst))).all()):
        return blocks[0].events  # (made in that order already: the instances begun in it)
    out: list[Any] = [None] * len(inst)
    for block in blocks:
        deque(map(out.__setitem__, block.rank.tolist(), block.events), maxlen=0)
    return out



def _held(pr: EsperPair, p: dict, q: int, events: Any) -> tuple[list[Event], dict[str, Any]]:
    """Instance ``q``'s events and bindings after the batch (as the token path's thread holds
    them): what it held before, then the events it took in the batch."""
    old, pend = p["old"], p["pend_events"]
    n_real = len(old)
    if q < n_real:
        th = old[q].threads[0]
        held = p.get("held_old")  # (an or of sequences: an operand's view of its token)
        evs, full = (list(th.events), dict(th.bindings)) if held is None else held(q)
    else:
        a = (pend[q - n_real] if q < n_real + len(pend)
             else events[int(p["taken"][0][q])])
        ap = a.params
        evs, full = [a], {v: ap[i] for i, v in pr.new[0]}
    taken = p["taken"]
    collects = pr.collects
    for j in range(int(p["stage0"][q]), int(p["stage"][q])):
        e = events[int(taken[j][q])]
        evs.append(e)
        ep = e.params
        if collects and collects[j] is not None:  # (a repeated tag: the token path's step)
            full = collect(collects[j], ep, full)
        else:
            full.update((v, ep[i]) for i, v in pr.new[j])
    return evs, full



class _PairShape:
    """What the complex events of one pattern share in a batch: its name, the names of its
    parameters, and the select list as positions in the row of its events' params, its time,
    None and the select list's literals (``a.params + b.params + … + (ts, None) + consts``)."""

    __slots__ = ("consts", "get", "kind", "name", "names", "pick", "width")

    def __init__(self, name: str, names: Sequence[str], pick: list[int],
                 consts: tuple[Any, ...] = (), width: int | None = None) -> None:
        self.name, self.names, self.consts = name, tuple(names), consts
        #: the positions in the row, and how many of them are the events' params (None:
        #: not given, so fill_params leaves the matches to their lazy reads)
        self.pick, self.width = pick, width
        #: the parameter tuple from the row ``a.params + b.params + … + (ts, None)``
        self.get: Any = (itemgetter(*pick) if len(pick) > 1 else
                         (lambda row, i=pick[0]: (row[i],)) if pick else (lambda row: ()))
        #: the class of its matches, ``kind(parts, match_id)``: a :class:`_PairMatch` whose
        #: type, parameter names and shape are class attributes (rows.kind_of), one per
        #: shape (the shape a batch makes again is the same; literals by type and value:
        #: ``1``, ``1.0`` and ``True`` are equal keys but other parameters)
        key = (name, self.names, tuple(pick), tuple((type(c), c) for c in consts), width)
        self.kind: Any = kind_of(_PairMatch, key,
                                 {"type": name, "_names": self.names, "_shape": self})



def fill_params(found: Sequence[ComplexEvent]) -> None:
    """Make the parameters of the one-event lazy matches in ``found`` column by column (a list
    per select item, zipped into the tuples), for a consumer about to read them all (a time
    batch over a cascade's matches, kernels.cascade): the values reading each one would give,
    for a fraction of the cost."""
    by_shape: dict[int, list[_PairMatch]] = {}
    for m in found:
        if isinstance(m, _PairMatch) and m._params is None and len(m.parts) == 1:
            by_shape.setdefault(id(m._shape), []).append(m)
    for ms in by_shape.values():
        shape = ms[0]._shape
        w, n = shape.width, len(ms)
        if not shape.pick or w is None:
            continue
        evs = [m.parts[0] for m in ms]
        cols: list[Any] = [[e.params[i] for e in evs] if i < w else [e.ts for e in evs]
                           if i == w else repeat(None, n) if i == w + 1
                           else repeat(shape.consts[i - w - 2], n) for i in shape.pick]
        for m, p in zip(ms, zip(*cols, strict=True), strict=True):
            m._params = p


def one_stage_matches(m: Any, rows: np.ndarray, cols: TypeColumns, arity: dict[str, int]
                      ) -> list[ComplexEvent] | None:
    """The matches of a single-stage pattern ``every a = T(f)`` at the rows ``rows`` of the
    batch (ascending) with their parameters made now, column by column — for a consumer about
    to read them all (a time batch over them, kernels.cascade) — when its select list names
    only fields of ``a``, its time and literals (else None: :func:`pair_matches`). The values
    are those :class:`_PairMatch` reads (the events' own objects); bindings are made when
    read (:class:`~cepflow.runtime.rows.LazyBindings`); ids are given by the caller."""
    pr = m.pattern.pair
    fields = _select_fields(m, pr)
    if fields is None or len(pr.stages) != 1 or pr.alts:
        return None
    t = pr.stages[0].position.type
    shape = lazy_shape(m, [t], fields, arity)
    w, n = shape.width, len(rows)
    evs = list(map(cols.events(rows).__getitem__, rows.tolist()))
    ts = list(map(attrgetter("ts"), evs))
    among = np.searchsorted(cols.rows(t), rows)  # (the rows among those of the type)
    per_item: list[Any] = [cols.objects(t, i)[among].tolist() if i < w
                           else ts if i == w
                           else repeat(None, n) if i == w + 1
                           else repeat(shape.consts[i - w - 2], n) for i in shape.pick]
    params = zip(*per_item, strict=True) if per_item else repeat((), n)
    return list(map(lazy_kind(shape.name, shape.names), params, ts, zip(evs)))


class _PairMatch(LazyBindings):
    """A complex event of the Esper pair kernel whose select list only names fields of its
    events: ``params``, ``bindings`` and ``parts`` are made when first read, since most
    consumers of a large batch read a few of them or none (making them eagerly was half of the
    Crash kernel's time). Reads give what Matcher._complete would have built. Made as its
    shape's ``kind`` (:class:`_PairShape`), which holds the type, names and shape."""

    __slots__ = ("_params",)
    #: what the matches of its kind share (a class attribute of the kind)
    _shape: _PairShape

    def __init__(self, parts: tuple[Event, ...], match_id: int) -> None:
        self.parts, self.ts, self.match_id = parts, parts[-1].ts, match_id
        # (None until read: a test, not a caught AttributeError, which costs a microsecond)
        self.id = self._params = self._bindings = None
        self.seq = -1

    @property  # type: ignore[override]
    def params(self) -> tuple[Any, ...]:
        p = self._params
        if p is None:
            evs = self.parts
            shape = self._shape
            if len(evs) == 1:
                e = evs[0]
                p = shape.get((*e.params, e.ts, None, *shape.consts))
            else:
                row = [x for e in evs for x in e.params] if len(evs) != 2 else [
                    *evs[0].params, *evs[1].params]
                p = shape.get((*row, evs[-1].ts, None, *shape.consts))
            self._params = p
        return p



def leave_open(m: Any, pr: EsperPair, p: dict, new_ids: np.ndarray, events: Any
                ) -> tuple[list[int], list[Event]]:
    """Tokens from before the batch that completed or expired are dropped, those that moved on
    take their new events; the instances begun before or in the batch that still wait for
    their second stage are returned as the pattern's pending rows (ids, A events) — tokens are
    made of them only when needed (Matcher.materialize) — and those further on (a chain of
    three stages or more) become tokens now, oldest first, with their window's timer."""
    if pr.until is not None:  # (an until's: kernels.until)
        return until.leave_open(UNTIL_KIT, m, pr, p, new_ids, events)
    if p["seen"] is not None:  # (every-distinct: the keys the batch noted)
        m.seen = p["seen"]
    old, pend_ids, alive = p["old"], p["pend_ids"], p["alive"]
    stage0, stage = p["stage0"], p["stage"]
    n_real = len(old)
    z, zat, zto = pr.zone, pr.zone_at, _zone_to(pr)
    moved = stage != stage0
    deep = stage > 1  # (past the first stage: tokens; the others pending rows)
    if pr.operands:  # (an or of sequences, an and: an operand's progress moves it on too)
        moved |= (p["counts"] != p["counts0"]).any(axis=0)
        deep |= p["counts"].any(axis=0)
    # (past alternatives before more stages: a thread per alternative event, kernels.branch)
    threads = _branch_threads(pr, p, events, m.pattern.auto) if pr.paths else {}
    moved[list(threads)] = True
    if p.get("lead") is not None:  # (from the start: every instance left open is a token)
        deep[:] = True
    #: the tokens whose window opened in the batch (a guard on the later stages): their
    #: timers, asked for below in the order the windows opened
    opened: list[tuple[int, int, Token, Thread]] = []
    for q in np.flatnonzero(~alive[:n_real] | moved[:n_real]).tolist():
        m.unregister(old[q])
    for q in np.flatnonzero(alive[:n_real] & moved[:n_real]).tolist():
        tok = old[q]
        if q in threads:
            tok.threads = threads[q]
            m.register(tok)
            continue
        th = tok.threads[0]
        th.state, th.events, th.bindings = _open(pr, p, q, events)
        th.last = th.events[-1]
        th.zstart = _zstart(pr, int(stage[q]), th.events, zto)
        m.register(tok)
        if z is not None and stage0[q] <= zat < stage[q] <= zto + 1:  # (opened: its timer)
            opened.append((int(p["taken"][zat][q]), tok.id, tok, th))
    ids, evs = pending_left(p, alive & ~deep, new_ids, events)
    on = np.flatnonzero(alive & deep)
    on = on[on >= n_real]
    if len(on):
        all_ids = [*pend_ids, *new_ids.tolist()]
        for q in on.tolist():
            if q in threads:  # (its window opened at a: zat is 0)
                tok = Token(all_ids[q - n_real], None, threads[q][-1].events[0].ts, threads[q])
                m.register(tok)
                if z is not None:
                    m.schedule_zones(tok, threads[q][-1])
                continue
            state, held, full = _open(pr, p, q, events)
            zs = _zstart(pr, int(stage[q]), held, zto)
            th = Thread(state, full, held, zs, held[-1])
            tok = Token(all_ids[q - n_real], None, held[0].ts, [th])
            m.register(tok)
            if zs:  # (in its window, or waiting for the stage that leaves it: its timer)
                if zat == 0:  # (in the order the instances began: their windows')
                    m.schedule_zones(tok, th)
                else:
                    opened.append((int(p["taken"][zat][q]), tok.id, tok, th))
    # (as the token path asks for them: at the event that opens each window, oldest first)
    for _, _, tok, th in sorted(opened, key=itemgetter(0, 1)):
        m.schedule_zones(tok, th)
    if z is not None:
        _skip_completed(m, pr, p)
    return ids, evs


def pending_left(p: dict, waiting: np.ndarray, new_ids: np.ndarray, events: Any
                 ) -> tuple[list[int], list[Event]]:
    """Of plan ``p``'s instances, those ``waiting`` for their second stage that were pending
    rows before the batch or began in it (ids ``new_ids``): the pattern's pending rows after
    it (ids, ``A`` events; tokens from before the batch stay tokens)."""
    n_real, pend_ids, pend_events = len(p["old"]), p["pend_ids"], p["pend_events"]
    n_old = n_real + len(pend_ids)
    keep = np.flatnonzero(waiting[n_real:n_old]).tolist()
    ids = [pend_ids[q] for q in keep]
    evs = [pend_events[q] for q in keep]
    live = np.flatnonzero(waiting[n_old:])
    ids += new_ids[live].tolist()
    evs += [events[i] for i in p["new_rows"][live].tolist()]
    return ids, evs


def _branch_threads(pr: EsperPair, p: dict, events: Any, auto: Any) -> dict[int, list[Thread]]:
    """Per instance left open past its alternatives (before more stages: kernels.branch),
    its threads after the batch, as the token path holds them — from the start, those its
    row began (a token from before the batch is left as it is: one stage after them)."""
    b, old = pr.branch, p["old"]
    if not b:
        n_old = len(old) + len(p["pend_ids"])
        lead, first = p["lead"], p["taken"][0]
        return {q: branch.start_threads(pr, auto, events[int(first[q])], lead[:, q - n_old])
                for q in (n_old + np.flatnonzero(p["alive"][n_old:])).tolist()}
    n_real = len(old)
    stage0, taken = p["stage0"], p["taken"]
    pre = {**p, "stage": np.minimum(p["stage"], b)}  # (up to the alternatives: _held)
    zto = _zone_to(pr)
    bases: dict[int, tuple[Thread | None, list[Thread], list[Any]]] = {}
    for q in np.flatnonzero(p["alive"] & (p["stage"] > b)).tolist():
        if q < n_real and stage0[q] > b:  # (its threads before the batch, and their base
            ths = old[q].threads            # if it still waits for the alternatives)
            waits = ths[-1].state == pr.states[b - 1]
            base, kept, after = (ths[-1], ths[:-1], -1) if waits else (None, ths, -1)
        else:
            evs, full = _held(pr, pre, q, events)
            base = Thread(pr.states[b - 1], full, evs, _zstart(pr, b, evs, zto), evs[-1])
            kept, after = [], int(taken[b - 1][q])
        bases[q] = (base, kept, p["branch_rows"](q, after))
    src = p["cols"].src
    if not isinstance(src, EventRows):  # (a column source: the alternatives' events too)
        need = sorted({r for _, _, rows in bases.values() for r, *_ in rows})
        events = p["cols"].events(np.array(need, np.int64))
    return {q: branch.open_threads(pr, base, kept, rows, events.__getitem__)
            for q, (base, kept, rows) in bases.items()}


def _open(pr: EsperPair, p: dict, q: int, events: Any) -> tuple[int, list[Event], dict[str, Any]]:
    """The state, events and bindings of instance ``q``'s thread left open after the batch:
    what it holds (:func:`_held`), at the state where it waits for its next stage — or, past
    the stages before an or of sequences, its product thread (kernels.orseq.open_thread)."""
    evs, full = _held(pr, p, q, events)
    if not pr.operands or not p["counts"][:, q].any():
        return pr.states[int(p["stage"][q]) - 1], evs, full
    return orseq.open_thread(pr, evs, full, q, p["op_rows"], p["counts"], events)


def _zstart(pr: EsperPair, s: int, held: Sequence[Event], zto: int) -> dict[int, Any] | None:
    """The zone entries of an instance holding ``s`` events ``held``, as the token path's
    thread has them: none before its window opens (a guard on the later stages), the time
    of the event that opened it from then on — also while it waits for the stage that
    leaves a window around middle stages — and none again once that stage left it
    (Matcher._zones pops the zone and gives None for no zone left)."""
    z, zat = pr.zone, pr.zone_at
    if z is None or s <= zat or s > zto + 1:
        return None
    return {z: held[zat].ts}


def _skip_completed(m: Any, pr: EsperPair, p: dict) -> None:
    """The deadlines after the batch of the instances whose window opened with none queued
    — the kernel's rows from before it, the instances it began, the tokens from before it
    whose window opened in it — and that completed in it or left a window around middle
    stages (their deadlines are no token's to expire): the token path's timers for them fire
    idle later, moving the clock (Matcher.skipped, Engine._advance)."""
    n_real = len(p["old"])
    done = p["match"] | (p["alive"] & (p["stage"] > _zone_to(pr) + 1))
    done &= np.isfinite(p["zstart"])  # (the window opened)
    # (a token from before the batch whose window was open then has its deadline queued;
    # one whose window opened in it — a guard on the later stages — has none)
    done[:n_real] &= p["stage0"][:n_real] <= pr.zone_at
    if not done.any():
        return
    last = float(p["cols"].src.ts[-1])
    due = np.sort(p["zstart"][done] + pr.window)
    skip_idle(m, due[due > last].tolist(), last)


def skip_idle(m: Any, new: list[float], now: float) -> None:
    """Queue the deadlines ``new`` (ascending) of a kernel's completed instances whose timers
    the token path would have run idle after the batch, which ended at ``now``
    (Matcher.skipped); those the batch passed are dropped (the clock is past them)."""
    sk = m.skipped
    while sk and sk[0] <= now:
        sk.popleft()
    if new:
        if sk and new[0] < sk[-1]:  # (rows from before the batch: merged in time order)
            m.skipped = deque(sorted([*sk, *new]))
        else:
            sk.extend(new)


#: the pair kernel's helpers kernels.until plans and emits an until's matches with (handed to
#: it: this module dispatches to kernels.until, so that one cannot import this one)
UNTIL_KIT = SimpleNamespace(
    keyed_codes=keyed_codes, Uncodable=Uncodable, stable_order=stable_order,
    sorted_search=sorted_search, _zone_start=_zone_start, _ages=_ages, _emit_pair=_emit_pair,
    _select_fields=_select_fields, pending_left=pending_left, skip_idle=skip_idle)
