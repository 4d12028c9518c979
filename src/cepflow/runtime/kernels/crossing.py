"""A chain's filters that read variables bound at earlier stages (``A(x, u) -> B(x, w) where
w < u``, runtime.shapes.Chain.cross), decided column-wise: kernels.queues.step_chain's
oldest-first scan as one assignment per stage over the whole batch.

Under chronicle an event of stage m's type goes to the oldest partial match of its key waiting
at m whose bindings let it pass (Matcher._cross_step). With each type at one stage
(Chain.columnar) the stages decouple once each partial match's arrival at a stage is known:
stage by stage, every partial match waiting there (its age: the order of the starts, the
batch's after those from before it) is assigned to events of its key after its arrival. Taking,
per event in row order, the oldest waiting partial match that passes is the same as taking,
per partial match from the oldest, the first event after its arrival that passes and that no
older one took (an older one that passes an event and still waits there takes it, by
induction over the ages): the unique stable assignment where events prefer older partial
matches, which deferred acceptance finds in rounds — every partial match still looking tries
the next events of its key (a block, doubled while none passes: runtime.vector_expr.pairs_mask
on those (partial match, event) pairs), proposes to the first that passes, and each event keeps
the oldest proposer; the rejected look on after it. A window expires a partial match at the
first event past its deadline (``start + Δ < t``: the engine's timer before it), and traps it
at an event it passes but whose span exceeds Δ (float time), as the loop does.

The filters must be decided by vector_expr on every pair tried — they then cannot fail (no
division, no functions, numbers and booleans only: a comparison or ``+ - *`` of those raises
nothing), so the pairs tried here beyond those the token path tries change no error record;
else, or when the rounds grow past a budget (a long wait: the loop costs the same), None and
the caller steps the rows (kernels.queues.step_chain).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cepflow.runtime.rows import Rows, as_column
from cepflow.runtime.shapes import Chain
from cepflow.runtime.vector_expr import pairs_mask

#: a stage's filter on (partial match, event) pairs: ``test(paths, rows, took)`` with the
#: partial matches' indices (:func:`cross_chain`'s paths), the stepped rows and ``took`` (per
#: stage, per path, the stepped row it took there, -1 before the batch) — a mask, or None
PairTest = Callable[[np.ndarray, np.ndarray, np.ndarray], "np.ndarray | None"]

#: pairs tried per partial match in its first round (doubled while none passes)
_FIRST_BLOCK = 2
#: ts and starts compared as numpy compares them: exact below this size
_EXACT = float(2 ** 53)


def cross_chain(k: int, stage: np.ndarray, key: np.ndarray, ts: np.ndarray,
                occupants: Sequence[tuple[int, int, Any]], window: float | None, end: float,
                tests: Sequence[PairTest | None], start_ok: np.ndarray | None
                ) -> tuple[np.ndarray, list[int], dict[int, list[int]], list[int],
                           list[tuple[int, Any]]] | None:
    """kernels.queues.step_chain's result for a chain of ``k`` stages, each type at one stage,
    over its stepped rows (``stage``, ``key`` codes and ``ts`` per row, in row order) and the
    partial matches from before the batch (``occupants``: stage, key code, window start;
    oldest first): ``tests[m]`` the filter of stage m on pairs (None: every pair passes, its
    own filter was in the rows), ``start_ok`` which rows the first stage's filter lets start
    one (None: all). None when it cannot be decided column-wise (a test gives None, times
    numpy would not compare exactly, window starts out of age order) or the rounds outgrow
    their budget: then the loop."""
    n, n_occ = len(stage), len(occupants)
    ts_list = ts.tolist()
    occ_start = [o[2] for o in occupants]
    starts0 = np.flatnonzero(stage == 0)
    if start_ok is not None:
        starts0 = starts0[start_ok[starts0]]
    n_paths = n_occ + len(starts0)
    # per path (a partial match: the occupants, then the batch's starts — its age)
    p_start = np.array(occ_start + [ts_list[i] for i in starts0.tolist()])
    if not _exact_times(ts, p_start, window) or (
            window is not None and bool((p_start[1:] < p_start[:-1]).any())):
        return None  # (the loop expires a queue's heads only: their starts must be in order)
    p_key = np.concatenate([np.array([o[1] for o in occupants], dtype=np.int64),
                            key[starts0]]).astype(np.int64)
    p_stage = np.concatenate([np.array([o[0] for o in occupants], dtype=np.int64),
                              np.full(len(starts0), 1, dtype=np.int64)])
    p_arr = np.concatenate([np.full(n_occ, -1, dtype=np.int64), starts0])
    p_last = np.concatenate([np.arange(n, n + n_occ, dtype=np.int64), starts0])
    took = np.full((k, n_paths), -1, dtype=np.int64)
    took[0, n_occ:] = starts0
    w = float("inf") if window is None else window
    pred = np.full(n + n_occ, -1, dtype=np.int64)
    done: list[np.ndarray] = []
    moved_at = np.full(n_paths, -1, dtype=np.int64)  # (a window's timer: the row that set it)
    if window is not None and k > 1:
        moved_at[n_occ:] = starts0
    if k == 1:
        done.append(starts0)
        p_stage[n_occ:] = k
    budget = 8 * (n + n_occ) + 4096
    for m in range(1, k):
        rows_m = np.flatnonzero(stage == m)
        wait = np.flatnonzero(p_stage == m)
        if not len(rows_m) or not len(wait):
            continue
        held = (_first_in_first_out(rows_m, key, ts, n, wait, p_key, p_arr, p_start, w)
                if tests[m] is None else None) or _assign(
            rows_m, key, ts, n, wait, p_key, p_arr, p_start, w, tests[m], took, budget)
        if held is None:
            return None
        budget -= held[2]
        att, holder = held[0], held[1]
        taken = np.flatnonzero(holder >= 0)
        rows, paths = att[taken], wait[holder[taken]]
        trapped = ts[rows] - p_start[paths] > w
        p_stage[paths[trapped]] = -1  # (trapped: gone, the row starts none)
        rows, paths = rows[~trapped], paths[~trapped]
        pred[rows] = p_last[paths]
        p_last[paths] = rows
        took[m, paths] = rows
        p_arr[paths] = rows
        if m == k - 1:
            done.append(rows)
            p_stage[paths] = k
        else:
            p_stage[paths] = m + 1
            first = moved_at[paths] < 0
            moved_at[paths[first]] = rows[first]
    # what is left waiting (its deadline not before the batch's end) and the timers
    alive = (p_stage > 0) & (p_stage < k)
    if window is not None:
        alive &= ~(p_start + w < end)
    waiting: dict[int, list[int]] = {}
    for p in np.flatnonzero(alive).tolist():
        waiting.setdefault(int(p_stage[p]), []).append(int(p_last[p]))
    timed: list[tuple[int, Any]] = []
    if window is not None:
        set_ = np.flatnonzero((moved_at >= 0) & ~(p_start + w < end))
        set_ = set_[np.argsort(moved_at[set_], kind="stable")]
        p_first = np.concatenate([np.arange(n, n + n_occ, dtype=np.int64), starts0])
        starts_py = occ_start + [ts_list[i] for i in starts0.tolist()]
        timed = [(int(p_first[p]), starts_py[p]) for p in set_.tolist()]
    out = np.sort(np.concatenate(done)) if done else np.zeros(0, np.int64)
    return pred, out.tolist(), waiting, starts0.tolist(), timed


def _exact_times(ts: np.ndarray, starts: np.ndarray, window: float | None) -> bool:
    """Whether numpy decides ``start + Δ < t`` and ``t - start > Δ`` as Python does on these
    values: numbers, integers (made floats beside a float) well inside float precision."""
    for a in (ts, starts):
        if len(a) and (a.dtype.kind not in "iuf"
                       or float(np.abs(a).max(initial=0)) >= _EXACT):
            return False
    return window is None or isinstance(window, float | int)


def _assign(rows_m: np.ndarray, key: np.ndarray, ts: np.ndarray, n: int, wait: np.ndarray,
            p_key: np.ndarray, p_arr: np.ndarray, p_start: np.ndarray, w: float,
            test: PairTest | None, took: np.ndarray, budget: int
            ) -> tuple[np.ndarray, np.ndarray, int] | None:
    """One stage's assignment by deferred acceptance (module docstring): the stage's rows
    ``rows_m`` sorted by key then row (``att``), per one of them the index into ``wait`` (the
    partial matches waiting there, oldest first) of the one that took it (-1: none), and the
    pairs tried; None when a test is not column-wise or the pairs outgrow ``budget``."""
    att = rows_m[np.argsort(key[rows_m], kind="stable")]
    comb = key[att] * (n + 1) + att
    base = p_key[wait] * (n + 1)
    ptr = np.searchsorted(comb, base + p_arr[wait], side="right")
    hi = np.searchsorted(comb, base + n, side="right")
    blk = np.full(len(wait), _FIRST_BLOCK, dtype=np.int64)
    holder = np.full(len(att), -1, dtype=np.int64)
    free = np.arange(len(wait), dtype=np.int64)
    tried = 0
    while len(free):
        cnt = np.minimum(hi[free] - ptr[free], blk[free])
        look = cnt > 0
        free, cnt = free[look], cnt[look]
        if not len(free):
            break
        total = int(cnt.sum())
        tried += total
        if tried > budget:
            return None
        first_of = np.cumsum(cnt) - cnt
        rep = np.repeat(free, cnt)
        off = np.arange(total, dtype=np.int64) - np.repeat(first_of, cnt)
        at = ptr[rep] + off
        rows = att[at]
        paths = wait[rep]
        expired = p_start[paths] + w < ts[rows]
        ok = ~expired
        if test is not None:
            mask = test(paths, rows, took)
            if mask is None:
                return None
            ok &= mask
        big = np.int64(total + 1)
        hit = np.minimum.reduceat(np.where(ok, off, big), first_of)
        gone = np.logical_or.reduceat(expired, first_of)  # (its deadline passed: no more)
        got = hit < big
        # (none passed: look further, twice as far, unless expired)
        miss = free[~got & ~gone]
        ptr[miss] += cnt[~got & ~gone]
        blk[miss] *= 2
        hi[free[~got & gone]] = ptr[free[~got & gone]]
        # proposals: each event keeps the oldest of its proposers and its holder
        q, a = free[got], ptr[free[got]] + hit[got]
        prev = holder[a]
        held = prev >= 0
        width = np.int64(len(wait) + 1)
        cand = np.unique(np.concatenate([a * width + q, a[held] * width + prev[held]]))
        cand_a, cand_q = cand // width, cand % width  # (by event, then oldest first)
        win = np.ones(len(cand), dtype=bool)
        win[1:] = cand_a[1:] != cand_a[:-1]
        holder[cand_a[win]] = cand_q[win]
        lost_q, lost_a = cand_q[~win], cand_a[~win]
        ptr[lost_q] = lost_a + 1
        blk[lost_q] = _FIRST_BLOCK
        free = np.concatenate([miss, lost_q])
    return att, holder, tried


def _first_in_first_out(rows_m: np.ndarray, key: np.ndarray, ts: np.ndarray, n: int,
                        wait: np.ndarray, p_key: np.ndarray, p_arr: np.ndarray,
                        p_start: np.ndarray, w: float
                        ) -> tuple[np.ndarray, np.ndarray, int] | None:
    """:func:`_assign`'s result for a stage without a pair test, in one pass: every row takes
    its key's oldest partial match waiting there, a queue. Where each key's partial matches
    arrive in age order with their starts in that order and the rows' times do not go back,
    a key's queue is the range ``[p, A_j)`` of its partial matches (oldest first): ``A_j``
    those arrived before its j-th row, ``p`` the head. The loop pops the expired heads
    (``start + Δ < t``: the first ``E_j``), then the row takes the head if any, so
    ``p_j = min(max(p_{j-1}, min(E_j, A_j)) + 1, A_j)`` — per row a shift clamped below and
    above, whose compositions are again such clamps: a segmented prefix scan (Hillis-Steele,
    log n numpy passes). None when the order does not hold (then :func:`_assign`)."""
    att = rows_m[np.argsort(key[rows_m], kind="stable")]
    wk = np.argsort(p_key[wait], kind="stable")  # (oldest first within each key)
    wkey, warr, wstart = p_key[wait][wk], p_arr[wait][wk], p_start[wait][wk]
    same = wkey[1:] == wkey[:-1]
    t_att = ts[att]
    akey = key[att]
    if (bool((same & (warr[1:] < warr[:-1])).any())
            or (w != float("inf") and bool((same & (wstart[1:] < wstart[:-1])).any()))
            or bool(((akey[1:] == akey[:-1]) & (t_att[1:] < t_att[:-1])).any())):
        return None
    lo_k = np.searchsorted(wkey, akey, side="left")
    width = np.int64(n + 2)
    arrived = np.searchsorted(wkey * width + warr + 1, akey * width + att + 1,
                              side="left") - lo_k  # (A_j: arrived before the row)
    # E_j: the key's partial matches whose deadline passed before the row's time (a tie:
    # not passed — the row sorts before the deadline)
    nw = len(wait)
    kind = np.concatenate([np.ones(nw, np.int8), np.zeros(len(att), np.int8)])
    order = np.lexsort((kind, np.concatenate([wstart + w, t_att]),
                        np.concatenate([wkey, akey])))
    before = np.cumsum(kind[order]) - kind[order]
    passed = np.empty(len(order), dtype=np.int64)
    passed[order] = before
    expired = passed[nw:] - lo_k
    low = np.minimum(expired, arrived)
    # p_j = clamp(p_{j-1} + 1, min(low_j + 1, A_j), A_j), composed along each key's rows
    shift = np.ones(len(att), dtype=np.int64)
    floor_ = np.minimum(low + 1, arrived)
    ceil_ = arrived.copy()
    d = 1
    while d < len(att):
        on = np.zeros(len(att), dtype=bool)
        on[d:] = akey[d:] == akey[:-d]
        j = np.flatnonzero(on)
        i = j - d  # (apply i's clamp first, then j's)
        sj, fj, cj = shift[j], floor_[j], ceil_[j]
        new_floor = np.minimum(np.maximum(floor_[i] + sj, fj), cj)
        new_ceil = np.minimum(np.maximum(ceil_[i] + sj, fj), cj)
        shift[j] = shift[i] + sj
        floor_[j], ceil_[j] = new_floor, new_ceil
        d *= 2
    head = np.minimum(np.maximum(shift, floor_), ceil_)  # (p_j, from p = 0)
    prev = np.zeros(len(att), dtype=np.int64)
    first = np.ones(len(att), dtype=bool)
    first[1:] = akey[1:] != akey[:-1]
    prev[~first] = head[:-1][~first[1:]]
    q = np.maximum(prev, low)
    took = q < arrived
    holder = np.full(len(att), -1, dtype=np.int64)
    holder[took] = wk[lo_k[took] + q[took]]
    return att, holder, 0


def pair_tests(c: Chain, src: Rows, schemas: Any, positions: np.ndarray, stage: np.ndarray,
               occ_bindings: Sequence[dict[str, Any]]
               ) -> tuple[list[PairTest | None], np.ndarray | None] | None:
    """:func:`cross_chain`'s ``tests`` and ``start_ok`` for chain ``c`` (Chain.columnar: one
    type per stage) over its stepped rows (batch ``positions``, their ``stage``), the
    occupants' bindings ``occ_bindings`` (Chain.bindings of their events): each filter reading
    variables as runtime.vector_expr.pairs_mask reads it with the bindings the token path gives
    the closure — the event's fields first, then the variables the event binds first (its own),
    then those an earlier stage bound (the key: the first stage's value, which ``bind`` keeps),
    taken from the event that bound them or, for a partial match from before the batch, its
    bindings. None when a filter has no expression vector_expr reads (the loop)."""
    k = len(c.stages)
    pos_at = [next(iter(alts.values())).position for alts in c.stages]
    binder: dict[str, tuple[int, int]] = {}  # variable -> (stage, parameter) that binds it
    for m, pos in enumerate(pos_at):
        for i, v in pos.binds:
            binder.setdefault(v, (m, i))
    own_cols: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}

    def own_column(m: int, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Parameter i of stage m's rows, and per stepped row its index there."""
        got = own_cols.get((m, i))
        if got is None:
            sel = np.flatnonzero(stage == m)
            loc = np.full(len(stage), -1, dtype=np.int64)
            loc[sel] = np.arange(len(sel), dtype=np.int64)
            got = own_cols[m, i] = (src.column(i, positions[sel]), loc)
        return got

    occ_cols: dict[str, np.ndarray] = {}

    def path_values(v: str, paths: np.ndarray, took: np.ndarray) -> np.ndarray:
        """Each path's value of ``v``: from the row that bound it, else its bindings from
        before the batch (object when the two kinds differ: then not column-wise)."""
        s, i = binder[v]
        col, loc = own_column(s, i)
        r = took[s, paths]
        inb = r >= 0
        if inb.all():
            return col[loc[r]]
        occ = occ_cols.get(v)
        if occ is None:
            occ = occ_cols[v] = as_column([b.get(v) for b in occ_bindings])
        if not inb.any():
            return occ[paths]
        part_a, part_b = col[loc[r[inb]]], occ[paths[~inb]]
        kind = part_a.dtype.kind if part_a.dtype.kind == part_b.dtype.kind else "O"
        out = np.empty(len(paths), dtype=np.result_type(part_a, part_b) if kind != "O"
                       else object)
        out[inb], out[~inb] = part_a, part_b
        return out

    def test_of(m: int) -> PairTest | None:
        pos = pos_at[m]
        earlier = {v for s in range(m) for _, v in pos_at[s].binds}
        own = {v: i for i, v in pos.binds if v not in earlier}
        fields = {name: i for i, name in enumerate(schemas[pos.type].param_names)}

        def test(paths: np.ndarray, rows: np.ndarray, took: np.ndarray) -> np.ndarray | None:
            def column(kind: str, what: Any) -> np.ndarray:
                if kind == "own":
                    col, loc = own_column(m, what)
                    return col[loc[rows]]
                return path_values(what, paths, took)

            return pairs_mask(pos.where, fields, own, earlier, column)
        return test

    tests: list[PairTest | None] = [None] * k
    start_ok = None
    for m, pos in enumerate(pos_at):
        if pos.filter is None or pos.local:
            continue
        if pos.where is None or len({v for _, v in pos.binds}) != len(pos.binds):
            return None
        tests[m] = test_of(m)
        if m == 0:
            rows0 = np.flatnonzero(stage == 0)
            mask = tests[0](np.zeros(len(rows0), np.int64), rows0,  # type: ignore[misc]
                            np.zeros((k, 0), np.int64))
            if mask is None:
                return None
            start_ok = np.zeros(len(stage), dtype=bool)
            start_ok[rows0] = mask
            tests[0] = None
    return tests, start_ok
