"""The chain kernel's two algorithms over the rows of a batch (kernels.chain says what they
compute): :func:`run_chain`, the FIFO queues with balking evaluated stage by stage for all keys
at once in numpy (a NOT's rows cut a key's queue into segments, :func:`_cleared`);
:func:`repeat_chain`, one type at every stage (``T{k}``) that every row
passes, in numpy too; and :func:`step_chain`, the plain loop over the rows some stage takes
when a type recurs otherwise, a window expires partial matches or a filter reads a partial
match's bindings."""

from __future__ import annotations

from bisect import insort
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import Any

import numpy as np

from cepflow.runtime.kernels.pair import stable_order
from cepflow.runtime.rows import distinct


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



#: the kinds of a stage's entries at one position, in the order a row's step makes them
#: (Matcher._general: the event's step, then _negatives): an attempt to move a partial match,
#: a NOT's clear, the partial match the row has just moved or started (which the clear spares)
_ATTEMPT, _CLEAR, _ARRIVAL = 0, 1, 2



def run_chain(k: int, items: np.ndarray, stage: np.ndarray, key: np.ndarray, pos: np.ndarray,
              n_items: int, clears: Mapping[int, tuple[np.ndarray, np.ndarray]] | None = None
              ) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray]]:
    """Queues of one chain over a batch.

    ``items``/``stage``/``key``/``pos`` describe the rows: real events (stage = index of their
    type in the chain) and partial matches from before the batch (stage = the state they wait
    in, flagged by a negative ``pos`` that orders them oldest first, before every event).
    ``clears`` (a chain's NOTs, runtime.shapes.Chain.forbids): per stage m, the positions of
    the rows that trap the partial matches waiting for m and per row its key code (-1: every
    key's, a NOT of any key) — after the row's own step, sparing the partial match that has
    just taken the row. A clear empties the key's queue, so each key's arrivals and attempts
    are queued per segment between its clears, and what waits in a segment a later clear
    closed was trapped. Returns ``pred`` (item -> the item it followed), the completing
    items, and per state the items left waiting there.
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
        n_arr, n_att = len(a_items), int(att.sum())
        allk = np.concatenate([a_key, key[att]])
        allp = np.concatenate([a_pos, pos[att]])
        itm = np.concatenate([a_items, items[att]])
        val = np.concatenate([np.ones(n_arr, np.int64), -np.ones(n_att, np.int64)])
        if len(val) == 0:
            cur_items, cur_key, cur_pos = itm, allk, allp
            continue
        cl = clears.get(m) if clears else None
        if cl is None or not len(cl[0]):
            order = np.lexsort((allp, allk))
            allk, allp, itm, val = allk[order], allp[order], itm[order], val[order]
            segid, starts = _segments(allk)
            closed = np.zeros(len(starts), dtype=bool)
        else:
            allk, allp, itm, val, segid, starts, closed = _cleared(
                allk, allp, itm, val, n_arr, *cl)
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
        success = (val < 0) & (before > 0)
        arr_rank = _count_in_segment(is_arr, segid, starts) - 1
        succ_rank = _count_in_segment(success, segid, starts) - 1
        arr_rows = np.flatnonzero(is_arr)
        arr_before_seg = (np.cumsum(is_arr) - is_arr)[starts]
        s_rows = np.flatnonzero(success)
        paired = arr_rows[arr_before_seg[segid[s_rows]] + succ_rank[s_rows]]
        pred[itm[s_rows]] = itm[paired]
        n_succ = np.bincount(segid[s_rows], minlength=len(starts))
        left = is_arr & (arr_rank >= n_succ[segid]) & ~closed[segid]
        waiting[m] = itm[left]
        cur_items, cur_key, cur_pos = itm[s_rows], allk[s_rows], allp[s_rows]
    return pred, cur_items, waiting



def _cleared(allk: np.ndarray, allp: np.ndarray, itm: np.ndarray, val: np.ndarray, n_arr: int,
             cpos: np.ndarray, ckey: np.ndarray) -> tuple[np.ndarray, ...]:
    """One stage of :func:`run_chain` with clears: its arrivals (the first ``n_arr`` entries)
    and attempts joined by the keyed clears (item -1, ``val`` 0), sorted by key, then by the
    clears of every key before them, then by position and kind (:data:`_ATTEMPT`, ...), with
    a segment per key between its clears; per segment whether a later clear closed it (what
    waits there was trapped)."""
    every = ckey < 0
    glob = np.sort(cpos[every])
    mine = ~every
    n_cl = int(mine.sum())
    kind = np.concatenate([np.full(n_arr, _ARRIVAL, np.int64),
                           np.full(len(val) - n_arr, _ATTEMPT, np.int64),
                           np.full(n_cl, _CLEAR, np.int64)])
    allk = np.concatenate([allk, ckey[mine]])
    allp = np.concatenate([allp, cpos[mine]])
    itm = np.concatenate([itm, np.full(n_cl, -1, np.int64)])
    val = np.concatenate([val, np.zeros(n_cl, np.int64)])
    # (the clears of every key before an entry: an arrival at a clear's position comes after
    # it, an attempt or a keyed clear before — the same on the sorted side)
    epoch = np.where(kind == _ARRIVAL, np.searchsorted(glob, allp, side="right"),
                     np.searchsorted(glob, allp, side="left"))
    order = np.lexsort((kind, allp, epoch, allk))
    allk, allp, itm, val, kind, epoch = (a[order] for a in (allk, allp, itm, val, kind, epoch))
    new = np.empty(len(val), dtype=bool)
    new[:1] = True
    new[1:] = (allk[1:] != allk[:-1]) | (epoch[1:] != epoch[:-1])
    new |= kind == _CLEAR
    segid, starts = np.cumsum(new) - 1, np.flatnonzero(new)
    # (a segment stays open when it is its key's last and no clear of every key followed it)
    last = np.ones(len(starts), dtype=bool)
    last[:-1] = allk[starts[1:]] != allk[starts[:-1]]
    closed = ~last | (epoch[starts] < len(glob))
    return allk, allp, itm, val, segid, starts, closed



#: step_chain's ``cross``: per stage the test of a filter reading variables (None: none),
#: the bindings of a partial match after it takes event ``i`` at stage m (None before: a
#: start) and the bindings of the partial matches from before the batch
Cross = tuple[Sequence[Callable[[int, Any], bool] | None], Callable[[int, int, Any], Any],
              Sequence[Any]]



def step_chain(k: int, stages: Sequence[Sequence[int]], key: Sequence[int], ts: Sequence[float],
               occupants: Sequence[tuple[int, int, float]], window: float | None, end: float,
               forbid: Sequence[Sequence[int]] | None = None,
               to: Sequence[dict[int, int]] | None = None,
               forbid_all: Sequence[Sequence[int]] | None = None,
               cross: Cross | None = None
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
    batch (every start and non-final step in a window sets one, Matcher.schedule_zones; those
    before ``end`` fired): per partial match, its first item (start or occupant) and start.
    ``forbid[i]`` (a chain's NOTs): the stages whose partial matches of the key event ``i``
    traps after that step (Matcher._negatives), but the one it has just moved or started;
    ``forbid_all[i]`` the same for the partial matches of every key (a NOT of any key).
    ``to[i]`` (a tree, runtime.shapes.Chain.depths): per stage event ``i`` may take (0: the
    start), the stage its partial match waits for next (``k``: it completes); without it a
    partial match goes from stage m to m + 1.
    ``cross`` (a chain whose filters read variables, runtime.shapes.Chain.cross; each type
    at one stage): per stage the test of such a filter (None: none, decided in ``stages``),
    how a partial match's bindings grow when it takes event ``i`` at stage m (from None at a
    start) and the bindings of the occupants: at a stage with such a test, the key's partial
    matches waiting there are tried oldest first with their bindings and the event's, up to
    the first that passes (Matcher._find), so a younger one may move while an older one
    stays — it is inserted by age where it arrives.
    """
    n, n_occ = len(key), len(occupants)
    pred = np.full(n + n_occ, -1, dtype=np.int64)
    pr = pred.tolist()
    queues: list[dict[int, deque[list]]] = [{} for _ in range(k)]  # per stage, per key
    for j, (st, kc, start) in enumerate(occupants):
        # a partial match: [age, window start, last item, first item, bindings (cross)]
        queues[st].setdefault(kc, deque()).append([j, start, n + j, n + j,
                                                   None if cross is None else cross[2][j]])
    timed: dict[int, float] = {}  # first item -> window start, of those that set a timer
    age = n_occ
    done: list[int] = []
    started: list[int] = []
    inf = float("inf")
    w = inf if window is None else window
    tests, bind = (cross[0], cross[1]) if cross is not None else ([None] * k, None)
    for i in range(n):
        kc, t, sts = key[i], ts[i], stages[i]
        best = None
        for s in sts:
            if not s:
                continue
            q = queues[s].get(kc)
            if not q:
                continue
            while q and q[0][1] + w < t:  # its deadline passed before t (the engine's timer)
                q.popleft()
            test = tests[s]
            if test is not None:  # (the oldest whose bindings pass, none younger than best)
                for j, tok in enumerate(q):
                    if best is not None and tok[0] > best[0]:
                        break
                    nb = bind(i, s, tok[4])
                    if test(i, nb):
                        best, bq, bs, bj, bb = tok, q, s, j, nb
                        break
            elif q and (best is None or q[0][0] < best[0]):
                best, bq, bs, bj, bb = q[0], q, s, 0, None
        if best is not None:
            if bj:
                del bq[bj]
            else:
                bq.popleft()
            if t - best[1] > w:  # the window exceeded at this very event: trapped
                pass
            else:
                pr[i] = best[2]
                nxt = bs + 1 if to is None else to[i][bs]
                if nxt == k:
                    done.append(i)
                else:
                    best[2] = i
                    if bind is not None:
                        best[4] = bind(i, bs, best[4]) if bb is None else bb
                    if window is not None:
                        timed[best[3]] = best[1]
                    nq = queues[nxt].get(kc)
                    if nq is None:
                        nq = queues[nxt][kc] = deque()
                    if nq and nq[-1][0] > best[0]:  # (an older one stayed behind: cross)
                        insort(nq, best, key=itemgetter(0))
                    else:
                        nq.append(best)
        elif sts and sts[0] == 0 and (bind is None or tests[0] is None or tests[0](
                i, nb := bind(i, 0, None))):
            started.append(i)
            nxt = 1 if to is None else to[i][0]
            if nxt == k:
                done.append(i)
            else:
                q = queues[nxt].get(kc)
                if q is None:
                    q = queues[nxt][kc] = deque()
                q.append([age, t, i, i, None if bind is None else
                          nb if tests[0] is not None else bind(i, 0, None)])
                age += 1
                if window is not None:
                    timed[i] = t
        if forbid is not None:
            for m in forbid[i]:  # (a NOT: the key's partial matches waiting for stage m)
                q = queues[m].get(kc)
                if q:
                    _spare(q, i)
        if forbid_all is not None:
            for m in forbid_all[i]:  # (a NOT of any key: every key's, waiting for stage m)
                for q in queues[m].values():
                    _spare(q, i)
    waiting: dict[int, list[tuple[int, int]]] = {}
    for s, by_key in enumerate(queues):
        for q in by_key.values():
            waiting.setdefault(s, []).extend((tok[0], tok[2]) for tok in q
                                             if not (tok[1] + w < end))
    pred[:] = pr
    return (pred, done, {s: [it for _, it in sorted(v)] for s, v in waiting.items()}, started,
            [(it, start) for it, start in timed.items() if not (start + w < end)])



def _spare(q: deque[list], i: int) -> None:
    """A NOT's trap of a queue of :func:`step_chain` at item ``i``: only the partial match
    that has just taken ``i`` stays."""
    kept = [tok for tok in q if tok[2] == i]
    q.clear()
    q.extend(kept)



def repeat_chain(k: int, key: np.ndarray, occupants: Sequence[tuple[int, int, float]]
                 ) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray], np.ndarray] | None:
    """:func:`step_chain` for a chain of one type at all its ``k`` stages that every row may
    take at any stage, without a window (``T{k}``, cps's ``invalidModel(src){3}``).

    Under chronicle a row goes to its key's oldest partial match, else starts one — so a key
    has at most one partial match at a time, and its rows, after the events that one holds,
    fall into consecutive runs of ``k``: row ``r`` of the key (in row order) is event ``(held
    + r) mod k`` of its match. Returns what :func:`step_chain` returns but the timers (none
    without a window), as arrays; None when a key has two partial matches from before the
    batch (then the loop)."""
    n, n_occ = len(key), len(occupants)
    occ_stage = np.array([o[0] for o in occupants], dtype=np.int64)
    occ_key = np.array([o[1] for o in occupants], dtype=np.int64)
    if n_occ and len(distinct(occ_key)) != n_occ:
        return None
    pred = np.full(n + n_occ, -1, dtype=np.int64)
    order = stable_order(key)  # each key's rows, in row order (few keys: a radix sort)
    ks = key[order]
    seg, starts = _segments(ks) if n else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    held = np.zeros(len(starts), dtype=np.int64)  # per key: events its partial match holds
    occ_item = np.full(len(starts), -1, dtype=np.int64)
    seg_of_occ = np.full(n_occ, -1, dtype=np.int64)
    if n_occ and len(starts):
        at = np.searchsorted(ks[starts], occ_key)
        found = at < len(starts)
        found[found] = ks[starts][at[found]] == occ_key[found]
        held[at[found]] = occ_stage[found]
        occ_item[at[found]] = n + np.flatnonzero(found)
        seg_of_occ[found] = at[found]
    place = (np.arange(n, dtype=np.int64) - starts[seg] + held[seg]) % k
    prev = np.empty(n, dtype=np.int64)
    prev[1:] = order[:-1]
    prev[starts] = occ_item
    pred[order] = np.where(place == 0, -1, prev)
    done = order[place == k - 1]  # (the caller orders them by row)
    started = order[place == 0]
    # the partial matches left: per key with rows, its last run if unfinished (its last
    # row); the occupants of keys without rows, unchanged (the caller orders them by id)
    count = np.diff(np.append(starts, n)) if n else np.zeros(0, np.int64)
    stage = (held + count) % k
    open_seg = np.flatnonzero(stage != 0)
    idle = np.flatnonzero(seg_of_occ < 0)
    st_all = np.concatenate([stage[open_seg], occ_stage[idle]])
    items_all = np.concatenate([order[starts[open_seg] + count[open_seg] - 1], n + idle])
    waiting = {s: items_all[st_all == s] for s in distinct(st_all).tolist()}
    return pred, done, waiting, started
