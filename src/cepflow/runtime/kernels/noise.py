"""The chain kernel's plan for a keyed sequence under the immediate and strict contexts
(CompiledPattern.context_chain; docs/architecture.md, "Keyed sequences under immediate and
strict"): which rows move, complete, start or dispose partial matches over a batch, in the
form kernels.chain assembles for chronicle chains (``pred``, completing items, items left
waiting, starting items).

The token path (Matcher._general) per event, mirrored here row by row: the oldest partial
match of the event's key waiting at a stage of its type whose filter it passes takes it (moves
or completes); else, at the first stage's type and filter, it starts one — under strict only
when none is held (in its partition); else it is *noise* and disposes every partial match —
of its key when the pattern is partitioned by it, where an event of a type the sequence does
not take belongs to no partition and does nothing. Filters are decided column-wise first
(kernels.filters: a failure declines the batch), so the loop reads only per row its stages and
key code. Without a partition every input row counts — a run of noise rows disposes once, so
only its first is stepped; with one, only the rows of the sequence's types.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from cepflow.runtime.kernels.filters import chain_rows
from cepflow.runtime.kernels.frame import Declined
from cepflow.runtime.kernels.queues import run_chain
from cepflow.runtime.rows import Rows, distinct


def plan_context(pattern: Any, src: Rows, type_code: dict[str, int], values: list[Any],
                 occupants: Any, schemas: Any, filter_cols: dict[tuple[str, int], np.ndarray]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                            dict[int, np.ndarray], np.ndarray, list[tuple[int, float]]]:
    """One context chain over the prepared batch ``src``, after the partial matches held
    before it (``occupants``, kernels.chain._occupants): the rows it steps (``positions``,
    the items ``0..n-1``; the occupants are items ``n..``), per item the index of its key value
    in ``values`` (extended here), ``pred``, the completing items, per stage the items left
    waiting, the items that started a partial match and, in a window, the timers the engine
    still holds after the batch (:func:`step_context`). Raises :class:`Declined` when a
    filter fails on a row, or when the pattern is partitioned and a key is NaN (a NaN is its
    own partition by identity, which the batch's values need not keep)."""
    c = pattern.context_chain
    parted = pattern.partitioned
    k = len(c.stages)
    positions, bits, key, vidx, table = chain_rows(c, src, type_code, values, schemas,
                                                   filter_cols, every_row=True)
    if parted and any(v != v for v in table):
        raise Declined("a NaN partition: event by event")
    if not parted and len(positions) < src.n:
        # every other row is noise (bits 0): of a run of noise rows only the first counts
        other = np.ones(src.n, dtype=bool)
        other[positions] = False
        extra = np.flatnonzero(other)
        positions = np.concatenate([positions, extra])
        zero = np.zeros(len(extra), dtype=np.int64)
        bits, key = np.concatenate([bits, zero]), np.concatenate([key, zero - 1])
        vidx = np.concatenate([vidx, zero - 1])
    order = np.argsort(positions, kind="stable")
    positions, bits, key, vidx = positions[order], bits[order], key[order], vidx[order]
    if not parted and len(bits) > 1:
        quiet = bits == 0
        keep = ~quiet
        keep[0] = True
        keep[1:] |= ~quiet[:-1]
        if not keep.all():
            positions, bits, key, vidx = positions[keep], bits[keep], key[keep], vidx[keep]
    occ_key = [table.setdefault(v, len(table)) for v in occupants.keys]
    occ_vidx = np.arange(len(values), len(values) + len(occ_key), dtype=np.int64)
    values.extend(occupants.keys)
    stage_of = c.stage_of()
    occ_stage = [stage_of[s] for s in occupants.states]
    vidx = np.concatenate([vidx, occ_vidx])
    if (parted and k == 2 and len(c.types) == 2 and not pattern.context.one_at_a_time
            and c.window is None and all(len(alts) == 1 for alts in c.stages)):
        return (positions, vidx, *_queued_pairs(bits, key, occ_stage, occ_key), [])
    stage_sets = {b: tuple(st for st in range(k) if b >> st & 1)
                  for b in distinct(bits).tolist()}
    w = c.window
    pred, done, waiting, started, timed = step_context(
        k, list(map(stage_sets.__getitem__, bits.tolist())), key.tolist(),
        list(zip(occ_stage, occ_key, strict=True)), pattern.context.one_at_a_time, parted,
        None if w is None else src.ts[positions].tolist(), w,
        [evs[0].ts for evs in occupants.events] if w is not None else [],
        float(src.ts[-1]) if src.n else 0.0)
    return (positions, vidx, pred, np.array(done, dtype=np.int64),
            {s: np.array(its, dtype=np.int64) for s, its in waiting.items()},
            np.array(started, dtype=np.int64), timed)


def _queued_pairs(bits: np.ndarray, key: np.ndarray, occ_stage: list[int], occ_key: list[int]
                  ) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray], np.ndarray]:
    """:func:`step_context` for two stages of distinct types under immediate, partitioned by
    the key, in numpy: every row of the first stage starts a partial match, and a row of the
    second that none waits for finds its key's partition empty (its partial matches all wait
    there), so its noise disposes nothing — only a row that passes no stage (bits 0) does.
    Between two such rows of a key the partial matches are chronicle's queues, and such a row
    empties its key's queue: kernels.queues.run_chain with the noise rows as its clears."""
    n, n_occ = len(bits), len(occ_key)
    noise = bits == 0
    live, quiet = np.flatnonzero(~noise), np.flatnonzero(noise)
    pred, done, waiting = run_chain(
        2, np.concatenate([live, n + np.arange(n_occ, dtype=np.int64)]),
        np.concatenate([bits[live] >> 1, np.array(occ_stage, dtype=np.int64)]),
        np.concatenate([key[live], np.array(occ_key, dtype=np.int64)]),
        np.concatenate([live, np.arange(-n_occ, 0, dtype=np.int64)]), n + n_occ,
        {1: (quiet, key[quiet])})
    return pred, done, {1: waiting.get(1, np.zeros(0, np.int64))}, live[bits[live] == 1]



def step_context(k: int, stages: list[tuple[int, ...]], key: list[int],
                 occupants: list[tuple[int, int]], strict: bool, parted: bool,
                 ts: list[float] | None = None, window: float | None = None,
                 starts: list[float] = (), end: float = 0.0
                 ) -> tuple[np.ndarray, list[int], dict[int, list[int]], list[int],
                            list[tuple[int, float]]]:
    """The rows of :func:`plan_context` stepped in order: item ``i`` may take the stages
    ``stages[i]`` (0: it may start one; none: noise) with key code ``key[i]``; the partial
    matches held before are items ``n..``, ``occupants`` (stage, key code), oldest first.
    In a window ``[Δ]`` (``window``; ``ts[i]`` the items' times, ``starts`` the occupants'
    window starts) the partial matches whose deadline ``start + Δ`` is before an item's time
    have expired before it (the engine's timers, Matcher.on_deadline), and one the item would
    take past Δ is trapped by it (Matcher._zones: the item is taken, starts none, is no
    noise); ``end`` is the batch's last time. Returns ``pred``, the completing items, per
    stage the items left waiting (oldest first), the items that started a partial match
    (also those disposed later) and, in a window, the timers still held after the batch (per
    partial match started in it: its first item and start)."""
    n = len(key)
    pr = [-1] * (n + len(occupants))
    # (key, stage) -> partial matches [age, last item, stage, key, window start], oldest first
    queues: dict[tuple[int, int], list[list[Any]]] = {}
    held: dict[int, int] = {}  # partitioned: per key, its partial matches
    timed = window is not None
    live: dict[int, list[Any]] = {}  # in a window: age -> partial match, while held
    due: list[tuple[float, int]] = []  # in a window: (window start, age), a heap
    for j, (st, kc) in enumerate(occupants):
        tok = [j, n + j, st, kc, starts[j] if timed else 0.0]
        q = queues.get((kc, st))
        if q is None:
            queues[kc, st] = [tok]
        else:
            q.append(tok)
        held[kc] = held.get(kc, 0) + 1
        if timed:
            live[j] = tok
            due.append((tok[4], j))
    heapq.heapify(due)
    total = len(occupants)
    age = total
    done: list[int] = []
    started: list[int] = []
    last = k - 1
    w = window if timed else 0.0
    for i in range(n):
        sts = stages[i]
        kc = key[i]
        if timed:
            t = ts[i]
            while due and due[0][0] + w < t:  # (expired before i: its timer fired)
                tok = live.pop(heapq.heappop(due)[1], None)
                if tok is not None:
                    queues[tok[3], tok[2]].remove(tok)
                    if not queues[tok[3], tok[2]]:
                        del queues[tok[3], tok[2]]
                    total -= 1
                    held[tok[3]] -= 1
        best = None
        for s in sts:
            if s:
                q = queues.get((kc, s))
                if q is not None and (best is None or q[0][0] < best[0]):
                    best, bq, bs = q[0], q, s
        if best is not None:
            del bq[0]
            if not bq:
                del queues[kc, bs]
            if timed and t - best[4] > w:  # (the window exceeded at i: trapped, taken)
                del live[best[0]]
                total -= 1
                held[kc] -= 1
                continue
            pr[i] = best[1]
            if bs == last:
                done.append(i)
                total -= 1
                held[kc] -= 1
                if timed:
                    del live[best[0]]
                continue
            best[1] = i
            best[2] = bs + 1
            nq = queues.get((kc, bs + 1))
            if nq is None:
                queues[kc, bs + 1] = [best]
            else:
                nq.append(best)
            continue
        if sts and sts[0] == 0 and not (strict and (held.get(kc) if parted else total)):
            started.append(i)
            if k == 1:
                done.append(i)
                continue
            tok = [age, i, 1, kc, t if timed else 0.0]
            queues.setdefault((kc, 1), []).append(tok)
            if timed:
                live[age] = tok
                heapq.heappush(due, (t, age))
            age += 1
            total += 1
            held[kc] = held.get(kc, 0) + 1
            continue
        if not total:  # noise with nothing to dispose
            continue
        if not parted:
            queues.clear()
            held.clear()
            live.clear()
            total = 0
        elif held.get(kc):
            for s in range(1, k):
                gone = queues.pop((kc, s), None)
                if gone and timed:
                    for tok in gone:
                        del live[tok[0]]
            total -= held.pop(kc)
    pred = np.array(pr, dtype=np.int64)
    waiting: dict[int, list[tuple[int, int]]] = {}
    for (_, s), q in queues.items():
        waiting.setdefault(s, []).extend((tok[0], tok[1]) for tok in q
                                         if not (timed and tok[4] + w < end))
    return (pred, done, {s: [it for _, it in sorted(v)] for s, v in waiting.items()}, started,
            [(i, ts[i]) for i in started if not ts[i] + w < end] if timed else [])
